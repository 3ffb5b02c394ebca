//! `utilgate report [RUN] --format markdown|summary|html|junit|json|bmf|openmetrics|gab
//! [--out FILE] [--group ID]`: render a stored run (or a run group's runs merged) through the
//! templates or one of the exports. Reads the store and the config's user templates; writes
//! stdout or one file. Never writes the store.

#![expect(clippy::disallowed_methods, reason = "report --out writes files")]

use crate::cli::{ReportArgs, ReportFormatArg};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::publish;
use crate::pipeline::{context, report as stored};
use crate::report::{
    RenderError, Renderer, ReportFormat, RunReport, render_bmf, render_gab, render_openmetrics,
};

/// The template format of an argument; `None` for the exports, rendered without templates.
fn format_of(arg: ReportFormatArg) -> Option<ReportFormat> {
    match arg {
        ReportFormatArg::Markdown => Some(ReportFormat::Markdown),
        ReportFormatArg::Summary => Some(ReportFormat::Summary),
        ReportFormatArg::Html => Some(ReportFormat::Html),
        ReportFormatArg::Junit => Some(ReportFormat::Junit),
        ReportFormatArg::Json => Some(ReportFormat::Json),
        ReportFormatArg::Bmf | ReportFormatArg::Openmetrics | ReportFormatArg::Gab => None,
    }
}

/// Render `report` as `arg` asks: through the templates or as an export.
fn render(
    renderer: &Renderer,
    arg: ReportFormatArg,
    report: &RunReport,
) -> Result<String, RenderError> {
    Ok(match (format_of(arg), arg) {
        (Some(format), _) => renderer.render(format, report)?,
        (None, ReportFormatArg::Bmf) => render_bmf(report)?,
        (None, ReportFormatArg::Gab) => render_gab(report)?,
        (None, _) => render_openmetrics(report),
    })
}

pub fn report(args: &ReportArgs) -> Result<Outcome, Error> {
    let loaded = context::optional_config(&args.config)?;
    let renderer = publish::renderer(loaded.as_ref())?;
    let (store, config) = context::store_from(&args.config)?;
    let report = if let Some(group) = &args.group {
        let (report, notes) = crate::pipeline::fleet::group_report(&store, group, config.as_ref())?;
        for note in notes {
            output::warn(&note);
        }
        report
    } else {
        let run = stored::load_run(&store, args.run)?;
        stored::stored_report(&store, &run, config.as_ref())?
    };
    let text = render(&renderer, args.format, &report)?;
    match &args.out {
        Some(path) => std::fs::write(path, text).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?,
        None => output::emit(&text)?,
    }
    Ok(Outcome::Passed)
}
