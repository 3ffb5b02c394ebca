//! What a team adopting utilgate hit first (issue #10), through the binary: declared devices,
//! `floor` and the other commands without a suite, `floor` resolving the config and the device
//! as `run` does, and `config check` computing every case's floor.

use serde_json::Value;

use crate::env::{TestEnv, stderr, stdout};

const LAB_CPU: &str = r#"
[gpu]
name = "lab-cpu"
mem_bandwidth_gb_s = 800
dense_tflops = { bf16 = 10.0 }
"#;

/// The standard config with its `[gpu]` table replaced.
fn config_with_gpu(gpu: &str) -> String {
    TestEnv::config_with("").replace("[gpu]\nname = \"h100-sxm\"\n", gpu)
}

fn floor_json(env: &TestEnv, extra: &[&str]) -> (Option<i32>, Value, String) {
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "seed-8b",
            "--phase",
            "decode",
            "--batch",
            "1",
            "--context",
            "4096",
            "--format",
            "json",
        ])
        .args(extra)
        .output()
        .expect("runs");
    let json = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), json, stderr(&out))
}

#[test]
fn a_declared_device_with_a_name_runs_and_is_its_own_sku() {
    for memory in ["", "memory_gb = 64\n"] {
        let env = TestEnv::new();
        env.write_config(&config_with_gpu(&format!("{LAB_CPU}{memory}")));
        // The floors at 800 GB/s are about 20 ms (b1) and 26 ms (b8); the harness steps at 40.
        let out = env.run("main", &[("STEP_MS", "40.0")]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let runs = env.json(&["runs", "list"]);
        assert_eq!(runs["runs"][0]["gpu_sku"], "lab-cpu", "{runs}");
        let baselines = env.json(&["baseline", "list"]);
        assert!(baselines.to_string().contains("lab-cpu"), "{baselines}");
        let report = env
            .cmd()
            .args(["report", "--format", "markdown"])
            .output()
            .expect("runs");
        assert!(stdout(&report).contains("lab-cpu"), "{}", stdout(&report));

        // floor with --config resolves the same device.
        let (code, json, err) = floor_json(&env, &["--config", "utilgate.toml"]);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(json["inputs"]["gpu"], "lab-cpu");
        // 800 GB/s against the bare form's 16 GB of bf16 weights plus the KV cache.
        let floor_ms = json["floor"]["floor_ms"].as_f64().expect("floor");
        assert!(floor_ms > 20.0 && floor_ms < 21.0, "{floor_ms}");
    }
}

#[test]
fn a_catalogue_name_with_figures_overrides_and_an_unknown_name_alone_is_an_error() {
    let env = TestEnv::new();
    env.write_config(&config_with_gpu(
        "[gpu]\nname = \"h100-sxm\"\nmem_bandwidth_gb_s = 1675\n",
    ));
    let (code, json, err) = floor_json(&env, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["inputs"]["gpu"], "h100-sxm");
    assert!(
        json["inputs"]["gpu_source"]
            .as_str()
            .expect("source")
            .contains("overridden in config: mem_bandwidth_gb_s"),
        "{json}"
    );

    env.write_config(&config_with_gpu("[gpu]\nname = \"lab-cpu\"\n"));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("unknown GPU \"lab-cpu\""),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("mem_bandwidth_gb_s"),
        "the hint says how"
    );
    assert!(!env.db().exists() || env.json(&["runs", "list"])["runs"] == Value::Array(vec![]));
}

#[test]
fn floor_and_the_stored_history_need_no_suite() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let models_only = "[models.seed-8b]\nparams = 8.0e9\nkv_bytes_per_token = 131072\n";
    env.write("u.toml", models_only);
    let (code, json, err) = floor_json(&env, &["--config", "u.toml", "--gpu", "h100-sxm"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["inputs"]["model"], "seed-8b");

    let out = env
        .cmd()
        .args(["config", "check", "--config", "u.toml"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("note: no suite is defined"),
        "{}",
        stdout(&out)
    );

    // The stored history stays readable with a suite-less config in place.
    env.write_config(&format!(
        "[store]\npath = \".utilgate/utilgate.db\"\n{models_only}"
    ));
    for args in [
        &["runs", "list"][..],
        &["baseline", "list"],
        &["report"],
        &["runs", "show", "1"],
    ] {
        let out = env.cmd().args(args).output().expect("runs");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    // run still needs one, and says so.
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("no suite is defined"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("[[suite]]"), "{}", stderr(&out));
}

#[test]
fn floor_reads_the_default_config_and_resolves_the_device_as_run_does() {
    let env = TestEnv::new();
    // ./utilgate.toml's model, without --config.
    let (code, json, err) = floor_json(&env, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["inputs"]["gpu"], "h100-sxm");

    // A measured host bandwidth: the device `run` calls host-cpu, with the measured figure.
    env.write_config(&config_with_gpu(
        "[gpu]\nmeasure_host_bandwidth = true\ndense_tflops = { bf16 = 1.0 }\n",
    ));
    let (code, json, err) = floor_json(&env, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["inputs"]["gpu"], "host-cpu", "{json}");
    let cache: Value = serde_json::from_str(
        &std::fs::read_to_string(env.path().join(".cache/utilgate/host-bandwidth.json"))
            .expect("the measured figure is pinned for the host"),
    )
    .expect("json");
    let measured = cache["bytes_per_s"].as_f64().expect("bytes_per_s");
    let used = json["floor"]["peak_bandwidth_bytes_per_s"]
        .as_f64()
        .expect("peak");
    assert!(
        (used - measured).abs() <= 1e-6 * measured,
        "{used} vs {measured}"
    );
}

/// One host, one pinned bandwidth: two stores in two directories floor the same case against
/// the same figure (before, each directory pinned its own measurement: 17.0 ms against
/// 15.9 ms on one machine), a figure an older utilgate pinned beside a store is adopted, and
/// two pins that disagree are named.
#[test]
fn one_host_floors_every_store_against_one_pinned_bandwidth_and_says_where_it_came_from() {
    let env = TestEnv::new();
    let config =
        config_with_gpu("[gpu]\nmeasure_host_bandwidth = true\ndense_tflops = { bf16 = 1.0 }\n");
    // Two projects on one machine, each with its store under its own directory.
    for dir in ["a", "b"] {
        std::fs::create_dir_all(env.path().join(dir).join(".utilgate")).expect("mkdir");
        std::fs::write(env.path().join(dir).join("utilgate.toml"), &config).expect("config");
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .expect("hostname")
        .trim()
        .to_owned();
    // A figure pinned beside the first store by an older utilgate, far from any real one.
    let pin = |bytes_per_s: f64, at: &str| {
        serde_json::json!({
            "host": host, "bytes_per_s": bytes_per_s, "probe_bytes": 4_194_304, "passes": 256,
            "measured_at": at
        })
        .to_string()
    };
    std::fs::write(
        env.path().join("a/.utilgate/host-bandwidth.json"),
        pin(12.345e9, "2026-01-02T03:04:05Z"),
    )
    .expect("pin");
    let peak = |json: &Value| {
        json["floor"]["peak_bandwidth_bytes_per_s"]
            .as_f64()
            .expect("peak")
    };
    let (code, a, err) = floor_json(&env, &["--config", "a/utilgate.toml"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        (peak(&a) - 12.345e9).abs() < 1.0,
        "the old pin is adopted: {a}"
    );
    let (code, b, err) = floor_json(&env, &["--config", "b/utilgate.toml"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(a["floor"], b["floor"], "two directories, one figure");
    assert!(
        !env.path().join("b/.utilgate/host-bandwidth.json").exists(),
        "nothing pinned per directory any more"
    );
    // Where the figure came from, in the terminal output.
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "seed-8b",
            "--phase",
            "decode",
            "--context",
            "4096",
            "--config",
            "b/utilgate.toml",
        ])
        .output()
        .expect("runs");
    let text = crate::env::stdout(&out);
    let said = format!(
        "figures: bandwidth measured on host {host} at 2026-01-02T03:04:05Z, pinned in {}",
        env.path()
            .join(".cache/utilgate/host-bandwidth.json")
            .display()
    );
    assert!(text.contains(&said), "{text}");
    // A stale pin beside a store that disagrees with the host's is named, never used.
    std::fs::write(
        env.path().join("b/.utilgate/host-bandwidth.json"),
        pin(20.0e9, "2026-02-02T00:00:00Z"),
    )
    .expect("pin");
    let (code, again, err) = floor_json(&env, &["--config", "b/utilgate.toml"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(again["floor"], a["floor"], "the host's pin wins");
    assert!(
        err.contains("two pins of") && err.contains("12.35 GB/s") && err.contains("20.00 GB/s"),
        "{err}"
    );
}

#[test]
fn config_check_computes_every_floor_and_speaks_json() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["config", "check", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["ok"], true);
    assert_eq!(json["device"], "h100-sxm");
    assert_eq!(json["cases"].as_array().expect("cases").len(), 2);
    assert!(json["cases"][0]["floor_ms"].as_f64().expect("floor") > 0.0);

    // A declared device without a peak for the suite's precision cannot give a floor.
    env.write_config(&config_with_gpu(
        "[gpu]\nname = \"lab-cpu\"\nmem_bandwidth_gb_s = 800\n",
    ));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("decode/seed-8b/bf16/decode/b1/c4096"), "{err}");
    assert!(err.contains("cannot compute a floor"), "{err}");
    assert!(err.contains("no dense bf16 peak"), "{err}");
    assert!(err.contains("dense_tflops"), "the fix: {err}");
    let out = env
        .cmd()
        .args(["config", "check", "--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let json: Value = serde_json::from_slice(&out.stdout).expect("json even when failing");
    assert_eq!(json["ok"], false);
    assert_eq!(json["problems"].as_array().expect("problems").len(), 2);
}

#[test]
fn a_first_run_that_sets_no_baseline_says_why_and_what_to_do() {
    let env = TestEnv::new();
    let out = env.run("feature", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("baselines unchanged, so the new cases have none yet"),
        "{err}"
    );
    assert!(err.contains("branch \"feature\""), "{err}");
    assert!(err.contains("--branch main"), "{err}");
    assert!(
        err.contains("utilgate baseline accept \"\" --run 1"),
        "{err}"
    );
    // Outside a git checkout and without --branch: no branch at all.
    let out = env.cmd().arg("run").output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("this run has no branch"),
        "{}",
        stderr(&out)
    );
    // Once the baseline branch has set them, a pull request run needs no note.
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run("feature", &[]);
    assert!(
        !stderr(&out).contains("baselines unchanged"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_all_error_report_is_not_headed_as_a_pass() {
    let env = TestEnv::new();
    let out = env.run("main", &[("FAIL_MODE", "exit3")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let md = env
        .cmd()
        .args(["report", "--format", "markdown"])
        .output()
        .expect("runs");
    let text = stdout(&md);
    assert!(!text.contains('✅'), "{text}");
    assert!(!text.contains("Gate passed"), "{text}");
    assert!(
        text.contains("⚠️ utilgate: Not measured on h100-sxm: 2 of 2 cases"),
        "{text}"
    );
    let junit = env
        .cmd()
        .args(["report", "--format", "junit"])
        .output()
        .expect("runs");
    assert!(!stdout(&junit).contains("–-bound"), "{}", stdout(&junit));
}

#[test]
fn an_imported_baseline_keeps_its_commit_and_an_upgrade_is_named_once() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env
        .cmd()
        .args(["baseline", "export", "--out", "b.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let fresh = TestEnv::new();
    std::fs::copy(env.path().join("b.json"), fresh.path().join("b.json")).expect("copy");
    let out = fresh
        .cmd()
        .args(["baseline", "import", "b.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = fresh.json(&["baseline", "list"]);
    assert!(listed.to_string().contains("0123456789"), "{listed}");
    let show = fresh
        .cmd()
        .args(["baseline", "show", "decode/seed-8b/bf16/decode/b1/c4096"])
        .output()
        .expect("runs");
    let text = stdout(&show);
    assert!(text.contains("@ 0123456 on main"), "{text}");
    assert!(
        text.contains("passed the gate on main"),
        "the reason is kept: {text}"
    );

    // A slower run after a torch upgrade: the change is named once, as the likely cause.
    let out = fresh.run(
        "feature",
        &[("STEP_MS", "11.5"), ("TORCH_VERSION", "2.6.0")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    let per_case = text.matches("torch 2.5.1 -> 2.6.0").count();
    assert_eq!(
        per_case, 2,
        "once for each of the two regressed cases: {text}"
    );
}
