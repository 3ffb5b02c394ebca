//! Suites of `kind = "serve"` in `utilgate run`: the load generator per repeat, its
//! environment and processes, config errors, and the documented vLLM suite.

use std::path::Path;

use super::{fake_vllm, json, suite_config, suite_run};
use crate::env::{TestEnv, stderr, stdout};

#[test]
fn a_serve_suite_runs_the_load_generator_per_repeat_and_gates_its_metrics() {
    let env = TestEnv::new();
    env.write_config(&suite_config(7, "--noise-offset 0"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report = json(&out);
    // The one report of a run: no step cases, the service case under "service".
    assert_eq!(
        report["cases"].as_array().map(Vec::len),
        Some(0),
        "{report}"
    );
    let case = &report["service"][0];
    assert_eq!(case["case"], "serve/stub-model/rate=4/in=256/out=32");
    assert_eq!(case["verdict"], "new");
    assert_eq!(
        case["repeats"].as_array().map(Vec::len),
        Some(3),
        "default 3 repeats, each a fresh process"
    );
    assert_eq!(case["settings"]["seed"], 7, "the rendered seed is stored");
    assert_eq!(case["settings"]["input_len"], 256);
    assert_eq!(report["gate"]["baselines_promoted"], true);

    // The same server again: passes against the baseline (its stored seed included).
    env.write_config(&suite_config(7, "--noise-offset 1"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert_eq!(
        json(&out)["service"][0]["verdict"],
        "pass",
        "{}",
        stdout(&out)
    );

    // TTFT p99 +30%: regressed, exit 1, the metric named.
    env.write_config(&suite_config(7, "--noise-offset 2 --ttft-tail-factor 1.3"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["service"][0];
    assert_eq!(case["verdict"], "regressed");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.starts_with("p99_ttft_ms: "), "{reason}");

    // Another seed in the suite: other prompts, not comparable.
    env.write_config(&suite_config(8, "--noise-offset 3"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = &json(&out)["service"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("seed 7 then, 8 now"), "{reason}");

    // The command ignores the grid's rate (hard-codes 8): the file says 8, the baseline 4.
    env.write_config(&suite_config(7, "--noise-offset 4 --request-rate 8"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let case = &json(&out)["service"][0];
    assert_eq!(case["verdict"], "inconclusive");
    let reason = case["reasons"][0].as_str().expect("reason");
    assert!(reason.contains("request rate 4 then, 8 now"), "{reason}");

    // Failed requests: invalid with the numbers, exit 1.
    env.write_config(&suite_config(7, "--noise-offset 5 --failed 2"));
    let out = suite_run(&env);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let case = &json(&out)["service"][0];
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
    let case = &json(&out)["service"][0];
    assert_eq!(case["verdict"], "error");
    assert_eq!(json(&out)["gate"]["baselines_promoted"], false);

    // Through all of it the baseline stayed the first run: an unchanged server passes.
    env.write_config(&suite_config(7, "--noise-offset 6"));
    let out = suite_run(&env);
    assert_eq!(
        json(&out)["service"][0]["verdict"],
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
    let cases = report["service"].as_array().expect("cases");
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
