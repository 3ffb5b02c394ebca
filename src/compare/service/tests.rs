//! Tests of the service verdict.

use std::collections::BTreeMap;

use super::*;
use crate::serve::{Samples, Schema};

fn settings() -> Settings {
    Settings {
        request_rate: Some(4.0),
        burstiness: Some(1.0),
        num_prompts: Some(200),
        seed: Some(7),
        model: Some("m".into()),
        tokenizer: Some("m".into()),
        input_len: Some(512),
        output_len: Some(128),
        total_input_tokens: Some(102_400),
        ..Settings::default()
    }
}

/// One repeat with the default gated metrics scaled: `lat` multiplies the latencies, `tput` the
/// throughput; `wobble` is this repeat's small process offset.
fn repeat(lat: f64, tput: f64, wobble: f64) -> ServeResult {
    let mut metrics = BTreeMap::new();
    metrics.insert("median_ttft_ms".to_owned(), 100.0 * lat * wobble);
    metrics.insert("p99_ttft_ms".to_owned(), 300.0 * lat * wobble);
    metrics.insert("median_itl_ms".to_owned(), 20.0 * lat * wobble);
    metrics.insert("output_throughput".to_owned(), 1000.0 * tput / wobble);
    ServeResult {
        schema: Schema::VllmBenchServe,
        settings: settings(),
        completed: 200,
        failed: Some(0),
        duration_s: 60.0,
        metrics,
        samples: None,
        fields: serde_json::Map::new(),
    }
}

fn run(lat: f64, tput: f64) -> Vec<ServeResult> {
    [1.0, 1.004, 0.997]
        .iter()
        .map(|w| repeat(lat, tput, *w))
        .collect()
}

type Change = fn(&mut Settings);

fn judge(base: &[ServeResult], now: &[ServeResult]) -> ServeDecision {
    decide_serve(Some(base), now, &[], &ServePolicy::default(), 1)
}

#[test]
fn unchanged_passes_and_first_run_is_new() {
    let base = run_of(400, 1.0);
    let d = judge(&base, &run_of(400, 1.0));
    assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
    assert_eq!(d.metrics.len(), 4, "400 requests bound their p99");
    let d = judge(&run(1.0, 1.0), &run(1.0, 1.0));
    assert_eq!(d.metrics.len(), 3, "200 requests do not bound their p99");
    let new = decide_serve(None, &base, &[], &ServePolicy::default(), 1);
    assert_eq!(new.verdict, Verdict::New);
}

/// `run` with `requests` sent and completed per repeat.
fn run_of(requests: u64, lat: f64) -> Vec<ServeResult> {
    let mut r = run(lat, 1.0);
    for rep in &mut r {
        rep.completed = requests;
        rep.settings.num_prompts = Some(requests);
        rep.settings.total_input_tokens = Some(requests * 512);
    }
    r
}

#[test]
fn a_thirty_percent_slower_p99_ttft_regresses_naming_the_metric() {
    // 400 requests a repeat bound their p99 (a p99 needs 299 at 95% confidence).
    let base = run_of(400, 1.0);
    let mut now = run_of(400, 1.0);
    for r in &mut now {
        *r.metrics.get_mut("p99_ttft_ms").expect("p99") *= 1.3;
    }
    let d = judge(&base, &now);
    assert_eq!(d.verdict, Verdict::Regressed, "{:?}", d.reasons);
    let m = d
        .metrics
        .iter()
        .find(|m| m.metric == "p99_ttft_ms")
        .expect("p99");
    assert_eq!(m.verdict, Verdict::Regressed);
    assert!((m.worse_pct.expect("worse") - 30.0).abs() < 0.5, "{m:?}");
    assert!(
        d.reasons[0].starts_with("p99_ttft_ms: 30."),
        "{}",
        d.reasons[0]
    );
    let others = d.metrics.iter().filter(|m| m.metric != "p99_ttft_ms");
    assert!(others.into_iter().all(|m| m.verdict == Verdict::Pass));
}

#[test]
fn throughput_is_higher_better() {
    let base = run(1.0, 1.0);
    let d = judge(&base, &run(1.0, 0.8));
    let m = d
        .metrics
        .iter()
        .find(|m| m.metric == "output_throughput")
        .expect("tput");
    assert_eq!(m.verdict, Verdict::Regressed, "{m:?}");
    assert!((m.worse_pct.expect("worse") - 20.0).abs() < 0.5);
    let d = judge(&base, &run(1.0, 1.25));
    assert_eq!(d.verdict, Verdict::Improved, "{:?}", d.reasons);
}

#[test]
fn a_change_within_the_threshold_passes_however_certain() {
    let d = judge(&run(1.0, 1.0), &run(1.03, 1.0));
    assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
}

#[test]
fn changed_settings_are_inconclusive_naming_the_difference() {
    let base = run(1.0, 1.0);
    let table: [(Change, &str); 5] = [
        (|s| s.seed = Some(8), "seed 7 then, 8 now"),
        (|s| s.request_rate = Some(8.0), "request rate 4 then, 8 now"),
        (|s| s.request_rate = None, "request rate 4 then, inf now"),
        (|s| s.num_prompts = Some(100), "prompts 200 then, 100 now"),
        (|s| s.total_input_tokens = Some(9), "input tokens sent"),
    ];
    for (change, want) in table {
        let mut now = run(2.0, 0.5);
        for r in &mut now {
            change(&mut r.settings);
        }
        let d = judge(&base, &now);
        assert_eq!(d.verdict, Verdict::Inconclusive, "{want}");
        assert!(d.reasons[0].contains(want), "{}", d.reasons[0]);
        assert!(d.metrics.is_empty(), "never compared");
    }
}

#[test]
fn failed_requests_are_invalid_with_the_numbers() {
    let mut now = run(1.0, 1.0);
    now[1].completed = 197;
    now[1].failed = Some(3);
    let d = judge(&run(1.0, 1.0), &now);
    assert_eq!(d.verdict, Verdict::Invalid);
    assert!(
        d.reasons[0].contains("repeat 2: 197 of 200 requests completed, 3 failed"),
        "{}",
        d.reasons[0]
    );
    // No `failed` key (old schema): fewer completed than sent is the same thing.
    let mut old = run(1.0, 1.0);
    old[0].failed = None;
    old[0].completed = 150;
    assert_eq!(judge(&run(1.0, 1.0), &old).verdict, Verdict::Invalid);
}

#[test]
fn per_request_samples_feed_the_median_metrics() {
    let with_samples = |scale: f64| -> Vec<ServeResult> {
        let mut r = run(scale, 1.0);
        for (i, rep) in r.iter_mut().enumerate() {
            let ttfts: Vec<f64> = (0..200)
                .map(|j| scale * (90.0 + ((j * 37 + i * 11) % 21) as f64))
                .collect();
            rep.samples = Some(Samples {
                ttfts_ms: ttfts,
                itls_ms: Vec::new(),
                tpots_ms: Vec::new(),
                input_lens: Vec::new(),
                output_lens: Vec::new(),
            });
        }
        r
    };
    let d = judge(&with_samples(1.0), &with_samples(1.0));
    let m = d
        .metrics
        .iter()
        .find(|m| m.metric == "median_ttft_ms")
        .expect("median");
    assert!(m.per_request, "the TTFT samples were used");
    assert!((m.now.expect("now") - 100.0).abs() < 1.0);
    let itl = d
        .metrics
        .iter()
        .find(|m| m.metric == "median_itl_ms")
        .expect("itl");
    assert!(!itl.per_request, "no ITL samples: the file's figure");
    let d = judge(&with_samples(1.0), &with_samples(1.2));
    assert_eq!(d.verdict, Verdict::Regressed);
}

#[test]
fn the_p99_of_a_hundred_requests_is_not_gated_and_says_what_they_support() {
    let base = run_of(100, 1.0);
    let mut now = run_of(100, 1.0);
    for r in &mut now {
        *r.metrics.get_mut("p99_ttft_ms").expect("p99") *= 1.3;
    }
    let d = judge(&base, &now);
    assert_eq!(d.verdict, Verdict::Pass, "{:?}", d.reasons);
    assert!(
        d.metrics.iter().all(|m| m.metric != "p99_ttft_ms"),
        "no point estimate gated"
    );
    let said = d
        .reasons
        .iter()
        .find(|r| r.starts_with("p99_ttft_ms is not gated"))
        .expect("the reason");
    assert!(said.contains("100 requests"), "{said}");
    assert!(said.contains("support at most p97.0"), "{said}");
}

#[test]
fn a_missing_gated_metric_is_named() {
    let mut now = run(1.0, 1.0);
    for r in &mut now {
        r.metrics.remove("p99_ttft_ms");
    }
    let d = judge(&run(1.0, 1.0), &now);
    assert_eq!(d.verdict, Verdict::Pass);
    assert!(
        d.reasons
            .iter()
            .any(|r| r.contains("p99_ttft_ms is not in"))
    );
}

#[test]
fn one_repeat_each_cannot_confirm_a_change() {
    let base = vec![repeat(1.0, 1.0, 1.0)];
    let now = vec![repeat(1.5, 1.0, 1.0)];
    let d = judge(&base, &now);
    assert_eq!(d.verdict, Verdict::Inconclusive, "{:?}", d.reasons);
}
