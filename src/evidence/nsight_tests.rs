//! Tests of the reading guide and the per-kernel diffs of Nsight evidence.

use super::*;
use crate::evidence::ncu::parse;

const RAW: &str = include_str!("../../tests/fixtures/nsight_compute/vectoradd_raw.csv");

fn kernel(dram: Option<f64>, sm: Option<f64>, occ: Option<f64>, tensor: Option<f64>) -> NcuKernel {
    let mut k = parse(RAW).expect("raw").kernels.remove(0);
    (k.dram_pct, k.sm_pct, k.occupancy_pct, k.tensor_pct) = (dram, sm, occ, tensor);
    k
}

#[test]
fn the_reading_guide_names_the_case_with_its_numbers() {
    let done = reading(&kernel(Some(92.5), Some(20.0), Some(70.0), None));
    assert!(
        done[0].contains("92.5%") && done[0].contains("read fewer bytes"),
        "{done:?}"
    );
    let tiny = reading(&kernel(Some(1.7), Some(0.1), Some(3.0), None));
    assert!(
        tiny[0].contains("launch configuration or tiny shapes"),
        "{tiny:?}"
    );
    assert!(tiny[0].contains("grid 1, block 1024"), "{tiny:?}");
    let stalled = reading(&kernel(Some(20.0), Some(15.0), Some(80.0), None));
    assert!(stalled[0].contains("access patterns"), "{stalled:?}");
    let prefill = reading(&kernel(Some(40.0), Some(85.0), Some(60.0), Some(71.2)));
    assert!(
        prefill[0].contains("tensor-core utilisation, 71.2%"),
        "{prefill:?}"
    );
    // The real Pascal file: no occupancy collected, and it says so.
    let real = reading(&parse(RAW).expect("raw").kernels[0]);
    assert!(
        real[0].contains("occupancy missing") && real[0].contains("DRAM 1.7%"),
        "{real:?}"
    );
}

#[test]
fn the_ncu_diff_pairs_kernels_by_name_with_duration_and_throughput() {
    let then = parse(RAW).expect("raw");
    let mut now = then.clone();
    for k in &mut now.kernels {
        k.duration_ns = k.duration_ns.map(|d| d * 1.5);
        k.dram_pct = Some(50.0);
    }
    now.kernels[0].name = "other".into();
    let d = ncu_diff(&then, &now);
    let v = d.iter().find(|c| c.name == "vecAdd").expect("vecAdd");
    assert_eq!((v.count_then, v.count_now), (3, 2));
    assert_eq!(v.duration_change_ns(), Some(1360.0));
    assert!((v.duration_change_ratio().expect("ratio") - 0.5).abs() < 1e-12);
    assert!((v.dram_then_pct.expect("then") - (1.67 + 0.74 + 0.43) / 3.0).abs() < 1e-9);
    assert_eq!(v.dram_now_pct, Some(50.0));
    let o = d.iter().find(|c| c.name == "other").expect("other");
    assert_eq!((o.count_then, o.duration_then_ns), (0, None));
}
