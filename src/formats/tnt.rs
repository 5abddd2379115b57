//! TNT maps (stub: the codec lands here).

/// Why a map could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TntError {
    /// Placeholder until the codec lands.
    #[error("tnt: not implemented")]
    Unimplemented,
}
