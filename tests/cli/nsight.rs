//! Nsight evidence through the binary: `utilgate trace show|diff` on a real Nsight Systems
//! export and real `ncu --csv` files (tests/fixtures/nsight_*), recognised by content.

use std::io::Read as _;
use std::path::PathBuf;

use crate::env::{TestEnv, stderr, stdout};

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Writes the gzipped `CloverLeaf` export as `name` (no .sqlite extension needed: content counts).
fn export(env: &TestEnv, name: &str) -> PathBuf {
    let gz = std::fs::read(fixture("nsight_systems/cloverleaf.sqlite.gz")).expect("fixture");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut bytes)
        .expect("gunzip");
    let path = env.path().join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

fn trace(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.std_cmd()
        .arg("trace")
        .args(args)
        .output()
        .expect("runs")
}

#[test]
fn trace_show_prints_the_nsys_kernel_summary_in_text_and_json() {
    let env = TestEnv::new();
    let file = export(&env, "clover.export");
    let file = file.to_str().expect("utf-8");
    let out = trace(&env, &["show", file]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    // nsys stats groups by demangled name: 102 template instances of 3 short names; their
    // durations add up to 294,404,540 ns (SELECT sum(end - start) on the kernel table).
    assert!(
        text.contains("1312 kernel launches of 102 kernels, total kernel time 294.405 ms (the sum of their durations) over 342.3 ms"),
        "{text}"
    );
    // The per-step analysis a run stores, here the whole export as one step (no NVTX ranges):
    // 1312 cudaDeviceSynchronize and 279 blocking cudaMemcpy calls, 25 of them device-to-host.
    assert!(
        text.contains("step analysis (no NVTX step range: the whole export as one step, as a run stores it):\n  per step (whole trace, 1 of 1 ranges): wall "),
        "{text}"
    );
    assert!(
        text.contains("host sync calls 1591.0 (1312.0 device synchronize, 279.0 blocking cudaMemcpy), DtoH copies 25.0"),
        "{text}"
    );
    assert!(text.contains("kernels (cuda_gpu_kern_sum)"), "{text}");
    assert!(text.contains("[CUDA memcpy Host-to-Device]"), "{text}");
    assert!(text.contains("no NVTX_EVENTS table"), "{text}");

    let out = trace(&env, &["show", file, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["kind"], "nsys");
    assert_eq!(v["summary"]["kernel_total_ns"], 294_404_540.0);
    assert_eq!(v["steps"]["analysis"]["step"]["device_syncs"], 1312.0);
    assert_eq!(v["steps"]["analysis"]["step"]["blocking_copies"], 279.0);
    let kernels = v["summary"]["kernels"].as_array().expect("kernels");
    let counts: u64 = kernels
        .iter()
        .map(|k| k["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(counts, 1312);
    assert_eq!(kernels.len(), 102);
    assert_eq!(kernels[0]["total"], 19_404_589.0);
    assert_eq!(kernels[0]["count"], 10);
}

#[test]
fn trace_show_reads_ncu_csv_with_the_reading_guide_and_missing_metrics() {
    let env = TestEnv::new();
    for name in [
        "nsight_compute/vectoradd_raw.csv",
        "nsight_compute/vectoradd_raw_with_preamble.txt",
    ] {
        let f = fixture(name);
        let out = trace(&env, &["show", f.to_str().expect("utf-8")]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("raw page, 3 kernel launches"), "{text}");
        assert!(
            text.contains("#0 vecAdd: duration 2.72 µs, DRAM 1.7%"),
            "{text}"
        );
        assert!(text.contains("achieved occupancy missing"), "{text}");
        assert!(text.contains("reading: low throughput"), "{text}");
    }
    let f = fixture("nsight_compute/vectoradd_raw_with_preamble.txt");
    let out = trace(
        &env,
        &["show", f.to_str().expect("utf-8"), "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["kind"], "ncu");
    assert_eq!(v["report"]["kernels"][0]["duration_ns"], 2720.0);
    assert!(v["report"]["kernels"][0]["occupancy_pct"].is_null());
}

#[test]
fn trace_diff_gives_per_kernel_then_vs_now_for_ncu_and_nsys() {
    let env = TestEnv::new();
    let raw = std::fs::read_to_string(fixture("nsight_compute/vectoradd_raw.csv")).expect("raw");
    let then = env.write("then.csv", &raw);
    // The same kernel, slower and with more DRAM traffic: duration 2,720 -> 4,080 ns.
    let now = env.write(
        "now.csv",
        &raw.replace("\"2,720.00\"", "\"4,080.00\"")
            .replace("\"1.67\"", "\"91.67\""),
    );
    let out = trace(
        &env,
        &["diff", then.to_str().expect("p"), now.to_str().expect("p")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("ncu diff"), "{text}");
    assert!(text.contains("2.72 µs -> 4.08 µs (+50.0%)"), "{text}");
    assert!(text.contains("DRAM 0.9% -> 30.9%"), "{text}");

    let a = export(&env, "a.sqlite");
    let b = export(&env, "b.sqlite");
    let out = trace(
        &env,
        &[
            "diff",
            a.to_str().expect("p"),
            b.to_str().expect("p"),
            "--format",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["kind"], "nsys");
    assert_eq!(v["kernels"].as_array().map(Vec::len), Some(102));
    assert_eq!(v["kernels"][0]["count_then"], v["kernels"][0]["count_now"]);

    // Files of two kinds: an error with the fix.
    let out = trace(
        &env,
        &["diff", then.to_str().expect("p"), a.to_str().expect("p")],
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr(&out).contains("same kind"), "{}", stderr(&out));
}

#[test]
fn a_truncated_nsys_export_is_an_error_naming_the_file_and_the_fix() {
    let env = TestEnv::new();
    let full = std::fs::read(export(&env, "full.sqlite")).expect("read");
    let cut = env.path().join("cut.sqlite");
    std::fs::write(&cut, &full[..full.len() / 3]).expect("write");
    let out = trace(&env, &["show", cut.to_str().expect("p")]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cut.sqlite") && err.contains("nsys export"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// A text or empty file named `.sqlite` got the torch.profiler hint ("torch.profiler writes
/// {"traceEvents": [...]}"): it is read as the export it is named as, and the error says what it
/// holds and how to make an export.
#[test]
fn a_file_named_sqlite_that_is_not_one_gets_the_exports_fix() {
    let env = TestEnv::new();
    for (name, text, says) in [
        ("empty.sqlite", "", "is not an SQLite file: it is empty"),
        (
            "notes.sqlite",
            "kernel,time\n",
            "is not an SQLite file: it holds text",
        ),
    ] {
        let file = env.write(name, text);
        let out = trace(&env, &["show", file.to_str().expect("utf-8")]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("{} {says}", file.display())), "{err}");
        assert!(
            err.contains("hint: export the report with `nsys export --type sqlite --output report.sqlite report.nsys-rep`"),
            "{err}"
        );
        assert!(!err.contains("traceEvents"), "{err}");
    }
}
