//! The dump view of a GAF (stub until the codec lands).

use super::{Entry, View, ViewError, ViewOptions};
use std::io::Write;

/// The exploded view of one GAF.
pub struct GafView {
    entries: Vec<Entry>,
}

impl GafView {
    /// Decodes `data` and lays out its files.
    pub fn new(_data: &[u8], _opts: &ViewOptions) -> Result<GafView, ViewError> {
        Err(ViewError::invalid("", "not implemented"))
    }
}

impl View for GafView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }
    fn render(&self, path: &str, _out: &mut dyn Write) -> Result<(), ViewError> {
        Err(ViewError::NotFound(path.to_string()))
    }
}
