//! `utilgate run` with a time budget (`--budget 10m`, `[run] budget_minutes`): plan each case's
//! steps and repeats from the store's history before the first harness starts, sample each case
//! one repeat at a time until its evidence is decisive, let the confirm step draw on what is
//! left, and stop measuring once the budget and its grace are spent. Sequences I/O (the store's
//! history, the monotonic clock, the runner); every decision is `compare::budget`'s and the state
//! machine's, `compare::night`.
//!
//! # What is safe when the budget runs out (docs/nightly.md)
//! - A repeat does not start once the budget plus grace is spent, nor when its estimated time
//!   would end past it; a running harness's timeout is capped at what is left of the grace.
//! - A case cut short (fewer repeats than its sampling rule wanted) is judged on what it has,
//!   says so, and never moves its baseline. A case never started is not stored: its baseline
//!   (if any) reports it `missing`, and the night names it. Cases that finished their sampling
//!   promote as usual when the run passes on the baseline branch: their evidence is complete.

use std::time::{Duration, Instant};

use crate::case::CaseKey;
use crate::cli::BudgetArg;
use crate::compare::budget::{
    self, CaseCost, CaseInput, CaseRecord, PlanPolicy, RepeatCost, Stop, Suspect,
};
use crate::compare::night::{NightState, Recovered, Repeat, Sampler};
use crate::compare::{Decision, GateStat};
use crate::config::{Config, SuiteConfig};
use crate::error::Error;
use crate::pipeline::judge::ConfirmSized;
use crate::pipeline::measure::runner::{CasePlan, Measured, RepeatLimits, Runner};
use crate::store::{Store, StoredResult};

/// The run's budget in seconds: the flag, else `[run] budget_minutes`, else none.
pub(crate) fn budget_s(config: &Config, flag: Option<BudgetArg>) -> Option<f64> {
    flag.map(|b| b.0)
        .or_else(|| config.run.budget_minutes.map(|m| m * 60.0))
}

/// One night under a budget: the state machine (`compare::night`) and the monotonic clock
/// it reads, from when the run began.
pub(crate) struct Night {
    pub(crate) state: NightState,
    started: Instant,
}

impl Night {
    /// Plan the night from the store's history of each case (its last `history_runs` results on
    /// this GPU). `started` is when the run began: the budget covers the whole run.
    pub(crate) fn plan(
        store: &Store,
        gpu_sku: &str,
        cases: &[(&CaseKey, &SuiteConfig)],
        config: &Config,
        budget_s: f64,
        started: Instant,
    ) -> Result<Night, Error> {
        let mut inputs = Vec::with_capacity(cases.len());
        let mut runner_s: std::collections::HashMap<&str, f64> = std::collections::HashMap::new();
        for (key, suite) in cases {
            let history = store.case_history(key, gpu_sku, config.gate.history_runs.max(1))?;
            let mut costs = Vec::new();
            for r in &history {
                costs.extend(store.repeat_costs(r.id)?);
            }
            let runner = if let Some(s) = runner_s.get(suite.name.as_str()) {
                *s
            } else {
                let s = store
                    .suite_runner_seconds_per_process(&suite.name)?
                    .unwrap_or(0.0);
                runner_s.insert(suite.name.as_str(), s);
                s
            };
            // The median's threshold, as the verdict uses it (a suite's or case's own).
            let threshold =
                crate::config::policy_for(Some(config), key).threshold_for(GateStat::Median);
            inputs.push(case_input(key, suite, threshold, &history, &costs, runner));
        }
        let policy = PlanPolicy::new(budget_s, config.gate.max_drop_pct, config.gate.family_alpha);
        let grace_s = config.run.grace_s(budget_s);
        Ok(Night {
            state: NightState::of(&inputs, policy, grace_s, config.gate.confirm_repeats),
            started,
        })
    }

    /// A case taken from an interrupted run's journal (or one that could not start: its
    /// floor failed, `measured` empty): its sampling is what it was (`NightState::recovered`).
    pub(crate) fn recovered(&mut self, i: usize, measured: &Measured) {
        let recovered = Recovered {
            repeats: u32::try_from(measured.repeats_ms.len()).unwrap_or(u32::MAX),
            first: measured.budget_first,
            time_s: measured.costs.iter().map(|c| c.wall_s).sum(),
            stop: measured.budget_stop,
        };
        self.state.recovered(i, recovered);
    }

    /// What the journal keeps of case `i`'s sampling tonight, so a resumed run knows it.
    pub(crate) fn journal_into(&self, i: usize, measured: &mut Measured) {
        let case = self.state.case(i);
        measured.budget_stop = case.stop;
        measured.budget_first = Some(case.first);
    }

    pub(crate) fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Sample case `i` sequentially through `case` (one repeat at a time, judged after each).
    /// Returns why it stopped.
    pub(crate) fn sample(
        &mut self,
        i: usize,
        case: &mut impl Sampler<Error = Error>,
    ) -> Result<Stop, Error> {
        let started = self.started;
        self.state
            .sample(i, case, || started.elapsed().as_secs_f64())
    }

    /// The confirm step of a suspect from what is left of the budget (`NightState::confirm`).
    /// Returns how many fresh repeats ran.
    pub(crate) fn confirm(
        &mut self,
        i: usize,
        case: &mut impl Sampler<Error = Error>,
    ) -> Result<u32, Error> {
        let started = self.started;
        self.state
            .confirm(i, case, || started.elapsed().as_secs_f64())
    }

    /// Fresh repeats the confirm step of case `i` asks for.
    pub(crate) fn confirm_size(&self, i: usize) -> u32 {
        self.state.confirm_size(i)
    }

    /// Whether the confirm step of case `i` stopped early as clearly passing.
    pub(crate) fn confirm_futile(&self, i: usize) -> bool {
        self.state.confirm_futile(i)
    }

    /// The standard errors under the threshold at which a case counts as clearly passing
    /// (`PlanPolicy::futility_z`), for the sentence that says so.
    pub(crate) fn futility_z(&self) -> f64 {
        self.state.policy.futility_z
    }

    /// Case `i` as a suspect for `budget::confirm_order` (`NightState::suspect`).
    pub(crate) fn suspect(&self, i: usize, index: usize, d: &Decision) -> Suspect {
        self.state.suspect(i, index, d)
    }

    /// The confirm order of the suspects.
    pub(crate) fn confirm_order(&self, suspects: &[Suspect]) -> Vec<usize> {
        self.state.confirm_order(suspects)
    }

    /// Repeats of case `i` before the confirm step.
    pub(crate) fn first_repeats(&self, i: usize) -> u32 {
        self.state.first_repeats(i)
    }

    /// The confirm step of case `i` where the night sized it from the case's stored noise
    /// (`None` where `[gate] confirm_repeats` sets it: no noise stored, or the step off).
    pub(crate) fn confirm_sized(&self, i: usize) -> Option<ConfirmSized> {
        let case = self.state.case(i);
        (case.noise.is_some() && case.confirm_size > 0).then_some(ConfirmSized {
            processes: case.confirm_size as usize,
            at_most: self.state.policy.max_repeats as usize,
        })
    }

    /// Whether case `i` may still take its traced or profiled repeat now
    /// (`NightState::may_trace`).
    pub(crate) fn may_trace(&self, i: usize) -> bool {
        self.state.may_trace(i, self.elapsed_s())
    }

    /// Charge `wall_s` seconds of a traced or profiled repeat to case `i`.
    pub(crate) fn charge(&mut self, i: usize, wall_s: f64) {
        self.state.charge(i, wall_s);
    }

    /// Whether case `i` may still start now: the budget plus grace holds one more repeat of it.
    pub(crate) fn can_start(&self, i: usize) -> bool {
        self.state.can_start(i, self.elapsed_s())
    }

    /// Measuring is over: the time it took is the night's, and a budget that ran out says so.
    pub(crate) fn finish_with(mut self, progress: &crate::output::Progress) -> NightState {
        let used_s = self.elapsed_s();
        self.state.finish(used_s);
        let record = &self.state.record;
        if record.stopped {
            progress.warn(&format!(
                "the budget ran out after {}: measuring stopped and the run judges what it has ({} case(s) not measured)",
                crate::report::format::duration(record.used_s),
                record.not_started.len()
            ));
        }
        self.state
    }

    /// The progress line: budget, time used, time left, ETA of the plan's remaining repeats.
    pub(crate) fn progress_line(&self) -> String {
        crate::report::budget::progress_line(
            &self.state.record,
            self.elapsed_s(),
            self.state.eta_s(),
        )
    }
}

/// A case as the planner sees it, from its stored history (newest first): costs from every
/// recorded repeat of those results (`costs`, `Store::repeat_costs`) plus utilgate's own time
/// per process in the suite's last run (`runner_s`, `Store::suite_runner_seconds_per_process`:
/// judging, storing, starting the process; most of a fast harness's night), noise from the
/// results that could pool into a reference.
fn case_input(
    key: &CaseKey,
    suite: &SuiteConfig,
    max_drop_pct: f64,
    history: &[StoredResult],
    costs: &[RepeatCost],
    runner_s: f64,
) -> CaseInput {
    let usable: Vec<&StoredResult> = history
        .iter()
        .filter(|r| {
            r.error.is_none()
                && matches!(
                    r.verdict,
                    Some(
                        crate::case::Verdict::Pass
                            | crate::case::Verdict::Improved
                            | crate::case::Verdict::New
                            | crate::case::Verdict::Inconclusive
                    )
                )
        })
        .collect();
    let views: Vec<&[Vec<f64>]> = usable.iter().map(|r| r.repeats_ms.as_slice()).collect();
    let nominal = suite.repeats as usize;
    let reference_repeats: usize = usable
        .iter()
        .map(|r| r.repeats_ms.len().min(nominal.max(1)))
        .sum();
    let cost: Option<CaseCost> = budget::cost_from_history(costs).map(|c| CaseCost {
        start_s: c.start_s + runner_s,
        ..c
    });
    CaseInput {
        name: key.to_string(),
        steps: suite.steps,
        warmup_steps: suite.warmup_steps,
        repeats: suite.repeats,
        noise: cost.and(budget::noise_from_history(&views, reference_repeats.max(1))),
        cost,
        max_drop_pct: Some(max_drop_pct),
    }
}

/// The plan's lines, printed before measuring (and the unresolved cases as warnings).
pub(crate) fn plan_lines(night: &Night) -> (String, Vec<String>) {
    crate::report::budget::plan_text(&night.state.plan, &night.state.record)
}

/// A budgeted night as `run` carries it: the plan and what judging a case mid-way needs.
pub(crate) struct NightRun<'a> {
    pub(crate) night: Night,
    pub(crate) store: &'a Store,
    pub(crate) gpu_sku: &'a str,
    pub(crate) config: &'a Config,
    /// Cases in the whole grid (the test level).
    pub(crate) grid: usize,
}

impl<'a> NightRun<'a> {
    /// Plan the night when the run has a budget (`--budget`, else `[run] budget_minutes`), and
    /// print the plan before anything is measured.
    pub(crate) fn start(
        flag: Option<BudgetArg>,
        store: &'a Store,
        gpu_sku: &'a str,
        config: &'a Config,
        (plans, grid): (&[CasePlan<'_>], usize),
        started: Instant,
        progress: &crate::output::Progress,
    ) -> Result<Option<Self>, Error> {
        let Some(budget) = budget_s(config, flag) else {
            return Ok(None);
        };
        let cases: Vec<(&CaseKey, &SuiteConfig)> =
            plans.iter().map(|p| (&p.key, p.suite)).collect();
        let night = Night::plan(store, gpu_sku, &cases, config, budget, started)?;
        let (text, warnings) = plan_lines(&night);
        progress.note(&text);
        for w in warnings {
            progress.warn(&w);
        }
        Ok(Some(NightRun {
            night,
            store,
            gpu_sku,
            config,
            grid,
        }))
    }

    fn judging(&self) -> JudgeWith<'a> {
        JudgeWith {
            store: self.store,
            gpu_sku: self.gpu_sku,
            config: self.config,
            grid: self.grid,
        }
    }

    /// Measures plan `i` sequentially; `None` when the budget was spent before it started.
    pub(crate) fn measure(
        &mut self,
        runner: &Runner<'_>,
        i: usize,
        plan: &CasePlan<'_>,
        progress: &crate::output::Progress,
    ) -> Result<Option<Measured>, Error> {
        if self.night.can_start(i) {
            progress.start_case(&plan.key.to_string());
        }
        let mut measured = Measured::default();
        if let Err(message) = &plan.floor {
            measured.error = Some(format!("floor: {message}"));
            self.night.recovered(i, &measured);
            return Ok(Some(measured));
        }
        let mut sampler = CaseSampler {
            runner,
            plan,
            measured: &mut measured,
            judge: self.judging(),
        };
        if self.night.sample(i, &mut sampler)? == Stop::NotStarted {
            progress.warn(&format!(
                "{}: not measured: the budget was spent before it could start",
                plan.key
            ));
            return Ok(None);
        }
        if measured.error.is_none() && measured.repeats_ms.iter().all(Vec::is_empty) {
            measured.error = Some("the harness reported no counted steps".to_owned());
        }
        measured.error = measured.error.as_deref().map(crate::redact::redact);
        measured.stderr_tail = measured.stderr_tail.as_deref().map(crate::redact::redact);
        self.night.journal_into(i, &mut measured);
        Ok(Some(measured))
    }

    /// The confirm step of plan `i` from what is left of the budget: fresh repeats into
    /// `measured`; how many ran.
    pub(crate) fn confirm(
        &mut self,
        runner: &Runner<'_>,
        i: usize,
        plan: &CasePlan<'_>,
        measured: &mut Measured,
    ) -> Result<u32, Error> {
        let mut sampler = CaseSampler {
            runner,
            plan,
            measured,
            judge: self.judging(),
        };
        self.night.confirm(i, &mut sampler)
    }
}

/// What a sampled case is judged against between its repeats: the store's reference on the
/// run's GPU, under the config's policy, at the grid's size (the test level).
#[derive(Clone, Copy)]
struct JudgeWith<'j> {
    store: &'j Store,
    gpu_sku: &'j str,
    config: &'j Config,
    grid: usize,
}

/// One case measured through the runner, one repeat at a time.
struct CaseSampler<'r, 'p, 'm, 'j> {
    runner: &'r Runner<'r>,
    plan: &'p CasePlan<'p>,
    measured: &'m mut Measured,
    judge: JudgeWith<'j>,
}

impl Sampler for CaseSampler<'_, '_, '_, '_> {
    type Error = Error;

    fn measure(&mut self, repeat: u32, steps: u64, cap: Duration) -> Result<Repeat, Error> {
        let before = self.measured.costs.len();
        let limits = RepeatLimits {
            steps,
            timeout_cap: cap,
        };
        if !self
            .runner
            .measure_limited(self.plan, repeat, self.measured, limits)?
        {
            return Ok(Repeat::Cut);
        }
        if self.measured.error.is_some() {
            return Ok(Repeat::Failed);
        }
        Ok(self.measured.costs[before..]
            .first()
            .map_or(Repeat::Failed, |c| Repeat::Done(c.wall_s)))
    }

    fn judge(&mut self, repeats: u32) -> Result<Decision, Error> {
        let JudgeWith {
            store,
            gpu_sku: sku,
            config,
            grid,
        } = self.judge;
        let input =
            crate::pipeline::record::case_input(self.plan, self.measured, Some(repeats as usize));
        let against = crate::pipeline::judge::Against::Pinned;
        let j = crate::pipeline::judge::judge_case(
            store,
            sku,
            &input,
            grid,
            Some(config),
            &against,
            None,
        )?;
        Ok(j.decision)
    }
}

/// A result with the costs of its repeats and (under a budget) what the night did with it; a
/// case the budget cut short never moves its baseline.
pub(crate) fn add_to_result(
    result: &mut crate::store::NewResult,
    measured: &Measured,
    record: Option<&CaseRecord>,
) {
    if let Some(r) = record {
        result.promote &= r.complete();
    }
    result.costs.clone_from(&measured.costs);
    result.budget = record.cloned();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A night of two cases with history (1% noise, 5 s a process), begun now.
    fn night() -> Night {
        // The compare tests' case with history: 1% noise between processes.
        let input = |name: &str| crate::compare::night::tests::input(name, 0.01);
        let policy = PlanPolicy::new(600.0, 3.0, 0.01);
        Night {
            state: NightState::of(&[input("a"), input("b")], policy, 30.0, 12),
            started: Instant::now(),
        }
    }

    #[test]
    fn a_case_resumed_from_the_journal_keeps_how_its_sampling_ended() {
        // The interrupted night cut case 0 short and journalled it.
        let mut before = night();
        let mut cut = Measured {
            repeats_ms: vec![vec![10.0; 100]],
            costs: vec![RepeatCost {
                wall_s: 7.0,
                steps_s: 1.0,
                steps: 100,
                warmup_s: 0.1,
                warmup_steps: 10,
            }],
            ..Measured::default()
        };
        let case = before.state.case_mut(0);
        case.done = 1;
        case.first = 1;
        case.stop = Some(Stop::Budget);
        before.journal_into(0, &mut cut);
        let line = serde_json::to_string(&cut).expect("journals");
        let back: Measured = serde_json::from_str(&line).expect("reads back");
        // The resumed night: still cut short (never promotes), with the time it took.
        let mut after = night();
        after.recovered(0, &back);
        let r = after.state.case_record(0);
        assert_eq!(r.stop, Stop::Budget);
        assert!(!r.complete());
        assert!((r.time_s - 7.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.first_repeats, 1);
        // A journal line from before budgets were journalled: its configured sampling, complete.
        let old: Measured = serde_json::from_str(r#"{"repeats_ms":[[1.0],[1.0],[1.0]],"warmup_ms":[],"env":{},"stderr_tail":null,"error":null,"gpu_samples":[],"traces":[]}"#)
            .expect("an old line");
        after.recovered(1, &old);
        assert!(after.state.case_record(1).complete());
        assert_eq!(after.state.case_record(1).first_repeats, 3);
    }
}
