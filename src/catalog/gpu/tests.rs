//! Tests of `gpu`.

use super::*;

#[test]
fn nvml_names_select_the_exact_part() {
    let cases = [
        ("NVIDIA H100 80GB HBM3", Some("h100-sxm")),
        ("NVIDIA H100 PCIe", Some("h100-pcie")),
        ("NVIDIA H100 NVL", Some("h100-nvl")),
        ("NVIDIA H200", Some("h200")),
        ("NVIDIA H200 NVL", Some("h200-nvl")),
        ("NVIDIA A100-SXM4-80GB", Some("a100-80gb")),
        ("NVIDIA A100-SXM4-40GB", Some("a100-40gb")),
        ("NVIDIA A100-PCIE-40GB", Some("a100-40gb")),
        ("NVIDIA A100 80GB PCIe", Some("a100-80gb-pcie")),
        ("NVIDIA A10", Some("a10")),
        ("NVIDIA L4", Some("l4")),
        ("NVIDIA L40S", Some("l40s")),
        ("NVIDIA L40", None),
        ("NVIDIA B200", Some("b200")),
        ("NVIDIA GB200", Some("gb200")),
        ("AMD Instinct MI300X", Some("mi300x")),
        ("NVIDIA GeForce RTX 4090", Some("rtx-4090")),
        ("  nvidia   h100 80gb hbm3 ", Some("h100-sxm")),
        ("NVIDIA GeForce RTX 3090", None),
        ("", None),
    ];
    for (nvml, slug) in cases {
        let got = gpu_from_nvml_name(nvml).map(|g| g.name);
        assert_eq!(got.as_deref(), slug, "{nvml:?}");
    }
}

#[test]
fn catalogue_is_dense_and_complete() {
    let required = [
        "h100-sxm",
        "h100-pcie",
        "h200",
        "a100-40gb",
        "a100-80gb",
        "l4",
        "l40s",
        "b200",
        "gb200",
        "mi300x",
        "rtx-4090",
        "b300",
        "gb300",
        "mi350x",
        "mi355x",
        "h20",
        "rtx-pro-6000",
        "rtx-5090",
    ];
    for slug in required {
        let gpu = gpu_by_name(slug).unwrap_or_else(|| panic!("{slug} missing"));
        assert!(gpu.mem_bandwidth_bytes_per_s > 1e11, "{slug}");
        assert!(gpu.memory_bytes.expect("should succeed") >= 24e9, "{slug}");
        assert!(gpu.peak_flops(ComputeDtype::Bf16).is_some(), "{slug}");
        assert!(!gpu.source.is_empty());
    }
    // Slugs are unique and every pattern selects its own entry.
    let slugs = known_gpus();
    let mut sorted = slugs.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), slugs.len());
    for entry in CATALOGUE {
        for pattern in entry.nvml {
            assert_eq!(
                gpu_from_nvml_name(pattern).expect("should succeed").name,
                entry.slug,
                "{pattern}"
            );
        }
    }
}

#[test]
fn datasheet_figures_are_dense() {
    let h100 = gpu_by_name("h100-sxm").expect("should succeed");
    assert_eq!(h100.mem_bandwidth_bytes_per_s, 3.35e12);
    assert_eq!(h100.peak_flops(ComputeDtype::Bf16), Some(989.4e12));
    assert_eq!(h100.peak_flops(ComputeDtype::Fp8), Some(1978.9e12));
    let a100 = gpu_by_name("a100-80gb").expect("should succeed");
    assert_eq!(a100.peak_flops(ComputeDtype::Fp8), None);
    assert_eq!(a100.peak_flops(ComputeDtype::Bf16), Some(312e12));
    // Dense fp8 is about twice dense bf16 (L40S datasheet: 733 vs 362.05); a sparse fp8
    // figure would be four times.
    for slug in known_gpus() {
        let g = gpu_by_name(slug).expect("should succeed");
        let bf16 = g.peak_flops(ComputeDtype::Bf16).expect("should succeed");
        if let Some(fp8) = g.peak_flops(ComputeDtype::Fp8) {
            assert!(fp8 <= 2.1 * bf16, "{slug}");
        }
        if let Some(tf32) = g.peak_flops(ComputeDtype::Tf32) {
            assert!(tf32 <= bf16, "{slug}");
        }
    }
}

/// FP4 peaks as the datasheets print them (dense, or the sparse figure halved), and none
/// before Blackwell and CDNA 4.
#[test]
fn fp4_peaks_are_dense_and_only_where_the_part_has_fp4() {
    let fp4 = |slug: &str| {
        gpu_by_name(slug)
            .expect("catalogue entry")
            .peak_flops(ComputeDtype::Fp4)
    };
    // HGX B200: 18 PF sparse per GPU -> 9 PF dense.
    assert_eq!(fp4("b200"), Some(18.0e15 / 2.0));
    // GB200 NVL72: 1,440 PF sparse over 72 GPUs -> 20 PF sparse, 10 dense.
    assert_eq!(fp4("gb200"), Some(1440.0e15 / 72.0 / 2.0));
    // HGX B300: 105 PF dense over 8 GPUs.
    assert_eq!(fp4("b300"), Some(105.0e15 / 8.0));
    // GB300 NVL72: 1,080 PF dense over 72 GPUs.
    assert_eq!(fp4("gb300"), Some(1080.0e15 / 72.0));
    // MI355X: MXFP4 10.1 PF dense; RTX 5090: 3,352 sparse AI TOPS / 2.
    assert_eq!(fp4("mi355x"), Some(10_066.4e12));
    assert_eq!(fp4("rtx-5090"), Some(3352.0e12 / 2.0));
    for slug in ["h100-sxm", "h200", "h20", "a100-80gb", "mi300x", "rtx-4090"] {
        assert_eq!(fp4(slug), None, "{slug}");
    }
    // Dense FP4 is at most 3x the full-rate 8-bit peak (Blackwell Ultra's 1.5x FP4 boost over
    // 2x); a sparse figure taken by mistake would be at least 4x. GeForce parts run FP8 with
    // FP32 accumulate at half rate, so their full-rate 8-bit peak is INT8's.
    for slug in known_gpus() {
        let g = gpu_by_name(slug).expect("catalogue entry");
        let eight_bit = g
            .peak_flops(ComputeDtype::Fp8)
            .into_iter()
            .chain(g.peak_flops(ComputeDtype::Int8))
            .fold(0.0, f64::max);
        if let Some(f4) = g.peak_flops(ComputeDtype::Fp4) {
            assert!(f4 <= 3.0 * eight_bit, "{slug}");
        }
    }
}

#[test]
fn every_entry_names_its_interconnect() {
    for g in catalogue() {
        let link = g.interconnect.as_ref().expect("every entry has a link");
        assert!(link.bytes_per_s >= 32e9, "{}", g.name);
    }
    // NVLink 4: 900 GB/s bidirectional, 450 each way; NVLink 5 twice that.
    let h100 = gpu_by_name("h100-sxm").expect("catalogue entry");
    assert_eq!(h100.interconnect.expect("link").bytes_per_s, 900e9 / 2.0);
    let b200 = gpu_by_name("b200").expect("catalogue entry");
    assert_eq!(b200.interconnect.expect("link").bytes_per_s, 1800e9 / 2.0);
    let declared = h100_pcie().with_interconnect(100.0).expect("valid");
    assert_eq!(declared.interconnect.expect("link").bytes_per_s, 100e9);
    assert!(h100_pcie().with_interconnect(-1.0).is_err());
}

fn h100_pcie() -> GpuSpec {
    gpu_by_name("h100-pcie").expect("catalogue entry")
}

#[test]
fn slug_lookup_is_forgiving_and_falls_back_to_nvml() {
    assert_eq!(
        gpu_by_name("H100_SXM").expect("should succeed").name,
        "h100-sxm"
    );
    assert_eq!(
        gpu_by_name("NVIDIA H200").expect("should succeed").name,
        "h200"
    );
    assert!(gpu_by_name("tpu-v5").is_none());
    let err = resolve_gpu("tpu-v5").expect_err("should fail");
    let text = err.to_string();
    assert!(
        text.contains("tpu-v5") && text.contains("h100-sxm"),
        "{text}"
    );
    assert!(
        err.hint()
            .expect("should succeed")
            .contains("mem_bandwidth_gb_s")
    );
}

#[test]
fn overrides_and_declarations() {
    let mut tflops = BTreeMap::new();
    tflops.insert("bf16".to_string(), 900.0);
    let gpu = gpu_by_name("h100-sxm")
        .expect("should succeed")
        .with_overrides(Some(3000.0), &tflops, None)
        .expect("should succeed");
    assert_eq!(gpu.mem_bandwidth_bytes_per_s, 3.0e12);
    assert_eq!(gpu.peak_flops(ComputeDtype::Bf16), Some(900e12));
    assert_eq!(gpu.peak_flops(ComputeDtype::Fp8), Some(1978.9e12));
    assert!(gpu.source.contains("overridden"));

    let gpu = GpuSpec::declared("my-gpu", 1000.0, &tflops, Some(48.0)).expect("should succeed");
    assert_eq!(gpu.name, "my-gpu");
    assert_eq!(gpu.mem_bandwidth_bytes_per_s, 1e12);
    assert_eq!(gpu.memory_bytes, Some(48e9));
    assert_eq!(gpu.dense_flops.available(), vec![ComputeDtype::Bf16]);

    let mut bad = BTreeMap::new();
    bad.insert("fp64".to_string(), 1.0);
    assert!(GpuSpec::declared("x", 1.0, &bad, None).is_err());
    assert!(GpuSpec::declared("x", -1.0, &BTreeMap::new(), None).is_err());
    assert!(GpuSpec::declared("x", f64::NAN, &BTreeMap::new(), None).is_err());
    let mut zero = BTreeMap::new();
    zero.insert("bf16".to_string(), 0.0);
    let err = GpuSpec::declared("x", 1.0, &zero, None)
        .expect_err("should fail")
        .to_string();
    assert!(err.contains("dense_tflops.bf16"), "{err}");
}
