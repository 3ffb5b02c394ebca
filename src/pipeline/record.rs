//! One case as `run` carries it from plan to store: its plan, what its repeats measured, and,
//! once judged, its judgement. What the judge and the store read is derived from the record
//! when it is needed, never copied and re-synced, so a confirmation that adds repeats changes
//! the one record and everything read from it afterwards. No I/O.

use crate::compare;
use crate::pipeline::gpu::GpuWatch;
use crate::pipeline::judge::{CaseInput, ConfirmSized, Judgement};
use crate::stats::{self, SteadyStateWarning};
use crate::store::NewResult;

use crate::pipeline::measure::runner::{CasePlan, Measured};

/// A planned case and what measuring it gave.
pub(crate) struct CaseRecord<'a> {
    pub(crate) plan: CasePlan<'a>,
    pub(crate) measured: Measured,
    /// The process-variance warning, said later only where it limits the verdict.
    pub(crate) variance: Option<SteadyStateWarning>,
    /// Its place in a budgeted night's plan (`None` without a budget).
    pub(crate) night: Option<usize>,
    /// Repeats before the confirm step, when a budgeted night planned them.
    pub(crate) first_repeats: Option<usize>,
    /// The confirm step's size where a budgeted night sized it from the case's noise.
    pub(crate) confirm_sized: Option<ConfirmSized>,
}

/// A record with its judgement: the case's verdict as the run reports and stores it.
pub(crate) struct JudgedCase<'a> {
    pub(crate) record: CaseRecord<'a>,
    pub(crate) judgement: Judgement,
}

impl<'a> CaseRecord<'a> {
    /// The record of a measured (or failed) case. Steady-state warnings other than process
    /// variance are returned for the caller to print now.
    pub(crate) fn new(plan: CasePlan<'a>, measured: Measured) -> (Self, Vec<SteadyStateWarning>) {
        let (variance, others): (Vec<_>, Vec<_>) =
            stats::steady_state_warnings(&measured.repeats_ms)
                .into_iter()
                .partition(|w| matches!(w, SteadyStateWarning::ProcessVariance { .. }));
        let record = Self {
            plan,
            measured,
            variance: variance.into_iter().next(),
            night: None,
            first_repeats: None,
            confirm_sized: None,
        };
        (record, others)
    }

    /// What the judge reads: the case as measured so far.
    pub(crate) fn input(&self, watch: Option<&GpuWatch>) -> CaseInput {
        CaseInput {
            gpu_state: gpu_state(&self.measured, watch),
            confirm_sized: self.confirm_sized,
            ..case_input(&self.plan, &self.measured, self.first_repeats)
        }
    }
}

impl JudgedCase<'_> {
    /// Every judgement of the run in report order: the measured cases', then the missing.
    pub(crate) fn all_judgements(cases: &[Self], missing: Vec<Judgement>) -> Vec<Judgement> {
        cases
            .iter()
            .map(|c| c.judgement.clone())
            .chain(missing)
            .collect()
    }

    /// The warning for a case whose verdict cannot resolve its threshold, with what would
    /// (more processes, or the next nights for a thin reference), and the process-variance
    /// warning when it is the cause. `None` when the case can resolve its threshold: a noisy
    /// first pass is no warning when the confirm step would settle it.
    pub(crate) fn unresolvable(&self) -> Option<String> {
        let decision = &self.judgement.decision;
        let limit = decision
            .reach
            .as_ref()?
            .limit(self.judgement.threshold_pct)?;
        let key = &self.record.plan.key;
        Some(match self.record.variance.as_ref() {
            Some(warning) => format!("{key}: {limit} ({warning})"),
            None => format!("{key}: {limit}"),
        })
    }

    /// The run's process start-up share: the wall time of its repeats not spent in a counted
    /// or warm-up step, as (start-up seconds, wall seconds) over every case.
    pub(crate) fn startup_share(cases: &[Self]) -> (f64, f64) {
        cases.iter().flat_map(|c| &c.record.measured.costs).fold(
            (0.0, 0.0),
            |(start, wall), cost| {
                let outside = (cost.wall_s - cost.steps_s - cost.warmup_s).max(0.0);
                (start + outside, wall + cost.wall_s)
            },
        )
    }

    /// The row the store keeps for this case; `promote_run` is whether the run may move
    /// baselines at all.
    pub(crate) fn result(&self, watch: Option<&GpuWatch>, promote_run: bool) -> NewResult {
        let (plan, measured) = (&self.record.plan, &self.record.measured);
        let floor = plan.floor.as_ref().ok();
        let summary = stats::summarise(&measured.repeats_ms);
        let util = floor
            .zip(summary.as_ref())
            .map(|(f, s)| f.utilisation(s.median_ms));
        let decision = &self.judgement.decision;
        NewResult {
            key: plan.key.clone(),
            verdict: Some(decision.verdict),
            error: measured.error.clone(),
            floor_ms: floor.map(|f| f.floor_ms),
            floor_json: floor.and_then(|f| serde_json::to_value(f).ok()),
            median_ms: summary.as_ref().map(|s| s.median_ms),
            utilisation: util.map(|u| u.utilisation),
            mbu: util.map(|u| u.mbu),
            mfu: util.map(|u| u.mfu),
            summary_json: summary.as_ref().and_then(|s| serde_json::to_value(s).ok()),
            decision_json: serde_json::to_value(decision).ok(),
            repeats_ms: measured.repeats_ms.clone(),
            warmup_ms: measured.warmup_ms.clone(),
            env: measured.env.clone(),
            gpu_state_json: gpu_state(measured, watch),
            stderr_tail: measured.stderr_tail.clone(),
            promote: promote_run && compare::promotable(decision),
            budget: None,
            costs: Vec::new(),
            quality: measured.quality.clone(),
            speculative: measured.speculative,
            energy: measured.energy.clone(),
        }
    }
}

/// The case's GPU-state summary, when NVML sampled its repeats.
fn gpu_state(measured: &Measured, watch: Option<&GpuWatch>) -> Option<serde_json::Value> {
    watch.and_then(|w| w.summary_json(&measured.gpu_samples))
}

/// What the judge reads of a planned case and its repeats so far, before any GPU state is
/// added: one shape for a run's records and a budgeted night's sampling.
pub(crate) fn case_input(
    plan: &CasePlan<'_>,
    measured: &Measured,
    first_repeats: Option<usize>,
) -> CaseInput {
    CaseInput {
        key: plan.key.clone(),
        repeats_ms: measured.repeats_ms.clone(),
        floor_ms: plan.floor.as_ref().ok().map(|f| f.floor_ms),
        error: measured.error.clone(),
        env: measured.env.clone(),
        gpu_guard: None,
        gpu_state: None,
        first_repeats,
        confirm_sized: None,
        quality: measured.quality.clone(),
        speculative: measured.speculative,
        energy: measured.energy.clone(),
    }
}
