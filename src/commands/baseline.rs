//! `utilgate baseline list|show|history|accept|export|import`. Baselines are pointers: they move
//! only through a passing run on the baseline branch, an `accept` with a reason, or an import,
//! and every move is kept. The export file is portable and reviewable: one case per line.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use comfy_table::Table;
use comfy_table::presets::UTF8_BORDERS_ONLY;

use crate::case::{CaseKey, Verdict};
use crate::cli::{
    BaselineAcceptArgs, BaselineCommand, BaselineExportArgs, BaselineImportArgs, BaselineListArgs,
    BaselineShowArgs, Format,
};
use crate::commands::Outcome;
use crate::commands::runs::{StoreMode, store_from, store_with};
use crate::error::Error;
use crate::output;
use crate::report::SCHEMA_VERSION;
use crate::report::format::{ms, pct, short_sha_or_missing};
use crate::store::export::{
    EXPORT_SCHEMA_VERSION, ExportFile, ExportedBaseline, parse_export, render_export,
};
use crate::store::{
    BaselineMove, BaselineMoveKind, CaseFilter, NewResult, NewRun, RunId, StoredResult,
};

pub fn baseline(cmd: &BaselineCommand) -> Result<Outcome, Error> {
    match cmd {
        BaselineCommand::List(args) => list(args),
        BaselineCommand::Show(args) => show(args),
        BaselineCommand::History(args) => history(args),
        BaselineCommand::Accept(args) => accept(args),
        BaselineCommand::Export(args) => export(args),
        BaselineCommand::Import(args) => import(args),
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
            let mut table = Table::new();
            table.load_style(UTF8_BORDERS_ONLY).force_no_tty();
            table.set_header(vec![
                "case",
                "gpu",
                "run",
                "commit",
                "median ms",
                "util",
                "moved",
                "how",
                "reason",
            ]);
            for e in &entries {
                table.add_row(vec![
                    e.key.to_string(),
                    e.gpu_sku.clone(),
                    e.run_id.to_string(),
                    short_sha_or_missing(e.git_sha.as_deref()),
                    ms(e.median_ms),
                    pct(e.utilisation),
                    e.moved_at.strftime("%Y-%m-%d %H:%M").to_string(),
                    e.kind.to_string(),
                    e.reason.clone(),
                ]);
            }
            if entries.is_empty() {
                output::emit("no baselines yet: a passing run on the baseline branch sets them\n")?;
            } else {
                output::emit(&format!("{table}\n"))?;
            }
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
        Format::Human => {
            let mut out = String::new();
            let _ = writeln!(out, "case:        {}", entry.key);
            let _ = writeln!(out, "gpu:         {}", entry.gpu_sku);
            let _ = writeln!(
                out,
                "result:      run {} @ {} on {}",
                entry.run_id,
                short_sha_or_missing(result.git_sha.as_deref()),
                result.branch.as_deref().unwrap_or("-")
            );
            let _ = writeln!(
                out,
                "moved:       {} by {} ({})",
                entry.moved_at, entry.kind, entry.reason
            );
            let _ = writeln!(out, "floor:       {} ms", ms(result.floor_ms));
            let _ = writeln!(
                out,
                "step:        {} ms median, utilisation {} (MBU {}, MFU {})",
                ms(result.median_ms),
                pct(result.utilisation),
                pct(result.mbu),
                pct(result.mfu)
            );
            let medians: Vec<String> = result
                .repeats_ms
                .iter()
                .filter_map(|r| crate::stats::median(r))
                .map(|m| format!("{m:.3}"))
                .collect();
            let _ = writeln!(out, "per-process medians (ms): {}", medians.join(", "));
            for (k, v) in &result.env {
                let _ = writeln!(out, "env {k}: {v}");
            }
            output::emit(&out)?;
        }
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
            let mut table = Table::new();
            table.load_style(UTF8_BORDERS_ONLY).force_no_tty();
            table.set_header(vec![
                "moved", "case", "gpu", "run", "commit", "util", "how", "reason",
            ]);
            for e in &events {
                table.add_row(vec![
                    e.moved_at.strftime("%Y-%m-%d %H:%M:%S").to_string(),
                    e.key.to_string(),
                    e.gpu_sku.clone(),
                    e.run_id.to_string(),
                    short_sha_or_missing(e.git_sha.as_deref()),
                    pct(e.utilisation),
                    e.kind.to_string(),
                    e.reason.clone(),
                ]);
            }
            output::emit(&format!("{table}\n"))?;
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

fn export(args: &BaselineExportArgs) -> Result<Outcome, Error> {
    let (store, _) = store_from(&args.config)?;
    let entries = store.baselines(args.gpu.as_deref())?;
    let mut by_sku: BTreeMap<String, Vec<ExportedBaseline>> = BTreeMap::new();
    for e in entries {
        let Some(r) = store.baseline_for(&e.key, &e.gpu_sku)? else {
            continue;
        };
        by_sku
            .entry(e.gpu_sku.clone())
            .or_default()
            .push(ExportedBaseline {
                key: e.key.clone(),
                run_id: e.run_id.0,
                git_sha: r.git_sha.clone(),
                branch: r.branch.clone(),
                measured_at: r.started_at.to_string(),
                moved_at: e.moved_at.to_string(),
                how: e.kind.to_string(),
                reason: e.reason.clone(),
                verdict: r.verdict,
                floor_ms: r.floor_ms,
                floor: r.floor_json.clone(),
                median_ms: r.median_ms,
                utilisation: r.utilisation,
                mbu: r.mbu,
                mfu: r.mfu,
                summary: r.summary_json.clone(),
                env: r.env.clone(),
                repeats_ms: r.repeats_ms.clone(),
            });
    }
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
    for (sku, mut baselines) in by_sku {
        baselines.sort_by(|a, b| a.key.cmp(&b.key));
        let path: PathBuf =
            out_file.map_or_else(|| base_dir.join(format!("{sku}.json")), Path::to_path_buf);
        let text = render_export(&ExportFile {
            schema_version: EXPORT_SCHEMA_VERSION,
            gpu_sku: sku.clone(),
            baselines,
        })?;
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // Write beside and rename, so a failed write never leaves half a file.
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text)
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
        let _ = writeln!(written, "wrote {} ({sku})", path.display());
    }
    output::emit(&written)?;
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

/// What identifies the run an exported baseline came from: commit, branch, time, and how and
/// why its baseline moved.
type SourceRun = (Option<String>, Option<String>, String, String, String);

/// A stored result from an exported baseline, with every figure the export kept.
fn imported_result(b: &ExportedBaseline) -> NewResult {
    NewResult {
        key: b.key.clone(),
        verdict: b.verdict,
        error: None,
        floor_ms: b.floor_ms,
        floor_json: b.floor.clone(),
        median_ms: b.median_ms,
        utilisation: b.utilisation,
        mbu: b.mbu,
        mfu: b.mfu,
        summary_json: b.summary.clone(),
        decision_json: None,
        repeats_ms: b.repeats_ms.clone(),
        warmup_ms: Vec::new(),
        env: b.env.clone(),
        gpu_state_json: None,
        stderr_tail: None,
        promote: false,
    }
}

fn import(args: &BaselineImportArgs) -> Result<Outcome, Error> {
    // Read and check every file before touching the store.
    let mut files = Vec::new();
    for path in &args.files {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        files.push((path.clone(), parse_export(&text, path)?));
    }
    let (mut store, _) = store_with(&args.config, StoreMode::Create)?;
    let now = crate::commands::now();
    let mut out = String::new();
    for (path, file) in files {
        // One imported run per source run (commit, branch, time, and why its baseline moved),
        // so every field the export wrote comes back: `baseline list` shows the commit.
        let mut groups: BTreeMap<SourceRun, Vec<&ExportedBaseline>> = BTreeMap::new();
        for b in &file.baselines {
            groups
                .entry((
                    b.git_sha.clone(),
                    b.branch.clone(),
                    b.measured_at.clone(),
                    b.how.clone(),
                    b.reason.clone(),
                ))
                .or_default()
                .push(b);
        }
        for ((git_sha, branch, measured_at, how, reason), baselines) in groups {
            let results = baselines.iter().map(|b| imported_result(b)).collect();
            let started_at = measured_at.parse::<jiff::Timestamp>().unwrap_or(now);
            let run = NewRun {
                started_at,
                finished_at: started_at,
                git_sha,
                branch,
                trigger: Some("import".into()),
                pr_number: None,
                gpu_sku: file.gpu_sku.clone(),
                gpu_json: None,
                host: None,
                utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
                config_json: Some(
                    serde_json::json!({ "imported_from": path.display().to_string() }),
                ),
                promote_reason: String::new(),
                canary_json: None,
                group: None,
                results,
            };
            let reason = if reason.is_empty() {
                format!("imported from {}", path.display())
            } else {
                format!(
                    "imported from {} (moved by {how}: {reason})",
                    path.display()
                )
            };
            let id = store.import_run(&run, &reason, now)?;
            let _ = writeln!(
                out,
                "imported {} baseline(s) for {} from {} as run {id}",
                baselines.len(),
                file.gpu_sku,
                path.display()
            );
        }
    }
    output::emit(&out)?;
    Ok(Outcome::Passed)
}
