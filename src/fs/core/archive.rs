//! Archives in the mount: their members decoded on demand (parts of the archive's layout
//! expanded when something inside them, or the folder listing them, is asked for) and
//! write-back into them (SEMANTICS.md, "Archives").

use super::*;
use crate::view::archive::ArchiveView;
use rayon::prelude::*;

/// The options the view of member `member` (shown path) of the archive at `rel_str` is
/// opened with: those of a loose file at that path (game folder found from the path, palette
/// chain resolved in it), except that a same-named `.pcx` beside a GAF, the first link of
/// the chain, is looked up among the archive's members (`beside`).
pub(super) fn member_options(
    game_dir: &Path,
    rel_str: &str,
    kind: AssetKind,
    member: &str,
    beside: Option<(&str, &[u8])>,
) -> ViewOptions {
    let mut opts = view_options_for(game_dir, &format!("{rel_str}/{member}"));
    if let Some((name, pcx)) = beside.filter(|_| kind == AssetKind::Gaf) {
        if let Ok(pal) = crate::formats::palette::Palette::from_file_bytes(name, pcx) {
            let dir = opts.asset_path.as_deref().and_then(|a| a.rsplit_once('/'));
            opts.palette_source = match dir {
                Some((d, _)) => format!("{d}/{name}"),
                None => name.to_string(),
            };
            opts.palette = pal;
        }
    }
    opts
}

impl Core {
    /// The view of archive `rel` from its bytes: only the directory is parsed.
    pub(super) fn archive_view(&self, rel: &Path, bytes: Vec<u8>) -> Result<ArchiveView, ViewError> {
        let rel_str = rel.to_string_lossy().replace('\\', "/");
        let game_dir = self.game_dir.clone();
        let opener = self.opts.opener.clone();
        let open_member = Box::new(
            move |kind: AssetKind, data: &[u8], member: &str, beside: Option<(&str, &[u8])>| {
                let opts = member_options(&game_dir, &rel_str, kind, member, beside);
                opener(kind, data, &opts)
            },
        );
        let limits = crate::formats::hpi::HpiLimits::default();
        ArchiveView::new(bytes, limits, open_member)
    }

    /// Expands the parts of `layout` (asset `rel`) that locating `vpath` needs (and with
    /// `list`, the parts directly in folder `vpath`), decoding them in parallel. Nothing to
    /// do for views without parts.
    pub(super) fn expand(&self, rel: &Path, layout: &Layout, vpath: &str, list: bool) {
        let todo = layout.pending_for(vpath, list);
        if todo.is_empty() {
            return;
        }
        let asset = self.slot(rel);
        let gen = {
            let st = lock(&asset.state);
            match &st.outcome {
                Outcome::Ready(l) if std::ptr::eq(Arc::as_ptr(l), layout) => st.gen,
                _ => return,
            }
        };
        let Ok((view, _)) = self.view_of(rel, gen) else {
            return;
        };
        let done: Vec<(&String, Option<&[view::Entry]>)> = todo
            .par_iter()
            .map(|p| (p, view.part_entries(p)))
            .collect();
        for (p, entries) in done {
            layout.expand_part(&*view, p, entries);
        }
    }
}
