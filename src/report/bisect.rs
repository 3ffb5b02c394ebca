//! `utilgate bisect` output: what arrived between a good and a bad stored run (the commits,
//! the environment and GPU fingerprint diff, each case's step time then and now) and, in
//! `--run` mode, where the checked-out commit falls. Pure.

use std::fmt::Write as _;

use serde::Serialize;

use crate::compare::EnvChange;
use crate::compare::bisect::BisectCall;

pub use crate::compare::history::Commit;

/// A case measured by both runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseChange {
    pub case: String,
    pub good_ms: Option<f64>,
    pub bad_ms: Option<f64>,
    /// Step time change, percent (positive: slower).
    pub slower_pct: Option<f64>,
}

/// What changed between the two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BisectReport {
    pub schema_version: u32,
    pub good_run: i64,
    pub bad_run: i64,
    pub good_sha: Option<String>,
    pub bad_sha: Option<String>,
    /// `None`: not in a git checkout, or a run has no stored commit git knows.
    pub commits: Option<Vec<Commit>>,
    pub env_changes: Vec<EnvChange>,
    pub cases: Vec<CaseChange>,
}

/// The human text of a bisect report.
#[must_use]
pub fn render_human(r: &BisectReport) -> String {
    let sha = |s: &Option<String>| {
        s.as_deref().map_or_else(
            || "no commit".to_owned(),
            |s| super::format::short_sha(s).to_owned(),
        )
    };
    let mut out = format!(
        "good: run {} ({})  bad: run {} ({})\n",
        r.good_run,
        sha(&r.good_sha),
        r.bad_run,
        sha(&r.bad_sha)
    );
    match &r.commits {
        Some(commits) => {
            let _ = writeln!(out, "commits ({}):", commits.len());
            for c in commits {
                let _ = writeln!(out, "  {} {}", super::format::short_sha(&c.sha), c.subject);
            }
        }
        None => {
            out.push_str("commits: unknown (not in a git checkout that has both runs' commits)\n");
        }
    }
    if r.env_changes.is_empty() {
        out.push_str("environment: unchanged (harness versions, GPU, driver)\n");
    } else {
        out.push_str("environment:\n");
        for c in &r.env_changes {
            let _ = writeln!(out, "  {c}");
        }
    }
    out.push_str("cases:\n");
    for c in &r.cases {
        let _ = writeln!(
            out,
            "  {}: {} -> {} ms ({})",
            c.case,
            super::format::ms(c.good_ms),
            super::format::ms(c.bad_ms),
            c.slower_pct
                .map_or_else(|| "-".to_owned(), |p| format!("{p:+.1}% step time"))
        );
    }
    out
}

/// The `--run` mode's line: where this commit falls.
#[must_use]
pub fn render_call(case: &str, sha: Option<&str>, call: &BisectCall) -> String {
    format!(
        "bisect {case} at {}: {} (exit {}): {} ms; good {} ms, bad {} ms, midpoint {} ms; {}",
        sha.map_or("this checkout", super::format::short_sha),
        call.verdict.as_str(),
        call.verdict.exit_code(),
        call.interval_ms.map_or_else(
            || "-".to_owned(),
            |(lo, hi)| format!(
                "{} [{} .. {}]",
                super::format::ms(call.now_ms),
                super::format::ms(Some(lo)),
                super::format::ms(Some(hi))
            )
        ),
        super::format::ms(Some(call.good_ms)),
        super::format::ms(Some(call.bad_ms)),
        super::format::ms(Some(call.midpoint_ms)),
        call.reason
    )
}
