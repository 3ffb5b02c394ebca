//! `utilgate baseline list|show|history|accept|export|import|diff` (the baseline files are read
//! and written by `pipeline::baselines`). Baselines are pointers: they move only through a passing run on the
//! baseline branch, an `accept` with a reason, or an import, and every move is kept. Does I/O
//! on the store.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::case::{CaseKey, Verdict};
use crate::cli::{
    BaselineAcceptArgs, BaselineCommand, BaselineDiffArgs, BaselineExportArgs, BaselineImportArgs,
    BaselineListArgs, BaselineShowArgs, DiffFormat, Format,
};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::baselines::{from_store, import_into, read_files, side_from_files};
use crate::pipeline::context::StoreMode;
use crate::pipeline::context::store_from;
use crate::pipeline::context::store_with;
use crate::report::baseline_diff::{Side, diff_baselines, render_markdown, render_table};
use crate::report::{self, SCHEMA_VERSION};
use crate::store::export::{EXPORT_SCHEMA_VERSION, ExportFile, render_export};
use crate::store::{BaselineMove, BaselineMoveKind, CaseFilter, RunId, StoredResult};

pub fn baseline(cmd: &BaselineCommand) -> Result<Outcome, Error> {
    match cmd {
        BaselineCommand::List(args) => list(args),
        BaselineCommand::Show(args) => show(args),
        BaselineCommand::History(args) => history(args),
        BaselineCommand::Accept(args) => accept(args),
        BaselineCommand::Export(args) => export(args),
        BaselineCommand::Import(args) => import(args),
        BaselineCommand::Diff(args) => diff(args),
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
    let now = crate::pipeline::context::now();
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

pub(crate) fn export(args: &BaselineExportArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let by_sku = from_store(&store, args.gpu.as_deref())?;
    if by_sku.is_empty() {
        return Err(Error::NothingToExport);
    }
    // `--out DIR/` (or an existing directory) takes one file per GPU, as the default does.
    let out_dir = args.out.as_deref().filter(|p| is_directory_arg(p));
    let out_file = args.out.as_deref().filter(|p| !is_directory_arg(p));
    if out_file.is_some() && by_sku.len() > 1 {
        return Err(Error::ExportNeedsGpu {
            gpus: by_sku.keys().cloned().collect(),
        });
    }
    let base_dir = out_dir.map_or_else(
        || {
            args.config
                .config
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .join("baselines")
        },
        Path::to_path_buf,
    );
    let mut written = String::new();
    for (sku, baselines) in by_sku {
        let path: PathBuf =
            out_file.map_or_else(|| base_dir.join(format!("{sku}.json")), Path::to_path_buf);
        let n = baselines.len();
        let text = render_export(&ExportFile {
            schema_version: EXPORT_SCHEMA_VERSION,
            gpu_sku: sku.clone(),
            baselines,
        })?;
        crate::pipeline::context::write_atomically(&path, &text)?;
        let _ = writeln!(written, "wrote {} ({sku}, {n} case(s))", path.display());
    }
    output::emit(&written)?;
    Ok(Outcome::Passed)
}

pub(crate) fn import(args: &BaselineImportArgs) -> Result<Outcome, Error> {
    // Read and check every file before touching the store.
    let files = read_files(&args.files)?;
    let (mut store, _) = store_with(&args.config, StoreMode::Create)?;
    let out = import_into(&mut store, &files)?;
    output::emit(&out)?;
    Ok(Outcome::Passed)
}

pub(crate) fn diff(args: &BaselineDiffArgs) -> Result<Outcome, Error> {
    let gpu = args.gpu.as_deref();
    let old = side_from_files(&args.old, gpu)?;
    let (new, new_label) = if let Some(path) = &args.new {
        (side_from_files(path, gpu)?, path.display().to_string())
    } else {
        let (store, _) = store_from(&args.config)?;
        let mut side = Side::new();
        for (sku, baselines) in from_store(&store, gpu)? {
            for b in baselines {
                side.insert((sku.clone(), b.key.clone()), b);
            }
        }
        (side, "the store".to_owned())
    };
    let d = diff_baselines(&old, &new, (args.old.display().to_string(), new_label));
    let text = match args.format {
        DiffFormat::Human => render_table(&d, output::stdout_terminal()),
        DiffFormat::Markdown => render_markdown(&d),
        DiffFormat::Json => format!("{}\n", serde_json::to_string_pretty(&d)?),
    };
    output::emit(&text)?;
    if args.exit_code && !d.changes.is_empty() {
        return Ok(Outcome::GateFailed);
    }
    Ok(Outcome::Passed)
}

/// Whether `--out` names a directory: one that exists, or a path ending in a separator.
fn is_directory_arg(path: &Path) -> bool {
    path.is_dir()
        || path
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::MAIN_SEPARATOR)
}
