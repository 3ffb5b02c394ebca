//! `utilgate config check` and `utilgate config default`. Reads the config; runs nothing.

use crate::cli::ConfigCheckArgs;
use crate::commands::Outcome;
use crate::error::Error;
use crate::output;

pub fn check(args: &ConfigCheckArgs) -> Result<Outcome, Error> {
    let loaded = crate::config::load(&args.config)?;
    let cases: usize = loaded
        .config
        .suites
        .iter()
        .map(|s| s.case_keys().len())
        .sum();
    output::emit(&format!(
        "{}: ok ({} suite(s), {} case(s), {} model(s))\n",
        loaded.path.display(),
        loaded.config.suites.len(),
        cases,
        loaded.models.len()
    ))?;
    Ok(Outcome::Passed)
}

pub fn print_default() -> Result<Outcome, Error> {
    output::emit(crate::config::DEFAULT_CONFIG)?;
    Ok(Outcome::Passed)
}
