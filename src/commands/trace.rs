//! `utilgate trace show|diff`: reads trace files (I/O), analyses them with the pure evidence
//! module and prints the report renderings.

use std::path::Path;

use crate::cli::{Format, TraceDiffArgs, TraceShowArgs};
use crate::commands::Outcome;
use crate::error::Error;
use crate::evidence::{Analysis, Options, analyse, diagnose, diff};
use crate::output;
use crate::report::evidence::{analysis_json, analysis_text, diff_json, diff_text};

fn analyse_file(path: &Path) -> Result<(String, Analysis), Error> {
    let (file, trace) = crate::evidence::load(path)?;
    Ok((
        file.display().to_string(),
        analyse(&trace, &Options::default()),
    ))
}

pub fn show(args: &TraceShowArgs) -> Result<Outcome, Error> {
    let (source, a) = analyse_file(&args.trace)?;
    let diagnosis = diagnose(&a, None);
    let text = match args.format.format {
        Format::Human => analysis_text(&source, &a, &diagnosis, args.top),
        Format::Json => format!("{:#}\n", analysis_json(&source, &a, &diagnosis)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

pub fn diff_cmd(args: &TraceDiffArgs) -> Result<Outcome, Error> {
    let (then_src, then) = analyse_file(&args.then)?;
    let (now_src, now) = analyse_file(&args.now)?;
    let d = diff(&then, &now);
    let text = match args.format.format {
        Format::Human => diff_text(&then_src, &now_src, &d, args.top),
        Format::Json => format!("{:#}\n", diff_json(&then_src, &now_src, &d)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}
