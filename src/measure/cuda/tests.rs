//! Tests of `cuda`.

use super::*;
use crate::case::Phase;
use crate::catalog::{Precision, model_by_name};
use crate::measure::reference::ReferencePlan;

#[test]
fn opening_is_a_device_or_the_documented_error() {
    // Every library loads: device 0 opens (a GPU machine). Otherwise the documented error.
    if require_cuda_libraries().is_ok() {
        let dev = CudaDevice::open(0).expect("the libraries load, so device 0 opens");
        assert!(!dev.versions().expect("versions").device.is_empty());
    } else {
        let err = CudaDevice::open(0).err().expect("no libraries, no device");
        assert!(
            matches!(err, GpuError::NoDriver | GpuError::MissingLibrary { .. }),
            "{err}"
        );
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh runs it"]
fn reference_decode_runs_and_times_steps_on_a_gpu() {
    let dev = CudaDevice::open(0).expect("a GPU runner");
    let versions = dev.versions().expect("versions");
    assert!(!versions.device.is_empty());
    let model = model_by_name("qwen2-7b").expect("catalogue");
    let p = Precision::parse("bf16", None).expect("bf16");
    for (phase, graphs) in [
        (Phase::Decode, false),
        (Phase::Decode, true),
        (Phase::Prefill, false),
    ] {
        let plan = ReferencePlan::new("qwen2-7b", &model, &p, phase, 2, 512).expect("plan");
        let mut times = Vec::new();
        dev.run_reference(&plan, graphs, 2, 5, &mut |ms, warm| {
            if !warm {
                times.push(ms);
            }
        })
        .expect("runs");
        assert_eq!(times.len(), 5);
        assert!(times.iter().all(|t| t.is_finite() && *t > 0.0), "{times:?}");
    }
}

#[test]
#[ignore = "needs a GPU: scripts/gpu-check.sh runs it"]
fn probes_measure_positive_rates_on_a_gpu() {
    let dev = CudaDevice::open(0).expect("a GPU runner");
    let copy = dev.probe_copy(1 << 28, 5).expect("copy");
    let gemm = dev.probe_gemm(2048, 5).expect("gemm");
    assert!(copy.iter().chain(&gemm).all(|t| *t > 0.0));
}
