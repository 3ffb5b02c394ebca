//! The budgeted night's state machine (docs/nightly.md): where each case of the plan stands
//! (its repeats, its time, how its sampling ended, its confirm step) and every decision the night
//! takes with it: whether one more repeat may start, when a case's evidence is decisive, when a
//! confirm step stops, the confirm order, and the records stored with each result. Pure: the
//! clock's readings arrive as seconds since the run began (`elapsed_s`, a reading or a function
//! that reads it), and each repeat runs through the [`Sampler`] seam, which the caller implements
//! with the harness.

use std::time::Duration;

use super::Decision;
use super::budget::{
    self, CaseInput, CaseNoise, CaseRecord, NextRepeat, NightRecord, Plan, PlanNote, PlanPolicy,
    Stop, Suspect,
};

/// One case as the night samples it.
pub(crate) trait Sampler {
    /// What measuring or judging may fail with.
    type Error;
    /// Run repeat number `repeat` with `steps` counted steps, its harness stopped after `cap`.
    fn measure(&mut self, repeat: u32, steps: u64, cap: Duration) -> Result<Repeat, Self::Error>;
    /// Decide with `repeats` as the count before the confirm step: on the repeats after them
    /// when there are more (a confirm step's fresh ones), else on all measured so far.
    fn judge(&mut self, repeats: u32) -> Result<Decision, Self::Error>;
}

/// How one repeat went, as [`NightState::sample`] needs to know.
pub(crate) enum Repeat {
    /// It ran: its wall seconds.
    Done(f64),
    /// It failed: the case is an error.
    Failed,
    /// It was stopped at the end of the budget's grace (its timeout was capped): discarded.
    Cut,
}

/// Where one case stands tonight.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseState {
    /// Its stored noise (the planner's input), for early stops and the confirm step.
    pub(crate) noise: Option<CaseNoise>,
    /// Its own threshold where it is not the policy's (`CaseInput::max_drop_pct`).
    pub(crate) max_drop_pct: Option<f64>,
    /// Fresh processes the confirm step asks of it (`budget::confirm_size`).
    pub(crate) confirm_size: u32,
    /// Whether its confirm step stopped early as clearly passing (`budget::futile`).
    pub(crate) futile: bool,
    /// Seconds of one repeat, from its history (then from tonight's repeats).
    pub(crate) repeat_s: Option<f64>,
    /// Counted repeats measured tonight (the confirm step's included).
    pub(crate) done: u32,
    /// Wall seconds of its repeats (and traced or profiled repeats) tonight.
    pub(crate) time_s: f64,
    /// Repeats before the confirm step.
    pub(crate) first: u32,
    /// Fresh repeats the confirm step ran.
    pub(crate) confirmed: u32,
    /// Why its sampling ended; `None` while it has not been sampled.
    pub(crate) stop: Option<Stop>,
}

/// How a case recovered from an interrupted run's journal was sampled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Recovered {
    /// Its counted repeats.
    pub(crate) repeats: u32,
    /// Repeats before its confirm step, when a budgeted run journalled it.
    pub(crate) first: Option<u32>,
    /// Wall seconds of its repeats.
    pub(crate) time_s: f64,
    /// Why its sampling ended, when a budgeted run journalled it.
    pub(crate) stop: Option<Stop>,
}

/// One night under a budget: the plan and where each case stands.
#[derive(Debug, Clone)]
pub(crate) struct NightState {
    pub(crate) policy: PlanPolicy,
    pub(crate) record: NightRecord,
    pub(crate) plan: Plan,
    /// One entry per case of the plan, in its order.
    cases: Vec<CaseState>,
    /// Every repeat's wall time tonight (seconds, count): the fallback estimate for cases
    /// without history.
    seen: (f64, u32),
}

impl NightState {
    /// The night of `inputs` under `policy`: the plan and an empty tally.
    pub(crate) fn of(
        inputs: &[CaseInput],
        policy: PlanPolicy,
        grace_s: f64,
        confirm_repeats: u32,
    ) -> NightState {
        let plan = budget::plan(inputs, &policy);
        let cases = plan
            .cases
            .iter()
            .zip(inputs)
            .map(|(p, c)| CaseState {
                noise: c.noise,
                max_drop_pct: c.max_drop_pct,
                confirm_size: budget::confirm_size(
                    c.noise.as_ref(),
                    p.steps,
                    confirm_repeats,
                    &policy.for_threshold(c.max_drop_pct),
                    plan.cases.len(),
                ),
                futile: false,
                repeat_s: c
                    .cost
                    .map(|cost| budget::repeat_cost_s(&cost, p.steps, p.warmup_steps)),
                done: 0,
                time_s: 0.0,
                first: 0,
                confirmed: 0,
                stop: None,
            })
            .collect();
        NightState {
            record: NightRecord {
                budget_s: policy.budget_s,
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
            cases,
            seen: (0.0, 0),
        }
    }

    /// Where case `i` stands.
    pub(crate) fn case(&self, i: usize) -> &CaseState {
        &self.cases[i]
    }

    /// Where case `i` stands, to set it up in a test.
    #[cfg(test)]
    pub(crate) fn case_mut(&mut self, i: usize) -> &mut CaseState {
        &mut self.cases[i]
    }

    /// A case taken from an interrupted run's journal (or one that could not start: no
    /// repeats): its sampling is what it was. A case the interrupted run's budget cut short
    /// stays cut short (it never moves its baseline), and its recorded time is its time; one
    /// journalled without a budget ran its configured sampling.
    pub(crate) fn recovered(&mut self, i: usize, r: Recovered) {
        let c = &mut self.cases[i];
        c.done = r.repeats;
        c.first = r.first.unwrap_or(r.repeats);
        c.confirmed = c.done.saturating_sub(c.first);
        c.time_s = r.time_s;
        c.stop = Some(r.stop.unwrap_or(Stop::Planned));
    }

    /// The policy case `i` is judged under: the night's, at its own threshold.
    fn policy_of(&self, i: usize) -> PlanPolicy {
        self.policy.for_threshold(self.cases[i].max_drop_pct)
    }

    fn mean_seen_s(&self) -> Option<f64> {
        (self.seen.1 > 0).then(|| self.seen.0 / f64::from(self.seen.1))
    }

    fn estimate_s(&self, i: usize) -> Option<f64> {
        self.cases[i].repeat_s.or_else(|| self.mean_seen_s())
    }

    /// The minimum repeats of the cases after `i`, in seconds: what the budget must still hold.
    fn remaining_min_s(&self, i: usize) -> f64 {
        (i + 1..self.plan.cases.len())
            .map(|j| f64::from(self.policy.min_repeats) * self.estimate_s(j).unwrap_or(0.0))
            .sum()
    }

    /// Whether one more repeat of case `i`, `elapsed_s` into the run, would end past the
    /// budget plus grace.
    fn would_overrun(&self, i: usize, elapsed_s: f64) -> bool {
        let limit = self.record.budget_s + self.record.grace_s;
        budget::over_budget(elapsed_s, self.record.budget_s, self.record.grace_s)
            || self.estimate_s(i).is_some_and(|s| elapsed_s + s > limit)
    }

    /// The longest a repeat may still run `elapsed_s` into the run: what is left of the budget
    /// plus grace.
    pub(crate) fn timeout_cap(&self, elapsed_s: f64) -> Duration {
        let left = self.record.budget_s + self.record.grace_s - elapsed_s;
        Duration::from_secs_f64(left.max(0.0))
    }

    fn add_repeat(&mut self, i: usize, wall_s: f64) {
        let no_history = self.plan.cases[i].note == PlanNote::NoHistory;
        let c = &mut self.cases[i];
        c.done += 1;
        c.time_s += wall_s;
        self.seen.0 += wall_s;
        self.seen.1 += 1;
        if c.repeat_s.is_none() || no_history {
            c.repeat_s = Some(c.time_s / f64::from(c.done));
        }
    }

    /// Sample case `i` sequentially through `case` (one repeat at a time, judged after each),
    /// reading the seconds since the run began from `elapsed_s`. Returns why it stopped.
    pub(crate) fn sample<S: Sampler>(
        &mut self,
        i: usize,
        case: &mut S,
        elapsed_s: impl Fn() -> f64,
    ) -> Result<Stop, S::Error> {
        let planned = self.plan.cases[i].repeats;
        let steps = self.plan.cases[i].steps;
        let (mut decisive, mut beyond) = (false, false);
        let stop = loop {
            let done = self.cases[i].done;
            let now = elapsed_s();
            let next = NextRepeat {
                done,
                planned,
                confirm: 0,
                decisive: decisive || beyond,
                suspect: false,
                repeat_s: self.estimate_s(i),
                elapsed_s: now,
                remaining_min_s: self.remaining_min_s(i),
            };
            let grace = self.record.grace_s;
            if !budget::may_start(&next, &self.policy, grace) || self.would_overrun(i, now) {
                break match () {
                    () if done == 0 => Stop::NotStarted,
                    () if beyond => Stop::Suspect,
                    () if decisive => Stop::Decisive,
                    () if done >= planned => Stop::Planned,
                    () => Stop::Budget,
                };
            }
            match case.measure(done, steps, self.timeout_cap(elapsed_s()))? {
                Repeat::Done(wall_s) => self.add_repeat(i, wall_s),
                Repeat::Failed => break Stop::Error,
                Repeat::Cut => {
                    self.record.stopped = true;
                    break Stop::Budget;
                }
            }
            let done = self.cases[i].done;
            let d = case.judge(done)?;
            let noise = self.cases[i].noise.as_ref();
            let own = self.policy_of(i);
            decisive = budget::decisive(done, d.interval_pct, None, &own)
                || budget::futile(done, d.drop_pct, noise, steps, &own);
            beyond = budget::decisive(done, None, d.drop_pct, &own);
        };
        if stop == Stop::NotStarted {
            self.record
                .not_started
                .push(self.plan.cases[i].name.clone());
        }
        if matches!(stop, Stop::Budget | Stop::NotStarted) {
            self.record.stopped = true;
        }
        let c = &mut self.cases[i];
        c.first = c.done;
        c.stop = Some(stop);
        Ok(stop)
    }

    /// The confirm step of a suspect, from what is left of the budget (never the grace): up to
    /// its `budget::confirm_size` fresh repeats, judged on those after each from the minimum
    /// on, stopping early once they are clearly passing (`budget::futile`). `elapsed_s` reads
    /// the seconds since the run began. Returns how many ran.
    pub(crate) fn confirm<S: Sampler>(
        &mut self,
        i: usize,
        case: &mut S,
        elapsed_s: impl Fn() -> f64,
    ) -> Result<u32, S::Error> {
        let first = self.cases[i].first;
        let steps = self.plan.cases[i].steps;
        let size = self.cases[i].confirm_size;
        while self.cases[i].confirmed < size {
            let now = elapsed_s();
            let next = NextRepeat {
                done: self.cases[i].done.max(self.policy.min_repeats),
                planned: first,
                confirm: size,
                decisive: false,
                suspect: true,
                repeat_s: self.estimate_s(i),
                elapsed_s: now,
                remaining_min_s: 0.0,
            };
            if !budget::may_start(&next, &self.policy, self.record.grace_s)
                || self.would_overrun(i, now)
            {
                break;
            }
            match case.measure(self.cases[i].done, steps, self.timeout_cap(elapsed_s()))? {
                Repeat::Done(wall_s) => {
                    self.add_repeat(i, wall_s);
                    self.cases[i].confirmed += 1;
                }
                Repeat::Failed => break,
                Repeat::Cut => {
                    self.record.stopped = true;
                    break;
                }
            }
            let confirmed = self.cases[i].confirmed;
            if confirmed >= self.policy.min_repeats && confirmed < size {
                let d = case.judge(first)?;
                let noise = self.cases[i].noise.as_ref();
                if budget::futile(confirmed, d.drop_pct, noise, steps, &self.policy_of(i)) {
                    self.cases[i].futile = true;
                    break;
                }
            }
        }
        Ok(self.cases[i].confirmed)
    }

    /// Whether the confirm step of case `i` has its evidence: every repeat it asked for, or an
    /// early stop as clearly passing.
    pub(crate) fn confirm_complete(&self, i: usize) -> bool {
        let c = &self.cases[i];
        c.futile || c.confirmed >= c.confirm_size
    }

    /// Fresh repeats the confirm step of case `i` asks for.
    pub(crate) fn confirm_size(&self, i: usize) -> u32 {
        self.cases[i].confirm_size
    }

    /// Whether the confirm step of case `i` stopped early as clearly passing.
    pub(crate) fn confirm_futile(&self, i: usize) -> bool {
        self.cases[i].futile
    }

    /// Case `i` as a suspect for `budget::confirm_order`, at position `index` of the run's
    /// cases, from the decision its first repeats gave.
    pub(crate) fn suspect(&self, i: usize, index: usize, d: &Decision) -> Suspect {
        let c = &self.cases[i];
        Suspect {
            index,
            p_value: d.p_value.filter(|_| d.drop_pct.is_some_and(|x| x > 0.0)),
            drop_pct: d.drop_pct,
            repeats: c.first,
            noise: c.noise,
            steps: self.plan.cases[i].steps,
            repeat_s: self.estimate_s(i),
            confirm: c.confirm_size,
            max_drop_pct: c.max_drop_pct,
        }
    }

    /// The confirm order of the suspects.
    pub(crate) fn confirm_order(&self, suspects: &[Suspect]) -> Vec<usize> {
        budget::confirm_order(suspects, &self.policy, self.plan.cases.len())
    }

    /// Repeats of case `i` before the confirm step.
    pub(crate) fn first_repeats(&self, i: usize) -> u32 {
        self.cases[i].first
    }

    /// What the night did with case `i`, for its stored summary.
    pub(crate) fn case_record(&self, i: usize) -> CaseRecord {
        let p = &self.plan.cases[i];
        let c = &self.cases[i];
        let mut stop = c.stop.unwrap_or(Stop::NotStarted);
        if stop == Stop::Suspect && !self.confirm_complete(i) && c.confirm_size > 0 {
            stop = Stop::Budget;
        }
        CaseRecord {
            note: p.note,
            planned_repeats: p.repeats,
            steps: p.steps,
            first_repeats: c.first,
            confirm_repeats: c.confirmed,
            time_s: c.time_s,
            stop,
            needed_repeats: p.needed_repeats,
            needed_s: p.needed_s,
        }
    }

    /// Whether case `i` may still take its traced or profiled repeat (`--trace`, `trace`,
    /// `nsys`, `ncu`) `elapsed_s` into the run: like a repeat beyond the minimum, only while the
    /// budget (never the grace) holds it, at its estimate with the cost margin, and the rest of
    /// the grid's minimum.
    pub(crate) fn may_trace(&self, i: usize, elapsed_s: f64) -> bool {
        let done = self.cases[i].done.max(self.policy.min_repeats);
        let next = NextRepeat {
            done,
            planned: done + 1,
            confirm: 0,
            decisive: false,
            suspect: false,
            repeat_s: self.estimate_s(i),
            elapsed_s,
            remaining_min_s: self.remaining_min_s(i),
        };
        budget::may_start(&next, &self.policy, self.record.grace_s)
            && !self.would_overrun(i, elapsed_s)
    }

    /// Charge `wall_s` seconds of a traced or profiled repeat to case `i`: it is the case's time
    /// tonight, though not one of its counted repeats.
    pub(crate) fn charge(&mut self, i: usize, wall_s: f64) {
        self.cases[i].time_s += wall_s;
    }

    /// Whether case `i` may still start `elapsed_s` into the run: the budget plus grace holds
    /// one more repeat of it.
    pub(crate) fn can_start(&self, i: usize, elapsed_s: f64) -> bool {
        !self.would_overrun(i, elapsed_s)
    }

    /// Measuring ended `used_s` into the run: the time it took is the night's.
    pub(crate) fn finish(&mut self, used_s: f64) {
        self.record.used_s = used_s;
    }

    /// Seconds the plan's remaining repeats still need, for the progress line's ETA.
    pub(crate) fn eta_s(&self) -> f64 {
        let costs: Vec<Option<f64>> = (0..self.plan.cases.len())
            .map(|i| self.estimate_s(i))
            .collect();
        let done: Vec<u32> = self.cases.iter().map(|c| c.done).collect();
        budget::eta_s(
            &self.plan.cases,
            &done,
            self.mean_seen_s().unwrap_or(0.0),
            &costs,
        )
    }
}

#[cfg(test)]
pub(crate) mod tests;
