//! `utilgate run` with a time budget (`--budget 10m`, `[run] budget_minutes`): plan each case's
//! steps and repeats from the store's history before the first harness starts, sample each case
//! one repeat at a time until its evidence is decisive, let the confirm step draw on what is
//! left, and stop measuring once the budget and its grace are spent. Sequences I/O (the store's
//! history, the monotonic clock); every decision is `compare::budget`'s.
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
use crate::compare::Decision;
use crate::compare::budget::{
    self, CASE_KEY, COST_KEY, CaseCost, CaseInput, CaseNoise, CaseRecord, NIGHT_KEY, NextRepeat,
    NightRecord, Plan, PlanNote, PlanPolicy, RepeatCost, Stop, Suspect,
};
use crate::config::{Config, SuiteConfig};
use crate::error::Error;
use crate::pipeline::measure::runner::{CasePlan, Measured, RepeatLimits, Runner};
use crate::store::{Store, StoredResult};

/// The run's budget in seconds: the flag, else `[run] budget_minutes`, else none.
pub(crate) fn budget_s(config: &Config, flag: Option<BudgetArg>) -> Option<f64> {
    flag.map(|b| b.0)
        .or_else(|| config.run.budget_minutes.map(|m| m * 60.0))
}

/// A case's recorded repeat costs, from a stored result's summary.
pub(crate) fn stored_costs(r: &StoredResult) -> Vec<RepeatCost> {
    r.summary_json
        .as_ref()
        .and_then(|s| s.get(COST_KEY))
        .and_then(|c| serde_json::from_value(c.clone()).ok())
        .unwrap_or_default()
}

/// A stored result's budget record, when a budgeted run measured it.
pub(crate) fn stored_record(r: &StoredResult) -> Option<CaseRecord> {
    r.summary_json
        .as_ref()
        .and_then(|s| s.get(CASE_KEY))
        .and_then(|c| serde_json::from_value(c.clone()).ok())
}

/// One night under a budget: the plan and where each case stands.
pub(crate) struct Night {
    pub(crate) policy: PlanPolicy,
    pub(crate) record: NightRecord,
    pub(crate) plan: Plan,
    started: Instant,
    /// Each case's stored noise (the planner's input), for early stops and the confirm step.
    noise: Vec<Option<CaseNoise>>,
    /// Fresh processes the confirm step asks of each case (`budget::confirm_size`).
    confirm_size: Vec<u32>,
    /// Cases whose confirm step stopped early as clearly passing (`budget::futile`).
    futile: Vec<bool>,
    /// Seconds of one repeat of each case, from its history (then from tonight's repeats).
    repeat_s: Vec<Option<f64>>,
    done: Vec<u32>,
    time_s: Vec<f64>,
    first: Vec<u32>,
    confirmed: Vec<u32>,
    stops: Vec<Option<Stop>>,
    /// Every repeat's wall time tonight: the fallback estimate for cases without history.
    seen: (f64, u32),
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
        for (key, suite) in cases {
            let history = store.case_history(key, gpu_sku, config.gate.history_runs.max(1))?;
            inputs.push(case_input(key, suite, &history));
        }
        let policy = PlanPolicy::new(budget_s, config.gate.max_drop_pct, config.gate.family_alpha);
        let grace_s = config.run.grace_s(budget_s);
        Ok(Night::of(
            &inputs,
            policy,
            grace_s,
            config.gate.confirm_repeats,
            started,
        ))
    }

    /// The night of `inputs` under `policy`: the plan and an empty tally.
    fn of(
        inputs: &[CaseInput],
        policy: PlanPolicy,
        grace_s: f64,
        confirm_repeats: u32,
        started: Instant,
    ) -> Night {
        let budget_s = policy.budget_s;
        let plan = budget::plan(inputs, &policy);
        let repeat_s = plan
            .cases
            .iter()
            .zip(inputs)
            .map(|(p, c)| {
                c.cost
                    .map(|cost| budget::repeat_cost_s(&cost, p.steps, p.warmup_steps))
            })
            .collect();
        let n = plan.cases.len();
        let noise: Vec<Option<CaseNoise>> = inputs.iter().map(|c| c.noise).collect();
        let confirm_size = plan
            .cases
            .iter()
            .zip(&noise)
            .map(|(p, n)| {
                budget::confirm_size(
                    n.as_ref(),
                    p.steps,
                    confirm_repeats,
                    &policy,
                    plan.cases.len(),
                )
            })
            .collect();
        Night {
            record: NightRecord {
                budget_s,
                grace_s,
                planned_s: plan.planned_s,
                reserve_s: plan.reserve_s,
                budget_to_resolve_all_s: plan.budget_to_resolve_all_s,
                not_started: Vec::new(),
                used_s: 0.0,
                stopped: false,
            },
            policy,
            plan,
            started,
            noise,
            confirm_size,
            futile: vec![false; n],
            repeat_s,
            done: vec![0; n],
            time_s: vec![0.0; n],
            first: vec![0; n],
            confirmed: vec![0; n],
            stops: vec![None; n],
            seen: (0.0, 0),
        }
    }

    /// A case taken from an interrupted run's journal (or one that could not start: its
    /// floor failed, `measured` empty): its sampling is what it was. A case the interrupted
    /// run's budget cut short stays cut short (it never moves its baseline), and its recorded
    /// time is its time; one journalled without a budget ran its configured sampling.
    pub(crate) fn recovered(&mut self, i: usize, measured: &Measured) {
        let repeats = u32::try_from(measured.repeats_ms.len()).unwrap_or(u32::MAX);
        self.done[i] = repeats;
        self.first[i] = measured.budget_first.unwrap_or(repeats);
        self.confirmed[i] = self.done[i].saturating_sub(self.first[i]);
        self.time_s[i] = measured.costs.iter().map(|c| c.wall_s).sum();
        self.stops[i] = Some(measured.budget_stop.unwrap_or(Stop::Planned));
    }

    /// What the journal keeps of case `i`'s sampling tonight, so a resumed run knows it.
    pub(crate) fn journal_into(&self, i: usize, measured: &mut Measured) {
        measured.budget_stop = self.stops[i];
        measured.budget_first = Some(self.first[i]);
    }

    pub(crate) fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    fn mean_seen_s(&self) -> Option<f64> {
        (self.seen.1 > 0).then(|| self.seen.0 / f64::from(self.seen.1))
    }

    fn estimate_s(&self, i: usize) -> Option<f64> {
        self.repeat_s[i].or_else(|| self.mean_seen_s())
    }

    /// The minimum repeats of the cases after `i`, in seconds: what the budget must still hold.
    fn remaining_min_s(&self, i: usize) -> f64 {
        (i + 1..self.plan.cases.len())
            .map(|j| f64::from(self.policy.min_repeats) * self.estimate_s(j).unwrap_or(0.0))
            .sum()
    }

    /// Whether one more repeat of case `i` would end past the budget plus grace.
    fn would_overrun(&self, i: usize) -> bool {
        let limit = self.record.budget_s + self.record.grace_s;
        budget::over_budget(self.elapsed_s(), self.record.budget_s, self.record.grace_s)
            || self
                .estimate_s(i)
                .is_some_and(|s| self.elapsed_s() + s > limit)
    }

    /// The longest a repeat may still run: what is left of the budget plus grace.
    pub(crate) fn timeout_cap(&self) -> Duration {
        let left = self.record.budget_s + self.record.grace_s - self.elapsed_s();
        Duration::from_secs_f64(left.max(0.0))
    }

    fn add_repeat(&mut self, i: usize, wall_s: f64) {
        self.done[i] += 1;
        self.time_s[i] += wall_s;
        self.seen.0 += wall_s;
        self.seen.1 += 1;
        if self.repeat_s[i].is_none() || self.plan.cases[i].note == PlanNote::NoHistory {
            let d = f64::from(self.done[i]);
            self.repeat_s[i] = Some(self.time_s[i] / d);
        }
    }

    /// Sample case `i` sequentially through `case` (one repeat at a time, judged after each).
    /// Returns why it stopped.
    pub(crate) fn sample(&mut self, i: usize, case: &mut impl Sampler) -> Result<Stop, Error> {
        let planned = self.plan.cases[i].repeats;
        let steps = self.plan.cases[i].steps;
        let (mut decisive, mut beyond) = (false, false);
        let stop = loop {
            let next = NextRepeat {
                done: self.done[i],
                planned,
                confirm: 0,
                decisive: decisive || beyond,
                suspect: false,
                repeat_s: self.estimate_s(i),
                elapsed_s: self.elapsed_s(),
                remaining_min_s: self.remaining_min_s(i),
            };
            let grace = self.record.grace_s;
            if !budget::may_start(&next, &self.policy, grace) || self.would_overrun(i) {
                break match () {
                    () if self.done[i] == 0 => Stop::NotStarted,
                    () if beyond => Stop::Suspect,
                    () if decisive => Stop::Decisive,
                    () if self.done[i] >= planned => Stop::Planned,
                    () => Stop::Budget,
                };
            }
            match case.measure(self.done[i], steps, self.timeout_cap())? {
                Repeat::Done(wall_s) => self.add_repeat(i, wall_s),
                Repeat::Failed => break Stop::Error,
                Repeat::Cut => {
                    self.record.stopped = true;
                    break Stop::Budget;
                }
            }
            let d = case.judge(self.done[i])?;
            let noise = self.noise[i].as_ref();
            decisive = budget::decisive(self.done[i], d.interval_pct, None, &self.policy)
                || budget::futile(self.done[i], d.drop_pct, noise, steps, &self.policy);
            beyond = budget::decisive(self.done[i], None, d.drop_pct, &self.policy);
        };
        if stop == Stop::NotStarted {
            self.record
                .not_started
                .push(self.plan.cases[i].name.clone());
        }
        if matches!(stop, Stop::Budget | Stop::NotStarted) {
            self.record.stopped = true;
        }
        self.first[i] = self.done[i];
        self.stops[i] = Some(stop);
        Ok(stop)
    }

    /// The confirm step of a suspect, from what is left of the budget (never the grace): up to
    /// its `budget::confirm_size` fresh repeats, judged on those after each from the minimum
    /// on, stopping early once they are clearly passing (`budget::futile`). Returns how many
    /// ran.
    pub(crate) fn confirm(&mut self, i: usize, case: &mut impl Sampler) -> Result<u32, Error> {
        let first = self.first[i];
        let steps = self.plan.cases[i].steps;
        let size = self.confirm_size[i];
        while self.confirmed[i] < size {
            let next = NextRepeat {
                done: self.done[i].max(self.policy.min_repeats),
                planned: first,
                confirm: size,
                decisive: false,
                suspect: true,
                repeat_s: self.estimate_s(i),
                elapsed_s: self.elapsed_s(),
                remaining_min_s: 0.0,
            };
            if !budget::may_start(&next, &self.policy, self.record.grace_s) || self.would_overrun(i)
            {
                break;
            }
            match case.measure(self.done[i], steps, self.timeout_cap())? {
                Repeat::Done(wall_s) => {
                    self.add_repeat(i, wall_s);
                    self.confirmed[i] += 1;
                }
                Repeat::Failed => break,
                Repeat::Cut => {
                    self.record.stopped = true;
                    break;
                }
            }
            if self.confirmed[i] >= self.policy.min_repeats && self.confirmed[i] < size {
                let d = case.judge(first)?;
                let noise = self.noise[i].as_ref();
                if budget::futile(self.confirmed[i], d.drop_pct, noise, steps, &self.policy) {
                    self.futile[i] = true;
                    break;
                }
            }
        }
        Ok(self.confirmed[i])
    }

    /// Whether the confirm step of case `i` has its evidence: every repeat it asked for, or an
    /// early stop as clearly passing.
    pub(crate) fn confirm_complete(&self, i: usize) -> bool {
        self.futile[i] || self.confirmed[i] >= self.confirm_size[i]
    }

    /// Fresh repeats the confirm step of case `i` asks for.
    pub(crate) fn confirm_size(&self, i: usize) -> u32 {
        self.confirm_size[i]
    }

    /// Whether the confirm step of case `i` stopped early as clearly passing.
    pub(crate) fn confirm_futile(&self, i: usize) -> bool {
        self.futile[i]
    }

    /// Case `i` as a suspect for `budget::confirm_order`, at position `index` of the run's
    /// cases, from the decision its first repeats gave.
    pub(crate) fn suspect(&self, i: usize, index: usize, d: &Decision) -> Suspect {
        Suspect {
            index,
            p_value: d.p_value.filter(|_| d.drop_pct.is_some_and(|x| x > 0.0)),
            drop_pct: d.drop_pct,
            repeats: self.first[i],
            noise: self.noise[i],
            steps: self.plan.cases[i].steps,
            repeat_s: self.estimate_s(i),
            confirm: self.confirm_size[i],
        }
    }

    /// The confirm order of the suspects.
    pub(crate) fn confirm_order(&self, suspects: &[Suspect]) -> Vec<usize> {
        budget::confirm_order(suspects, &self.policy, self.plan.cases.len())
    }

    /// Repeats of case `i` before the confirm step.
    pub(crate) fn first_repeats(&self, i: usize) -> u32 {
        self.first[i]
    }

    /// What the night did with case `i`, for its stored summary.
    pub(crate) fn case_record(&self, i: usize) -> CaseRecord {
        let p = &self.plan.cases[i];
        let mut stop = self.stops[i].unwrap_or(Stop::NotStarted);
        if stop == Stop::Suspect && !self.confirm_complete(i) && self.confirm_size[i] > 0 {
            stop = Stop::Budget;
        }
        CaseRecord {
            note: p.note,
            planned_repeats: p.repeats,
            steps: p.steps,
            first_repeats: self.first[i],
            confirm_repeats: self.confirmed[i],
            time_s: self.time_s[i],
            stop,
            needed_repeats: p.needed_repeats,
            needed_s: p.needed_s,
        }
    }

    /// Whether case `i` may still take its traced or profiled repeat (`--trace`, `trace`,
    /// `nsys`, `ncu`): like a repeat beyond the minimum, only while the budget (never the
    /// grace) holds it, at its estimate with the cost margin, and the rest of the grid's
    /// minimum.
    pub(crate) fn may_trace(&self, i: usize) -> bool {
        let done = self.done[i].max(self.policy.min_repeats);
        let next = NextRepeat {
            done,
            planned: done + 1,
            confirm: 0,
            decisive: false,
            suspect: false,
            repeat_s: self.estimate_s(i),
            elapsed_s: self.elapsed_s(),
            remaining_min_s: self.remaining_min_s(i),
        };
        budget::may_start(&next, &self.policy, self.record.grace_s) && !self.would_overrun(i)
    }

    /// Charge `wall_s` seconds of a traced or profiled repeat to case `i`: it is the case's time
    /// tonight, though not one of its counted repeats.
    pub(crate) fn charge(&mut self, i: usize, wall_s: f64) {
        self.time_s[i] += wall_s;
    }

    /// Whether case `i` may still start: the budget plus grace holds one more repeat of it.
    pub(crate) fn can_start(&self, i: usize) -> bool {
        !self.would_overrun(i)
    }

    /// Measuring is over: the time it took is the night's, and a budget that ran out says so.
    pub(crate) fn finish_with(mut self, progress: &crate::output::Progress) -> Night {
        self.record.used_s = self.elapsed_s();
        if self.record.stopped {
            progress.warn(&format!(
                "the budget ran out after {}: measuring stopped and the run judges what it has ({} case(s) not measured)",
                crate::report::format::duration(self.record.used_s),
                self.record.not_started.len()
            ));
        }
        self
    }

    /// The progress line: budget, time used, time left, ETA of the plan's remaining repeats.
    pub(crate) fn progress_line(&self) -> String {
        let costs: Vec<Option<f64>> = (0..self.plan.cases.len())
            .map(|i| self.estimate_s(i))
            .collect();
        let eta = budget::eta_s(
            &self.plan.cases,
            &self.done,
            self.mean_seen_s().unwrap_or(0.0),
            &costs,
        );
        crate::report::budget::progress_line(&self.record, self.elapsed_s(), eta)
    }
}

/// One case as the night samples it.
pub(crate) trait Sampler {
    /// Run repeat number `repeat` with `steps` counted steps, its harness stopped after `cap`.
    fn measure(&mut self, repeat: u32, steps: u64, cap: Duration) -> Result<Repeat, Error>;
    /// Decide with `repeats` as the count before the confirm step: on the repeats after them
    /// when there are more (a confirm step's fresh ones), else on all measured so far.
    fn judge(&mut self, repeats: u32) -> Result<Decision, Error>;
}

/// How one repeat went, as `Night::sample` needs to know.
pub(crate) enum Repeat {
    /// It ran: its wall seconds.
    Done(f64),
    /// It failed: the case is an error.
    Failed,
    /// It was stopped at the end of the budget's grace (its timeout was capped): discarded.
    Cut,
}

/// A case as the planner sees it, from its stored history (newest first): costs from every
/// recorded repeat, noise from the results that could pool into a reference.
fn case_input(key: &CaseKey, suite: &SuiteConfig, history: &[StoredResult]) -> CaseInput {
    let costs: Vec<RepeatCost> = history.iter().flat_map(stored_costs).collect();
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
    let cost: Option<CaseCost> = budget::cost_from_history(&costs);
    CaseInput {
        name: key.to_string(),
        steps: suite.steps,
        warmup_steps: suite.warmup_steps,
        repeats: suite.repeats,
        noise: cost.and(budget::noise_from_history(&views, reference_repeats.max(1))),
        cost,
    }
}

/// A result's summary with its costs and (under a budget) its night's record added.
pub(crate) fn summary_with(
    summary: Option<serde_json::Value>,
    costs: &[RepeatCost],
    record: Option<&CaseRecord>,
) -> Option<serde_json::Value> {
    let mut map = match summary {
        Some(serde_json::Value::Object(map)) => map,
        Some(other) => return Some(other),
        None if costs.is_empty() && record.is_none() => return None,
        None => serde_json::Map::new(),
    };
    if !costs.is_empty()
        && let Ok(v) = serde_json::to_value(costs)
    {
        map.insert(COST_KEY.to_owned(), v);
    }
    if let Some(v) = record.and_then(|r| serde_json::to_value(r).ok()) {
        map.insert(CASE_KEY.to_owned(), v);
    }
    Some(serde_json::Value::Object(map))
}

/// The run's stored config with the night's record added (reports read it back).
pub(crate) fn config_with(
    config: Option<serde_json::Value>,
    night: Option<&NightRecord>,
) -> Option<serde_json::Value> {
    match (config, night.and_then(|n| serde_json::to_value(n).ok())) {
        (Some(serde_json::Value::Object(mut map)), Some(n)) => {
            map.insert(NIGHT_KEY.to_owned(), n);
            Some(serde_json::Value::Object(map))
        }
        (config, _) => config,
    }
}

/// The plan's lines, printed before measuring (and the unresolved cases as warnings).
pub(crate) fn plan_lines(night: &Night) -> (String, Vec<String>) {
    crate::report::budget::plan_text(&night.plan, &night.record)
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
            judge: (self.store, self.gpu_sku, self.config, self.grid),
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
            judge: (self.store, self.gpu_sku, self.config, self.grid),
        };
        self.night.confirm(i, &mut sampler)
    }
}

/// One case measured through the runner, one repeat at a time.
struct CaseSampler<'r, 'p, 'm, 'j> {
    runner: &'r Runner<'r>,
    plan: &'p CasePlan<'p>,
    measured: &'m mut Measured,
    judge: (&'j Store, &'j str, &'j Config, usize),
}

impl Sampler for CaseSampler<'_, '_, '_, '_> {
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
        let (store, sku, config, grid) = self.judge;
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
    result.summary_json = summary_with(result.summary_json.take(), &measured.costs, record);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::budget::{CaseCost, CaseNoise};

    /// A night of two cases with history (1% noise, 5 s a process).
    fn night(elapsed: Duration) -> Night {
        let input = |name: &str| CaseInput {
            name: name.to_owned(),
            steps: 100,
            warmup_steps: 10,
            repeats: 3,
            cost: Some(CaseCost {
                start_s: 4.0,
                step_s: 0.01,
                warmup_step_s: 0.01,
            }),
            noise: Some(CaseNoise {
                between: 0.01,
                jitter: 0.0075,
                reference_repeats: 30,
            }),
        };
        let started = Instant::now()
            .checked_sub(elapsed)
            .expect("a clock past boot");
        let policy = PlanPolicy::new(600.0, 3.0, 0.01);
        Night::of(&[input("a"), input("b")], policy, 30.0, 12, started)
    }

    /// A case whose every process takes 5 s and whose estimate is `drop_pct`.
    struct Steady {
        drop_pct: f64,
        ran: u32,
    }

    impl Sampler for Steady {
        fn measure(&mut self, _: u32, _: u64, _: Duration) -> Result<Repeat, Error> {
            self.ran += 1;
            Ok(Repeat::Done(5.0))
        }

        fn judge(&mut self, _: u32) -> Result<Decision, Error> {
            let mut d = crate::compare::error_decision("simulated");
            d.drop_pct = Some(self.drop_pct);
            Ok(d)
        }
    }

    #[test]
    fn a_confirm_step_stops_once_clearly_passing_and_runs_its_size_for_a_drop() {
        let mut n = night(Duration::ZERO);
        let size = n.confirm_size(0);
        assert_eq!(
            size, n.policy.min_confirm,
            "a 1% case needs few fresh processes"
        );
        let mut slow = Steady {
            drop_pct: 6.0,
            ran: 0,
        };
        assert_eq!(n.sample(0, &mut slow).expect("samples"), Stop::Suspect);
        assert_eq!(n.first_repeats(0), 2);
        // Fresh processes clearly under the threshold: stopped at the minimum.
        let mut fine = Steady {
            drop_pct: -1.0,
            ran: 0,
        };
        assert_eq!(n.confirm(0, &mut fine).expect("confirms"), 2);
        assert_eq!(fine.ran, 2);
        assert!(n.confirm_futile(0) && n.confirm_complete(0));
        assert_eq!(n.case_record(0).stop, Stop::Suspect);
        // A drop that stays: every fresh process it asked for.
        assert_eq!(n.sample(1, &mut slow).expect("samples"), Stop::Suspect);
        let mut still = Steady {
            drop_pct: 6.0,
            ran: 0,
        };
        assert_eq!(n.confirm(1, &mut still).expect("confirms"), size);
        assert!(!n.confirm_futile(1) && n.confirm_complete(1));
    }

    #[test]
    fn a_case_resumed_from_the_journal_keeps_how_its_sampling_ended() {
        // The interrupted night cut case 0 short and journalled it.
        let mut before = night(Duration::ZERO);
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
        before.done[0] = 1;
        before.first[0] = 1;
        before.stops[0] = Some(Stop::Budget);
        before.journal_into(0, &mut cut);
        let line = serde_json::to_string(&cut).expect("journals");
        let back: Measured = serde_json::from_str(&line).expect("reads back");
        // The resumed night: still cut short (never promotes), with the time it took.
        let mut after = night(Duration::ZERO);
        after.recovered(0, &back);
        let r = after.case_record(0);
        assert_eq!(r.stop, Stop::Budget);
        assert!(!r.complete());
        assert!((r.time_s - 7.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.first_repeats, 1);
        // A journal line from before budgets were journalled: its configured sampling, complete.
        let old: Measured = serde_json::from_str(r#"{"repeats_ms":[[1.0],[1.0],[1.0]],"warmup_ms":[],"env":{},"stderr_tail":null,"error":null,"gpu_samples":[],"traces":[]}"#)
            .expect("an old line");
        after.recovered(1, &old);
        assert!(after.case_record(1).complete());
        assert_eq!(after.case_record(1).first_repeats, 3);
    }

    #[test]
    fn a_traced_repeat_waits_for_room_in_the_budget_and_is_charged() {
        let mut n = night(Duration::ZERO);
        assert!(n.may_trace(0));
        n.charge(0, 4.5);
        assert!((n.case_record(0).time_s - 4.5).abs() < 1e-9);
        // 590 s in: a 5-second repeat (6.3 s with its margin) no longer fits in the budget,
        // though it would in the grace.
        let late = night(Duration::from_secs(590));
        assert!(!late.may_trace(0));
        assert!(late.can_start(0));
    }
}
