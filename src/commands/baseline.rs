//! `utilgate baseline list|show|history|accept` (export and import: `baseline_files.rs`; diff:
//! `baseline_diff.rs`). Baselines are pointers: they move only through a passing run on the
//! baseline branch, an `accept` with a reason, or an import, and every move is kept. Does I/O
//! on the store.

use std::fmt::Write as _;

use crate::case::{CaseKey, Verdict};
use crate::cli::{BaselineAcceptArgs, BaselineCommand, BaselineListArgs, BaselineShowArgs, Format};
use crate::commands::Outcome;
use crate::commands::runs::{StoreMode, store_from, store_with};
use crate::error::Error;
use crate::output;
use crate::report::{self, SCHEMA_VERSION};
use crate::store::{BaselineMove, BaselineMoveKind, CaseFilter, RunId, StoredResult};

pub fn baseline(cmd: &BaselineCommand) -> Result<Outcome, Error> {
    match cmd {
        BaselineCommand::List(args) => list(args),
        BaselineCommand::Show(args) => show(args),
        BaselineCommand::History(args) => history(args),
        BaselineCommand::Accept(args) => accept(args),
        BaselineCommand::Export(args) => crate::commands::baseline_files::export(args),
        BaselineCommand::Import(args) => crate::commands::baseline_files::import(args),
        BaselineCommand::Diff(args) => crate::commands::baseline_diff::diff(args),
    }
}

fn matches(key: &CaseKey, filter: Option<&str>) -> bool {
    filter.is_none_or(|f| key.to_string().contains(f))
}

fn list(args: &BaselineListArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let entries: Vec<_> = store
        .baselines(args.gpu.as_deref())?
        .into_iter()
        .filter(|e| matches(&e.key, args.filter.as_deref()))
        .collect();
    match args.format.format {
        Format::Json => {
            let value =
                serde_json::json!({ "schema_version": SCHEMA_VERSION, "baselines": entries });
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        }
        Format::Human => {
            output::emit(&report::render_baselines(
                &entries,
                output::stdout_terminal(),
            ))?;
        }
    }
    Ok(Outcome::Passed)
}

fn show(args: &BaselineShowArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let entries = store.baselines(args.gpu.as_deref())?;
    let no_baseline = || {
        let keys: Vec<String> = entries.iter().map(|e| e.key.to_string()).collect();
        Error::NoBaseline {
            case: args.case.clone(),
            suggestion: crate::suggest::did_you_mean(&args.case, keys.iter().map(String::as_str))
                .map(str::to_owned),
        }
    };
    let entry = entries
        .iter()
        .find(|e| e.key.to_string() == args.case)
        .ok_or_else(no_baseline)?;
    let result = store
        .baseline_for(&entry.key, &entry.gpu_sku)?
        .ok_or_else(no_baseline)?;
    match args.format.format {
        Format::Json => {
            let value = serde_json::json!({
                "schema_version": SCHEMA_VERSION,
                "baseline": entry,
                "result": result,
            });
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        }
        Format::Human => output::emit(&report::render_baseline(entry, &result))?,
    }
    Ok(Outcome::Passed)
}

fn history(args: &BaselineListArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let events: Vec<_> = store
        .baseline_history(&CaseFilter::All, args.gpu.as_deref())?
        .into_iter()
        .filter(|e| matches(&e.key, args.filter.as_deref()))
        .collect();
    match args.format.format {
        Format::Json => {
            let value = serde_json::json!({ "schema_version": SCHEMA_VERSION, "events": events });
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        }
        Format::Human => {
            let terminal = output::stdout_terminal();
            output::emit(&report::render_baseline_history(&events, terminal))?;
        }
    }
    Ok(Outcome::Passed)
}

fn accept(args: &BaselineAcceptArgs) -> Result<Outcome, Error> {
    if args.reason.trim().is_empty() {
        return Err(Error::EmptyReason);
    }
    let (mut store, _) = store_with(&args.config, StoreMode::Write)?;
    let run = store
        .run(RunId(args.run))?
        .ok_or(Error::NoSuchRun(args.run))?;
    let chosen: Vec<&StoredResult> = run
        .results
        .iter()
        .filter(|r| matches(&r.key, Some(&args.filter)))
        .collect();
    if chosen.is_empty() {
        return Err(Error::NoMatchingResult {
            run: args.run,
            filter: args.filter.clone(),
        });
    }
    // Only a real measurement can become a baseline: never a failed or impossible one.
    if let Some(bad) = chosen
        .iter()
        .find(|r| r.error.is_some() || matches!(r.verdict, Some(Verdict::Error | Verdict::Invalid)))
    {
        return Err(Error::NotAcceptable {
            case: bad.key.to_string(),
            run: args.run,
            state: bad.verdict.map_or("unmeasured", Verdict::as_str).to_owned(),
        });
    }
    let now = crate::commands::now();
    let moves: Vec<BaselineMove> = chosen
        .iter()
        .map(|r| BaselineMove {
            result_id: r.id,
            kind: BaselineMoveKind::Accept,
            reason: args.reason.clone(),
            moved_at: now,
        })
        .collect();
    store.move_baselines(&moves)?;
    let mut out = String::new();
    for r in &chosen {
        let _ = writeln!(out, "accepted {} from run {}", r.key, args.run);
    }
    output::emit(&out)?;
    Ok(Outcome::Passed)
}
