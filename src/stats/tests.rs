//! Tests of `stats`.

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};

use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Normal noise around `center` with relative standard deviation `rel_sd`, seeded.
fn noisy(seed: u64, n: usize, center: f64, rel_sd: f64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let dist = Normal::new(center, center * rel_sd).expect("valid normal");
    (0..n).map(|_| dist.sample(&mut rng).max(1e-6)).collect()
}

#[test]
fn median_table() {
    let cases: [(&[f64], Option<f64>); 6] = [
        (&[], None),
        (&[5.0], Some(5.0)),
        (&[1.0, 3.0], Some(2.0)),
        (&[3.0, 1.0, 2.0], Some(2.0)),
        (&[4.0, 1.0, 3.0, 2.0], Some(2.5)),
        (&[7.0, 7.0, 7.0], Some(7.0)),
    ];
    for (xs, expected) in cases {
        assert_eq!(median(xs), expected, "{xs:?}");
    }
}

#[test]
fn quantile_is_hyndman_fan_type_7() {
    // Reference values from numpy.percentile (linear), which is type 7.
    let ten: Vec<f64> = (1..=10).map(f64::from).collect();
    let cases: [(&[f64], f64, f64); 9] = [
        (&ten, 0.9, 9.1),
        (&ten, 0.5, 5.5),
        (&ten, 0.0, 1.0),
        (&ten, 1.0, 10.0),
        (&ten, 0.99, 9.91),
        (&[1.0, 2.0, 3.0, 4.0], 0.25, 1.75),
        (&[5.0], 0.9, 5.0),
        (&ten, -1.0, 1.0),
        (&ten, 2.0, 10.0),
    ];
    for (xs, q, expected) in cases {
        assert!(close(quantile(xs, q), expected), "q{q} of {xs:?}");
    }
    assert!(quantile(&[], 0.5).is_nan());
    assert!(quantile(&ten, f64::NAN).is_nan());
}

#[test]
fn summarise_known_values() {
    let s = summarise(&[vec![3.0, 1.0, 5.0, 2.0, 4.0]]).expect("samples");
    assert_eq!((s.n, s.repeats), (5, 1));
    assert!(close(s.median_ms, 3.0));
    assert!(close(s.mean_ms, 3.0));
    assert!(close(s.p90_ms, 4.6));
    assert!(close(s.p99_ms, 4.96));
    assert_eq!((s.min_ms, s.max_ms), (1.0, 5.0));
    assert!(close(s.mad_ms, 1.0));
    assert!(close(s.cv, 2.5f64.sqrt() / 3.0));
    assert_eq!(s.repeat_medians_ms, vec![3.0]);
    assert!(close(s.repeat_spread_pct, 0.0));
}

#[test]
fn summarise_pools_repeats_and_skips_empty_ones() {
    let s = summarise(&[vec![10.0, 10.0], vec![], vec![11.0, 11.0, 11.0], vec![12.0]])
        .expect("samples");
    assert_eq!((s.n, s.repeats), (6, 3));
    assert_eq!(s.repeat_medians_ms, vec![10.0, 11.0, 12.0]);
    assert!(close(s.median_ms, 11.0));
    assert!(close(s.repeat_spread_pct, 2.0 / 11.0 * 100.0));
}

#[test]
fn summarise_edge_cases() {
    assert_eq!(summarise(&[]), None);
    assert_eq!(summarise(&[vec![], vec![]]), None);

    let one = summarise(&[vec![6.02]]).expect("one sample");
    assert_eq!(one.n, 1);
    for v in [
        one.median_ms,
        one.p90_ms,
        one.p99_ms,
        one.mean_ms,
        one.min_ms,
        one.max_ms,
    ] {
        assert!(close(v, 6.02));
    }
    assert_eq!((one.mad_ms, one.cv, one.repeat_spread_pct), (0.0, 0.0, 0.0));

    let flat = summarise(&[vec![2.5; 50], vec![2.5; 50]]).expect("samples");
    assert_eq!(
        (flat.mad_ms, flat.cv, flat.repeat_spread_pct),
        (0.0, 0.0, 0.0)
    );
    assert_eq!((flat.median_ms, flat.p99_ms), (2.5, 2.5));
}

#[test]
fn summary_serialises_with_unit_names() {
    let s = summarise(&[vec![1.0, 2.0]]).expect("samples");
    let json = serde_json::to_value(&s).expect("serialise");
    assert!(json.get("median_ms").is_some() && json.get("repeat_spread_pct").is_some());
    let back: Summary = serde_json::from_value(json).expect("deserialise");
    assert_eq!(back, s);
}

#[test]
fn slow_start_is_flagged() {
    // 100 steady steps around 6 ms (0.5% noise) after 10 steps at 7 ms.
    let mut steps = vec![7.0; 10];
    steps.extend(noisy(1, 90, 6.0, 0.005));
    let warnings = steady_state_warnings(&[noisy(2, 100, 6.0, 0.005), steps]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    match &warnings[0] {
        SteadyStateWarning::SlowStart {
            repeat,
            first_median_ms,
            rest_median_ms,
        } => {
            assert_eq!(*repeat, 2);
            assert!(close(*first_median_ms, 7.0));
            assert!((rest_median_ms - 6.0).abs() < 0.05);
        }
        other @ SteadyStateWarning::ProcessVariance { .. } => {
            panic!("expected SlowStart, got {other:?}")
        }
    }
    let text = warnings[0].to_string();
    assert!(
        text.contains("repeat 2") && text.contains("warmup_steps"),
        "{text}"
    );
}

#[test]
fn slow_start_table() {
    let steady = |n: usize| vec![6.0; n];
    let with_head = |head: &[f64], n: usize| {
        let mut v = head.to_vec();
        v.extend(vec![6.0; n - head.len()]);
        v
    };
    let cases: Vec<(&str, Vec<f64>, bool)> = vec![
        ("steady, zero variance", steady(100), false),
        (
            "too few steps to judge",
            with_head(&[9.0, 9.0, 9.0], 9),
            false,
        ),
        (
            "zero variance, 10% slow head",
            with_head(&[6.6; 10], 100),
            true,
        ),
        (
            "zero variance, 3% slow head",
            with_head(&[6.18; 10], 100),
            false,
        ),
        (
            "one hiccup in the head",
            with_head(&[9.0, 6.0, 6.0], 20),
            false,
        ),
        ("two of three slow", with_head(&[9.0, 9.0, 6.0], 20), true),
        (
            "slow steps later, not at the start",
            {
                let mut v = steady(50);
                v.extend([9.0; 5]);
                v
            },
            false,
        ),
    ];
    for (name, steps, expected) in cases {
        assert_eq!(slow_start(&steps).is_some(), expected, "{name}");
    }
}

#[test]
fn slow_start_stays_quiet_within_the_noise() {
    // 10% relative noise: a 6% slow head is not distinguishable from it.
    let mut steps: Vec<f64> = noisy(7, 10, 6.36, 0.10);
    steps.extend(noisy(8, 90, 6.0, 0.10));
    assert_eq!(slow_start(&steps), None);
}

#[test]
fn process_variance_is_flagged_when_repeats_disagree() {
    // Medians 6.0, 6.18, 6.0 with 0.3% noise inside each repeat.
    let repeats = vec![
        noisy(10, 100, 6.0, 0.003),
        noisy(11, 100, 6.18, 0.003),
        noisy(12, 100, 6.0, 0.003),
    ];
    let warnings = steady_state_warnings(&repeats);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    match &warnings[0] {
        SteadyStateWarning::ProcessVariance {
            between_pct,
            within_pct,
        } => {
            assert!((between_pct - 3.0).abs() < 0.5, "{between_pct}");
            assert!(*within_pct < 0.2, "{within_pct}");
        }
        other @ SteadyStateWarning::SlowStart { .. } => {
            panic!("expected ProcessVariance, got {other:?}")
        }
    }
    assert!(warnings[0].to_string().contains("repeats"));
}

#[test]
fn process_variance_table() {
    let cases: Vec<(&str, Vec<Vec<f64>>, bool)> = vec![
        ("single repeat", vec![vec![6.0; 100]], false),
        ("all equal", vec![vec![6.0; 100]; 3], false),
        (
            "zero within noise, 2% apart",
            vec![vec![6.0; 50], vec![6.12; 50]],
            true,
        ),
        (
            "zero within noise, 0.5% apart (below the 1% floor)",
            vec![vec![6.0; 50], vec![6.03; 50]],
            false,
        ),
        (
            "repeats too short to judge",
            vec![vec![6.0, 6.0], vec![7.0, 7.0]],
            false,
        ),
        (
            "5% noise explains a 2% spread",
            vec![
                noisy(20, 30, 6.0, 0.05),
                noisy(21, 30, 6.12, 0.05),
                noisy(22, 30, 6.06, 0.05),
            ],
            false,
        ),
        ("no repeats", vec![], false),
    ];
    for (name, repeats, expected) in cases {
        assert_eq!(process_variance(&repeats).is_some(), expected, "{name}");
    }
}

#[test]
fn noise_alone_rarely_warns() {
    // 300 cases of 3 repeats x 100 steps from one distribution (2% noise): the false-alarm
    // rate must stay near zero, or a grid of cases would warn every night.
    let mut false_alarms = 0;
    for seed in 0..300 {
        let repeats: Vec<Vec<f64>> = (0..3)
            .map(|r| noisy(1000 + seed * 3 + r, 100, 6.0, 0.02))
            .collect();
        false_alarms += steady_state_warnings(&repeats).len();
    }
    assert!(false_alarms <= 1, "{false_alarms} false alarms");
}

#[test]
fn d2_matches_the_table_ends() {
    assert!(close(d2(1), 0.0));
    assert!(close(d2(2), 1.128));
    assert!(close(d2(3), 1.693));
    assert!(close(d2(25), 3.931));
    assert!(close(d2(100), 3.931));
}

fn samples() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(1e-3f64..1e4, 1..60)
}

proptest! {
    #[test]
    fn median_and_quantiles_lie_within_min_and_max(xs in samples(), q in 0.0f64..=1.0) {
        let sorted = sorted_copy(&xs);
        let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
        let m = median(&xs).expect("non-empty");
        prop_assert!(lo <= m && m <= hi);
        let v = quantile(&sorted, q);
        prop_assert!(lo <= v && v <= hi);
    }

    #[test]
    fn quantile_is_monotone_in_q(xs in samples(), a in 0.0f64..=1.0, b in 0.0f64..=1.0) {
        let sorted = sorted_copy(&xs);
        let (q1, q2) = if a <= b { (a, b) } else { (b, a) };
        prop_assert!(quantile(&sorted, q1) <= quantile(&sorted, q2));
    }

    #[test]
    fn summary_is_ordered_and_bounded(repeats in prop::collection::vec(samples(), 1..5)) {
        let s = summarise(&repeats).expect("samples");
        prop_assert!(s.min_ms <= s.median_ms && s.median_ms <= s.p90_ms);
        prop_assert!(s.p90_ms <= s.p99_ms && s.p99_ms <= s.max_ms);
        prop_assert!(s.min_ms <= s.mean_ms * (1.0 + 1e-12) && s.mean_ms <= s.max_ms * (1.0 + 1e-12));
        prop_assert!(s.mad_ms >= 0.0 && s.cv >= 0.0 && s.repeat_spread_pct >= 0.0);
        prop_assert_eq!(s.n, repeats.iter().map(Vec::len).sum::<usize>());
    }

    #[test]
    fn summarise_ignores_sample_order_within_a_repeat(
        (original, shuffled) in prop::collection::vec(samples(), 1..4)
            .prop_flat_map(|repeats| {
                let shuffled: Vec<_> =
                    repeats.iter().map(|r| Just(r.clone()).prop_shuffle()).collect();
                (Just(repeats), shuffled)
            })
    ) {
        prop_assert_eq!(summarise(&original), summarise(&shuffled));
    }
}
