//! Tests of parallel floors, against hand computations written out here.

use crate::case::Phase;
use crate::catalog::gpu::gpu_by_name;
use crate::catalog::model::model_by_name;
use crate::catalog::precision::Precision;
use crate::floor::{Bound, FloorError, Parallelism, floor, floor_on, footprint_on};

fn bf16() -> Precision {
    Precision::parse("bf16", None).expect("bf16")
}

fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "got {got}, want {want}"
    );
}

/// Llama-3.1-70B, bf16, decode, batch 1, context 4096, tensor parallel over 4 H100 SXM.
#[test]
fn llama_70b_tp4_on_h100_by_hand() {
    let model = model_by_name("llama-3.1-70b").expect("built-in model");
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    let par = Parallelism { tp: 4, ep: 1 };
    let f = floor_on(&model, &h100, &bf16(), Phase::Decode, 1, 4096, par).expect("floor");

    // Per layer: q and o 8192 x 8192, k and v 1024 x 8192, gate, up and down 28672 x 8192.
    let per_layer = 2.0 * 8192.0 * 8192.0 + 2.0 * 1024.0 * 8192.0 + 3.0 * 28672.0 * 8192.0;
    let linear = 80.0 * per_layer;
    assert_eq!(linear, 68_451_041_280.0);
    let norms = 80.0 * 2.0 * 8192.0 + 8192.0;
    // Each GPU reads a quarter of the projections, every norm, a quarter of lm_head and of
    // the gathered embedding row.
    let weights = linear * 2.0 / 4.0 + norms * 2.0;
    close(f.bytes.weights, weights);
    close(f.bytes.lm_head, 128_256.0 * 8192.0 * 2.0 / 4.0);
    close(f.bytes.embedding, 8192.0 * 2.0 / 4.0);
    // 8 KV heads over 4 GPUs: 2 each, 2 x 2 x 128 x 2 bytes per token per layer.
    close(f.bytes.kv_read, 4096.0 * 80.0 * (2.0 * 2.0 * 128.0 * 2.0));
    close(f.bytes.kv_write, 80.0 * (2.0 * 2.0 * 128.0 * 2.0));
    let total = weights + 128_256.0 * 8192.0 * 2.0 / 4.0 + 4096.0 + 4097.0 * 80.0 * 1024.0;
    assert_eq!(total, 35_089_125_376.0);
    close(f.total_bytes(), total);
    // 35.09 GB at 3.35 TB/s: 10.474 ms, memory-bound.
    assert_eq!(f.bound, Bound::Memory);
    close(f.floor_ms, total / 3.35e12 * 1e3);
    assert_eq!((f.floor_ms * 1000.0).round(), 10_474.0);
    // Two all-reduces per layer of one token's 8192 bf16 activations; a ring over 4 sends
    // 2 x 3/4 of the message from each GPU: 160 x 1.5 x 16384 = 3,932,160 bytes at 450 GB/s.
    let p = f.parallel.as_ref().expect("parallel");
    assert_eq!((p.gpus, p.dp, p.comms.all_reduces), (4, 1, 160));
    close(p.comms.all_reduce_bytes, 160.0 * 1.5 * 8192.0 * 2.0);
    assert_eq!(p.comms.all_to_all_bytes, 0.0);
    close(f.comms_ms(), 3_932_160.0 / 450e9 * 1e3);
    // FLOPs: a quarter of the projections, the norms whole, a quarter of the heads and of
    // lm_head.
    close(f.flops.linear, 2.0 * linear / 4.0 + 2.0 * norms);
    close(f.flops.attention, 4.0 * 64.0 * 128.0 / 4.0 * 80.0 * 4097.0);
    close(f.flops.lm_head, 2.0 * 128_256.0 * 8192.0 / 4.0);
    // The whole model does not fit one H100; a quarter of it does.
    let one = footprint_on(&model, &bf16(), Phase::Decode, 1, 4096, Parallelism::SINGLE);
    let four = footprint_on(&model, &bf16(), Phase::Decode, 1, 4096, par);
    assert!(one.weights_bytes > 80e9 && four.weights_bytes < 40e9);
}

/// Over PCIe the all-reduces of a 4096-token prefill bind: the note says so.
#[test]
fn llama_70b_tp4_prefill_over_pcie_is_communication_bound() {
    let model = model_by_name("llama-3.1-70b").expect("built-in model");
    let pcie = gpu_by_name("h100-pcie").expect("catalogue entry");
    let par = Parallelism { tp: 4, ep: 1 };
    let f = floor_on(&model, &pcie, &bf16(), Phase::Prefill, 1, 4096, par).expect("floor");
    // 160 all-reduces of 4096 x 8192 x 2 bytes, 1.5x each: 16.1 GB at 64 GB/s = 251.7 ms.
    let sent = 160.0 * 1.5 * 4096.0 * 8192.0 * 2.0;
    close(f.comms_ms(), sent / 64e9 * 1e3);
    assert_eq!((f.comms_ms()).round(), 252.0);
    // Compute: 2 x 68.45e9 / 4 x 4096 tokens alone is 280 TFLOP, 185 ms at 756 TFLOP/s.
    assert!(f.compute_ms() < f.comms_ms());
    assert_eq!(f.bound, Bound::Comms);
    close(f.floor_ms, f.comms_ms());
    assert!(f.notes.iter().any(|n| n.contains("communication binds")));
}

/// Mixtral-8x7B, bf16, decode, batch 8, context 4096, experts over 8 H200s with
/// data-parallel attention (tp 1, ep 8: one sequence per GPU).
#[test]
fn mixtral_ep8_on_h200_by_hand() {
    let model = model_by_name("mixtral-8x7b").expect("built-in model");
    let h200 = gpu_by_name("h200").expect("catalogue entry");
    let par = Parallelism { tp: 1, ep: 8 };
    let f = floor_on(&model, &h200, &bf16(), Phase::Decode, 8, 4096, par).expect("floor");
    let p = f.parallel.as_ref().expect("parallel");
    assert_eq!((p.gpus, p.dp, p.sequences_per_gpu), (8, 8, 1));

    // Attention (q, o 4096 x 4096; k, v 1024 x 4096) per layer, replicated on every GPU.
    let attention = 32.0 * (2.0 * 4096.0 * 4096.0 + 2.0 * 1024.0 * 4096.0);
    let router = 32.0 * 8.0 * 4096.0;
    let norms = 32.0 * 2.0 * 4096.0 + 4096.0;
    // Experts: 32 layers x 8 x (w1, w3: 14336 x 4096; w2: 4096 x 14336). The 8 tokens touch
    // 8 x (1 - (1 - 2/8)^8) = 7.199 distinct experts per layer; each GPU holds one expert of
    // each layer and reads it with that probability, 7.199 / 8.
    let experts = 32.0 * 8.0 * 3.0 * 14336.0 * 4096.0;
    let touched = 8.0 * (1.0 - 0.75f64.powi(8));
    close(touched, 7.199_096_679_687_5);
    let weights = (attention + router + norms) * 2.0 + experts * 2.0 * (touched / 8.0) / 8.0;
    close(f.bytes.weights, weights);
    // One sequence per GPU: 4096 cached tokens x 32 layers x (2 x 8 x 128 x 2) bytes.
    close(f.bytes.kv_read, 4096.0 * 32.0 * 4096.0);
    close(f.bytes.lm_head, 32_000.0 * 4096.0 * 2.0);
    // All-to-all: each GPU's one token goes to 2 experts, 7/8 of them remote, and comes back:
    // 32 layers x 2 x 1 x 2 x 7/8 x 4096 x 2 bytes = 917,504 bytes; no all-reduce (tp 1).
    assert_eq!(p.comms.all_reduces, 0);
    assert_eq!(p.comms.all_to_all_layers, 32);
    close(
        p.comms.all_to_all_bytes,
        32.0 * 2.0 * 1.0 * 2.0 * 7.0 / 8.0 * 4096.0 * 2.0,
    );
    assert_eq!(p.comms.all_to_all_bytes, 917_504.0);
    // FLOPs: the busiest GPU's token through the replicated attention, and an eighth of the
    // step's routed expert FLOPs (8 tokens x 2 experts).
    let active_experts = experts / 8.0 * 2.0;
    close(
        f.flops.linear,
        2.0 * (attention + router + norms) + 2.0 * active_experts * 8.0 / 8.0,
    );
    assert_eq!(f.bound, Bound::Memory);
    close(f.floor_ms, f.total_bytes() / 4.8e12 * 1e3);
    // Against one H200 the per-GPU floor falls: each GPU reads an eighth of the experts.
    let one = floor(&model, &h200, &bf16(), Phase::Decode, 8, 4096).expect("floor");
    assert!(f.floor_ms < one.floor_ms / 3.0);
}

/// Qwen3-30B-A3B with tp 2 and ep 4: two data-parallel attention groups of two GPUs each;
/// mixture-of-experts layers all-reduce their attention only.
#[test]
fn tensor_and_expert_parallel_together_count_both_collectives() {
    let model = model_by_name("qwen3-30b-a3b").expect("built-in model");
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    let par = Parallelism { tp: 2, ep: 4 };
    let f = floor_on(&model, &h100, &bf16(), Phase::Decode, 16, 1024, par).expect("floor");
    let p = f.parallel.as_ref().expect("parallel");
    // 4 GPUs, 2 groups of 8 sequences; 48 MoE layers: one all-reduce each.
    assert_eq!((p.gpus, p.dp, p.sequences_per_gpu), (4, 2, 8));
    assert_eq!(p.comms.all_reduces, 48);
    // 8 tokens x 2048 x 2 bytes, ring over 2 sends 2 x 1/2 of it.
    close(p.comms.all_reduce_bytes, 48.0 * 1.0 * 8.0 * 2048.0 * 2.0);
    // Each GPU dispatches half its group's 8 tokens to 8 experts, 3/4 remote, and back.
    close(
        p.comms.all_to_all_bytes,
        48.0 * 2.0 * (8.0 / 2.0) * 8.0 * 3.0 / 4.0 * 2048.0 * 2.0,
    );
}

#[test]
fn layouts_that_do_not_fit_the_model_are_errors_with_a_hint() {
    let dense = model_by_name("llama-3.1-8b").expect("built-in model");
    let moe = model_by_name("mixtral-8x7b").expect("built-in model");
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    let at = |m, tp, ep| {
        floor_on(
            m,
            &h100,
            &bf16(),
            Phase::Decode,
            1,
            16,
            Parallelism { tp, ep },
        )
        .expect_err("should be refused")
    };
    for (err, needle) in [
        (at(&dense, 1, 2), "mixture-of-experts"),
        (at(&dense, 3, 1), "does not divide the 32 attention heads"),
        (at(&moe, 1, 3), "does not divide the 8 experts"),
        (at(&moe, 4, 2), "not a multiple of tp"),
        (at(&dense, 0, 1), "at least 1"),
    ] {
        assert!(err.to_string().contains(needle), "{err}");
        assert!(err.hint().is_some());
    }
    let bare = crate::catalog::ModelSpec::bare(8e9, 131_072.0, None).expect("bare");
    assert!(matches!(
        at(&bare, 2, 1),
        FloorError::InvalidParallelism { .. }
    ));
    // A declared GPU without a link cannot floor a parallel step.
    let mut t = std::collections::BTreeMap::new();
    t.insert("bf16".to_string(), 100.0);
    let lab = crate::catalog::GpuSpec::declared("lab", 1000.0, &t, None).expect("declared");
    let err = floor_on(
        &dense,
        &lab,
        &bf16(),
        Phase::Decode,
        1,
        16,
        Parallelism { tp: 2, ep: 1 },
    )
    .expect_err("no link");
    assert_eq!(err, FloorError::NoInterconnect { gpu: "lab".into() });
}

/// One GPU under `floor_on` is exactly `floor`.
#[test]
fn a_single_gpu_layout_changes_nothing() {
    let model = model_by_name("qwen3-30b-a3b").expect("built-in model");
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    let a = floor(&model, &h100, &bf16(), Phase::Prefill, 2, 512).expect("floor");
    let b = floor_on(
        &model,
        &h100,
        &bf16(),
        Phase::Prefill,
        2,
        512,
        Parallelism::SINGLE,
    )
    .expect("floor");
    assert_eq!(a, b);
    assert!(b.parallel.is_none());
}
