//! The unpack view of a TNT map (stub until the codec lands).

use super::{Entry, View, ViewError, ViewOptions};
use std::io::Write;

/// The exploded view of one TNT map.
pub struct TntView {
    entries: Vec<Entry>,
}

impl TntView {
    /// Decodes `data` and lays out its files.
    pub fn new(_data: &[u8], _opts: &ViewOptions) -> Result<TntView, ViewError> {
        Err(crate::formats::tnt::TntError::Refused("view pending".into()).into())
    }
}

impl View for TntView {
    fn entries(&self) -> &[Entry] {
        &self.entries
    }
    fn render(&self, path: &str, _out: &mut dyn Write) -> Result<(), ViewError> {
        Err(ViewError::NotFound(path.to_string()))
    }
}
