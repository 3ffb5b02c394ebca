//! Store benchmark: fills a temporary store the way nightly CI would (one transaction per run,
//! 500 cases per run, 3 repeats x 100 samples each, baseline promotions on main), then times the
//! read paths the commands use. Writes a temporary `SQLite` file; prints a table on stdout.
#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark reads its settings from the environment"
)]
//!
//! `cargo bench --bench store` stores 1,000,000 results (2,000 runs). Scale it down with
//! `UTILGATE_BENCH_RESULTS=20000 cargo bench --bench store` or `cargo bench --bench store -- 20000`;
//! `UTILGATE_BENCH_DB=PATH` keeps the filled store there instead of in a temporary directory;
//! `UTILGATE_BENCH_NEXT_NIGHT=PATH` keeps the copy with one more night that the site times.
//! The site's figures (docs/site.md: 500 cases x 365 nights on main) come from
//! `UTILGATE_BENCH_RESULTS=228000`: 456 runs, 91 of them pull requests'.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark prints its table and progress"
)]
#![expect(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "benchmark arithmetic on small counts and synthetic values"
)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use serde_json::json;
use utilgate::case::{CaseKey, Phase, Verdict};
use utilgate::compare::Decision;
use utilgate::store::{NewResult, NewRun, RunFilter, Store};

const CASES_PER_RUN: usize = 500;
const REPEATS: usize = 3;
const SAMPLES: usize = 100;
const WARMUP: usize = 10;
const DEFAULT_RESULTS: usize = 1_000_000;
const GPU: &str = "h100-sxm";

fn requested_results() -> usize {
    let from_args = std::env::args()
        .skip(1)
        .find_map(|a| a.replace('_', "").parse::<usize>().ok());
    let from_env = std::env::var("UTILGATE_BENCH_RESULTS")
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok());
    from_args.or(from_env).unwrap_or(DEFAULT_RESULTS)
}

/// 2 phases x 5 models x 2 precisions x 5 batches x 5 contexts = 500 case keys.
fn case_keys() -> Vec<CaseKey> {
    let mut keys = Vec::with_capacity(CASES_PER_RUN);
    for phase in [Phase::Decode, Phase::Prefill] {
        for model in [
            "llama-3.1-8b",
            "llama-3.1-70b",
            "qwen2.5-32b",
            "mixtral-8x7b",
            "seed-8b",
        ] {
            for precision in ["bf16", "fp8"] {
                for batch in [1, 8, 32, 64, 128] {
                    for context in [512, 2048, 4096, 8192, 32768] {
                        keys.push(CaseKey {
                            suite: phase.as_str().to_owned(),
                            model: model.to_owned(),
                            precision: precision.to_owned(),
                            phase,
                            batch,
                            context,
                            axes: utilgate::case::Axes::default(),
                            tp: 1,
                            ep: 1,
                        });
                    }
                }
            }
        }
    }
    keys
}

/// A steady-state step time that grows with batch and context, like a real grid.
fn base_ms(key: &CaseKey) -> f64 {
    let model = match key.model.as_str() {
        "llama-3.1-70b" => 9.0,
        "qwen2.5-32b" | "mixtral-8x7b" => 4.5,
        _ => 1.0,
    };
    let precision = if key.precision == "fp8" { 0.55 } else { 1.0 };
    let context = 1.0 + (key.batch * key.context) as f64 / 2.0e6;
    let phase = if key.phase == Phase::Prefill {
        key.context as f64 / 400.0
    } else {
        1.0
    };
    6.0 * model * precision * context * phase
}

fn new_result(key: &CaseKey, rng: &mut StdRng, promote: bool) -> NewResult {
    let base = base_ms(key) * (1.0 + rng.random_range(-0.01..0.01));
    let noise = Normal::new(0.0, base * 0.003).expect("positive sigma");
    // Device times arrive as f32 (CUDA events) widened to f64.
    let mut draw = |n: usize, scale: f64| -> Vec<f64> {
        (0..n)
            .map(|_| f64::from(((base + noise.sample(rng)) * scale) as f32))
            .collect()
    };
    let repeats_ms: Vec<Vec<f64>> = (0..REPEATS).map(|_| draw(SAMPLES, 1.0)).collect();
    let warmup_ms: Vec<Vec<f64>> = (0..REPEATS).map(|_| draw(WARMUP, 1.6)).collect();
    let mut all: Vec<f64> = repeats_ms.iter().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let median = all[all.len() / 2];
    let floor = base * 0.8;
    let verdict = match rng.random_range(0..100) {
        0 => Verdict::Regressed,
        1..=2 => Verdict::Inconclusive,
        3 => Verdict::Improved,
        _ => Verdict::Pass,
    };
    NewResult {
        key: key.clone(),
        verdict: Some(verdict),
        error: None,
        floor_ms: Some(floor),
        floor_json: Some(json!({
            "bytes": 16.06e9, "flops": 1.606e10 * key.batch as f64, "binding": "memory",
            "peak_bytes_per_s": 3.35e12, "peak_flop_per_s": 9.894e14
        })),
        median_ms: Some(median),
        utilisation: Some(floor / median),
        mbu: Some(floor / median),
        mfu: Some(0.02),
        summary_json: Some(json!({
            "median_ms": median, "p95_ms": all[all.len() * 95 / 100], "min_ms": all[0],
            "spread_pct": 0.6, "n": all.len(), "repeat_medians_ms": [median, median, median]
        })),
        decision_json: Some(decision(verdict, floor, median, all.len())),
        repeats_ms,
        warmup_ms,
        env: BTreeMap::from([
            ("torch".to_owned(), "2.5.1+cu124".to_owned()),
            ("flash_attn".to_owned(), "2.6.3".to_owned()),
            ("cuda".to_owned(), "12.4".to_owned()),
            ("driver".to_owned(), "580.65.06".to_owned()),
        ]),
        gpu_state_json: Some(json!({
            "sm_clock_mhz": 1980, "mem_clock_mhz": 2619, "power_w": 612.5,
            "power_limit_w": 700.0, "temp_c": 61, "clock_event_reasons": []
        })),
        stderr_tail: None,
        promote,
        budget: None,
        costs: Vec::new(),
        quality: std::collections::BTreeMap::new(),
        speculative: None,
        energy: Vec::new(),
    }
}

/// A stored decision in the shape `run` stores (`compare::Decision`), so that `runs show` and
/// `report` render the bench's results as judged, never as `error`.
fn decision(verdict: Verdict, floor: f64, median: f64, n: usize) -> serde_json::Value {
    let value = json!({
        "verdict": verdict, "util_now": floor / median, "util_then": floor / median * 1.004,
        "step_now_ms": median, "step_then_ms": median * 0.996, "drop_pct": 0.4,
        "interval_pct": [-0.6, 1.4], "p_value": 0.21, "n_now": n, "n_then": n,
        "repeats_now": REPEATS, "repeats_then": REPEATS * 4, "floor_changed": false,
        "noise_pct": 0.5, "resolution_pct": 1.1,
        "reasons": ["Within the noise: 0.4% slower, the threshold is 3.0%."]
    });
    // The bench is only worth its figures if the report reads what it stored.
    serde_json::from_value::<Decision>(value.clone()).expect("a decision `runs show` reads");
    value
}

fn new_run(i: usize, keys: &[CaseKey], rng: &mut StdRng) -> NewRun {
    // Four in five runs are nightly runs on main, which promote; the rest are pull requests.
    let on_main = i % 5 != 4;
    let start = Timestamp::from_second(1_700_000_000 + i64::try_from(i).expect("small") * 3_600)
        .expect("in range");
    NewRun {
        started_at: start,
        finished_at: start + jiff::SignedDuration::from_mins(50),
        git_sha: Some(format!("{:040x}", rng.random::<u128>())),
        branch: Some(if on_main {
            "main".into()
        } else {
            format!("pr-{i}")
        }),
        trigger: Some(if on_main { "schedule" } else { "pull_request" }.into()),
        pr_number: (!on_main).then_some(i as u64),
        gpu_sku: GPU.into(),
        gpu_json: Some(
            json!({"name": "NVIDIA H100 80GB HBM3", "driver": "580.65.06",
                              "uuid": "GPU-5a3c", "vbios": "96.00.99.00.01"}),
        ),
        host: Some("ci-gpu-3".into()),
        utilgate_version: "0.1.0".into(),
        config_json: Some(json!({"gate": {"max_drop_pct": 3.0}, "suites": ["decode", "prefill"]})),
        promote_reason: "passed the gate on main".into(),
        canary_json: None,
        uid: None,
        budget_night: None,
        group: None,
        results: keys.iter().map(|k| new_result(k, rng, on_main)).collect(),
    }
}

struct Timing {
    median: Duration,
    p95: Duration,
    n: usize,
}

fn time<T>(n: usize, mut f: impl FnMut(usize) -> T) -> Timing {
    let mut times: Vec<Duration> = (0..n)
        .map(|i| {
            let t = Instant::now();
            std::hint::black_box(f(i));
            t.elapsed()
        })
        .collect();
    times.sort();
    Timing {
        median: times[n / 2],
        p95: times[(n * 95 / 100).min(n - 1)],
        n,
    }
}

/// Like [`time`], for a closure that does more than what is timed: the durations it returns.
fn timed(n: usize, mut f: impl FnMut(usize) -> Duration) -> Timing {
    let mut times: Vec<Duration> = (0..n).map(&mut f).collect();
    times.sort();
    Timing {
        median: times[n / 2],
        p95: times[(n * 95 / 100).min(n - 1)],
        n,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// Bump when the stored shape changes, so a kept store from an older bench is rebuilt.
const SHAPE: u32 = 2;

/// Where the filled store is kept between bench runs: `UTILGATE_BENCH_DB`, else under
/// `target/bench-store/`, one file per size and shape (filling 1M results takes minutes).
fn store_path(stored: usize) -> std::path::PathBuf {
    std::env::var_os("UTILGATE_BENCH_DB").map_or_else(
        || {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/bench-store")
                .join(format!("store-{stored}-v{SHAPE}.db"))
        },
        std::path::PathBuf::from,
    )
}

/// Fills a new store at `path` (through a temporary name, so a killed fill is never reused).
fn fill(
    path: &std::path::Path,
    runs: usize,
    keys: &[CaseKey],
    rng: &mut StdRng,
) -> Vec<(String, String)> {
    let partial = path.with_extension("partial");
    for stale in [
        partial.clone(),
        partial.with_extension("partial-wal"),
        partial.with_extension("partial-shm"),
    ] {
        let _ = std::fs::remove_file(stale);
    }
    std::fs::create_dir_all(path.parent().expect("a file path")).expect("bench store dir");
    let mut store = Store::open(&partial, Duration::from_secs(30)).expect("open store");
    let mut building = Duration::ZERO;
    let fill = Instant::now();
    for i in 0..runs {
        let t = Instant::now();
        let run = new_run(i, keys, rng);
        building += t.elapsed();
        store.insert_run(&run).expect("insert run");
        if (i + 1) % 200 == 0 {
            eprintln!("  {} runs in {:.1} s", i + 1, fill.elapsed().as_secs_f64());
        }
    }
    let fill_time = fill.elapsed();
    let insert_time = fill_time.saturating_sub(building);
    drop(store); // checkpoints the WAL into the main file
    std::fs::rename(&partial, path).expect("keep the filled store");
    let stored = runs * CASES_PER_RUN;
    vec![(
        "fill (one transaction per run)".to_owned(),
        format!(
            "{:.1} s total, {:.1} s in the store, {:.1} ms/run, {:.0} results/s",
            fill_time.as_secs_f64(),
            insert_time.as_secs_f64(),
            insert_time.as_secs_f64() * 1e3 / runs as f64,
            stored as f64 / insert_time.as_secs_f64()
        ),
    )]
}

fn main() {
    let results = requested_results();
    let runs = results.div_ceil(CASES_PER_RUN).max(1);
    let stored = runs * CASES_PER_RUN;
    let path = store_path(stored);
    let keys = case_keys();
    let mut rng = StdRng::seed_from_u64(7);
    println!(
        "store benchmark: {runs} runs x {CASES_PER_RUN} cases = {stored} results, \
         {REPEATS} repeats x {SAMPLES} samples (+{WARMUP} warm-up) each"
    );
    let mut rows = if path.exists() {
        println!("reusing the filled store {}", path.display());
        Vec::new()
    } else {
        fill(&path, runs, &keys, &mut rng)
    };
    // Each figure is printed as soon as it is measured, so a failure later keeps the earlier.
    let width = 48;
    let print = |rows: &[(String, String)]| {
        for (name, value) in rows {
            println!("{name:<width$}  {value}");
        }
    };
    let bytes = std::fs::metadata(&path).expect("db size").len();
    rows.push((
        "database file".to_owned(),
        format!(
            "{:.1} MiB, {:.0} bytes per stored result",
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / stored as f64
        ),
    ));
    print(&rows);
    print(&library_reads(&path, runs, &keys));
    command_reads(&path, runs, &keys, &print);
}

/// The store's read calls on their own.
fn library_reads(path: &std::path::Path, runs: usize, keys: &[CaseKey]) -> Vec<(String, String)> {
    let mut rng = StdRng::seed_from_u64(11);
    let store = Store::open(path, Duration::from_secs(30)).expect("reopen store");
    let filter = RunFilter {
        limit: 50,
        branch: None,
        gpu_sku: None,
    };
    assert!(store.list_runs(&filter).expect("list").len() >= runs.min(50));
    let list = time(50, |_| store.list_runs(&filter).expect("list runs"));
    let main_only = RunFilter {
        branch: Some("main".into()),
        ..filter.clone()
    };
    let list_main = time(50, |_| store.list_runs(&main_only).expect("list runs"));
    let picks: Vec<&CaseKey> = (0..200)
        .map(|_| &keys[rng.random_range(0..keys.len())])
        .collect();
    let baseline = time(picks.len(), |i| {
        store
            .baseline_for(picks[i], GPU)
            .expect("baseline")
            .expect("every case has one")
    });
    let history = time(picks.len(), |i| {
        let h = store.case_history(picks[i], GPU, 30).expect("history");
        assert_eq!(h.len(), runs.min(30));
        h
    });
    let all_baselines = time(10, |_| store.baselines(Some(GPU)).expect("baselines"));
    vec![
        row("list_runs(limit 50)", &list),
        row("list_runs(limit 50, branch main)", &list_main),
        row("baseline_for(random key)", &baseline),
        row("case_history(random key, limit 30)", &history),
        row("baselines(all 500)", &all_baselines),
    ]
}

/// Wall time of one `utilgate` command on the store, asserting it succeeded (a `run` may also
/// fail its gate: its harness is no match for the stored baselines); returns its stdout.
fn utilgate(path: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> (Duration, String) {
    let t = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_utilgate"))
        .args(args)
        .current_dir(dir)
        .env("UTILGATE_DB", path)
        .env("NO_COLOR", "1")
        .output()
        .expect("start utilgate");
    let wall = t.elapsed();
    let gate_failed = args.first() == Some(&"run") && out.status.code() == Some(1);
    assert!(
        out.status.success() || gate_failed,
        "utilgate {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (wall, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The commands a nightly and a pull request's check make, through the binary.
fn command_reads(path: &std::path::Path, runs: usize, keys: &[CaseKey], print: &dyn Fn(&[Row])) {
    let dir = tempfile::tempdir().expect("temp dir");
    let repeat = |n: usize, args: &[&str], check: &dyn Fn(&str)| {
        let _ = utilgate(path, dir.path(), args); // the page cache, as a second call finds it
        time(n, |_| {
            let (wall, out) = utilgate(path, dir.path(), args);
            check(&out);
            wall
        })
    };
    // The last filled run (a nightly on main): a `run` below adds runs after it.
    // Run `i` (id `i + 1`) is a nightly on main unless `i % 5 == 4`.
    let last = if runs.is_multiple_of(5) {
        runs - 1
    } else {
        runs
    }
    .to_string();
    let judged = |out: &str| {
        assert!(
            !out.contains("error"),
            "a bench result rendered as error:\n{out}"
        );
    };
    let show = repeat(5, &["runs", "show", &last], &judged);
    print(&[row(&format!("`runs show {last}`"), &show)]);
    let report = repeat(5, &["report", &last, "--format", "markdown"], &judged);
    print(&[row(&format!("`report {last} --format markdown`"), &report)]);
    let case = keys[137].to_string();
    let history = repeat(5, &["history", &case, "--nights", "120"], &|out| {
        assert!(out.contains("120 nights on main"), "{out}");
    });
    print(&[row("`history CASE --nights 120`", &history)]);
    let changes = repeat(3, &["changes"], &|_| {});
    print(&[row("`changes` (500 cases, 120 nights each)", &changes)]);
    print(&site_build(path, dir.path(), runs, keys));
    let first_case = first_case_start(path, dir.path());
    print(&[row(
        "`run` of 10 cases: start to its first harness",
        &first_case,
    )]);
}

/// `utilgate site` on the filled store: built whole into an empty directory, again with
/// nothing changed, and again after one new night of every case on main (on a copy of the
/// store, so the kept store stays as filled); the size of its pages, the largest of all.
fn site_build(
    path: &std::path::Path,
    dir: &std::path::Path,
    runs: usize,
    keys: &[CaseKey],
) -> Vec<Row> {
    let out = dir.join("site");
    let args = ["site", "--out", out.to_str().expect("a UTF-8 temp path")];
    let nights = main_nights(runs);
    // Each try removes the last one's site first; only the build is timed.
    let whole = timed(3, |_| {
        let _ = std::fs::remove_dir_all(&out);
        let _ = std::process::Command::new("sync").status();
        utilgate(path, dir, &args).0
    });
    let again = time(3, |_| {
        let (wall, text) = utilgate(path, dir, &args);
        assert!(text.contains("(0 rewritten)"), "{text}");
        wall
    });
    let sizes = |sub: &str| -> (u64, u64, usize) {
        let mut total = 0;
        let mut largest = 0;
        let mut n = 0;
        for entry in std::fs::read_dir(out.join(sub)).expect("site dir") {
            let entry = entry.expect("entry");
            if entry.path().extension().is_none_or(|e| e != "html") {
                continue;
            }
            let len = entry.metadata().expect("metadata").len();
            total += len;
            largest = largest.max(len);
            n += 1;
        }
        (total, largest, n)
    };
    let (case_total, case_max, cases) = sizes("cases");
    let (run_total, run_max, run_pages) = sizes("runs");
    let (_, top_max, _) = sizes("");
    let kib = |b: u64| format!("{:.0} kB", b as f64 / 1000.0);
    let mut rows = vec![
        row(
            &format!(
                "`site` whole ({cases} cases x {nights} nights on main, {run_pages} run pages)"
            ),
            &whole,
        ),
        row("`site` again, nothing changed", &again),
        (
            "site pages".to_owned(),
            format!(
                "case pages {} in all, largest {}; run pages {} in all, largest {}; \
                 index and changes, largest {}; largest page {}",
                kib(case_total),
                kib(case_max),
                kib(run_total),
                kib(run_max),
                kib(top_max),
                kib(case_max.max(run_max).max(top_max))
            ),
        ),
    ];
    // One new night of every case on main, stored in a copy of the store; each try adds the
    // next night to its own copy of the site as the whole build left it.
    let mut rng = StdRng::seed_from_u64(13);
    // Run `i` is a nightly on main unless `i % 5 == 4`: the next one is `runs` or `runs + 1`.
    let next = if runs % 5 == 4 { runs + 1 } else { runs };
    // `UTILGATE_BENCH_NEXT_NIGHT=PATH` keeps the store with the new night there (to profile
    // the incremental build).
    let kept = std::env::var_os("UTILGATE_BENCH_NEXT_NIGHT").map(std::path::PathBuf::from);
    let copy = kept.clone().unwrap_or_else(|| dir.join("next-night.db"));
    let built = dir.join("site-built");
    let _ = std::fs::remove_dir_all(&built);
    copy_dir(&out, &built);
    std::fs::copy(path, &copy).expect("copy the store");
    Store::open(&copy, Duration::from_secs(30))
        .expect("open the copy")
        .insert_run(&new_run(next, keys, &mut rng))
        .expect("insert the new night");
    // Each try starts from a copy of the whole build's site; only the build is timed.
    let incremental = timed(3, |_| {
        let _ = std::fs::remove_dir_all(&out);
        copy_dir(&built, &out);
        // The copy's 86 MB are written back now, not during the timed build (a nightly's site
        // directory was written the night before).
        let _ = std::process::Command::new("sync").status();
        let (wall, text) = utilgate(&copy, dir, &args);
        assert!(!text.contains("built whole"), "{text}");
        wall
    });
    if kept.is_none() {
        let _ = std::fs::remove_file(&copy);
    }
    rows.push(row(
        "`site` after one new night of every case",
        &incremental,
    ));
    rows
}

/// The runs of the fill that are nightlies on main (run `i` is one unless `i % 5 == 4`).
fn main_nights(runs: usize) -> usize {
    (0..runs).filter(|i| i % 5 != 4).count()
}

/// Copies a site's directory tree (two levels: the pages and `cases/`, `runs/`).
fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("site copy dir");
    for entry in std::fs::read_dir(from).expect("site dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a page");
        }
    }
}

/// How long a 10-case `run` on the filled store takes from its start to its first harness
/// process (which writes the time it started). Stores the runs on a branch of their own.
fn first_case_start(path: &std::path::Path, dir: &std::path::Path) -> Timing {
    let stamp = dir.join("first.ns");
    let harness = format!(
        r#"[ -e {0} ] || date +%s%N > {0}; printf '{{"step_ms": 15.0}}\n{{"step_ms": 15.1}}\n' >> "$UTILGATE_OUT""#,
        stamp.display()
    );
    let config = format!(
        r#"
[gate]
confirm_repeats = 0
[gpu]
name = "{GPU}"
[canary]
enabled = false
[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072
[[suite]]
name = "decode"
command = "{}"
models = ["seed-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8, 32, 64, 128]
contexts = [512, 2048]
warmup_steps = 0
steps = 2
repeats = 1
"#,
        harness.replace('\\', "\\\\").replace('"', "\\\"")
    );
    std::fs::write(dir.join("utilgate.toml"), config).expect("config");
    time(3, |_| {
        let _ = std::fs::remove_file(&stamp);
        let started = std::time::SystemTime::now();
        let _ = utilgate(
            path,
            dir,
            &[
                "run",
                "--branch",
                "bench-run",
                "--git-sha",
                "0123456789abcdef",
            ],
        );
        let first: u128 = std::fs::read_to_string(&stamp)
            .expect("the first harness wrote its start")
            .trim()
            .parse()
            .expect("nanoseconds");
        let since = started
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos();
        Duration::from_nanos(u64::try_from(first.saturating_sub(since)).expect("small"))
    })
}

/// A printed line of the table: what was measured and its figures.
type Row = (String, String);

fn row(name: &str, t: &Timing) -> Row {
    (
        name.to_owned(),
        format!("median {}, p95 {} (n = {})", ms(t.median), ms(t.p95), t.n),
    )
}
