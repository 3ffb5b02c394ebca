//! The declared-device rule: how a `[gpu]` table (or `--gpu`) becomes a [`GpuSpec`]. Pure.
//!
//! - A name in the catalogue selects that entry; any declared figures override it.
//! - A name not in the catalogue, with a declared bandwidth, declares a device of that name
//!   (the name is its SKU in the store, the reports and the comment marker).
//! - A name not in the catalogue without a bandwidth is an unknown GPU (the hint says how to
//!   declare one).
//! - No name, with a bandwidth: a device named [`DECLARED_GPU`].

use std::collections::BTreeMap;

use super::{CatalogError, GpuSpec, gpu};

/// The SKU of a device declared by figures alone, without a name.
pub const DECLARED_GPU: &str = "declared-gpu";

/// A device's figures as a config declares them: bandwidth in GB/s, dense peaks in TFLOP/s by
/// compute dtype, memory in GB (decimal units).
#[derive(Debug, Clone, Copy)]
pub struct DeclaredFigures<'a> {
    pub mem_bandwidth_gb_s: Option<f64>,
    pub dense_tflops: &'a BTreeMap<String, f64>,
    pub memory_gb: Option<f64>,
}

/// Apply the rule above. `None` when there is neither a name nor a bandwidth.
pub fn declare_device(
    name: Option<&str>,
    figures: DeclaredFigures<'_>,
) -> Result<Option<GpuSpec>, CatalogError> {
    let DeclaredFigures {
        mem_bandwidth_gb_s,
        dense_tflops,
        memory_gb,
    } = figures;
    match (name, mem_bandwidth_gb_s) {
        (Some(name), bandwidth) => match gpu::gpu_by_name(name) {
            Some(entry) => entry
                .with_overrides(bandwidth, dense_tflops, memory_gb)
                .map(Some),
            None => match bandwidth {
                Some(bw) => GpuSpec::declared(name.trim(), bw, dense_tflops, memory_gb).map(Some),
                None => gpu::resolve_gpu(name).map(Some),
            },
        },
        (None, Some(bw)) => GpuSpec::declared(DECLARED_GPU, bw, dense_tflops, memory_gb).map(Some),
        (None, None) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ComputeDtype;

    fn figures(bw: Option<f64>, tflops: &BTreeMap<String, f64>) -> DeclaredFigures<'_> {
        DeclaredFigures {
            mem_bandwidth_gb_s: bw,
            dense_tflops: tflops,
            memory_gb: None,
        }
    }

    #[test]
    fn a_catalogue_name_selects_the_entry_and_figures_override_it() {
        let tflops = BTreeMap::from([("bf16".to_owned(), 500.0)]);
        let spec = declare_device(Some("h100-sxm"), figures(Some(2000.0), &tflops))
            .expect("valid")
            .expect("a spec");
        assert_eq!(spec.name, "h100-sxm");
        assert!((spec.mem_bandwidth_bytes_per_s - 2.0e12).abs() < 1.0);
        assert_eq!(spec.peak_flops(ComputeDtype::Bf16), Some(500.0e12));
        assert!(
            spec.peak_flops(ComputeDtype::Fp8).is_some(),
            "the rest stays"
        );
    }

    #[test]
    fn an_unknown_name_with_figures_declares_a_device_of_that_name() {
        let tflops = BTreeMap::from([("bf16".to_owned(), 10.0)]);
        for memory_gb in [None, Some(64.0)] {
            let spec = declare_device(
                Some("lab-cpu"),
                DeclaredFigures {
                    memory_gb,
                    ..figures(Some(800.0), &tflops)
                },
            )
            .expect("valid")
            .expect("a spec");
            assert_eq!(spec.name, "lab-cpu");
            assert_eq!(spec.source, "declared in config");
            assert_eq!(spec.peak_flops(ComputeDtype::Bf16), Some(10.0e12));
        }
    }

    #[test]
    fn an_unknown_name_without_figures_stays_an_error() {
        let none = BTreeMap::new();
        let err = declare_device(Some("lab-cpu"), figures(None, &none)).expect_err("unknown");
        assert!(matches!(err, CatalogError::UnknownGpu { .. }), "{err}");
        let tflops = BTreeMap::from([("bf16".to_owned(), 10.0)]);
        assert!(declare_device(Some("lab-cpu"), figures(None, &tflops)).is_err());
    }

    #[test]
    fn figures_alone_declare_the_default_name() {
        let none = BTreeMap::new();
        let spec = declare_device(None, figures(Some(100.0), &none))
            .expect("valid")
            .expect("a spec");
        assert_eq!(spec.name, DECLARED_GPU);
        assert!(
            declare_device(None, figures(None, &none))
                .expect("ok")
                .is_none()
        );
        assert!(declare_device(Some("x"), figures(Some(-1.0), &none)).is_err());
    }
}
