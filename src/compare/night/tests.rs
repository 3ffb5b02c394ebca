//! Tests of the night's state machine: sequential stops, the confirm step, a night the budget
//! ends early, a case it cuts short, and the traced repeat's room, with a simulated clock.

use std::cell::Cell;
use std::time::Duration;

use super::{NightState, Repeat, Sampler};
use crate::compare::Decision;
use crate::compare::budget::{CaseCost, CaseInput, CaseNoise, PlanPolicy, Stop};

/// A case with history: 5.1 s a process (4 s to start, 110 steps of 10 ms), `noise` between
/// processes.
pub(crate) fn input(name: &str, noise: f64) -> CaseInput {
    CaseInput {
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
            between: noise,
            jitter: 0.0075,
            reference_repeats: 30,
        }),
        max_drop_pct: None,
    }
}

/// A night of two cases with history (`noise` between processes, 5 s a process), 600 s with
/// 30 s of grace.
fn night_of(noise: f64) -> NightState {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    NightState::of(&[input("a", noise), input("b", noise)], policy, 30.0, 12)
}

/// A night of two quiet cases (1% noise): the minimum repeats resolve them.
fn night() -> NightState {
    night_of(0.01)
}

/// A case whose every process takes 5 s and whose estimate is `drop_pct`.
struct Steady {
    drop_pct: f64,
    ran: u32,
}

impl Sampler for Steady {
    type Error = ();

    fn measure(&mut self, _: u32, _: u64, _: Duration) -> Result<Repeat, ()> {
        self.ran += 1;
        Ok(Repeat::Done(5.0))
    }

    fn judge(&mut self, _: u32) -> Result<Decision, ()> {
        let mut d = crate::compare::error_decision("simulated");
        d.drop_pct = Some(self.drop_pct);
        Ok(d)
    }
}

/// A case whose processes take 5 s on `clock` (seconds since the run began), each going as
/// `repeat` says, judged as `decision` says.
struct Clocked<'c> {
    clock: &'c Cell<f64>,
    repeat: fn() -> Repeat,
    decision: fn() -> Decision,
    ran: u32,
    caps: Vec<Duration>,
}

impl<'c> Clocked<'c> {
    fn new(clock: &'c Cell<f64>, decision: fn() -> Decision) -> Self {
        Clocked {
            clock,
            repeat: || Repeat::Done(5.0),
            decision,
            ran: 0,
            caps: Vec::new(),
        }
    }
}

impl Sampler for Clocked<'_> {
    type Error = ();

    fn measure(&mut self, _: u32, _: u64, cap: Duration) -> Result<Repeat, ()> {
        self.ran += 1;
        self.caps.push(cap);
        self.clock.set(self.clock.get() + 5.0);
        Ok((self.repeat)())
    }

    fn judge(&mut self, _: u32) -> Result<Decision, ()> {
        Ok((self.decision)())
    }
}

/// A decision that settles nothing: no estimate, no interval.
fn undecided() -> Decision {
    crate::compare::error_decision("simulated")
}

/// A decision whose interval lies wholly under the 3% threshold.
fn clearly_fine() -> Decision {
    let mut d = crate::compare::error_decision("simulated");
    d.drop_pct = Some(0.0);
    d.interval_pct = Some((-1.0, 1.0));
    d
}

#[test]
fn a_confirm_step_stops_once_clearly_passing_and_runs_its_size_for_a_drop() {
    let mut n = night();
    let size = n.confirm_size(0);
    assert_eq!(
        size, n.policy.min_confirm,
        "a 1% case needs few fresh processes"
    );
    let mut slow = Steady {
        drop_pct: 6.0,
        ran: 0,
    };
    assert_eq!(n.sample(0, &mut slow, || 0.0), Ok(Stop::Suspect));
    assert_eq!(n.first_repeats(0), 2);
    // Fresh processes clearly under the threshold: stopped at the minimum.
    let mut fine = Steady {
        drop_pct: -1.0,
        ran: 0,
    };
    assert_eq!(n.confirm(0, &mut fine, || 0.0), Ok(2));
    assert_eq!(fine.ran, 2);
    assert!(n.confirm_futile(0) && n.confirm_complete(0));
    assert_eq!(n.case_record(0).stop, Stop::Suspect);
    // A drop that stays: every fresh process it asked for.
    assert_eq!(n.sample(1, &mut slow, || 0.0), Ok(Stop::Suspect));
    let mut still = Steady {
        drop_pct: 6.0,
        ran: 0,
    };
    assert_eq!(n.confirm(1, &mut still, || 0.0), Ok(size));
    assert!(!n.confirm_futile(1) && n.confirm_complete(1));
}

#[test]
fn a_traced_repeat_waits_for_room_in_the_budget_and_is_charged() {
    let mut n = night();
    assert!(n.may_trace(0, 0.0));
    n.charge(0, 4.5);
    assert!((n.case_record(0).time_s - 4.5).abs() < 1e-9);
    // 590 s in: a 5-second repeat (6.3 s with its margin) no longer fits in the budget,
    // though it would in the grace.
    let late = night();
    assert!(!late.may_trace(0, 590.0));
    assert!(late.can_start(0, 590.0));
}

#[test]
fn a_decisive_case_stops_at_the_minimum_and_its_record_is_complete() {
    let mut n = night_of(0.03);
    let planned = n.plan.cases[0].repeats;
    assert!(
        planned > 2,
        "the plan asks for more than the minimum: {planned}"
    );
    let clock = Cell::new(0.0);
    let mut case = Clocked::new(&clock, clearly_fine);
    assert_eq!(n.sample(0, &mut case, || clock.get()), Ok(Stop::Decisive));
    assert_eq!(case.ran, n.policy.min_repeats);
    let r = n.case_record(0);
    assert_eq!((r.first_repeats, r.confirm_repeats), (2, 0));
    assert!((r.time_s - 10.0).abs() < 1e-9, "{r:?}");
    assert!(r.complete());
    assert!(!n.record.stopped && n.record.not_started.is_empty());
}

#[test]
fn a_night_the_budget_ends_early_cuts_a_case_short_and_names_the_one_never_started() {
    let mut n = night_of(0.03);
    let planned = n.plan.cases[0].repeats;
    assert!(
        planned > 2,
        "the plan asks for more than the minimum: {planned}"
    );
    // 618 s into a 600-second budget with 30 s of grace: the minimum still runs in the grace.
    let clock = Cell::new(618.0);
    let mut first = Clocked::new(&clock, undecided);
    assert_eq!(n.sample(0, &mut first, || clock.get()), Ok(Stop::Budget));
    assert_eq!(first.ran, 2, "the minimum, and nothing past the budget");
    // Each repeat's harness may run only what is left of the grace.
    assert_eq!(
        first.caps,
        vec![Duration::from_secs(12), Duration::from_secs(7)]
    );
    let cut = n.case_record(0);
    assert_eq!(cut.stop, Stop::Budget);
    assert!(!cut.complete(), "a case cut short never moves its baseline");
    assert_eq!(cut.first_repeats, 2);
    assert!((cut.time_s - 10.0).abs() < 1e-9, "{cut:?}");
    // 628 s in, one more 5-second process would end past the grace: never started.
    let mut second = Clocked::new(&clock, undecided);
    assert_eq!(
        n.sample(1, &mut second, || clock.get()),
        Ok(Stop::NotStarted)
    );
    assert_eq!(second.ran, 0);
    let never = n.case_record(1);
    assert_eq!((never.stop, never.first_repeats), (Stop::NotStarted, 0));
    assert!(!never.complete());
    assert!(n.record.stopped);
    assert_eq!(n.record.not_started, vec!["b".to_owned()]);
    n.finish(628.0);
    assert!((n.record.used_s - 628.0).abs() < 1e-9);
    // Nothing more may start, traced repeats included.
    assert!(!n.can_start(0, clock.get()) && !n.may_trace(0, clock.get()));
    assert_eq!(n.timeout_cap(640.0), Duration::ZERO);
}

#[test]
fn a_repeat_cut_at_the_end_of_the_grace_stops_the_night_and_a_failed_one_is_an_error() {
    let mut n = night();
    let clock = Cell::new(0.0);
    let mut cut = Clocked::new(&clock, undecided);
    cut.repeat = || Repeat::Cut;
    assert_eq!(n.sample(0, &mut cut, || clock.get()), Ok(Stop::Budget));
    assert_eq!(cut.ran, 1);
    assert_eq!(
        n.case_record(0).first_repeats,
        0,
        "a cut repeat is discarded"
    );
    assert!(n.record.stopped && n.record.not_started.is_empty());
    let mut failing = Clocked::new(&clock, undecided);
    failing.repeat = || Repeat::Failed;
    assert_eq!(n.sample(1, &mut failing, || clock.get()), Ok(Stop::Error));
    assert_eq!(failing.ran, 1);
    assert!(
        n.case_record(1).complete(),
        "an error is judged, not cut short"
    );
}

#[test]
fn a_confirm_step_the_budget_cuts_short_records_the_case_as_cut_short() {
    let mut n = night();
    let mut slow = Steady {
        drop_pct: 6.0,
        ran: 0,
    };
    assert_eq!(n.sample(0, &mut slow, || 0.0), Ok(Stop::Suspect));
    let size = n.confirm_size(0);
    // Past the budget (the confirm step never draws on the grace): no fresh process starts.
    let mut still = Steady {
        drop_pct: 6.0,
        ran: 0,
    };
    assert_eq!(n.confirm(0, &mut still, || 601.0), Ok(0));
    assert_eq!(still.ran, 0);
    assert!(size > 0 && !n.confirm_complete(0));
    let r = n.case_record(0);
    assert_eq!((r.stop, r.confirm_repeats), (Stop::Budget, 0));
    assert!(!r.complete());
}

#[test]
fn a_case_recovered_from_a_journal_keeps_its_sampling() {
    let mut n = night();
    n.recovered(
        0,
        super::Recovered {
            repeats: 5,
            first: Some(2),
            time_s: 25.0,
            stop: Some(Stop::Suspect),
        },
    );
    let c = n.case(0);
    assert_eq!((c.done, c.first, c.confirmed), (5, 2, 3));
    // Journalled without a budget: its configured sampling, complete.
    n.recovered(
        1,
        super::Recovered {
            repeats: 3,
            first: None,
            time_s: 0.0,
            stop: None,
        },
    );
    let r = n.case_record(1);
    assert_eq!(
        (r.stop, r.first_repeats, r.confirm_repeats),
        (Stop::Planned, 3, 0)
    );
}

#[test]
fn a_case_with_its_own_threshold_is_sampled_and_confirmed_against_it() {
    // Two 1%-noise cases; the second's suite gates at 1%, the night's policy at 3%.
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let strict = CaseInput {
        max_drop_pct: Some(1.0),
        ..input("strict", 0.01)
    };
    let mut n = NightState::of(&[input("gate", 0.01), strict], policy, 30.0, 12);
    // A 1.5% drop: clearly passing at 3%, a suspect at 1%.
    let mut slow = Steady {
        drop_pct: 1.5,
        ran: 0,
    };
    assert_eq!(n.sample(0, &mut slow, || 0.0), Ok(Stop::Decisive));
    assert_eq!(n.sample(1, &mut slow, || 0.0), Ok(Stop::Suspect));
    // Its confirm step is sized for a drop beyond 1%, and its fresh processes at 1.5% are not
    // stopped as clearly under the threshold.
    assert!(n.confirm_size(1) > n.confirm_size(0), "{n:?}");
    let size = n.confirm_size(1);
    let mut still = Steady {
        drop_pct: 1.5,
        ran: 0,
    };
    assert_eq!(n.confirm(1, &mut still, || 0.0), Ok(size));
    assert!(!n.confirm_futile(1));
    // The suspect's value is reckoned against its own threshold too.
    let d = {
        let mut d = crate::compare::error_decision("simulated");
        d.drop_pct = Some(1.5);
        d
    };
    assert_eq!(n.suspect(1, 1, &d).max_drop_pct, Some(1.0));
}
