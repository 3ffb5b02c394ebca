//! `utilgate report [RUN] --format markdown|summary|html|junit|json [--out FILE]`: render a
//! stored run through the templates. Reads the store and the config's user templates; writes
//! stdout or one file. Never writes the store.

use crate::cli::{ReportArgs, ReportFormatArg};
use crate::commands::{Outcome, publish, runs};
use crate::error::Error;
use crate::output;
use crate::report::ReportFormat;

fn format_of(arg: ReportFormatArg) -> ReportFormat {
    match arg {
        ReportFormatArg::Markdown => ReportFormat::Markdown,
        ReportFormatArg::Summary => ReportFormat::Summary,
        ReportFormatArg::Html => ReportFormat::Html,
        ReportFormatArg::Junit => ReportFormat::Junit,
        ReportFormatArg::Json => ReportFormat::Json,
    }
}

pub fn report(args: &ReportArgs) -> Result<Outcome, Error> {
    let loaded = runs::optional_config(&args.config)?;
    let renderer = publish::renderer(loaded.as_ref())?;
    let (store, config) = runs::store_from(&args.config)?;
    let run = runs::load_run(&store, args.run)?;
    let report = publish::stored_report(&store, &run, config.as_ref())?;
    let text = renderer.render(format_of(args.format), &report)?;
    match &args.out {
        Some(path) => std::fs::write(path, text).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?,
        None => output::emit(&text)?,
    }
    Ok(Outcome::Passed)
}
