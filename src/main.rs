//! The `utilgate` binary: parse the command line, run it through the library, map the outcome
//! to an exit code (0 gate passed, 1 gate failed, 2 error). No logic lives here.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = utilgate::cli::Cli::parse();
    match utilgate::run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => utilgate::output::report_error(&err),
    }
}
