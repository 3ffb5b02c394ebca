//! Tests of `floor`.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::catalog::gpu::gpu_by_name;
use crate::catalog::model::model_by_name;
use crate::catalog::precision::{QuantScope, StorageDtype};

fn gpu(bandwidth_gb_s: f64, bf16_tflops: f64) -> GpuSpec {
    let mut t = BTreeMap::new();
    t.insert("bf16".to_string(), bf16_tflops);
    t.insert("fp8".to_string(), 2.0 * bf16_tflops);
    GpuSpec::declared("test", bandwidth_gb_s, &t, None).expect("should succeed")
}

fn bf16() -> Precision {
    Precision::parse("bf16", None).expect("should succeed")
}

/// Three significant digits.
fn sig3(x: f64) -> f64 {
    let digits = x.abs().log10().floor();
    let scale = 10f64.powf(2.0 - digits);
    (x * scale).round() / scale
}

#[test]
fn worked_example_bare_form() {
    let model = ModelSpec::bare(8.0e9, 131_072.0, None).expect("should succeed");
    let h = gpu(3350.0, 989.0);
    let decode = floor(&model, &h, &bf16(), Phase::Decode, 1, 4096).expect("should succeed");
    assert_eq!(decode.bound, Bound::Memory);
    assert_eq!(sig3(decode.floor_ms), 4.94);
    // 8e9 x 2 + 4096 x 131072 read + 131072 written.
    assert_eq!(decode.total_bytes(), 16e9 + 4096.0 * 131_072.0 + 131_072.0);
    let prefill = floor(&model, &h, &bf16(), Phase::Prefill, 1, 2048).expect("should succeed");
    assert_eq!(prefill.bound, Bound::Compute);
    assert_eq!(sig3(prefill.floor_ms), 33.1);
    assert_eq!(prefill.total_flops(), 2.0 * 8e9 * 2048.0);
    let slow = decode.utilisation(9.8);
    assert_eq!((slow.mbu * 100.0).round(), 50.0);
    let fast = decode.utilisation(6.0);
    assert_eq!((fast.mbu * 100.0).round(), 82.0);
    assert_eq!(fast.utilisation, fast.mbu);
}

#[test]
fn exact_form_reads_gathered_rows_not_the_table() {
    let model = model_by_name("llama-3.1-8b").expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    let f = floor(&model, &h, &bf16(), Phase::Decode, 1, 4096).expect("should succeed");
    let ModelSpec::Transformer(t) = &model else {
        unreachable!()
    };
    // One row of 4096 bf16 values.
    assert_eq!(f.bytes.embedding, 4096.0 * 2.0);
    assert_eq!(f.bytes.lm_head, 128_256.0 * 4096.0 * 2.0);
    // The embedding table is 6.5% of the all-parameters bytes.
    let table_share = t.part_params(Part::Embedding) as f64 / t.total_params() as f64;
    assert_eq!((table_share * 1000.0).round(), 65.0);
    let all_params = 2.0 * t.total_params() as f64;
    let exact_weights = f.bytes.weights + f.bytes.embedding + f.bytes.lm_head;
    assert!((all_params - exact_weights - 2.0 * (525_336_576.0 - 4096.0)).abs() < 1.0);
    // KV: 4096 tokens x 131072 bytes read, one token written.
    assert_eq!(f.bytes.kv_read, 4096.0 * 131_072.0);
    assert_eq!(f.bytes.kv_write, 131_072.0);
    // FLOPs: 2 x decoder parameters + lm_head + attention over 4097 keys.
    let decoder = t.total_params() as f64 - 2.0 * 525_336_576.0;
    assert_eq!(f.flops.linear, 2.0 * decoder);
    assert_eq!(f.flops.lm_head, 2.0 * 525_336_576.0);
    assert_eq!(f.flops.attention, 4.0 * 4096.0 * 4097.0 * 32.0);
}

/// The figures README "How the floor is computed" quotes for Llama-3.1-8B, bf16, decode, batch 1, context 4096,
/// on an H100 SXM: the exact floor and the all-parameters floor of the same model.
#[test]
fn exact_and_all_parameters_conventions_as_documented() {
    let h = gpu_by_name("h100-sxm").expect("catalogue entry");
    let exact = model_by_name("llama-3.1-8b").expect("built-in model");
    let all = ModelSpec::bare(8_030_261_248.0, 131_072.0, None).expect("valid bare form");
    let e = floor(&exact, &h, &bf16(), Phase::Decode, 1, 4096).expect("floor");
    let a = floor(&all, &h, &bf16(), Phase::Decode, 1, 4096).expect("floor");
    assert_eq!((e.floor_ms * 1000.0).round(), 4641.0);
    assert_eq!((a.floor_ms * 1000.0).round(), 4954.0);
    // The difference is the input embedding table less the one gathered row.
    let diff = a.total_bytes() - e.total_bytes();
    assert_eq!(diff, 2.0 * (128_256.0 * 4096.0 - 4096.0));
}

#[test]
fn tied_embeddings_are_one_matrix() {
    let model = model_by_name("gemma-2-9b").expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    let f = floor(&model, &h, &bf16(), Phase::Decode, 4, 100).expect("should succeed");
    assert_eq!(f.bytes.embedding, 0.0);
    assert_eq!(f.bytes.lm_head, 256_000.0 * 3584.0 * 2.0);
    // Every stored byte is read once at batch 4 for a dense tied model.
    assert_eq!(
        f.bytes.weights + f.bytes.lm_head,
        model.weight_bytes(&bf16())
    );
}

#[test]
fn sliding_window_caps_the_kv_read() {
    let model = model_by_name("mistral-7b-v0.1").expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    let at = |c| floor(&model, &h, &bf16(), Phase::Decode, 1, c).expect("should succeed");
    let per_token = 131_072.0;
    assert_eq!(at(1000).bytes.kv_read, 1000.0 * per_token);
    assert_eq!(at(4095).bytes.kv_read, 4095.0 * per_token);
    assert_eq!(at(32_000).bytes.kv_read, 4095.0 * per_token);
    assert_eq!(at(32_000).flops.attention, at(4095).flops.attention);
    // Gemma-2: only half its layers slide.
    let g = model_by_name("gemma-2-2b").expect("should succeed");
    let ModelSpec::Transformer(t) = &g else {
        unreachable!()
    };
    let per_layer = t.kv_bytes_per_token_per_layer(bf16().kv);
    let f = floor(&g, &h, &bf16(), Phase::Decode, 1, 8000).expect("should succeed");
    assert_eq!(f.bytes.kv_read, (13.0 * 8000.0 + 13.0 * 4095.0) * per_layer);
    // Prefill with a window: Σ min(i, W).
    assert_eq!(
        keys_seen(Phase::Prefill, 5, 1, Some(3)),
        1.0 + 2.0 + 3.0 + 3.0 + 3.0
    );
    assert_eq!(keys_seen(Phase::Prefill, 5, 1, None), 15.0);
}

#[test]
fn moe_reads_expected_distinct_experts() {
    assert_eq!(expected_distinct_experts(8, 2, 1), 2.0);
    assert!((expected_distinct_experts(8, 2, 2) - 8.0 * (1.0 - 0.75f64.powi(2))).abs() < 1e-12);
    assert!((expected_distinct_experts(8, 2, 10_000) - 8.0).abs() < 1e-9);
    assert_eq!(expected_distinct_experts(8, 8, 1), 8.0);
    let model = model_by_name("mixtral-8x7b").expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    let ModelSpec::Transformer(t) = &model else {
        unreachable!()
    };
    let experts = t.part_params(Part::Experts) as f64 * 2.0;
    let b1 = floor(&model, &h, &bf16(), Phase::Decode, 1, 0).expect("should succeed");
    let b8 = floor(&model, &h, &bf16(), Phase::Decode, 8, 0).expect("should succeed");
    let others =
        t.part_params(Part::Attention) + t.part_params(Part::Norm) + t.part_params(Part::Router);
    let others = others as f64 * 2.0;
    assert!((b1.bytes.weights - others - experts * 2.0 / 8.0).abs() < 1.0);
    let d8 = expected_distinct_experts(8, 2, 8);
    assert!((b8.bytes.weights - others - experts * d8 / 8.0).abs() < 1.0);
    assert!(b8.notes.iter().any(|n| n.contains("uniform routing")));
    assert_eq!(b8.experts.as_ref().expect("should succeed").tokens, 8);
    // Compute follows the active parameters: 2 experts per token, whatever the batch.
    assert_eq!(b8.flops.linear, 8.0 * b1.flops.linear);
}

#[test]
fn quantised_precision_picks_bytes_and_peak() {
    let model = ModelSpec::bare(8.0e9, 131_072.0, None).expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    let int4 = Precision::parse("int4-g128", None).expect("should succeed");
    let f = floor(&model, &h, &int4, Phase::Decode, 1, 0).expect("should succeed");
    assert_eq!(f.bytes.weights, 8e9 * (0.5 + 2.0 / 128.0));
    // Weight-only quantisation keeps the 16-bit peak; fp8 x fp8 uses the fp8 peak.
    assert_eq!(f.peak_flops_per_s, 989.4e12);
    let fp8 = Precision::parse("fp8", None).expect("should succeed");
    let f = floor(&model, &h, &fp8, Phase::Prefill, 1, 2048).expect("should succeed");
    assert_eq!(f.peak_flops_per_s, 1978.9e12);
    assert_eq!(f.compute_dtype, ComputeDtype::Fp8);
    // No fp8 on A100: a clear error.
    let a100 = gpu_by_name("a100-80gb").expect("should succeed");
    let err = floor(&model, &a100, &fp8, Phase::Decode, 1, 1).expect_err("should fail");
    assert!(err.to_string().contains("fp8") && err.to_string().contains("bf16"));
    assert!(err.hint().is_some());
}

#[test]
fn invalid_inputs_are_errors() {
    let model = ModelSpec::bare(1e9, 1.0, None).expect("should succeed");
    let h = gpu(1000.0, 100.0);
    assert_eq!(
        floor(&model, &h, &bf16(), Phase::Decode, 0, 1),
        Err(FloorError::ZeroBatch)
    );
    assert_eq!(
        floor(&model, &h, &bf16(), Phase::Prefill, 1, 0),
        Err(FloorError::EmptyPrefill)
    );
    let mut broken = h.clone();
    broken.mem_bandwidth_bytes_per_s = 0.0;
    assert!(floor(&model, &broken, &bf16(), Phase::Decode, 1, 1).is_err());
}

#[test]
fn utilisation_is_the_larger_of_mbu_and_mfu() {
    let model = model_by_name("llama-3.1-8b").expect("should succeed");
    let h = gpu_by_name("h100-sxm").expect("should succeed");
    for (phase, batch, context) in [(Phase::Decode, 1, 4096), (Phase::Prefill, 4, 2048)] {
        let f = floor(&model, &h, &bf16(), phase, batch, context).expect("should succeed");
        let u = f.utilisation(f.floor_ms * 2.0);
        assert!((u.utilisation - 0.5).abs() < 1e-12);
        assert!((u.utilisation - u.mbu.max(u.mfu)).abs() < 1e-12);
    }
}

fn bare_strategy() -> impl Strategy<Value = ModelSpec> {
    (1e8f64..1e12, 0f64..1e7)
        .prop_map(|(p, kv)| ModelSpec::bare(p, kv, None).expect("should succeed"))
}

fn any_model() -> impl Strategy<Value = ModelSpec> {
    prop_oneof![
        bare_strategy(),
        prop::sample::select(crate::catalog::model::known_models())
            .prop_map(|n| model_by_name(n).expect("should succeed")),
    ]
}

fn any_phase() -> impl Strategy<Value = Phase> {
    prop_oneof![Just(Phase::Decode), Just(Phase::Prefill)]
}

proptest! {
    /// Linear in bytes: doubling the bandwidth halves the memory time exactly.
    #[test]
    fn memory_time_scales_inversely_with_bandwidth(
        model in any_model(), phase in any_phase(), batch in 1u64..256,
        context in 1u64..65_536, bw in 100f64..10_000.0,
    ) {
        let a = floor(&model, &gpu(bw, 500.0), &bf16(), phase, batch, context).expect("should succeed");
        let b = floor(&model, &gpu(2.0 * bw, 500.0), &bf16(), phase, batch, context).expect("should succeed");
        prop_assert!((a.memory_ms() - 2.0 * b.memory_ms()).abs() <= 1e-9 * a.memory_ms());
        prop_assert_eq!(a.total_bytes(), b.total_bytes());
        prop_assert!(b.floor_ms <= a.floor_ms);
    }

    #[test]
    fn floor_is_monotone_in_batch_and_context(
        model in any_model(), phase in any_phase(), batch in 1u64..128,
        context in 1u64..32_768, more in 0u64..4096,
    ) {
        let h = gpu_by_name("h100-sxm").expect("should succeed");
        let base = floor(&model, &h, &bf16(), phase, batch, context).expect("should succeed");
        let wider = floor(&model, &h, &bf16(), phase, batch + 1 + more / 64, context).expect("should succeed");
        let longer = floor(&model, &h, &bf16(), phase, batch, context + more).expect("should succeed");
        prop_assert!(wider.floor_ms >= base.floor_ms);
        prop_assert!(wider.total_bytes() >= base.total_bytes());
        prop_assert!(wider.total_flops() >= base.total_flops());
        prop_assert!(longer.floor_ms >= base.floor_ms);
        prop_assert!(longer.total_bytes() >= base.total_bytes());
        prop_assert!(longer.total_flops() >= base.total_flops());
    }

    #[test]
    fn floor_is_the_larger_bound(
        model in any_model(), phase in any_phase(), batch in 1u64..512, context in 1u64..65_536,
    ) {
        let h = gpu_by_name("h200").expect("should succeed");
        let f = floor(&model, &h, &bf16(), phase, batch, context).expect("should succeed");
        prop_assert_eq!(f.floor_ms, f.memory_ms().max(f.compute_ms()));
        let expect = if f.memory_ms() >= f.compute_ms() { Bound::Memory } else { Bound::Compute };
        prop_assert_eq!(f.bound, expect);
    }

    #[test]
    fn expected_experts_between_k_and_e(e in 1u64..256, k_seed in 0u64..1000, t in 1u64..100_000) {
        let k = 1 + k_seed % e;
        let d = expected_distinct_experts(e, k, t);
        prop_assert!(d >= k as f64 - 1e-9 && d <= e as f64 + 1e-9);
        prop_assert!(expected_distinct_experts(e, k, t + 1) >= d - 1e-9);
    }
}

/// Llama-3.1-8B's shapes, for the formats' hand computations: 32 layers of q (4096 x 4096),
/// k and v (1024 x 4096), o (4096 x 4096), gate and up (14336 x 4096), down (4096 x 14336).
const LLAMA_LINEAR: f64 =
    32.0 * (4096.0 * 4096.0 * 2.0 + 1024.0 * 4096.0 * 2.0 + 3.0 * 14336.0 * 4096.0);
/// Seven matrices per layer.
const LLAMA_MATRICES: f64 = 32.0 * 7.0;
/// Unquantised, in bf16: two norms per layer and the final norm, one gathered embedding row,
/// the output projection.
const LLAMA_BF16_REST: f64 = 2.0 * (32.0 * 2.0 * 4096.0 + 4096.0 + 4096.0 + 128_256.0 * 4096.0);
/// KV elements of a decode step at context 4096: 4096 cached tokens read and one written, each
/// 32 layers x K and V x 8 heads x 128.
const LLAMA_KV_ELEMENTS: f64 = (4096.0 + 1.0) * 32.0 * 2.0 * 8.0 * 128.0;

fn llama_decode_bytes(precision: &str, kv: Option<&str>) -> f64 {
    let model = model_by_name("llama-3.1-8b").expect("built-in model");
    let h = gpu_by_name("b200").expect("catalogue entry");
    let p = Precision::parse(precision, kv).expect("valid precision");
    floor(&model, &h, &p, Phase::Decode, 1, 4096)
        .expect("floor")
        .total_bytes()
}

/// Within a byte of rounding.
fn assert_bytes(got: f64, want: f64) {
    assert!((got - want).abs() < 1.0, "got {got}, want {want}");
}

#[test]
fn nvfp4_bytes_of_a_llama_decode_step() {
    // E2M1 values (0.5 B), an E4M3 scale per 16 (1/16 B), an FP32 scale per matrix; fp8 cache.
    let want = LLAMA_LINEAR * (0.5 + 1.0 / 16.0)
        + LLAMA_MATRICES * 4.0
        + LLAMA_BF16_REST
        + LLAMA_KV_ELEMENTS * 1.0;
    assert_bytes(llama_decode_bytes("nvfp4", None), want);
    // 3,925,868,544 + 896 + 1,051,213,824 + 268,500,992 = 5,245,584,256 bytes.
    assert_bytes(want, 5_245_584_256.0);
}

#[test]
fn mxfp4_bytes_of_a_llama_decode_step() {
    // E2M1 values, an E8M0 scale per 32; fp8 cache.
    let want = LLAMA_LINEAR * (0.5 + 1.0 / 32.0) + LLAMA_BF16_REST + LLAMA_KV_ELEMENTS;
    assert_bytes(llama_decode_bytes("mxfp4", None), want);
    // Weight-only MXFP4 stores the same weights beside a bf16 cache.
    let wo = LLAMA_LINEAR * (0.5 + 1.0 / 32.0) + LLAMA_BF16_REST + LLAMA_KV_ELEMENTS * 2.0;
    assert_bytes(llama_decode_bytes("mxfp4-wo", None), wo);
}

#[test]
fn mxfp8_bytes_of_a_llama_decode_step() {
    // E4M3 values, an E8M0 scale per 32; fp8 cache.
    let want = LLAMA_LINEAR * (1.0 + 1.0 / 32.0) + LLAMA_BF16_REST + LLAMA_KV_ELEMENTS;
    assert_bytes(llama_decode_bytes("mxfp8", None), want);
}

#[test]
fn fp8_block_scaled_bytes_of_a_llama_decode_step() {
    // One fp32 scale per 128 x 128 block: q and o 32 x 32 blocks, k and v 8 x 32, gate and up
    // 112 x 32, down 32 x 112 = 13,312 blocks per layer.
    let blocks_per_layer = 2.0 * 32.0 * 32.0 + 2.0 * 8.0 * 32.0 + 3.0 * 112.0 * 32.0;
    assert_eq!(blocks_per_layer, 13_312.0);
    let want = LLAMA_LINEAR + 32.0 * blocks_per_layer * 4.0 + LLAMA_BF16_REST + LLAMA_KV_ELEMENTS;
    assert_bytes(llama_decode_bytes("fp8-b128", None), want);
}

#[test]
fn fp8_and_fp4_kv_cache_bytes_of_a_llama_decode_step() {
    let bf16_weights = LLAMA_LINEAR * 2.0 + LLAMA_BF16_REST;
    // An fp8 cache: one byte per element.
    assert_bytes(
        llama_decode_bytes("bf16", Some("fp8")),
        bf16_weights + LLAMA_KV_ELEMENTS,
    );
    // An fp4 (NVFP4) cache: half a byte per element and an E4M3 scale per 16.
    assert_bytes(
        llama_decode_bytes("bf16", Some("fp4")),
        bf16_weights + LLAMA_KV_ELEMENTS * (0.5 + 1.0 / 16.0),
    );
}

#[test]
fn microscaled_formats_pick_their_peak() {
    let model = model_by_name("llama-3.1-8b").expect("built-in model");
    let b200 = gpu_by_name("b200").expect("catalogue entry");
    let at = |p: &str, gpu: &GpuSpec| {
        let p = Precision::parse(p, None).expect("valid precision");
        floor(&model, gpu, &p, Phase::Prefill, 1, 2048)
    };
    // W4A4 runs on the FP4 tensor cores (HGX B200: 18 PF sparse, 9 dense).
    assert_eq!(at("nvfp4", &b200).expect("floor").peak_flops_per_s, 9.0e15);
    assert_eq!(at("mxfp4", &b200).expect("floor").peak_flops_per_s, 9.0e15);
    assert_eq!(at("mxfp8", &b200).expect("floor").peak_flops_per_s, 4.5e15);
    assert_eq!(
        at("fp8-b128", &b200).expect("floor").peak_flops_per_s,
        4.5e15
    );
    // Weight-only keeps the 16-bit peak, which Hopper has; W4A4 on Hopper is an error.
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    assert_eq!(
        at("mxfp4-wo", &h100).expect("floor").peak_flops_per_s,
        989.4e12
    );
    let err = at("nvfp4", &h100).expect_err("no fp4 on H100");
    assert!(err.to_string().contains("fp4"), "{err}");
    assert!(err.hint().expect("hint").contains("nvfp4-wo"));
}

fn checkpoint(file: &str) -> ModelSpec {
    let path = format!(
        "{}/tests/fixtures/hf_configs/quantised/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    #[expect(clippy::disallowed_methods, reason = "a test reads its fixture")]
    let text = std::fs::read_to_string(&path).expect("fixture");
    ModelSpec::from_hf_config(&text, file).expect("checkpoint config parses")
}

/// A real checkpoint's floor needs no hand-written precision: the modelopt NVFP4 export of
/// Llama-3.1-8B-Instruct declares NVFP4 weights and an FP8 cache, the compressed-tensors one
/// NVFP4 weights and no cache scheme (a bf16 cache).
#[test]
fn checkpoint_precision_gives_the_nvfp4_floor() {
    let h = gpu_by_name("b200").expect("catalogue entry");
    let modelopt = checkpoint("llama-3.1-8b-instruct-fp4-modelopt.json");
    let q = modelopt.checkpoint_precision().expect("declared");
    assert_eq!(q.precision.label, "nvfp4");
    let f = floor(&modelopt, &h, &q.precision, Phase::Decode, 1, 4096).expect("floor");
    assert_bytes(
        f.total_bytes(),
        LLAMA_LINEAR * (0.5 + 1.0 / 16.0)
            + LLAMA_MATRICES * 4.0
            + LLAMA_BF16_REST
            + LLAMA_KV_ELEMENTS,
    );
    let ct = checkpoint("llama-3.1-8b-instruct-nvfp4.json");
    let q = ct.checkpoint_precision().expect("declared");
    assert_eq!(
        (q.precision.label.as_str(), q.precision.kv),
        ("nvfp4", StorageDtype::Bf16)
    );
    let f = floor(&ct, &h, &q.precision, Phase::Decode, 1, 4096).expect("floor");
    assert_bytes(
        f.total_bytes(),
        LLAMA_LINEAR * (0.5 + 1.0 / 16.0)
            + LLAMA_MATRICES * 4.0
            + LLAMA_BF16_REST
            + LLAMA_KV_ELEMENTS * 2.0,
    );
}

/// gpt-oss-120b's MXFP4 is the experts only: attention stays bf16.
#[test]
fn gpt_oss_mxfp4_quantises_the_experts_only() {
    let model = checkpoint("gpt-oss-120b.json");
    let q = model.checkpoint_precision().expect("declared");
    assert_eq!(q.precision.label, "mxfp4-wo");
    let ModelSpec::Transformer(t) = &model else {
        unreachable!()
    };
    // Experts: 36 layers x 128 experts x (gate, up: 2880 x 2880; down: 2880 x 2880) in MXFP4.
    let experts = 36.0 * 128.0 * 3.0 * 2880.0 * 2880.0;
    assert_eq!(t.part_params(Part::Experts) as f64, experts);
    let expert_bytes: f64 = t
        .tensors()
        .iter()
        .filter(|x| x.part == Part::Experts)
        .map(|x| x.bytes(&q.precision))
        .sum();
    assert_bytes(expert_bytes, experts * (0.5 + 1.0 / 32.0));
    // Attention (q 4096 x 2880, k and v 512 x 2880, o 2880 x 4096 per layer, and their
    // biases) in bf16.
    let attention: f64 = t
        .tensors()
        .iter()
        .filter(|x| x.part == Part::Attention)
        .map(|x| x.bytes(&q.precision))
        .sum();
    let projections = 36.0 * (4096.0 * 2880.0 + 2.0 * 512.0 * 2880.0 + 2880.0 * 4096.0);
    let biases = 36.0 * (4096.0 + 2.0 * 512.0 + 2880.0);
    assert_bytes(attention, 2.0 * (projections + biases));
}

/// Qwen's published FP8 checkpoints list `lm_head` and every layer's two norms and router
/// (`model.layers.N.mlp.gate`) in `modules_to_not_convert`: 1 + 3 x 48 = 145 entries for
/// Qwen3-30B-A3B, 1 + 3 x 94 = 283 for Qwen3-235B-A22B. All of them are unquantised in every
/// precision anyway, so the list changes no byte and leaves no pattern unmodelled.
#[test]
fn fp8_block_checkpoint_reads_its_block() {
    for file in ["qwen3-30b-a3b-fp8.json", "qwen3-235b-a22b-fp8.json"] {
        let model = checkpoint(file);
        let q = model.checkpoint_precision().expect("declared");
        assert_eq!(q.precision.label, "fp8-b128", "{file}");
        assert_eq!(q.precision.compute, ComputeDtype::Fp8, "{file}");
        assert_eq!(q.precision.kv, StorageDtype::Bf16, "{file}");
        assert_eq!(q.precision.scope, QuantScope::AllLinear, "{file}");
        assert!(
            q.notes.iter().all(|n| !n.contains("other ignored")),
            "{file}: {:?}",
            q.notes
        );
    }
}
