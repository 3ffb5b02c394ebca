//! Tests of the Nsight Systems reader and summaries on real exports
//! (`tests/fixtures/nsight_systems/`: pipit's `CloverLeaf` export and its golden `gpu_trace` CSV).

#![expect(clippy::disallowed_methods, reason = "tests read their fixtures")]
#![expect(
    clippy::float_cmp,
    clippy::cast_possible_truncation,
    reason = "ns counts and byte sums are exact integers in f64; the golden writes them as floats"
)]

use std::collections::BTreeMap;
use std::io::Write as _;

use super::*;
use crate::evidence::nsys_sqlite::{NsysError, named_as_export, read};

const GOLDEN: &str =
    include_str!("../../tests/fixtures/nsight_systems/cloverleaf_gpu_trace.golden.csv");
const PUSHPOP: &str =
    include_str!("../../tests/fixtures/nsight_systems/nbody_nvtx_pushpop_trace.csv");
const EXPORT_GZ: &[u8] = include_bytes!("../../tests/fixtures/nsight_systems/cloverleaf.sqlite.gz");

/// The gzipped export, decompressed to a temporary file.
fn export_file() -> tempfile::NamedTempFile {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(EXPORT_GZ), &mut bytes)
        .expect("gunzip");
    let mut f = tempfile::NamedTempFile::new().expect("temp");
    f.write_all(&bytes).expect("write");
    f
}

/// (start, end, bytes) per name of the rows whose type passes `kind`, from pipit's golden CSV
/// (its Enter rows).
fn golden(kind: fn(&str) -> bool) -> BTreeMap<String, Vec<(i64, i64, Option<i64>)>> {
    let mut r = csv::Reader::from_reader(GOLDEN.as_bytes());
    let h = r.headers().expect("header").clone();
    let col = |n: &str| h.iter().position(|c| c == n).expect(n);
    let (name, ty, ev, ts, end, bytes) = (
        col("Name"),
        col("type"),
        col("Event Type"),
        col("Timestamp (ns)"),
        col("_matching_timestamp"),
        col("bytes"),
    );
    let mut out: BTreeMap<String, Vec<(i64, i64, Option<i64>)>> = BTreeMap::new();
    for rec in r.records() {
        let rec = rec.expect("row");
        if !kind(&rec[ty]) || &rec[ev] != "Enter" {
            continue;
        }
        let n = |i: usize| rec[i].parse::<f64>().expect("number") as i64;
        let b = (!rec[bytes].is_empty()).then(|| n(bytes));
        out.entry(rec[name].to_owned())
            .or_default()
            .push((n(ts), n(end), b));
    }
    for v in out.values_mut() {
        v.sort_unstable();
    }
    out
}

#[test]
fn the_kernel_summary_from_sqlite_equals_the_figures_from_the_golden_csv() {
    let f = export_file();
    let e = read(f.path()).expect("export reads");
    let want = golden(|t| t == "kernel");
    assert_eq!(want.values().map(Vec::len).sum::<usize>(), 1312);
    // Per kernel: the same names, and the same start/end ns, launch for launch.
    let mut got: BTreeMap<String, Vec<(i64, i64, Option<i64>)>> = BTreeMap::new();
    for k in &e.kernels {
        got.entry(k.short_name.clone())
            .or_default()
            .push((k.start_ns, k.end_ns, None));
    }
    for v in got.values_mut() {
        v.sort_unstable();
    }
    assert_eq!(got, want);
    // The summary's figures, against the same figures computed here from the golden rows.
    let sum = kernel_sum(&e, KernelName::Short);
    assert_eq!(sum.len(), 3);
    for s in &sum {
        let d: Vec<f64> = want[&s.name]
            .iter()
            .map(|(a, b, _)| (b - a) as f64)
            .collect();
        let total: f64 = d.iter().sum();
        assert_eq!(s.count, d.len() as u64, "{}", s.name);
        assert!((s.total - total).abs() < 1e-6, "{}", s.name);
        assert!((s.avg - total / d.len() as f64).abs() < 1e-6);
        assert_eq!(s.min, d.iter().copied().fold(f64::INFINITY, f64::min));
        assert_eq!(s.max, d.iter().copied().fold(0.0, f64::max));
        assert!(s.stddev >= 0.0 && s.median >= s.min && s.median <= s.max);
    }
    // nsys stats order: largest total first; the figures checked in the sqlite by hand.
    assert_eq!(sum[0].name, "par_ranged2d_kernel");
    assert_eq!((sum[0].count, sum[0].total), (331, 267_056_876.0));
    assert_eq!((sum[0].min, sum[0].max), (252_256.0, 1_946_587.0));
    assert_eq!(sum[2].name, "par_ranged1d_kernel");
    assert_eq!(sum[2].count, 968);
    let shares: f64 = sum.iter().map(|s| s.share_pct).sum();
    assert!((shares - 100.0).abs() < 1e-9);
}

#[test]
fn memory_runtime_and_sync_activity_is_summarised() {
    let f = export_file();
    let e = read(f.path()).expect("export reads");
    let s = summarise(&e);
    let want = golden(|t| t.starts_with("CUDA_MEMCPY_KIND_"));
    let golden_bytes: i64 = want.values().flatten().filter_map(|(_, _, b)| *b).sum();
    let golden_count: usize = want.values().map(Vec::len).sum();
    assert_eq!(golden_count, 279);
    let count: u64 = s.mem_size.iter().map(|m| m.count).sum();
    let bytes: f64 = s.mem_size.iter().map(|m| m.total).sum();
    assert_eq!(count, 279);
    assert_eq!(bytes, golden_bytes as f64);
    let htod = s
        .mem_time
        .iter()
        .find(|m| m.name == "[CUDA memcpy Host-to-Device]");
    assert_eq!(
        htod.map(|m| m.count),
        Some(want["CUDA_MEMCPY_KIND_HTOD"].len() as u64)
    );
    assert_eq!(htod.map(|m| m.count), Some(254));
    assert_eq!(s.api.iter().map(|a| a.count).sum::<u64>(), 3048);
    assert_eq!(s.syncs.iter().map(|a| a.count).sum::<u64>(), 1312);
    assert!(s.nvtx.is_empty());
    assert!(
        s.notes.iter().any(|n| n.contains("NVTX_EVENTS")),
        "{:?}",
        s.notes
    );
    assert!(s.kernel_span_ns > 0);
}

#[test]
fn the_nvtx_pushpop_csv_parses_with_its_nesting() {
    let ranges = parse_pushpop_csv(PUSHPOP).expect("parses");
    assert_eq!(ranges.len(), 131);
    let by_id: BTreeMap<i64, &PushPopRange> = ranges.iter().map(|r| (r.range_id, r)).collect();
    for r in &ranges {
        match r.parent_id {
            None => assert_eq!(r.level, 0, "{r:?}"),
            Some(p) => {
                let parent = by_id[&p];
                assert_eq!(parent.level + 1, r.level, "{r:?}");
                assert!(
                    parent.start_ns <= r.start_ns && r.end_ns <= parent.end_ns,
                    "{r:?}"
                );
            }
        }
        let children = ranges
            .iter()
            .filter(|c| c.parent_id == Some(r.range_id))
            .count();
        assert_eq!(children, r.num_child as usize, "{r:?}");
    }
    assert_eq!(ranges[0].name, "main");
    assert_eq!(ranges[0].num_child, 30);
    // Its nvtx_sum: per range name.
    let spans: Vec<(&str, f64)> = ranges
        .iter()
        .map(|r| (r.name.as_str(), (r.end_ns - r.start_ns) as f64))
        .collect();
    let sum = stats(spans);
    assert_eq!(sum.iter().map(|s| s.count).sum::<u64>(), 131);
    assert!(parse_pushpop_csv("a,b\n1,2\n").is_err());
}

/// A file that is not `SQLite` says what it holds instead, with the fix for that.
#[test]
fn a_file_that_is_not_sqlite_says_what_it_holds_and_the_fix() {
    let dir = tempfile::tempdir().expect("dir");
    for (bytes, says, fix) in [
        (
            &b""[..],
            "is not an SQLite file: it is empty",
            "nsys export --type sqlite",
        ),
        (
            &b"{\"traceEvents\": []}"[..],
            "it holds JSON text",
            "(`.json` or `.json.gz`)",
        ),
        (
            &[0x1f, 0x8b, 8, 0, 0][..],
            "it holds gzip-compressed data",
            "gunzip -k",
        ),
        (
            &b"time,kernel\n"[..],
            "it holds text",
            "nsys export --type sqlite",
        ),
    ] {
        let path = dir.path().join("report.sqlite");
        std::fs::write(&path, bytes).expect("write");
        assert!(named_as_export(&path));
        let e = read(&path).expect_err("not sqlite");
        assert!(e.to_string().contains(says), "{e}");
        let hint = e.hint().expect("a hint");
        assert!(hint.contains(fix), "{hint}");
        assert!(!hint.contains("traceEvents"), "{hint}");
    }
    assert!(!named_as_export(std::path::Path::new("trace.json")));
}

#[test]
fn bad_files_are_errors_with_a_fix_never_panics() {
    let dir = tempfile::tempdir().expect("dir");
    let text = dir.path().join("notes.sqlite");
    std::fs::write(&text, "not a database at all, just text\n").expect("write");
    let e = read(&text).expect_err("text");
    assert!(matches!(e, NsysError::NotSqlite { .. }), "{e}");
    assert!(e.to_string().contains("notes.sqlite") && e.hint().is_some());

    let full = export_file();
    let bytes = std::fs::read(full.path()).expect("read");
    let cut = dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).expect("write");
    let e = read(&cut).expect_err("truncated");
    assert!(
        matches!(e, NsysError::Corrupt { .. } | NsysError::Schema { .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains("cut.sqlite") && e.hint().is_some(),
        "{e}"
    );

    // An SQLite file of another program; and an export whose kernel table has another schema.
    let other = dir.path().join("other.sqlite");
    let db = rusqlite::Connection::open(&other).expect("db");
    db.execute_batch("CREATE TABLE t (x INTEGER);").expect("t");
    drop(db);
    assert!(matches!(read(&other), Err(NsysError::NotNsys { .. })));
    let newer = dir.path().join("newer.sqlite");
    let db = rusqlite::Connection::open(&newer).expect("db");
    db.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (startNs INTEGER, endNs INTEGER, nameId INTEGER);
         CREATE TABLE FUTURE_ACTIVITY (x INTEGER);",
    )
    .expect("schema");
    drop(db);
    let e = read(&newer).expect_err("schema");
    assert!(
        matches!(
            e,
            NsysError::Schema {
                table: "CUPTI_ACTIVITY_KIND_KERNEL",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.hint().is_some_and(|h| h.contains("nsys")));
}

/// #28 item 9: the path a harness reported is opened and checked once; what `SQLite` then reads
/// is that open file. Swapped after the check for a FIFO (whose open would block for ever) or
/// a link to `/dev/zero`, the path changes nothing: the export read is the one checked, and
/// the read ends.
#[test]
fn the_export_read_is_the_file_checked_whatever_the_path_becomes() {
    use std::sync::mpsc;
    use std::time::Duration;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("case.sqlite");
    std::fs::copy(export_file().path(), &path).expect("copy");
    // What the harness puts at the path.
    let swap = |what: &str, p: &std::path::Path| {
        if what == "a FIFO" {
            let made = std::process::Command::new("mkfifo")
                .arg(p)
                .status()
                .expect("mkfifo runs");
            assert!(made.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", p).expect("symlink");
        }
    };
    for what in ["a FIFO", "a link to /dev/zero"] {
        let checked =
            crate::evidence::nsys_sqlite::open_export(&path).expect("a regular SQLite export");
        // The harness swaps the path between the check and the read.
        let kept = dir.path().join("kept.sqlite");
        std::fs::rename(&path, &kept).expect("moved away");
        swap(what, &path);
        let (tx, rx) = mpsc::channel();
        let named = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(
                crate::evidence::nsys_sqlite::read_open(&checked, &named).map(|e| e.kernels.len()),
            );
        });
        let read = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("the read hung on {what}"));
        assert_eq!(read.expect("the checked export reads"), 1312, "{what}");
        // And read by name now, the path is refused at once.
        let refused = read_nonblocking(&path);
        assert!(refused.contains("not a regular file"), "{what}: {refused}");
        std::fs::remove_file(&path).expect("unswap");
        std::fs::rename(&kept, &path).expect("put back");
    }
}

/// The error of `read(path)`, in words, from a thread that must finish within 20 s.
fn read_nonblocking(path: &std::path::Path) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    let path = path.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(read(&path).map(|_| ()).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(Err(e)) => e,
        Ok(Ok(())) => "read".to_owned(),
        Err(_) => "hung".to_owned(),
    }
}
