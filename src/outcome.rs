//! What a command concluded: a failed gate is an outcome, not an error, and each outcome has
//! its exit code (`error::Exit`). No I/O.

use std::process::ExitCode;

use crate::error::Exit;

/// What a command concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The gate passed, or the command did what it was asked.
    Passed,
    /// A case got a verdict listed in `fail_on`.
    GateFailed,
    /// The gate did not fail, but some case could not be measured (stored as `error`).
    CasesFailed,
    /// `bisect --run`: this commit cannot be tested (git bisect skips it, exit 125).
    BisectSkip,
    /// `bisect --run`: stop the bisection (exit 128).
    BisectAbort,
}

impl Outcome {
    /// The outcome of two runs together: a failed gate over failed cases over a pass.
    #[must_use]
    pub fn worst(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::GateFailed, _) | (_, Outcome::GateFailed) => Outcome::GateFailed,
            (Outcome::CasesFailed, _) | (_, Outcome::CasesFailed) => Outcome::CasesFailed,
            _ => Outcome::Passed,
        }
    }

    #[must_use]
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Passed => Exit::Success,
            Outcome::GateFailed => Exit::GateFailed,
            Outcome::CasesFailed => Exit::Error,
            Outcome::BisectSkip => Exit::BisectSkip,
            Outcome::BisectAbort => Exit::BisectAbort,
        }
        .into()
    }
}
