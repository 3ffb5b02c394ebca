//! Roofline plausibility of a service result (#32 item 5): the output throughput a server can
//! reach is bounded by its decode floor. Pure.
//!
//! One decode step produces one token for each running sequence and cannot take less than the
//! floor of `floor.rs` at that batch: weights read once plus every sequence's KV cache, at the
//! datasheet bandwidth (or the FLOPs at peak, whichever binds). Spread over `g` GPUs (tensor
//! parallel), each GPU moves its share of the bytes, so the step takes at least `floor / g`. At a
//! mean of `c` sequences in flight (Little's law, `serve::estimate`) the output is therefore at
//! most `c / (floor(c) / g)` tokens/s, that is `1000 * c / floor_ms(c)` tokens/s per GPU. The
//! bound with the mean concurrency holds for any concurrency over time, because `c / floor(c)`
//! is concave in `c` (Jensen). The context is the mean input length: a sequence's KV cache is at
//! least its prompt, so a smaller context only loosens the bound. A result above it is
//! impossible as labelled: a wrong GPU count, a mislabelled model, a cache answering instead of
//! the model, or a load generator counting tokens it never received.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::estimate::{concurrency, mean_len, tokens};
use super::model::ServeResult;
use crate::case::Phase;
use crate::catalog::{GpuSpec, ModelSpec, Precision};

/// A result whose output throughput per GPU exceeds its decode floor's bound, with the figures
/// of the arithmetic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Implausible {
    /// The file it came from.
    pub source: String,
    pub output_throughput: f64,
    pub gpus: u32,
    pub mean_concurrency: f64,
    /// The mean concurrency rounded up: the batch the floor is taken at (rounding up only
    /// loosens the bound).
    pub batch: u64,
    pub context: u64,
    pub gpu: String,
    pub decode_floor_ms: f64,
    /// `1000 * concurrency / floor`: the most tokens/s per GPU the floor allows.
    pub bound_tok_s_gpu: f64,
}

impl Implausible {
    #[must_use]
    pub fn tok_s_gpu(&self) -> f64 {
        self.output_throughput / f64::from(self.gpus.max(1))
    }
}

impl fmt::Display for Implausible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {:.1} output tokens/s on {} GPU(s) is {:.1} tokens/s per GPU, above the {:.1} \
             the decode floor allows ({} sequences (mean concurrency {:.1}, rounded up) x 1000 / \
             decode floor {:.3} ms at batch {} and context {} on {}): impossible as labelled; \
             check the GPU count, the model and that no cache answered",
            self.source,
            self.output_throughput,
            self.gpus,
            self.tok_s_gpu(),
            self.bound_tok_s_gpu,
            self.batch,
            self.mean_concurrency,
            self.decode_floor_ms,
            self.batch,
            self.context,
            self.gpu
        )
    }
}

/// Why one result cannot be checked against its decode floor, `None` when it can: the bound
/// needs the output throughput, the mean concurrency (the file's own, else Little's law from
/// its requests, latency and duration) and the mean input length.
#[must_use]
pub fn unchecked_reason(result: &ServeResult) -> Option<&'static str> {
    if !result.metrics.contains_key("output_throughput") {
        return Some("it states no output throughput");
    }
    if !concurrency(result).is_some_and(|c| c.is_finite() && c > 0.0) {
        return Some(
            "its mean concurrency is unknown (it states none, nor the request count, latency \
             and duration Little's law needs)",
        );
    }
    if mean_len(result, "total_input_tokens").is_none() {
        return Some(
            "its mean prompt length is unknown (it states no total_input_tokens or no request \
             count)",
        );
    }
    None
}

/// The check of one result served on `gpus` GPUs; `None` when it is plausible or cannot be
/// checked (no throughput, no concurrency, no input length).
#[must_use]
pub fn implausible(
    source: &str,
    result: &ServeResult,
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
    gpus: u32,
) -> Option<Implausible> {
    let output = *result.metrics.get("output_throughput")?;
    let c = concurrency(result)?;
    let input = mean_len(result, "total_input_tokens")?;
    if !(c.is_finite() && c > 0.0) {
        return None;
    }
    let context = tokens(input);
    let batch = tokens(c.ceil());
    let floor = crate::floor::floor(model, gpu, precision, Phase::Decode, batch, context).ok()?;
    let bound = 1000.0 * batch as f64 / floor.floor_ms;
    let per_gpu = output / f64::from(gpus.max(1));
    (per_gpu > bound).then(|| Implausible {
        source: source.to_owned(),
        output_throughput: output,
        gpus: gpus.max(1),
        mean_concurrency: c,
        batch,
        context,
        gpu: gpu.name.clone(),
        decode_floor_ms: floor.floor_ms,
        bound_tok_s_gpu: bound,
    })
}
