//! systemd's readiness protocol (`Type=notify`, sd_notify(3)): datagrams such as `READY=1`,
//! `STOPPING=1`, `STATUS=…` sent to the socket `$NOTIFY_SOCKET` names (a path, or an abstract
//! socket written `@name`). Without the variable every call does nothing.

use std::os::unix::net::{SocketAddr, UnixDatagram};

/// The connection to the service manager, if one asked for notifications.
pub struct Notifier {
    sock: UnixDatagram,
    addr: SocketAddr,
}

impl Notifier {
    /// The socket of `$NOTIFY_SOCKET`; `None` when it is unset, or when it cannot be used (logged).
    pub fn from_env() -> Option<Notifier> {
        let name = std::env::var_os("NOTIFY_SOCKET")?;
        match Self::connect(&name) {
            Ok(n) => Some(n),
            Err(e) => {
                log::warn!("NOTIFY_SOCKET={}: {e}", name.to_string_lossy());
                None
            }
        }
    }

    fn connect(name: &std::ffi::OsStr) -> std::io::Result<Notifier> {
        use std::os::unix::ffi::OsStrExt;
        let bytes = name.as_bytes();
        let addr = match bytes.strip_prefix(b"@") {
            Some(abs) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(abs)?
            }
            None if bytes.starts_with(b"/") => SocketAddr::from_pathname(name)?,
            None => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "neither an absolute path nor an abstract socket (@name)",
                ))
            }
        };
        Ok(Notifier {
            sock: UnixDatagram::unbound()?,
            addr,
        })
    }

    /// Sends `state` (newline-separated `KEY=VALUE` lines); a failure is only logged (the
    /// mount goes on whether or not the manager hears it).
    pub fn send(&self, state: &str) {
        if let Err(e) = self.sock.send_to_addr(state.as_bytes(), &self.addr) {
            log::warn!("NOTIFY_SOCKET: {e}");
        }
    }
}

/// Sends `state` to `$NOTIFY_SOCKET`, if set.
pub fn notify(state: &str) {
    if let Some(n) = Notifier::from_env() {
        n.send(state);
    }
}

/// What `tafs status` would say of the mount at `mnt`, in one line for `STATUS=`: `nothing
/// staged`, or counts by state with the first assets in error or conflict named (`2 staged,
/// 1 error: anims/x.gaf`). `None` when the mount has no status file (read-only mounts).
pub fn status_summary(mnt: &std::path::Path) -> Option<String> {
    let text = std::fs::read_to_string(mnt.join(".tafs-status")).ok()?;
    Some(summarize(&text))
}

/// The one-line summary of a root status file's text (see [`status_summary`]).
pub fn summarize(text: &str) -> String {
    const STATES: [&str; 7] = [
        "error", "conflict", "removing", "busy", "pending", "staged", "clean",
    ];
    let mut by_state: Vec<Vec<&str>> = vec![Vec::new(); STATES.len()];
    for line in text.lines().filter(|l| !l.starts_with(' ')) {
        let Some((path, state)) = line.rsplit_once(": ") else {
            continue;
        };
        if let Some(i) = STATES.iter().position(|s| *s == state) {
            by_state[i].push(path);
        }
    }
    let mut parts = Vec::new();
    for (state, paths) in STATES.iter().zip(&by_state) {
        if paths.is_empty() {
            continue;
        }
        let mut part = format!("{} {state}", paths.len());
        if matches!(*state, "error" | "conflict") {
            let named: Vec<&str> = paths.iter().take(3).copied().collect();
            part.push_str(&format!(": {}", named.join(", ")));
            if paths.len() > 3 {
                part.push_str(", …");
            }
        }
        parts.push(part);
    }
    if parts.is_empty() {
        "nothing staged".into()
    } else {
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::summarize;

    #[test]
    fn summaries_count_states_and_name_failures() {
        assert_eq!(
            summarize("nothing staged\nchange detection: inotify\n\n"),
            "nothing staged"
        );
        let text = "anims/a.gaf: error\n  error: pulse/0.png: not a PNG\n\
                    anims/b.gaf: staged\n  uncommitted: x/0.png\n\
                    maps/c.tnt: staged\nunits/d.3do: conflict\n  changed on disk\n\
                    change detection: inotify\n";
        assert_eq!(
            summarize(text),
            "1 error: anims/a.gaf; 1 conflict: units/d.3do; 2 staged"
        );
    }
}
