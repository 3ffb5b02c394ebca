//! Nsight capture through `utilgate run`: suite keys `nsys = true` and `ncu = {...}` run one
//! extra repeat under the profiler after the timed ones. No GPU here, so `nsys` and `ncu` are
//! stand-in scripts first on PATH: real child processes that parse the real command line, run
//! the harness command they were given and write what the real tools write, from real captured
//! files (pipit's `CloverLeaf` export, with NVTX `decode_step` ranges added here; microgpusim's
//! `ncu --csv` of vecAdd). The stored evidence and every report's Nsight section are asserted;
//! so are harness-reported files (`{"nsys": path}`), the missing-profiler warning and bad input.

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use crate::env::{TestEnv, case_of, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// Stand-in `nsys`: `profile [options] -o OUT CMD...` logs its arguments, runs CMD and writes
/// OUT.nsys-rep (unless `NSYS_CRASH=1`: it dies like a crashed profiler); `export ... --output
/// OUT REP` copies `$NSYS_EXPORT_SRC` (a real `SQLite` export) to OUT.
const FAKE_NSYS: &str = r#"#!/bin/sh
echo "nsys $*" >> "$PROFILER_LOG"
cmd="$1"; shift
case "$cmd" in
  profile)
    out=""
    while [ $# -gt 0 ]; do
      case "$1" in
        -o) out="$2"; shift 2 ;;
        -t|--force-overwrite) shift 2 ;;
        --*) shift ;;
        *) break ;;
      esac
    done
    if [ "${NSYS_CRASH:-0}" = "1" ]; then echo "nsys: internal error" >&2; exit 139; fi
    "$@"; rc=$?
    printf 'stand-in nsys-rep\n' > "$out.nsys-rep"
    exit $rc ;;
  export)
    out=""; rep=""
    while [ $# -gt 0 ]; do
      case "$1" in
        --output) out="$2"; shift 2 ;;
        --type|--force-overwrite) shift 2 ;;
        *) rep="$1"; shift ;;
      esac
    done
    [ -f "$rep" ] || { echo "no such report $rep" >&2; exit 1; }
    cp "$NSYS_EXPORT_SRC" "$out" ;;
  *) echo "unknown nsys command $cmd" >&2; exit 1 ;;
esac
"#;

/// Stand-in `ncu`: `[options] -o OUT CMD...` logs, runs CMD and writes OUT.ncu-rep; `--import
/// REP --csv --page raw` prints `$NCU_CSV` (a real `ncu --csv --page raw` output).
const FAKE_NCU: &str = r#"#!/bin/sh
echo "ncu $*" >> "$PROFILER_LOG"
if [ "$1" = "--import" ]; then cat "$NCU_CSV"; exit 0; fi
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --set|-k|-c|--target-processes) shift 2 ;;
    --*) shift ;;
    *) break ;;
  esac
done
"$@"; rc=$?
printf 'stand-in ncu-rep\n' > "$out.ncu-rep"
exit $rc
"#;

fn write_exe(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// The `CloverLeaf` export with eight NVTX `decode_step` push/pop ranges over its activity (and,
/// with `slow`, every `par_ranged2d_kernel` twice as long): the "then" and "now" of a run.
fn export_with_steps(dir: &Path, name: &str, slow: bool) -> PathBuf {
    let gz = std::fs::read(fixture("nsight_systems/cloverleaf.sqlite.gz")).expect("fixture");
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut bytes)
        .expect("gunzip");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    let db = rusqlite::Connection::open(&path).expect("open");
    // Nsight Systems' NVTX_EVENTS schema (the columns an export has).
    db.execute_batch(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
           rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
           endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
           int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
           floatValue REAL, jsonTextId INTEGER, jsonText TEXT);",
    )
    .expect("nvtx table");
    let (first, last): (i64, i64) = db
        .query_row(
            "SELECT (SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME),
                    (SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("span");
    let width = (last - first) / 8 + 1;
    for i in 0..8 {
        db.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES (?1, ?2, 59, 'decode_step')",
            [first + i * width, first + (i + 1) * width],
        )
        .expect("range");
    }
    if slow {
        db.execute(
            "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = start + 2 * (end - start)
             WHERE shortName = (SELECT id FROM StringIds WHERE value = 'par_ranged2d_kernel')",
            [],
        )
        .expect("slow");
    }
    path
}

/// A PATH with only what the scripted harness needs (`sh`, `awk`): no profiler on it.
fn bare_path(dir: &Path) -> String {
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).expect("bare");
    for tool in ["sh", "awk"] {
        let found = ["/bin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .expect("tool");
        std::os::unix::fs::symlink(found, bare.join(tool)).expect("link");
    }
    bare.display().to_string()
}

struct Profiled {
    env: TestEnv,
    path: String,
    log: PathBuf,
}

/// A test env whose suite has `suite_extra`, with the stand-ins in `bin/` first on PATH.
fn profiled_env(suite_extra: &str) -> Profiled {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with(suite_extra));
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    write_exe(&bin.join("nsys"), FAKE_NSYS);
    write_exe(&bin.join("ncu"), FAKE_NCU);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let log = env.path().join("profiler.log");
    Profiled { env, path, log }
}

impl Profiled {
    fn run(&self, branch: &str, envs: &[(&str, &str)]) -> std::process::Output {
        let log = self.log.to_str().expect("utf-8");
        let ncu_csv = fixture("nsight_compute/vectoradd_raw.csv");
        let mut all: Vec<(&str, &str)> = vec![
            ("PATH", self.path.as_str()),
            ("PROFILER_LOG", log),
            ("NCU_CSV", ncu_csv.to_str().expect("utf-8")),
        ];
        all.extend_from_slice(envs);
        self.env.run(branch, &all)
    }
}

fn nsight<'a>(case: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
    case["nsight"]
        .as_array()
        .expect("nsight")
        .iter()
        .find(|n| n["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} evidence in {case}"))
}

/// (kind, name, compressed bytes) of every stored evidence file.
fn stored_blobs(env: &TestEnv) -> Vec<(String, String, i64)> {
    let db = rusqlite::Connection::open(env.db()).expect("store");
    let mut stmt = db
        .prepare(
            "SELECT e.kind, e.name, b.bytes FROM evidence e JOIN evidence_blobs b
             ON b.sha256 = e.sha256 ORDER BY e.id",
        )
        .expect("query");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .map(|r| r.expect("row"))
        .collect()
}

#[test]
fn nsys_runs_one_extra_repeat_and_the_regressed_case_shows_the_nvtx_step_diff() {
    let p = profiled_env("nsys = true");
    let then = export_with_steps(p.env.path(), "then.sqlite", false);
    let now = export_with_steps(p.env.path(), "now.sqlite", true);
    let out = p.run("main", &[("NSYS_EXPORT_SRC", then.to_str().expect("p"))]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = p.run(
        "feature",
        &[
            ("NSYS_EXPORT_SRC", now.to_str().expect("p")),
            ("STEP_MS", "11.0"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));

    // One profiled repeat per case and run (2 cases x 2 runs), with the recommended options,
    // the harness command as one `sh -c` word; each report exported once.
    let log = std::fs::read_to_string(&p.log).expect("log");
    let profiles: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("nsys profile"))
        .collect();
    assert_eq!(profiles.len(), 4, "{log}");
    assert!(
        profiles[0].starts_with(
            "nsys profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite true -o "
        ),
        "{log}"
    );
    assert!(
        profiles[0].ends_with("utilgate-nsys sh -c sh harness.sh"),
        "{log}"
    );
    assert_eq!(
        log.lines()
            .filter(|l| l.starts_with("nsys export --type sqlite"))
            .count(),
        4
    );

    let text = stdout(&out);
    assert!(text.contains(&format!("REGRESSED {B1}")), "{text}");
    assert!(
        text.contains(
            "nsys diff, the baseline result's file -> this run's (utilgate-nsys.nsys-rep):"
        ),
        "{text}"
    );
    assert!(text.contains("par_ranged2d_kernel +"), "{text}");
    assert!(
        text.contains("per step (decode_step, 7 of 8 ranges)"),
        "{text}"
    );

    let report = p.env.json(&["runs", "show"]);
    let c = case_of(&report, B1);
    let n = nsight(c, "nsys");
    assert!(n["warning"].is_null(), "{n}");
    let diff_lines = n["diff_lines"].as_array().expect("diff lines");
    assert!(
        diff_lines[0]
            .as_str()
            .expect("line")
            .starts_with("clover::par_ranged2d_kernel +100% (38151.0 -> 76302.0 µs per step"),
        "{diff_lines:?}"
    );
    assert_eq!(
        n["diff"]["steps"]["kernels"][0]["name"], "clover::par_ranged2d_kernel",
        "{n}"
    );
    // The stored summary carries the nsys stats tables of the whole export.
    let kernels = n["diff"]["kernels"].as_array().expect("kernel changes");
    let launches: u64 = kernels
        .iter()
        .map(|k| k["count_now"].as_u64().expect("count"))
        .sum();
    assert_eq!(launches, 1312);

    // Stored compressed, one blob per distinct export (then and now), shared by both cases.
    let blobs = stored_blobs(&p.env);
    assert_eq!(
        blobs.iter().filter(|b| b.0 == "nsys").count(),
        4,
        "{blobs:?}"
    );
    let sizes: std::collections::BTreeSet<i64> = blobs.iter().map(|b| b.2).collect();
    assert_eq!(sizes.len(), 2, "{blobs:?}");
    assert!(
        sizes.iter().all(|s| *s < 1_500_000),
        "compressed: {sizes:?}"
    );

    let md = p.env.report("markdown");
    assert!(
        md.contains(
            "<details><summary>Nsight Systems (<code>utilgate-nsys.nsys-rep</code>): what changed</summary>"
        ),
        "{md}"
    );
    let html = p.env.report("html");
    assert!(
        html.contains("Nsight Systems <code>utilgate-nsys.nsys-rep</code>"),
        "{html}"
    );
    assert!(html.contains("par_ranged2d_kernel +100%"), "{html}");
}

#[test]
fn trace_show_of_a_stored_case_shows_its_nsight_summary() {
    let p = profiled_env("nsys = true");
    let then = export_with_steps(p.env.path(), "then.sqlite", false);
    let out = p.run("main", &[("NSYS_EXPORT_SRC", then.to_str().expect("p"))]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let show = p
        .env
        .cmd()
        .args(["trace", "show", "1", "--case", B1])
        .output()
        .expect("runs");
    let text = stdout(&show);
    assert_eq!(show.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("nsys run 1 {B1} (utilgate-nsys.nsys-rep): ")),
        "{text}"
    );
    assert!(text.contains("par_ranged2d_kernel"), "{text}");
    // The stored copy and the file itself show the same per-NVTX-step analysis (the file's
    // `trace show` printed only the nsys stats tables).
    let step_line = |text: &str| {
        text.lines()
            .find(|l| {
                l.trim_start()
                    .starts_with("per step (decode_step, 7 of 8 ranges)")
            })
            .map(|l| l.trim().to_owned())
    };
    let stored = step_line(&text).expect("the stored copy's steps");
    assert!(stored.contains(" device synchronize, "), "{stored}");
    let file = p
        .env
        .cmd()
        .args(["trace", "show", then.to_str().expect("p")])
        .output()
        .expect("runs");
    let file_text = stdout(&file);
    assert_eq!(file.status.code(), Some(0), "{file_text}");
    assert_eq!(step_line(&file_text), Some(stored), "{file_text}");
    assert!(
        file_text.contains("step analysis (NVTX step ranges, as a run stores it):"),
        "{file_text}"
    );
    for text in [&text, &file_text] {
        assert!(text.contains("total kernel time 294.405 ms"), "{text}");
    }
    let json = p.env.json(&["trace", "show", "1", "--case", B1]);
    assert!(json["trace"].is_null(), "{json}");
    assert_eq!(
        json["nsight"][0]["file"], "utilgate-nsys.nsys-rep",
        "{json}"
    );
}

#[test]
fn ncu_profiles_the_named_kernels_and_reports_them_with_the_reading_guide() {
    let p = profiled_env(r#"ncu = { kernel_regex = "vecAdd|gemm", count = 2 }"#);
    let out = p.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let log = std::fs::read_to_string(&p.log).expect("log");
    let runs: Vec<&str> = log.lines().filter(|l| l.contains(" -o ")).collect();
    assert_eq!(runs.len(), 2, "{log}");
    assert!(
        runs[0].starts_with("ncu --set full -k regex:vecAdd|gemm -c 2 --target-processes all"),
        "{log}"
    );
    assert_eq!(
        log.lines()
            .filter(|l| l.starts_with("ncu --import"))
            .count(),
        2,
        "{log}"
    );
    let report = p.env.json(&["runs", "show"]);
    let n = nsight(case_of(&report, B1), "ncu");
    assert_eq!(n["file"], "utilgate-ncu.ncu-rep");
    let lines: Vec<&str> = n["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l.as_str().expect("line"))
        .collect();
    assert!(
        lines[0].contains("vecAdd: duration 2.72 µs, DRAM 1.7%"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("reading: low throughput")),
        "{lines:?}"
    );
    let blobs = stored_blobs(&p.env);
    assert!(blobs.iter().any(|b| b.0 == "ncu"), "{blobs:?}");
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one end-to-end story: runs, then every report and the store"
)]
fn a_file_the_harness_reports_is_attached_and_bad_files_are_warnings() {
    let env = TestEnv::new();
    let export = export_with_steps(env.path(), "mine.sqlite", false);
    let raw = std::fs::read(&export).expect("export");
    std::fs::write(env.path().join("cut.sqlite"), &raw[..raw.len() / 3]).expect("cut");
    // A newer schema: tables this reader does not know are ignored.
    let newer = export_with_steps(env.path(), "newer.sqlite", false);
    rusqlite::Connection::open(&newer)
        .expect("open")
        .execute_batch("CREATE TABLE CUPTI_ACTIVITY_KIND_FUTURE (start INTEGER, x BLOB);")
        .expect("future table");
    env.write(
        "odd.csv",
        "\"ID\",\"Kernel Name\",\"Widget\"\n\"0\",\"k\",\"3\"\n",
    );
    env.write(
        "reporting.sh",
        "sh harness.sh\nprintf '{\"nsys\": \"%s\"}\\n{\"ncu\": \"%s\"}\\n' \"$NSYS_FILE\" \"$NCU_FILE\" >> \"$UTILGATE_OUT\"\n",
    );
    let config = TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "command = \"sh reporting.sh\"",
    );
    env.write_config(&config);
    let raw_csv = fixture("nsight_compute/vectoradd_raw_with_preamble.txt");
    let out = env.run(
        "main",
        &[
            ("NSYS_FILE", "mine.sqlite"),
            ("NCU_FILE", raw_csv.to_str().expect("p")),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = env.json(&["runs", "show"]);
    let c = case_of(&report, B1);
    let n = nsight(c, "nsys");
    assert_eq!(n["file"], "mine.sqlite");
    assert!(n["warning"].is_null(), "{n}");
    assert!(
        n["lines"][0]
            .as_str()
            .expect("line")
            .starts_with("per step (decode_step, 7 of 8 ranges)"),
        "{n}"
    );
    let k = nsight(c, "ncu");
    assert!(
        k["lines"][0].as_str().expect("line").contains("vecAdd"),
        "{k}"
    );

    let bare = bare_path(env.path());
    for (nsys_file, ncu_file, nsys_warning, ncu_warning) in [
        (
            "cut.sqlite",
            "odd.csv",
            "nsys file not read: ",
            "unknown ncu CSV layout",
        ),
        ("newer.sqlite", "missing.csv", "", "failed to read"),
        (
            "run.nsys-rep",
            "run.ncu-rep",
            "nsys is not on PATH",
            "ncu is not on PATH",
        ),
    ] {
        if nsys_file.ends_with("-rep") {
            env.write(nsys_file, "x");
            env.write(ncu_file, "x");
        }
        let out = env.run(
            "main",
            &[
                ("NSYS_FILE", nsys_file),
                ("NCU_FILE", ncu_file),
                // No profiler on this PATH: a report needs one to be read.
                ("PATH", bare.as_str()),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        let report = env.json(&["runs", "show"]);
        assert_eq!(verdict_of(&report, B1), "pass");
        let c = case_of(&report, B1);
        let w = nsight(c, "nsys")["warning"]
            .as_str()
            .unwrap_or("")
            .to_owned();
        if nsys_warning.is_empty() {
            assert!(w.is_empty(), "{nsys_file}: {w}");
            assert!(!nsight(c, "nsys")["lines"].as_array().expect("l").is_empty());
        } else {
            assert!(w.contains(nsys_warning), "{nsys_file}: {w}");
        }
        let w = nsight(c, "ncu")["warning"]
            .as_str()
            .expect("ncu warning")
            .to_owned();
        assert!(w.contains(ncu_warning), "{ncu_file}: {w}");
        if nsys_file.ends_with("-rep") {
            let w = nsight(c, "nsys")["warning"].as_str().expect("w");
            assert!(
                w.contains("nsys export --type sqlite --force-overwrite true --output"),
                "{w}"
            );
        }
    }
}

#[test]
fn a_missing_or_crashing_profiler_is_a_warning_and_the_verdict_stands() {
    // No nsys or ncu anywhere on this PATH: only what the scripted harness needs.
    let p = profiled_env("nsys = true\nncu = { kernel_regex = \"gemm\" }");
    let bare = bare_path(p.env.path());
    let out = p.env.run("main", &[("PATH", bare.as_str())]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = p.env.json(&["runs", "show"]);
    // The first run of the case: new (not error), its timed repeats measured as ever.
    assert_eq!(verdict_of(&report, B1), "new");
    let c = case_of(&report, B1);
    let w = nsight(c, "nsys")["warning"].as_str().expect("warning");
    assert!(w.contains("nsys is not on PATH"), "{w}");
    assert!(w.contains("install Nsight Systems"), "{w}");
    assert!(w.contains("the verdict stands"), "{w}");
    let w = nsight(c, "ncu")["warning"].as_str().expect("warning");
    assert!(
        w.contains("ncu is not on PATH") && w.contains("install Nsight Compute"),
        "{w}"
    );
    // Said while the run goes, on stderr, with the case.
    let progress = crate::env::stderr(&out);
    assert!(
        progress.contains(&format!("{B1}: nsys: nsys is not on PATH")),
        "{progress}"
    );

    // A profiler that crashes: a warning naming the command; the verdict stands.
    let out = p.run("main", &[("NSYS_CRASH", "1")]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let report = p.env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "pass");
    let w = nsight(case_of(&report, B1), "nsys")["warning"]
        .as_str()
        .expect("warning")
        .to_owned();
    assert!(w.contains("the nsys repeat failed"), "{w}");
    assert!(
        w.contains("killed by SIGSEGV") && w.contains("nsys: internal error"),
        "{w}"
    );
    assert!(w.contains("wrote no report"), "{w}");
}

#[test]
fn trace_show_reads_a_nsys_report_through_nsys_export_and_nsys_stats_csvs() {
    let p = profiled_env("");
    let export = export_with_steps(p.env.path(), "src.sqlite", false);
    let rep = p.env.write("run.nsys-rep", "stand-in report");
    let show = |path: &str, envs: &[(&str, &str)]| {
        let mut cmd = p.env.std_cmd();
        cmd.args(["trace", "show", path]);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().expect("runs")
    };
    let log = p.log.to_str().expect("utf-8");
    let envs = [
        ("PATH", p.path.as_str()),
        ("PROFILER_LOG", log),
        ("NSYS_EXPORT_SRC", export.to_str().expect("p")),
    ];
    let out = show(rep.to_str().expect("p"), &envs);
    assert_eq!(out.status.code(), Some(0), "{}", crate::env::stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("1312 kernel launches of 102 kernels"),
        "{text}"
    );
    assert!(text.contains("NVTX ranges (nvtx_sum)"), "{text}");
    // Exported beside the report, once: a newer .sqlite beside it is reused.
    assert!(p.env.path().join("run.sqlite").exists());
    let out = show(rep.to_str().expect("p"), &envs);
    assert_eq!(out.status.code(), Some(0));
    let log = std::fs::read_to_string(&p.log).expect("log");
    assert_eq!(
        log.lines().filter(|l| l.starts_with("nsys export")).count(),
        1,
        "{log}"
    );

    // Without nsys: exit 2 and the exact command to run.
    std::fs::remove_file(p.env.path().join("run.sqlite")).expect("rm");
    let bare = bare_path(p.env.path());
    let out = show(rep.to_str().expect("p"), &[("PATH", bare.as_str())]);
    assert_eq!(out.status.code(), Some(2));
    let err = crate::env::stderr(&out);
    assert!(err.contains("nsys is not on PATH"), "{err}");
    assert!(
        err.contains("nsys export --type sqlite --force-overwrite true --output"),
        "{err}"
    );

    // An older `nsys stats --format csv` output: report named by its header, figures it lacks
    // shown as missing.
    let csv = p.env.write(
        "stats.txt",
        "Running [/opt/nvidia/nsight-systems/2021.1.1/target-linux-x64/reports/gpukernsum.py report.sqlite]... \n\n\
         Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n\
         60.0,600,3,200.0,100,300,gemv_kernel\n",
    );
    let out = show(csv.to_str().expect("p"), &envs);
    assert_eq!(out.status.code(), Some(0), "{}", crate::env::stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("kernels (cuda_gpu_kern_sum)"), "{text}");
    assert!(text.contains("missing"), "{text}");
    assert!(
        text.contains("gpukernsum read as cuda_gpu_kern_sum"),
        "{text}"
    );
}
