//! The device a command computes floors for, resolved one way for `run`, `floor` and
//! `config check`: the NVML name (where `[gpu]` names nothing), the host's measured bandwidth
//! (`measure_host_bandwidth`, cached beside the store), or the declared-device rule of
//! `catalog::device` (a catalogue name with overrides, or a declared device). Sequences I/O
//! (NVML, the host probe and its cache file); the rule itself is pure.

use std::path::{Path, PathBuf};

use crate::measure::host::HostBandwidth;

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

/// Where this host's measured read bandwidth is pinned: one file per user
/// (`$XDG_CACHE_HOME/utilgate/host-bandwidth.json`, else `~/.cache/utilgate/...`), so every
/// store and directory on the machine floors its cases against the same figure; beside the
/// store only where neither variable is set.
#[must_use]
pub fn host_pin(store_path: &Path) -> PathBuf {
    let env = crate::pipeline::context::env_lookup();
    let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    set("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|h| Path::new(&h).join(".cache")))
        .map_or_else(
            || store_pin(store_path),
            |dir| dir.join("utilgate").join("host-bandwidth.json"),
        )
}

/// The pin beside a store, where utilgate before 0.3 kept it (one per store directory, so two
/// directories on one machine could floor the same case 7% apart).
fn store_pin(store_path: &Path) -> PathBuf {
    store_path
        .parent()
        .unwrap_or(Path::new("."))
        .join("host-bandwidth.json")
}

/// This host's pinned read bandwidth, measured and pinned now when none is. A figure pinned
/// beside the store by an older utilgate is adopted when the host has none yet, so a store's
/// floors do not move; where the two disagree, the host's wins and a warning names both.
fn host_bandwidth(store_path: &Path) -> Result<(HostBandwidth, PathBuf), Error> {
    let (pin, old) = (host_pin(store_path), store_pin(store_path));
    let host = hostname();
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| Error::Io { path, source }
    };
    if pin != old
        && let Some(beside) = crate::measure::host::pinned(&old, &host)
    {
        match crate::measure::host::pinned(&pin, &host) {
            None => {
                crate::measure::host::keep_pinned(&pin, beside).map_err(io(&pin))?;
            }
            Some(current) if (current.bytes_per_s / beside.bytes_per_s - 1.0).abs() > 0.005 => {
                crate::output::warn(&format!(
                    "two pins of {host}'s read bandwidth disagree: {:.2} GB/s in {} (measured \
                     {}) and {:.2} GB/s in {} (measured {}); floors use the first, the \
                     host's pin; delete {} to silence this",
                    current.bytes_per_s / 1e9,
                    pin.display(),
                    current.measured_at,
                    beside.bytes_per_s / 1e9,
                    old.display(),
                    beside.measured_at,
                    old.display()
                ));
            }
            Some(_) => {}
        }
    }
    let now = crate::pipeline::context::now().to_string();
    let measured = crate::measure::host::pinned_or_measured(&pin, &host, &now).map_err(io(&pin))?;
    Ok((measured, pin))
}

/// The device spec for `[gpu]` (`gpu`), with NVML's name where `watch` has one. Measuring the
/// host's bandwidth keeps its best figure in [`host_pin`], and the spec's `source` says so.
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
        let (measured, pin) = host_bandwidth(store_path)?;
        let name = gpu.name.clone().unwrap_or_else(|| HOST_CPU.to_owned());
        let mut spec = GpuSpec::declared(
            &name,
            measured.bytes_per_s / 1e9,
            &gpu.dense_tflops,
            gpu.memory_gb,
        )?;
        spec.source = format!(
            "bandwidth measured on host {} at {}, pinned in {}; the rest declared in config",
            measured.host,
            measured.measured_at,
            pin.display()
        );
        return Ok(spec);
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
