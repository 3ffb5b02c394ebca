//! The GPU's state through NVML (nvml-wrapper, libnvidia-ml.so.1 loaded at run time): the
//! fingerprint of a run and a sampler thread that reads clocks, power, temperature, clock-event
//! reasons and utilisation while a case's repeats run. I/O only: it translates NVML readings
//! into `gpu::state` values and decides nothing. Readings a board does not support are `None`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nvml_wrapper::Device;
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};

use super::error::GpuError;
use super::state::{DeviceSelector, GpuFingerprint, GpuSample};

/// How often the sampler reads the GPU. NVML's clock and power readings refresh at about this
/// rate; faster sampling repeats values.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// An open NVML session watching one GPU.
pub struct GpuMonitor {
    nvml: Nvml,
    index: u32,
}

impl std::fmt::Debug for GpuMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuMonitor")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

fn nvml_err(what: &str) -> impl FnOnce(nvml_wrapper::error::NvmlError) -> GpuError + '_ {
    move |source| GpuError::Nvml {
        what: what.to_owned(),
        source,
    }
}

/// 12080 -> "12.8", as `nvidia-smi` prints it.
fn cuda_version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

fn milliwatts(mw: u32) -> f64 {
    f64::from(mw) / 1000.0
}

impl GpuMonitor {
    /// Load NVML and find the selected GPU. No driver: [`GpuError::NoNvml`].
    pub fn open(selector: &DeviceSelector) -> Result<GpuMonitor, GpuError> {
        let nvml = Nvml::init().map_err(|source| GpuError::NoNvml { source })?;
        let index = match selector {
            DeviceSelector::Index(i) => *i,
            DeviceSelector::Uuid(uuid) => nvml
                .device_by_uuid(uuid.as_str())
                .and_then(|d| d.index())
                .map_err(nvml_err("find the GPU named by CUDA_VISIBLE_DEVICES"))?,
        };
        nvml.device_by_index(index)
            .map_err(nvml_err("open GPU device"))?;
        Ok(GpuMonitor { nvml, index })
    }

    fn device(&self) -> Result<Device<'_>, GpuError> {
        self.nvml
            .device_by_index(self.index)
            .map_err(nvml_err("open GPU device"))
    }

    /// NVML's name of the GPU, e.g. "NVIDIA H100 80GB HBM3".
    pub fn name(&self) -> Result<String, GpuError> {
        self.device()?.name().map_err(nvml_err("read the GPU name"))
    }

    /// Everything a run records about its GPU once.
    pub fn fingerprint(&self) -> Result<GpuFingerprint, GpuError> {
        let d = self.device()?;
        Ok(GpuFingerprint {
            name: d.name().map_err(nvml_err("read the GPU name"))?,
            index: self.index,
            uuid: d.uuid().ok(),
            driver_version: self.nvml.sys_driver_version().ok(),
            cuda_driver_version: self
                .nvml
                .sys_cuda_driver_version()
                .ok()
                .map(cuda_version_text),
            vbios_version: d.vbios_version().ok(),
            compute_capability: d
                .cuda_compute_capability()
                .ok()
                .map(|c| format!("{}.{}", c.major, c.minor)),
            memory_total_bytes: d.memory_info().ok().map(|m| m.total),
            enforced_power_limit_w: d.enforced_power_limit().ok().map(milliwatts),
            default_power_limit_w: d.power_management_limit_default().ok().map(milliwatts),
            persistence_mode: d.is_in_persistent_mode().ok(),
            mig_mode: d.mig_mode().ok().map(|m| m.current != 0),
            ecc_enabled: d.is_ecc_enabled().ok().map(|e| e.currently_enabled),
            pcie_gen: d.current_pcie_link_gen().ok(),
            pcie_width: d.current_pcie_link_width().ok(),
            pcie_max_gen: d.max_pcie_link_gen().ok(),
            pcie_max_width: d.max_pcie_link_width().ok(),
            applications_sm_clock_mhz: d.applications_clock(Clock::SM).ok(),
            applications_mem_clock_mhz: d.applications_clock(Clock::Memory).ok(),
            max_sm_clock_mhz: d.max_clock_info(Clock::SM).ok(),
            max_mem_clock_mhz: d.max_clock_info(Clock::Memory).ok(),
        })
    }

    /// The clock-event reason bits: `nvmlDeviceGetCurrentClocksEventReasons` where the driver
    /// has it (it keeps every bit), else the deprecated throttle-reasons call.
    fn reasons(&self, d: &Device<'_>) -> u64 {
        if let Ok(call) = self
            .nvml
            .lib()
            .nvmlDeviceGetCurrentClocksEventReasons
            .as_ref()
        {
            let mut bits: std::os::raw::c_ulonglong = 0;
            #[expect(
                unsafe_code,
                reason = "a raw NVML call on a live device handle with a valid out-pointer"
            )]
            let status = unsafe { call(d.handle(), &raw mut bits) };
            if status == 0 {
                return bits;
            }
        }
        d.current_throttle_reasons().map_or(0, |r| r.bits())
    }

    fn sample(&self, d: &Device<'_>, t_ms: f64, timed_steps: Option<u64>) -> GpuSample {
        let util = d.utilization_rates().ok();
        GpuSample {
            t_ms,
            sm_clock_mhz: d.clock_info(Clock::SM).ok(),
            mem_clock_mhz: d.clock_info(Clock::Memory).ok(),
            power_w: d.power_usage().ok().map(milliwatts),
            power_limit_w: d.enforced_power_limit().ok().map(milliwatts),
            temp_c: d.temperature(TemperatureSensor::Gpu).ok(),
            reasons: self.reasons(d),
            gpu_util_pct: util.as_ref().map(|u| u.gpu),
            mem_util_pct: util.as_ref().map(|u| u.memory),
            energy_mj: d.total_energy_consumption().ok(),
            timed_steps,
        }
    }

    /// Run `work` while a thread samples the GPU every `interval`; return its result and the
    /// samples (one at the start and one at the end at least, when the device answers).
    pub fn sample_during<T>(
        &self,
        interval: Duration,
        work: impl FnOnce() -> T,
    ) -> (T, Vec<GpuSample>) {
        self.sample_during_with(interval, &|| None, work)
    }

    /// [`GpuMonitor::sample_during`], tagging each reading with `timed_steps()`: how many timed
    /// steps the harness had reported when it was taken (the energy's window, `gpu::energy`).
    pub fn sample_during_with<T>(
        &self,
        interval: Duration,
        timed_steps: &(dyn Fn() -> Option<u64> + Sync),
        work: impl FnOnce() -> T,
    ) -> (T, Vec<GpuSample>) {
        let Ok(device) = self.device() else {
            return (work(), Vec::new());
        };
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        std::thread::scope(|scope| {
            let reader = scope.spawn(|| {
                let mut taken = Vec::new();
                loop {
                    let t_ms = start.elapsed().as_secs_f64() * 1e3;
                    let steps = timed_steps();
                    taken.push(self.sample(&device, t_ms, steps));
                    if stop.load(Ordering::Acquire) {
                        break;
                    }
                    // Sleep in short slices so that stopping takes at most ~10 ms.
                    let next = start.elapsed() + interval;
                    while start.elapsed() < next && !stop.load(Ordering::Acquire) {
                        std::thread::sleep(Duration::from_millis(10).min(interval));
                    }
                }
                taken
            });
            let out = work();
            stop.store(true, Ordering::Release);
            let samples = reader.join().unwrap_or_default();
            (out, samples)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_versions_print_as_nvidia_smi_does() {
        assert_eq!(cuda_version_text(12080), "12.8");
        assert_eq!(cuda_version_text(13000), "13.0");
        assert_eq!(cuda_version_text(12040), "12.4");
    }

    #[test]
    fn missing_nvml_is_a_typed_error() {
        match GpuMonitor::open(&DeviceSelector::Index(0)) {
            // A machine with a GPU: the fingerprint names it.
            Ok(monitor) => assert!(!monitor.fingerprint().expect("fingerprint").name.is_empty()),
            Err(err) => assert!(
                matches!(err, GpuError::NoNvml { .. } | GpuError::Nvml { .. }),
                "{err}"
            ),
        }
    }

    #[test]
    #[ignore = "needs a GPU: scripts/gpu-check.sh runs it"]
    fn sampling_on_a_gpu_brackets_the_work() {
        let monitor = GpuMonitor::open(&DeviceSelector::Index(0)).expect("NVML on a GPU runner");
        let (value, samples) = monitor.sample_during(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_millis(300));
            7
        });
        assert_eq!(value, 7);
        assert!(samples.len() >= 4, "{} samples", samples.len());
        assert!(samples.windows(2).all(|w| w[0].t_ms <= w[1].t_ms));
        assert!(samples.iter().any(|s| s.sm_clock_mhz.is_some()));
    }
}
