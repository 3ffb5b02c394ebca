//! `utilgate probe`: measure this GPU's achievable peaks (DESIGN.md §2) — a large
//! device-to-device copy (bytes read plus bytes written over its event time) and a large bf16
//! GEMM on random data (2·n³ FLOPs over its event time) — store them per GPU SKU and print
//! them beside the datasheet figures. Sequences I/O (CUDA, NVML, the store, stdout).

use crate::catalog::{ComputeDtype, GpuSpec};
use crate::cli::{Format, ProbeArgs};
use crate::error::Error;
use crate::gpu::nvml::GpuMonitor;
use crate::gpu::state::select_device;
use crate::measure::cuda::CudaDevice;
use crate::outcome::Outcome;
use crate::pipeline::context::env_lookup;
use crate::pipeline::context::open_store;
use crate::report::probe::{COPY_KIND, GEMM_KIND, ProbeFigure, ProbeReport, figure, render_human};
use crate::store::NewProbe;

const MIB: u64 = 1 << 20;

/// The datasheet spec: `--gpu`, else the config's `[gpu] name`, else the device name.
fn datasheet(args: &ProbeArgs, device_name: &str) -> Result<Option<GpuSpec>, Error> {
    if let Some(name) = &args.gpu {
        return Ok(Some(crate::catalog::gpu::resolve_gpu(name)?));
    }
    if let Ok(loaded) = crate::config::load(&args.config.config)
        && let Some(name) = loaded.config.gpu.as_ref().and_then(|g| g.name.as_ref())
        && let Some(spec) = crate::catalog::gpu_by_name(name)
    {
        return Ok(Some(spec));
    }
    Ok(crate::catalog::gpu_from_nvml_name(device_name))
}

pub fn probe(args: &ProbeArgs) -> Result<Outcome, Error> {
    let device = CudaDevice::open(0)?;
    let env = env_lookup();
    let nvml_name = GpuMonitor::open(&select_device(env("CUDA_VISIBLE_DEVICES").as_deref()))
        .and_then(|m| m.name())
        .ok();
    let versions = device.versions()?;
    let device_name = nvml_name.unwrap_or_else(|| versions.device.clone());
    let spec = datasheet(args, &device_name)?;
    let gpu_sku = spec
        .as_ref()
        .map_or_else(|| device_name.clone(), |s| s.name.clone());

    let (free, _) = device.memory()?;
    let copy_bytes = match args.copy_mib {
        Some(mib) => mib * MIB,
        None => (4096 * MIB).min(free as u64 / 4 / MIB * MIB),
    }
    .max(MIB);
    let copy_times = device.probe_copy(copy_bytes, args.iters)?;
    let n = args.gemm_n;
    let gemm_times = device.probe_gemm(n, args.iters)?;
    let figures: Vec<ProbeFigure> = [
        figure(
            COPY_KIND,
            2.0 * copy_bytes as f64,
            &copy_times,
            spec.as_ref().map(|s| s.mem_bandwidth_bytes_per_s),
        ),
        figure(
            GEMM_KIND,
            2.0 * (n as f64).powi(3),
            &gemm_times,
            spec.as_ref().and_then(|s| s.peak_flops(ComputeDtype::Bf16)),
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    let report = ProbeReport {
        schema_version: 1,
        device: device_name,
        gpu_sku,
        figures,
    };

    if !args.no_store {
        let store_path = match &args.config.db {
            Some(p) => p.clone(),
            None => crate::config::load(&args.config.config)?.store_path(None),
        };
        let mut store = open_store(&store_path, 10.0)?;
        #[expect(clippy::disallowed_methods, reason = "edge: a command reads the clock")]
        let now = jiff::Timestamp::now();
        for f in &report.figures {
            store.insert_probe(&NewProbe {
                gpu_sku: report.gpu_sku.clone(),
                measured_at: now,
                kind: f.kind.to_owned(),
                value: f.value,
                json: serde_json::to_value(serde_json::json!({
                    "figure": f,
                    "device": report.device,
                    "versions": versions.env(),
                }))
                .ok(),
            })?;
        }
    }
    match args.format.format {
        Format::Human => crate::output::emit(&render_human(&report))?,
        Format::Json => crate::output::emit(&(serde_json::to_string_pretty(&report)? + "\n"))?,
    }
    Ok(Outcome::Passed)
}
