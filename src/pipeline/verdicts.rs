//! The judge stage of a run: every measured case judged against its pinned baseline (or this
//! shard's share of the grid), then each suspect re-measured in fresh processes and judged
//! again before it can fail. Reads the store and runs the confirm repeats; every verdict is
//! `compare`'s.

use crate::compare::{self, Canary};
use crate::config::Config;
use crate::error::Error;
use crate::pipeline::gpu::GpuWatch;
use crate::pipeline::judge::{self, Against, Judgement};
use crate::pipeline::measure::runner::Runner;
use crate::pipeline::plan::Grid;
use crate::pipeline::record::{CaseRecord, JudgedCase};
use crate::store::Store;

/// What the judge needs besides the cases.
pub(crate) struct Judging<'a> {
    pub(crate) store: &'a Store,
    pub(crate) gpu_sku: &'a str,
    pub(crate) config: &'a Config,
    pub(crate) canary: Option<&'a Canary>,
    pub(crate) watch: Option<&'a GpuWatch>,
}

impl Judging<'_> {
    /// Judges every record against the pinned baselines; returns the judged cases and the
    /// baselines of the grid that no case measured (missing).
    pub(crate) fn judge<'p>(
        &self,
        records: Vec<CaseRecord<'p>>,
        grid: &Grid,
    ) -> Result<(Vec<JudgedCase<'p>>, Vec<Judgement>), Error> {
        let inputs: Vec<_> = records.iter().map(|r| r.input(self.watch)).collect();
        let (store, sku, config, canary) =
            (self.store, self.gpu_sku, Some(self.config), self.canary);
        let mut judgements = match grid.shard {
            None => judge::judge(
                store,
                sku,
                &inputs,
                &grid.suites,
                config,
                &Against::Pinned,
                canary,
            )?,
            Some(shard) => {
                let shard_grid = judge::ShardGrid {
                    keys: &grid.keys,
                    suites: &grid.suites,
                    reports_missing: shard.index == 1,
                };
                judge::judge_shard(store, sku, &inputs, &shard_grid, config, canary)?
            }
        };
        let missing = judgements.split_off(records.len());
        let cases = records
            .into_iter()
            .zip(judgements)
            .map(|(record, judgement)| JudgedCase { record, judgement })
            .collect();
        Ok((cases, missing))
    }

    /// Re-measures each suspect in `confirm_repeats` fresh processes and judges it again on
    /// everything it measured; the grid's size still sets its test level.
    pub(crate) fn confirm(
        &self,
        runner: &Runner<'_>,
        cases: &mut [JudgedCase<'_>],
        cases_in_grid: usize,
        mut night: Option<&mut crate::pipeline::budget::NightRun<'_>>,
    ) -> Result<(), Error> {
        let extra = self.config.gate.confirm_repeats;
        if extra == 0 {
            return Ok(());
        }
        // Under a budget the suspects whose confirm step is expected to find most per second go
        // first (`budget::confirm_order`): what the grid left of the budget rarely covers them
        // all.
        let suspects: Vec<compare::budget::Suspect> = night
            .as_deref()
            .map(|n| {
                cases
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| compare::should_confirm(&c.judgement.decision))
                    .filter_map(|(i, c)| {
                        let k = c.record.night?;
                        Some(n.night.suspect(k, i, &c.judgement.decision))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let order: Vec<usize> = match night.as_deref() {
            Some(n) => n.night.confirm_order(&suspects),
            None => cases
                .iter()
                .enumerate()
                .filter(|(_, c)| compare::should_confirm(&c.judgement.decision))
                .map(|(i, _)| i)
                .collect(),
        };
        for i in order {
            let case = &mut cases[i];
            // The statistic that made it a suspect, not the median's figure beside it.
            let moved = case.judgement.decision.deciding_change();
            // Under a budget the night sizes each confirm step from the case's noise.
            let sized = night.as_deref().zip(case.record.night);
            let asked = sized.map_or(extra, |(n, k)| n.night.confirm_size(k));
            let in_night = sized.is_some();
            runner.progress.warn(&format!(
                "{}: suspect ({moved}); re-measuring in {asked} fresh processes before deciding",
                case.record.plan.key
            ));
            let record = &mut case.record;
            // The confirm step draws on what is left of the budget.
            // `futile`: the standard errors its estimate lay under the threshold when the
            // confirm step stopped early as clearly passing.
            let (fresh, futile) = if let (Some(n), Some(k)) = (night.as_deref_mut(), record.night) {
                let fresh = n.confirm(runner, k, &record.plan, &mut record.measured)?;
                let futile = n.night.confirm_futile(k).then(|| n.night.futility_z());
                (fresh, futile)
            } else {
                let first = record.plan.suite.repeats;
                runner.measure(&record.plan, first..first + extra, &mut record.measured)?;
                (extra, None)
            };
            if fresh == 0 {
                case.judgement.decision.reasons.push(
                    "The budget left no time to re-measure this suspect (confirm_repeats): the \
                     verdict rests on the processes that made it a suspect."
                        .to_owned(),
                );
                continue;
            }
            let mut judgement = judge::judge_case(
                self.store,
                self.gpu_sku,
                &case.record.input(self.watch),
                cases_in_grid,
                Some(self.config),
                &Against::Pinned,
                self.canary,
            )?;
            judgement.decision.reasons.push(if let Some(z) = futile {
                format!(
                    "Re-measured in {fresh} of {asked} fresh processes before deciding: they \
                     were already clearly under the threshold (their estimate more than {z} \
                     standard errors below it), so the rest were not run; the verdict rests on \
                     those fresh processes, not on the ones that made it a suspect."
                )
            } else if fresh < asked {
                format!(
                    "Re-measured in {fresh} of {asked} fresh processes before deciding (the \
                     budget ran out for the rest); the verdict rests on those fresh processes, \
                     not on the ones that made it a suspect."
                )
            } else {
                let sized = if in_night {
                    "as many as its noise needs"
                } else {
                    "confirm_repeats"
                };
                format!(
                    "Re-measured in {asked} fresh processes before deciding ({sized}); the \
                     verdict rests on those fresh processes, not on the ones that made it a \
                     suspect."
                )
            });
            case.judgement = judgement;
        }
        Ok(())
    }
}
