//! Why a Kineto trace could not be read: the error of the reader (`kineto.rs`) and of the
//! chunks it reads the file in (`chunks.rs`), apart so that neither imports the other. Pure.

/// Why a trace could not be read. The position is the reader's line and column.
#[derive(Debug, thiserror::Error)]
pub enum KinetoError {
    #[error("malformed trace JSON at line {line}, column {column}: {source}")]
    Malformed {
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("the trace ends early (truncated) at line {line}, column {column}")]
    Truncated { line: usize, column: usize },
    #[error("failed to read the trace: {0}")]
    Io(#[source] std::io::Error),
    #[error("the trace holds no traceEvents")]
    NoEvents,
}

impl KinetoError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            KinetoError::Malformed { .. } => Some(
                "old Kineto versions wrote unescaped quotes in names; re-export the trace with a current torch.profiler"
                    .into(),
            ),
            KinetoError::Truncated { .. } => {
                Some("the profiler was probably killed while writing; record the trace again".into())
            }
            KinetoError::NoEvents => {
                Some("torch.profiler writes {\"traceEvents\": [...]}; is this a trace file?".into())
            }
            KinetoError::Io(_) => None,
        }
    }
}

impl From<serde_json::Error> for KinetoError {
    fn from(e: serde_json::Error) -> Self {
        if e.is_io() {
            // serde_json keeps the io::Error as the source; rebuild an io error from its text.
            return KinetoError::Io(std::io::Error::other(e.to_string()));
        }
        if e.is_eof() {
            return KinetoError::Truncated {
                line: e.line(),
                column: e.column(),
            };
        }
        KinetoError::Malformed {
            line: e.line(),
            column: e.column(),
            source: e,
        }
    }
}
