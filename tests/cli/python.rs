//! The Python harness helper (`harness/python/utilgate_harness.py`) driven end to end through
//! `utilgate run` on the CPU: a pure-Python step, wall-clock timing, no `PyTorch`.

use std::path::Path;
use std::time::Duration;

use utilgate::store::{RunId, Store};

use crate::env::{TestEnv, stderr};

fn python3() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

const STEP: &str = r#"
import utilgate_harness as ug

case = ug.Case.from_env()
work = list(range(2000 * case.batch))

def step(i):
    # Real work that grows with the batch: a sum over a list, timed by the wall clock.
    return sum(x * x for x in work)

# A fixed prompt set scored once per process, beside (never inside) the timed steps: 40 of
# the 50 "answers" are right.
def score(case):
    right = sum(1 for q in range(50) if (q * q) % 5 != 0)
    return {"exact_match": (right, 50)}

times = ug.run(step, case, extra_env={"example": "pure-python"}, score=score)
assert len(times) == case.steps
"#;

#[test]
fn python_helper_speaks_the_protocol_through_utilgate_run() {
    assert!(
        python3(),
        "python3 must be on PATH: the Python helper is tested for real, never skipped"
    );
    let helper_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/python");
    let env = TestEnv::new();
    env.write("step.py", STEP);
    env.write_config(&format!(
        r#"
[gate]
baseline_branch = "main"

[gpu]
mem_bandwidth_gb_s = 1000
dense_tflops = {{ bf16 = 100 }}

[models.small]
params = 1.0e6
kv_bytes_per_token = 1024

[[suite]]
name = "py"
command = "python3 step.py"
env = {{ PYTHONPATH = "{}" }}
models = ["small"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 4]
contexts = [128]
warmup_steps = 3
steps = 15
repeats = 2
timeout_s = 60
"#,
        helper_dir.display()
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let store = Store::open_existing_read_only(&env.db(), Duration::from_secs(5)).expect("store");
    let run = store.run(RunId(1)).expect("read").expect("run 1");
    assert_eq!(run.results.len(), 2);
    for result in &run.results {
        assert_eq!(result.error, None);
        assert_eq!(result.repeats_ms.len(), 2, "two fresh processes");
        assert!(result.repeats_ms.iter().all(|r| r.len() == 15));
        assert!(
            result.warmup_ms.iter().all(|r| r.len() == 3),
            "warm-up stored apart"
        );
        assert!(result.repeats_ms.iter().flatten().all(|ms| *ms > 0.0));
        assert_eq!(
            result.env.get("timer").map(String::as_str),
            Some("wall-clock")
        );
        assert_eq!(
            result.env.get("example").map(String::as_str),
            Some("pure-python")
        );
        assert!(result.env.contains_key("python"), "{:?}", result.env);
        assert!(
            !result.env.contains_key("torch"),
            "the CPU path never imports torch"
        );
        // The score hook's answers, both processes' added: 40 of 50 each.
        let quality = store.result_quality(result.id).expect("reads");
        assert_eq!(
            (quality["exact_match"].correct, quality["exact_match"].total),
            (80, 100),
            "{quality:?}"
        );
    }
    // More work per step at batch 4 than at batch 1: the times are real.
    let median = |i: usize| run.results[i].median_ms.expect("median");
    assert!(median(1) > median(0), "{} vs {}", median(1), median(0));
}

/// A speculative step: each round drafts k tokens per sequence and 3 of every 4 are accepted;
/// the engine's counters run through the warm-up too.
const DRAFTING_STEP: &str = r#"
import os
import utilgate_harness as ug

case = ug.Case.from_env()
k = int(os.environ["UTILGATE_DRAFT_K"])
counters = [0, 0]
work = list(range(2000 * case.batch))

def step(i):
    sum(x * x for x in work)
    counters[0] += case.batch * k
    counters[1] += case.batch * k * 3 // 4

ug.run(step, case, drafts=lambda: tuple(counters))
"#;

#[test]
fn python_helper_reports_the_timed_rounds_drafts_only() {
    assert!(python3(), "python3 must be on PATH");
    let helper_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/python");
    let env = TestEnv::new();
    env.write("step.py", DRAFTING_STEP);
    env.write_config(&format!(
        r#"
[gpu]
mem_bandwidth_gb_s = 1000
dense_tflops = {{ bf16 = 100 }}

[models.small]
params = 1.0e6
kv_bytes_per_token = 1024

[[suite]]
name = "py"
command = "python3 step.py"
env = {{ PYTHONPATH = "{}" }}
models = ["small"]
precisions = ["bf16"]
phases = ["decode"]
batches = [2]
contexts = [128]
warmup_steps = 3
steps = 15
repeats = 2
timeout_s = 60
speculative = {{ draft = "ngram", k = [4] }}
"#,
        helper_dir.display()
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = Store::open_existing_read_only(&env.db(), Duration::from_secs(5)).expect("store");
    let run = store.run(RunId(1)).expect("read").expect("run 1");
    let result = &run.results[0];
    // 15 timed rounds x batch 2 x k 4 = 120 drafted per process, 90 accepted; two processes.
    // The 3 warm-up rounds' 24 drafts per process are left out.
    let counts = store
        .result_speculation(result.id)
        .expect("reads")
        .expect("counts");
    assert_eq!((counts.drafted, counts.accepted), (240, 180));
}

#[test]
fn python_helper_refuses_to_run_outside_utilgate() {
    assert!(python3(), "python3 is needed on PATH (CI installs it)");
    let helper_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/python");
    let env = TestEnv::new();
    env.write("step.py", STEP);
    let out = std::process::Command::new("python3")
        .arg("step.py")
        .current_dir(env.path())
        .env("PYTHONPATH", &helper_dir)
        .env_remove("UTILGATE_PROTOCOL")
        .output()
        .expect("python3");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("start this harness through `utilgate run`"),
        "{err}"
    );
}

/// The Hugging Face example (`harness/python/examples/hf_decode.py`) on the CPU through
/// `utilgate run`: decode and prefill of a small random-weight llama, with the current
/// transformers (5.x ignores `cache_position` when it writes a static cache; the example
/// crashed with `index_copy_(): index 129 is out of bounds` before it set the cache back).
#[test]
#[ignore = "needs torch and transformers: UTILGATE_TEST_PYTHON=/path/to/venv/bin/python cargo test --test cli -- --ignored hf_decode"]
fn hf_decode_example_runs_decode_and_prefill_on_the_cpu() {
    let python = std::env::var("UTILGATE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/python/examples/hf_decode.py");
    let env = TestEnv::new();
    env.write_config(&format!(
        r#"
[gate]
baseline_branch = "main"

[gpu]
name = "lab-cpu"
mem_bandwidth_gb_s = 10
dense_tflops = {{ fp32 = 0.1 }}

[models.tiny-llama]
architecture = {{ model_type = "llama", hidden_size = 256, intermediate_size = 688, num_hidden_layers = 2, num_attention_heads = 4, num_key_value_heads = 2, vocab_size = 1024, tie_word_embeddings = false, rms_norm_eps = 1e-5 }}

[[suite]]
name = "hf"
command = "{python} {example}"
models = ["tiny-llama"]
precisions = ["fp32"]
phases = ["decode", "prefill"]
batches = [2]
contexts = [128]
warmup_steps = 3
steps = 10
repeats = 2
timeout_s = 300
"#,
        example = example.display()
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let store = Store::open_existing_read_only(&env.db(), Duration::from_secs(5)).expect("store");
    let run = store.run(RunId(1)).expect("read").expect("run 1");
    assert_eq!(run.results.len(), 2, "decode and prefill");
    for result in &run.results {
        assert_eq!(result.error, None, "{}", result.key);
        assert!(result.repeats_ms.iter().all(|r| r.len() == 10));
        assert!(result.env.contains_key("transformers"), "{:?}", result.env);
        assert_eq!(result.env.get("mode").map(String::as_str), Some("eager"));
    }
}
