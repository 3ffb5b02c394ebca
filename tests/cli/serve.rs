//! Service cases end to end: `utilgate import serve` on real load-generator files, and a
//! load-generator stand-in (`tests/serve/vllm_bench_stub.py`, vLLM's current schema from given
//! distributions) giving a baseline, then a TTFT p99 regression, a changed seed and failed
//! requests, each through the real binary and a real store.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::env::{TestEnv, stderr, stdout};

const STUB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/serve/vllm_bench_stub.py"
);
const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A directory without a config: `import serve` needs none.
fn bare() -> TestEnv {
    TestEnv {
        dir: tempfile::tempdir().expect("tempdir"),
    }
}

/// Three repeats of the stand-in with `args`, as files `name-0.json` .. `name-2.json`.
fn stub_run(env: &TestEnv, name: &str, args: &[&str]) -> Vec<PathBuf> {
    (0..3)
        .map(|repeat| {
            let path = env.path().join(format!("{name}-{repeat}.json"));
            let status = std::process::Command::new("python3")
                .arg(STUB)
                .args(["--result-filename", path.to_str().expect("utf-8 path")])
                .args(["--request-rate", "4", "--num-prompts", "400", "--seed", "7"])
                .args(args)
                .env("UTILGATE_REPEAT", repeat.to_string())
                .status()
                .expect("python3 runs the stand-in");
            assert!(status.success(), "stand-in failed");
            path
        })
        .collect()
}

fn import(env: &TestEnv, files: &[PathBuf], extra: &[&str]) -> Output {
    env.cmd()
        .args(["import", "serve"])
        .args(files)
        .args([
            "--db",
            "serve.db",
            "--branch",
            "main",
            "--git-sha",
            "abc123",
        ])
        .args(extra)
        .output()
        .expect("runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}): {}", stderr(out)))
}

#[test]
fn stand_in_baseline_then_regression_then_changed_seed_then_failed_requests() {
    let env = bare();
    let base = stub_run(&env, "base", &["--noise-offset", "0"]);
    let out = import(&env, &base, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["cases"][0]["verdict"], "new");
    assert_eq!(
        report["cases"][0]["repeats"].as_array().map(Vec::len),
        Some(3)
    );
    assert_eq!(
        report["promoted"], true,
        "a clean run on main becomes the baseline"
    );

    // The same server again: passes.
    let same = stub_run(&env, "same", &["--noise-offset", "1"]);
    let out = import(&env, &same, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains(" pass "), "{}", stdout(&out));

    // TTFT p99 +30% (the slowest 5% of requests 1.3x slower): fails, naming the metric.
    let slow = stub_run(
        &env,
        "slow",
        &["--noise-offset", "2", "--ttft-tail-factor", "1.3"],
    );
    let out = import(&env, &slow, &["--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "regressed");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(
        reason.starts_with("p99_ttft_ms: "),
        "the metric is named: {reason}"
    );
    let metric = |name: &str| {
        case["metrics"]
            .as_array()
            .expect("metrics")
            .iter()
            .find(|m| m["metric"] == name)
            .unwrap_or_else(|| panic!("{name} gated"))
            .clone()
    };
    let p99 = metric("p99_ttft_ms");
    let worse = p99["worse_pct"].as_f64().expect("worse");
    assert!((25.0..35.0).contains(&worse), "about +30%: {worse}");
    assert_eq!(p99["verdict"], "regressed");
    assert_eq!(
        metric("median_ttft_ms")["verdict"],
        "pass",
        "the median did not move"
    );

    // Another seed: other prompts, so not comparable.
    let reseeded = stub_run(&env, "seed", &["--noise-offset", "3", "--seed", "8"]);
    let out = import(&env, &reseeded, &["--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "inconclusive does not fail the gate"
    );
    let report = json(&out);
    let case = &report["cases"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("input tokens sent"), "{reason}");
    assert!(
        case["metrics"].as_array().is_some_and(Vec::is_empty),
        "never compared"
    );

    // The seed as vLLM's --metadata records it is named as such.
    let meta = stub_run(&env, "meta", &["--seed", "7", "--metadata", "seed=7"]);
    let out = import(&env, &meta, &[]);
    assert!(
        stdout(&out).contains("seed unset then, 7 now"),
        "{}",
        stdout(&out)
    );

    // Failed requests: invalid with the numbers, exit 1.
    let failing = stub_run(&env, "fail", &["--noise-offset", "4", "--failed", "3"]);
    let out = import(&env, &failing, &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("invalid"), "{text}");
    assert!(
        text.contains("397 of 400 requests completed, 3 failed"),
        "{text}"
    );
}

#[test]
fn a_regression_on_another_branch_fails_but_never_moves_the_baseline() {
    let env = bare();
    let base = stub_run(&env, "base", &[]);
    assert_eq!(import(&env, &base, &[]).status.code(), Some(0));
    let slow = stub_run(&env, "slow", &["--noise-offset", "1", "--ttft-ms", "150"]);
    let out = env
        .cmd()
        .args(["import", "serve"])
        .args(&slow)
        .args([
            "--db", "serve.db", "--branch", "feature", "--format", "json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["promoted"], false);
    // An unchanged server still passes against the original baseline.
    let same = stub_run(&env, "same", &["--noise-offset", "2"]);
    let out = import(&env, &same, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

fn real(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

#[test]
fn every_field_of_real_files_reaches_the_store_and_the_json_report_unchanged() {
    let env = bare();
    let files = [
        real("vllm_bench/vllm_bench_serve_v0.11plus_qwen2.5vl3b_rate1.json"),
        real("vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_inf.json"),
        real("vllm_bench/llm-k8s__deepseek-v2.5_tp8_pp2_ib__serving_sharegpt_qps_04.json"),
    ];
    let out = import(&env, &files, &["--format", "json"]);
    // The Qwen file has a failed request: invalid, so the gate fails.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = json(&out);
    let conn = rusqlite::Connection::open(env.path().join("serve.db")).expect("store");
    for file in &files {
        let original: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("json");
        let source = file.display().to_string();
        let reported = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .flat_map(|c| c["repeats"].as_array().expect("repeats").iter())
            .find(|r| r["source"] == source.as_str())
            .expect("the file is a repeat");
        assert_eq!(
            reported["fields"], original,
            "JSON report keeps {source} unchanged"
        );
        let stored: String = conn
            .query_row(
                "SELECT raw_json FROM serve_repeats WHERE source = ?1",
                [&source],
                |r| r.get(0),
            )
            .expect("stored repeat");
        let stored: serde_json::Value = serde_json::from_str(&stored).expect("json");
        assert_eq!(stored, original, "the store keeps {source} unchanged");
        let p99: f64 = conn
            .query_row(
                "SELECT m.value FROM serve_metrics m JOIN serve_repeats r
                   ON r.result_id = m.result_id AND r.repeat = m.repeat
                 WHERE r.source = ?1 AND m.metric = 'p99_ttft_ms'",
                [&source],
                |r| r.get(0),
            )
            .expect("metric row");
        assert_eq!(Some(p99), original["p99_ttft_ms"].as_f64(), "bit for bit");
    }
    let qwen = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"] == "serve/./Qwen2.5-VL-3B-Instruct/rate=1")
        .expect("qwen case");
    assert_eq!(qwen["verdict"], "invalid");
}

#[test]
fn sglang_json_lines_import_as_a_grid_with_the_latency_split_reading() {
    let env = bare();
    let file = real("sglang_bench/datacrunch__llama_3_3_70b_online_output.jsonl");
    let out = import(&env, std::slice::from_ref(&file), &[]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "no model id in this SGLang output"
    );
    assert!(
        stderr(&out).contains("pass --model NAME"),
        "{}",
        stderr(&out)
    );
    let out = import(&env, &[file], &["--model", "llama-3.3-70b"]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("serve/llama-3.3-70b/rate=16/in=1024/out=1024"),
        "{text}"
    );
    assert!(
        text.contains("rises 7.2x from rate 1 to rate 16") && text.contains("not kernels"),
        "{text}"
    );
}

#[test]
fn a_missing_required_key_names_the_file_and_key_and_stores_nothing() {
    let env = bare();
    let bad = env.write(
        "bad.json",
        r#"{"endpoint_type": "openai", "model_id": "m", "request_rate": 1, "duration": 3}"#,
    );
    let out = import(&env, &[bad], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.json: missing required key `completed`"),
        "{err}"
    );
    assert!(
        !env.path().join("serve.db").exists(),
        "validated before the store was opened"
    );
}

/// A config whose service suite runs the stand-in with `extra` appended to its command (the
/// stand-in takes the last of a repeated option, so `extra` can override the grid's values).
fn suite_config(seed: u64, extra: &str) -> String {
    format!(
        r#"
[gate]
baseline_branch = "main"

[[suite]]
name = "serve"
kind = "serve"
models = ["stub-model"]
request_rates = [4.0]
input_lens = [256]
output_lens = [32]
num_prompts = 400
seed = {seed}
timeout_s = 120
command = "env > seen-env.txt; python3 {STUB} --model {{{{ model }}}} --request-rate {{{{ request_rate }}}} --random-input-len {{{{ input_len }}}} --random-output-len {{{{ output_len }}}} --num-prompts {{{{ num_prompts }}}} --seed {{{{ seed }}}} --result-filename {{{{ result_file }}}} {extra}"
"#
    )
}

fn suite_run(env: &TestEnv) -> Output {
    env.cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--git-sha",
            "abc",
            "--format",
            "json",
        ])
        .output()
        .expect("runs")
}

#[test]
fn a_serve_suite_runs_the_load_generator_per_repeat_and_gates_its_metrics() {
    let env = TestEnv::new();
    env.write_config(&suite_config(7, "--noise-offset 0"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    assert_eq!(report["kind"], "serve");
    let case = &report["cases"][0];
    assert_eq!(case["case"], "serve/stub-model/rate=4/in=256/out=32");
    assert_eq!(case["verdict"], "new");
    assert_eq!(
        case["repeats"].as_array().map(Vec::len),
        Some(3),
        "default 3 repeats, each a fresh process"
    );
    assert_eq!(case["settings"]["seed"], 7, "the rendered seed is stored");
    assert_eq!(case["settings"]["input_len"], 256);
    assert_eq!(report["promoted"], true);

    // The same server again: passes against the baseline (its stored seed included).
    env.write_config(&suite_config(7, "--noise-offset 1"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        json(&out)["cases"][0]["verdict"],
        "pass",
        "{}",
        stdout(&out)
    );

    // TTFT p99 +30%: regressed, exit 1, the metric named.
    env.write_config(&suite_config(7, "--noise-offset 2 --ttft-tail-factor 1.3"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "regressed");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.starts_with("p99_ttft_ms: "), "{reason}");

    // Another seed in the suite: other prompts, not comparable.
    env.write_config(&suite_config(8, "--noise-offset 3"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("seed 7 then, 8 now"), "{reason}");

    // The command ignores the grid's rate (hard-codes 8): the file says 8, the baseline 4.
    env.write_config(&suite_config(7, "--noise-offset 4 --request-rate 8"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("request rate 4 then, 8 now"), "{reason}");

    // Failed requests: invalid with the numbers, exit 1.
    env.write_config(&suite_config(7, "--noise-offset 5 --failed 2"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "invalid");
    assert!(
        case["reasons"][0]
            .as_str()
            .is_some_and(|r| r.contains("398 of 400 requests completed, 2 failed")),
        "{case}"
    );

    // A load generator that writes no result file: the case is an error, exit 2.
    env.write_config(&suite_config(
        7,
        "--noise-offset 0 --result-filename /nonexistent/dir/x.json",
    ));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let case = &json(&out)["cases"][0];
    assert_eq!(case["verdict"], "error");
    assert_eq!(json(&out)["promoted"], false);

    // Through all of it the baseline stayed the first run: an unchanged server passes.
    env.write_config(&suite_config(7, "--noise-offset 6"));
    let out = suite_run(&env);
    assert_eq!(
        json(&out)["cases"][0]["verdict"],
        "pass",
        "{}",
        stdout(&out)
    );
}

#[test]
fn the_load_generator_gets_no_credential_and_leaves_no_process_behind() {
    let env = TestEnv::new();
    // A "server" started in the background in a session of its own (out of the command's
    // process group) and never stopped by the command: the guard still ends it.
    let extra = "--noise-offset 0; setsid sleep 300 & echo $! > server.pid";
    env.write_config(
        &suite_config(7, extra).replace("timeout_s = 120", "repeats = 1\ntimeout_s = 120"),
    );
    let out = env
        .cmd()
        .args(["run", "--trusted", "--branch", "main", "--git-sha", "abc"])
        .env("GITHUB_TOKEN", "ghp_servekindtesttoken0123456789abcdef")
        .env("GH_TOKEN", "ghp_servekindtesttoken0123456789abcdeg")
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let seen = std::fs::read_to_string(env.path().join("seen-env.txt")).expect("env dumped");
    assert!(
        !seen.contains("GITHUB_TOKEN") && !seen.contains("GH_TOKEN"),
        "a token reached the load generator"
    );
    assert!(seen.contains("UTILGATE_RESULT_FILE="), "{seen}");
    assert!(seen.contains("UTILGATE_SEED=7"), "{seen}");
    let pid = std::fs::read_to_string(env.path().join("server.pid")).expect("pid");
    let proc_dir = Path::new("/proc").join(pid.trim());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while proc_dir.exists() && std::time::Instant::now() < deadline {
        let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
        if state.contains(") Z ") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let state = std::fs::read_to_string(proc_dir.join("stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z "),
        "the server the command left running outlived the repeat: {state}"
    );
}

#[test]
fn a_serve_suite_with_a_typo_in_its_template_or_step_keys_is_a_config_error() {
    let env = TestEnv::new();
    env.write_config(&suite_config(7, "").replace("{{ seed }}", "{{ sead }}"));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("suite[0].command"), "{err}");
    assert!(err.contains("did you mean `seed`"), "{err}");
    assert!(
        err.contains("{{ result_file }}"),
        "the hint lists the service variables: {err}"
    );

    env.write_config(&suite_config(7, "").replace("seed = 7", "batches = [1]\nseed = 7"));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("suite[0].batches"),
        "{}",
        stderr(&out)
    );

    let step = TestEnv::config_with("request_rates = [1.0]");
    env.write_config(&step);
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("suite[0].request_rates")
            && stderr(&out).contains("kind = \"serve\""),
        "{}",
        stderr(&out)
    );

    env.write_config(&suite_config(7, ""));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// Stand-ins for `vllm` and `curl`: `vllm serve` is a server that becomes ready a moment after
/// it starts (the file `ready`) and notes its start and stop in `server.events`; `vllm bench
/// serve` refuses to run before the server is ready, then runs the stand-in load generator.
fn fake_vllm(env: &TestEnv) -> PathBuf {
    let bin = env.path().join("bin");
    env.write(
        "bin/vllm",
        &format!(
            r#"#!/bin/sh
case "$1" in
serve)
  trap 'rm -f ready; echo stopped >> server.events; exit 0' TERM
  echo "started $2" >> server.events
  (sleep 0.3; touch ready) &
  while :; do sleep 0.1; done ;;
bench)
  shift 2
  [ -e ready ] || {{ echo "bench before the server was ready" >&2; exit 9; }}
  exec python3 {STUB} "$@" ;;
esac
"#
        ),
    );
    env.write("bin/curl", "#!/bin/sh\n[ -e ready ]\n");
    for name in ["vllm", "curl"] {
        let path = bin.join(name);
        let mut perms = std::fs::metadata(&path).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
    bin
}

#[test]
fn the_documented_vllm_suite_runs_as_written() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/serve.md"))
        .expect("docs/serve.md");
    let section = &doc[doc
        .find("## A ready-to-copy suite for `vllm serve`")
        .expect("the section")..];
    let start = section.find("```toml\n").expect("a toml block") + "```toml\n".len();
    let config = &section[start..start + section[start..].find("```").expect("its end")];
    let manual = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/configuration.md"
    ))
    .expect("docs/configuration.md");
    assert!(
        manual.contains(config),
        "docs/configuration.md shows the same suite as docs/serve.md"
    );
    let env = TestEnv::new();
    env.write_config(config);
    let bin = fake_vllm(&env);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let check = env
        .cmd()
        .args(["config", "check"])
        .env("PATH", &path)
        .output()
        .expect("runs");
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let out = env
        .cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--git-sha",
            "abc",
            "--format",
            "json",
        ])
        .env("PATH", &path)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    let cases = report["cases"].as_array().expect("cases");
    let names: Vec<&str> = cases.iter().filter_map(|c| c["case"].as_str()).collect();
    assert_eq!(
        names,
        [
            "serve/Qwen/Qwen2.5-7B-Instruct/rate=1/in=1024/out=128",
            "serve/Qwen/Qwen2.5-7B-Instruct/rate=4/in=1024/out=128",
            "serve/Qwen/Qwen2.5-7B-Instruct/rate=16/in=1024/out=128",
        ]
    );
    for case in cases {
        assert_eq!(case["verdict"], "new", "{case}");
        assert_eq!(case["repeats"].as_array().map(Vec::len), Some(3));
        assert_eq!(case["settings"]["model"], "Qwen/Qwen2.5-7B-Instruct");
        assert!(
            case["estimate"]["decode_mbu"].is_number(),
            "the model and GPU give estimates: {}",
            case["estimate"]
        );
    }
    // One server per repeat, each started, waited for and stopped by the command itself.
    let events = std::fs::read_to_string(env.path().join("server.events")).expect("events");
    let started = events.lines().filter(|l| l.starts_with("started")).count();
    let stopped = events.lines().filter(|l| *l == "stopped").count();
    assert_eq!((started, stopped), (9, 9), "{events}");
}

#[test]
fn one_run_runs_step_and_service_suites_and_refuses_what_the_service_path_lacks() {
    let env = TestEnv::new();
    let serve = suite_config(7, "--noise-offset 0");
    let serve = &serve[serve.find("[[suite]]").expect("the service suite")..];
    env.write_config(&format!("{}\n{serve}", TestEnv::config_with("")));
    let out = env.run("main", &[]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("serve/stub-model/rate=4/in=256/out=32"),
        "{text}"
    );
    assert!(
        text.contains("decode/seed-8b"),
        "the step suite ran too: {text}"
    );

    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--format json with step suites in the same run"),
        "{}",
        stderr(&out)
    );
    let out = env
        .cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--suite",
            "serve",
            "--report-dir",
            "out",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--report-dir is not available"),
        "{}",
        stderr(&out)
    );
}
