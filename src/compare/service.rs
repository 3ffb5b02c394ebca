//! The verdict of a service case (DESIGN.md §12): the same two-level rule as a step-time case,
//! applied to each gated service metric, after two checks that come first: a case whose
//! requests failed is `invalid` (its latencies describe the requests that survived), and a case
//! whose load settings differ from the baseline's is `inconclusive` (never compared). Pure.
//!
//! Each gated metric goes through [`decide`] itself, so the statistics are exactly the
//! step-time gate's: the repeats (fresh load-generator runs) are the noise model, the
//! per-request samples count where the file has them (for a median: the TTFTs, or every
//! inter-token latency, of each repeat), and the grid correction spans every gated metric of
//! every case. A metric is handed over as a "cost": latencies as they are, throughputs as their
//! reciprocal, so "slower" always means "worse"; the floor is a nominal constant, because a
//! service metric has no roofline floor (the estimates in `serve::estimate` are informational).

use serde::{Deserialize, Serialize};

use super::{Decision, Evidence, Policy, decide};
use crate::case::Verdict;
use crate::serve::{
    Direction, Frontier, ServeResult, Settings, SweepAxis, direction_of, format_rate,
};

/// The metrics gated unless a suite says otherwise.
pub const DEFAULT_GATED: [&str; 4] = [
    "median_ttft_ms",
    "p99_ttft_ms",
    "median_itl_ms",
    "output_throughput",
];

/// A positive constant standing in for the floor: utilisation against it is meaningless and
/// never shown; it only keeps [`decide`]'s floor checks satisfied and equal on both sides.
const NOMINAL_FLOOR: f64 = 1e-300;

/// The knobs of a service verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServePolicy {
    /// Metrics to gate (canonical names: `p99_ttft_ms`, `output_throughput`, ...).
    pub gated: Vec<String>,
    /// Practical threshold: a metric worse by at most this percentage (latency up, throughput
    /// down) never fails, however certain.
    pub max_change_pct: f64,
    /// The statistical policy of the step-time gate (`family_alpha`, `min_noise_pct`,
    /// estimator); its `max_drop_pct` is replaced by the converted `max_change_pct`.
    pub stats: Policy,
    /// A sweep's interactivity levels (tokens/s per user) its frontier is judged at; empty:
    /// the interactivity of the baseline's frontier points.
    #[serde(default)]
    pub interactivity_levels: Vec<f64>,
}

impl Default for ServePolicy {
    fn default() -> Self {
        ServePolicy {
            gated: DEFAULT_GATED.iter().map(|s| (*s).to_owned()).collect(),
            max_change_pct: 5.0,
            stats: Policy::default(),
            interactivity_levels: Vec::new(),
        }
    }
}

/// The verdict of one gated metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricDecision {
    pub metric: String,
    pub direction: Direction,
    pub verdict: Verdict,
    /// The level of the reference and of this run, in the metric's unit.
    pub then: Option<f64>,
    pub now: Option<f64>,
    /// How much worse, in percent (latency up or throughput down); negative is better.
    pub worse_pct: Option<f64>,
    /// The range of `worse_pct` the noise allows at the grid-corrected level.
    pub interval_pct: Option<(f64, f64)>,
    pub p_value: Option<f64>,
    pub noise_pct: Option<f64>,
    /// Whether per-request samples (rather than one figure per repeat) fed the test.
    pub per_request: bool,
    pub repeats_now: usize,
    pub repeats_then: usize,
    pub reason: String,
}

/// The frontier figures of a decided sweep, for the reports: the two frontiers (means over
/// the sweep's runs) and the levels judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierFigures {
    pub axis: SweepAxis,
    pub then: Option<Frontier>,
    pub now: Frontier,
    /// Interactivity levels judged (tokens/s per user).
    pub levels: Vec<f64>,
    /// The area between the curves over the interactivity both span, percent of the
    /// baseline's: lost where the baseline's lies above, gained where below.
    pub area_lost_pct: Option<f64>,
    pub area_gained_pct: Option<f64>,
}

/// The verdict of a service case with its metrics' decisions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeDecision {
    pub verdict: Verdict,
    pub metrics: Vec<MetricDecision>,
    pub reasons: Vec<String>,
    /// A sweep's frontiers (baseline's and this run's) and the levels judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frontier: Option<FrontierFigures>,
}

/// Why a run's requests make its latencies untrustworthy: any failed request, or fewer
/// completed than sent, in any repeat. `None` when every request of every repeat completed.
#[must_use]
pub fn invalid_reason(repeats: &[ServeResult]) -> Option<String> {
    let bad: Vec<String> = repeats
        .iter()
        .enumerate()
        .filter(|(_, r)| r.failed_requests() > 0)
        .map(|(i, r)| {
            let sent = r
                .settings
                .num_prompts
                .map_or_else(|| "?".to_owned(), |n| n.to_string());
            format!(
                "repeat {}: {} of {sent} requests completed, {} failed",
                i + 1,
                r.completed,
                r.failed_requests()
            )
        })
        .collect();
    (!bad.is_empty()).then(|| {
        format!(
            "Requests failed ({}): the latencies describe only the requests that survived, so \
             the case cannot be judged. Check the server's log and capacity.",
            bad.join("; ")
        )
    })
}

fn show<T: ToString>(v: Option<&T>) -> String {
    v.map_or_else(|| "unset".to_owned(), ToString::to_string)
}

/// The settings that differ between two runs, each as "name X then, Y now".
#[must_use]
pub fn settings_diff(then: &Settings, now: &Settings) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |name: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{name} {a} then, {b} now"));
        }
    };
    check(
        "request rate",
        format_rate(then.request_rate),
        format_rate(now.request_rate),
    );
    check(
        "burstiness",
        show(then.burstiness.as_ref()),
        show(now.burstiness.as_ref()),
    );
    check(
        "max concurrency",
        show(then.max_concurrency.as_ref()),
        show(now.max_concurrency.as_ref()),
    );
    check(
        "prompts",
        show(then.num_prompts.as_ref()),
        show(now.num_prompts.as_ref()),
    );
    check("seed", show(then.seed.as_ref()), show(now.seed.as_ref()));
    check("model", show(then.model.as_ref()), show(now.model.as_ref()));
    check(
        "tokenizer",
        show(then.tokenizer.as_ref()),
        show(now.tokenizer.as_ref()),
    );
    check(
        "dataset",
        show(then.dataset.as_ref()),
        show(now.dataset.as_ref()),
    );
    check(
        "input length",
        show(then.input_len.as_ref()),
        show(now.input_len.as_ref()),
    );
    check(
        "output length",
        show(then.output_len.as_ref()),
        show(now.output_len.as_ref()),
    );
    check(
        "length range ratio",
        show(then.range_ratio.as_ref()),
        show(now.range_ratio.as_ref()),
    );
    check(
        "input tokens sent (the prompts' length distribution)",
        show(then.total_input_tokens.as_ref()),
        show(now.total_input_tokens.as_ref()),
    );
    out
}

/// The evidence of one metric per repeat: the per-request samples where the metric is their
/// median and the file has them, else the file's one figure. In cost orientation.
fn metric_repeats(repeats: &[ServeResult], metric: &str) -> Option<(Vec<Vec<f64>>, bool)> {
    let higher = direction_of(metric) == Direction::Higher;
    let mut per_request = true;
    let mut out = Vec::with_capacity(repeats.len());
    for r in repeats {
        let samples = r.samples.as_ref().and_then(|s| match metric {
            "median_ttft_ms" if !s.ttfts_ms.is_empty() => Some(s.ttfts_ms.clone()),
            "median_itl_ms" if !s.itls_ms.is_empty() => Some(s.itls_ms.clone()),
            _ => None,
        });
        if let Some(s) = samples {
            out.push(s);
            continue;
        }
        per_request = false;
        let v = *r.metrics.get(metric)?;
        out.push(vec![if higher { 1.0 / v } else { v }]);
    }
    let per_request = per_request && !out.is_empty();
    Some((out, per_request))
}

/// A worsening threshold in the metric's terms as the step-time gate's drop threshold: for a
/// latency a rise of x is a "drop" of `1 - 1 / (1 + x)`; for a throughput (reciprocal cost) the
/// drop is the throughput's own fall.
fn drop_threshold(direction: Direction, worse_pct: f64) -> f64 {
    match direction {
        Direction::Higher => worse_pct,
        Direction::Lower | Direction::Info => 100.0 * (1.0 - 1.0 / (1.0 + worse_pct / 100.0)),
    }
}

/// The step-time gate's drop (percent, positive = slower cost) as "percent worse".
fn worse_of(direction: Direction, drop_pct: f64) -> f64 {
    match direction {
        Direction::Higher => drop_pct,
        Direction::Lower | Direction::Info => 100.0 * (1.0 / (1.0 - drop_pct / 100.0) - 1.0),
    }
}

fn level_of(direction: Direction, cost: Option<f64>) -> Option<f64> {
    cost.map(|c| {
        if direction == Direction::Higher {
            1.0 / c
        } else {
            c
        }
    })
}

fn ev(r: &[Vec<f64>]) -> Evidence<'_> {
    Evidence {
        repeats_ms: r,
        floor_ms: NOMINAL_FLOOR,
    }
}

/// Decides one gated metric with the step-time gate's rule.
fn decide_metric(
    metric: &str,
    baseline: Option<&[ServeResult]>,
    current: &[ServeResult],
    history: &[&[ServeResult]],
    policy: &ServePolicy,
    tests_in_grid: usize,
) -> Option<MetricDecision> {
    let direction = direction_of(metric);
    let (now, per_request) = metric_repeats(current, metric)?;
    let base = baseline.and_then(|b| metric_repeats(b, metric));
    let hist: Vec<Vec<Vec<f64>>> = history
        .iter()
        .filter_map(|h| metric_repeats(h, metric).map(|(r, _)| r))
        .collect();
    let hist_ev: Vec<Evidence<'_>> = hist.iter().map(|h| ev(h)).collect();
    let mut stats = policy.stats.clone();
    stats.max_drop_pct = drop_threshold(direction, policy.max_change_pct);
    stats.floor_tolerance_pct = f64::INFINITY;
    let base_ev = base.as_ref().map(|(b, _)| ev(b));
    let d: Decision = decide(
        base_ev.as_ref(),
        &ev(&now),
        &hist_ev,
        &stats,
        tests_in_grid,
        None,
    );
    let mut m = MetricDecision {
        metric: metric.to_owned(),
        direction,
        verdict: d.verdict,
        then: level_of(direction, d.step_then_ms),
        now: level_of(direction, d.step_now_ms),
        worse_pct: d.drop_pct.map(|x| worse_of(direction, x)),
        interval_pct: d
            .interval_pct
            .map(|(a, b)| (worse_of(direction, a), worse_of(direction, b))),
        p_value: d.p_value,
        noise_pct: d.noise_pct,
        per_request,
        repeats_now: d.repeats_now,
        repeats_then: d.repeats_then,
        reason: String::new(),
    };
    m.reason = metric_reason(&m, policy.max_change_pct, d.reasons.first());
    Some(m)
}

fn metric_reason(m: &MetricDecision, threshold: f64, fallback: Option<&String>) -> String {
    let (Some(then), Some(now), Some(worse)) = (m.then, m.now, m.worse_pct) else {
        return match m.verdict {
            Verdict::New => format!(
                "{}: {} recorded (no baseline yet).",
                m.metric,
                m.now
                    .map_or_else(|| "n/a".to_owned(), |v| format!("{v:.4}"))
            ),
            _ => format!("{}: {}", m.metric, fallback.map_or("", String::as_str)),
        };
    };
    let change = if worse >= 0.0 {
        format!("{worse:.1}% worse")
    } else {
        format!("{:.1}% better", -worse)
    };
    let evidence = match (m.interval_pct, m.p_value) {
        (Some((lo, hi)), Some(p)) => format!(
            "the noise allows {lo:+.1}% to {hi:+.1}% (one-sided p = {p:.2e}, {} repeats now, {} \
             in the reference{})",
            m.repeats_now,
            m.repeats_then,
            if m.per_request {
                ", per-request samples"
            } else {
                ""
            }
        ),
        _ => "the noise cannot be measured with one repeat on each side".to_owned(),
    };
    let verdict = match m.verdict {
        Verdict::Regressed => format!("more than the {threshold}% threshold and beyond the noise"),
        Verdict::Inconclusive => {
            format!("more than the {threshold}% threshold, but not beyond the noise")
        }
        Verdict::Improved => "better beyond the threshold and the noise (informational)".to_owned(),
        _ => format!("within the {threshold}% threshold or the noise"),
    };
    format!(
        "{}: {change} ({then:.4} then, {now:.4} now): {verdict}; {evidence}.",
        m.metric
    )
}

/// Decides a service case. `baseline` is the repeats of the pinned good result (None: new),
/// `history` older good results of the same case, `cases_in_grid` the service cases judged
/// together (the grid correction multiplies it by the gated metrics).
#[must_use]
pub fn decide_serve(
    baseline: Option<&[ServeResult]>,
    current: &[ServeResult],
    history: &[&[ServeResult]],
    policy: &ServePolicy,
    cases_in_grid: usize,
) -> ServeDecision {
    let mut out = ServeDecision {
        verdict: Verdict::Pass,
        metrics: Vec::new(),
        reasons: Vec::new(),
        frontier: None,
    };
    let Some(first) = current.first() else {
        out.verdict = Verdict::Error;
        out.reasons
            .push("The case has no result file: the load generator wrote nothing.".to_owned());
        return out;
    };
    if let Some(reason) = invalid_reason(current) {
        out.verdict = Verdict::Invalid;
        out.reasons.push(reason);
        return out;
    }
    let within: Vec<String> = current
        .iter()
        .skip(1)
        .flat_map(|r| settings_diff(&first.settings, &r.settings))
        .collect();
    if !within.is_empty() {
        out.verdict = Verdict::Inconclusive;
        out.reasons.push(format!(
            "The repeats of this run used different settings ({}), so they are not repeats of \
             one measurement.",
            within.join("; ")
        ));
        return out;
    }
    if let Some(base) = baseline.and_then(<[ServeResult]>::first) {
        let diff = settings_diff(&base.settings, &first.settings);
        if !diff.is_empty() {
            out.verdict = Verdict::Inconclusive;
            out.reasons.push(format!(
                "Not compared: the load differs from the baseline's ({}). Results at different \
                 settings are not comparable; accept this run as the new baseline if the change \
                 is intended.",
                diff.join("; ")
            ));
            return out;
        }
    }
    let tests = cases_in_grid.max(1) * policy.gated.len().max(1);
    for metric in &policy.gated {
        let in_files = current
            .iter()
            .all(|r| r.metrics.contains_key(metric.as_str()));
        if in_files && let Some(reason) = unsupported_tail(metric, current) {
            out.reasons.push(reason);
            continue;
        }
        match decide_metric(metric, baseline, current, history, policy, tests) {
            Some(m) => out.metrics.push(m),
            None => out.reasons.push(format!(
                "{metric} is not in this run's result files, so it was not gated."
            )),
        }
    }
    out.verdict = combine(baseline.is_some(), &out.metrics);
    let lead: Vec<String> = out
        .metrics
        .iter()
        .filter(|m| m.verdict == out.verdict)
        .map(|m| m.reason.clone())
        .collect();
    out.reasons.splice(0..0, lead);
    if out.metrics.is_empty() {
        out.verdict = Verdict::Inconclusive;
        out.reasons.insert(
            0,
            "None of the gated metrics is in the result files.".to_owned(),
        );
    }
    out
}

/// Why a tail percentile (`p99_ttft_ms`, `p99_itl_ms`, ...) of this run is not gated: its
/// smallest repeat has too few samples to bound it (`stats::tail`), counted as the requests
/// for TTFT, TPOT and end-to-end latency, and as the inter-token gaps for ITL. `None` when every
/// repeat supports it, or the metric is no percentile.
fn unsupported_tail(metric: &str, current: &[ServeResult]) -> Option<String> {
    let body = metric.strip_prefix('p')?.strip_suffix("_ms")?;
    let (pct, family) = body.split_once('_')?;
    let pct: f64 = pct.parse().ok()?;
    let samples = |r: &ServeResult| -> Option<u64> {
        if family == "itl" {
            let gaps = r.samples.as_ref().map_or(0, |s| s.itls_ms.len() as u64);
            if gaps > 0 {
                return Some(gaps);
            }
            let tokens = r.fields.get("total_output_tokens")?.as_u64()?;
            Some(tokens.saturating_sub(r.completed))
        } else {
            Some(r.completed)
        }
    };
    // A file that states no request count (MLPerf LoadGen's summary) cannot show that its
    // requests bound the percentile; its 0 is "not stated", never a count.
    let has_gaps = |r: &ServeResult| r.samples.as_ref().is_some_and(|s| !s.itls_ms.is_empty());
    let unstated = current
        .iter()
        .find(|r| !(r.requests_stated() || (family == "itl" && has_gaps(r))));
    if let Some(r) = unstated {
        let q = pct / 100.0;
        return Some(format!(
            "{metric} is not gated: the {} file states no request count (MLPerf LoadGen writes it \
             to mlperf_log_detail.txt, not the summary), so nothing shows that its requests bound \
             a p{pct} at {:.0}% confidence (a p{pct} needs at least {} requests). Gate a median or \
             mean instead (suite key `gated`).",
            r.schema.as_str(),
            crate::stats::tail::TAIL_CONFIDENCE * 100.0,
            crate::stats::tail::samples_needed(q, crate::stats::tail::TAIL_CONFIDENCE),
        ));
    }
    let n = current.iter().filter_map(samples).min()?;
    let what = if family == "itl" {
        "inter-token gaps"
    } else {
        "requests"
    };
    crate::stats::tail::unsupported(metric, pct, n, what)
}

/// The case verdict from its metrics' verdicts: the worst of them in the order regressed,
/// error, inconclusive, improved, pass; `new` without a baseline.
pub(super) fn combine(has_baseline: bool, metrics: &[MetricDecision]) -> Verdict {
    if !has_baseline {
        return Verdict::New;
    }
    for v in [
        Verdict::Regressed,
        Verdict::Invalid,
        Verdict::Error,
        Verdict::Inconclusive,
        Verdict::New,
        Verdict::Improved,
    ] {
        if metrics.iter().any(|m| m.verdict == v) {
            // A metric that is new against a baseline (it was absent then) does not make the
            // case new; the others decide.
            if v == Verdict::New {
                continue;
            }
            return v;
        }
    }
    Verdict::Pass
}

#[cfg(test)]
mod tests;
