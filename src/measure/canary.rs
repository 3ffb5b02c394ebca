//! The machine canary on a host or declared device: two fixed, short workloads utilgate times
//! itself before and after every run, so that a whole-host slowdown (a noisy neighbour, thermal
//! limits, another runner of the same SKU) shows up in figures the user's code cannot move.
//! Does I/O: reads the clock.
//!
//! * `stream_4mib_ms`: four reads of a 4 MiB buffer with the host probe's streaming kernel (the
//!   bandwidth of the core's share of the memory system, which a decode step is bound by and a
//!   noisy neighbour takes away);
//! * `spin_ms`: a fixed chain of 2^21 dependent integer operations (the core's speed and its
//!   share of the CPU, which a co-scheduled process takes away).
//!
//! Until #29 the stream read a 32 MiB buffer once per reading (`stream_ms`): 31 MiB and about
//! 0.25 s per run. The 4 MiB buffer costs a run 4 MiB and tens of milliseconds with the
//! figures' run-to-run spread no wider (`benches/canary.rs` measures both side by side); it has
//! a name of its own so that no reading is ever compared with one of the old stream.
//!
//! On a GPU (a device NVML watches) the canary is the device's instead ([`measure_gpu`]):
//!
//! * `copy_ms`: a device-to-device copy of 1 GiB (the HBM bandwidth a decode step is bound by);
//! * `gemm_ms`: a square bf16 GEMM of size 4096 (the tensor cores' rate);
//! * `sm_clock_period_ns`: the SM clock NVML reported while the two ran, as a period (1000 /
//!   MHz), so that, like the times, a larger figure is a slower machine.
//!
//! Each is timed [`READINGS`] times per call; `run` calls it before and after the cases and
//! stores all readings with the run (`compare::canary_shift` judges them).

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::compare::Canary;
use crate::gpu::GpuError;
use crate::gpu::state::{GPU_IDLE, GpuSample};
use crate::measure::cuda::CudaDevice;
use crate::measure::host::{filled_buffer, stream_read};

/// Readings of each figure per call.
pub const READINGS: usize = 5;
const SPIN_STEPS: u64 = 1 << 21;
/// The GPU canary's copy: 1 GiB, about 0.5 ms on an H200.
const GPU_COPY_BYTES: u64 = 1 << 30;
/// The GPU canary's GEMM size: 137 GFLOP, about 0.2 ms of bf16 tensor-core work on an H200.
const GPU_GEMM_N: u64 = 4096;

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

/// The host canary's work per reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCanary {
    /// The stream figure's name.
    pub stream_figure: &'static str,
    pub stream_bytes: u64,
    /// Reads of the buffer per reading.
    pub stream_passes: u32,
    pub spin_steps: u64,
}

impl HostCanary {
    /// What `run` measures: four reads of 4 MiB and the spin chain per reading.
    pub const DEFAULT: HostCanary = HostCanary {
        stream_figure: "stream_4mib_ms",
        stream_bytes: 4 << 20,
        stream_passes: 4,
        spin_steps: SPIN_STEPS,
    };
    /// The canary before #29 (one read of 32 MiB per reading), for `benches/canary.rs`.
    pub const BEFORE_29: HostCanary = HostCanary {
        stream_figure: "stream_ms",
        stream_bytes: 32 << 20,
        stream_passes: 1,
        spin_steps: SPIN_STEPS,
    };
}

/// Appends one call's readings of the host canary to `canary` (before or after a run).
pub fn measure_host(canary: &mut Canary) {
    measure_host_with(canary, &HostCanary::DEFAULT);
}

/// [`measure_host`] with the given work per reading.
pub fn measure_host_with(canary: &mut Canary, work: &HostCanary) {
    let buf = filled_buffer(work.stream_bytes, 0x2545_f491_4f6c_dd1d);
    // One untimed pass pages the buffer in and warms the caches' state.
    black_box(stream_read(black_box(&buf)));
    for _ in 0..READINGS {
        let stream = time_ms(|| {
            for _ in 0..work.stream_passes {
                black_box(stream_read(black_box(&buf)));
            }
        });
        let spin_ms = time_ms(|| {
            black_box(spin(black_box(work.spin_steps), 7));
        });
        canary
            .figures
            .entry(work.stream_figure.to_owned())
            .or_default()
            .push(stream);
        canary
            .figures
            .entry("spin_ms".to_owned())
            .or_default()
            .push(spin_ms);
    }
}

/// Appends one call's readings of the GPU canary on CUDA device `ordinal`: [`READINGS`]
/// timed copies and GEMMs (CUDA events, after three warm-ups each). No driver:
/// [`CanaryError::Gpu`] with the reason.
pub fn measure_gpu(canary: &mut Canary, ordinal: usize) -> Result<(), CanaryError> {
    #[expect(clippy::cast_possible_truncation, reason = "READINGS is 5")]
    let readings = READINGS as u32;
    let device = CudaDevice::open(ordinal)?;
    let copy = device.probe_copy(GPU_COPY_BYTES, readings)?;
    let gemm = device.probe_gemm(GPU_GEMM_N, readings)?;
    for (name, times) in [("copy_ms", copy), ("gemm_ms", gemm)] {
        canary
            .figures
            .entry(name.to_owned())
            .or_default()
            .extend(times);
    }
    Ok(())
}

/// Appends the SM clock periods (ns) of the busy NVML samples taken while the GPU canary ran.
/// Pure.
pub fn add_clock_periods(canary: &mut Canary, samples: &[GpuSample]) {
    let periods: Vec<f64> = samples
        .iter()
        .filter(|s| s.reasons & GPU_IDLE == 0)
        .filter_map(|s| s.sm_clock_mhz.filter(|&mhz| mhz > 0))
        .map(|mhz| 1e3 / f64::from(mhz))
        .collect();
    if !periods.is_empty() {
        canary
            .figures
            .entry("sm_clock_period_ns".to_owned())
            .or_default()
            .extend(periods);
    }
}

/// One call of the configured canary (before or after a run): the user's command when one is
/// set, else the built-in host canary. Appends its readings to `canary`.
pub fn measure(
    config: &crate::config::CanaryConfig,
    command: &CommandRun<'_>,
    canary: &mut Canary,
) -> Result<(), CanaryError> {
    if let Some(line) = &config.command {
        return measure_command(canary, line, command);
    }
    measure_host(canary);
    Ok(())
}

/// How a canary command is run: in the config's directory, under the harness guard (the
/// utilgate binary) when there is one, watching the run's cancel flag.
#[derive(Debug, Clone, Copy)]
pub struct CommandRun<'a> {
    pub dir: &'a Path,
    pub guard: Option<&'a Path>,
    pub cancel: &'a std::sync::atomic::AtomicBool,
}

/// How long a canary command may take: it times a fixed small piece of work (seconds at most);
/// one that hangs is killed, and the run goes on without a canary.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(120);

/// The most a canary command's stdout may hold: one JSON object of a few figures.
const COMMAND_OUTPUT_CAP: u64 = 1 << 20;

/// What went wrong with a canary command, in the canary's words (the harness runner's errors
/// speak of a harness), with the last line of its stderr.
fn command_failure(e: &crate::measure::harness::HarnessError) -> String {
    use crate::measure::harness::HarnessError as H;
    let what = match e {
        H::Exited { code, .. } => format!("it exited with status {code}"),
        H::Signalled { signal, .. } => format!("it was killed by signal {signal}"),
        H::TimedOut { timeout, .. } => {
            format!("it ran past {} s and was killed", timeout.as_secs())
        }
        H::NotFound { program, .. } => format!("`{program}` was not found"),
        H::NotExecutable { program, .. } => format!("`{program}` could not be executed"),
        H::Cancelled => "the run was cancelled".to_owned(),
        other => other.to_string(),
    };
    match e
        .stderr_tail()
        .and_then(|t| t.lines().rev().find(|l| !l.trim().is_empty()))
    {
        Some(last) => format!("{what}; its stderr ended: {}", last.trim()),
        None => what,
    }
}

/// Why a canary command gave no figures.
#[derive(Debug, thiserror::Error)]
pub enum CanaryError {
    /// It could not start, failed, timed out or was cancelled: `detail` is the harness
    /// runner's sentence, with the command's stderr tail.
    #[error("canary command `{command}` failed: {detail}")]
    Failed { command: String, detail: String },
    #[error("the GPU canary could not run: {0}")]
    Gpu(#[from] GpuError),
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

/// Runs a user's canary command (`sh -c`, as a harness is run: guarded, its credentials
/// removed, within [`COMMAND_TIMEOUT`]) and appends its figures to `canary`.
pub fn measure_command(
    canary: &mut Canary,
    command: &str,
    run: &CommandRun<'_>,
) -> Result<(), CanaryError> {
    let failed = |detail: String| CanaryError::Failed {
        command: command.to_owned(),
        detail,
    };
    let mut out =
        tempfile::tempfile().map_err(|e| failed(format!("no file for its output: {e}")))?;
    let stdout = out
        .try_clone()
        .map_err(|e| failed(format!("no file for its output: {e}")))?;
    crate::measure::harness::run_command(
        command,
        run.dir,
        run.guard,
        (COMMAND_TIMEOUT, run.cancel),
        stdout,
    )
    .map_err(|e| failed(command_failure(&e)))?;
    let mut text = String::new();
    {
        use std::io::{Read as _, Seek as _};
        out.rewind()
            .and_then(|()| out.take(COMMAND_OUTPUT_CAP).read_to_string(&mut text))
            .map_err(|e| failed(format!("its output could not be read: {e}")))?;
    }
    let figures = parse_figures(&text).map_err(|detail| CanaryError::Output {
        command: command.to_owned(),
        detail,
    })?;
    for (name, readings) in figures.figures {
        canary.figures.entry(name).or_default().extend(readings);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sm_clock_mhz: Option<u32>, reasons: u64) -> GpuSample {
        GpuSample {
            t_ms: 0.0,
            sm_clock_mhz,
            mem_clock_mhz: None,
            power_w: None,
            power_limit_w: None,
            temp_c: None,
            reasons,
            gpu_util_pct: None,
            mem_util_pct: None,
            energy_mj: None,
            timed_steps: None,
        }
    }

    #[test]
    fn clock_periods_come_from_busy_samples_only() {
        let mut c = Canary::default();
        add_clock_periods(
            &mut c,
            &[
                sample(Some(1980), 0),
                sample(Some(345), GPU_IDLE),
                sample(None, 0),
                sample(Some(1000), 0x4),
            ],
        );
        assert_eq!(c.figures["sm_clock_period_ns"], vec![1e3 / 1980.0, 1.0]);
        let mut none = Canary::default();
        add_clock_periods(&mut none, &[sample(Some(345), GPU_IDLE)]);
        assert!(none.figures.is_empty());
    }

    #[test]
    fn the_gpu_canary_without_a_driver_is_a_clear_error() {
        let mut c = Canary::default();
        match measure_gpu(&mut c, 0) {
            // A GPU machine: both figures, READINGS each.
            Ok(()) => {
                assert_eq!(c.figures["copy_ms"].len(), READINGS);
                assert_eq!(c.figures["gemm_ms"].len(), READINGS);
            }
            Err(e) => {
                let text = e.to_string();
                assert!(text.starts_with("the GPU canary could not run: "), "{text}");
                assert!(c.figures.is_empty(), "{c:?}");
            }
        }
    }

    #[test]
    #[ignore = "needs a GPU: scripts/gpu-check.sh runs it"]
    fn the_gpu_canary_times_a_copy_and_a_gemm_on_a_gpu() {
        let mut c = Canary::default();
        measure_gpu(&mut c, 0).expect("a GPU runner");
        for name in ["copy_ms", "gemm_ms"] {
            let times = &c.figures[name];
            assert_eq!(times.len(), READINGS, "{name}");
            assert!(
                times.iter().all(|t| t.is_finite() && *t > 0.0),
                "{name}: {times:?}"
            );
        }
    }

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
        let cancel = std::sync::atomic::AtomicBool::new(false);
        let run = CommandRun {
            dir: dir.path(),
            guard: None,
            cancel: &cancel,
        };
        let mut c = Canary::default();
        measure_command(&mut c, r#"echo '{"x_ms": [2.0, 2.1]}'"#, &run).expect("runs");
        measure_command(&mut c, r#"echo '{"x_ms": 2.2}'"#, &run).expect("runs");
        assert_eq!(c.figures["x_ms"], vec![2.0, 2.1, 2.2]);
        let err = measure_command(&mut c, "echo why >&2; exit 3", &run).expect_err("fails");
        let err = err.to_string();
        assert!(
            err.contains("exited with status 3; its stderr ended: why"),
            "{err}"
        );
        let err = measure_command(&mut c, "echo nope", &run).expect_err("fails");
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
        assert_eq!(canary.figures.len(), 2, "{canary:?}");
        for name in ["stream_4mib_ms", "spin_ms"] {
            let readings = &canary.figures[name];
            assert_eq!(readings.len(), 2 * READINGS, "{name}");
            assert!(readings.iter().all(|r| r.is_finite() && *r > 0.0), "{name}");
        }
    }
}
