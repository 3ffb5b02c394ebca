//! The terminal listings of the store: `runs list`, `baseline list`, `baseline show` and
//! `baseline history`. Pure: store rows in, text out.

use std::fmt::Write as _;

use crate::report::Terminal;
use crate::report::format::{ms, pct, short_sha_or_missing};
use crate::report::terminal::{Grid, GridCell};
use crate::store::{BaselineEntry, BaselineEvent, RunSummary, StoredResult};

/// `runs list`: one row per run, newest first as the store gave them.
#[must_use]
pub fn render_runs(runs: &[RunSummary], terminal: Terminal) -> String {
    if runs.is_empty() {
        return "no runs stored yet\n".to_owned();
    }
    let mut table = Grid::new(
        terminal,
        [
            "run", "started", "branch", "commit", "trigger", "gpu", "cases", "verdicts",
        ],
    );
    for r in runs {
        let verdicts: Vec<String> = r.verdicts.iter().map(|(v, n)| format!("{n} {v}")).collect();
        table.row(vec![
            GridCell::right(r.id.to_string()),
            GridCell::left(r.started_at.strftime("%Y-%m-%d %H:%M:%S").to_string()),
            GridCell::left(r.branch.clone().unwrap_or_default()),
            GridCell::left(short_sha_or_missing(r.git_sha.as_deref())),
            GridCell::left(r.trigger.clone().unwrap_or_default()),
            GridCell::left(r.gpu_sku.clone()),
            GridCell::right(r.n_results.to_string()),
            GridCell::left(verdicts.join(", ")),
        ]);
    }
    format!("{}\n", table.render())
}

/// `baseline list`: the baseline of every case, with how and why it last moved.
#[must_use]
pub fn render_baselines(entries: &[BaselineEntry], terminal: Terminal) -> String {
    if entries.is_empty() {
        return "no baselines yet: a passing run on the baseline branch sets them\n".to_owned();
    }
    let mut table = Grid::new(
        terminal,
        [
            "case",
            "gpu",
            "run",
            "commit",
            "median ms",
            "util",
            "moved",
            "how",
            "reason",
        ],
    )
    .key_column(0);
    for e in entries {
        table.row(vec![
            GridCell::left(e.key.to_string()),
            GridCell::left(e.gpu_sku.clone()),
            GridCell::right(e.run_id.to_string()),
            GridCell::left(short_sha_or_missing(e.git_sha.as_deref())),
            GridCell::right(ms(e.median_ms)),
            GridCell::right(pct(e.utilisation)),
            GridCell::left(e.moved_at.strftime("%Y-%m-%d %H:%M").to_string()),
            GridCell::left(e.kind.to_string()),
            GridCell::left(e.reason.clone()),
        ]);
    }
    format!("{}\n", table.render())
}

/// `baseline show CASE`: the baseline's result in full, its per-process medians and its
/// environment.
#[must_use]
pub fn render_baseline(entry: &BaselineEntry, result: &StoredResult) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on that invariant.
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
    out
}

/// `baseline history`: every move, oldest first as the store gave them.
#[must_use]
pub fn render_baseline_history(events: &[BaselineEvent], terminal: Terminal) -> String {
    let mut table = Grid::new(
        terminal,
        [
            "moved", "case", "gpu", "run", "commit", "util", "how", "reason",
        ],
    )
    .key_column(1);
    for e in events {
        table.row(vec![
            GridCell::left(e.moved_at.strftime("%Y-%m-%d %H:%M:%S").to_string()),
            GridCell::left(e.key.to_string()),
            GridCell::left(e.gpu_sku.clone()),
            GridCell::right(e.run_id.to_string()),
            GridCell::left(short_sha_or_missing(e.git_sha.as_deref())),
            GridCell::right(pct(e.utilisation)),
            GridCell::left(e.kind.to_string()),
            GridCell::left(e.reason.clone()),
        ]);
    }
    format!("{}\n", table.render())
}
