//! `utilgate completions SHELL`: shell completions generated from the CLI's definition. Prints
//! to stdout.

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;

pub fn completions(args: &CompletionsArgs) -> Result<Outcome, Error> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "utilgate", &mut out);
    output::emit(&String::from_utf8_lossy(&out))?;
    Ok(Outcome::Passed)
}
