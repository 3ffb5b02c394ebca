//! Statistical-power evaluation of the gate, night after night, through the code `utilgate run`
//! uses (`utilgate::compare`). Writes Markdown tables with 95% Wilson intervals to stdout; no
//! other I/O. Run: `nice cargo run --release --example power_eval` (a few minutes on two cores).
//! Deterministic: every series comes from a fixed seed.
//!
//! # The machine (see `noise.rs`)
//! Step time = true step x host factor x process offset x per-step jitter x outlier factor:
//! per-step lognormal jitter 0.75%; a per-process lognormal offset (2% unless stated); 5% of
//! processes start slow and stay slow (+8%); 0.5% of steps are outliers, 1.5x to 3x. Each result
//! is 3 processes of 100 counted steps. The machine canary (two fixed workloads read ten times a
//! run, 1% noise each) sees the same host factor as the cases.
//!
//! # The nights
//! A project is a grid of 100 cases on the baseline branch over 26 nights: night 0 records the
//! first baselines, each later night judges every case against the reference the rule picks,
//! re-measures suspects in 9 fresh processes, and promotes the passing results when no case
//! failed, exactly as `utilgate run` does. A *false-alarm night* is a judged night on which any
//! of the 100 unchanged cases is `regressed`. *Detection* is the share of trials in which one
//! case, after 10 unchanged nights of its own, is `regressed` on the night its code changed
//! (judged as one case of a 100-case grid).

mod ab;
mod diag;
mod gate;
mod noise;

use std::io::Write;

use utilgate::case::Verdict;

use crate::gate::{CaseState, HISTORY, Rule};
use crate::noise::{Change, Noise, night_host, rng, seed};

const CASES: usize = 100;
const FULL_PROJECTS: usize = 16;
const NIGHTS: usize = 26;
const FULL_TRIALS: usize = 300;
/// `--quick` divides the projects and trials by this (for tuning; the figures the docs quote
/// are from full runs).
static DIVISOR: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);

/// `--detect`: the detection trials only, no false-alarm projects (tuning only).
static DETECT_ONLY: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--judge-all`: judge a confirmed case on every process (tuning only; `run` judges the fresh ones).
static JUDGE_ALL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[must_use]
pub fn judge_all() -> bool {
    JUDGE_ALL.load(std::sync::atomic::Ordering::Relaxed)
}

fn divisor() -> usize {
    DIVISOR.load(std::sync::atomic::Ordering::Relaxed)
}

/// Projects per scenario.
#[must_use]
pub fn projects() -> usize {
    FULL_PROJECTS / divisor()
}

/// Detection trials per cell.
#[must_use]
pub fn trials() -> usize {
    FULL_TRIALS / divisor()
}
/// The night of a project on which the host shifts (scenario "host shift").
const SHIFT_NIGHT: usize = NIGHTS / 2;

struct Scenario {
    name: &'static str,
    noise: Noise,
    /// The first baseline's step factor (0.97: it happened to be 3% fast).
    first_factor: f64,
    /// A host factor on the shift night (every case and the canary).
    shift: Option<f64>,
    /// What the detection trials inject, and the host factor of the night they inject it.
    detect: Vec<(&'static str, Change, f64)>,
}

fn drops() -> Vec<(&'static str, Change, f64)> {
    vec![
        ("3% drop", Change::drop(0.03), 1.0),
        ("5% drop", Change::drop(0.05), 1.0),
        ("10% drop", Change::drop(0.10), 1.0),
    ]
}

fn scenarios() -> Vec<Scenario> {
    let base = Noise::with_process_sd(0.02);
    vec![
        Scenario {
            name: "current model (per-process sd 2%)",
            noise: base,
            first_factor: 1.0,
            shift: None,
            detect: drops(),
        },
        Scenario {
            name: "noisier host (per-process sd 4%)",
            noise: Noise::with_process_sd(0.04),
            first_factor: 1.0,
            shift: None,
            detect: drops(),
        },
        Scenario {
            name: "common-mode host shift: +10% on every case for one night (sd 2%)",
            noise: base,
            first_factor: 1.0,
            shift: Some(1.10),
            detect: vec![
                ("5% drop, quiet night", Change::drop(0.05), 1.0),
                ("25% drop on a +10% night", Change::drop(0.25), 1.10),
            ],
        },
        Scenario {
            name: "lucky first baseline: 3% fast (sd 2%)",
            noise: base,
            first_factor: 0.97,
            shift: None,
            detect: vec![("5% drop", Change::drop(0.05), 1.0)],
        },
        Scenario {
            name: "tail stall: 1 step in 20 takes 4x (sd 2%)",
            noise: base,
            first_factor: 1.0,
            shift: None,
            detect: vec![("1-in-20 4x stall", Change::stall(0.05, 4.0), 1.0)],
        },
    ]
}

/// Counts of one rule on one scenario.
#[derive(Default, Clone)]
struct Tally {
    judged_nights: usize,
    false_alarm_nights: usize,
    case_nights: usize,
    inconclusive: usize,
    confirms: usize,
    shift_nights: usize,
    shift_nights_regressed: usize,
    detected: Vec<usize>,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.judged_nights += o.judged_nights;
        self.false_alarm_nights += o.false_alarm_nights;
        self.case_nights += o.case_nights;
        self.inconclusive += o.inconclusive;
        self.confirms += o.confirms;
        self.shift_nights += o.shift_nights;
        self.shift_nights_regressed += o.shift_nights_regressed;
        if self.detected.len() < o.detected.len() {
            self.detected.resize(o.detected.len(), 0);
        }
        for (a, b) in self.detected.iter_mut().zip(&o.detected) {
            *a += b;
        }
    }
}

/// One project of `CASES` cases over `NIGHTS` nights, as `utilgate run` runs them: each
/// night's outcomes go to `seen` (with the night and whether the host shifted), then the
/// passing results are promoted when no case failed.
fn run_project(
    sc_id: u64,
    sc: &Scenario,
    rule: &Rule,
    p: usize,
    mut seen: impl FnMut(usize, bool, &[gate::Outcome]) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let mut states: Vec<CaseState> = (0..CASES).map(|_| CaseState::default()).collect();
    for night in 0..NIGHTS {
        let mut host_rng = rng(seed(sc_id, 2, (p << 8 | night) as u64));
        let shifted = sc.shift.filter(|_| night == SHIFT_NIGHT);
        let host = night_host(&mut host_rng, &sc.noise, shifted.unwrap_or(1.0));
        let canary = gate::canary(&mut host_rng, host);
        let change = if night == 0 {
            Change {
                factor: sc.first_factor,
                ..Change::NONE
            }
        } else {
            Change::NONE
        };
        let outcomes: Vec<gate::Outcome> = states
            .iter()
            .enumerate()
            .map(|(c, state)| {
                let mut r = rng(seed(sc_id, 1, (p << 16 | night << 8 | c) as u64));
                gate::night(
                    rule, state, &mut r, &sc.noise, host, &canary, &change, CASES,
                )
            })
            .collect();
        seen(night, shifted.is_some(), &outcomes)?;
        let failed = outcomes
            .iter()
            .any(|o| o.stored.verdict == Verdict::Regressed);
        for (state, mut o) in states.iter_mut().zip(outcomes) {
            o.stored.promoted = !failed && o.stored.promotable;
            state.nights.push(o.stored);
        }
    }
    Ok(())
}

/// The tally of one project.
fn project(sc_id: u64, sc: &Scenario, rule: &Rule, p: usize, t: &mut Tally) {
    let counted = run_project(sc_id, sc, rule, p, |night, shifted, outcomes| {
        if night == 0 {
            return Ok(());
        }
        let failed = outcomes
            .iter()
            .any(|o| o.stored.verdict == Verdict::Regressed);
        if shifted {
            t.shift_nights += 1;
            t.shift_nights_regressed += usize::from(failed);
        } else {
            t.judged_nights += 1;
            t.false_alarm_nights += usize::from(failed);
        }
        t.case_nights += outcomes.len();
        t.inconclusive += outcomes
            .iter()
            .filter(|o| o.stored.verdict == Verdict::Inconclusive)
            .count();
        t.confirms += outcomes.iter().filter(|o| o.confirmed).count();
        Ok(())
    });
    counted.expect("counting writes nothing");
}

/// One detection trial: `HISTORY` unchanged nights of one case, then the change.
fn trial(sc_id: u64, sc: &Scenario, rule: &Rule, d: usize, i: usize) -> bool {
    let (_, change, host_factor) = &sc.detect[d];
    let mut state = CaseState::default();
    for night in 0..=HISTORY + 1 {
        let mut r = rng(seed(sc_id, 3 + d as u64, (i << 8 | night) as u64));
        let last = night == HISTORY + 1;
        let host = night_host(&mut r, &sc.noise, if last { *host_factor } else { 1.0 });
        let canary = gate::canary(&mut r, host);
        let change = if last {
            *change
        } else if night == 0 {
            Change {
                factor: sc.first_factor,
                ..Change::NONE
            }
        } else {
            Change::NONE
        };
        let mut o = gate::night(
            rule, &state, &mut r, &sc.noise, host, &canary, &change, CASES,
        );
        if last {
            return o.stored.verdict == Verdict::Regressed;
        }
        o.stored.promoted = o.stored.promotable && o.stored.verdict != Verdict::Regressed;
        state.nights.push(o.stored);
    }
    false
}

fn evaluate(sc_id: u64, sc: &Scenario, rule: &Rule) -> Tally {
    let threads = 2;
    let parts: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|th| {
                s.spawn(move || {
                    let mut t = Tally {
                        detected: vec![0; sc.detect.len()],
                        ..Tally::default()
                    };
                    let projects = if DETECT_ONLY.load(std::sync::atomic::Ordering::Relaxed) {
                        0
                    } else {
                        projects()
                    };
                    for p in (th..projects).step_by(threads) {
                        project(sc_id, sc, rule, p, &mut t);
                    }
                    for d in 0..sc.detect.len() {
                        for i in (th..trials()).step_by(threads) {
                            t.detected[d] += usize::from(trial(sc_id, sc, rule, d, i));
                        }
                    }
                    t
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a simulation thread panicked"))
            .collect()
    });
    let mut total = Tally::default();
    for p in &parts {
        total.add(p);
    }
    total
}

/// `k` of `n` as a percentage with its 95% Wilson score interval.
#[must_use]
pub fn wilson(k: usize, n: usize) -> String {
    if n == 0 {
        return "n/a".to_owned();
    }
    let (k, n) = (k as f64, n as f64);
    let z = 1.959_964f64;
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    format!(
        "{:.1}% [{:.1}, {:.1}]",
        100.0 * p,
        100.0 * (centre - half).max(0.0),
        100.0 * (centre + half).min(1.0)
    )
}

/// The tuning flags (`--quick`, `--policy JSON`, `--judge-all`, `--detect`, `--default`,
/// `--ab-plan JSON`): sets the switches and returns the rules to evaluate.
fn tuning(args: &[String]) -> Vec<Rule> {
    if args.iter().any(|a| a == "--quick") {
        DIVISOR.store(4, std::sync::atomic::Ordering::Relaxed);
    }
    let json_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    // `--policy JSON`: the default rule with these policy fields changed.
    let tuned: Option<utilgate::compare::Policy> = json_of("--policy")
        .map(|json| serde_json::from_str(json).expect("--policy takes a Policy as JSON"));
    if let Some(json) = json_of("--ab-plan") {
        let plan = serde_json::from_str(json).expect("--ab-plan takes an [ab] plan as JSON");
        ab::PLAN.set(plan).expect("set once");
    }
    if args.iter().any(|a| a == "--judge-all") {
        JUDGE_ALL.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    if args.iter().any(|a| a == "--detect") {
        DETECT_ONLY.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let mut rules = gate::rules();
    if let Some(policy) = tuned {
        rules.push(gate::Rule::Converging {
            label: "tuned: converging reference + canary",
            policy,
            canary: true,
        });
    }
    // `--default`: the default rule alone.
    if args.iter().any(|a| a == "--default") {
        rules.drain(..rules.len() - 1);
    }
    rules
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rules = tuning(&args);
    let mut out = std::io::stdout().lock();
    // `--ab`: the A/B table alone.
    if args.iter().any(|a| a == "--ab") {
        return ab::report(&mut out);
    }
    writeln!(
        out,
        "Projects of {CASES} cases x {} repeats x {} steps, {NIGHTS} nights each ({} \
         projects: {} judged nights); detection: {} trials per cell after {HISTORY} \
         unchanged nights. Percentages with 95% Wilson intervals.",
        gate::REPEATS,
        noise::STEPS,
        projects(),
        projects() * (NIGHTS - 1),
        trials()
    )?;
    // `power_eval 0 4`: only those scenarios (by index), and no A/B table.
    let only: Vec<usize> = args
        .iter()
        .filter(|a| !a.starts_with('{'))
        .filter_map(|a| a.parse().ok())
        .collect();
    if args.iter().any(|a| a == "--diag") {
        let rule = rules.last().expect("a rule");
        return diag::report(&mut out, &scenarios(), &only, rule);
    }
    for (i, sc) in scenarios().iter().enumerate() {
        if !only.is_empty() && !only.contains(&i) {
            continue;
        }
        writeln!(out, "\n### {}\n", sc.name)?;
        let detect: Vec<&str> = sc.detect.iter().map(|d| d.0).collect();
        let shift_col = if sc.shift.is_some() {
            " shift nights with a `regressed` |"
        } else {
            ""
        };
        writeln!(
            out,
            "| rule | false-alarm nights |{shift_col} inconclusive case-nights | re-measured per \
             night | {} |",
            detect.join(" | ")
        )?;
        let cols = 4 + usize::from(sc.shift.is_some()) + detect.len();
        writeln!(out, "|---|{}", "---:|".repeat(cols - 1))?;
        for rule in &rules {
            // The canary's share is measured where it matters: on the host-shift nights.
            if sc.shift.is_none() && matches!(rule, Rule::Converging { canary: false, .. }) {
                continue;
            }
            let t = evaluate(i as u64, sc, rule);
            let shift = if sc.shift.is_some() {
                format!(" {} |", wilson(t.shift_nights_regressed, t.shift_nights))
            } else {
                String::new()
            };
            let det: Vec<String> = t.detected.iter().map(|&k| wilson(k, trials())).collect();
            writeln!(
                out,
                "| {} | {} |{shift} {:.1}% | {:.2} | {} |",
                rule.label(),
                wilson(t.false_alarm_nights, t.judged_nights),
                100.0 * t.inconclusive as f64 / t.case_nights.max(1) as f64,
                t.confirms as f64 / (t.judged_nights + t.shift_nights).max(1) as f64,
                det.join(" | ")
            )?;
            out.flush()?;
        }
    }
    if only.is_empty() {
        ab::report(&mut out)?;
    }
    Ok(())
}
