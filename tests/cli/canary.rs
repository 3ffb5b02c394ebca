//! The machine canary through the binary: the README's example (examples/cpu-decode) run twice,
//! the second time on a busy machine, made deterministic with the scripted harness and a
//! scripted canary (`[canary] command`), so that the host's slowdown is exactly what the test
//! says it is.

use crate::env::{TestEnv, stderr, stdout, verdict_of};

const CASE: &str = "cpu-decode/tiny-llama-100m/bf16/decode/b1/c512";

/// A canary that reports a fixed memory stream and spin loop, both scaled by `CANARY_SCALE`
/// (default 1), with a small deterministic ripple, like the built-in one read five times.
const CANARY: &str = r#"#!/bin/sh
awk -v s="${CANARY_SCALE:-1}" 'BEGIN {
  printf "{\"stream_ms\": [";
  for (i = 0; i < 5; i++) printf "%s%.4f", (i ? ", " : ""), 12.0 * s * (1 + (i % 3) * 0.004);
  printf "], \"spin_ms\": [";
  for (i = 0; i < 5; i++) printf "%s%.4f", (i ? ", " : ""), 8.0 * s * (1 + (i % 2) * 0.003);
  printf "]}\n" }'
"#;

/// The example's config with its model and suite, but the scripted harness in place of the
/// built-in one, a declared bandwidth instead of the measured one (the floor must not move
/// between the two runs), and the scripted canary.
fn example_env() -> TestEnv {
    let env = TestEnv::new();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/cpu-decode/utilgate.toml"
    ))
    .expect("example config");
    let scripted = text
        .replace(
            "command = \"{{ utilgate }} harness cpu-decode --config {{ config_dir }}/utilgate.toml\"",
            "command = \"sh harness.sh\"",
        )
        .replace("measure_host_bandwidth = true", "mem_bandwidth_gb_s = 10.0")
        .replace("batches = [1, 8]", "batches = [1]")
        .replace("contexts = [512, 2048]", "contexts = [512]")
        + "\n[canary]\ncommand = \"sh canary.sh\"\n";
    assert!(
        scripted.contains("sh harness.sh") && scripted.contains("mem_bandwidth_gb_s"),
        "the example config changed; update this test"
    );
    env.write_config(&scripted);
    env.write("canary.sh", CANARY);
    env
}

#[test]
fn the_example_twice_on_a_busy_machine_is_inconclusive_not_regressed() {
    let env = example_env();
    let first = env.run("main", &[("STEP_MS", "100.0")]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // A CPU hog on both cores: every step 11% slower, and the canary 11% slower with it.
    let busy = env.run("main", &[("STEP_MS", "111.0"), ("CANARY_SCALE", "1.11")]);
    let text = stdout(&busy);
    assert_eq!(busy.status.code(), Some(0), "{text}\n{}", stderr(&busy));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, CASE), "inconclusive", "{text}");
    assert!(
        text.contains("host 11.0% slower than in the reference's runs: canary"),
        "{text}"
    );
    assert!(!text.contains("REGRESSED"), "{text}");
    // Nothing moved, and the summary says so (it said "baselines promoted": the run was
    // allowed to promote, but none of its untrusted cases did).
    assert!(text.contains("; baselines unchanged"), "{text}");
    // The busy night is stored with its canary, never becomes the baseline, and re-judging
    // it from the store gives the same answer.
    let again = env.json(&["compare", "2"]);
    assert_eq!(verdict_of(&again, CASE), "inconclusive");
    let baselines = env.json(&["baseline", "list"]);
    assert_eq!(baselines["baselines"][0]["run_id"], 1);
}

#[test]
fn the_same_slowdown_on_a_steady_machine_still_fails() {
    let env = example_env();
    assert_eq!(
        env.run("main", &[("STEP_MS", "100.0")]).status.code(),
        Some(0)
    );
    let out = env.run("feature", &[("STEP_MS", "111.0")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stdout(&out).contains(&format!("REGRESSED {CASE}")),
        "{}",
        stdout(&out)
    );
}

#[test]
fn a_drop_well_beyond_the_host_shift_still_fails() {
    let env = example_env();
    assert_eq!(
        env.run("main", &[("STEP_MS", "100.0")]).status.code(),
        Some(0)
    );
    // The host is 11% slower, the step 40% slower: the code lost far more than the machine.
    let out = env.run("feature", &[("STEP_MS", "140.0"), ("CANARY_SCALE", "1.11")]);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains(&format!("REGRESSED {CASE}")), "{text}");
    assert!(text.contains("well beyond that"), "{text}");
}

#[test]
fn a_broken_canary_command_warns_and_the_run_goes_on() {
    let env = example_env();
    env.write("canary.sh", "echo not json\n");
    let out = env.run("main", &[("STEP_MS", "100.0")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("printed no JSON object of figures")
            && stderr(&out).contains("this run has no canary"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_faster_host_that_hides_slower_code_is_inconclusive_and_the_headline_names_the_drop() {
    let env = example_env();
    assert_eq!(
        env.run("main", &[("STEP_MS", "100.0")]).status.code(),
        Some(0)
    );
    // The host is 40.7% faster tonight (the canary's stream 4.28 -> 2.54 in the field report)
    // and the code does 20% more work: 100 ms x 0.593 x 1.2 = 71.2 ms, a step that looks
    // faster. Before, this night "improved"; a 60% slowdown under the same host passed.
    let out = env.run(
        "feature",
        &[("STEP_MS", "71.2"), ("CANARY_SCALE", "0.5935")],
    );
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, CASE), "inconclusive", "{text}");
    assert!(
        text.contains("Host changed: host 40.7% faster than in the reference's runs"),
        "{text}"
    );
    assert!(
        text.contains("with the host's shift taken off the change is a drop of 16.6%"),
        "{text}"
    );
    assert!(
        text.contains(
            "gate: could not tell, largest unconfirmed drop 16.6% with the host's shift taken off"
        ),
        "{text}"
    );
    // Code that doubled its work on the same host used to pass (the step barely moved).
    let out = env.run(
        "feature",
        &[("STEP_MS", "101.0"), ("CANARY_SCALE", "0.5935")],
    );
    let text = stdout(&out);
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, CASE), "inconclusive", "{text}");
    assert!(!text.contains("gate: passed"), "{text}");
}

/// #28 item 9: the canary command ran as a bare `sh -c` (only `GITHUB_TOKEN` removed, no
/// timeout, no parent-death signal); it now runs as a harness does, under `utilgate harness
/// guard` (the grandparent of `canary.sh`, under the guard's `sh -c`), with the credential
/// variables removed.
#[test]
fn the_canary_command_runs_under_the_harness_guard_without_credentials() {
    let env = example_env();
    env.write(
        "canary.sh",
        &format!(
            "gp=$(awk '{{print $4}}' /proc/$PPID/stat)\n\
             tr '\\0' ' ' < /proc/$gp/cmdline > canary-parent.txt\n\
             env > canary-env.txt\n{CANARY}"
        ),
    );
    let out = env.run(
        "main",
        &[
            ("STEP_MS", "100.0"),
            ("CI_JOB_TOKEN", "glcbt-CanaryCiJobToken0123456789"),
        ],
    );
    let parent = std::fs::read_to_string(env.path().join("canary-parent.txt"))
        .unwrap_or_else(|e| panic!("the canary ran: {e}; {}", stderr(&out)));
    assert!(parent.contains("harness guard --parent"), "{parent}");
    let seen = std::fs::read_to_string(env.path().join("canary-env.txt")).expect("env");
    assert!(!seen.contains("CanaryCiJobToken"), "{seen}");
    assert!(
        !stderr(&out).contains("this run has no canary"),
        "{}",
        stderr(&out)
    );
}
