//! Terminal output: error reporting on stderr, colour choice. Does I/O (stdout/stderr only).

use std::process::ExitCode;

use crate::Error;

/// Print an error and its hint to stderr and return exit code 2.
#[expect(clippy::print_stderr, reason = "errors go to stderr by design")]
pub fn report_error(err: &Error) -> ExitCode {
    eprintln!("error: {err}");
    if let Some(hint) = err.hint() {
        eprintln!("hint: {hint}");
    }
    ExitCode::from(2)
}
