//! A step spread over several GPUs: tensor parallelism (`tp`) and, for mixture-of-experts
//! models, expert parallelism (`ep`). Each GPU's share of the weights, the KV cache and the
//! FLOPs, and the collective traffic one step sends over the interconnect. Pure.
//!
//! The layout (Megatron-LM's tensor parallelism, Shoeybi et al. 2019, §3; expert parallelism
//! as `vLLM` and `SGLang` deploy it, with DeepSeek-V3's data-parallel attention, DeepSeek-AI 2024,
//! §3.4):
//! - The step runs on `max(tp, ep)` GPUs. Attention, dense MLPs and `lm_head` are split `tp`
//!   ways (column- then row-parallel, heads split across GPUs); with `ep > tp` the attention
//!   runs in `ep / tp` data-parallel groups, each with its share of the sequences, so `ep` must
//!   be a multiple of `tp`.
//! - Experts are split over all the GPUs: whole experts, `E / ep` per GPU, with `ep > 1`;
//!   each expert's matrices split `tp` ways otherwise. Norms and routers are replicated.
//! - KV heads are split `tp` ways (a GPU holds `ceil(kv_heads / tp)` of them: when
//!   `kv_heads < tp` they are replicated), sequences `dp` ways.
//! - The floor is the busiest GPU's: `ceil(batch / dp)` sequences.
//!
//! Collectives per step, each GPU's bytes sent (it receives as much at the same time):
//! - Tensor parallelism all-reduces the activations after the attention and after the MLP of
//!   every layer (Shoeybi et al. §3: two all-reduces per layer in the forward pass); a
//!   mixture-of-experts layer under expert parallelism combines its output by all-to-all
//!   instead, so it all-reduces once. A ring all-reduce of S bytes over n GPUs sends
//!   `2 (n - 1) / n x S` from each (Patarasuk and Yuan, "Bandwidth optimal all-reduce
//!   algorithms for clusters of workstations", JPDC 2009); S = tokens x hidden x 2 (bf16).
//! - Expert parallelism sends each token's hidden state to its k experts (dispatch) and back
//!   (combine); under uniform routing a fraction `(ep - 1) / ep` of them live on another GPU.
//!   Each GPU dispatches its `1 / tp` share of its group's tokens:
//!   `2 x tokens / tp x k x (ep - 1) / ep x hidden x 2` bytes per mixture-of-experts layer.
//!
//! Overlap: communication is a third roofline resource, `time >= bytes sent / link
//! bandwidth`, and the floor is the largest of memory, compute and communication, as if each
//! overlapped the others perfectly (a lower bound; real engines overlap only part). The
//! latency of each collective (microseconds, twice per layer) is not counted.

use serde::{Deserialize, Serialize};

use crate::case::{Parallelism, Phase};
use crate::catalog::gpu::GpuSpec;
use crate::catalog::model::{ModelSpec, TransformerSpec};

use super::FloorError;

/// Bytes per activation element in the collectives: bf16.
const ACTIVATION_BYTES: f64 = 2.0;

/// Collective traffic of one step on one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comms {
    /// All-reduces per step (tensor parallelism).
    pub all_reduces: u64,
    /// Bytes one GPU sends in them: `count x 2 (tp - 1) / tp x tokens x hidden x 2`.
    pub all_reduce_bytes: f64,
    /// Mixture-of-experts layers that dispatch and combine by all-to-all (expert parallelism).
    pub all_to_all_layers: u64,
    /// Bytes one GPU sends in them.
    pub all_to_all_bytes: f64,
    /// The link, e.g. `NVLink 4`.
    pub link: String,
    /// What one GPU sends per second over it.
    pub link_bytes_per_s: f64,
}

impl Comms {
    #[must_use]
    pub fn total_bytes(&self) -> f64 {
        self.all_reduce_bytes + self.all_to_all_bytes
    }

    /// The time the bytes take at the link's bandwidth.
    #[must_use]
    pub fn ms(&self) -> f64 {
        self.total_bytes() / self.link_bytes_per_s * 1e3
    }
}

/// The parallel layout of a floor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelFloor {
    pub tp: u64,
    pub ep: u64,
    pub gpus: u64,
    /// Data-parallel attention groups (`gpus / tp`).
    pub dp: u64,
    /// Sequences on the busiest GPU.
    pub sequences_per_gpu: u64,
    pub comms: Comms,
}

/// Check that `par` fits the model.
pub(super) fn check(model: &ModelSpec, par: Parallelism) -> Result<(), FloorError> {
    let bad = |reason: String| Err(FloorError::InvalidParallelism { reason });
    if par.tp == 0 || par.ep == 0 {
        return bad("tp and ep must be at least 1".to_string());
    }
    if par.is_single() {
        return Ok(());
    }
    let ModelSpec::Transformer(t) = model else {
        return bad(
            "the bare form cannot be split over GPUs (its layer shapes are unknown): declare \
             the model's config.json"
                .to_string(),
        );
    };
    if t.num_attention_heads % par.tp != 0 {
        return bad(format!(
            "tp = {} does not divide the {} attention heads",
            par.tp, t.num_attention_heads
        ));
    }
    if par.ep > 1 {
        let Some(moe) = &t.moe else {
            return bad(format!(
                "ep = {} needs a mixture-of-experts model; {} is dense",
                par.ep, t.model_type
            ));
        };
        if moe.num_experts % par.ep != 0 {
            return bad(format!(
                "ep = {} does not divide the {} experts",
                par.ep, moe.num_experts
            ));
        }
        if !par.ep.is_multiple_of(par.tp) {
            return bad(format!(
                "ep = {} is not a multiple of tp = {}: attention runs tp-way in ep / tp \
                 data-parallel groups",
                par.ep, par.tp
            ));
        }
    }
    Ok(())
}

/// The layout of a step over GPUs and its collectives; `None` on one GPU.
pub(super) fn layout(
    t: &TransformerSpec,
    gpu: &GpuSpec,
    par: Parallelism,
    phase: Phase,
    batch: u64,
    context: u64,
    queries: u64,
) -> Result<Option<ParallelFloor>, FloorError> {
    if par.is_single() {
        return Ok(None);
    }
    let sequences = par.sequences(batch);
    let tokens = match phase {
        Phase::Decode => sequences * queries,
        Phase::Prefill => sequences * context,
    };
    Ok(Some(ParallelFloor {
        tp: par.tp,
        ep: par.ep,
        gpus: par.gpus(),
        dp: par.dp(),
        sequences_per_gpu: sequences,
        comms: comms(t, gpu, par, tokens)?,
    }))
}

/// The collectives of one step on the busiest GPU, `tokens` being its attention group's
/// tokens (its sequences, times the prompt in prefill).
pub(super) fn comms(
    t: &TransformerSpec,
    gpu: &GpuSpec,
    par: Parallelism,
    tokens: u64,
) -> Result<Comms, FloorError> {
    let link = gpu
        .interconnect
        .as_ref()
        .ok_or_else(|| FloorError::NoInterconnect {
            gpu: gpu.name.clone(),
        })?;
    let hidden = t.hidden_size as f64;
    let moe_layers = t.moe.as_ref().map_or(0, |m| m.moe_layers);
    let all_reduces = if par.tp > 1 {
        // Two per layer; a mixture-of-experts layer under expert parallelism combines by
        // all-to-all and all-reduces its attention only.
        2 * t.num_hidden_layers - if par.ep > 1 { moe_layers } else { 0 }
    } else {
        0
    };
    let tp = par.tp as f64;
    let message = tokens as f64 * hidden * ACTIVATION_BYTES;
    let all_reduce_bytes = all_reduces as f64 * 2.0 * (tp - 1.0) / tp * message;
    let (all_to_all_layers, all_to_all_bytes) = match (&t.moe, par.ep) {
        (Some(m), ep) if ep > 1 => {
            let ep = ep as f64;
            let per_layer = 2.0 * tokens as f64 / tp * m.experts_per_token as f64 * (ep - 1.0) / ep
                * hidden
                * ACTIVATION_BYTES;
            (moe_layers, moe_layers as f64 * per_layer)
        }
        _ => (0, 0.0),
    };
    Ok(Comms {
        all_reduces,
        all_reduce_bytes,
        all_to_all_layers,
        all_to_all_bytes,
        link: link.name.clone(),
        link_bytes_per_s: link.bytes_per_s,
    })
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests;
