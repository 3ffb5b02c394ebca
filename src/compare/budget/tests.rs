//! Tests of the nightly planner: fitting, naming what does not fit, no history, sequential
//! decisions, and the cost and noise estimates from stored repeats.

use super::*;

fn case(name: &str, noise_pct: f64, start_s: f64, step_ms: f64) -> CaseInput {
    CaseInput {
        name: name.to_owned(),
        steps: 100,
        warmup_steps: 10,
        repeats: 3,
        cost: Some(CaseCost {
            start_s,
            step_s: step_ms / 1000.0,
            warmup_step_s: step_ms / 1000.0,
        }),
        noise: Some(CaseNoise {
            between: noise_pct / 100.0,
            jitter: 0.01,
            reference_repeats: 30,
        }),
        max_drop_pct: None,
    }
}

#[test]
fn a_roomy_budget_resolves_every_case_and_fits() {
    let cases: Vec<CaseInput> = (0..10)
        .map(|i| case(&format!("c{i}"), 1.0 + f64::from(i) * 0.3, 2.0, 10.0))
        .collect();
    let p = plan(&cases, &PlanPolicy::new(600.0, 3.0, 0.01));
    assert!(
        p.cases.iter().all(|c| c.note == PlanNote::Resolved),
        "{p:#?}"
    );
    assert!(p.planned_s + p.reserve_s <= 600.0);
    assert_eq!(p.unresolved().count(), 0);
    assert_eq!(p.budget_to_resolve_all_s, None);
    // Noisier cases need more repeats.
    let r: Vec<u32> = p.cases.iter().map(|c| c.repeats).collect();
    assert!(r.windows(2).all(|w| w[0] <= w[1]), "{r:?}");
    assert!(r[9] > r[0]);
}

#[test]
fn a_tight_budget_names_the_unresolved_cases_and_what_would_resolve_them() {
    let mut cases: Vec<CaseInput> = (0..6)
        .map(|i| case(&format!("quiet{i}"), 1.0, 5.0, 10.0))
        .collect();
    cases.extend((0..6).map(|i| case(&format!("noisy{i}"), 3.0, 5.0, 10.0)));
    let p = plan(&cases, &PlanPolicy::new(200.0, 3.0, 0.01));
    let unresolved: Vec<&str> = p.unresolved().map(|c| c.name.as_str()).collect();
    assert!(!unresolved.is_empty());
    assert!(
        unresolved.iter().all(|n| n.starts_with("noisy")),
        "{unresolved:?}"
    );
    // Quiet cases are cheap to resolve, so they are resolved first.
    assert!(
        p.cases
            .iter()
            .filter(|c| c.name.starts_with("quiet"))
            .all(|c| c.note == PlanNote::Resolved)
    );
    // Everyone still gets the minimum, and the plan stays in the budget.
    assert!(p.cases.iter().all(|c| c.repeats >= 2));
    assert!(p.planned_s <= 200.0 - p.reserve_s + 1e-9, "{}", p.planned_s);
    let more = p.budget_to_resolve_all_s.expect("a longer budget");
    assert!(more > 200.0);
    // And that longer budget does resolve them.
    let q = plan(&cases, &PlanPolicy::new(more * 1.01, 3.0, 0.01));
    assert_eq!(q.unresolved().count(), 0, "{q:#?}");
}

#[test]
fn no_history_uses_the_configured_sampling() {
    let mut fresh = case("fresh", 1.0, 1.0, 1.0);
    fresh.cost = None;
    fresh.noise = None;
    let p = plan(
        &[fresh, case("known", 1.0, 1.0, 1.0)],
        &PlanPolicy::new(600.0, 3.0, 0.01),
    );
    assert_eq!(p.cases[0].note, PlanNote::NoHistory);
    assert_eq!((p.cases[0].steps, p.cases[0].repeats), (100, 3));
    assert_eq!(p.cases[0].estimate_s, None);
    assert_eq!(p.cases[1].note, PlanNote::Resolved);
}

#[test]
fn a_reference_too_noisy_is_named_whatever_the_budget() {
    let mut c = case("wobbly", 20.0, 1.0, 1.0);
    c.noise = Some(CaseNoise {
        between: 0.2,
        jitter: 0.0,
        reference_repeats: 2,
    });
    let p = plan(
        &[c, case("six", 6.0, 1.0, 1.0)],
        &PlanPolicy::new(1e6, 3.0, 0.01),
    );
    // 6% process noise against a 3% threshold needs far more than 30 processes.
    assert_eq!(p.cases[0].note, PlanNote::TooNoisy);
    assert_eq!(p.cases[1].note, PlanNote::TooNoisy);
    assert_eq!(p.unresolved().count(), 2);
    assert_eq!(p.budget_to_resolve_all_s, None);
}

#[test]
fn sequential_decisions() {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    // Too few repeats to judge.
    assert!(!decisive(1, Some((-1.0, 1.0)), Some(0.0), &policy));
    // The interval under the threshold: a decisive pass.
    assert!(decisive(2, Some((-1.0, 2.5)), Some(0.7), &policy));
    // Straddling the threshold: keep measuring.
    assert!(!decisive(2, Some((-1.0, 4.0)), Some(1.5), &policy));
    // Beyond the threshold: a suspect, over to the confirm step.
    assert!(decisive(2, Some((1.0, 9.0)), Some(5.0), &policy));
    assert!(!decisive(3, None, None, &policy));
    assert!(over_budget(631.0, 600.0, 30.0) && !over_budget(629.0, 600.0, 30.0));
    let next = NextRepeat {
        done: 2,
        planned: 5,
        confirm: 9,
        decisive: false,
        suspect: false,
        repeat_s: Some(10.0),
        elapsed_s: 300.0,
        remaining_min_s: 200.0,
    };
    assert!(may_start(&next, &policy, 30.0));
    // A decisive pass stops at the minimum; the plan's end stops an undecided case.
    assert!(!may_start(
        &NextRepeat {
            decisive: true,
            ..next
        },
        &policy,
        30.0
    ));
    assert!(!may_start(&NextRepeat { done: 5, ..next }, &policy, 30.0));
    // A suspect goes on past the plan into its confirm repeats, while the budget holds.
    assert!(may_start(
        &NextRepeat {
            done: 5,
            suspect: true,
            decisive: true,
            ..next
        },
        &policy,
        30.0
    ));
    assert!(!may_start(
        &NextRepeat {
            done: 14,
            suspect: true,
            ..next
        },
        &policy,
        30.0
    ));
    assert!(!may_start(
        &NextRepeat {
            elapsed_s: 395.0,
            suspect: true,
            ..next
        },
        &policy,
        30.0
    ));
    // The minimum is measured even when the estimate says it will not fit, until the grace ends.
    assert!(may_start(
        &NextRepeat {
            done: 1,
            elapsed_s: 610.0,
            ..next
        },
        &policy,
        30.0
    ));
    assert!(!may_start(
        &NextRepeat {
            done: 0,
            elapsed_s: 631.0,
            ..next
        },
        &policy,
        30.0
    ));
}

/// A harness that reports 15 ms steps but wrote them at once (the overhead bench's): its
/// processes took 4 ms each, and that is what a repeat is planned at, not the 30 ms its steps
/// add up to (#29: the planner was 7x pessimistic on such a harness).
#[test]
fn steps_reported_longer_than_the_process_ran_are_planned_at_its_wall_time() {
    let rec = RepeatCost {
        wall_s: 0.004,
        steps_s: 0.030,
        steps: 2,
        warmup_s: 0.0,
        warmup_steps: 0,
    };
    let cost = cost_from_history(&[rec, rec, rec]).expect("a cost");
    assert!(
        (repeat_cost_s(&cost, 2, 0) - 0.004).abs() < 1e-12,
        "{cost:?}"
    );
    // Twice the steps: twice the steps' share of that wall time (all of it here).
    assert!(
        (repeat_cost_s(&cost, 4, 0) - 0.008).abs() < 1e-12,
        "{cost:?}"
    );
    // Warm-up steps scaled alike: 10 ms reported of a 6 ms process with 20 ms of steps.
    let warm = RepeatCost {
        wall_s: 0.006,
        warmup_s: 0.010,
        warmup_steps: 1,
        steps_s: 0.020,
        steps: 2,
    };
    let cost = cost_from_history(&[warm]).expect("a cost");
    assert!(
        (repeat_cost_s(&cost, 2, 1) - 0.006).abs() < 1e-12,
        "{cost:?}"
    );
    assert!((cost.warmup_step_s - 0.002).abs() < 1e-12 && cost.start_s == 0.0);
}

#[test]
fn costs_and_noise_from_stored_repeats() {
    let rec = |wall_s: f64| RepeatCost {
        wall_s,
        steps_s: 1.0,
        steps: 100,
        warmup_s: 0.5,
        warmup_steps: 10,
    };
    let cost = cost_from_history(&[rec(3.5), rec(3.6), rec(30.0)]).expect("a cost");
    assert!((cost.start_s - 2.1).abs() < 1e-9, "{cost:?}");
    assert!((cost.step_s - 0.01).abs() < 1e-12 && (cost.warmup_step_s - 0.05).abs() < 1e-12);
    assert_eq!(cost_from_history(&[]), None);

    let run1 = vec![vec![10.0, 10.1, 9.9], vec![11.0, 11.1, 10.9]];
    let run2 = vec![vec![10.5; 5], vec![10.5; 5]];
    let n = noise_from_history(&[&run1, &run2], 4).expect("noise");
    // Only run1 varies between processes: ln(11/10)^2 / 2 over 2 degrees of freedom.
    let expected = ((11.0f64 / 10.0).ln().powi(2) / 2.0 / 2.0).sqrt();
    assert!((n.between - expected).abs() < 1e-12, "{n:?}");
    assert_eq!(n.reference_repeats, 4);
    assert_eq!(noise_from_history(&[&[vec![1.0]][..]], 1), None);
}

fn noise(pct: f64) -> CaseNoise {
    CaseNoise {
        between: pct / 100.0,
        jitter: 0.0075,
        reference_repeats: 30,
    }
}

fn suspect(index: usize, noise_pct: Option<f64>, drop_pct: f64, repeat_s: f64) -> Suspect {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let n = noise_pct.map(noise);
    Suspect {
        index,
        p_value: Some(0.05),
        drop_pct: Some(drop_pct),
        repeats: 2,
        noise: n,
        steps: 100,
        repeat_s: Some(repeat_s),
        confirm: confirm_size(n.as_ref(), 100, 12, &policy, 30),
        max_drop_pct: None,
    }
}

#[test]
fn suspects_are_confirmed_by_the_detections_their_confirm_step_buys_per_second() {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let suspects = [
        // Unchanged-looking: a 3.2% estimate on a 2% case.
        suspect(0, Some(2.0), 3.2, 5.0),
        // A clear 5% drop on a quiet case.
        suspect(1, Some(1.0), 5.0, 5.0),
        // The same estimate on a case too noisy for its confirm step to settle.
        suspect(2, Some(6.0), 5.0, 5.0),
        // No history: no value, after those with one, lowest p-value first.
        Suspect {
            noise: None,
            p_value: Some(0.2),
            ..suspect(3, None, 5.0, 5.0)
        },
        Suspect {
            noise: None,
            p_value: Some(0.01),
            ..suspect(4, None, 5.0, 5.0)
        },
        // The clear drop again, on a case twice as dear to re-measure.
        suspect(5, Some(1.0), 5.0, 10.0),
    ];
    assert_eq!(
        confirm_order(&suspects, &policy, 30),
        vec![1, 5, 0, 2, 4, 3]
    );
    let v = |i: usize| suspects[i].value(&policy, 30).expect("a value");
    assert!(
        (v(1) / v(5) - 2.0).abs() < 1e-9,
        "half the cost, twice the value"
    );
    assert!(suspects[3].value(&policy, 30).is_none());
    assert!(confirm_order(&[], &policy, 30).is_empty());
}

#[test]
fn the_confirm_step_asks_for_what_the_suspects_noise_needs() {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let size = |pct: f64| confirm_size(Some(&noise(pct)), 100, 12, &policy, 30);
    // A quiet case needs few fresh processes, a noisier one more, up to the cap.
    assert_eq!(size(1.0), policy.min_confirm);
    assert!(
        size(2.5) > size(2.0) && size(3.0) > 12,
        "{} {}",
        size(2.5),
        size(3.0)
    );
    assert_eq!(size(4.0), policy.max_repeats);
    // A reference too noisy for any number of processes: the cap.
    assert_eq!(size(6.0), policy.max_repeats);
    // Without history, the configured size; a confirm step switched off stays off.
    assert_eq!(confirm_size(None, 100, 12, &policy, 30), 12);
    assert_eq!(confirm_size(Some(&noise(3.0)), 100, 0, &policy, 30), 0);
}

#[test]
fn a_clearly_passing_case_stops_early_and_a_drop_does_not() {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let n = noise(2.0);
    // Two processes of 2% noise: a standard error of about 1.45%, so 1.5 of them above an
    // estimate of -0.5% stays under 3%, above one of 1.5% does not.
    assert!(futile(2, Some(-0.5), Some(&n), 100, &policy));
    assert!(!futile(2, Some(1.5), Some(&n), 100, &policy));
    // More processes narrow it.
    assert!(futile(12, Some(1.5), Some(&n), 100, &policy));
    // A drop beyond the threshold is never clearly passing, however many processes.
    assert!(!futile(30, Some(3.5), Some(&n), 100, &policy));
    // Not before the minimum, not without noise or an estimate.
    assert!(!futile(1, Some(-5.0), Some(&n), 100, &policy));
    assert!(!futile(5, Some(-5.0), None, 100, &policy));
    assert!(!futile(5, None, Some(&n), 100, &policy));
    assert!(!futile(5, Some(f64::NAN), Some(&n), 100, &policy));
    assert!(!futile(5, Some(100.0), Some(&n), 100, &policy));
}

#[test]
fn a_repeat_fits_only_with_room_for_its_time_to_vary() {
    let policy = PlanPolicy::new(600.0, 3.0, 0.01);
    let next = NextRepeat {
        done: 3,
        planned: 3,
        confirm: 12,
        decisive: false,
        suspect: true,
        repeat_s: Some(10.0),
        elapsed_s: 589.0,
        remaining_min_s: 0.0,
    };
    // At its median time it would end at 599 s; one start 25% slower ends past the budget.
    assert!(!may_start(&next, &policy, 30.0));
    assert!(may_start(
        &NextRepeat {
            elapsed_s: 587.0,
            ..next
        },
        &policy,
        30.0
    ));
}

#[test]
fn stored_names_are_the_serialised_names() {
    for note in PlanNote::ALL {
        assert_eq!(serde_json::json!(note), note.as_str());
    }
    for stop in Stop::ALL {
        assert_eq!(serde_json::json!(stop), stop.as_str());
    }
}

#[test]
fn a_case_with_its_own_threshold_is_planned_against_it() {
    let policy = PlanPolicy::new(10_000.0, 3.0, 0.01);
    let gate = case("gate", 1.5, 1.0, 10.0);
    let strict = CaseInput {
        max_drop_pct: Some(1.5),
        ..case("strict", 1.5, 1.0, 10.0)
    };
    let loose = CaseInput {
        max_drop_pct: Some(10.0),
        ..case("loose", 1.5, 1.0, 10.0)
    };
    let p = plan(&[gate, strict, loose], &policy);
    let needed: Vec<u32> = p
        .cases
        .iter()
        .map(|c| c.needed_repeats.expect("resolvable"))
        .collect();
    // The same noise needs more processes to resolve 1.5% than 3%, and fewer for 10%.
    assert!(
        needed[1] > needed[0] && needed[2] <= needed[0],
        "{needed:?}"
    );
    assert!(
        p.cases.iter().all(|c| c.note == PlanNote::Resolved),
        "{p:?}"
    );
    // The policy itself is untouched; a case's copy finds five thirds of its threshold.
    let own = policy.for_threshold(Some(1.5));
    assert!((own.detect_drop_pct - 2.5).abs() < 1e-12 && (policy.max_drop_pct - 3.0).abs() < 1e-12);
}
