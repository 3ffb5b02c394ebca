//! The short texts GitHub shows beside a pull request: commit-status descriptions (at most 140
//! characters), `::error`/`::warning` workflow annotations, and a check run's conclusion, title
//! and annotations. Pure.

use crate::case::Verdict;
use crate::github::{
    AnnotationLevel, CHECK_TITLE_LIMIT, CheckAnnotation, CheckConclusion, CommitState,
};
use crate::report::{GateState, RunReport, SuiteReport};

/// GitHub rejects commit-status descriptions longer than this.
pub const STATUS_DESCRIPTION_LIMIT: usize = 140;

/// The status context of a suite on a GPU: one check line per suite beside the pull request.
#[must_use]
pub fn status_context(template: &str, suite: &str, gpu_sku: &str) -> String {
    template.replace("{suite}", suite).replace("{gpu}", gpu_sku)
}

/// A suite's commit status: failure when the gate fails, error when a case could not be
/// measured, success otherwise; the description is the suite's summary, cut to 140 characters.
#[must_use]
pub fn suite_status(suite: &SuiteReport) -> (CommitState, String) {
    // A suite that could not tell (an unconfirmed drop beyond its threshold) waits: a commit
    // status has no neutral state, and success would show a green tick.
    let state = match suite.state {
        GateState::Failed => CommitState::Failure,
        GateState::Error => CommitState::Error,
        GateState::Undecided => CommitState::Pending,
        GateState::Passed => CommitState::Success,
    };
    (
        state,
        truncate_chars(&suite.summary, STATUS_DESCRIPTION_LIMIT),
    )
}

/// A suite's check-run conclusion: failure when the gate fails or a case could not be
/// measured; neutral when nothing failed but a case needs a look without a verdict
/// (inconclusive, new, missing); success otherwise (pass, improved).
#[must_use]
pub fn suite_conclusion(suite: &SuiteReport) -> CheckConclusion {
    let has = |v: Verdict| suite.counts.get(&v).is_some_and(|k| *k > 0);
    if !suite.passed || suite.errors > 0 {
        CheckConclusion::Failure
    } else if has(Verdict::Inconclusive) || has(Verdict::New) || has(Verdict::Missing) {
        CheckConclusion::Neutral
    } else {
        CheckConclusion::Success
    }
}

/// A check run's title: the suite's summary, under GitHub's 255-character limit.
#[must_use]
pub fn check_title(suite: &SuiteReport) -> String {
    truncate_chars(&suite.summary, CHECK_TITLE_LIMIT - 1)
}

/// One check-run annotation per case of `suite` that fails the gate or errored (failure), and
/// per other case needing attention (warning; improved cases get none). They point at `path`
/// (the config, relative to the repository root) at `line`, where the suite is defined.
#[must_use]
pub fn check_annotations(
    report: &RunReport,
    suite: &str,
    path: &str,
    line: u32,
) -> Vec<CheckAnnotation> {
    report
        .cases
        .iter()
        .filter(|c| c.key.suite == suite && c.attention && c.verdict != Verdict::Improved)
        .map(|c| {
            let level = if c.fails_gate || c.verdict == Verdict::Error {
                AnnotationLevel::Failure
            } else {
                AnnotationLevel::Warning
            };
            let change = c
                .drop_pct
                .map(|_| format!("{}. ", c.decision.deciding_change()))
                .unwrap_or_default();
            let reasons = c.decision.reasons.join("\n");
            let error = c.error.as_deref().unwrap_or_default();
            CheckAnnotation {
                path: path.to_owned(),
                start_line: line,
                end_line: line,
                annotation_level: level,
                title: truncate_chars(
                    &format!("utilgate {}: {}", c.verdict, c.case),
                    CHECK_TITLE_LIMIT - 1,
                ),
                // GitHub caps an annotation's message at 64 KB; a case's reasons are far less.
                message: truncate_chars(format!("{change}{reasons}\n{error}").trim(), 60_000),
            }
        })
        .collect()
}

/// `text` cut to at most `limit` characters, ending in `…` when cut.
#[must_use]
pub fn truncate_chars(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(limit.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Workflow commands that put the cases needing attention on the run's summary page:
/// `::error` for verdicts that fail the gate and harness errors, `::warning` for the rest
/// (inconclusive, missing, improved or failing verdicts outside `fail_on`).
#[must_use]
pub fn annotations(report: &RunReport) -> Vec<String> {
    report
        .cases
        .iter()
        .filter(|c| c.attention && c.verdict != Verdict::Improved)
        .map(|c| {
            let level = if c.fails_gate || c.verdict == Verdict::Error {
                "error"
            } else {
                "warning"
            };
            let change = c
                .drop_pct
                .map(|_| format!(": {}", c.decision.deciding_change()))
                .unwrap_or_default();
            let first_reason = c
                .decision
                .reasons
                .first()
                .and_then(|r| r.lines().next())
                .unwrap_or_default();
            format!(
                "::{level} title={}::{}{change}. {}",
                escape_property(&format!("utilgate {} on {}", c.verdict, report.run.gpu_sku)),
                escape_data(&c.case),
                escape_data(first_reason)
            )
        })
        .collect()
}

/// Workflow-command message escaping (the runner's rules for data).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow-command property escaping: data rules plus `:` and `,`.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_fit_githubs_limit() {
        let cases = [
            ("short", 140, "short"),
            ("abcdef", 4, "abc…"),
            ("ééééé", 5, "ééééé"),
            ("éééééé", 5, "éééé…"),
        ];
        for (text, limit, want) in cases {
            assert_eq!(truncate_chars(text, limit), want);
            assert!(truncate_chars(text, limit).chars().count() <= limit);
        }
    }

    #[test]
    fn workflow_commands_cannot_be_injected() {
        assert_eq!(escape_data("a%b\nc\r"), "a%25b%0Ac%0D");
        assert_eq!(escape_property("x: y, z"), "x%3A y%2C z");
    }

    #[test]
    fn statuses_follow_the_suite_gate() {
        let report = crate::report::render::tests::sample_report();
        let by_name = |n: &str| {
            report
                .suites
                .iter()
                .find(|s| s.name == n)
                .expect("suite")
                .clone()
        };
        let (state, text) = suite_status(&by_name("decode"));
        assert_eq!(state, CommitState::Failure);
        assert!(
            text.starts_with("Gate failed on h100-sxm: 1 regressed of 4 cases"),
            "{text}"
        );
        assert!(text.chars().count() <= STATUS_DESCRIPTION_LIMIT);
        assert_eq!(suite_status(&by_name("prefill")).0, CommitState::Success);
        assert_eq!(
            status_context("utilgate/{suite}", "decode", "h100-sxm"),
            "utilgate/decode"
        );
        assert_eq!(
            status_context("perf/{suite} ({gpu})", "decode", "h100-sxm"),
            "perf/decode (h100-sxm)"
        );
    }

    #[test]
    fn check_runs_conclude_by_the_worst_verdict() {
        let report = crate::report::render::tests::sample_report();
        let by_name = |n: &str| {
            report
                .suites
                .iter()
                .find(|s| s.name == n)
                .expect("suite")
                .clone()
        };
        assert_eq!(
            suite_conclusion(&by_name("decode")),
            CheckConclusion::Failure
        );
        let mut quiet = by_name("prefill");
        quiet.counts.clear();
        quiet.counts.insert(Verdict::Pass, 3);
        quiet.counts.insert(Verdict::Improved, 1);
        assert_eq!(suite_conclusion(&quiet), CheckConclusion::Success);
        quiet.counts.insert(Verdict::Inconclusive, 1);
        assert_eq!(suite_conclusion(&quiet), CheckConclusion::Neutral);
        quiet.errors = 1;
        assert_eq!(suite_conclusion(&quiet), CheckConclusion::Failure);
        let mut long = by_name("decode");
        long.summary = "x".repeat(1000);
        assert!(check_title(&long).chars().count() < 255);

        let annotations = check_annotations(&report, "decode", "utilgate.toml", 7);
        assert!(!annotations.is_empty());
        assert!(
            annotations
                .iter()
                .all(|a| a.start_line == 7 && a.path == "utilgate.toml")
        );
        assert!(
            annotations
                .iter()
                .any(|a| a.annotation_level == AnnotationLevel::Failure
                    && a.title.starts_with("utilgate regressed: decode/"))
        );
    }

    #[test]
    fn annotations_name_cases_needing_attention() {
        let report = crate::report::render::tests::sample_report();
        let lines = annotations(&report);
        assert_eq!(lines.len(), 3, "{lines:#?}");
        assert!(lines[0].starts_with(
            "::error title=utilgate regressed on h100-sxm::decode/llama-3.1-8b/bf16/decode/b8/c4096: utilisation fell 7.6%. Utilisation fell"
        ), "{}", lines[0]);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("::error title=utilgate error"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("::warning title=utilgate missing"))
        );
        assert!(lines.iter().all(|l| !l.contains('\n')));
    }
}
