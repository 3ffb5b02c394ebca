//! The machine canary on a host or declared device: two fixed, short workloads utilgate times
//! itself before and after every run, so that a whole-host slowdown (a noisy neighbour, thermal
//! limits, another runner of the same SKU) shows up in figures the user's code cannot move.
//! Does I/O: reads the clock.
//!
//! * `stream_ms`: one read of a 32 MiB buffer with the host probe's streaming kernel (memory
//!   bandwidth, the resource a decode step is bound by);
//! * `spin_ms`: a fixed chain of 2^21 dependent integer operations (the core's speed and its
//!   share of the CPU, which a co-scheduled process takes away).
//!
//! Each is timed [`READINGS`] times per call; `run` calls it before and after the cases and
//! stores all readings with the run (`compare::canary_shift` judges them).

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use crate::compare::Canary;
use crate::measure::host::{filled_buffer, stream_read};

/// Readings of each figure per call.
pub const READINGS: usize = 5;
const STREAM_BYTES: u64 = 32 << 20;
const SPIN_STEPS: u64 = 1 << 21;

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

/// One call of the configured canary (before or after a run): the user's command when one is
/// set, else the built-in host canary. Appends its readings to `canary`.
pub fn measure(
    config: &crate::config::CanaryConfig,
    dir: &Path,
    canary: &mut Canary,
) -> Result<(), CanaryError> {
    if let Some(command) = &config.command {
        return measure_command(canary, command, dir);
    }
    measure_host(canary);
    Ok(())
}

/// Why a canary command gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum CanaryError {
    #[error("canary command `{command}` could not start: {source}")]
    Start {
        command: String,
        source: std::io::Error,
    },
    #[error("canary command `{command}` exited with {status}")]
    Status { command: String, status: String },
    #[error(
        "canary command `{command}` printed no JSON object of figures (e.g. \
         {{\"copy_ms\": [8.1, 8.2]}}): {detail}"
    )]
    Output { command: String, detail: String },
}

/// Parses a canary command's stdout: one JSON object whose values are positive times (ms) or
/// lists of them. Pure.
pub fn parse_figures(text: &str) -> Result<Canary, String> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).map_err(|e| e.to_string())?;
    let object = value.as_object().ok_or("not a JSON object")?;
    let mut canary = Canary::default();
    for (name, v) in object {
        let readings: Vec<f64> = match v {
            serde_json::Value::Array(items) => {
                items.iter().filter_map(serde_json::Value::as_f64).collect()
            }
            other => other.as_f64().into_iter().collect(),
        };
        if readings.is_empty() || readings.iter().any(|r| !(r.is_finite() && *r > 0.0)) {
            return Err(format!(
                "figure {name:?} must be a positive time in ms or a list of them"
            ));
        }
        canary.figures.insert(name.clone(), readings);
    }
    if canary.figures.is_empty() {
        return Err("no figures".to_owned());
    }
    Ok(canary)
}

/// Runs a user's canary command (`sh -c`, in `dir`) and appends its figures to `canary`.
pub fn measure_command(canary: &mut Canary, command: &str, dir: &Path) -> Result<(), CanaryError> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the user's canary command is a process utilgate starts"
    )]
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_remove("GITHUB_TOKEN")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| CanaryError::Start {
            command: command.to_owned(),
            source,
        })?;
    if !output.status.success() {
        return Err(CanaryError::Status {
            command: command.to_owned(),
            status: output.status.to_string(),
        });
    }
    let figures = parse_figures(&String::from_utf8_lossy(&output.stdout)).map_err(|detail| {
        CanaryError::Output {
            command: command.to_owned(),
            detail,
        }
    })?;
    for (name, readings) in figures.figures {
        canary.figures.entry(name).or_default().extend(readings);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_parse_from_numbers_and_lists() {
        let c = parse_figures(r#"{"copy_ms": [8.1, 8.2], "gemm_ms": 3.4}"#).expect("parses");
        assert_eq!(c.figures["copy_ms"], vec![8.1, 8.2]);
        assert_eq!(c.figures["gemm_ms"], vec![3.4]);
        for bad in [
            "",
            "[1]",
            "{}",
            r#"{"a": -1}"#,
            r#"{"a": "x"}"#,
            r#"{"a": []}"#,
        ] {
            assert!(parse_figures(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_command_canary_is_read_and_a_failing_one_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut c = Canary::default();
        measure_command(&mut c, r#"echo '{"x_ms": [2.0, 2.1]}'"#, dir.path()).expect("runs");
        measure_command(&mut c, r#"echo '{"x_ms": 2.2}'"#, dir.path()).expect("runs");
        assert_eq!(c.figures["x_ms"], vec![2.0, 2.1, 2.2]);
        let err = measure_command(&mut c, "exit 3", dir.path()).expect_err("fails");
        assert!(err.to_string().contains("exit 3"), "{err}");
        let err = measure_command(&mut c, "echo nope", dir.path()).expect_err("fails");
        assert!(err.to_string().contains("no JSON object"), "{err}");
    }

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
