//! The baseline files (`baselines/*.json`): read from files and directories, written from the
//! store, imported into it, and a scratch store seeded from them for `run --baselines`; shared by
//! `baseline export|import|diff` and `run`. Does I/O: reads files and the store.

#![expect(
    clippy::disallowed_methods,
    reason = "baselines/ is a directory of files"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::output;
use crate::report::baseline_diff::Side;
use crate::store::export::{ExportFile, ExportedBaseline, parse_export};
use crate::store::{BaselineMoveKind, NewResult, NewRun, Store};

/// The current baselines of the store, per GPU SKU, as the files hold them.
pub(crate) fn from_store(
    store: &Store,
    gpu: Option<&str>,
) -> Result<BTreeMap<String, Vec<ExportedBaseline>>, Error> {
    let mut by_sku: BTreeMap<String, Vec<ExportedBaseline>> = BTreeMap::new();
    let mut imports: BTreeMap<i64, Option<OriginalMove>> = BTreeMap::new();
    for e in store.baselines(gpu)? {
        let Some(r) = store.baseline_for(&e.key, &e.gpu_sku)? else {
            continue;
        };
        // An imported baseline is exported as it was reviewed: with the move it was imported
        // with, so seeding a store from baselines/ and exporting again changes nothing.
        let original = if e.kind == BaselineMoveKind::Import {
            if let std::collections::btree_map::Entry::Vacant(slot) = imports.entry(e.run_id.0) {
                let moved = store
                    .run(e.run_id)?
                    .and_then(|run| run.config_json)
                    .and_then(|c| serde_json::from_value(c.get("moved")?.clone()).ok());
                slot.insert(moved);
            }
            imports.get(&e.run_id.0).cloned().flatten()
        } else {
            None
        };
        let (how, reason, moved_at) = original.map_or_else(
            || (e.kind.to_string(), e.reason.clone(), e.moved_at.to_string()),
            |m| (m.how, m.reason, m.moved_at),
        );
        by_sku
            .entry(e.gpu_sku.clone())
            .or_default()
            .push(ExportedBaseline {
                key: e.key.clone(),
                run_id: e.run_id.0,
                git_sha: r.git_sha.clone(),
                branch: r.branch.clone(),
                measured_at: r.started_at.to_string(),
                moved_at,
                how,
                reason,
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
    Ok(by_sku)
}

/// Every `*.json` file of the given files and directories (a directory's files in name
/// order), read and checked. Nothing is written.
pub(crate) fn read_files(paths: &[PathBuf]) -> Result<Vec<(PathBuf, ExportFile)>, Error> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let entries = std::fs::read_dir(path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            let mut names: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                .collect();
            names.sort();
            files.extend(names);
        } else {
            files.push(path.clone());
        }
    }
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let file = parse_export(&text, &path)?;
        out.push((path, file));
    }
    Ok(out)
}

/// What identifies the run an exported baseline came from: commit, branch, time, and how, why
/// and when its baseline moved.
type SourceRun = (
    Option<String>,
    Option<String>,
    String,
    String,
    String,
    String,
);

/// How an imported baseline had moved before it was exported, kept with its imported run.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct OriginalMove {
    how: String,
    reason: String,
    moved_at: String,
}

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
        budget: None,
        costs: Vec::new(),
        quality: std::collections::BTreeMap::new(),
        speculative: None,
        energy: Vec::new(),
    }
}

/// Store the baselines of checked files: one imported run per source run (commit, branch,
/// time, and why its baseline moved), so every field the export wrote comes back. Returns
/// what was imported, a line per run.
pub(crate) fn import_into(
    store: &mut Store,
    files: &[(PathBuf, ExportFile)],
) -> Result<String, Error> {
    let now = crate::pipeline::context::now();
    let mut out = String::new();
    for (path, file) in files {
        let mut groups: BTreeMap<SourceRun, Vec<&ExportedBaseline>> = BTreeMap::new();
        for b in &file.baselines {
            groups
                .entry((
                    b.git_sha.clone(),
                    b.branch.clone(),
                    b.measured_at.clone(),
                    b.how.clone(),
                    b.reason.clone(),
                    b.moved_at.clone(),
                ))
                .or_default()
                .push(b);
        }
        for ((git_sha, branch, measured_at, how, reason, moved_at), baselines) in groups {
            let original = OriginalMove {
                how: how.clone(),
                reason: reason.clone(),
                moved_at,
            };
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
                config_json: Some(serde_json::json!({
                    "imported_from": path.display().to_string(),
                    "moved": original,
                })),
                promote_reason: String::new(),
                canary_json: None,
                uid: None,
                budget_night: None,
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
    Ok(out)
}

/// The scratch store of `run --baselines`: removed when dropped.
pub(crate) struct Scratch {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

/// A scratch store holding the baselines of `files` (a file or a directory), for a run that
/// judges against committed baseline files: every file is read and checked before anything
/// is created, and the configured store is neither read nor written.
pub(crate) fn seeded_store(files: &Path, busy_timeout_s: f64) -> Result<(Store, Scratch), Error> {
    let read = read_files(&[files.to_path_buf()])?;
    let dir = tempfile::Builder::new()
        .prefix("utilgate-baselines-")
        .tempdir()
        .map_err(|source| Error::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let path = dir.path().join("utilgate.db");
    let mut store = Store::open_init(&path, std::time::Duration::from_secs_f64(busy_timeout_s))?;
    import_into(&mut store, &read)?;
    let cases: usize = read.iter().map(|(_, f)| f.baselines.len()).sum();
    output::note(&format!(
        "judging against {cases} baseline(s) from {} ({} file(s)); nothing is stored and no baseline moves",
        files.display(),
        read.len()
    ));
    Ok((store, Scratch { _dir: dir, path }))
}

pub(crate) fn side_from_files(path: &Path, gpu: Option<&str>) -> Result<Side, Error> {
    let mut side = Side::new();
    for (_, file) in read_files(&[path.to_path_buf()])? {
        if gpu.is_some_and(|g| g != file.gpu_sku) {
            continue;
        }
        for b in file.baselines {
            side.insert((file.gpu_sku.clone(), b.key.clone()), b);
        }
    }
    Ok(side)
}
