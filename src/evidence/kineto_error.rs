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
    /// A complete event whose time no profiler writes: not finite, beyond `2^53` µs, or a
    /// negative duration. Its figures would print as `inf`, `NaN` or walls of 31 digits.
    #[error(
        "traceEvents[{index}] (line {line}, column {column}): `{field}` is {value:?} µs, {}",
        field.rule()
    )]
    AbsurdTime {
        /// The event's place in `traceEvents`, from 0.
        index: u64,
        line: usize,
        column: usize,
        field: TimeField,
        value: f64,
    },
}

/// Which time of an event is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeField {
    Ts,
    Dur,
}

/// The largest time in microseconds an event may carry: `2^53` µs (about 285 years), beyond
/// which an `f64` no longer holds every microsecond, so no difference of two times is exact.
/// Kineto writes microseconds since the epoch (about `1.7e15` in 2024) or since the profiler's
/// start; every real trace in the fixtures is below `1.8e15`.
pub const MAX_TIME_US: f64 = 9_007_199_254_740_992.0;

impl TimeField {
    /// What the field must be.
    #[must_use]
    pub fn rule(self) -> &'static str {
        match self {
            TimeField::Ts => {
                "but a timestamp must be a finite number of microseconds within ±2^53 (about 285 years)"
            }
            TimeField::Dur => {
                "but a duration must be a finite number of microseconds from 0 to 2^53 (about 285 years)"
            }
        }
    }

    /// Whether `value` is a time this field may hold.
    #[must_use]
    pub fn accepts(self, value: f64) -> bool {
        match self {
            TimeField::Ts => value.abs() <= MAX_TIME_US,
            TimeField::Dur => (0.0..=MAX_TIME_US).contains(&value),
        }
    }
}

impl std::fmt::Display for TimeField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TimeField::Ts => "ts",
            TimeField::Dur => "dur",
        })
    }
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
            KinetoError::AbsurdTime { .. } => Some(
                "the profiler's clock or an edit of the file wrote an impossible time; record the trace again, or delete that event"
                    .into(),
            ),
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
