//! Tests of `floor::speculative`: a Llama 3.1 8B round drafted by Llama 3.2 1B, by hand.

use super::*;
use crate::case::{Axes, CaseKey};
use crate::catalog::gpu::gpu_by_name;
use crate::catalog::model::model_by_name;
use crate::floor::{Bound, floor_of_case};

fn bf16() -> Precision {
    Precision::parse("bf16", None).expect("bf16 parses")
}

fn spec(draft: &str, k: u64) -> Speculation {
    Speculation {
        draft: draft.to_owned(),
        k,
    }
}

fn eight_b_round(draft: &str, k: u64) -> Floor {
    let target = model_by_name("llama-3.1-8b").expect("in the catalogue");
    let draft_model = model_by_name(draft);
    let h100 = gpu_by_name("h100-sxm").expect("in the catalogue");
    round_floor(
        &target,
        draft_model.as_ref(),
        &h100,
        &bf16(),
        1,
        4096,
        Parallelism::SINGLE,
        &spec(draft, k),
    )
    .expect("floors")
}

/// Llama 3.2 1B (tied embeddings, 16 layers, 8 KV heads of 64): 1,235,814,400 parameters, of
/// which the 128,256 x 2,048 embedding is 262,668,288. One bf16 decode step at context C
/// reads its 973,146,112 decoder parameters (1,946,292,224 B), the tied matrix once
/// (525,336,576 B), C tokens of cache at 2 x 8 x 64 x 2 B x 16 layers = 32,768 B each, and
/// writes one token's 32,768 B. Four draft steps at C = 4096, 4097, 4098, 4099:
/// 4 x (1,946,292,224 + 525,336,576 + 32,768) + 32,768 x (4096 + 4097 + 4098 + 4099)
/// = 9,886,646,272 + 537,067,520 = 10,423,713,792 B.
#[test]
fn a_drafted_round_adds_the_drafts_steps_by_hand() {
    let round = eight_b_round("llama-3.2-1b", 4);
    let s = round.speculative.as_ref().expect("a speculative floor");
    assert_eq!(s.draft_bytes, 10_423_713_792.0);
    assert_eq!(round.bytes.draft, s.draft_bytes);
    let bandwidth = round.peak_bandwidth_bytes_per_s;
    // Every draft step is memory-bound (2.5 GFLOP against 2.5 GB on an H100).
    assert!((s.draft_ms - 10_423_713_792.0 / bandwidth * 1e3).abs() < 1e-9);
    assert_eq!(round.floor_ms, s.verify_ms + s.draft_ms);
    assert_eq!(s.k, 4);
    assert_eq!(s.draft, "llama-3.2-1b");
}

/// The verification pass of k + 1 = 5 tokens against plain decode's one: the same weights and
/// cache read, 4 more embedding rows (4,096 x 2 B) and 4 more tokens' K and V written
/// (131,072 B each); 5 logit rows; each query i attends to 4096 + i keys.
#[test]
fn verification_reads_the_weights_once_for_k_plus_one_tokens() {
    let round = eight_b_round("llama-3.2-1b", 4);
    let target = model_by_name("llama-3.1-8b").expect("in the catalogue");
    let h100 = gpu_by_name("h100-sxm").expect("in the catalogue");
    let plain =
        crate::floor::floor(&target, &h100, &bf16(), Phase::Decode, 1, 4096).expect("floors");
    let verify_bytes = round.total_bytes() - round.bytes.draft;
    assert_eq!(
        verify_bytes - plain.total_bytes(),
        4.0 * (8192.0 + 131_072.0)
    );
    assert_eq!(round.bytes.kv_read, plain.bytes.kv_read);
    assert_eq!(round.bytes.kv_write, 5.0 * 131_072.0);
    assert_eq!(round.flops.linear, 5.0 * plain.flops.linear);
    assert_eq!(round.flops.lm_head, 5.0 * plain.flops.lm_head);
    // 4 x 4096 FLOPs per key (QKᵀ and AV over 32 heads of 128), 32 layers, 5 x 4096 + 15 keys.
    assert_eq!(
        round.flops.attention,
        4.0 * 4096.0 * 32.0 * (5.0 * 4096.0 + 15.0)
    );
    let s = round.speculative.as_ref().expect("a speculative floor");
    assert_eq!(s.plain_decode_ms, plain.floor_ms);
    assert_eq!(round.bound, Bound::Memory);
    // The verification alone moves the bytes above at the H100's bandwidth.
    assert!((s.verify_ms - verify_bytes / round.peak_bandwidth_bytes_per_s * 1e3).abs() < 1e-9);
    // Emitting three tokens per round beats plain decode per token; one does not.
    assert!(round.floor_ms / 3.0 < plain.floor_ms);
    assert!(round.floor_ms > plain.floor_ms);
}

#[test]
fn n_gram_drafting_costs_the_gpu_nothing() {
    let round = eight_b_round("ngram", 3);
    let s = round.speculative.as_ref().expect("a speculative floor");
    assert_eq!(s.draft_ms, 0.0);
    assert_eq!(s.draft_bytes, 0.0);
    assert_eq!(round.floor_ms, s.verify_ms);
    assert!(round.notes.iter().any(|n| n.contains("n-gram")));
}

fn key(phase: Phase, axes: &[(&str, &str)]) -> CaseKey {
    CaseKey {
        suite: "spec".to_owned(),
        model: "llama-3.1-8b".to_owned(),
        precision: "bf16".to_owned(),
        phase,
        batch: 1,
        context: 4096,
        tp: 1,
        ep: 1,
        axes: Axes::new(axes.iter().copied()).expect("plain axes"),
    }
}

#[test]
fn a_case_key_with_a_draft_is_floored_as_a_round() {
    let target = model_by_name("llama-3.1-8b").expect("in the catalogue");
    let draft = model_by_name("llama-3.2-1b").expect("in the catalogue");
    let h100 = gpu_by_name("h100-sxm").expect("in the catalogue");
    let k = key(
        Phase::Decode,
        &[("draft", "llama-3.2-1b"), ("draft_k", "4")],
    );
    let by_key = floor_of_case(&target, Some(&draft), &h100, &bf16(), &k).expect("floors");
    assert_eq!(by_key, eight_b_round("llama-3.2-1b", 4));
    // Without the axes it is plain decode.
    let plain =
        floor_of_case(&target, None, &h100, &bf16(), &key(Phase::Decode, &[])).expect("floors");
    assert!(plain.speculative.is_none());
}

#[test]
fn rounds_that_cannot_be_floored_say_why() {
    let target = model_by_name("llama-3.1-8b").expect("in the catalogue");
    let h100 = gpu_by_name("h100-sxm").expect("in the catalogue");
    let prefill = key(Phase::Prefill, &[("draft", "ngram"), ("draft_k", "4")]);
    let err = floor_of_case(&target, None, &h100, &bf16(), &prefill).expect_err("prefill");
    assert!(err.to_string().contains("prefill"), "{err}");
    assert!(
        err.hint()
            .is_some_and(|h| h.contains("[suite.speculative]"))
    );
    let unknown = key(
        Phase::Decode,
        &[("draft", "no-such-model"), ("draft_k", "4")],
    );
    let err = floor_of_case(&target, None, &h100, &bf16(), &unknown).expect_err("unknown");
    assert!(err.to_string().contains("no-such-model"), "{err}");
    let zero = round_floor(
        &target,
        None,
        &h100,
        &bf16(),
        1,
        4096,
        Parallelism::SINGLE,
        &spec("ngram", 0),
    )
    .expect_err("k = 0");
    assert!(zero.to_string().contains("k of 0"), "{zero}");
}
