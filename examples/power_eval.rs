//! Statistical-power evaluation of the verdict (`utilgate::compare::decide`), against the simple
//! rules other gates use, on the same synthetic step-time series. Writes a Markdown table to
//! stdout; no other I/O. Run: `cargo run --release --example power_eval` (about two minutes on two
//! cores). Deterministic: every series comes from a fixed seed.
//!
//! # Noise model (one case, one GPU, no code change unless stated)
//! * Step time = true step x process offset x per-step jitter x outlier factor.
//! * Per-step jitter: lognormal, sigma 0.75% (typical run-to-run noise of a CUDA-graph decode).
//! * Per-process offset: lognormal, sigma 2% (or 1%), drawn once per process (repeat), shared by
//!   all its steps: allocation luck, clocks at start, autotuner choices.
//! * Bimodal starts: 5% of processes start slow and stay slow, +8% for the whole process.
//! * Outlier steps: 0.5% of steps take 1.5x to 3x as long (a preemption, a host hiccup).
//! * Each result is 3 repeats of 100 counted steps. The reference of a case is its baseline and
//!   up to 10 earlier good results (for the rules that use history); the nights are independent.
//!
//! A "false-alarm night" is a night on which any of 100 unchanged cases is failed. "Detection" is
//! the share of 1,000 trials in which one case whose utilisation dropped by 3, 5 or 10% (its step
//! time multiplied by 1/(1 - drop)) is failed, judged as one case of a 100-case grid.

use std::io::Write;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;
use utilgate::case::Verdict;
use utilgate::compare::{Estimator, Evidence, Policy, decide, should_confirm};

const CASES: usize = 100;
const NIGHTS: usize = 2_000;
const TRIALS: usize = 1_000;
const REPEATS: usize = 3;
const STEPS: usize = 100;
const HISTORY: usize = 10;
const STEP_MS: f64 = 6.0;
const FLOOR_MS: f64 = 3.6;
const DROPS: [f64; 3] = [0.03, 0.05, 0.10];

#[derive(Clone, Copy)]
struct Noise {
    process_sd: f64,
    jitter_sd: f64,
    bimodal_p: f64,
    bimodal_slowdown: f64,
    outlier_p: f64,
}

impl Noise {
    fn with_process_sd(process_sd: f64) -> Self {
        Noise {
            process_sd,
            jitter_sd: 0.0075,
            bimodal_p: 0.05,
            bimodal_slowdown: 1.08,
            outlier_p: 0.005,
        }
    }

    /// One result: `REPEATS` fresh processes of `STEPS` steps at `STEP_MS * factor`.
    fn result(&self, rng: &mut SmallRng, repeats: usize, factor: f64) -> Vec<Vec<f64>> {
        (0..repeats)
            .map(|_| {
                let offset: f64 = rng.sample::<f64, _>(StandardNormal) * self.process_sd;
                let slow = if rng.random_bool(self.bimodal_p) {
                    self.bimodal_slowdown
                } else {
                    1.0
                };
                let process = STEP_MS * factor * offset.exp() * slow;
                (0..STEPS)
                    .map(|_| {
                        let jitter: f64 = rng.sample::<f64, _>(StandardNormal) * self.jitter_sd;
                        let outlier = if rng.random_bool(self.outlier_p) {
                            rng.random_range(1.5..3.0)
                        } else {
                            1.0
                        };
                        process * jitter.exp() * outlier
                    })
                    .collect()
            })
            .collect()
    }
}

/// The simulated results of one case on one night.
struct CaseSeries {
    baseline: Vec<Vec<f64>>,
    /// Older good results, most recent first.
    history: Vec<Vec<Vec<f64>>>,
    current: Vec<Vec<f64>>,
    /// Seed for the fresh processes a confirmation would add (drawn only when asked for).
    confirm_seed: u64,
    factor: f64,
}

impl CaseSeries {
    fn new(noise: &Noise, seed: u64, factor: f64) -> Self {
        let mut rng = SmallRng::seed_from_u64(seed);
        let baseline = noise.result(&mut rng, REPEATS, 1.0);
        let history = (0..HISTORY)
            .map(|_| noise.result(&mut rng, REPEATS, 1.0))
            .collect();
        let current = noise.result(&mut rng, REPEATS, factor);
        CaseSeries {
            baseline,
            history,
            current,
            confirm_seed: rng.random(),
            factor,
        }
    }
}

/// A way of deciding whether a case failed.
enum Rule {
    /// `decide` with this policy and the `history` most recent good results, confirming
    /// suspects when the policy's `confirm_repeats` is above zero.
    Gate {
        label: &'static str,
        policy: Policy,
        history: usize,
    },
    /// Fail when the mean step (all steps of all repeats) is more than 3% slower than the
    /// baseline's mean, i.e. the utilisation drop on the means exceeds 3%.
    FixedThreshold,
    /// Fail when the mean step is more than `z` standard deviations above the mean of the last
    /// nights' means (baseline and history: 11 nights).
    ZScore { z: f64 },
}

impl Rule {
    fn label(&self) -> String {
        match self {
            Rule::Gate { label, .. } => (*label).to_owned(),
            Rule::FixedThreshold => "fixed 3% threshold on the mean step".to_owned(),
            Rule::ZScore { z } => {
                format!(
                    "z-score > {z} on the last {} nights' mean steps",
                    HISTORY + 1
                )
            }
        }
    }

    /// Whether the case fails, and whether it needed a confirmation run.
    fn fails(&self, noise: &Noise, series: &CaseSeries) -> (bool, bool) {
        match self {
            Rule::Gate {
                policy, history, ..
            } => {
                let base = evidence(&series.baseline);
                let history: Vec<Evidence<'_>> = series
                    .history
                    .iter()
                    .take(*history)
                    .map(|h| evidence(h))
                    .collect();
                let cur = evidence(&series.current);
                let first = decide(Some(&base), &cur, &history, policy, CASES, None);
                if policy.confirm_repeats > 0 && should_confirm(&first) {
                    let mut rng = SmallRng::seed_from_u64(series.confirm_seed);
                    let mut all = series.current.clone();
                    all.extend(noise.result(&mut rng, policy.confirm_repeats, series.factor));
                    let cur = evidence(&all);
                    let second = decide(Some(&base), &cur, &history, policy, CASES, None);
                    (second.verdict == Verdict::Regressed, true)
                } else {
                    (first.verdict == Verdict::Regressed, false)
                }
            }
            Rule::FixedThreshold => {
                let drop = 1.0 - mean_step(&series.baseline) / mean_step(&series.current);
                (drop > 0.03, false)
            }
            Rule::ZScore { z } => {
                let nights: Vec<f64> = std::iter::once(&series.baseline)
                    .chain(series.history.iter())
                    .map(|r| mean_step(r))
                    .collect();
                let n = nights.len() as f64;
                let mean = nights.iter().sum::<f64>() / n;
                let sd =
                    (nights.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
                (mean_step(&series.current) > mean + z * sd, false)
            }
        }
    }
}

fn evidence(repeats: &[Vec<f64>]) -> Evidence<'_> {
    Evidence {
        repeats_ms: repeats,
        floor_ms: FLOOR_MS,
    }
}

fn mean_step(result: &[Vec<f64>]) -> f64 {
    let n: usize = result.iter().map(Vec::len).sum();
    result.iter().flatten().sum::<f64>() / n as f64
}

fn rules() -> Vec<Rule> {
    let no_confirm = Policy {
        confirm_repeats: 0,
        ..Policy::default()
    };
    vec![
        Rule::Gate {
            label: "utilgate, 3 vs 3 repeats only",
            policy: no_confirm.clone(),
            history: 0,
        },
        Rule::Gate {
            label: "utilgate + confirm (9 fresh repeats)",
            policy: Policy::default(),
            history: 0,
        },
        Rule::Gate {
            label: "utilgate + history (10 good results)",
            policy: no_confirm,
            history: HISTORY,
        },
        Rule::Gate {
            label: "utilgate + confirm + 5 good results",
            policy: Policy::default(),
            history: 5,
        },
        Rule::Gate {
            label: "**utilgate default: confirm + 10 good results**",
            policy: Policy::default(),
            history: HISTORY,
        },
        Rule::Gate {
            label: "utilgate default with a plain mean (not robust)",
            policy: Policy {
                estimator: Estimator::Mean,
                ..Policy::default()
            },
            history: HISTORY,
        },
        Rule::FixedThreshold,
        Rule::ZScore { z: 2.0 },
        Rule::ZScore { z: 3.0 },
    ]
}

/// A seed for one simulated case, distinct per noise level, purpose, index and case.
fn seed(noise_idx: u64, purpose: u64, index: u64, case: u64) -> u64 {
    // SplitMix64 finaliser over the packed coordinates: decorrelates neighbouring seeds.
    let mut z = noise_idx << 60 ^ purpose << 56 ^ index << 16 ^ case;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Per rule: false-alarm nights, confirmations, detections per drop (one thread's share).
type Tally = (Vec<usize>, Vec<usize>, Vec<[usize; DROPS.len()]>);

struct Row {
    false_alarm_nights: usize,
    confirms_per_night: f64,
    detected: [usize; DROPS.len()],
}

/// Runs every rule over the same series; work is split over two threads by night.
fn evaluate(noise_idx: u64, noise: &Noise, rules: &[Rule]) -> Vec<Row> {
    let threads = 2;
    let per_thread: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut alarms = vec![0usize; rules.len()];
                    let mut confirms = vec![0usize; rules.len()];
                    let mut detected = vec![[0usize; DROPS.len()]; rules.len()];
                    for night in (t..NIGHTS).step_by(threads) {
                        let mut any = vec![false; rules.len()];
                        for case in 0..CASES {
                            let series = CaseSeries::new(
                                noise,
                                seed(noise_idx, 0, night as u64, case as u64),
                                1.0,
                            );
                            for (i, rule) in rules.iter().enumerate() {
                                let (failed, confirmed) = rule.fails(noise, &series);
                                any[i] |= failed;
                                confirms[i] += usize::from(confirmed);
                            }
                        }
                        for (a, hit) in alarms.iter_mut().zip(any) {
                            *a += usize::from(hit);
                        }
                    }
                    for (d, drop) in DROPS.iter().enumerate() {
                        for trial in (t..TRIALS).step_by(threads) {
                            let series = CaseSeries::new(
                                noise,
                                seed(noise_idx, 1 + d as u64, trial as u64, 0),
                                1.0 / (1.0 - drop),
                            );
                            for (i, rule) in rules.iter().enumerate() {
                                detected[i][d] += usize::from(rule.fails(noise, &series).0);
                            }
                        }
                    }
                    (alarms, confirms, detected)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a simulation thread panicked"))
            .collect()
    });
    (0..rules.len())
        .map(|i| Row {
            false_alarm_nights: per_thread.iter().map(|p| p.0[i]).sum(),
            confirms_per_night: per_thread.iter().map(|p| p.1[i]).sum::<usize>() as f64
                / NIGHTS as f64,
            detected: std::array::from_fn(|d| per_thread.iter().map(|p| p.2[i][d]).sum()),
        })
        .collect()
}

fn main() -> std::io::Result<()> {
    let rules = rules();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Synthetic nights: {CASES} cases x {REPEATS} repeats x {STEPS} steps; {HISTORY} earlier good \
         results per case; {NIGHTS} nights for false alarms, {TRIALS} trials per detection cell."
    )?;
    for (noise_idx, process_sd) in [0.02, 0.01].into_iter().enumerate() {
        let noise = Noise::with_process_sd(process_sd);
        let rows = evaluate(noise_idx as u64, &noise, &rules);
        writeln!(out)?;
        writeln!(
            out,
            "Per-process noise {:.0}% (jitter {:.2}%/step, {:.0}% bimodal processes +{:.0}%, \
             {:.1}% outlier steps 1.5-3x):",
            process_sd * 100.0,
            noise.jitter_sd * 100.0,
            noise.bimodal_p * 100.0,
            (noise.bimodal_slowdown - 1.0) * 100.0,
            noise.outlier_p * 100.0
        )?;
        writeln!(out)?;
        writeln!(
            out,
            "| rule | false-alarm nights (100 cases, no change) | re-measured cases per night | \
             detection 3% | 5% | 10% |"
        )?;
        writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
        for (rule, row) in rules.iter().zip(rows) {
            let share = |k: usize, of: usize| format!("{:.1}%", 100.0 * k as f64 / of as f64);
            writeln!(
                out,
                "| {} | {} | {:.2} | {} | {} | {} |",
                rule.label(),
                share(row.false_alarm_nights, NIGHTS),
                row.confirms_per_night,
                share(row.detected[0], TRIALS),
                share(row.detected[1], TRIALS),
                share(row.detected[2], TRIALS),
            )?;
        }
    }
    Ok(())
}
