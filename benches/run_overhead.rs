//! What `utilgate run` itself adds per case beyond the harness: runs the release binary over a
//! grid of cases whose harness does almost nothing, and subtracts the cost of starting that same
//! harness directly. Writes temporary files; prints a table on stdout.
//!
//! `cargo bench --bench run_overhead` (100 cases; `-- N` for another count).
#![expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a benchmark starts processes and prints its table"
)]
#![expect(clippy::cast_precision_loss, reason = "small counts")]

use std::process::Command;
use std::time::{Duration, Instant};

const HARNESS: &str = r#"printf '{"step_ms": 15.0}\n{"step_ms": 15.1}\n' >> "$UTILGATE_OUT""#;

fn config(cases: usize) -> String {
    let contexts: Vec<String> = (1..=cases).map(|c| c.to_string()).collect();
    format!(
        r#"
[gate]
confirm_repeats = 0
[gpu]
name = "h100-sxm"
[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072
[[suite]]
name = "overhead"
command = "{}"
models = ["seed-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1]
contexts = [{}]
warmup_steps = 0
steps = 2
repeats = 1
"#,
        HARNESS.replace('\\', "\\\\").replace('"', "\\\""),
        contexts.join(", ")
    )
}

fn time_run(cases: usize) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("utilgate.toml"), config(cases)).expect("config");
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_utilgate"))
        .args(["run", "--branch", "bench"])
        .current_dir(dir.path())
        .env("NO_COLOR", "1")
        .output()
        .expect("run");
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn time_harness(times: usize) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.jsonl");
    let start = Instant::now();
    for _ in 0..times {
        let status = Command::new("sh")
            .args(["-c", HARNESS])
            .env("UTILGATE_OUT", &out)
            .status()
            .expect("sh");
        assert!(status.success());
    }
    start.elapsed()
}

fn main() {
    let cases: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    // Warm the page cache and the binary once.
    let _ = time_run(1);
    let one = time_run(1);
    let many = time_run(cases);
    let harness = time_harness(cases);
    let per_case_total = many.saturating_sub(one).as_secs_f64() / (cases - 1) as f64;
    let per_case_harness = harness.as_secs_f64() / cases as f64;
    println!("| measure | value |");
    println!("|---|---:|");
    println!(
        "| `run` with 1 case (start-up, store, report) | {:.1} ms |",
        one.as_secs_f64() * 1e3
    );
    println!(
        "| `run` with {cases} cases | {:.1} ms |",
        many.as_secs_f64() * 1e3
    );
    println!(
        "| per extra case, in all | {:.2} ms |",
        per_case_total * 1e3
    );
    println!(
        "| per case, the harness alone (`sh -c`) | {:.2} ms |",
        per_case_harness * 1e3
    );
    println!(
        "| **per case, added by utilgate** | **{:.2} ms** |",
        (per_case_total - per_case_harness) * 1e3
    );
}
