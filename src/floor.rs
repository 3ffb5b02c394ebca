//! The roofline floor of one inference step (DESIGN.md §2): the least time a step can take on
//! a GPU given the bytes it must move and the FLOPs it must do,
//! `floor = max(bytes / peak bandwidth, FLOPs / peak FLOP/s)`, with the binding resource
//! named, and the utilisation (MBU, MFU) of a measured step time. Pure.
//!
//! Sources of the conventions used below:
//! - Roofline: S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual
//!   performance model for multicore architectures", CACM 52(4), 2009: attainable time is
//!   bounded by traffic / bandwidth and by work / peak, whichever is larger.
//! - 2 FLOPs (one multiply, one add) per weight per token for a matrix-vector product:
//!   J. Kaplan et al., "Scaling Laws for Neural Language Models", 2020, §2.1 (C ≈ 2N per token
//!   in the forward pass).
//! - Attention FLOPs: each query does `QKᵀ` and `AV` against every key it sees, `2·d` FLOPs
//!   per key per head for each product (Kaplan et al. §2.1 count `2·n_layer·n_ctx·d_attn` per
//!   token for `QKᵀ` alone; `AV` doubles it). Causal prefill: query i sees i keys,
//!   `Σ = P(P+1)/2`.
//! - MBU and MFU: MBU = bytes moved / step time / peak bandwidth (Databricks, "LLM Inference
//!   Performance Engineering: Best Practices", 2023); MFU = FLOPs / step time / peak FLOP/s
//!   (Chowdhery et al., "`PaLM`", 2022, Appendix B).
//! - Expected distinct experts: with T tokens each routed to k of E experts uniformly and
//!   independently, an expert is missed by one token with probability 1 - k/E, so the
//!   expected number touched is E·(1 - (1 - k/E)^T) (linearity of expectation).
//! - Layer shapes, `head_dim`, sliding windows and tied embeddings: the Hugging Face
//!   `transformers` modelling code of each family (see `catalog::model`).
//!
//! Conventions (the README's "How the floor is computed" states them for users):
//! - Decode at context C: each sequence adds one token; every layer's KV cache holds C tokens
//!   before the step, all read (a sliding window of W caps a layer's read at W - 1, since a
//!   query sees at most W positions, itself included), and the new token's K and V are
//!   written. The query attends to C + 1 keys (W at most).
//! - Prefill of P tokens: a fresh cache; K and V of every prompt token are written (W - 1 per
//!   windowed layer: what the next decode step reads), none read from memory. Logits are
//!   computed for the last token of each sequence only, as serving engines do.
//! - Weights: each decoder-layer weight is read once per step; the input embedding is a
//!   gather of one row per token (at most the whole table), not a read of the table; the
//!   output projection is read once; tied embeddings are one matrix, read once by the output
//!   projection. Mixture-of-experts layers read the expected number of distinct experts under uniform
//!   routing. Activations are not counted (a lower bound: they can stay on chip).
//! - FLOPs: 2 per active decoder-layer parameter per token (the gather does none), 2 per
//!   output-projection weight per logit row, plus attention. All FLOPs are bounded by the peak
//!   of the precision's compute dtype.
//! - The bare form counts every parameter as read once per step and 2 FLOPs per parameter
//!   per token (or its declared `flops_per_token`), with no attention term: the
//!   all-parameters convention.

use serde::{Deserialize, Serialize};
use thiserror::Error;

mod parallel;
mod speculative;
pub use crate::case::Parallelism;
pub use parallel::ParallelFloor;
pub use speculative::{SpeculativeFloor, round_floor};

use crate::case::{CaseKey, Phase};
use crate::catalog::gpu::GpuSpec;
use crate::catalog::model::{BareSpec, ModelSpec, Part, TransformerSpec};
use crate::catalog::precision::{ComputeDtype, Precision, Scales};

#[derive(Debug, Error, PartialEq)]
pub enum FloorError {
    #[error("GPU {gpu} has no dense {dtype} peak (it has: {available})")]
    NoComputePeak {
        gpu: String,
        dtype: ComputeDtype,
        available: String,
    },
    #[error("GPU {gpu}: {what} must be a positive finite number, found {value}")]
    InvalidGpu {
        gpu: String,
        what: &'static str,
        value: f64,
    },
    #[error("batch must be at least 1")]
    ZeroBatch,
    #[error("prefill needs a context (prompt length) of at least 1 token")]
    EmptyPrefill,
    #[error("step time must be a positive finite number of milliseconds, found {0}")]
    InvalidStepTime(f64),
    #[error("cannot split this step over GPUs: {reason}")]
    InvalidParallelism { reason: String },
    #[error("GPU {gpu} has no interconnect bandwidth, needed for the collectives of tp or ep > 1")]
    NoInterconnect { gpu: String },
    #[error("cannot floor this speculative round: {reason}")]
    InvalidSpeculation { reason: String },
}

impl FloorError {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            FloorError::NoComputePeak { dtype, .. } => Some(format!(
                "choose a precision the GPU runs natively (a weight-only form such as \
                 mxfp4-wo or nvfp4-wo computes in bf16), or declare the peak in utilgate.toml: \
                 [gpu] dense_tflops = {{ {dtype} = ... }}"
            )),
            FloorError::InvalidSpeculation { .. } => Some(
                "declare [suite.speculative] with draft = a model of the catalogue or [models] \
                 (or \"ngram\") and k = [1 or more], on decode cases only"
                    .to_string(),
            ),
            FloorError::InvalidParallelism { .. } => Some(
                "choose tp dividing the attention heads, and ep (mixture-of-experts models \
                 only) dividing the experts and a multiple of tp"
                    .to_string(),
            ),
            FloorError::NoInterconnect { .. } => Some(
                "declare it in utilgate.toml: [gpu] interconnect_gb_s = 450 (what one GPU \
                 sends per second, one direction), or pass --interconnect-gb-s"
                    .to_string(),
            ),
            _ => None,
        }
    }
}

/// The binding resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    Memory,
    Compute,
    /// The collectives of a tensor- or expert-parallel step.
    Comms,
}

impl Bound {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Comms => "comms",
        }
    }
}

/// Bytes moved by one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ByteBreakdown {
    /// Decoder-layer weights read (attention, MLP or the experts touched, norms, routers); for
    /// the bare form every parameter.
    pub weights: f64,
    /// Input-embedding rows gathered (0 when tied: the rows lie in `lm_head`'s matrix).
    pub embedding: f64,
    /// The output projection (the embedding matrix when tied), read once.
    pub lm_head: f64,
    /// KV cache read.
    pub kv_read: f64,
    /// KV cache written.
    pub kv_write: f64,
    /// Of `weights`, `embedding` and `lm_head`: the quantisation scales (already counted in
    /// them; shown apart, not added to the total).
    #[serde(default)]
    pub scales: f64,
    /// A speculative round's draft steps, every byte they move (0 without speculation).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draft: f64,
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl ByteBreakdown {
    #[must_use]
    pub fn total(&self) -> f64 {
        self.weights + self.embedding + self.lm_head + self.kv_read + self.kv_write + self.draft
    }
}

/// FLOPs of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlopBreakdown {
    /// 2 per active decoder-layer parameter per token (the bare form: all of its FLOPs).
    pub linear: f64,
    /// `QKᵀ` and `AV` over the context.
    pub attention: f64,
    /// The output projection for the tokens whose logits are computed.
    pub lm_head: f64,
    /// A speculative round's draft steps, all their FLOPs (0 without speculation).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draft: f64,
}

impl FlopBreakdown {
    #[must_use]
    pub fn total(&self) -> f64 {
        self.linear + self.attention + self.lm_head + self.draft
    }
}

/// What a mixture-of-experts layer reads in one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpertRead {
    pub num_experts: u64,
    pub experts_per_token: u64,
    /// Tokens routed per layer this step.
    pub tokens: u64,
    /// Expected distinct experts touched per layer under uniform routing.
    pub expected_distinct: f64,
}

/// The floor of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "floor_ms is the stored and JSON name users read"
)]
pub struct Floor {
    pub floor_ms: f64,
    pub bound: Bound,
    pub bytes: ByteBreakdown,
    pub flops: FlopBreakdown,
    pub peak_bandwidth_bytes_per_s: f64,
    pub peak_flops_per_s: f64,
    /// The compute dtype whose peak applies.
    pub compute_dtype: ComputeDtype,
    /// Tokens processed by the step (batch for decode, batch x context for prefill).
    pub tokens: u64,
    /// Expert reads, for mixture-of-experts models.
    pub experts: Option<ExpertRead>,
    /// The conventions and assumptions behind this floor, for the reader.
    pub notes: Vec<String>,
    /// Over several GPUs: the layout and its collectives (every figure above is the busiest
    /// GPU's share).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<ParallelFloor>,
    /// A speculative round: the draft's steps and the target's verification (every figure
    /// above is the round's: both added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpeculativeFloor>,
}

/// Utilisation of a measured step time, as fractions (0.5 = 50%).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[expect(
    clippy::struct_field_names,
    reason = "utilisation is the stored and JSON name users read"
)]
pub struct Utilisation {
    /// Bytes moved / step time / peak bandwidth.
    pub mbu: f64,
    /// FLOPs / step time / peak FLOP/s.
    pub mfu: f64,
    /// floor / step time (= the larger of MBU and MFU).
    pub utilisation: f64,
}

impl Floor {
    #[must_use]
    pub fn total_bytes(&self) -> f64 {
        self.bytes.total()
    }

    #[must_use]
    pub fn total_flops(&self) -> f64 {
        self.flops.total()
    }

    /// The time the bytes take at peak bandwidth.
    #[must_use]
    pub fn memory_ms(&self) -> f64 {
        self.total_bytes() / self.peak_bandwidth_bytes_per_s * 1e3
    }

    /// The time the FLOPs take at peak FLOP/s.
    #[must_use]
    pub fn compute_ms(&self) -> f64 {
        self.total_flops() / self.peak_flops_per_s * 1e3
    }

    /// The time the collectives take at the link's bandwidth (0 on one GPU).
    #[must_use]
    pub fn comms_ms(&self) -> f64 {
        self.parallel.as_ref().map_or(0.0, |p| p.comms.ms())
    }

    /// MBU, MFU and utilisation of a step of `step_ms` milliseconds. The caller checks that
    /// `step_ms` is positive and finite; otherwise the fractions are infinite or NaN.
    #[must_use]
    pub fn utilisation(&self, step_ms: f64) -> Utilisation {
        Utilisation {
            mbu: self.memory_ms() / step_ms,
            mfu: self.compute_ms() / step_ms,
            utilisation: self.floor_ms / step_ms,
        }
    }
}

/// Bytes to hold a case in GPU memory: all weights and the KV cache after the step.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    pub weights_bytes: f64,
    pub kv_bytes: f64,
}

/// The floor of one step of `phase` at `batch` sequences and `context` tokens, on one GPU.
pub fn floor(
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
) -> Result<Floor, FloorError> {
    floor_on(
        model,
        gpu,
        precision,
        phase,
        batch,
        context,
        Parallelism::SINGLE,
    )
}

/// The floor of case `key`'s step at `precision`: its phase, batch, context and parallelism,
/// and for a speculative case (`key.speculation()`) one round with `draft` (the draft model's
/// spec; `None` for n-gram drafting).
pub fn floor_of_case(
    model: &ModelSpec,
    draft: Option<&ModelSpec>,
    gpu: &GpuSpec,
    precision: &Precision,
    key: &CaseKey,
) -> Result<Floor, FloorError> {
    if let Some(spec) = key.speculation() {
        if key.phase != Phase::Decode {
            return Err(FloorError::InvalidSpeculation {
                reason: "speculative decoding drafts decode steps; a prefill case has none"
                    .to_owned(),
            });
        }
        return round_floor(
            model,
            draft,
            gpu,
            precision,
            key.batch,
            key.context,
            key.parallelism(),
            &spec,
        );
    }
    floor_on(
        model,
        gpu,
        precision,
        key.phase,
        key.batch,
        key.context,
        key.parallelism(),
    )
}

/// The GPU's peak bandwidth and the precision's dense peak FLOP/s, each checked.
fn peaks(gpu: &GpuSpec, precision: &Precision) -> Result<(f64, f64), FloorError> {
    let bandwidth = gpu.mem_bandwidth_bytes_per_s;
    if !(bandwidth.is_finite() && bandwidth > 0.0) {
        return Err(FloorError::InvalidGpu {
            gpu: gpu.name.clone(),
            what: "memory bandwidth",
            value: bandwidth,
        });
    }
    let peak = gpu
        .peak_flops(precision.compute)
        .ok_or_else(|| FloorError::NoComputePeak {
            gpu: gpu.name.clone(),
            dtype: precision.compute,
            available: gpu
                .dense_flops
                .available()
                .iter()
                .map(|d| d.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    if !(peak.is_finite() && peak > 0.0) {
        return Err(FloorError::InvalidGpu {
            gpu: gpu.name.clone(),
            what: "peak FLOP/s",
            value: peak,
        });
    }
    Ok((bandwidth, peak))
}

/// The floor of one step spread over GPUs as `par` says: the busiest GPU's bytes and FLOPs,
/// and the collectives as a third resource (see `floor::parallel`).
pub fn floor_on(
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
    par: Parallelism,
) -> Result<Floor, FloorError> {
    floor_step(model, gpu, precision, phase, batch, context, 1, par)
}

/// The floor of one step with `queries` new tokens per sequence in decode (1, or k + 1 for a
/// speculative round's verification).
#[expect(
    clippy::too_many_arguments,
    reason = "the step's coordinates, as floor_on's, plus its queries"
)]
fn floor_step(
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
    queries: u64,
    par: Parallelism,
) -> Result<Floor, FloorError> {
    parallel::check(model, par)?;
    if batch == 0 {
        return Err(FloorError::ZeroBatch);
    }
    if phase == Phase::Prefill && context == 0 {
        return Err(FloorError::EmptyPrefill);
    }
    let (bandwidth, peak) = peaks(gpu, precision)?;
    let tokens = match phase {
        Phase::Decode => batch * queries,
        Phase::Prefill => batch * context,
    };
    let step = Step {
        phase,
        batch,
        context,
        tokens,
        queries,
        par,
    };
    let (work, parallel) = match model {
        ModelSpec::Transformer(t) => {
            let work = transformer_work(t, precision, &step);
            let parallel = parallel::layout(t, gpu, par, phase, batch, context, queries)?;
            (work, parallel)
        }
        ModelSpec::Bare(b) => (bare_work(b, precision, &step), None),
    };
    let mut notes = work.notes;
    if matches!(
        precision.compute,
        ComputeDtype::Fp8 | ComputeDtype::Int8 | ComputeDtype::Fp4
    ) {
        notes.push(format!(
            "all FLOPs are bounded by the {} peak, though attention and lm_head usually run in \
             16 bits: the compute floor is optimistic there",
            precision.compute
        ));
    }
    // Roofline (Williams et al. 2009): time >= traffic / bandwidth and >= work / peak; over
    // several GPUs also >= bytes sent / link bandwidth (communication as a third resource,
    // assumed to overlap the others: the floor is the largest of the three).
    let memory_s = work.bytes.total() / bandwidth;
    let compute_s = work.flops.total() / peak;
    let comms_s = parallel.as_ref().map_or(0.0, |p| p.comms.ms() / 1e3);
    let (mut floor_s, mut bound) = if memory_s >= compute_s {
        (memory_s, Bound::Memory)
    } else {
        (compute_s, Bound::Compute)
    };
    if comms_s > floor_s {
        (floor_s, bound) = (comms_s, Bound::Comms);
    }
    if let Some(p) = &parallel {
        notes.extend(parallel_notes(p, memory_s.max(compute_s), comms_s));
    }
    Ok(Floor {
        floor_ms: floor_s * 1e3,
        bound,
        bytes: work.bytes,
        flops: work.flops,
        peak_bandwidth_bytes_per_s: bandwidth,
        peak_flops_per_s: peak,
        compute_dtype: precision.compute,
        tokens,
        experts: work.experts,
        notes,
        parallel,
        speculative: None,
    })
}

/// What a parallel floor assumed, and a warning line when the collectives bind.
fn parallel_notes(p: &ParallelFloor, gpu_s: f64, comms_s: f64) -> Vec<String> {
    let mut notes = vec![format!(
        "{} GPUs (tp {} x dp {}{}): every figure is the busiest GPU's share ({} sequence(s)); \
         collectives over {} at {} per GPU each way, assumed to overlap memory and compute \
         (floor = max of the three); their latency is not counted",
        p.gpus,
        p.tp,
        p.dp,
        if p.ep > 1 {
            format!(", experts ep {}", p.ep)
        } else {
            String::new()
        },
        p.sequences_per_gpu,
        p.comms.link,
        format_args!("{:.0} GB/s", p.comms.link_bytes_per_s / 1e9)
    )];
    if comms_s > gpu_s {
        notes.push(format!(
            "communication binds: the collectives take {:.3} ms, more than the GPU's {:.3} ms; \
             a faster link, not a faster kernel, lowers this floor",
            comms_s * 1e3,
            gpu_s * 1e3
        ));
    }
    notes
}

/// Bytes to hold the weights and the KV cache after one step (the memory-fit check): the
/// busiest GPU's share under `par`.
#[must_use]
pub fn footprint_on(
    model: &ModelSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
    par: Parallelism,
) -> Footprint {
    let single = footprint_one(model, precision, phase, batch, context);
    let ModelSpec::Transformer(t) = model else {
        return single;
    };
    if par.is_single() {
        return single;
    }
    let weights_bytes = t
        .tensors()
        .iter()
        .map(|x| x.bytes(precision) / weight_divisor(x.part, par))
        .sum();
    let sequences = par.sequences(batch) as f64 / batch as f64;
    Footprint {
        weights_bytes,
        kv_bytes: single.kv_bytes * sequences * par.kv_head_share(t.num_key_value_heads),
    }
}

/// How many ways a part's weights are split: attention, dense MLPs, embeddings and `lm_head`
/// `tp` ways, experts over every GPU, norms and routers replicated.
fn weight_divisor(part: Part, par: Parallelism) -> f64 {
    match part {
        Part::Attention | Part::Mlp | Part::Embedding | Part::LmHead => par.tp as f64,
        Part::Experts => par.gpus() as f64,
        Part::Router | Part::Norm => 1.0,
    }
}

fn footprint_one(
    model: &ModelSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
) -> Footprint {
    // After a decode step the cache holds context + 1 tokens; after prefill, the prompt.
    let held = match phase {
        Phase::Decode => context + 1,
        Phase::Prefill => context,
    };
    let kv_bytes = match model {
        ModelSpec::Transformer(t) => {
            let windowed = t.sliding_window_layers;
            let full = t.num_hidden_layers - windowed;
            let window = t.sliding_window.unwrap_or(u64::MAX);
            let layer_tokens = full * held + windowed * held.min(window);
            (batch * layer_tokens) as f64 * t.kv_bytes_per_token_per_layer(precision.kv)
        }
        ModelSpec::Bare(b) => (batch * held) as f64 * b.kv_bytes_per_token,
    };
    Footprint {
        weights_bytes: model.weight_bytes(precision),
        kv_bytes,
    }
}

/// Expected distinct experts touched by `tokens` tokens, each routed to `k` of `experts`
/// uniformly: E·(1 - (1 - k/E)^T).
#[must_use]
pub fn expected_distinct_experts(experts: u64, k: u64, tokens: u64) -> f64 {
    let e = experts as f64;
    let miss = 1.0 - k as f64 / e;
    e * (1.0 - miss.powf(tokens as f64))
}

/// What one step does: the case's coordinates and how it is spread.
struct Step {
    phase: Phase,
    batch: u64,
    context: u64,
    /// Tokens of the whole step (batch x queries for decode, batch x context for prefill).
    tokens: u64,
    /// Decode: new tokens per sequence (1; k + 1 when a speculative round verifies k drafted
    /// tokens). Unused in prefill.
    queries: u64,
    par: Parallelism,
}

struct Work {
    bytes: ByteBreakdown,
    flops: FlopBreakdown,
    experts: Option<ExpertRead>,
    notes: Vec<String>,
}

/// Σ over the queries of one sequence of the keys each sees, for one layer.
/// Decode of Q new tokens: query i (1-based) sees C + i keys (the cache, the tokens before it
/// and itself), at most W: C + 1 for one token.
/// Prefill: query i (1-based) sees i keys, at most W: Σ min(i, W) for i = 1..=P, which is
/// P(P+1)/2 without a window (causal halving).
fn keys_seen(phase: Phase, context: u64, queries: u64, window: Option<u64>) -> f64 {
    let w = window.unwrap_or(u64::MAX);
    match phase {
        Phase::Decode => (1..=queries).map(|i| (context + i).min(w) as f64).sum(),
        Phase::Prefill => {
            let p = context as f64;
            if context <= w {
                p * (p + 1.0) / 2.0
            } else {
                let w = w as f64;
                w * (w + 1.0) / 2.0 + (p - w) * w
            }
        }
    }
}

/// Tokens whose K/V one layer holds for the next step (read in decode, written in prefill):
/// the context, capped at W - 1 by a window of W.
fn cached_tokens(context: u64, window: Option<u64>) -> u64 {
    match window {
        Some(w) => context.min(w.saturating_sub(1)),
        None => context,
    }
}

/// What the checkpoint's own precision says, or that the floor is at another one.
fn checkpoint_notes(t: &TransformerSpec, precision: &Precision, notes: &mut Vec<String>) {
    if let Some(q) = &t.quantisation {
        if q.precision.label == precision.label {
            notes.extend(q.notes.iter().cloned());
        } else {
            notes.push(format!(
                "the checkpoint declares {} ({}); this floor is at {}, as asked",
                q.precision.label, q.method, precision.label
            ));
        }
    }
}

/// The weights one GPU reads in a step (`weights`, `embedding`, `lm_head`, `scales`): its
/// share of each part, the experts its tokens touch, the embedding rows gathered.
fn read_weights(
    t: &TransformerSpec,
    precision: &Precision,
    par: Parallelism,
    local_tokens: u64,
    experts: Option<&ExpertRead>,
) -> ByteBreakdown {
    let vocab = t.vocab_size;
    let mut bytes = ByteBreakdown {
        weights: 0.0,
        embedding: 0.0,
        lm_head: 0.0,
        kv_read: 0.0,
        kv_write: 0.0,
        scales: 0.0,
        draft: 0.0,
    };
    let gathered_rows = local_tokens.min(vocab);
    for tensor in t.tensors() {
        let stored = tensor.bytes(precision);
        // Each GPU reads its share: attention, MLPs, embedding and lm_head split tp ways,
        // experts over every GPU, norms and routers replicated.
        let share = 1.0 / weight_divisor(tensor.part, par);
        let read = match tensor.part {
            // Tied: one matrix, read whole by the output projection; the gathered rows are
            // part of it and not counted twice.
            Part::Embedding if t.tie_word_embeddings => {
                bytes.lm_head += stored * share;
                share
            }
            // A gather of one row per token, not a read of the table.
            Part::Embedding => {
                bytes.embedding += stored * gathered_rows as f64 / vocab as f64 * share;
                gathered_rows as f64 / vocab as f64 * share
            }
            Part::LmHead => {
                bytes.lm_head += stored * share;
                share
            }
            Part::Experts => {
                let touched = experts
                    .as_ref()
                    .map_or(1.0, |e| e.expected_distinct / e.num_experts as f64);
                bytes.weights += stored * touched * share;
                touched * share
            }
            Part::Attention | Part::Mlp | Part::Router | Part::Norm => {
                bytes.weights += stored * share;
                share
            }
        };
        bytes.scales += (stored - tensor.bytes_unscaled(precision)) * read;
    }
    bytes
}

fn transformer_work(t: &TransformerSpec, precision: &Precision, step: &Step) -> Work {
    let Step {
        phase,
        batch,
        context,
        tokens,
        queries,
        par,
    } = *step;
    let mut notes = t.notes.clone();
    checkpoint_notes(t, precision, &mut notes);
    let vocab = t.vocab_size;
    // The busiest GPU's sequences and tokens (all of them on one GPU).
    let sequences = par.sequences(batch);
    let local_tokens = match phase {
        Phase::Decode => sequences * queries,
        Phase::Prefill => sequences * context,
    };

    // Expected distinct experts per MoE layer (uniform routing), over the whole step's tokens.
    let experts = t.moe.as_ref().map(|m| ExpertRead {
        num_experts: m.num_experts,
        experts_per_token: m.experts_per_token,
        tokens,
        expected_distinct: expected_distinct_experts(m.num_experts, m.experts_per_token, tokens),
    });

    let mut bytes = read_weights(t, precision, par, local_tokens, experts.as_ref());
    let gathered_rows = local_tokens.min(vocab);
    if t.tie_word_embeddings {
        notes.push(format!(
            "tied embeddings: one {vocab} x {} matrix, read once by the output projection",
            t.hidden_size
        ));
    } else {
        notes.push(format!(
            "input embedding: {gathered_rows} gathered row(s) of the {vocab}-row table, not the \
             whole table{}",
            if par.tp > 1 {
                format!(
                    " (split {} ways: each GPU holds a share of the vocabulary)",
                    par.tp
                )
            } else {
                String::new()
            }
        ));
    }
    if let Some(e) = &experts {
        notes.push(format!(
            "MoE: each layer reads the expected number of distinct experts that {} token(s) x \
             top-{} touch under uniform routing: {:.2} of {} (E·(1-(1-k/E)^T))",
            e.tokens, e.experts_per_token, e.expected_distinct, e.num_experts
        ));
    }

    // KV cache: 2 x kv_heads x head_dim x dtype bytes per token per layer, for this GPU's
    // sequences and its share of the KV heads.
    let per_layer_token =
        t.kv_bytes_per_token_per_layer(precision.kv) * par.kv_head_share(t.num_key_value_heads);
    let windowed = t.sliding_window_layers;
    let full = t.num_hidden_layers - windowed;
    let window = t.sliding_window;
    let cached = full * context + windowed * cached_tokens(context, window);
    match phase {
        Phase::Decode => {
            bytes.kv_read = (sequences * cached) as f64 * per_layer_token;
            bytes.kv_write = (sequences * queries * t.num_hidden_layers) as f64 * per_layer_token;
        }
        Phase::Prefill => {
            bytes.kv_write = (sequences * cached) as f64 * per_layer_token;
            notes.push(
                "prefill: a fresh KV cache, written and not read; logits for the last token of \
                 each sequence only"
                    .to_string(),
            );
        }
    }
    if let Some(w) = window {
        notes.push(format!(
            "sliding window of {w} on {windowed} of {} layers: each of those holds at most {} \
             cached tokens",
            t.num_hidden_layers,
            w.saturating_sub(1)
        ));
    }

    let flops = transformer_flops(t, step, sequences, local_tokens);
    Work {
        bytes,
        flops,
        experts,
        notes,
    }
}

/// The FLOPs of one GPU's share of a step.
fn transformer_flops(
    t: &TransformerSpec,
    step: &Step,
    sequences: u64,
    local_tokens: u64,
) -> FlopBreakdown {
    let Step {
        phase,
        context,
        tokens,
        queries,
        par,
        ..
    } = *step;
    let tp = par.tp as f64;
    let table = (t.vocab_size * t.hidden_size) as f64;
    let windowed = t.sliding_window_layers;
    let full = t.num_hidden_layers - windowed;
    let window = t.sliding_window;
    // FLOPs: 2 per active decoder-layer parameter per token (Kaplan et al. 2020); the
    // embedding gather does none, the output projection is counted per logit row. Over GPUs:
    // attention and dense MLPs split tp ways for this GPU's tokens, norms and routers
    // replicated, the routed experts' FLOPs spread evenly over every GPU.
    let head_params = table;
    let embed_params = if t.tie_word_embeddings { 0.0 } else { table };
    let decoder_active = t.active_params() as f64 - head_params - embed_params;
    let expert_active = t.moe.as_ref().map_or(0.0, |m| {
        (t.part_params(Part::Experts) / m.num_experts * m.experts_per_token) as f64
    });
    let replicated = (t.part_params(Part::Norm) + t.part_params(Part::Router)) as f64;
    let split = decoder_active - expert_active - replicated;
    let linear = 2.0 * split / tp * local_tokens as f64
        + 2.0 * replicated * local_tokens as f64
        + 2.0 * expert_active * tokens as f64 / par.gpus() as f64;
    // Logits for each sequence's new tokens in decode (all k + 1 a verification checks), for
    // its last token in prefill.
    let logit_rows = match phase {
        Phase::Decode => sequences * queries,
        Phase::Prefill => sequences,
    };
    let lm_head = 2.0 * head_params / tp * logit_rows as f64;
    // Attention: QKᵀ and AV, 2·head_dim FLOPs each per key per query head; heads split tp ways.
    let per_key = 4.0 * (t.num_attention_heads * t.head_dim) as f64 / tp;
    let keys = full as f64 * keys_seen(phase, context, queries, None)
        + windowed as f64 * keys_seen(phase, context, queries, window);
    let attention = per_key * keys * sequences as f64;

    FlopBreakdown {
        linear,
        attention,
        lm_head,
        draft: 0.0,
    }
}

fn bare_work(b: &BareSpec, precision: &Precision, step: &Step) -> Work {
    let Step {
        phase,
        batch,
        context,
        tokens,
        queries,
        ..
    } = *step;
    let mut notes = vec![
        "bare form: every parameter counted as read once per step (the all-parameters \
         convention); kv_bytes_per_token taken as declared"
            .to_string(),
    ];
    let (kv_read, kv_write) = match phase {
        Phase::Decode => (
            (batch * context) as f64 * b.kv_bytes_per_token,
            (batch * queries) as f64 * b.kv_bytes_per_token,
        ),
        Phase::Prefill => (0.0, (batch * context) as f64 * b.kv_bytes_per_token),
    };
    if matches!(precision.scales, Scales::PerChannel | Scales::PerTensor) {
        notes.push(
            "bare form: per-channel or per-tensor scales are not counted (matrix shapes unknown)"
                .to_string(),
        );
    }
    let per_token = if let Some(f) = b.flops_per_token {
        notes.push("FLOPs = declared flops_per_token x tokens".to_string());
        f
    } else {
        notes.push("FLOPs = 2 x params per token, no attention term".to_string());
        2.0 * b.params
    };
    Work {
        bytes: ByteBreakdown {
            weights: b.params * precision.bytes_per_param_unshaped(),
            embedding: 0.0,
            lm_head: 0.0,
            kv_read,
            kv_write,
            scales: b.params * (precision.bytes_per_param_unshaped() - precision.weights.bytes()),
            draft: 0.0,
        },
        flops: FlopBreakdown {
            linear: per_token * tokens as f64,
            attention: 0.0,
            lm_head: 0.0,
            draft: 0.0,
        },
        experts: None,
        notes,
    }
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests;
