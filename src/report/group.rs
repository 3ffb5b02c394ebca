//! Merging the reports of a run group (the shards of one grid, `run --shard K/N --run-group
//! ID`) into one report: one table, and a gate that failed if any shard's failed. Pure.

use super::context::{RunReport, count};
use crate::case::Verdict;

/// One stored run of a group with its report and its place (`(K, N)` for a shard).
pub struct GroupMember {
    pub report: RunReport,
    pub shard: Option<(u32, u32)>,
}

impl RunReport {
    /// The group's report from its members, oldest first. A shard stored twice (a re-run CI
    /// job) counts once, by its latest run. The cases are the union of the counted runs'; the
    /// gate passed only if every counted run's gate passed and no case fails it. The run
    /// header is the latest run's, started when the first counted run started, with the group
    /// and the runs it counted. `None` when the group has no members.
    #[must_use]
    pub fn merged(group: &str, members: Vec<GroupMember>) -> Option<RunReport> {
        let mut counted: Vec<GroupMember> = Vec::new();
        for member in members {
            if let Some(shard) = member.shard {
                counted.retain(|m| m.shard != Some(shard));
            }
            counted.push(member);
        }
        let started_at = counted
            .iter()
            .map(|m| m.report.run.started_at.clone())
            .min()?;
        let all_passed = counted.iter().all(|m| m.report.gate.passed);
        let promoted = counted.iter().any(|m| m.report.gate.baselines_promoted);
        let mut cases = Vec::new();
        let mut runs = Vec::new();
        let mut last = None;
        for member in counted {
            runs.push(member.report.run.id);
            cases.extend(member.report.cases.iter().cloned());
            last = Some(member.report);
        }
        let mut report = last?;
        // A case two counted runs both hold (two unsharded runs in one group): the later one.
        let mut seen = std::collections::BTreeSet::new();
        cases.reverse();
        cases.retain(|c| seen.insert(c.key.clone()));
        cases.sort_by(|a, b| {
            super::severity(a.verdict)
                .cmp(&super::severity(b.verdict))
                .then_with(|| a.key.cmp(&b.key))
        });
        report.run.started_at = started_at;
        report.run.group = Some(super::context::GroupInfo {
            id: group.to_owned(),
            runs,
        });
        report.gate.counts = count(&cases);
        report.gate.errors = cases.iter().filter(|c| c.verdict == Verdict::Error).count();
        report.gate.passed = all_passed && !cases.iter().any(|c| c.fails_gate);
        report.gate.baselines_promoted = promoted;
        report.cases = cases;
        report.refresh_summaries();
        Some(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::render::tests::sample_report;

    /// The sample report split into shards by case position.
    fn split(n: usize) -> Vec<GroupMember> {
        let whole = sample_report();
        (0..n)
            .map(|k| {
                let mut report = whole.clone();
                report.cases = whole
                    .cases
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % n == k)
                    .map(|(_, c)| c.clone())
                    .collect();
                report.gate.passed = !report.cases.iter().any(|c| c.fails_gate);
                report.run.id = i64::try_from(k + 10).expect("small");
                GroupMember {
                    report,
                    shard: Some((u32::try_from(k + 1).expect("small"), 3)),
                }
            })
            .collect()
    }

    #[test]
    fn shards_merge_into_the_whole_table_and_any_failure_fails_the_group() {
        let whole = sample_report();
        let members = split(3);
        let merged = RunReport::merged("g1", members).expect("members");
        let keys = |r: &RunReport| r.cases.iter().map(|c| c.key.clone()).collect::<Vec<_>>();
        assert_eq!(keys(&merged), keys(&whole));
        assert_eq!(merged.gate.counts, whole.gate.counts);
        assert_eq!(merged.gate.passed, whole.gate.passed);
        assert!(!merged.gate.passed, "the sample holds a regression");
    }

    #[test]
    fn a_rerun_shard_counts_once_by_its_latest_run() {
        let mut members = split(3);
        let mut rerun = split(3).remove(0);
        // The re-run of shard 1 passed everything it measured.
        for c in &mut rerun.report.cases {
            c.verdict = Verdict::Pass;
            c.fails_gate = false;
        }
        rerun.report.gate.passed = true;
        rerun.report.run.id = 99;
        members.push(rerun);
        let merged = RunReport::merged("g1", members).expect("members");
        assert_eq!(merged.cases.len(), sample_report().cases.len());
        let group = merged
            .run
            .group
            .as_ref()
            .expect("a merged report names its group");
        assert_eq!(
            (group.id.as_str(), group.runs.as_slice()),
            ("g1", &[11, 12, 99][..])
        );
        assert_eq!(merged.run.id, 99, "the header is the latest run's");
        assert!(RunReport::merged("g1", Vec::new()).is_none());
    }

    #[test]
    fn the_merged_comment_names_its_group_and_every_run_it_counted() {
        let merged = RunReport::merged("8812-h200", split(3)).expect("members");
        let renderer =
            crate::report::Renderer::new(&std::collections::BTreeMap::new()).expect("templates");
        let text = renderer
            .render(crate::report::ReportFormat::Markdown, &merged)
            .expect("renders");
        assert!(
            text.contains("group `8812-h200` (runs 10, 11, 12)"),
            "{text}"
        );
        let one = renderer
            .render(crate::report::ReportFormat::Markdown, &sample_report())
            .expect("renders");
        assert!(!one.contains("group `"), "{one}");
    }
}
