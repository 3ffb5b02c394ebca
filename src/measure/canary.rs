//! The machine canary on a host or declared device: two fixed, short workloads utilgate times
//! itself before and after every run, so that a whole-host slowdown (a noisy neighbour, thermal
//! limits, another runner of the same SKU) shows up in figures the user's code cannot move.
//! Does I/O: reads the clock.
//!
//! * `stream_ms`: one read of a 64 MiB buffer with the host probe's streaming kernel (memory
//!   bandwidth, the resource a decode step is bound by);
//! * `spin_ms`: a fixed chain of 2^22 dependent integer operations (the core's speed and its
//!   share of the CPU, which a co-scheduled process takes away).
//!
//! Each is timed [`READINGS`] times per call; `run` calls it before and after the cases and
//! stores all readings with the run (`compare::canary_shift` judges them).

use std::hint::black_box;
use std::time::Instant;

use crate::compare::Canary;
use crate::measure::host::{filled_buffer, stream_read};

/// Readings of each figure per call.
pub const READINGS: usize = 5;
const STREAM_BYTES: u64 = 64 << 20;
const SPIN_STEPS: u64 = 1 << 22;

/// A fixed chain of dependent xorshift steps: no memory traffic, no vectorisation.
fn spin(steps: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

fn time_ms(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64() * 1e3
}

/// Appends one call's readings of the host canary to `canary` (before or after a run).
pub fn measure_host(canary: &mut Canary) {
    let buf = filled_buffer(STREAM_BYTES, 0x2545_f491_4f6c_dd1d);
    // One untimed pass pages the buffer in and warms the caches' state.
    black_box(stream_read(black_box(&buf)));
    for _ in 0..READINGS {
        let stream = time_ms(|| {
            black_box(stream_read(black_box(&buf)));
        });
        let spin_ms = time_ms(|| {
            black_box(spin(black_box(SPIN_STEPS), 7));
        });
        canary
            .figures
            .entry("stream_ms".to_owned())
            .or_default()
            .push(stream);
        canary
            .figures
            .entry("spin_ms".to_owned())
            .or_default()
            .push(spin_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spin_is_deterministic_and_not_trivial() {
        assert_eq!(spin(1000, 7), spin(1000, 7));
        assert_ne!(spin(1000, 7), spin(1001, 7));
    }

    #[test]
    fn two_calls_give_ten_positive_readings_of_each_figure() {
        let mut canary = Canary::default();
        measure_host(&mut canary);
        measure_host(&mut canary);
        for name in ["stream_ms", "spin_ms"] {
            let readings = &canary.figures[name];
            assert_eq!(readings.len(), 2 * READINGS, "{name}");
            assert!(readings.iter().all(|r| r.is_finite() && *r > 0.0), "{name}");
        }
    }
}
