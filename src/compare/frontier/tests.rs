//! Tests of the sweep verdict on a three-point frontier.

use std::collections::BTreeMap;

use super::*;
use crate::serve::{Samples, Schema};

/// The three points of a rate sweep: (rate, TPOT ms, output tokens/s), the shape of a real
/// vLLM sweep (llm-k8s's Llama 3.3 70B at 4, 16 and inf requests/s on 8 GPUs).
const POINTS: [(f64, f64, f64); 3] = [
    (4.0, 27.35, 673.9),
    (16.0, 31.68, 1354.4),
    (f64::INFINITY, 36.97, 1780.4),
];

fn file(rate: f64, tpot: f64, output: f64, run: u32, tpots: Option<Vec<f64>>) -> SweepFile {
    let mut metrics = BTreeMap::new();
    metrics.insert("median_tpot_ms".to_owned(), tpot);
    metrics.insert("output_throughput".to_owned(), output);
    let settings = Settings {
        request_rate: rate.is_finite().then_some(rate),
        burstiness: Some(1.0),
        num_prompts: Some(200),
        model: Some("m".into()),
        ..Settings::default()
    };
    SweepFile {
        result: ServeResult {
            schema: Schema::VllmBenchmarkServing,
            settings,
            completed: 200,
            failed: Some(0),
            duration_s: 60.0,
            metrics,
            samples: tpots.map(|t| Samples {
                tpots_ms: t,
                ..Samples::default()
            }),
            fields: serde_json::Map::new(),
        },
        point: crate::serve::format_rate(rate.is_finite().then_some(rate)),
        sweep_repeat: run,
        gpus: 8,
    }
}

/// Per-request TPOTs around `tpot` with a 10% spread, deterministic.
fn spread(tpot: f64, seed: usize) -> Vec<f64> {
    (0..200)
        .map(|j| tpot * (0.9 + 0.2 * (((j * 37 + seed * 11) % 101) as f64 / 100.0)))
        .collect()
}

/// One sweep with per-point throughput factors; `runs` repetitions with a small offset each.
fn sweep(factors: [f64; 3], runs: u32, detailed: bool) -> Vec<SweepFile> {
    let wobble = [1.0, 1.003, 0.996, 1.002];
    let mut out = Vec::new();
    for run in 0..runs {
        for (i, (rate, tpot, output)) in POINTS.iter().enumerate() {
            let w = wobble[run as usize % wobble.len()];
            let tpots = detailed.then(|| spread(*tpot * w, i));
            out.push(file(*rate, tpot * w, output * factors[i] / w, run, tpots));
        }
    }
    out
}

fn judge(base: &[SweepFile], now: &[SweepFile]) -> ServeDecision {
    decide_sweep(
        SweepAxis::RequestRate,
        Some(base),
        now,
        &ServePolicy::default(),
        1,
    )
    .0
}

#[test]
fn a_loss_in_the_middle_of_the_curve_is_regressed_at_that_level() {
    for (runs, detailed) in [(3, false), (1, true)] {
        let base = sweep([1.0; 3], runs, detailed);
        let d = judge(&base, &sweep([1.0, 0.92, 1.0], runs, detailed));
        assert_eq!(
            d.verdict,
            Verdict::Regressed,
            "{runs} runs: {:?}",
            d.reasons
        );
        let middle = 1000.0 / 31.68;
        assert!(
            d.reasons[0].starts_with(&level_metric(middle)),
            "the middle level leads: {}",
            d.reasons[0]
        );
        let middle_level = d
            .metrics
            .iter()
            .find(|m| m.metric == level_metric(middle))
            .expect("middle level");
        let worse = middle_level.worse_pct.expect("worse");
        assert!((7.0..9.0).contains(&worse), "about 8%: {worse}");
        for m in d
            .metrics
            .iter()
            .filter(|m| m.metric != level_metric(middle))
        {
            assert_eq!(m.verdict, Verdict::Pass, "{}", m.reason);
        }
    }
}

#[test]
fn improved_extremes_do_not_hide_a_regressed_middle() {
    let base = sweep([1.0; 3], 3, false);
    let d = judge(&base, &sweep([1.06, 0.92, 1.06], 3, false));
    assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    assert!(
        d.reasons.iter().any(|r| r.starts_with("Area between")),
        "{:?}",
        d.reasons
    );
}

#[test]
fn one_percent_noise_per_point_passes() {
    for (runs, detailed) in [(3, false), (1, true), (1, false)] {
        let base = sweep([1.0; 3], runs, detailed);
        let d = judge(&base, &sweep([1.01, 0.99, 1.008], runs, detailed));
        assert_eq!(d.verdict, Verdict::Pass, "{runs} runs: {:?}", d.reasons);
    }
}

#[test]
fn one_run_without_per_request_arrays_cannot_resolve_a_large_change() {
    let base = sweep([1.0; 3], 1, false);
    let d = judge(&base, &sweep([1.0, 0.92, 1.0], 1, false));
    assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
    assert!(d.reasons[0].contains("--save-detailed"), "{}", d.reasons[0]);
}

#[test]
fn a_point_moving_along_the_curve_is_no_loss() {
    // The middle point gives 3% throughput for more interactivity on the same line.
    let base = sweep([1.0; 3], 3, false);
    let mut now = sweep([1.0; 3], 3, false);
    for f in now.iter_mut().filter(|f| f.point == "16") {
        let (a, b) = (POINTS[1], POINTS[2]);
        let (xa, xb) = (1000.0 / a.1, 1000.0 / b.1);
        let slope = (a.2 - b.2) / (xa - xb);
        let output = f.result.metrics["output_throughput"];
        let new_tput = output * 1.03;
        let x = 1000.0 / f.result.metrics["median_tpot_ms"] - (new_tput - output) / slope.abs();
        f.result
            .metrics
            .insert("output_throughput".into(), new_tput);
        f.result.metrics.insert("median_tpot_ms".into(), 1000.0 / x);
    }
    let d = judge(&base, &now);
    assert_ne!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
}

#[test]
fn first_sweep_is_new_and_other_settings_are_not_compared() {
    let (d, figures) = decide_sweep(
        SweepAxis::RequestRate,
        None,
        &sweep([1.0; 3], 1, false),
        &ServePolicy::default(),
        1,
    );
    assert_eq!(d.verdict, Verdict::New);
    assert_eq!(figures.expect("frontier").now.points.len(), 3);
    let base = sweep([1.0; 3], 1, false);
    let mut other = sweep([1.0; 3], 1, false);
    for f in &mut other {
        f.result.settings.burstiness = Some(2.0);
    }
    let d = judge(&base, &other);
    assert_eq!(d.verdict, Verdict::Inconclusive);
    assert!(
        d.reasons[0].contains("burstiness 1 then, 2 now"),
        "{}",
        d.reasons[0]
    );
}

#[test]
fn a_level_tonight_does_not_reach_is_a_regression_of_interactivity() {
    let base = sweep([1.0; 3], 3, false);
    let mut now = sweep([1.0; 3], 3, false);
    for f in now.iter_mut().filter(|f| f.point == "4") {
        let t = f.result.metrics["median_tpot_ms"];
        f.result.metrics.insert("median_tpot_ms".into(), t * 1.25);
    }
    let d = judge(&base, &now);
    assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    assert!(d.reasons[0].contains("not reached"), "{}", d.reasons[0]);
}
