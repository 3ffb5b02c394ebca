//! The GPU side of `utilgate run`, kept apart from the run flow: NVML watching (fingerprint,
//! per-case sampling, summaries), the GPU spec from the NVML name, and the command of a
//! built-in `workload` suite. Sequences I/O through `gpu::nvml`; decides nothing itself.

use crate::catalog::GpuSpec;
use crate::config::{Config, GpuConfig, LoadedConfig, SuiteConfig, Workload};
use crate::error::Error;
use crate::gpu::nvml::{GpuMonitor, SAMPLE_INTERVAL};
use crate::gpu::state::{DeviceSelector, GpuFingerprint, GpuSample, select_device};

/// The warning printed once when NVML cannot be loaded; the run goes on.
pub const NO_NVML_WARNING: &str =
    "no NVML (libnvidia-ml.so.1): GPU clocks and throttling are not recorded";

/// NVML watching one GPU for the length of a run.
#[derive(Debug)]
pub struct GpuWatch {
    monitor: GpuMonitor,
    pub fingerprint: GpuFingerprint,
}

impl GpuWatch {
    /// Open NVML for the GPU `CUDA_VISIBLE_DEVICES` selects. `None` for a host-CPU device
    /// (`measure_host_bandwidth`), and `None` with one warning where NVML is absent.
    #[must_use]
    pub fn start(config: &Config, cuda_visible_devices: Option<&str>) -> Option<GpuWatch> {
        if config
            .gpu
            .as_ref()
            .is_some_and(|g| g.measure_host_bandwidth)
        {
            return None;
        }
        let selector: DeviceSelector = select_device(cuda_visible_devices);
        let opened = GpuMonitor::open(&selector).and_then(|monitor| {
            let fingerprint = monitor.fingerprint()?;
            Ok(GpuWatch {
                monitor,
                fingerprint,
            })
        });
        match opened {
            Ok(watch) => Some(watch),
            Err(crate::gpu::GpuError::NoNvml { .. }) => {
                crate::output::warn(NO_NVML_WARNING);
                None
            }
            Err(other) => {
                crate::output::warn(&format!(
                    "{other}: GPU clocks and throttling are not recorded"
                ));
                None
            }
        }
    }

    /// Run `work` while sampling the GPU, each reading tagged with `timed_steps()` (the timed
    /// steps the harness had reported by then).
    pub fn sample<T>(
        &self,
        timed_steps: &(dyn Fn() -> Option<u64> + Sync),
        work: impl FnOnce() -> T,
    ) -> (T, Vec<GpuSample>) {
        self.monitor
            .sample_during_with(SAMPLE_INTERVAL, timed_steps, work)
    }

    /// The case's summary as stored in `results.gpu_state_json`.
    #[must_use]
    pub fn summary_json(&self, samples: &[GpuSample]) -> Option<serde_json::Value> {
        serde_json::to_value(crate::gpu::summarise(samples, Some(&self.fingerprint))).ok()
    }
}

/// The run's `gpu_json`: the spec, with the NVML fingerprint under `fingerprint` when there is
/// one.
#[must_use]
pub fn gpu_json(spec: &GpuSpec, watch: Option<&GpuWatch>) -> Option<serde_json::Value> {
    let mut value = serde_json::to_value(spec).ok()?;
    if let (Some(w), Some(map)) = (watch, value.as_object_mut()) {
        map.insert(
            "fingerprint".into(),
            serde_json::to_value(&w.fingerprint).ok()?,
        );
    }
    Some(value)
}

/// The GPU spec from the NVML name, with the config's declared figures as overrides, where
/// `[gpu]` names no catalogue entry (a `name` in the config always wins).
pub fn spec_from_nvml(
    gpu: Option<&GpuConfig>,
    watch: Option<&GpuWatch>,
) -> Result<Option<GpuSpec>, Error> {
    if gpu.is_some_and(|g| g.name.is_some() || g.measure_host_bandwidth) {
        return Ok(None);
    }
    let Some(spec) = watch.and_then(|w| crate::catalog::gpu_from_nvml_name(&w.fingerprint.name))
    else {
        return Ok(None);
    };
    Ok(Some(match gpu {
        Some(g) => {
            let spec = spec.with_overrides(g.mem_bandwidth_gb_s, &g.dense_tflops, g.memory_gb)?;
            match g.interconnect_gb_s {
                Some(gb_s) => spec.with_interconnect(gb_s)?,
                None => spec,
            }
        }
        None => spec,
    }))
}

/// Before any case runs: a suite of the built-in reference workload needs the CUDA libraries
/// (exit 2 with "no NVIDIA driver found ..." otherwise).
pub fn check_workloads(suites: &[&SuiteConfig]) -> Result<(), Error> {
    if suites
        .iter()
        .any(|s| s.workload == Some(Workload::Reference))
    {
        crate::gpu::libs::require_cuda_libraries()?;
    }
    Ok(())
}

/// The command template a suite runs: its own `command`, or this binary's built-in harness for
/// a `workload`.
#[must_use]
pub fn suite_command(suite: &SuiteConfig, loaded: &LoadedConfig) -> String {
    match (&suite.command, suite.workload) {
        (Some(command), _) => command.clone(),
        (None, Some(Workload::Reference)) => {
            let path = std::path::absolute(&loaded.path).unwrap_or_else(|_| loaded.path.clone());
            crate::measure::builtin::reference::reference_command(
                &path.to_string_lossy(),
                suite.graphs.unwrap_or(true),
            )
        }
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_cpu_devices_are_not_watched_and_declared_names_win() {
        let config = Config {
            gpu: Some(GpuConfig {
                measure_host_bandwidth: true,
                ..GpuConfig::default()
            }),
            ..Config::default()
        };
        assert!(GpuWatch::start(&config, None).is_none());
        let named = GpuConfig {
            name: Some("h100-sxm".into()),
            ..GpuConfig::default()
        };
        assert_eq!(spec_from_nvml(Some(&named), None).expect("ok"), None);
        assert_eq!(spec_from_nvml(None, None).expect("ok"), None);
    }
}
