//! `utilgate gpus`, `utilgate completions SHELL` and `utilgate man`: the front door's reference
//! output. Prints to stdout; `man --out-dir` writes files.

use crate::catalog::gpu::catalogue;
use crate::cli::{Format, GpusArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::report::gpus::{GpuList, SCHEMA_VERSION, render_human};

pub fn gpus(args: &GpusArgs) -> Result<Outcome, Error> {
    let gpus = catalogue();
    match args.format.format {
        Format::Human => output::emit(&render_human(&gpus, output::stdout_width()))?,
        Format::Json => output::emit(
            &(serde_json::to_string_pretty(&GpuList {
                schema_version: SCHEMA_VERSION,
                gpus: &gpus,
            })? + "\n"),
        )?,
    }
    Ok(Outcome::Passed)
}
