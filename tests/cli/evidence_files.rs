//! Evidence files a harness reports (`{"nsys": path}`, `{"ncu": path}`, `{"trace": path}`) are
//! opened without blocking, read only when they are regular files and never past the evidence
//! cap: a FIFO, a device or an oversized file is a warning on the case, and the run is stored
//! (#28 item 6).

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::env::{TestEnv, case_of, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

/// The scripted harness, then the files named by `$NSYS_FILE`, `$NCU_FILE` and (in the traced
/// repeat) `$TRACE_FILE` reported as evidence.
const REPORTING: &str = r#"sh harness.sh
printf '{"nsys": "%s"}\n{"ncu": "%s"}\n' "$NSYS_FILE" "$NCU_FILE" >> "$UTILGATE_OUT"
if [ -n "${UTILGATE_TRACE_DIR:-}" ]; then printf '{"trace": "%s"}\n' "$TRACE_FILE" >> "$UTILGATE_OUT"; fi
"#;

fn mkfifo(path: &std::path::Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// `utilgate run` with `envs`, killed (and the test failed) if it has not finished in 60 s.
fn run_bounded(env: &TestEnv, envs: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--branch", "main", "--git-sha", "0123456789abcdef"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("starts");
    let end = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > end {
            child.kill().expect("kill");
            let out = child.wait_with_output().expect("output");
            panic!(
                "run hung on an evidence file (killed after 60 s): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

fn warning_of(case: &serde_json::Value, kind: &str) -> String {
    let found = case["nsight"]
        .as_array()
        .expect("nsight")
        .iter()
        .find(|n| n["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} evidence in {case}"));
    found["warning"].as_str().unwrap_or("").to_owned()
}

#[test]
fn a_fifo_a_device_or_an_oversized_evidence_file_is_a_warning_and_the_run_is_stored() {
    let env = TestEnv::new();
    env.write("reporting.sh", REPORTING);
    let config = TestEnv::config_with("trace = true")
        .replace(
            "command = \"sh harness.sh\"",
            "command = \"sh reporting.sh\"",
        )
        .replace("[gpu]", "[evidence]\nmax_trace_mb = 1.0\n\n[gpu]");
    env.write_config(&config);
    mkfifo(&env.path().join("nsys.fifo"));
    mkfifo(&env.path().join("trace.fifo"));
    // A 3 MB CSV, over the 1 MB cap: refused without being read into memory.
    let big = std::fs::File::create(env.path().join("big.csv")).expect("create");
    big.set_len(3_000_000).expect("sparse file");

    for (nsys, ncu, nsys_says, ncu_says) in [
        ("nsys.fifo", "/dev/zero", "a FIFO", "a character device"),
        (
            "nsys.fifo",
            "big.csv",
            "a FIFO",
            "over the evidence cap of 1.0 MB",
        ),
    ] {
        let out = run_bounded(
            &env,
            &[
                ("NSYS_FILE", nsys),
                ("NCU_FILE", ncu),
                ("TRACE_FILE", "trace.fifo"),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
        let report = env.json(&["runs", "show"]);
        // Measured and judged: new on the first run, pass on the second.
        let verdict = verdict_of(&report, B1);
        assert!(verdict == "new" || verdict == "pass", "{verdict}");
        let case = case_of(&report, B1);
        let w = warning_of(case, "nsys");
        assert!(
            w.contains(nsys_says) && w.contains("not a regular file"),
            "{w}"
        );
        let w = warning_of(case, "ncu");
        assert!(w.contains(ncu_says), "{ncu}: {w}");
        let w = case["evidence"]["warning"].as_str().unwrap_or("");
        assert!(w.contains("a FIFO"), "trace: {}", case["evidence"]);
        // The warnings reached the terminal too, and the run's results are stored.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not a regular file"), "{err}");
    }
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "{runs}");
}
