//! Tests of `decide`.

use proptest::prelude::*;

use super::estimate::huber_beta;
use super::*;

/// Repeats at the given typical step times (ms), `steps` each, with a small deterministic
/// step-to-step wobble (+-0.2%) so medians and MADs are non-trivial.
fn repeats(levels: &[f64], steps: usize) -> Vec<Vec<f64>> {
    levels
        .iter()
        .map(|&l| {
            (0..steps)
                .map(|j| l * (1.0 + 0.002 * (((j * 7919) % 11) as f64 - 5.0) / 5.0))
                .collect()
        })
        .collect()
}

fn ev(r: &[Vec<f64>], floor_ms: f64) -> Evidence<'_> {
    Evidence {
        repeats_ms: r,
        floor_ms,
    }
}

fn judge_pair(base: &[Vec<f64>], cur: &[Vec<f64>], history: &[Vec<Vec<f64>>]) -> Decision {
    let history: Vec<Evidence<'_>> = history.iter().map(|h| ev(h, 3.0)).collect();
    decide(
        Some(&ev(base, 3.0)),
        &ev(cur, 3.0),
        &history,
        &Policy::default(),
        100,
        None,
    )
}

fn scaled(r: &[Vec<f64>], factor: f64) -> Vec<Vec<f64>> {
    r.iter()
        .map(|rep| rep.iter().map(|v| v * factor).collect())
        .collect()
}

#[test]
fn zero_variance_identical_samples_pass() {
    let same = vec![vec![6.0; 100]; 3];
    let d = judge_pair(&same, &same, &[]);
    assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
    assert_eq!(d.drop_pct, Some(0.0));
    // The noise floor keeps the test defined: a finite resolution, not NaN.
    assert!(d.resolution_pct.is_some_and(|r| r.is_finite() && r > 0.0));
    assert!((d.noise_pct.unwrap() - 0.25).abs() < 1e-9);
}

#[test]
fn zero_variance_ten_percent_slower_regresses_and_faster_improves() {
    let base = vec![vec![6.0; 100]; 3];
    let slow = scaled(&base, 1.1);
    let d = judge_pair(&base, &slow, &[]);
    assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    assert!((d.drop_pct.unwrap() - 100.0 * (1.0 - 1.0 / 1.1)).abs() < 1e-9);
    assert!(d.interval_pct.unwrap().0 > 0.0);
    assert!(d.p_value.unwrap() < 1e-4);
    assert!(d.suspect);
    let fast = scaled(&base, 1.0 / 1.1);
    let d = judge_pair(&base, &fast, &[]);
    assert_eq!(d.verdict, Verdict::Improved, "{:?}", d.reasons);
    assert!(d.drop_pct.unwrap() < -3.0);
    assert!(!d.suspect);
}

#[test]
fn verdicts_from_noisy_repeats() {
    // Per-process offsets of about 1%; history gives the noise estimate its degrees of
    // freedom. Table: (current levels, expected verdict).
    let base = repeats(&[6.00, 6.06, 5.95], 100);
    let history: Vec<Vec<Vec<f64>>> = [
        [6.03, 5.97, 6.01],
        [5.94, 6.05, 6.00],
        [6.02, 6.07, 5.96],
        [5.99, 5.93, 6.04],
    ]
    .iter()
    .map(|l| repeats(l, 100))
    .collect();
    let table: [(&[f64], Verdict); 4] = [
        (&[6.02, 5.98, 6.05], Verdict::Pass),
        (&[6.60, 6.66, 6.55], Verdict::Regressed),
        (&[5.40, 5.45, 5.36], Verdict::Improved),
        // One process that started slow and stayed slow is not a regression of the code.
        (&[6.01, 6.48, 5.97], Verdict::Pass),
    ];
    for (levels, want) in table {
        let d = judge_pair(&base, &repeats(levels, 100), &history);
        assert_eq!(d.verdict, want, "{levels:?}: {:?}", d.reasons);
        assert_eq!(d.repeats_then, 15);
        assert_eq!(d.n_now, 300);
    }
}

#[test]
fn a_drop_within_large_noise_is_inconclusive_with_numbers() {
    let base = repeats(&[6.0, 6.6, 5.5], 100);
    let cur = repeats(&[6.5, 7.1, 6.0], 100);
    let d = judge_pair(&base, &cur, &[]);
    assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
    assert!(d.drop_pct.unwrap() > 3.0);
    assert!(d.resolution_pct.unwrap() > d.drop_pct.unwrap());
    assert!(d.reasons.iter().any(|r| r.contains("could be confirmed")));
    assert!(d.suspect, "a drop beyond the threshold is worth confirming");
}

#[test]
fn one_repeat_each_side_cannot_measure_process_noise() {
    let base = vec![vec![6.0]];
    let cur = vec![vec![6.6]];
    let d = judge_pair(&base, &cur, &[]);
    assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
    assert!(d.p_value.is_none() && d.interval_pct.is_none());
    assert!(d.reasons.iter().any(|r| r.contains("one repeat")));
    assert_eq!((d.n_now, d.repeats_now), (1, 1));
    // Unchanged with n = 1: a pass (the practical level alone clears it).
    assert_eq!(judge_pair(&base, &base, &[]).verdict, Verdict::Pass);
    // History supplies the degrees of freedom a single repeat lacks.
    let history = vec![
        repeats(&[6.01, 5.99, 6.0], 20),
        repeats(&[5.98, 6.02, 6.0], 20),
    ];
    let d = judge_pair(&base, &cur, &history);
    assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
}

#[test]
fn changed_floor_compares_step_times_and_says_so() {
    let base = repeats(&[6.0, 6.01, 5.99], 50);
    let history: Vec<Evidence<'_>> = Vec::new();
    let policy = Policy::default();
    let d = decide(
        Some(&ev(&base, 3.0)),
        &ev(&base, 3.3),
        &history,
        &policy,
        10,
        None,
    );
    assert!(d.floor_changed);
    assert_eq!(
        d.verdict,
        Verdict::Pass,
        "same step times pass despite a 10% floor change"
    );
    assert!(d.reasons.iter().any(|r| r.contains("floor changed")));
    let slow = scaled(&base, 1.1);
    let d = decide(
        Some(&ev(&base, 3.0)),
        &ev(&slow, 3.3),
        &history,
        &policy,
        10,
        None,
    );
    assert!(d.floor_changed);
    assert_eq!(d.verdict, Verdict::Regressed);
    // A floor within the tolerance is not a change.
    let d = decide(
        Some(&ev(&base, 3.0)),
        &ev(&base, 3.002),
        &history,
        &policy,
        10,
        None,
    );
    assert!(!d.floor_changed);
}

#[test]
fn utilisation_above_one_is_invalid_regardless_of_baseline() {
    let cur = repeats(&[2.0, 2.0, 2.0], 10);
    let base = repeats(&[6.0, 6.0, 6.0], 10);
    for baseline in [None, Some(ev(&base, 3.0))] {
        let d = decide(
            baseline.as_ref(),
            &ev(&cur, 3.0),
            &[],
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Invalid);
        assert!(d.util_now.unwrap() > 1.0);
    }
    for floor in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        let d = decide(None, &ev(&base, floor), &[], &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::Invalid, "floor {floor}");
    }
}

#[test]
fn unusable_samples_are_errors() {
    let table: [Vec<Vec<f64>>; 4] = [
        vec![],
        vec![vec![]],
        vec![vec![6.0, f64::NAN]],
        vec![vec![6.0], vec![0.0]],
    ];
    for cur in table {
        let d = decide(None, &ev(&cur, 3.0), &[], &Policy::default(), 1, None);
        assert_eq!(d.verdict, Verdict::Error, "{cur:?}");
    }
    let d = error_decision("harness exited with status 1");
    assert_eq!(d.verdict, Verdict::Error);
    assert!(d.reasons[0].contains("status 1"));
}

#[test]
fn gpu_guard_makes_any_case_inconclusive() {
    let base = vec![vec![6.0; 100]; 3];
    let slow = scaled(&base, 1.2);
    let guard = Some("power cap 450 W of 700 W");
    for baseline in [None, Some(ev(&base, 3.0))] {
        let d = decide(
            baseline.as_ref(),
            &ev(&slow, 3.0),
            &[],
            &Policy::default(),
            1,
            guard,
        );
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.reasons[0].contains("power cap 450 W"));
        assert!(!d.suspect);
    }
}

#[test]
fn new_and_missing() {
    let cur = repeats(&[6.0, 6.1, 5.9], 10);
    let d = decide(None, &ev(&cur, 3.0), &[], &Policy::default(), 1, None);
    assert_eq!(d.verdict, Verdict::New);
    assert!((d.util_now.unwrap() - 0.5).abs() < 0.01);
    let m = missing_decision(Some(&ev(&cur, 3.0)));
    assert_eq!(m.verdict, Verdict::Missing);
    assert_eq!(m.repeats_then, 3);
    assert_eq!(missing_decision(None).verdict, Verdict::Missing);
}

#[test]
fn decisions_round_trip_through_json() {
    let base = vec![vec![6.0; 10]; 3];
    let d = judge_pair(&base, &scaled(&base, 1.1), &[]);
    let text = serde_json::to_string(&d).unwrap();
    let back: Decision = serde_json::from_str(&text).unwrap();
    // serde_json may differ in the last bit of a float; everything else is exact.
    assert_eq!(
        (back.verdict, &back.reasons, back.suspect),
        (d.verdict, &d.reasons, d.suspect)
    );
    assert!((back.drop_pct.unwrap() - d.drop_pct.unwrap()).abs() < 1e-12);
    assert!(text.contains(r#""verdict":"regressed""#));
}

#[test]
fn huber_beta_matches_the_gaussian_constant() {
    assert!((huber_beta(1.5) - 0.778_48).abs() < 1e-4);
    assert!((huber_beta(40.0) - 1.0).abs() < 1e-12);
}

fn rank(v: Verdict) -> u8 {
    match v {
        Verdict::Improved => 0,
        Verdict::Pass => 1,
        Verdict::Inconclusive => 2,
        Verdict::Regressed => 3,
        other => panic!("unexpected verdict {other}"),
    }
}

proptest! {
    #[test]
    fn a_larger_slowdown_never_yields_a_better_verdict(
        levels in prop::collection::vec(5.0f64..7.0, 1..5),
        offsets in prop::collection::vec(-0.05f64..0.05, 1..5),
        a in 0.8f64..1.3,
        b in 0.8f64..1.3,
    ) {
        let base = repeats(&levels, 7);
        let cur: Vec<f64> = offsets.iter().map(|o| 6.0 * (1.0 + o)).collect();
        let cur = repeats(&cur, 7);
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let d_lo = judge_pair(&base, &scaled(&cur, lo), &[]);
        let d_hi = judge_pair(&base, &scaled(&cur, hi), &[]);
        prop_assert!(rank(d_lo.verdict) <= rank(d_hi.verdict), "{:?} then {:?}", d_lo, d_hi);
        prop_assert!(d_lo.drop_pct <= d_hi.drop_pct);
    }

    #[test]
    fn a_regression_read_backwards_is_an_improvement(
        base in prop::collection::vec(5.0f64..7.0, 2..5),
        factor in 0.7f64..1.4,
    ) {
        let a = repeats(&base, 9);
        let shifted: Vec<f64> = base.iter().rev().map(|l| l * factor).collect();
        let b = repeats(&shifted, 9);
        let forward = judge_pair(&a, &b, &[]);
        let backward = judge_pair(&b, &a, &[]);
        if forward.verdict == Verdict::Regressed {
            prop_assert_eq!(backward.verdict, Verdict::Improved);
        }
        prop_assert!((forward.p_value.unwrap() - backward.p_value.unwrap()).abs() < 1e-9);
    }
}

#[test]
fn an_interval_reads_as_drops_and_rises_never_a_negative_drop() {
    assert_eq!(change_range(2.06, 7.94), "between a drop of 2.1% and 7.9%");
    assert_eq!(
        change_range(-154.1, 79.7),
        "between a rise of 154.1% and a drop of 79.7%"
    );
    assert_eq!(change_range(-5.5, -1.0), "between a rise of 1.0% and 5.5%");
    assert_eq!(change_range(-0.0, 3.0), "between a drop of 0.0% and 3.0%");
}
