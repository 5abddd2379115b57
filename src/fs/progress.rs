//! Progress of a long scan: the files a mount renders (a first `ls -lR` of a real install
//! renders tens of thousands), counted as they are made, logged every few seconds while
//! the work goes on, and told by the status file (`tafs status`): the run going on, or
//! the last one.

use crate::fs::shared::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a busy scan is logged.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// Quiet this long, a scan is over.
const IDLE_AFTER: Duration = Duration::from_secs(2);

/// Files rendered, with the scan they belong to.
#[derive(Default)]
pub(in crate::fs) struct Progress {
    rendered: AtomicU64,
    scan: Mutex<Option<Scan>>,
}

/// A run of rendering without a pause of [`IDLE_AFTER`].
#[derive(Clone, Copy)]
struct Scan {
    began: Instant,
    last: Instant,
    /// Files rendered before it began.
    before: u64,
    /// When it was last logged, and the count then.
    logged: (Instant, u64),
}

impl Progress {
    /// Files rendered so far.
    pub(in crate::fs) fn rendered(&self) -> u64 {
        self.rendered.load(Ordering::Relaxed)
    }

    /// Counts one file rendered; logs the scan every [`LOG_EVERY`]. Never waits.
    pub(in crate::fs) fn rendered_one(&self) {
        let n = self.rendered.fetch_add(1, Ordering::Relaxed) + 1;
        crate::fs::budget::note_churn();
        let Ok(mut scan) = self.scan.try_lock() else {
            return;
        };
        let now = Instant::now();
        let s = match scan.as_mut() {
            Some(s) if now.duration_since(s.last) < IDLE_AFTER => s,
            _ => scan.insert(Scan {
                began: now,
                last: now,
                before: n - 1,
                logged: (now, n - 1),
            }),
        };
        s.last = now;
        let since = now.duration_since(s.logged.0);
        if since >= LOG_EVERY {
            let rate = (n - s.logged.1) as f64 / since.as_secs_f64();
            log::info!(
                "rendering: {} files in {:.0} s ({rate:.0}/s now)",
                n - s.before,
                now.duration_since(s.began).as_secs_f64()
            );
            s.logged = (now, n);
        }
    }

    /// One line for a status file: the scan going on (files so far, rate) or the last one.
    pub(in crate::fs) fn status_line(&self) -> String {
        let n = self.rendered();
        let scan = *lock(&self.scan);
        match scan {
            None => "rendering: idle, nothing rendered yet\n".to_string(),
            Some(s) if s.last.elapsed() < IDLE_AFTER => {
                let secs = s.began.elapsed().as_secs_f64();
                format!(
                    "rendering: busy, {} files in {secs:.0} s ({:.0}/s)\n",
                    n - s.before,
                    (n - s.before) as f64 / secs.max(0.001)
                )
            }
            Some(s) => format!(
                "rendering: idle, last run {} files in {:.1} s\n",
                n - s.before,
                s.last.duration_since(s.began).as_secs_f64()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_tells_a_scan() {
        let p = Progress::default();
        assert!(p.status_line().contains("nothing rendered"));
        for _ in 0..5 {
            p.rendered_one();
        }
        assert_eq!(p.rendered(), 5);
        let line = p.status_line();
        assert!(line.starts_with("rendering: busy, 5 files in "), "{line}");
    }
}
