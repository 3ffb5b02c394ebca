//! Traces through `utilgate run`: a harness that writes a real-format torch.profiler trace when
//! `UTILGATE_TRACE_DIR` is set; the regressed case's report names the kernel that grew. Bad
//! traces are warnings and the verdict stands.

use crate::env::{TestEnv, case_of, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// Runs the scripted harness, then, in the traced repeat only, writes a Kineto trace of three
/// decode steps (GEMM, attention taking `ATTN_US`, RMS norm) and reports it. `BAD_TRACE=1`
/// writes a truncated file instead.
const TRACED_HARNESS: &str = r#"#!/bin/sh
set -eu
sh harness.sh
[ -n "${UTILGATE_TRACE_DIR:-}" ] || exit 0
f="$UTILGATE_TRACE_DIR/worker0.1733000000.pt.trace.json"
if [ "${BAD_TRACE:-0}" = "1" ]; then
  printf '{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k' > "$f"
else
  awk -v attn="${ATTN_US:-40}" 'BEGIN {
    printf "{\"schemaVersion\": 1, \"traceEvents\": [\n"; c = 1; sep = ""
    for (s = 0; s < 3; s++) {
      t0 = 1000000 + s * 1000
      printf "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": 10, \"tid\": 10, \"ts\": %d, \"dur\": 900}", sep, s, t0; sep = ",\n"
      g = t0 + 20
      split("ampere_bf16_s16816gemm_bf16_128x64_tn|void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64>>(Flash_fwd_params)|void vllm::rms_norm_kernel<c10::BFloat16>(float)", names, "|")
      durs[1] = 200; durs[2] = attn; durs[3] = 10
      for (k = 1; k <= 3; k++) {
        printf "%s{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 10, \"tid\": 10, \"ts\": %d, \"dur\": 3, \"args\": {\"correlation\": %d}}", sep, t0 + 5 * k, c
        printf "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": 7, \"ts\": %d, \"dur\": %d, \"args\": {\"stream\": 7, \"device\": 0, \"correlation\": %d}}", sep, names[k], g, durs[k], c
        g += durs[k] + 2; c++
      }
    }
    printf "\n]}\n"
  }' > "$f"
fi
printf '{"trace": "%s"}\n' "$f" >> "$UTILGATE_OUT"
"#;

fn traced_env() -> TestEnv {
    let env = TestEnv::new();
    env.write("traced.sh", TRACED_HARNESS);
    let config = TestEnv::config_with("trace = true")
        .replace("command = \"sh harness.sh\"", "command = \"sh traced.sh\"");
    env.write_config(&config);
    env
}

#[test]
fn a_regressed_case_names_the_kernel_that_grew_in_every_report() {
    let env = traced_env();
    let out = env.run("main", &[("ATTN_US", "40")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // The run says what it captured, one line per case.
    let err = crate::env::stderr(&out);
    assert!(
        err.contains(&format!("{B1}: evidence captured: 1 profiler trace")),
        "{err}"
    );
    let out = env.run("feature", &[("STEP_MS", "11.0"), ("ATTN_US", "57")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("REGRESSED {B1}")), "{text}");
    assert!(
        text.contains("trace diff, the baseline result's trace -> this run's (worker0.1733000000.pt.trace.json):"),
        "{text}"
    );
    assert!(
        text.contains("flash_fwd_splitkv_kernel +42% (40.0 -> 57.0 µs per step; 1 -> 1 calls)"),
        "{text}"
    );
    // The stored run carries the same evidence in JSON, the PR comment (collapsed) and HTML.
    let report = env.json(&["runs", "show"]);
    let case = case_of(&report, B1);
    let lines = case["evidence"]["diff_lines"]
        .as_array()
        .expect("diff lines");
    assert!(
        lines[0]
            .as_str()
            .expect("line")
            .starts_with("flash_fwd_splitkv_kernel +42%"),
        "{lines:?}"
    );
    assert_eq!(case["evidence"]["bars"].as_array().expect("bars").len(), 2);
    let md = env.report("markdown");
    assert!(
        md.contains("<details><summary>Profiler trace: what changed</summary>"),
        "{md}"
    );
    assert!(md.contains("flash_fwd_splitkv_kernel +42%"), "{md}");
    let html = env.report("html");
    assert!(html.contains("GPU time by category"), "{html}");
    // `trace diff` of the stored... files reads the same numbers from the command line.
}

#[test]
fn a_bad_trace_is_a_warning_and_the_verdict_stands() {
    let env = traced_env();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run("main", &[("BAD_TRACE", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "pass");
    let case = case_of(&report, B1);
    let warning = case["evidence"]["warning"].as_str().expect("warning");
    assert!(warning.contains("truncated"), "{warning}");
}

#[test]
fn attention_that_grows_with_context_is_diagnosed_across_the_suites_contexts() {
    let env = TestEnv::new();
    env.write("traced.sh", TRACED_HARNESS);
    // Attention time per step proportional to the context: x8 from 512 to 4096.
    env.write(
        "by_context.sh",
        "ATTN_US=$((UTILGATE_CONTEXT / 10)) exec sh traced.sh\n",
    );
    let config = TestEnv::config_with("trace = true")
        .replace(
            "command = \"sh harness.sh\"",
            "command = \"sh by_context.sh\"",
        )
        .replace("batches = [1, 8]", "batches = [1]")
        .replace("contexts = [4096]", "contexts = [512, 4096]");
    env.write_config(&config);
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = env.json(&["runs", "show"]);
    let long = case_of(&report, B1);
    let diagnosis = long["evidence"]["diagnosis"]
        .as_array()
        .expect("a diagnosis");
    assert!(
        diagnosis.iter().any(|d| d.as_str()
            == Some("attention grows with context: 51.0 µs per step at context 512 -> 409.0 µs at 4096 (x8.0)")),
        "{diagnosis:?}"
    );
    let short = case_of(&report, "decode/seed-8b/bf16/decode/b1/c512");
    assert!(
        !short["evidence"]["diagnosis"]
            .as_array()
            .expect("a diagnosis")
            .iter()
            .any(|d| d.as_str().is_some_and(|d| d.starts_with("attention grows"))),
        "said once, on the largest context"
    );
}

/// Runs the scripted harness, then, in the traced repeat only, writes a CPU-only Kineto trace
/// (three 1000 µs steps of `aten::linear` 600 µs > `aten::matmul` 550 µs > `aten::mm` `MM_US`).
const CPU_TRACED_HARNESS: &str = r#"#!/bin/sh
set -eu
sh harness.sh
[ -n "${UTILGATE_TRACE_DIR:-}" ] || exit 0
f="$UTILGATE_TRACE_DIR/worker0.1733000001.pt.trace.json"
awk -v mm="${MM_US:-500}" 'BEGIN {
  printf "{\"traceEvents\": [\n"; sep = ""
  for (s = 0; s < 3; s++) {
    t0 = 10000 + s * 1000
    printf "%s{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": 7, \"tid\": 1, \"ts\": %d, \"dur\": 1000}", sep, s, t0; sep = ",\n"
    printf "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 7, \"tid\": 1, \"ts\": %d, \"dur\": 600}", sep, t0 + 10
    printf "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::matmul\", \"pid\": 7, \"tid\": 1, \"ts\": %d, \"dur\": 550}", sep, t0 + 20
    printf "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": 1, \"ts\": %d, \"dur\": %d}", sep, t0 + 30, mm
  }
  printf "\n]}\n"
}' > "$f"
printf '{"trace": "%s"}\n' "$f" >> "$UTILGATE_OUT"
"#;

/// A CPU-only trace: every report says no GPU activity was recorded and lists the operators
/// by self time; no empty GPU bar, no GPU idle share (it was "GPU idle 100% -> 100%").
#[test]
fn a_cpu_only_trace_reads_no_gpu_activity_in_every_report() {
    let env = TestEnv::new();
    env.write("traced.sh", CPU_TRACED_HARNESS);
    let config = TestEnv::config_with("trace = true")
        .replace("command = \"sh harness.sh\"", "command = \"sh traced.sh\"");
    env.write_config(&config);
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run("feature", &[("STEP_MS", "11.0"), ("MM_US", "540")]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains(&format!("REGRESSED {B1}")), "{text}");
    assert!(
        text.contains("    aten::matmul -80% (50.0 -> 10.0 self µs per step; 1 -> 1 calls)"),
        "{text}"
    );
    assert!(
        text.contains("  trace: no GPU activity recorded: the step (1000.0 µs) is host time"),
        "{text}"
    );
    assert!(
        text.contains("  trace: host operators by self time:\n    aten::mm: 540.0 µs self per step (90.0% of all operators' self time), 1.0 calls, 540.0 µs with the operators inside"),
        "{text}"
    );
    assert!(!text.contains("GPU idle"), "{text}");

    let report = env.json(&["runs", "show"]);
    let ev = &case_of(&report, B1)["evidence"];
    assert_eq!(ev["host_only"], true, "{ev}");
    assert_eq!(ev["bars"].as_array().map(Vec::len), Some(0), "{ev}");
    assert!(ev["gpu_idle_share_now"].is_null(), "{ev}");
    let html = env.report("html");
    assert!(!html.contains("GPU time by category"), "{html}");
    assert!(
        html.contains("no GPU activity recorded; host operators by self time:"),
        "{html}"
    );
    assert!(
        html.contains("<li><code>aten::mm: 540.0 µs self per step"),
        "{html}"
    );
    let md = env.report("markdown");
    assert!(md.contains("no GPU activity recorded"), "{md}");
    assert!(md.contains("  - `aten::mm: 540.0 µs self per step"), "{md}");
    assert!(!md.contains("GPU idle"), "{md}");
}
