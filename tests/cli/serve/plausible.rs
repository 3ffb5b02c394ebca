//! Roofline plausibility of service results (#32 item 5): a result whose output throughput per
//! GPU exceeds what the model's decode floor allows on the declared GPUs is `invalid`, with the
//! arithmetic; the same files on the GPUs they really had pass.

use super::{import, json, stub_run, suite_run};
use crate::env::{TestEnv, stderr};

/// A 70B-parameter model in bf16 on H100s, served by the stand-in at an unlimited rate: about
/// 17k output tokens/s in total, which one H100's decode floor cannot produce.
fn config(gpus: u32) -> String {
    let stub = super::STUB;
    format!(
        r#"
[gate]
baseline_branch = "main"

[gpu]
name = "h100-sxm"

[models.stub-model]
params = 70.0e9
kv_bytes_per_token = 327680

[[suite]]
name = "serve"
kind = "serve"
models = ["stub-model"]
precisions = ["bf16"]
gpus = {gpus}
request_rates = [inf]
input_lens = [256]
output_lens = [32]
num_prompts = 400
seed = 7
repeats = 2
timeout_s = 120
command = "python3 {stub} --model {{{{ model }}}} --request-rate {{{{ request_rate }}}} --random-input-len {{{{ input_len }}}} --random-output-len {{{{ output_len }}}} --num-prompts {{{{ num_prompts }}}} --seed {{{{ seed }}}} --result-filename {{{{ result_file }}}}"
"#
    )
}

#[test]
fn throughput_beyond_the_decode_floor_is_invalid_with_the_arithmetic() {
    let env = TestEnv::new();
    env.write_config(&config(1));
    let out = suite_run(&env);
    assert_eq!(
        out.status.code(),
        Some(1),
        "invalid fails the gate: {}",
        stderr(&out)
    );
    let case = json(&out)["service"][0].clone();
    assert_eq!(case["verdict"], "invalid");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(
        reason.starts_with("Faster than the roofline allows"),
        "{reason}"
    );
    for part in [
        "on 1 GPU(s)",
        "tokens/s per GPU, above the",
        "decode floor",
        "h100-sxm",
    ] {
        assert!(reason.contains(part), "{part}: {reason}");
    }
    // The figures the sentence states agree: per GPU above the bound it names.
    let number_after = |label: &str| -> f64 {
        let at = reason.find(label).expect(label) + label.len();
        reason[at..]
            .split_whitespace()
            .next()
            .and_then(|w| w.trim_end_matches(',').parse().ok())
            .unwrap_or_else(|| panic!("a number after {label}: {reason}"))
    };
    let per_gpu = number_after("GPU(s) is ");
    let bound = number_after("above the ");
    assert!(per_gpu > bound, "{per_gpu} > {bound}");

    // The same server declared on the 8 GPUs it would need: plausible, recorded as new.
    let env = TestEnv::new();
    env.write_config(&config(8));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(json(&out)["service"][0]["verdict"], "new");
}

/// `import serve` of the same impossible files: a result file names no precision, so the check
/// runs only with `--precision`; without it every case says it did not run, and why.
#[test]
fn import_checks_plausibility_with_a_precision_and_says_so_without() {
    let env = TestEnv::new();
    env.write_config(&config(1));
    let files = stub_run(
        &env,
        "fast",
        &[
            "--model",
            "stub-model",
            "--request-rate",
            "inf",
            "--random-input-len",
            "256",
            "--random-output-len",
            "32",
        ],
    );
    let out = import(
        &env,
        &files,
        &["--gpu", "h100-sxm", "--format", "json", "--no-promote"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = json(&out)["service"][0].clone();
    assert_eq!(
        case["verdict"], "new",
        "not judged impossible: {:?}",
        case["reasons"]
    );
    let reasons: Vec<&str> = case["reasons"]
        .as_array()
        .expect("reasons")
        .iter()
        .filter_map(serde_json::Value::as_str)
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("Roofline plausibility not checked")
                && r.contains("names no weight precision")
                && r.contains("--precision")),
        "{reasons:?}"
    );
    assert!(
        stderr(&out).contains("Roofline plausibility not checked"),
        "said on stderr too: {}",
        stderr(&out)
    );

    let out = import(
        &env,
        &files,
        &[
            "--gpu",
            "h100-sxm",
            "--precision",
            "bf16",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "invalid fails the gate: {}",
        stderr(&out)
    );
    let case = json(&out)["service"][0].clone();
    assert_eq!(case["verdict"], "invalid");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(
        reason.starts_with("Faster than the roofline allows"),
        "{reason}"
    );
    for part in [
        "fast-0.json",
        "on 1 GPU(s)",
        "above the",
        "decode floor",
        "h100-sxm",
    ] {
        assert!(reason.contains(part), "{part}: {reason}");
    }
    assert!(!stderr(&out).contains("not checked"), "{}", stderr(&out));

    // A precision utilgate does not know is an error naming it, before the store is touched.
    let out = import(&env, &files, &["--gpu", "h100-sxm", "--precision", "bf17"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bf17"), "{}", stderr(&out));
}
