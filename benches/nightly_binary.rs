//! The budgeted night against fixed sampling through the real binary (#29): a 100-case grid
//! whose simulated harness has 2% process noise, some cases 5% slower each night, every arm run
//! by the release `utilgate run` side by side on the same machine, so each arm's wall time is
//! what its night really took. `benches/nightly.rs` is the model of this; this is the thing.
//!
//! `cargo bench --bench nightly_binary -- budget 60,40` (seconds: one budgeted arm per budget,
//! each run with `--budget`, beside the fixed arm, `utilgate run` without one). Other
//! arguments, each a name and a value: `nights 30`, `cases 100`, `drops 5` (cases 5% slower a
//! night), `noise 0.02` (a process's lognormal offset), `spend 1` (the share of its reported
//! step time a process really sleeps: below 1 it reports more than it takes, as overlapped
//! device steps or a replay do), `start 1` (a scale on each process's start time),
//! `history 10` (good nights stored before the first measured one), `fixed no` (no fixed
//! arm). `UTILGATE_BENCH_BIN=path/to/target/release/utilgate` runs another build (its own
//! stores, named by its target folder). Writes under `target/bench-nightly-binary/` (each
//! night's JSON report in `nights/`); prints one line per night and a Markdown table on
//! stdout. docs/nightly.md has the figures.
//!
//! # What is simulated and what is real
//! The harness (this bench's own executable, started by utilgate as any harness is) stands in
//! for a GPU: each process sleeps its start (30-100 ms, a model load), its 2 warm-up and 10
//! counted steps (2-6 ms each, by case), and reports the steps' times drawn from a known
//! distribution: the case's step time, times a per-process offset `exp(noise * z)`, times a
//! per-step jitter `exp(0.0075 * z)`, times `1 / 0.95` on the night's slowed cases. Everything
//! else is real: utilgate's planning, processes, store, verdicts and its own time.
//!
//! Each night starts every arm from a copy of the same stored history (`history` good nights of
//! fixed sampling), so nights are independent and the arms are paired: the same slowed cases,
//! the same history, the same moment on the machine (the arms run at once; the harness sleeps,
//! so they barely compete for a core).
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    reason = "a benchmark starts processes and prints its table"
)]
#![expect(clippy::cast_precision_loss, reason = "small counts")]

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::index::sample;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use utilgate::compare::quality::{QualityCount, wilson};

const WARMUP: u64 = 2;
const STEPS: u64 = 10;
const JITTER: f64 = 0.0075;
const DROP: f64 = 0.05;

/// The bench's settings (see the module's documentation).
#[derive(Debug, Clone)]
struct Settings {
    nights: usize,
    cases: usize,
    drops: usize,
    noise: f64,
    /// The share of its reported step times a process really spends (1: all; below 1, a
    /// harness whose steps overlap on a device or that replays them: it reports more than it
    /// takes).
    spend: f64,
    /// A scale on every process's start time (1: 30-100 ms).
    start: f64,
    history: usize,
    arms: Vec<Arm>,
}

/// One way of sampling the night.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Arm {
    /// `utilgate run` without a budget: 3 repeats a case, 12 fresh ones for a suspect.
    Fixed,
    /// `utilgate run --budget <seconds>`.
    Planned(f64),
}

impl Arm {
    fn name(self) -> String {
        match self {
            Arm::Fixed => "fixed".to_owned(),
            Arm::Planned(b) => format!("planned-{b}s"),
        }
    }
}

fn settings() -> Settings {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut s = Settings {
        nights: 30,
        cases: 100,
        drops: 5,
        noise: 0.02,
        spend: 1.0,
        start: 1.0,
        history: 10,
        arms: Vec::new(),
    };
    let mut fixed = true;
    let mut it = args.iter().filter(|a| !a.starts_with("--"));
    while let Some(name) = it.next() {
        let Some(value) = it.next() else { break };
        match name.as_str() {
            "nights" => s.nights = number(name, value),
            "cases" => s.cases = number(name, value),
            "drops" => s.drops = number(name, value),
            "noise" => s.noise = number(name, value),
            "spend" => s.spend = number(name, value),
            "start" => s.start = number(name, value),
            "history" => s.history = number(name, value),
            "budget" => {
                for b in value.split(',') {
                    s.arms.push(Arm::Planned(number(name, b)));
                }
            }
            "fixed" => fixed = value != "no",
            _ => panic!(
                "unknown setting {name}: nights, cases, drops, noise, history, budget, fixed"
            ),
        }
    }
    if fixed {
        s.arms.insert(0, Arm::Fixed);
    }
    assert!(
        !s.arms.is_empty(),
        "no arm: `-- budget 60` or `-- fixed yes`"
    );
    s
}

fn number<T: std::str::FromStr>(name: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| panic!("{name} {value}: not a number"))
}

/// The simulated harness: one process of the case `UTILGATE_CONTEXT` (1, 2, ...).
fn harness() {
    let var = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} unset"));
    let case: u64 = var("UTILGATE_CONTEXT").parse().expect("context");
    let warmup: u64 = var("UTILGATE_WARMUP_STEPS").parse().expect("warm-up steps");
    let steps: u64 = var("UTILGATE_STEPS").parse().expect("steps");
    let noise: f64 = var("SIM_NOISE").parse().expect("SIM_NOISE");
    let scale = |name: &str| std::env::var(name).map_or(1.0, |v| v.parse().expect(name));
    let (spend, start) = (scale("SIM_SPEND"), scale("SIM_START"));
    let slowed = var("SIM_DROPS")
        .split(',')
        .any(|c| c.parse::<u64>().ok() == Some(case));
    let start_s = start * (0.03 + 0.07 * ((case * 37) % 100) as f64 / 100.0);
    let step_ms = 2.0 + 4.0 * ((case * 53) % 100) as f64 / 100.0;
    let mut rng = rand::rng();
    let mut gauss = || -> f64 { rng.sample(StandardNormal) };
    let offset = (noise * gauss()).exp() * if slowed { 1.0 / (1.0 - DROP) } else { 1.0 };
    std::thread::sleep(Duration::from_secs_f64(start_s));
    let mut out = String::new();
    for i in 0..warmup + steps {
        let ms = step_ms * offset * (JITTER * gauss()).exp();
        std::thread::sleep(Duration::from_secs_f64(spend * ms / 1e3));
        let warm = if i < warmup { ", \"warmup\": true" } else { "" };
        let _ = writeln!(out, "{{\"step_ms\": {ms:.5}{warm}}}");
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(var("UTILGATE_OUT"))
        .and_then(|mut f| f.write_all(out.as_bytes()))
        .expect("results file");
}

fn config(s: &Settings, harness: &Path) -> String {
    let contexts: Vec<String> = (1..=s.cases).map(|c| c.to_string()).collect();
    format!(
        r#"# The simulated nightly of benches/nightly_binary.rs.
[gate]
baseline_branch = "main"
[gpu]
name = "h100-sxm"
[canary]
enabled = false
# Small, so the floor (about 0.3 ms) lies under every simulated step.
[models.sim-0.5b]
params = 5.0e8
kv_bytes_per_token = 4096
[[suite]]
name = "night"
command = "'{}'"
models = ["sim-0.5b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1]
contexts = [{}]
warmup_steps = {WARMUP}
steps = {STEPS}
repeats = 3
timeout_s = 30
"#,
        harness.display(),
        contexts.join(", ")
    )
}

/// What one night of one arm gave.
#[derive(Debug, Clone, Default)]
struct Outcome {
    wall_s: f64,
    slowed: usize,
    caught: usize,
    inconclusive: usize,
    false_alarms: usize,
    processes: u64,
}

/// The binary under test: this build's, or `UTILGATE_BENCH_BIN` (another build, to compare).
fn binary() -> PathBuf {
    std::env::var_os("UTILGATE_BENCH_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_utilgate")),
        PathBuf::from,
    )
}

fn utilgate(dir: &Path, args: &[&str], drops: &str, s: &Settings) -> std::process::Output {
    Command::new(binary())
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env("NO_COLOR", "1")
        .env("SIM_DROPS", drops)
        .env("SIM_NOISE", s.noise.to_string())
        .env("SIM_SPEND", s.spend.to_string())
        .env("SIM_START", s.start.to_string())
        .output()
        .expect("utilgate runs")
}

fn night_args(night: usize) -> Vec<String> {
    [
        "run",
        "--branch",
        "main",
        "--git-sha",
        &format!("{night:040x}"),
        "--format",
        "json",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The stored history both arms start from: `history` nights without a slowed case.
fn seed(s: &Settings, root: &Path, harness: &Path) -> PathBuf {
    let dir = root.join("seed");
    let done = dir.join("seeded");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("seed dir");
    std::fs::write(dir.join("utilgate.toml"), config(s, harness)).expect("config");
    for night in 0..s.history {
        let t = Instant::now();
        let args = night_args(1_000_000 + night);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = utilgate(&dir, &args, "", s);
        let json = parse(&out);
        assert!(
            cases(&json).iter().all(|c| c["verdict"] != "error"),
            "a stored night failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "history night {}/{}: {:.1} s, {}",
            night + 1,
            s.history,
            t.elapsed().as_secs_f64(),
            verdict_counts(&json)
        );
    }
    std::fs::write(&done, "").expect("marker");
    dir
}

fn parse(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "utilgate run gave no JSON ({e}); exit {:?}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn cases(json: &serde_json::Value) -> &[serde_json::Value] {
    json["cases"].as_array().map_or(&[], Vec::as_slice)
}

fn verdict_counts(json: &serde_json::Value) -> String {
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for c in cases(json) {
        *counts
            .entry(c["verdict"].as_str().unwrap_or("?").to_owned())
            .or_default() += 1;
    }
    format!("{counts:?}")
}

fn run_arm(
    arm: Arm,
    s: &Settings,
    seed: &Path,
    root: &Path,
    night: usize,
    slowed: &BTreeSet<u64>,
) -> Outcome {
    let dir = root.join(arm.name());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join(".utilgate")).expect("arm dir");
    std::fs::copy(seed.join("utilgate.toml"), dir.join("utilgate.toml")).expect("config");
    std::fs::copy(
        seed.join(".utilgate/utilgate.db"),
        dir.join(".utilgate/utilgate.db"),
    )
    .expect("store");
    let mut args = night_args(night);
    if let Arm::Planned(budget_s) = arm {
        args.extend(["--budget".to_owned(), format!("{budget_s}s")]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let drops: Vec<String> = slowed.iter().map(u64::to_string).collect();
    let t = Instant::now();
    let out = utilgate(&dir, &args, &drops.join(","), s);
    let wall_s = t.elapsed().as_secs_f64();
    let json = parse(&out);
    // Kept for a look at what each arm did with a night.
    let kept = root.join("nights");
    std::fs::create_dir_all(&kept).expect("nights dir");
    std::fs::write(
        kept.join(format!("{}-{night}.json", arm.name())),
        &out.stdout,
    )
    .expect("night's report");
    let mut o = Outcome {
        wall_s,
        slowed: slowed.len(),
        ..Outcome::default()
    };
    for c in cases(&json) {
        let context = c["key"]["context"].as_u64().expect("context");
        let verdict = c["verdict"].as_str().unwrap_or("?");
        o.processes += c["repeats"].as_u64().unwrap_or(0);
        if slowed.contains(&context) {
            o.caught += usize::from(verdict == "regressed");
            o.inconclusive += usize::from(verdict == "inconclusive");
        } else {
            o.false_alarms += usize::from(verdict == "regressed");
        }
    }
    o
}

/// A share with its 95% Wilson interval.
fn share(k: usize, n: usize) -> String {
    if n == 0 {
        return "-".to_owned();
    }
    let count = QualityCount {
        correct: k as u64,
        total: n as u64,
    };
    let (lo, hi) = wilson(count, 1.96);
    format!(
        "{:.1}% ({k}/{n}; {:.1}-{:.1}%)",
        100.0 * count.share(),
        100.0 * lo,
        100.0 * hi
    )
}

/// The experiment's folder (one per grid and binary: its stored history, each arm's night and
/// their reports) and the harness script its config runs.
fn experiment(s: &Settings) -> (PathBuf, PathBuf) {
    let bench = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
        .join("bench-nightly-binary");
    // One folder per grid and binary: its stored history, each arm's night and their reports.
    let label = std::env::var("UTILGATE_BENCH_BIN")
        .ok()
        .and_then(|b| {
            let b = PathBuf::from(b);
            // target/release/utilgate: named by its target folder.
            let target = b.parent()?.parent()?;
            Some(format!("-{}", target.file_name()?.to_string_lossy()))
        })
        .unwrap_or_default();
    let scaled = |x: f64, unit: &str| {
        if (x - 1.0).abs() > f64::EPSILON {
            format!("-{x}{unit}")
        } else {
            String::new()
        }
    };
    let spend = scaled(s.spend, "s") + &scaled(s.start, "st");
    let root = bench.join(format!(
        "{}c-{}n-{}h{spend}{label}",
        s.cases, s.noise, s.history
    ));
    std::fs::create_dir_all(&root).expect("bench dir");
    // The harness is a copy of this executable in the experiment's own folder, so a rebuild of
    // the bench changes neither the command its stored history was measured with nor another
    // experiment's harness; put in place by a rename, so a night still running keeps its own.
    let harness = root.join("sim-harness");
    let exe = std::env::current_exe().expect("exe");
    let fresh = root.join(format!("sim-harness.{}", std::process::id()));
    std::fs::copy(&exe, &fresh).expect("harness copy");
    std::fs::rename(&fresh, &harness).expect("harness in place");
    let script = root.join("sim-harness.sh");
    let text = format!("#!/bin/sh\nexec '{}' harness\n", harness.display());
    if std::fs::read_to_string(&script).ok().as_deref() != Some(text.as_str()) {
        std::fs::write(&fresh, text).expect("harness script");
        let mut perms = std::fs::metadata(&fresh).expect("script").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&fresh, perms).expect("chmod");
        std::fs::rename(&fresh, &script).expect("script in place");
    }
    (root, script)
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("harness") {
        harness();
        return;
    }
    let s = settings();
    let (root, script) = experiment(&s);
    let seed = seed(&s, &root, &script);

    let mut totals: Vec<(Arm, Vec<Outcome>)> = s.arms.iter().map(|&a| (a, Vec::new())).collect();
    let mut rng = SmallRng::seed_from_u64(29);
    for night in 0..s.nights {
        let slowed: BTreeSet<u64> = sample(&mut rng, s.cases, s.drops)
            .into_iter()
            .map(|i| i as u64 + 1)
            .collect();
        let outcomes: Vec<Outcome> = std::thread::scope(|scope| {
            let handles: Vec<_> = s
                .arms
                .iter()
                .map(|&arm| {
                    let (s, seed, root, slowed) = (&s, &seed, &root, &slowed);
                    scope.spawn(move || run_arm(arm, s, seed, root, night, slowed))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("arm"))
                .collect()
        });
        let mut line = format!("night {:>3}", night + 1);
        for ((arm, all), o) in totals.iter_mut().zip(outcomes) {
            let _ = write!(
                line,
                " | {}: {}/{} caught, {} inconclusive, {} false, {} processes, {:.1} s",
                arm.name(),
                o.caught,
                o.slowed,
                o.inconclusive,
                o.false_alarms,
                o.processes,
                o.wall_s
            );
            all.push(o);
        }
        eprintln!("{line}");
    }

    println!(
        "\n{} nights, {} cases, {} slowed 5% a night, {:.1}% process noise, {} stored nights\n",
        s.nights,
        s.cases,
        s.drops,
        100.0 * s.noise,
        s.history
    );
    println!(
        "| sampling | 5% drops caught | inconclusive | false alarms (cases) | processes a night | wall a night (mean, max) |"
    );
    println!("|---|---|---|---|---|---|");
    for (arm, all) in &totals {
        let sum = |f: fn(&Outcome) -> usize| all.iter().map(f).sum::<usize>();
        let n = all.len().max(1) as f64;
        let walls: Vec<f64> = all.iter().map(|o| o.wall_s).collect();
        let name = match arm {
            Arm::Fixed => "fixed: 3 repeats, 12 to confirm".to_owned(),
            Arm::Planned(b) => format!("planned: --budget {b}s"),
        };
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.1} s, {:.1} s |",
            name,
            share(sum(|o| o.caught), sum(|o| o.slowed)),
            sum(|o| o.inconclusive),
            sum(|o| o.false_alarms),
            all.iter().map(|o| o.processes as f64).sum::<f64>() / n,
            walls.iter().sum::<f64>() / n,
            walls.iter().copied().fold(0.0, f64::max),
        );
    }
}
