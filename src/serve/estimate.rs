//! Utilisation implied by a service result, always marked as an estimate (DESIGN.md §12): a
//! service benchmark times requests, not steps, so the step a figure stands for is inferred.
//! Pure.
//!
//! * **Decode MBU** from the median inter-token latency: one inter-token gap is one decode step
//!   of the whole running batch, so the step is taken as the median ITL, the batch as the mean
//!   concurrency (Little's law: requests in flight = completed x mean end-to-end latency /
//!   duration, or `SGLang`'s own `concurrency`), and the context as the mean input length plus
//!   half the mean output. MBU = decode floor bytes at that batch and context / median ITL /
//!   peak bandwidth (the floor of `floor.rs`).
//! * **Prefill MFU** from the median TTFT: at a low rate a request rarely waits, so its first
//!   token is about one prefill of the mean input length (batch 1). MFU = prefill FLOPs / median
//!   TTFT / peak FLOP/s. Queueing only adds to TTFT, so this is a lower bound, closest to the
//!   kernel at the grid's lowest rate.

use serde::{Deserialize, Serialize};

use super::model::ServeResult;
use crate::case::Phase;
use crate::catalog::{GpuSpec, ModelSpec, Precision};

/// What a service case implies about the hardware, as estimates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServeEstimate {
    /// Always true: these figures are inferred, not measured steps.
    pub estimate: bool,
    pub mean_concurrency: Option<f64>,
    pub mean_input_len: Option<f64>,
    pub mean_output_len: Option<f64>,
    pub median_itl_ms: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub decode_floor_ms: Option<f64>,
    pub decode_mbu: Option<f64>,
    pub prefill_floor_ms: Option<f64>,
    pub prefill_mfu: Option<f64>,
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (s, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| s / n as f64)
}

/// The mean concurrency of one repeat: the file's own figure, else Little's law.
pub(super) fn concurrency(r: &ServeResult) -> Option<f64> {
    if let Some(c) = r.metrics.get("concurrency") {
        return Some(*c);
    }
    // No duration stated (MLPerf LoadGen's summary): Little's law has nothing to divide by.
    if r.duration_s <= 0.0 || !r.requests_stated() {
        return None;
    }
    let e2e_ms = r.metrics.get("mean_e2el_ms").copied().or_else(|| {
        let ttft = r.metrics.get("mean_ttft_ms")?;
        let tpot = r.metrics.get("mean_tpot_ms")?;
        let out = mean_len(r, "total_output_tokens")?;
        Some(ttft + tpot * (out - 1.0).max(0.0))
    })?;
    Some(r.completed as f64 * e2e_ms / 1e3 / r.duration_s)
}

/// Mean tokens per completed request from a total the file states.
pub(super) fn mean_len(r: &ServeResult, total_key: &str) -> Option<f64> {
    let total = r.fields.get(total_key)?.as_f64()?;
    (r.completed > 0 && r.requests_stated()).then(|| total / r.completed as f64)
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "token counts: positive, rounded, far below u64::MAX"
)]
pub(super) fn tokens(x: f64) -> u64 {
    x.round().max(1.0) as u64
}

/// The estimates of one case from its repeats, or `None` without anything to estimate from.
#[must_use]
pub fn estimate(
    repeats: &[ServeResult],
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
) -> Option<ServeEstimate> {
    let metric = |k: &str| mean(repeats.iter().filter_map(|r| r.metrics.get(k).copied()));
    let mut e = ServeEstimate {
        estimate: true,
        mean_concurrency: mean(repeats.iter().filter_map(concurrency)),
        mean_input_len: mean(
            repeats
                .iter()
                .filter_map(|r| mean_len(r, "total_input_tokens")),
        ),
        mean_output_len: mean(
            repeats
                .iter()
                .filter_map(|r| mean_len(r, "total_output_tokens")),
        ),
        median_itl_ms: metric("median_itl_ms"),
        median_ttft_ms: metric("median_ttft_ms"),
        decode_floor_ms: None,
        decode_mbu: None,
        prefill_floor_ms: None,
        prefill_mfu: None,
    };
    if let (Some(c), Some(input), Some(itl)) =
        (e.mean_concurrency, e.mean_input_len, e.median_itl_ms)
    {
        let context = input + e.mean_output_len.unwrap_or(0.0) / 2.0;
        if let Ok(f) = crate::floor::floor(
            model,
            gpu,
            precision,
            Phase::Decode,
            tokens(c),
            tokens(context),
        ) {
            e.decode_floor_ms = Some(f.floor_ms);
            e.decode_mbu = Some(f.utilisation(itl).mbu);
        }
    }
    if let (Some(input), Some(ttft)) = (e.mean_input_len, e.median_ttft_ms)
        && let Ok(f) = crate::floor::floor(model, gpu, precision, Phase::Prefill, 1, tokens(input))
    {
        e.prefill_floor_ms = Some(f.floor_ms);
        e.prefill_mfu = Some(f.utilisation(ttft).mfu);
    }
    (e.decode_mbu.is_some() || e.prefill_mfu.is_some()).then_some(e)
}

impl ServeEstimate {
    /// The estimates as sentences, each saying it is one.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let (Some(mbu), Some(itl), Some(c), Some(fl)) = (
            self.decode_mbu,
            self.median_itl_ms,
            self.mean_concurrency,
            self.decode_floor_ms,
        ) {
            out.push(format!(
                "decode MBU ~{:.1}% (estimate: median ITL {itl:.2} ms as one decode step of the \
                 mean concurrency {c:.1}; decode floor {fl:.3} ms)",
                mbu * 100.0
            ));
        }
        if let (Some(mfu), Some(ttft), Some(input), Some(fl)) = (
            self.prefill_mfu,
            self.median_ttft_ms,
            self.mean_input_len,
            self.prefill_floor_ms,
        ) {
            out.push(format!(
                "prefill MFU >= {:.1}% (estimate: median TTFT {ttft:.1} ms as one prefill of \
                 {input:.0} tokens; queueing only adds to TTFT; prefill floor {fl:.3} ms)",
                mfu * 100.0
            ));
        }
        out
    }
}

/// One case of a grid, as the latency-split reading needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitPoint {
    /// `None`: unlimited rate.
    pub request_rate: Option<f64>,
    pub input_len: Option<f64>,
    pub median_ttft_ms: Option<f64>,
    pub median_itl_ms: Option<f64>,
}

/// The seed's reading of the latency split over a grid (estimates, stated only with several
/// rates or several input lengths): TTFT rising sharply with the rate while the prefill of the
/// same prompts (the lowest rate's TTFT, scaled by input length) stays flat points at
/// scheduling or capacity, not kernels; ITL growing with the input length means prefill steals
/// decode steps.
#[must_use]
pub fn latency_split(points: &[SplitPoint]) -> Vec<String> {
    let mut out = Vec::new();
    let rate_key = |p: &SplitPoint| p.request_rate.unwrap_or(f64::INFINITY);
    let mut by_rate: Vec<&SplitPoint> = points
        .iter()
        .filter(|p| p.median_ttft_ms.is_some())
        .collect();
    by_rate.sort_by(|a, b| rate_key(a).total_cmp(&rate_key(b)));
    if let (Some(lo), Some(hi)) = (by_rate.first(), by_rate.last()) {
        let (t_lo, t_hi) = (
            lo.median_ttft_ms.unwrap_or(0.0),
            hi.median_ttft_ms.unwrap_or(0.0),
        );
        if rate_key(lo) < rate_key(hi) && t_lo > 0.0 {
            // The prefill estimate of the high-rate prompts: the low rate's TTFT per input
            // token times the high rate's input length (flat when the lengths are equal).
            let scale = match (lo.input_len, hi.input_len) {
                (Some(a), Some(b)) if a > 0.0 => b / a,
                _ => 1.0,
            };
            let prefill_hi = t_lo * scale;
            let rate = |p: &SplitPoint| crate::serve::format_rate(p.request_rate);
            if t_hi / t_lo >= 2.0 && scale < 1.5 {
                out.push(format!(
                    "median TTFT rises {:.1}x from rate {} to rate {} ({t_lo:.1} ms to {t_hi:.1} \
                     ms) while the per-request prefill estimate stays about {prefill_hi:.1} ms: \
                     the time is queueing, so scheduling or capacity, not kernels",
                    t_hi / t_lo,
                    rate(lo),
                    rate(hi)
                ));
            } else {
                out.push(format!(
                    "median TTFT goes from {t_lo:.1} ms at rate {} to {t_hi:.1} ms at rate {}: \
                     no sharp queueing rise over this grid",
                    rate(lo),
                    rate(hi)
                ));
            }
        }
    }
    let mut by_len: Vec<&SplitPoint> = points
        .iter()
        .filter(|p| p.median_itl_ms.is_some() && p.input_len.is_some())
        .collect();
    by_len.sort_by(|a, b| {
        a.input_len
            .unwrap_or(0.0)
            .total_cmp(&b.input_len.unwrap_or(0.0))
    });
    if let (Some(short), Some(long)) = (by_len.first(), by_len.last()) {
        let (i_s, i_l) = (
            short.median_itl_ms.unwrap_or(0.0),
            long.median_itl_ms.unwrap_or(0.0),
        );
        let (n_s, n_l) = (
            short.input_len.unwrap_or(0.0),
            long.input_len.unwrap_or(0.0),
        );
        if n_l > n_s && i_s > 0.0 && i_l / i_s >= 1.2 {
            out.push(format!(
                "median ITL grows {:.1}x as the input length grows from {n_s:.0} to {n_l:.0} \
                 tokens ({i_s:.2} ms to {i_l:.2} ms): prefill steals decode steps",
                i_l / i_s
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(rate: Option<f64>, input: f64, ttft: f64, itl: f64) -> SplitPoint {
        SplitPoint {
            request_rate: rate,
            input_len: Some(input),
            median_ttft_ms: Some(ttft),
            median_itl_ms: Some(itl),
        }
    }

    #[test]
    fn sharp_ttft_rise_at_flat_prefill_reads_as_scheduling() {
        let grid = [
            p(Some(1.0), 1024.0, 80.0, 14.0),
            p(Some(16.0), 1024.0, 900.0, 15.0),
        ];
        let r = latency_split(&grid);
        assert!(r[0].contains("rises 11.2x from rate 1 to rate 16"), "{r:?}");
        assert!(r[0].contains("scheduling or capacity, not kernels"));
        let flat = [
            p(Some(1.0), 1024.0, 80.0, 14.0),
            p(Some(2.0), 1024.0, 90.0, 14.0),
        ];
        assert!(latency_split(&flat)[0].contains("no sharp queueing rise"));
        assert!(
            latency_split(&grid[..1]).is_empty(),
            "one rate: nothing to read"
        );
    }

    #[test]
    fn itl_growing_with_input_reads_as_prefill_stealing_decode() {
        let grid = [
            p(Some(4.0), 512.0, 80.0, 14.0),
            p(Some(4.0), 4096.0, 300.0, 22.0),
        ];
        let r = latency_split(&grid);
        assert!(
            r.iter().any(|s| s.contains("prefill steals decode steps")),
            "{r:?}"
        );
    }

    #[test]
    fn estimates_from_a_real_file_are_plausible_and_marked() {
        let text = include_str!(
            "../../tests/fixtures/vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_inf.json"
        );
        let r = crate::serve::parse(text, "f").expect("parses");
        let model = crate::catalog::model_by_name("llama-3.1-70b").expect("catalogue model");
        let gpu = crate::catalog::gpu_by_name("a100-40gb").expect("catalogue GPU");
        let precision = Precision::parse("bf16", None).expect("bf16");
        let e = estimate(&r, &model, &gpu, &precision).expect("estimates");
        assert!(e.estimate);
        // Little's law: 200 requests of ~1.6 s mean latency over 23.8 s.
        let c = e.mean_concurrency.expect("concurrency");
        assert!(c > 5.0 && c < 200.0, "{c}");
        // One A100 at bf16 cannot hold the 70B model's weights in 35 ms (the file's server
        // had eight): the single-GPU estimate is above 100%, which is what the number says.
        assert!(e.decode_mbu.expect("mbu") > 0.0);
        assert!(e.lines().iter().all(|l| l.contains("estimate")));
    }
}
