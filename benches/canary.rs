//! The host canary's cost and steadiness: the canary `run` measures (`HostCanary::DEFAULT`)
//! against the one before #29 (`HostCanary::BEFORE_29`), side by side in interleaved rounds so
//! that a shared machine's load falls on both. Per run (two calls, before and after the cases):
//! wall time and the peak resident memory it adds (each measured in a fresh child process);
//! per figure: the run-to-run spread of each call's median and the spread within a call, which
//! is what `compare::canary_shift` weighs a shift against. Prints a table on stdout.
//!
//! `cargo bench --bench canary` (30 rounds; `-- R` for R rounds).
#![expect(
    clippy::print_stdout,
    clippy::disallowed_methods,
    reason = "a benchmark starts itself and prints its table"
)]
#![expect(clippy::cast_precision_loss, reason = "small counts")]

use std::time::Instant;

use utilgate::compare::Canary;
use utilgate::measure::canary::{HostCanary, measure_host_with};

fn work(name: &str) -> HostCanary {
    match name {
        "default" => HostCanary::DEFAULT,
        "before" => HostCanary::BEFORE_29,
        other => panic!("no canary {other}"),
    }
}

/// Peak resident memory of this process, KiB (`VmHWM`).
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("proc status")
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// In a child: one run's canary (two calls); prints the wall ms and the peak KiB it added.
fn child(name: &str) {
    let before = peak_kib();
    let mut canary = Canary::default();
    let start = Instant::now();
    measure_host_with(&mut canary, &work(name));
    measure_host_with(&mut canary, &work(name));
    let ms = start.elapsed().as_secs_f64() * 1e3;
    println!("{ms} {}", peak_kib().saturating_sub(before));
}

fn in_child(name: &str) -> (f64, f64) {
    let out = std::process::Command::new(std::env::current_exe().expect("this bench"))
        .args(["--child", name])
        .output()
        .expect("start the child");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .split_whitespace()
        .map(|v| v.parse::<f64>().expect("a number"));
    (
        parts.next().expect("ms"),
        parts.next().expect("KiB") / 1024.0,
    )
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len().is_multiple_of(2) {
        f64::midpoint(v[mid - 1], v[mid])
    } else {
        v[mid]
    }
}

/// Standard deviation over mean, percent.
fn cv_pct(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    100.0 * var.sqrt() / mean
}

#[derive(Default)]
struct Tally {
    run_ms: Vec<f64>,
    run_mib: Vec<f64>,
    /// Per figure: each call's median, and each call's spread.
    medians: std::collections::BTreeMap<String, Vec<f64>>,
    within: std::collections::BTreeMap<String, Vec<f64>>,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, name, ..] = args.as_slice()
        && flag == "--child"
    {
        child(name);
        return;
    }
    let rounds = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(30_usize)
        .max(3);
    let names = ["before", "default"];
    let mut tallies: Vec<Tally> = names.iter().map(|_| Tally::default()).collect();
    for _ in 0..rounds {
        for (name, tally) in names.iter().zip(&mut tallies) {
            let (ms, mib) = in_child(name);
            tally.run_ms.push(ms);
            tally.run_mib.push(mib);
            let mut canary = Canary::default();
            measure_host_with(&mut canary, &work(name));
            for (figure, readings) in canary.figures {
                tally
                    .medians
                    .entry(figure.clone())
                    .or_default()
                    .push(median(&readings));
                tally
                    .within
                    .entry(figure)
                    .or_default()
                    .push(cv_pct(&readings));
            }
        }
    }
    println!(
        "| host canary (median of {rounds} interleaved rounds) | per run | adds at peak | figure | run-to-run CV of call medians | median CV within a call |"
    );
    println!("|---|---:|---:|---|---:|---:|");
    for (name, tally) in names.iter().zip(&tallies) {
        let label = match *name {
            "before" => "before #29 (32 MiB x 1)",
            _ => "now (4 MiB x 4)",
        };
        for (i, (figure, medians)) in tally.medians.iter().enumerate() {
            let (cost, mem) = if i == 0 {
                (
                    format!("{:.1} ms", median(&tally.run_ms)),
                    format!("{:.1} MiB", median(&tally.run_mib)),
                )
            } else {
                (String::new(), String::new())
            };
            println!(
                "| {} | {cost} | {mem} | `{figure}` | {:.2}% | {:.2}% |",
                if i == 0 { label } else { "" },
                cv_pct(medians),
                median(&tally.within[figure]),
            );
        }
    }
}
