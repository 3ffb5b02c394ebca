//! Tests of the Nsight Compute reader on real `ncu --csv` output (`tests/fixtures/nsight_compute/`).

use super::*;

const RAW: &str = include_str!("../../tests/fixtures/nsight_compute/vectoradd_raw.csv");
const WITH_PREAMBLE: &str =
    include_str!("../../tests/fixtures/nsight_compute/vectoradd_raw_with_preamble.txt");

/// The details-page layout (one row per metric). No licensed real sample of this page exists
/// in the format samples, so this is written in ncu's column layout, with µs and Gbyte/s units.
const DETAILS: &str = r#"==PROF== Connected to process 4242 (/usr/bin/python3.12)
==PROF== Profiling "gemv_kernel": 0%....50%....100% - 38 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","91.52"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","usecond","1,234.50"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Memory Throughput","%","91.52"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","22.10"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","Memory Workload Analysis","Memory Throughput","Tbyte/second","4.41"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","40"
"0","4242","python3.12","127.0.0.1","gemv_kernel","1","7","(128, 1, 1)","(4,096, 1, 1)","0","9.0","Occupancy","Achieved Occupancy","%","85.30"
"1","4242","python3.12","127.0.0.1","tiny_kernel","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","msecond","0.002"
"1","4242","python3.12","127.0.0.1","tiny_kernel","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","n/a"
"#;

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-9 * b.abs().max(1.0))
}

#[test]
fn the_raw_page_gives_per_kernel_numbers_with_units_and_separators() {
    let r = parse(RAW).expect("raw page");
    assert_eq!(r.page, Page::Raw);
    assert_eq!(r.kernels.len(), 3);
    let ids: Vec<&str> = r.kernels.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, ["0", "1", "2"]);
    let k = &r.kernels[0];
    assert_eq!(k.name, "vecAdd");
    assert!(close(k.duration_ns, 2720.0), "{k:?}");
    // Pascal-era names: fbpa__sol_pct, gpu__compute_memory_sol_pct, sm__sol_pct.
    assert!(close(k.dram_pct, 1.67), "{k:?}");
    assert!(close(k.memory_pct, 3.01), "{k:?}");
    assert!(close(k.sm_pct, 0.09), "{k:?}");
    assert!(close(k.dram_bytes_per_s, 2_917_647_058.82), "{k:?}");
    assert!(close(k.registers_per_thread, 8.0), "{k:?}");
    assert_eq!(k.grid.as_deref(), Some("1"));
    assert_eq!(k.block.as_deref(), Some("1024"));
    // Not collected on that GPU: missing, not zero.
    assert_eq!(k.occupancy_pct, None);
    assert_eq!(k.tensor_pct, None);
    assert!(close(r.kernels[2].dram_pct, 0.43));
}

#[test]
fn the_bare_csv_and_the_one_with_a_preamble_give_the_same_table() {
    assert!(
        WITH_PREAMBLE.starts_with("grid:"),
        "the fixture has its preamble"
    );
    assert_eq!(
        parse(RAW).expect("bare"),
        parse(WITH_PREAMBLE).expect("preamble")
    );
}

#[test]
fn the_details_page_is_read_per_launch_with_units_scaled() {
    let r = parse(DETAILS).expect("details page");
    assert_eq!(r.page, Page::Details);
    assert_eq!(r.kernels.len(), 2);
    let k = &r.kernels[0];
    assert_eq!(k.name, "gemv_kernel");
    assert!(close(k.duration_ns, 1_234_500.0), "{k:?}");
    assert!(close(k.dram_pct, 91.52));
    assert!(close(k.memory_pct, 91.52));
    assert!(close(k.sm_pct, 22.1));
    assert!(close(k.dram_bytes_per_s, 4.41e12));
    assert!(close(k.occupancy_pct, 85.3));
    assert!(close(k.registers_per_thread, 40.0));
    assert_eq!(k.grid.as_deref(), Some("(4,096, 1, 1)"));
    assert_eq!(k.block.as_deref(), Some("(128, 1, 1)"));
    let t = &r.kernels[1];
    assert!(close(t.duration_ns, 2000.0), "{t:?}");
    assert_eq!(t.dram_pct, None, "n/a is missing");
    assert_eq!(t.sm_pct, None);
}

#[test]
fn an_unknown_unit_leaves_the_metric_missing_with_a_note() {
    let text = DETAILS.replace("\"usecond\"", "\"fortnight\"");
    let r = parse(&text).expect("parses");
    assert_eq!(r.kernels[0].duration_ns, None);
    assert!(
        r.notes.iter().any(|n| n.contains("fortnight")),
        "{:?}",
        r.notes
    );
}

#[test]
fn text_without_a_header_or_with_an_unknown_layout_is_an_error() {
    assert!(matches!(
        parse("hello\n==PROF== x\n"),
        Err(NcuError::NoHeader)
    ));
    let e = parse("\"ID\",\"Kernel Name\",\"foo\"\n\"0\",\"k\",\"1\"\n").expect_err("layout");
    assert!(matches!(e, NcuError::UnknownLayout));
    assert!(e.hint().is_some());
    assert!(matches!(
        parse("\"ID\",\"Name\"\n"),
        Err(NcuError::MissingColumn {
            column: "Kernel Name"
        })
    ));
    assert!(looks_like(RAW) && looks_like(WITH_PREAMBLE) && looks_like(DETAILS));
    assert!(!looks_like("{\"traceEvents\": []}"));
}
