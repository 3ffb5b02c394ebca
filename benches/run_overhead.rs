//! What `utilgate run` itself adds per harness process beyond the harness: runs the release
//! binary over a grid of cases (one harness process each) whose harness does almost nothing,
//! and subtracts the cost of starting that same harness directly from a loop. Wall time and CPU
//! time (user + system of every process waited for, utilgate's and its children's), in rounds
//! that interleave the three measurements so a shared machine's load falls on all of them;
//! medians over the rounds. Writes temporary files; prints a table on stdout.
//!
//! `cargo bench --bench run_overhead` (100 cases, 3 rounds; `-- N R` for N cases and R rounds).
//! On a shared machine: `nice cargo bench --bench run_overhead -- 30 5`. With `busy` among the
//! arguments each harness process first spends one 100 ms step on the CPU (a shell loop), and
//! the CPU ratio of `run` over the bare processes is the share utilgate adds to such a harness.
#![expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a benchmark starts processes and prints its table"
)]
#![expect(clippy::cast_precision_loss, reason = "small counts")]

use std::process::Command;
use std::time::{Duration, Instant};

use nix::sys::resource::{UsageWho, getrusage};

const HARNESS: &str = r#"printf '{"step_ms": 15.0}\n{"step_ms": 15.1}\n' >> "$UTILGATE_OUT""#;

/// About 100 ms of one core on the machine the figures in docs/reliability.md come from.
const BUSY_STEP: &str = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; ";

fn config(cases: usize, harness: &str) -> String {
    let contexts: Vec<String> = (1..=cases).map(|c| c.to_string()).collect();
    format!(
        r#"
[gate]
confirm_repeats = 0
[gpu]
name = "h100-sxm"
# Measured once per run, so it cancels out of the per-process figure; off, it adds no noise.
[canary]
enabled = false
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
        harness.replace('\\', "\\\\").replace('"', "\\\""),
        contexts.join(", ")
    )
}

/// Wall and CPU time (user + system) of what `body` starts and waits for.
#[derive(Debug, Clone, Copy)]
struct Cost {
    wall: Duration,
    cpu: Duration,
}

fn children_cpu() -> Duration {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    micros(usage.user_time()) + micros(usage.system_time())
}

fn measure(body: impl FnOnce()) -> Cost {
    let cpu = children_cpu();
    let start = Instant::now();
    body();
    Cost {
        wall: start.elapsed(),
        cpu: children_cpu().saturating_sub(cpu),
    }
}

fn time_run(cases: usize, harness: &str) -> Cost {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("utilgate.toml"), config(cases, harness)).expect("config");
    measure(|| {
        let out = Command::new(env!("CARGO_BIN_EXE_utilgate"))
            .args(["run", "--branch", "bench", "--git-sha", "0123456789abcdef"])
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
}

fn time_harness(times: usize, harness: &str) -> Cost {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.jsonl");
    measure(|| {
        for _ in 0..times {
            let status = Command::new("sh")
                .args(["-c", harness])
                .env("UTILGATE_OUT", &out)
                .status()
                .expect("sh");
            assert!(status.success());
        }
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        f64::midpoint(values[mid - 1], values[mid])
    } else {
        values[mid]
    }
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let cases = numbers.first().copied().unwrap_or(100).max(2);
    let rounds = numbers.get(1).copied().unwrap_or(3).max(1);
    let harness = if std::env::args().any(|a| a == "busy") {
        format!("{BUSY_STEP}{HARNESS}")
    } else {
        HARNESS.to_owned()
    };
    // Warm the page cache and the binary once.
    let _ = time_run(1, &harness);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (mut one, mut many, mut bare) = (Vec::new(), Vec::new(), Vec::new());
    let (mut extra_wall, mut extra_cpu, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let o = time_run(1, &harness);
        let m = time_run(cases, &harness);
        let h = time_harness(cases, &harness);
        let per = |run1: Duration, run_n: Duration, harness: Duration| {
            ms(run_n.saturating_sub(run1)) / (cases - 1) as f64 - ms(harness) / cases as f64
        };
        extra_wall.push(per(o.wall, m.wall, h.wall));
        extra_cpu.push(per(o.cpu, m.cpu, h.cpu));
        ratio.push(ms(m.cpu) / ms(h.cpu));
        one.push(o);
        many.push(m);
        bare.push(h);
    }
    let med = |costs: &[Cost], pick: fn(&Cost) -> Duration| {
        median(costs.iter().map(|c| ms(pick(c))).collect())
    };
    let wall = |c: &Cost| c.wall;
    let cpu = |c: &Cost| c.cpu;
    println!("| measure (median of {rounds} interleaved rounds) | wall | CPU |");
    println!("|---|---:|---:|");
    println!(
        "| `run` with 1 case (start-up, store, report) | {:.1} ms | {:.1} ms |",
        med(&one, wall),
        med(&one, cpu)
    );
    println!(
        "| `run` with {cases} cases | {:.1} ms | {:.1} ms |",
        med(&many, wall),
        med(&many, cpu)
    );
    println!(
        "| per harness process, the harness alone (`sh -c`) | {:.2} ms | {:.2} ms |",
        med(&bare, wall) / cases as f64,
        med(&bare, cpu) / cases as f64
    );
    println!(
        "| **per harness process, added by utilgate** | **{:.2} ms** | **{:.2} ms** |",
        median(extra_wall),
        median(extra_cpu)
    );
    println!(
        "| CPU ratio, `run` with {cases} cases over the {cases} harness processes alone | | {:.3} |",
        median(ratio)
    );
}
