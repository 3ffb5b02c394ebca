//! `utilgate runs list|show`: read the store and print; shared read-only helpers for the other
//! store-reading commands. Never writes the store.

use crate::cli::{Format, RunsListArgs, RunsShowArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::store_from;
use crate::pipeline::report::{load_run, print_report, stored_report};
use crate::report::{self};
use crate::store::RunFilter;

pub fn list(args: &RunsListArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let runs = store.list_runs(&RunFilter {
        limit: args.limit,
        branch: args.branch.clone(),
        gpu_sku: args.gpu.clone(),
    })?;
    match args.format.format {
        Format::Json => {
            let value =
                serde_json::json!({ "schema_version": report::SCHEMA_VERSION, "runs": runs });
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        }
        Format::Human => output::emit(&report::render_runs(&runs, output::stdout_terminal()))?,
    }
    Ok(Outcome::Passed)
}

pub fn show(args: &RunsShowArgs) -> Result<Outcome, Error> {
    let (store, config) = store_from(&args.config)?;
    let run = load_run(&store, args.run)?;
    // The one report of a stored run, as `report` and `publish` read it: service cases too.
    let report = stored_report(&store, &run, config.as_ref())?;
    print_report(&report, args.format.format)?;
    Ok(Outcome::Passed)
}
