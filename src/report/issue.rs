//! The nightly issue's words and the rule for when one is kept: a run on the baseline branch
//! with no pull request (a nightly) whose suite failed opens or updates one issue per suite and
//! GPU; the suite passing again closes it. Pure: the report and the branch arrive as arguments.

use super::RunReport;

/// The hidden marker that finds a suite's nightly issue on one GPU again (characters that could
/// end the HTML comment are replaced, as in the sticky comment's marker).
#[must_use]
pub fn issue_marker(suite: &str, gpu_sku: &str) -> String {
    let clean = |s: &str| s.replace("--", "- -").replace('>', "_");
    format!(
        "<!-- utilgate:nightly-issue suite={} gpu={} -->",
        clean(suite),
        clean(gpu_sku)
    )
}

/// The night a run stands for: its start date and short commit.
#[must_use]
pub fn night_name(report: &RunReport) -> String {
    let date = super::format::prefix_chars(&report.run.started_at, 10).to_owned();
    match report.run.git_sha.as_deref() {
        Some(sha) => format!("{date} ({})", super::format::short_sha(sha)),
        None => date,
    }
}

/// Where a failing suite's regression began: after the last good night, the oldest pinned
/// baseline among its failing cases (the night each was last judged good), or the start of the
/// lineage a slide is measured from. `None` when no failing case names one (then the title
/// names tonight).
#[must_use]
pub fn last_good_night(report: &RunReport, suite: &str) -> Option<String> {
    report
        .cases
        .iter()
        .filter(|c| c.key.suite == suite && c.fails_gate)
        .filter_map(|c| match &c.decision.slide {
            Some(start) => Some((start.started_at.clone(), start.git_sha.clone())),
            None => c
                .baseline
                .as_ref()
                .and_then(|b| b.started_at.clone().map(|t| (t, b.git_sha.clone()))),
        })
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(at, sha)| {
            let date = super::format::prefix_chars(&at, 10).to_owned();
            match sha {
                Some(sha) => format!("{date} ({})", super::format::short_sha(&sha)),
                None => date,
            }
        })
}

/// "utilgate: decode on h200 regressed after 2026-11-28 (abc1234)", naming the last good
/// night, or "... regressed on 2026-12-01 (def5678)" (tonight) when none is known. An open
/// issue keeps the title it was opened with.
#[must_use]
pub fn issue_title(suite: &str, gpu_sku: &str, last_good: Option<&str>, night: &str) -> String {
    match last_good {
        Some(good) => format!("utilgate: {suite} on {gpu_sku} regressed after {good}"),
        None => format!("utilgate: {suite} on {gpu_sku} regressed on {night}"),
    }
}

/// Whether a publish keeps nightly issues at all: a run on the baseline branch for no pull
/// request.
#[must_use]
pub fn keeps_issues(report: &RunReport, baseline_branch: &str, pr: Option<u64>) -> bool {
    pr.is_none() && report.run.branch.as_deref() == Some(baseline_branch)
}

/// What one suite's issue should do tonight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteNight {
    /// It failed the gate: open or update the issue.
    Failing,
    /// It passed cleanly (no case failed or errored): close an open issue.
    Passing,
    /// It passed but some case could not be measured: leave any issue as it is.
    Unknown,
}

/// The state of each suite of the run, in the report's order.
#[must_use]
pub fn suite_nights(report: &RunReport) -> Vec<(String, SuiteNight)> {
    report
        .suites
        .iter()
        .map(|s| {
            let state = if !s.passed {
                SuiteNight::Failing
            } else if s.errors == 0 {
                SuiteNight::Passing
            } else {
                SuiteNight::Unknown
            };
            (s.name.clone(), state)
        })
        .collect()
}

/// The body of a failing suite's issue: the marker, a line naming tonight, the suite's report.
#[must_use]
pub fn issue_body(marker: &str, night: &str, report_markdown: &str) -> String {
    format!(
        "{marker}\nLast failing night: {night}. This issue is updated by each failing nightly \
         and closed by the first one that passes (fix the regression, or accept it with \
         `utilgate baseline accept --reason ...`).\n\n{report_markdown}"
    )
}

/// The comment that closes an issue.
#[must_use]
pub fn close_comment(suite: &str, night: &str) -> String {
    format!(
        "utilgate: {suite} passes again on {night}: every case passed or its change was \
         accepted. Closing."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_cannot_be_broken_by_names() {
        let m = issue_marker("de-->code", "h200");
        assert_eq!(
            m,
            "<!-- utilgate:nightly-issue suite=de- -_code gpu=h200 -->"
        );
        assert_ne!(m, crate::report::comment_marker("de-->code", "h200"));
        assert_eq!(
            issue_title(
                "decode",
                "h200",
                Some("2026-11-28 (abc1234)"),
                "2026-12-01 (def5678)"
            ),
            "utilgate: decode on h200 regressed after 2026-11-28 (abc1234)"
        );
        assert_eq!(
            issue_title("decode", "h200", None, "2026-12-01 (def5678)"),
            "utilgate: decode on h200 regressed on 2026-12-01 (def5678)"
        );
    }
}
