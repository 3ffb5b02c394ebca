//! One load-generator result as utilgate sees it: the schema it came in, the settings that
//! decide comparability, the metrics with their directions, the per-request samples when the
//! file has them, and every field of the file as it was. Pure.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which load generator wrote a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schema {
    /// `vllm bench serve --save-result` (vLLM 0.9 and later: `endpoint_type`, `failed`, ...).
    VllmBenchServe,
    /// vLLM's older `benchmarks/benchmark_serving.py --save-result` (`"request_goodput:"` with
    /// its stray colon, `"request_rate": "inf"` as a string, no `failed`).
    VllmBenchmarkServing,
    /// `python -m sglang.bench_serving --output-file` (JSON lines, `e2e_latency` metrics).
    SglangBenchServing,
    /// `AIPerf`'s profile export (`profile_export_aiperf.json` or `.csv`), `serve/loadgen/aiperf.rs`.
    AiperfProfileExport,
    /// `GuideLLM`'s benchmark report (`benchmarks.json`), one result per benchmark.
    GuidellmBenchmarks,
    /// kubernetes-sigs/inference-perf's summary report (`summary_lifecycle_metrics.json`).
    InferencePerfSummary,
    /// `MLPerf` `LoadGen`'s `mlperf_log_summary.txt`.
    MlperfLoadgenSummary,
}

impl Schema {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Schema::VllmBenchServe => "vllm_bench_serve",
            Schema::VllmBenchmarkServing => "vllm_benchmark_serving",
            Schema::SglangBenchServing => "sglang_bench_serving",
            Schema::AiperfProfileExport => "aiperf_profile_export",
            Schema::GuidellmBenchmarks => "guidellm_benchmarks",
            Schema::InferencePerfSummary => "inference_perf_summary",
            Schema::MlperfLoadgenSummary => "mlperf_loadgen_summary",
        }
    }
}

/// Whether a larger value of a metric is better, worse, or neither (informational).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Latencies: lower is better.
    Lower,
    /// Throughputs: higher is better.
    Higher,
    /// Counts, durations, spreads: recorded, never gated.
    Info,
}

/// The settings of a run that decide whether two results can be compared at all (the seed's
/// benchmark hygiene): a difference in any of them makes a comparison `inconclusive`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Requests per second; `None` is "inf" (all requests sent at once), unless
    /// `rate_unstated`.
    pub request_rate: Option<f64>,
    /// The file states no request rate at all (an `AIPerf` CSV export, an inference-perf summary
    /// over several stages): the rate is unknown, never "inf", and the case is keyed
    /// `rate=unknown` ([`crate::serve::UNSTATED_RATE`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rate_unstated: bool,
    /// Gamma-distribution shape of the arrival times (1 = Poisson).
    pub burstiness: Option<f64>,
    pub max_concurrency: Option<u64>,
    pub num_prompts: Option<u64>,
    pub seed: Option<u64>,
    pub model: Option<String>,
    pub tokenizer: Option<String>,
    pub dataset: Option<String>,
    /// The configured input and output lengths (random datasets), when the file or the suite
    /// states them.
    pub input_len: Option<u64>,
    pub output_len: Option<u64>,
    pub range_ratio: Option<f64>,
    /// Tokens of all prompts sent: with the same dataset and seed it is identical run to run, so
    /// a difference means a different set of prompts (the length distribution changed).
    pub total_input_tokens: Option<u64>,
}

impl Settings {
    /// Fills every setting this result does not state from `from` (what utilgate asked the
    /// load generator for: vLLM writes no seed and no lengths of a random dataset); a stated
    /// setting always stays. The request rate is filled only where the file states no rate at
    /// all (`rate_unstated`), the concurrency limit never: there `None` is a stated
    /// "unlimited", not a gap.
    pub fn fill_unset(&mut self, from: &Settings) {
        fn fill<T: Clone>(mine: &mut Option<T>, theirs: Option<&T>) {
            if mine.is_none() {
                *mine = theirs.cloned();
            }
        }
        if self.rate_unstated {
            self.request_rate = from.request_rate;
            self.rate_unstated = from.rate_unstated;
        }
        fill(&mut self.burstiness, from.burstiness.as_ref());
        fill(&mut self.num_prompts, from.num_prompts.as_ref());
        fill(&mut self.seed, from.seed.as_ref());
        fill(&mut self.model, from.model.as_ref());
        fill(&mut self.tokenizer, from.tokenizer.as_ref());
        fill(&mut self.dataset, from.dataset.as_ref());
        fill(&mut self.input_len, from.input_len.as_ref());
        fill(&mut self.output_len, from.output_len.as_ref());
        fill(&mut self.range_ratio, from.range_ratio.as_ref());
        fill(
            &mut self.total_input_tokens,
            from.total_input_tokens.as_ref(),
        );
    }
}

/// Per-request samples of `--save-detailed` (vLLM) or `--output-details` (`SGLang`), successful
/// requests only, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    pub ttfts_ms: Vec<f64>,
    /// Every inter-token latency of every successful request, request after request.
    pub itls_ms: Vec<f64>,
    /// Each request's time per output token (`sum(itls) / (output_len - 1)`), where the file
    /// has both `itls` and `output_lens`; empty otherwise.
    #[serde(default)]
    pub tpots_ms: Vec<f64>,
    pub input_lens: Vec<u64>,
    pub output_lens: Vec<u64>,
}

/// One result (one line of a JSONL file, or a whole JSON file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeResult {
    pub schema: Schema,
    pub settings: Settings,
    pub completed: u64,
    /// Failed requests as the file states them (`None` where the schema has no such key).
    pub failed: Option<u64>,
    /// Benchmark duration, seconds.
    pub duration_s: f64,
    /// Metrics by their canonical name (`median_ttft_ms`, `p99_itl_ms`, `output_throughput`,
    /// ...): every metric the file holds as a finite number.
    pub metrics: BTreeMap<String, f64>,
    pub samples: Option<Samples>,
    /// Every field of the file exactly as it was (unknown keys included).
    pub fields: serde_json::Map<String, serde_json::Value>,
}

impl ServeResult {
    /// Whether the file states how many requests completed and how long the benchmark ran.
    /// `MLPerf` `LoadGen`'s summary states neither (they are in `mlperf_log_detail.txt`): its
    /// `completed` and `duration_s` read 0 for "not stated", and nothing that needs them (a
    /// tail percentile's bound, Little's law) may take that 0 for a count.
    #[must_use]
    pub fn requests_stated(&self) -> bool {
        self.schema != Schema::MlperfLoadgenSummary
    }

    /// Requests sent that did not complete: the file's `failed`, else prompts minus completed.
    #[must_use]
    pub fn failed_requests(&self) -> u64 {
        let by_count = self
            .settings
            .num_prompts
            .map_or(0, |n| n.saturating_sub(self.completed));
        self.failed.unwrap_or(0).max(by_count)
    }
}

/// The statistics a latency family is reported with, as key prefixes.
const LATENCY_FAMILIES: [&str; 4] = ["ttft", "tpot", "itl", "e2el"];

/// Canonical metric name of a file key, or `None` when the key is not a metric. vLLM writes
/// `{mean,median,std,pNN}_{ttft,tpot,itl,e2el}_ms`; `SGLang` spells end-to-end latency
/// `e2e_latency` and total throughput `total_throughput`; the old vLLM schema spells goodput
/// `request_goodput:`.
#[must_use]
pub fn canonical_metric(key: &str) -> Option<String> {
    let plain = match key {
        "request_goodput:" => return Some("request_goodput".to_owned()),
        "total_throughput" => return Some("total_token_throughput".to_owned()),
        "request_throughput"
        | "request_goodput"
        | "output_throughput"
        | "total_token_throughput"
        | "input_throughput"
        | "max_output_tokens_per_s"
        | "max_concurrent_requests"
        | "concurrency"
        | "rtfx"
        | "accept_length"
        | "completed"
        | "failed"
        | "duration" => Some(key.to_owned()),
        _ => None,
    };
    if plain.is_some() {
        return plain;
    }
    let body = key.strip_suffix("_ms")?;
    let (stat, family) = body.split_once('_')?;
    let family = if family == "e2e_latency" {
        "e2el"
    } else {
        family
    };
    if !LATENCY_FAMILIES.contains(&family) {
        return None;
    }
    let stat_ok = matches!(stat, "mean" | "median" | "std" | "min" | "max")
        || stat.strip_prefix('p').is_some_and(|p| {
            !p.is_empty() && p.parse::<f64>().is_ok_and(|v| (0.0..=100.0).contains(&v))
        });
    stat_ok.then(|| format!("{stat}_{family}_ms"))
}

/// The direction of a canonical metric.
#[must_use]
pub fn direction_of(metric: &str) -> Direction {
    // A latency's extremes are one request each: recorded, never gated.
    let extreme =
        (metric.starts_with("min_") || metric.starts_with("max_")) && metric.ends_with("_ms");
    if metric.starts_with("std_") || extreme {
        return Direction::Info;
    }
    if metric.ends_with("_ms") {
        return Direction::Lower;
    }
    match metric {
        "request_throughput"
        | "request_goodput"
        | "output_throughput"
        | "total_token_throughput"
        | "input_throughput"
        | "max_output_tokens_per_s" => Direction::Higher,
        _ => Direction::Info,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_are_canonical_across_schemas() {
        let table = [
            ("median_ttft_ms", Some("median_ttft_ms")),
            ("p99_itl_ms", Some("p99_itl_ms")),
            ("p99.9_tpot_ms", Some("p99.9_tpot_ms")),
            ("p90_e2e_latency_ms", Some("p90_e2el_ms")),
            ("mean_e2el_ms", Some("mean_e2el_ms")),
            ("request_goodput:", Some("request_goodput")),
            ("total_throughput", Some("total_token_throughput")),
            ("total_input_tokens", None),
            ("p_ttft_ms", None),
            ("p101_ttft_ms", None),
            ("max_tpot_ms", Some("max_tpot_ms")),
            ("mean_foo_ms", None),
            ("date", None),
        ];
        for (key, want) in table {
            assert_eq!(canonical_metric(key).as_deref(), want, "{key}");
        }
    }

    #[test]
    fn unset_settings_are_filled_and_stated_ones_kept() {
        let mut stated = Settings {
            num_prompts: Some(400),
            ..Settings::default()
        };
        stated.fill_unset(&Settings {
            request_rate: Some(4.0),
            num_prompts: Some(200),
            seed: Some(7),
            ..Settings::default()
        });
        assert_eq!(stated.num_prompts, Some(400), "the file wins");
        assert_eq!(stated.request_rate, None, "None is \"inf\", never a gap");
        assert_eq!(stated.seed, Some(7), "the asked-for seed fills the gap");
        assert_eq!(stated.input_len, None);

        // A file that states no rate (an AIPerf CSV) takes the rate it was asked for; from
        // settings that state none either it stays unknown.
        let mut csv = Settings {
            rate_unstated: true,
            ..Settings::default()
        };
        csv.fill_unset(&Settings {
            rate_unstated: true,
            ..Settings::default()
        });
        assert!(csv.rate_unstated);
        csv.fill_unset(&Settings {
            request_rate: Some(4.0),
            ..Settings::default()
        });
        assert_eq!((csv.request_rate, csv.rate_unstated), (Some(4.0), false));
    }

    #[test]
    fn latencies_are_lower_better_throughputs_higher() {
        assert_eq!(direction_of("p99_ttft_ms"), Direction::Lower);
        assert_eq!(direction_of("median_itl_ms"), Direction::Lower);
        assert_eq!(direction_of("std_itl_ms"), Direction::Info);
        assert_eq!(direction_of("output_throughput"), Direction::Higher);
        assert_eq!(direction_of("request_goodput"), Direction::Higher);
        assert_eq!(direction_of("concurrency"), Direction::Info);
        assert_eq!(direction_of("max_ttft_ms"), Direction::Info);
        assert_eq!(direction_of("min_e2el_ms"), Direction::Info);
        assert_eq!(direction_of("max_output_tokens_per_s"), Direction::Higher);
    }
}
