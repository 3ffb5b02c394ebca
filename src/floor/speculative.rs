//! The floor of a speculative-decoding round (Leviathan et al., "Fast Inference from
//! Transformers via Speculative Decoding", ICML 2023; Chen et al., "Accelerating Large Language
//! Model Decoding with Speculative Sampling", 2023). One round, per sequence:
//! - the draft proposes `k` tokens in `k` sequential decode steps of its own, its cache
//!   growing from `C` to `C + k - 1` tokens (none for n-gram drafting, which looks tokens up in
//!   the prompt on the CPU);
//! - the target verifies the `k + 1` positions in one pass: its weights read once, its cache of
//!   `C` tokens read once, `k + 1` tokens' K and V written, `k + 1` query tokens' FLOPs and
//!   logits, each query attending to the cache and the drafted tokens before it.
//!
//! The two run one after the other (the target needs the draft's tokens), so the round's floor
//! is the sum of the draft's steps' floors and the verification's, each the larger of its
//! memory and compute times. A round emits between 1 and `k + 1` tokens per sequence (the
//! accepted drafts and the target's own next token), which only the harness knows: the floor
//! per emitted token is the round's floor over the tokens it emitted, and utilisation (floor
//! over measured round time) is the same per round and per emitted token. The draft runs at the
//! case's precision and tensor-parallel degree, on the busiest GPU's sequences. Pure.

use serde::{Deserialize, Serialize};

use crate::case::{Parallelism, Phase, Speculation};
use crate::catalog::gpu::GpuSpec;
use crate::catalog::model::ModelSpec;
use crate::catalog::precision::Precision;

use super::{Floor, FloorError, floor_on, floor_step};

/// What a speculative round adds to a floor: the draft's share and the verification's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeculativeFloor {
    /// The draft model's name, or `ngram`.
    pub draft: String,
    /// Tokens drafted per sequence per round.
    pub k: u64,
    /// The target's verification pass of `k + 1` tokens per sequence, ms.
    pub verify_ms: f64,
    /// The draft's `k` steps, ms (0 for n-gram drafting).
    pub draft_ms: f64,
    /// Bytes the draft's steps move (included in the floor's byte total as `draft`).
    pub draft_bytes: f64,
    /// FLOPs the draft's steps do (included in the floor's FLOP total as `draft`).
    pub draft_flops: f64,
    /// The plain decode step's floor of the same case without speculation, ms: one token per
    /// sequence. A round that emits `n` tokens per sequence beats it when its floor over `n` is
    /// lower.
    pub plain_decode_ms: f64,
}

/// The floor of one speculative round of `spec` at `batch` sequences and `context` tokens;
/// `draft` is the draft model's spec (`None` for n-gram drafting).
#[expect(
    clippy::too_many_arguments,
    reason = "a case's coordinates with its draft"
)]
pub fn round_floor(
    target: &ModelSpec,
    draft: Option<&ModelSpec>,
    gpu: &GpuSpec,
    precision: &Precision,
    batch: u64,
    context: u64,
    par: Parallelism,
    spec: &Speculation,
) -> Result<Floor, FloorError> {
    if spec.k == 0 {
        return Err(FloorError::InvalidSpeculation {
            reason: "a draft length k of 0 drafts nothing".to_owned(),
        });
    }
    if draft.is_none() && spec.draft_model().is_some() {
        return Err(FloorError::InvalidSpeculation {
            reason: format!("the draft model {} is not known", spec.draft),
        });
    }
    let plain = floor_on(target, gpu, precision, Phase::Decode, batch, context, par)?;
    let mut round = floor_step(
        target,
        gpu,
        precision,
        Phase::Decode,
        batch,
        context,
        spec.k + 1,
        par,
    )?;
    let verify_ms = round.floor_ms;
    // The draft on the busiest GPU's sequences, split tp ways as the target is.
    let draft_par = Parallelism { tp: par.tp, ep: 1 };
    let draft_batch = par.sequences(batch);
    let (mut draft_ms, mut draft_bytes, mut draft_flops) = (0.0, 0.0, 0.0);
    if let Some(model) = draft {
        for i in 0..spec.k {
            let step = floor_on(
                model,
                gpu,
                precision,
                Phase::Decode,
                draft_batch,
                context + i,
                draft_par,
            )?;
            draft_ms += step.floor_ms;
            draft_bytes += step.total_bytes();
            draft_flops += step.total_flops();
        }
    }
    round.floor_ms = verify_ms + draft_ms;
    round.bytes.draft = draft_bytes;
    round.flops.draft = draft_flops;
    round.notes.push(match spec.draft_model() {
        Some(name) => format!(
            "speculative round: the draft {name} proposes {k} token(s) per sequence in {k} \
             sequential steps ({draft_ms:.3} ms at its floor, cache {context} to {} tokens), \
             then the target verifies {} per sequence in one pass ({verify_ms:.3} ms); they run \
             one after the other, so the floor is their sum",
            context + spec.k - 1,
            spec.k + 1,
            k = spec.k,
        ),
        None => format!(
            "speculative round: n-gram drafting proposes {k} token(s) per sequence from the \
             prompt (no GPU work counted), then the target verifies {} per sequence in one pass \
             ({verify_ms:.3} ms)",
            spec.k + 1,
            k = spec.k,
        ),
    });
    round.notes.push(format!(
        "a round emits 1 to {} tokens per sequence (the harness reports how many drafts were \
         accepted): its floor per emitted token is {:.3} ms over the tokens emitted; plain \
         decode's floor is {:.3} ms per token",
        spec.k + 1,
        round.floor_ms,
        plain.floor_ms
    ));
    round.speculative = Some(SpeculativeFloor {
        draft: spec.draft.clone(),
        k: spec.k,
        verify_ms,
        draft_ms,
        draft_bytes,
        draft_flops,
        plain_decode_ms: plain.floor_ms,
    });
    Ok(round)
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests;
