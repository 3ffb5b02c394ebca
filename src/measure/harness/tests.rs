//! Tests of `harness`.

#![expect(
    clippy::disallowed_methods,
    reason = "tests write harness scripts and read their output"
)]

use std::os::unix::fs::PermissionsExt;

use super::process::{Tail, group_alive, parse_stat};
use std::sync::Arc;

use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

use super::*;
use crate::case::Phase;

fn case() -> CaseKey {
    CaseKey {
        suite: "decode".into(),
        model: "llama-3.1-8b".into(),
        precision: "bf16".into(),
        phase: Phase::Decode,
        batch: 8,
        context: 4096,
        axes: crate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

struct Env {
    dir: tempfile::TempDir,
    out: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        Env {
            dir: tempfile::tempdir().expect("temp dir"),
            out: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn run_with(
        &self,
        command: &str,
        timeout: Duration,
        extra_env: &[(String, String)],
        cancel: &AtomicBool,
    ) -> Result<RepeatOutput, HarnessError> {
        let case = case();
        let spec = RepeatSpec {
            command,
            cwd: self.dir.path(),
            case: &case,
            warmup_steps: 2,
            steps: 5,
            repeat: 3,
            out_dir: self.out.path(),
            timeout,
            extra_env,
            env_passthrough: &[],
            guard: None,
            step_range: protocol::StepRange::default(),
        };
        run_repeat(&spec, cancel)
    }

    fn run(&self, command: &str) -> Result<RepeatOutput, HarnessError> {
        self.run_with(
            command,
            Duration::from_secs(20),
            &[],
            &AtomicBool::new(false),
        )
    }

    fn read(&self, name: &str) -> String {
        fs::read_to_string(self.dir.path().join(name)).expect("file written by the child")
    }
}

/// Whether the process is gone or a zombie (dead, waiting for a reaper we do not control).
fn dead(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => matches!(parse_stat(&stat), Some(('Z' | 'X', _))),
        Err(_) => kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH),
    }
}

#[test]
fn success_separates_warmup_and_counted_steps() {
    let env = Env::new();
    let out = env
        .run(
            r#"printf '{"step_ms": 31.5, "warmup": true}\n{"step_ms": 6.02}\n' >> "$UTILGATE_OUT"
                   printf '{"steps_ms": [6.01, 6.03]}\n{"trace": "t.json"}' >> "$UTILGATE_OUT"
                   echo "loading model" >&2"#,
        )
        .expect("harness succeeds");
    assert_eq!(out.report.warmup_ms, vec![31.5]);
    assert_eq!(out.report.steps_ms, vec![6.02, 6.01, 6.03]);
    assert_eq!(out.report.traces, vec!["t.json".to_owned()]);
    assert_eq!(out.stderr_tail, "loading model");
    assert!(out.wall > Duration::ZERO && out.wall < Duration::from_secs(20));
}

#[test]
fn protocol_variables_reach_the_child_and_win_over_extra_env() {
    let env = Env::new();
    let extra = vec![
        ("MY_FLAG".to_owned(), "on".to_owned()),
        (UTILGATE_REPEAT.to_owned(), "99".to_owned()),
    ];
    let command = r#"printf '{"env": {"protocol": "%s", "out": "%s", "model": "%s", "precision": "%s", "phase": "%s", "batch": "%s", "context": "%s", "tp": "%s", "ep": "%s", "warmup": "%s", "steps": "%s", "repeat": "%s", "flag": "%s", "cwd": "%s"}}\n{"step_ms": 1}\n' "$UTILGATE_PROTOCOL" "$UTILGATE_OUT" "$UTILGATE_MODEL" "$UTILGATE_PRECISION" "$UTILGATE_PHASE" "$UTILGATE_BATCH" "$UTILGATE_CONTEXT" "$UTILGATE_TP" "$UTILGATE_EP" "$UTILGATE_WARMUP_STEPS" "$UTILGATE_STEPS" "$UTILGATE_REPEAT" "$MY_FLAG" "$(pwd -P)" >> "$UTILGATE_OUT""#;
    let out = env
        .run_with(
            command,
            Duration::from_secs(20),
            &extra,
            &AtomicBool::new(false),
        )
        .expect("harness succeeds");
    let got = |k: &str| out.report.env.get(k).cloned().unwrap_or_default();
    let results = env.out.path().join("repeat-3.jsonl");
    assert_eq!(got("protocol"), "1");
    assert_eq!(got("out"), results.display().to_string());
    assert_eq!(got("model"), "llama-3.1-8b");
    assert_eq!(got("precision"), "bf16");
    assert_eq!(got("phase"), "decode");
    assert_eq!(got("batch"), "8");
    assert_eq!(got("context"), "4096");
    // The case's tensor- and expert-parallel degrees.
    assert_eq!((got("tp"), got("ep")), ("1".into(), "1".into()));
    assert_eq!(got("warmup"), "2");
    assert_eq!(got("steps"), "5");
    assert_eq!(got("repeat"), "3");
    assert_eq!(got("flag"), "on");
    let cwd = env.dir.path().canonicalize().expect("canonical cwd");
    assert_eq!(got("cwd"), cwd.display().to_string());
}

#[test]
fn leftover_results_file_is_not_counted() {
    let env = Env::new();
    fs::write(env.out.path().join("repeat-3.jsonl"), "{\"step_ms\": 99}\n")
        .expect("write leftover");
    let out = env
        .run(r#"printf '{"step_ms": 1}\n' >> "$UTILGATE_OUT""#)
        .expect("harness succeeds");
    assert_eq!(out.report.steps_ms, vec![1.0]);
}

#[test]
fn nonzero_exit_keeps_the_stderr_tail() {
    let env = Env::new();
    let err = env
        .run("echo 'RuntimeError: CUDA out of memory' >&2; exit 3")
        .expect_err("exit 3");
    match &err {
        HarnessError::Exited { code, stderr_tail } => {
            assert_eq!(*code, 3);
            assert_eq!(stderr_tail, "RuntimeError: CUDA out of memory");
        }
        other => panic!("expected Exited, got {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        "harness exited with status 3; its stderr ends with:\n  | RuntimeError: CUDA out of memory"
    );
    assert!(err.hint().is_some());
}

#[test]
fn crash_by_signal_is_signalled() {
    let env = Env::new();
    let err = env
        .run("echo 'about to crash' >&2; kill -SEGV $$")
        .expect_err("segfault");
    match &err {
        HarnessError::Signalled {
            signal,
            stderr_tail,
        } => {
            assert_eq!(*signal, Signal::SIGSEGV as i32);
            assert_eq!(stderr_tail, "about to crash");
        }
        other => panic!("expected Signalled, got {other:?}"),
    }
    assert!(err.to_string().starts_with("harness was killed by SIGSEGV"));
}

#[test]
fn signal_reported_by_an_inner_shell_is_signalled() {
    // The inner shell dies of SIGABRT; the outer one exits with 128 + 6.
    let env = Env::new();
    let err = env
        .run("sh -c 'kill -ABRT $$'; exit $?")
        .expect_err("abort");
    assert!(
        matches!(err, HarnessError::Signalled { signal, .. } if signal == Signal::SIGABRT as i32),
        "{err:?}"
    );
}

#[test]
fn timeout_kills_the_whole_group_including_grandchildren() {
    let env = Env::new();
    let started = Instant::now();
    let err = env
        .run_with(
            "echo $$ > pgid; sleep 1000 & echo $! > grandchild; echo waiting >&2; wait",
            Duration::from_secs(1),
            &[],
            &AtomicBool::new(false),
        )
        .expect_err("times out");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    match &err {
        HarnessError::TimedOut {
            timeout,
            stderr_tail,
        } => {
            assert_eq!(*timeout, Duration::from_secs(1));
            assert_eq!(stderr_tail, "waiting");
        }
        other => panic!("expected TimedOut, got {other:?}"),
    }
    assert!(err.to_string().starts_with("harness timed out after 1 s;"));
    let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
    let grandchild: i32 = env.read("grandchild").trim().parse().expect("pid");
    assert!(dead(grandchild), "grandchild {grandchild} survived");
    assert!(!group_alive(Pid::from_raw(pgid)), "group {pgid} survived");
}

#[test]
fn a_harness_ignoring_sigterm_is_killed_after_the_grace_period() {
    let env = Env::new();
    let started = Instant::now();
    let err = env
        .run_with(
            "trap '' TERM; echo $$ > pgid; while :; do sleep 0.05; done",
            Duration::from_millis(200),
            &[],
            &AtomicBool::new(false),
        )
        .expect_err("times out");
    assert!(matches!(err, HarnessError::TimedOut { .. }), "{err:?}");
    let took = started.elapsed();
    assert!(
        took >= TERM_GRACE && took < TERM_GRACE + Duration::from_secs(4),
        "{took:?}"
    );
    let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
    assert!(!group_alive(Pid::from_raw(pgid)));
}

#[test]
fn stragglers_are_terminated_after_a_successful_exit() {
    let env = Env::new();
    let out = env
            .run(
                r#"sleep 1000 > /dev/null 2>&1 & echo $! > straggler; printf '{"step_ms": 2}\n' >> "$UTILGATE_OUT""#,
            )
            .expect("harness succeeds");
    assert_eq!(out.report.steps_ms, vec![2.0]);
    let pid: i32 = env.read("straggler").trim().parse().expect("pid");
    assert!(dead(pid), "straggler {pid} survived");
}

#[test]
fn cancel_flag_stops_the_harness() {
    let env = Env::new();
    let cancel = Arc::new(AtomicBool::new(false));
    let setter = Arc::clone(&cancel);
    let pgid_file = env.dir.path().join("pgid");
    let flip = thread::spawn(move || {
        // Cancel once the harness is surely running (it has written its pgid).
        while fs::read_to_string(&pgid_file).map_or(true, |t| !t.ends_with('\n')) {
            thread::sleep(Duration::from_millis(10));
        }
        setter.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let err = env
        .run_with(
            "echo $$ > pgid; sleep 1000",
            Duration::from_secs(60),
            &[],
            &cancel,
        )
        .expect_err("cancelled");
    flip.join().expect("flag thread");
    assert!(matches!(err, HarnessError::Cancelled), "{err:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
    assert!(!group_alive(Pid::from_raw(pgid)));
}

#[test]
fn cancel_before_start_runs_nothing() {
    let env = Env::new();
    let err = env
        .run_with(
            "touch started",
            Duration::from_secs(5),
            &[],
            &AtomicBool::new(true),
        )
        .expect_err("cancelled");
    assert!(matches!(err, HarnessError::Cancelled), "{err:?}");
    assert!(!env.dir.path().join("started").exists());
}

#[test]
fn durations_read_naturally() {
    assert_eq!(seconds(Duration::from_secs(600)), "600 s");
    assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
}

#[test]
fn missing_program_is_named() {
    let env = Env::new();
    let err = env
        .run("CUDA_VISIBLE_DEVICES=0 utilgate-no-such-harness --model x")
        .expect_err("not found");
    match &err {
        HarnessError::NotFound {
            program,
            stderr_tail,
        } => {
            assert_eq!(program, "utilgate-no-such-harness");
            assert!(stderr_tail.contains("not found"), "{stderr_tail}");
        }
        other => panic!("expected NotFound, got {other:?}"),
    }
    assert!(err.hint().expect("hint").contains("`command`"));
}

#[test]
fn non_executable_program_is_named() {
    let env = Env::new();
    let script = env.dir.path().join("bench.sh");
    fs::write(&script, "#!/bin/sh\nexit 0\n").expect("write script");
    fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).expect("chmod");
    let err = env.run("./bench.sh --batch 8").expect_err("not executable");
    assert!(
        matches!(&err, HarnessError::NotExecutable { program, .. } if program == "./bench.sh"),
        "{err:?}"
    );
}

#[test]
fn missing_working_directory_is_an_io_error_naming_it() {
    let env = Env::new();
    let case = case();
    let cwd = env.dir.path().join("nope");
    let spec = RepeatSpec {
        command: "true",
        cwd: &cwd,
        case: &case,
        warmup_steps: 0,
        steps: 1,
        repeat: 0,
        out_dir: env.out.path(),
        timeout: Duration::from_secs(5),
        extra_env: &[],
        env_passthrough: &[],
        guard: None,
        step_range: protocol::StepRange::default(),
    };
    let err = run_repeat(&spec, &AtomicBool::new(false)).expect_err("no cwd");
    assert!(
        matches!(&err, HarnessError::Io { path, .. } if *path == cwd),
        "{err:?}"
    );
}

#[test]
fn huge_output_stays_bounded_and_does_not_block() {
    let env = Env::new();
    let out = env
        .run(
            r#"yes 'stdout chatter' | head -c 5000000
                   yes 'progress line on stderr' | head -n 800000 >&2
                   echo 'last words' >&2
                   printf '{"step_ms": 1.5}\n' >> "$UTILGATE_OUT""#,
        )
        .expect("harness succeeds");
    assert_eq!(out.report.steps_ms, vec![1.5]);
    assert!(out.stderr_tail.len() <= STDERR_TAIL_BYTES);
    let lines: Vec<&str> = out.stderr_tail.lines().collect();
    assert_eq!(lines.len(), STDERR_TAIL_LINES);
    assert_eq!(lines.last(), Some(&"last words"));
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| *l == "progress line on stderr")
    );
}

#[test]
fn stderr_tail_is_sanitised() {
    let env = Env::new();
    let err = env
        .run(r"printf '\033[31mError\033[0m: \033]0;pwned\007bad\n' >&2; exit 1")
        .expect_err("exit 1");
    assert_eq!(err.stderr_tail(), Some("Error: bad"));
}

#[test]
fn no_counted_steps_is_an_error() {
    let env = Env::new();
    let err = env.run("echo 'done' >&2").expect_err("no file");
    assert!(
        matches!(&err, HarnessError::NoSteps { file_missing: true, stderr_tail, .. } if stderr_tail == "done"),
        "{err:?}"
    );
    assert!(err.hint().expect("hint").contains("$UTILGATE_OUT"));

    let err = env
            .run(r#"printf '{"step_ms": 9, "warmup": true}\n{"env": {"torch": "2.5.1"}}\n' >> "$UTILGATE_OUT""#)
            .expect_err("only warm-up");
    assert!(
        matches!(
            &err,
            HarnessError::NoSteps {
                file_missing: false,
                warmup_steps: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.hint().expect("hint").contains("warmup"));
}

#[test]
fn garbage_line_reports_its_line_number() {
    let env = Env::new();
    let err = env
        .run(r#"printf '{"step_ms": 1}\n\n{"step_ms": NaN}\n' >> "$UTILGATE_OUT""#)
        .expect_err("NaN");
    match &err {
        HarnessError::Protocol { excerpt, source } => {
            assert_eq!(excerpt, r#"{"step_ms": NaN}"#);
            assert_eq!(source.line, 3);
        }
        other => panic!("expected Protocol, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("line 3: step_ms is NaN"), "{message}");
    // The results file is gone with the run's directory: the message quotes the line, and
    // names no path a reader cannot open.
    assert!(
        message.ends_with(r#"the line was: {"step_ms": NaN}"#),
        "{message}"
    );
    assert!(!message.contains("repeat-3.jsonl"), "{message}");
}

#[test]
fn program_name_skips_assignments_and_quotes() {
    let cases = [
        ("python3 bench.py --x 1", "python3"),
        ("A=1 B_2=x ./run.sh", "./run.sh"),
        ("exec env 'my prog'", "my"),
        ("\"/opt/bench\" --y", "/opt/bench"),
        ("", ""),
    ];
    for (command, expected) in cases {
        assert_eq!(program_name(command), expected, "{command:?}");
    }
}

#[test]
fn tail_keeps_the_end_in_bounded_memory() {
    let mut tail = Tail::new(64);
    for i in 0..10_000 {
        tail.push(format!("line {i}\n").as_bytes());
        assert!(tail.bytes.len() <= 2 * 64 + 16);
    }
    let text = tail.text();
    assert!(text.len() <= 64);
    assert!(text.ends_with("line 9999"));
    // The partial first line is dropped.
    assert!(text.lines().all(|l| l.starts_with("line ")), "{text}");

    let mut silent = Tail::new(0);
    silent.push(b"anything");
    assert_eq!(silent.text(), "");
}

#[test]
fn stat_lines_with_odd_names_parse() {
    assert_eq!(
        parse_stat("123 (python3 (x) y) S 1 123 123 0 -1"),
        Some(('S', 123))
    );
    assert_eq!(parse_stat("garbage"), None);
}
