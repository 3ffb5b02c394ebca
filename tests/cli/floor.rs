//! `utilgate floor` through the binary: the worked example, JSON, and its errors.

use crate::env::{TestEnv, stderr, stdout};

#[test]
fn worked_example_through_the_cli() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "seed-8b",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--batch",
            "1",
            "--context",
            "4096",
            "--step-ms",
            "9.8",
            "--config",
            "utilgate.toml",
            "--format",
            "json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["schema_version"], 1);
    let text = json.to_string();
    assert!(text.contains("4.93") || text.contains("4.94"), "{text}");
}

#[test]
fn floor_of_a_catalogue_model_prints_the_breakdown() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "4096",
            "--step-ms",
            "6",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out).to_lowercase();
    for needle in ["memory", "kv", "mbu", "mfu"] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
}

#[test]
fn unknown_gpu_lists_the_catalogue_and_how_to_declare_one() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h900",
            "--phase",
            "decode",
            "--context",
            "1",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("h100-sxm") && err.contains("mem_bandwidth_gb_s"),
        "{err}"
    );
}

#[test]
fn a_config_json_path_with_a_missing_field_names_it() {
    let env = TestEnv::new();
    env.write(
        "odd/config.json",
        r#"{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32}"#,
    );
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "odd/config.json",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "1",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("odd/config.json") && err.contains("num_attention_heads")
            || err.contains("intermediate_size"),
        "{err}"
    );
}

/// A model that is neither built in, declared nor a file: the error lists the built-in models,
/// suggests the nearest and says how to declare one.
#[test]
fn an_unknown_model_names_the_catalogue_the_nearest_and_how_to_declare_one() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-8",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--batch",
            "1",
            "--context",
            "4096",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("llama-3.1-8"), "{err}");
    assert!(
        err.contains("llama-3.1-70b"),
        "the catalogue is listed: {err}"
    );
    assert!(err.contains("did you mean `llama-3.1-8b`?"), "{err}");
    assert!(err.contains("config.json"), "how to declare one: {err}");
}

/// A real checkpoint's config.json: its `quantization_config` sets the precision, so
/// `--precision` is not needed (gpt-oss-120b: MXFP4 experts, bf16 attention, bf16 compute).
#[test]
fn a_quantised_checkpoint_floors_at_its_own_precision() {
    let env = TestEnv::new();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/hf_configs/quantised/gpt-oss-120b.json"
    );
    let json = env.json(&[
        "floor",
        "--model",
        fixture,
        "--gpu",
        "h100-sxm",
        "--phase",
        "decode",
        "--context",
        "4096",
    ]);
    assert_eq!(json["inputs"]["precision"], "mxfp4-wo");
    assert_eq!(json["inputs"]["weight_dtype"], "fp4");
    assert_eq!(json["inputs"]["compute_dtype"], "bf16");
    let notes = json["floor"]["notes"].to_string();
    assert!(
        notes.contains("attention projections unquantised"),
        "{notes}"
    );
    // `--precision` overrides the checkpoint's and says so.
    let json = env.json(&[
        "floor",
        "--model",
        fixture,
        "--gpu",
        "b200",
        "--precision",
        "mxfp4",
        "--phase",
        "decode",
        "--context",
        "4096",
    ]);
    assert_eq!(json["inputs"]["compute_dtype"], "fp4");
    assert!(
        json["floor"]["notes"]
            .to_string()
            .contains("the checkpoint declares mxfp4-wo"),
        "{}",
        json["floor"]["notes"]
    );
}

#[test]
fn an_unknown_quant_method_names_the_file_the_field_and_the_supported_ones() {
    let env = TestEnv::new();
    env.write(
        "q/config.json",
        r#"{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
            "quantization_config": {"quant_method": "hqq"}}"#,
    );
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "q/config.json",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "1",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    for needle in [
        "q/config.json",
        "quantization_config.quant_method",
        "\"hqq\"",
        "compressed-tensors",
        "--precision",
    ] {
        assert!(err.contains(needle), "{needle} missing in {err}");
    }
}

/// `--tp` and `--ep` through the binary: Llama-3.1-70B over four H100s.
#[test]
fn tensor_parallel_floor_through_the_cli() {
    let env = TestEnv::new();
    let json = env.json(&[
        "floor",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--phase",
        "decode",
        "--context",
        "4096",
        "--tp",
        "4",
    ]);
    assert_eq!(json["inputs"]["tp"], 4);
    assert_eq!(json["floor"]["parallel"]["comms"]["all_reduces"], 160);
    // Hand computation in floor::parallel's tests: 35,089,125,376 bytes at 3.35 TB/s.
    let floor_ms = json["floor"]["floor_ms"].as_f64().expect("floor_ms");
    assert!(
        (floor_ms - 35_089_125_376.0 / 3.35e12 * 1e3).abs() < 1e-9,
        "{floor_ms}"
    );
    // A declared link through the flag; an impossible layout is an error with its hint.
    let json = env.json(&[
        "floor",
        "--model",
        "llama-3.1-70b",
        "--gpu",
        "h100-sxm",
        "--phase",
        "prefill",
        "--context",
        "4096",
        "--tp",
        "4",
        "--interconnect-gb-s",
        "10",
    ]);
    assert_eq!(json["floor"]["bound"], "comms");
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-70b",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "1",
            "--ep",
            "8",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("mixture-of-experts") && err.contains("hint:"),
        "{err}"
    );
}
