//! The crate's error type: one variant per I/O module's error enum, each carrying the file, key
//! or case it concerns, plus a hint line for the user.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
}

impl Error {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        None
    }
}
