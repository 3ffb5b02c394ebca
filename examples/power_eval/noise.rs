//! The synthetic machine of the power evaluation: step times of fresh processes under a noise
//! model, and the machine canary's readings on the same night. No I/O.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use rand_distr::StandardNormal;

/// A typical decode step and its floor (utilisation 60%).
pub const STEP_MS: f64 = 6.0;
pub const FLOOR_MS: f64 = 3.6;
/// Counted steps per process.
pub const STEPS: usize = 100;

/// How one machine makes step times noisy (see the module doc of `main.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Noise {
    /// Per-process lognormal offset (sigma).
    pub process_sd: f64,
    /// Per-step lognormal jitter (sigma).
    pub jitter_sd: f64,
    /// Share of processes that start slow and stay slow, and by how much.
    pub bimodal_p: f64,
    pub bimodal_slowdown: f64,
    /// Share of outlier steps, 1.5x to 3x slower.
    pub outlier_p: f64,
    /// Night-to-night host drift shared by every case of a night (lognormal sigma).
    pub night_sd: f64,
    /// Slow drift inside one session: the host factor moves linearly by this much (log) from
    /// the first process to the last of a case (A/B sessions only).
    pub session_trend: f64,
}

impl Noise {
    pub fn with_process_sd(process_sd: f64) -> Self {
        Noise {
            process_sd,
            jitter_sd: 0.0075,
            bimodal_p: 0.05,
            bimodal_slowdown: 1.08,
            outlier_p: 0.005,
            night_sd: 0.0,
            session_trend: 0.0,
        }
    }
}

/// A change of the code under test (what the gate should catch), applied to a result.
#[derive(Clone, Copy, Debug, Default)]
pub struct Change {
    /// Step time multiplied by this (1 = unchanged).
    pub factor: f64,
    /// Share of steps that stall, and the stall's factor (0 = none).
    pub stall_p: f64,
    pub stall_factor: f64,
}

impl Change {
    pub const NONE: Change = Change {
        factor: 1.0,
        stall_p: 0.0,
        stall_factor: 1.0,
    };

    /// A utilisation drop of `drop` (step time x 1 / (1 - drop)).
    pub fn drop(drop: f64) -> Change {
        Change {
            factor: 1.0 / (1.0 - drop),
            ..Change::NONE
        }
    }

    pub fn stall(p: f64, factor: f64) -> Change {
        Change {
            stall_p: p,
            stall_factor: factor,
            ..Change::NONE
        }
    }
}

/// One fresh process: `STEPS` steps at `STEP_MS x host x change`.
pub fn process(rng: &mut SmallRng, noise: &Noise, host: f64, change: &Change) -> Vec<f64> {
    let offset: f64 = rng.sample::<f64, _>(StandardNormal) * noise.process_sd;
    let slow = if rng.random_bool(noise.bimodal_p) {
        noise.bimodal_slowdown
    } else {
        1.0
    };
    let level = STEP_MS * host * change.factor * offset.exp() * slow;
    (0..STEPS)
        .map(|_| {
            let jitter: f64 = rng.sample::<f64, _>(StandardNormal) * noise.jitter_sd;
            let outlier = if rng.random_bool(noise.outlier_p) {
                rng.random_range(1.5..3.0)
            } else {
                1.0
            };
            let stall = if change.stall_p > 0.0 && rng.random_bool(change.stall_p) {
                change.stall_factor
            } else {
                1.0
            };
            level * jitter.exp() * outlier * stall
        })
        .collect()
}

/// One result of `repeats` fresh processes.
pub fn result(
    rng: &mut SmallRng,
    noise: &Noise,
    repeats: usize,
    host: f64,
    change: &Change,
) -> Vec<Vec<f64>> {
    (0..repeats)
        .map(|_| process(rng, noise, host, change))
        .collect()
}

/// The canary's readings on a night whose host factor is `host`: two fixed workloads (a memory
/// stream of 12 ms and a spin loop of 8 ms on a quiet host), five times before and five times
/// after the run, each reading with 1% lognormal noise.
pub fn canary(rng: &mut SmallRng, host: f64) -> Vec<(String, Vec<f64>)> {
    [("stream_ms", 12.0), ("spin_ms", 8.0)]
        .into_iter()
        .map(|(name, ms)| {
            let readings = (0..10)
                .map(|_| ms * host * (rng.sample::<f64, _>(StandardNormal) * 0.01).exp())
                .collect();
            (name.to_owned(), readings)
        })
        .collect()
}

/// The host factor of a night: the night's drift, times a scripted shift.
pub fn night_host(rng: &mut SmallRng, noise: &Noise, shift: f64) -> f64 {
    let drift: f64 = rng.sample::<f64, _>(StandardNormal) * noise.night_sd;
    drift.exp() * shift
}

/// A seed for one simulated unit, distinct per scenario, purpose and index.
pub fn seed(scenario: u64, purpose: u64, index: u64) -> u64 {
    // SplitMix64 finaliser over the packed coordinates: decorrelates neighbouring seeds.
    let mut z = scenario << 56 ^ purpose << 40 ^ index;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub fn rng(seed: u64) -> SmallRng {
    SmallRng::seed_from_u64(seed)
}
