//! `utilgate trace show|diff`: reads trace files or the analyses stored with a run's results
//! (I/O), analyses them with the pure evidence module and prints the report renderings.

use std::path::Path;

use crate::case::CaseKey;
use crate::cli::{ConfigArgs, Format, TraceDiffArgs, TraceShowArgs};
use crate::commands::Outcome;
use crate::error::Error;
use crate::evidence::{Analysis, Options, analyse, diagnose, diff};
use crate::output;
use crate::report::evidence::{analysis_json, analysis_text, diff_json, diff_text};

/// A trace file, or `RUN` (a stored run's id) with `--case`: the analysis stored with that result.
fn analysis_of(
    what: &Path,
    case: Option<&str>,
    config: &ConfigArgs,
) -> Result<(String, Analysis), Error> {
    let run_id = what.to_str().and_then(|s| s.parse::<i64>().ok());
    if let (false, Some(run_id)) = (what.exists(), run_id) {
        let case = case.ok_or_else(|| Error::TraceNeedsCase { run: run_id })?;
        let loaded = crate::config::load(&config.config).ok();
        let store_path = config
            .db
            .clone()
            .or_else(|| loaded.as_ref().map(|l| l.store_path(None)));
        let store_path = store_path.unwrap_or_else(|| crate::config::DEFAULT_STORE_PATH.into());
        let store = crate::commands::open_store(&store_path, 10.0)?;
        let run = store
            .run(crate::store::RunId(run_id))?
            .ok_or(Error::NoSuchRun(run_id))?;
        let key: CaseKey = run
            .results
            .iter()
            .map(|r| r.key.clone())
            .find(|k| k.to_string() == case)
            .ok_or_else(|| Error::NoSuchCase {
                run: run_id,
                case: case.to_owned(),
            })?;
        let stored = store.evidence_for(run_id, &key)?;
        let analysis = stored
            .iter()
            .find_map(|e| e.analysis.clone())
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or_else(|| Error::NoTrace {
                run: run_id,
                case: case.to_owned(),
            })?;
        return Ok((format!("run {run_id} {case}"), analysis));
    }
    let (file, trace) = crate::evidence::load(what)?;
    Ok((
        file.display().to_string(),
        analyse(&trace, &Options::default()),
    ))
}

pub fn show(args: &TraceShowArgs) -> Result<Outcome, Error> {
    let (source, a) = analysis_of(&args.trace, args.case.as_deref(), &args.config)?;
    let diagnosis = diagnose(&a, None);
    let text = match args.format.format {
        Format::Human => analysis_text(&source, &a, &diagnosis, args.top),
        Format::Json => format!("{:#}\n", analysis_json(&source, &a, &diagnosis)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

pub fn diff_cmd(args: &TraceDiffArgs) -> Result<Outcome, Error> {
    let (then_src, then) = analysis_of(&args.then, args.case.as_deref(), &args.config)?;
    let (now_src, now) = analysis_of(&args.now, args.case.as_deref(), &args.config)?;
    let d = diff(&then, &now);
    let text = match args.format.format {
        Format::Human => diff_text(&then_src, &now_src, &d, args.top),
        Format::Json => format!("{:#}\n", diff_json(&then_src, &now_src, &d)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}
