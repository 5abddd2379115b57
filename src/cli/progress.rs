//! Progress bars for the commands a user waits on (indicatif): drawn on a terminal's stderr
//! for work big enough to wait for, hidden otherwise (pipes, logs, tests).

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;

/// A bar counting `len` files, shown when stderr is a terminal and `len >= min`.
pub fn files(len: usize, min: usize) -> ProgressBar {
    bar(len as u64, len >= min, "{bar:40} {pos}/{len} files {eta}")
}

/// A bar counting `total` bytes, shown when stderr is a terminal and `total >= min`.
pub fn bytes(total: u64, min: u64) -> ProgressBar {
    bar(
        total,
        total >= min,
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
    )
}

fn bar(len: u64, big: bool, template: &str) -> ProgressBar {
    if !big || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// Writes every file of `view` under `target` ([`crate::view::write_tree_with`]) with a bar
/// when the view has more than a few hundred files (a big GAF, a map's tiles).
pub fn write_tree(
    view: &dyn crate::view::View,
    target: &std::path::Path,
) -> Result<(), crate::view::ViewError> {
    let n = view
        .entries()
        .iter()
        .filter(|e| e.kind == crate::view::EntryKind::File)
        .count();
    let bar = files(n, 256);
    let r = crate::view::write_tree_with(view, target, &|| bar.inc(1));
    bar.finish_and_clear();
    r
}
