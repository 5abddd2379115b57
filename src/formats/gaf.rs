//! GAF sprite banks (stub).

/// Why a GAF could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GafError {
    /// Placeholder.
    #[error("gaf: not implemented")]
    Unimplemented,
}
