//! Tests of `cuda`.

use super::*;
use crate::case::Phase;
use crate::catalog::{Precision, model_by_name};
use crate::measure::reference::ReferencePlan;

fn gpu_tests() -> bool {
    #[expect(clippy::disallowed_methods, reason = "GPU tests are opt-in")]
    let wanted = std::env::var_os("UTILGATE_GPU_TESTS").is_some();
    wanted
}

#[test]
fn opening_without_a_driver_is_the_documented_error() {
    if require_cuda_libraries().is_ok() {
        return;
    }
    let err = CudaDevice::open(0).err().expect("no libraries, no device");
    assert!(
        matches!(err, GpuError::NoDriver | GpuError::MissingLibrary { .. }),
        "{err}"
    );
}

#[test]
fn reference_decode_runs_and_times_steps_on_a_gpu() {
    if !gpu_tests() {
        return;
    }
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
fn probes_measure_positive_rates_on_a_gpu() {
    if !gpu_tests() {
        return;
    }
    let dev = CudaDevice::open(0).expect("a GPU runner");
    let copy = dev.probe_copy(1 << 28, 5).expect("copy");
    let gemm = dev.probe_gemm(2048, 5).expect("gemm");
    assert!(copy.iter().chain(&gemm).all(|t| *t > 0.0));
}
