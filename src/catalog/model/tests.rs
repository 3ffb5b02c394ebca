//! Tests of `model`.

use super::*;

fn fixture(name: &str) -> &'static str {
    match name {
        "llama-3.1-8b" => include_str!("../../../tests/fixtures/hf_configs/llama-3.1-8b.json"),
        "llama-3.1-70b" => include_str!("../../../tests/fixtures/hf_configs/llama-3.1-70b.json"),
        "llama-3.2-1b" => include_str!("../../../tests/fixtures/hf_configs/llama-3.2-1b.json"),
        "mistral-7b-v0.1" => {
            include_str!("../../../tests/fixtures/hf_configs/mistral-7b-v0.1.json")
        }
        "mistral-7b-v0.3" => {
            include_str!("../../../tests/fixtures/hf_configs/mistral-7b-v0.3.json")
        }
        "mixtral-8x7b" => include_str!("../../../tests/fixtures/hf_configs/mixtral-8x7b.json"),
        "qwen2-7b" => include_str!("../../../tests/fixtures/hf_configs/qwen2-7b.json"),
        "qwen2-72b" => include_str!("../../../tests/fixtures/hf_configs/qwen2-72b.json"),
        "qwen3-8b" => include_str!("../../../tests/fixtures/hf_configs/qwen3-8b.json"),
        "qwen3-30b-a3b" => include_str!("../../../tests/fixtures/hf_configs/qwen3-30b-a3b.json"),
        "gemma-2-2b" => include_str!("../../../tests/fixtures/hf_configs/gemma-2-2b.json"),
        "gemma-2-9b" => include_str!("../../../tests/fixtures/hf_configs/gemma-2-9b.json"),
        "phi-3-mini-4k" => include_str!("../../../tests/fixtures/hf_configs/phi-3-mini-4k.json"),
        other => panic!("no fixture {other}"),
    }
}

fn parse(name: &str) -> TransformerSpec {
    match ModelSpec::from_hf_config(fixture(name), name).expect("should succeed") {
        ModelSpec::Transformer(t) => t,
        ModelSpec::Bare(_) => unreachable!(),
    }
}

/// Published parameter counts (the safetensors totals on each model's Hugging Face page;
/// active counts of mixture-of-experts models from the model cards), matched exactly.
#[test]
fn parameter_counts_equal_published_totals() {
    let cases: [(&str, u64, u64); 13] = [
        ("llama-3.1-8b", 8_030_261_248, 8_030_261_248),
        ("llama-3.2-1b", 1_235_814_400, 1_235_814_400),
        ("llama-3.1-70b", 70_553_706_496, 70_553_706_496),
        ("mistral-7b-v0.1", 7_241_732_096, 7_241_732_096),
        ("mistral-7b-v0.3", 7_248_023_552, 7_248_023_552),
        ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
        ("qwen2-7b", 7_615_616_512, 7_615_616_512),
        ("qwen2-72b", 72_706_203_648, 72_706_203_648),
        ("qwen3-8b", 8_190_735_360, 8_190_735_360),
        ("qwen3-30b-a3b", 30_532_122_624, 3_353_032_704),
        ("gemma-2-2b", 2_614_341_888, 2_614_341_888),
        ("gemma-2-9b", 9_241_705_984, 9_241_705_984),
        ("phi-3-mini-4k", 3_821_079_552, 3_821_079_552),
    ];
    for (name, total, active) in cases {
        let spec = parse(name);
        assert_eq!(spec.total_params(), total, "{name} total");
        assert_eq!(spec.active_params(), active, "{name} active");
    }
}

#[test]
fn built_in_catalogue_is_the_fixtures() {
    for name in known_models() {
        let built_in = BUILT_IN
            .iter()
            .find(|b| b.name == name)
            .expect("should succeed");
        assert_eq!(built_in.config, fixture(name), "{name}");
        assert!(model_by_name(name).is_some(), "{name} parses");
        assert!(built_in_source(name).expect("should succeed").contains('/'));
    }
    assert!(model_by_name("LLAMA-3.1-8B").is_some());
}

#[test]
fn gemma2_head_dim_ties_and_windows() {
    let g = parse("gemma-2-9b");
    // 256 from the config, not hidden / heads = 3584 / 16 = 224.
    assert_eq!(g.head_dim, 256);
    assert!(
        g.tie_word_embeddings,
        "absent tie_word_embeddings means tied for gemma2"
    );
    assert_eq!(g.norms_per_layer, 4);
    assert_eq!(g.sliding_window, Some(4096));
    assert_eq!(g.sliding_window_layers, 21);
    assert!(!g.tensors().iter().any(|t| t.part == Part::LmHead));
    // Without head_dim, the family default (256) still applies.
    let text = fixture("gemma-2-9b").replace("\"head_dim\": 256,", "");
    let ModelSpec::Transformer(g) = ModelSpec::from_hf_config(&text, "x").expect("should succeed")
    else {
        unreachable!()
    };
    assert_eq!(g.head_dim, 256);
}

#[test]
fn qwen2_has_qkv_biases_only() {
    let q = parse("qwen2-7b");
    assert!(q.qkv_bias && !q.o_bias);
    // q (3584) + k (512) + v (512) biases per layer, 28 layers.
    assert_eq!(
        q.tensors()
            .iter()
            .find(|t| t.name == "qkv_bias")
            .expect("should succeed")
            .params(),
        (3584 + 512 + 512) * 28
    );
    assert_eq!(q.sliding_window, None, "use_sliding_window is false");
}

#[test]
fn fused_projections_count_as_split() {
    let p = parse("phi-3-mini-4k");
    assert!(p.fused_qkv && p.fused_gate_up);
    let qkv = p
        .tensors()
        .into_iter()
        .find(|t| t.name == "qkv_proj")
        .expect("should succeed");
    assert_eq!(qkv.rows, 3 * 3072);
    assert_eq!(p.sliding_window, Some(2047));
}

#[test]
fn mistral_windows_every_layer_and_v03_none() {
    let m = parse("mistral-7b-v0.1");
    assert_eq!(
        (m.sliding_window, m.sliding_window_layers),
        (Some(4096), 32)
    );
    let m = parse("mistral-7b-v0.3");
    assert_eq!((m.sliding_window, m.sliding_window_layers), (None, 0));
}

#[test]
fn moe_fields() {
    let m = parse("mixtral-8x7b");
    let moe = m.moe.clone().expect("should succeed");
    assert_eq!(
        (moe.num_experts, moe.experts_per_token, moe.moe_layers),
        (8, 2, 32)
    );
    assert_eq!(moe.expert_intermediate_size, 14336);
    let q = parse("qwen3-30b-a3b");
    let moe = q.moe.clone().expect("should succeed");
    assert_eq!((moe.num_experts, moe.experts_per_token), (128, 8));
    assert_eq!(moe.expert_intermediate_size, 768);
    // decoder_sparse_step 2 halves the MoE layers; the rest get a dense MLP.
    let text = fixture("qwen3-30b-a3b")
        .replace("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
    let ModelSpec::Transformer(q2) = ModelSpec::from_hf_config(&text, "x").expect("should succeed")
    else {
        unreachable!()
    };
    assert_eq!(q2.moe.as_ref().expect("should succeed").moe_layers, 24);
    assert!(
        q2.tensors()
            .iter()
            .any(|t| t.name == "down_proj" && t.count == 24)
    );
}

#[test]
fn kv_bytes_per_token() {
    let llama = ModelSpec::Transformer(parse("llama-3.1-8b"));
    // 32 layers x 2 x 8 heads x 128 x 2 bytes.
    assert_eq!(llama.kv_bytes_per_token(StorageDtype::Bf16), 131_072.0);
    assert_eq!(llama.kv_bytes_per_token(StorageDtype::Fp8), 65_536.0);
    let bare = ModelSpec::bare(8e9, 131_072.0, None).expect("should succeed");
    assert_eq!(bare.kv_bytes_per_token(StorageDtype::Fp8), 131_072.0);
}

#[test]
fn unknown_family_names_the_missing_field() {
    let text = r#"{"model_type": "gpt_neox", "hidden_size": 2048, "num_hidden_layers": 16,
            "num_attention_heads": 16, "vocab_size": 50304}"#;
    let err = ModelSpec::from_hf_config(text, "cfg.json").expect_err("should fail");
    let msg = err.to_string();
    assert!(msg.contains("cfg.json"), "{msg}");
    assert!(msg.contains("`intermediate_size`"), "{msg}");
    assert!(msg.contains("gpt_neox"), "{msg}");
    assert!(
        err.hint()
            .expect("should succeed")
            .contains("kv_bytes_per_token")
    );

    // A known family names its missing field too.
    let text = r#"{"model_type": "llama", "hidden_size": 2048}"#;
    let msg = ModelSpec::from_hf_config(text, "c.json")
        .expect_err("should fail")
        .to_string();
    assert!(msg.contains("`num_hidden_layers`"), "{msg}");
    let text = r#"{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8}"#;
    let msg = ModelSpec::from_hf_config(text, "c.json")
        .expect_err("should fail")
        .to_string();
    assert!(msg.contains("`num_local_experts`"), "{msg}");

    // A complete unknown family is read Llama-style, with a note.
    let text = r#"{"model_type": "yi", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}"#;
    let ModelSpec::Transformer(t) =
        ModelSpec::from_hf_config(text, "c.json").expect("should succeed")
    else {
        unreachable!()
    };
    assert_eq!(t.family, Family::LlamaStyle);
    assert!(t.notes[0].contains("Llama-style"));
    // 10*64*2 (embed, head) + 2 * (4*64*64 + 3*64*128 + 2*64) + 64
    assert_eq!(t.total_params(), 1280 + 2 * (16384 + 24576 + 128) + 64);
}

#[test]
fn field_errors_name_the_field() {
    let msg = ModelSpec::from_hf_config(r#"{"hidden_size": "big"}"#, "c.json")
        .expect_err("should fail")
        .to_string();
    assert!(
        msg.contains("`hidden_size`") && msg.contains("\"big\""),
        "{msg}"
    );
    let msg = ModelSpec::from_hf_config("{not json", "c.json")
        .expect_err("should fail")
        .to_string();
    assert!(msg.contains("c.json"), "{msg}");
    let text =
        fixture("llama-3.1-8b").replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5");
    let msg = ModelSpec::from_hf_config(&text, "c.json")
        .expect_err("should fail")
        .to_string();
    assert!(msg.contains("num_key_value_heads"), "{msg}");
}

#[test]
fn architecture_from_toml() {
    let text = r#"
            model_type = "llama"
            hidden_size = 4096
            intermediate_size = 14336
            num_hidden_layers = 32
            num_attention_heads = 32
            num_key_value_heads = 8
            vocab_size = 128256
        "#;
    let arch: Architecture = toml::from_str(text).expect("should succeed");
    let spec = ModelSpec::from_architecture(&arch, "utilgate.toml").expect("should succeed");
    assert_eq!(spec.total_params(), 8_030_261_248.0);
    assert!(toml::from_str::<Architecture>("hiden_size = 3").is_err());
}

#[test]
fn bare_form_validates() {
    assert!(ModelSpec::bare(0.0, 1.0, None).is_err());
    assert!(ModelSpec::bare(1.0, -1.0, None).is_err());
    assert!(ModelSpec::bare(1.0, 0.0, Some(f64::INFINITY)).is_err());
    let b = ModelSpec::bare(8e9, 131_072.0, Some(1.7e10)).expect("should succeed");
    assert_eq!(b.total_params(), 8e9);
    assert_eq!(b.active_params(), 8e9);
}

#[test]
fn quantised_weight_bytes_keep_embeddings_16_bit() {
    let spec = ModelSpec::Transformer(parse("llama-3.1-8b"));
    let int4 = Precision::parse("int4-g128", None).expect("should succeed");
    let ModelSpec::Transformer(t) = &spec else {
        unreachable!()
    };
    let embed = t.part_params(Part::Embedding) as f64;
    let head = t.part_params(Part::LmHead) as f64;
    let norms = t.part_params(Part::Norm) as f64;
    let linear = t.total_params() as f64 - embed - head - norms;
    let expected = (embed + head + norms) * 2.0 + linear * (0.5 + 2.0 / 128.0);
    assert!((spec.weight_bytes(&int4) - expected).abs() < 1.0);
    let bf16 = Precision::parse("bf16", None).expect("should succeed");
    assert_eq!(spec.weight_bytes(&bf16), 2.0 * 8_030_261_248.0);
}

fn with_quant(quant: &str) -> Result<ModelSpec, CatalogError> {
    let text = format!(
        r#"{{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
            "quantization_config": {quant}}}"#
    );
    ModelSpec::from_hf_config(&text, "ckpt/config.json")
}

#[test]
fn quantization_config_errors_name_the_file_the_field_and_the_fix() {
    let err = with_quant(r#"{"quant_method": "bitsandbytes"}"#).expect_err("unsupported");
    let text = err.to_string();
    assert!(text.contains("ckpt/config.json"), "{text}");
    assert!(text.contains("quantization_config.quant_method"), "{text}");
    assert!(text.contains("\"bitsandbytes\""), "{text}");
    assert!(
        text.contains("compressed-tensors") && text.contains("mxfp4"),
        "{text}"
    );
    assert!(err.hint().expect("hint").contains("--precision"));
    let err = with_quant(r#"{"quant_method": "fp8", "weight_block_size": [128, 64]}"#)
        .expect_err("not square");
    assert!(
        err.to_string()
            .contains("quantization_config.weight_block_size"),
        "{err}"
    );
    let err = with_quant(r#"{"quant_method": "modelopt", "quant_algo": "INT3"}"#)
        .expect_err("unknown algorithm");
    assert!(err.to_string().contains("NVFP4"), "{err}");
    let err = with_quant(r#"{"quant_method": "compressed-tensors"}"#).expect_err("no groups");
    assert!(
        err.to_string()
            .contains("quantization_config.config_groups"),
        "{err}"
    );
}

#[test]
fn quantization_config_forms_map_to_precisions() {
    let label = |q: &str| {
        let spec = with_quant(q).expect("parses");
        let p = &spec.checkpoint_precision().expect("declared").precision;
        (p.label.clone(), p.kv)
    };
    assert_eq!(
        label(r#"{"quant_method": "fp8", "weight_block_size": [128, 128]}"#),
        ("fp8-b128".to_string(), StorageDtype::Bf16)
    );
    assert_eq!(
        label(r#"{"quant_method": "fp8", "activation_scheme": "static"}"#),
        ("fp8".to_string(), StorageDtype::Bf16)
    );
    assert_eq!(
        label(r#"{"quant_method": "gptq", "bits": 4, "group_size": 128}"#),
        ("int4-g128".to_string(), StorageDtype::Bf16)
    );
    // Legacy modelopt: fields under `quantization`, no quant_method; an NVFP4 cache.
    assert_eq!(
        label(r#"{"quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"}}"#),
        ("nvfp4".to_string(), StorageDtype::Fp4)
    );
    // compressed-tensors weight-only int4 groups, and W8A8 fp8 with an fp8 cache.
    let w4a16 = r#"{"quant_method": "compressed-tensors", "config_groups": {"g": {
        "weights": {"num_bits": 4, "type": "int", "strategy": "group", "group_size": 128},
        "input_activations": null}}}"#;
    assert_eq!(label(w4a16), ("int4-g128".to_string(), StorageDtype::Bf16));
    let w8a8 = r#"{"quant_method": "compressed-tensors", "kv_cache_scheme": {"num_bits": 8,
        "type": "float"}, "config_groups": {"g": {"weights": {"num_bits": 8, "type": "float",
        "strategy": "channel"}, "input_activations": {"num_bits": 8, "type": "float"}}}}"#;
    assert_eq!(label(w8a8), ("fp8".to_string(), StorageDtype::Fp8));
    // No quantization_config: no checkpoint precision.
    let plain = model_by_name("llama-3.1-8b").expect("built in");
    assert!(plain.checkpoint_precision().is_none());
}
