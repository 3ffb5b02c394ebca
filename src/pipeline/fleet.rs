//! A fleet of runners, one history: the run group of a sharded run (`run --shard K/N
//! --run-group ID`), the merged report of a group (`report --group ID`) and its publication
//! (`publish --group ID`). Reads the store; the environment arrives as a lookup function,
//! except where `publish --group` hands over to the publishing of one run.

use crate::cli::RunArgs;
use crate::config::Config;
use crate::error::Error;
use crate::report::{GroupMember, RunReport};
use crate::store::{RunGroup, Store};

/// The group a run is stored in: `--run-group`, else `GITHUB_RUN_ID` under Actions when the
/// run is a shard. A shard needs a group (its report is merged by it), so a shard without one
/// is refused before anything is measured.
///
/// # Errors
/// [`Error::ShardWithoutGroup`] for `--shard` without a group, [`Error::EmptyRunGroup`] for an
/// empty `--run-group`.
pub fn run_group(
    args: &RunArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<RunGroup>, Error> {
    let shard = args.shard.map(|s| (s.index, s.count));
    let id = match &args.run_group {
        Some(id) if id.trim().is_empty() => {
            return Err(Error::EmptyRunGroup);
        }
        Some(id) => Some(id.trim().to_owned()),
        None if shard.is_some() => env("GITHUB_RUN_ID").filter(|v| !v.trim().is_empty()),
        None => None,
    };
    match (id, args.shard) {
        (None, Some(s)) => Err(Error::ShardWithoutGroup {
            shard: s.to_string(),
        }),
        (id, _) => Ok(id.map(|id| RunGroup { id, shard })),
    }
}

/// The merged report of a group's runs: each run's stored report, then one table over them.
///
/// # Errors
/// [`Error::EmptyGroup`] when no run belongs to the group, [`Error::GroupGpus`] when its runs measured different GPUs
/// (one report covers one GPU); store and report errors as for one run.
pub fn group_report(
    store: &Store,
    group: &str,
    config: Option<&Config>,
) -> Result<(RunReport, Vec<String>), Error> {
    let runs = store.group_runs(group)?;
    let mut members = Vec::with_capacity(runs.len());
    let mut gpus: Vec<String> = Vec::new();
    for (id, place) in &runs {
        let run = crate::pipeline::report::load_run(store, Some(id.0))?;
        if !gpus.contains(&run.summary.gpu_sku) {
            gpus.push(run.summary.gpu_sku.clone());
        }
        members.push(GroupMember {
            report: crate::pipeline::report::stored_report(store, &run, config)?,
            shard: place.shard,
        });
    }
    if gpus.len() > 1 {
        return Err(Error::GroupGpus {
            group: group.to_owned(),
            gpus,
        });
    }
    let notes = shard_notes(&runs);
    let report = RunReport::merged(group, members).ok_or_else(|| Error::EmptyGroup {
        group: group.to_owned(),
    })?;
    Ok((report, notes))
}

/// Warnings about the group's shards: those of N that no run stored.
fn shard_notes(runs: &[(crate::store::RunId, RunGroup)]) -> Vec<String> {
    let Some(count) = runs.iter().filter_map(|(_, g)| g.shard).map(|s| s.1).max() else {
        return Vec::new();
    };
    let absent: Vec<String> = (1..=count)
        .filter(|k| !runs.iter().any(|(_, g)| g.shard.is_some_and(|s| s.0 == *k)))
        .map(|k| format!("{k}/{count}"))
        .collect();
    if absent.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "the group has no run of shard {}: its cases are not in this report",
            absent.join(", ")
        )]
    }
}

/// What publishing a group needs from its stored runs (`publish --group`): the latest run's
/// facts, the gate passed only if every run's passed. Runs that measured different pull-request
/// heads cannot share one status and are refused.
///
/// # Errors
/// [`Error::GroupHeads`] for runs of different heads; store errors.
pub fn group_facts(
    store: &Store,
    group: &str,
) -> Result<Option<crate::store::PublishFacts>, Error> {
    let mut merged: Option<crate::store::PublishFacts> = None;
    for (id, _) in store.group_runs(group)? {
        let Some(facts) = store.publish_facts(id)? else {
            continue;
        };
        if let Some(m) = &merged
            && m.pr_head_sha != facts.pr_head_sha
        {
            return Err(Error::GroupHeads {
                group: group.to_owned(),
                first: m.pr_head_sha.clone().unwrap_or_else(|| "none".into()),
                other: facts.pr_head_sha.clone().unwrap_or_else(|| "none".into()),
            });
        }
        let passed = merged.as_ref().is_none_or(|m| m.gate_passed) && facts.gate_passed;
        merged = Some(crate::store::PublishFacts {
            gate_passed: passed,
            ..facts
        });
    }
    Ok(merged)
}
