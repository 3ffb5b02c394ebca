//! The device a command computes floors for, resolved one way for `run`, `floor` and
//! `config check`: the NVML name (where `[gpu]` names nothing), the host's measured bandwidth
//! (`measure_host_bandwidth`, cached beside the store), or the declared-device rule of
//! `catalog::device` (a catalogue name with overrides, or a declared device). Sequences I/O
//! (NVML, the host probe and its cache file); the rule itself is pure.

use std::path::Path;

use crate::catalog::GpuSpec;
use crate::config::GpuConfig;
use crate::error::Error;
use crate::pipeline::gpu::GpuWatch;

/// The name of the host CPU as a stand-in device, when `[gpu]` names none.
pub const HOST_CPU: &str = "host-cpu";

/// Whether resolving `[gpu]` needs NVML's device name (nothing named, no host bandwidth).
#[must_use]
pub fn needs_nvml(gpu: Option<&GpuConfig>) -> bool {
    !gpu.is_some_and(|g| g.name.is_some() || g.measure_host_bandwidth)
}

/// The host-bandwidth cache: beside the store, so every command of one project shares it.
#[must_use]
pub fn host_cache(store_path: &Path) -> std::path::PathBuf {
    store_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("host-bandwidth.json")
}

/// The device spec for `[gpu]` (`gpu`), with NVML's name where `watch` has one. Measuring the
/// host's bandwidth keeps its best figure in [`host_cache`].
pub fn device_spec(
    gpu: Option<&GpuConfig>,
    store_path: &Path,
    watch: Option<&GpuWatch>,
) -> Result<GpuSpec, Error> {
    if let Some(spec) = crate::pipeline::gpu::spec_from_nvml(gpu, watch)? {
        return Ok(spec);
    }
    let Some(gpu) = gpu else {
        return Err(Error::NoDeviceSpec);
    };
    if gpu.measure_host_bandwidth {
        let cache = host_cache(store_path);
        let now = crate::pipeline::context::now().to_string();
        let measured = crate::measure::host::pinned_or_measured(&cache, &hostname(), &now)
            .map_err(|source| Error::Io {
                path: cache,
                source,
            })?;
        let name = gpu.name.clone().unwrap_or_else(|| HOST_CPU.to_owned());
        return Ok(GpuSpec::declared(
            &name,
            measured.bytes_per_s / 1e9,
            &gpu.dense_tflops,
            gpu.memory_gb,
        )?);
    }
    gpu.declared_spec()?.ok_or(Error::NoDeviceSpec)
}

/// The device a run is recorded against: its name, and its figures where a floor needs them.
pub struct RunDevice {
    pub name: String,
    /// Every run with step cases has it; a run of service cases only has it where `[gpu]`
    /// declares it (its estimates need it, nothing else does).
    pub spec: Option<GpuSpec>,
}

/// The device of a run: with step cases, [`device_spec`] (NVML, else `[gpu]`); with service
/// cases only, `[gpu]` as declared, else "unknown" (a load generator reports no device, and
/// the service history stays keyed by the name it has always had).
pub fn run_device(
    loaded: &crate::config::LoadedConfig,
    store_path: &Path,
    watch: Option<&GpuWatch>,
    step_cases: bool,
) -> Result<RunDevice, Error> {
    if step_cases {
        let spec = device_spec(loaded.config.gpu.as_ref(), store_path, watch)?;
        return Ok(RunDevice {
            name: spec.name.clone(),
            spec: Some(spec),
        });
    }
    let spec = loaded
        .config
        .gpu
        .as_ref()
        .and_then(|g| g.declared_spec().ok().flatten());
    let name = loaded
        .config
        .gpu
        .as_ref()
        .and_then(|g| g.name.clone())
        .or_else(|| spec.as_ref().map(|s| s.name.clone()))
        .unwrap_or_else(|| "unknown".to_owned());
    Ok(RunDevice { name, spec })
}

/// This machine's host name (the host-bandwidth cache is per host).
#[must_use]
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown-host".to_owned())
}
