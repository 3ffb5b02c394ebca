//! `utilgate trace show|diff` on torch.profiler trace files written by the test: what is printed
//! agrees with the trace, and a trace no profiler could write is refused.

use std::path::PathBuf;

use crate::env::{TestEnv, stderr, stdout};

fn trace(env: &TestEnv, args: &[&str]) -> std::process::Output {
    env.std_cmd()
        .arg("trace")
        .args(args)
        .output()
        .expect("runs")
}

/// Writes `events` (one JSON object each, one per line after the first) as a Kineto trace.
fn write_trace(env: &TestEnv, name: &str, events: &[String]) -> PathBuf {
    env.write(
        name,
        &format!("{{\"traceEvents\": [\n{}\n]}}\n", events.join(",\n")),
    )
}

fn cpu_op(name: &str, ts: &str, dur: &str) -> String {
    format!(
        r#"{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": 1, "tid": 1, "ts": {ts}, "dur": {dur}}}"#
    )
}

/// Times no profiler writes printed `inf µs` (an end past `f64::MAX`), `NaN%` (an infinite GPU
/// busy time over an infinite wall) and a 31-digit negative wall: each is refused, naming the
/// file, the event's place in `traceEvents` with its line, and the field.
#[test]
fn absurd_timestamps_are_refused_naming_the_file_the_event_and_the_field() {
    let env = TestEnv::new();
    let kernel = r#"{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1e308, "dur": 1e308, "args": {"stream": 7, "correlation": 1}}"#;
    let cases = [
        (
            "inf.json",
            vec![cpu_op("aten::mm", "0", "10"), cpu_op("aten::add", "1e308", "1e308")],
            "traceEvents[1] (line 3, column 1): `ts` is 1e308 µs",
        ),
        (
            "nan.json",
            vec![cpu_op("aten::mm", "0", "10"), kernel.to_owned()],
            "traceEvents[1] (line 3, column 1): `ts` is 1e308 µs",
        ),
        (
            "negative.json",
            vec![
                cpu_op("aten::mm", "0", "10"),
                cpu_op("aten::mm", "20", "10"),
                r#"{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 15, "dur": -1e31}"#.to_owned(),
            ],
            "traceEvents[2] (line 4, column 1): `dur` is -1e31 µs, but a duration must be a finite number of microseconds from 0 to 2^53",
        ),
    ];
    for (name, events, said) in cases {
        let file = write_trace(&env, name, &events);
        let out = trace(&env, &["show", file.to_str().expect("utf-8")]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{name}: {}{err}", stdout(&out));
        assert!(stdout(&out).is_empty(), "{name}: {}", stdout(&out));
        assert!(
            err.contains(&format!("trace {}: {said}", file.display())),
            "{name}: {err}"
        );
        assert!(err.contains("hint: "), "{name}: {err}");
        // `trace diff` reads the same files the same way.
        let ok = write_trace(&env, "ok.json", &[cpu_op("aten::mm", "0", "10")]);
        let out = trace(
            &env,
            &[
                "diff",
                ok.to_str().expect("utf-8"),
                file.to_str().expect("utf-8"),
            ],
        );
        assert_eq!(out.status.code(), Some(2), "{name}: {}", stdout(&out));
        assert!(stderr(&out).contains(said), "{name}: {}", stderr(&out));
    }
}

/// A CPU-only decode loop as torch.profiler writes it on a machine without a GPU: three steps
/// of 1000 µs, each `aten::linear` (600 µs) holding `aten::matmul` (550 µs) holding `aten::mm`
/// (`mm_us`), then `aten::relu` (100 µs).
fn cpu_only(mm_us: u32) -> Vec<String> {
    let mut ev = Vec::new();
    for step in 0..3u32 {
        let t0 = 10_000 + step * 1000;
        ev.push(format!(
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 7, "tid": 1, "ts": {t0}, "dur": 1000}}"#
        ));
        for (name, at, dur) in [
            ("aten::linear", 10, 600),
            ("aten::matmul", 20, 550),
            ("aten::mm", 30, mm_us),
            ("aten::relu", 700, 100),
        ] {
            ev.push(cpu_op(name, &(t0 + at).to_string(), &dur.to_string()));
        }
    }
    ev
}

/// On a CPU-only trace the table was inclusive (`aten::linear` 600 µs, `aten::matmul` 550 µs and
/// `aten::mm` 500 µs: 1750 µs of rows in a 1000 µs step), had no self-time column, and the diff
/// printed "GPU idle 100.0% -> 100.0%". Now: self time first, and no GPU figure.
#[test]
fn a_cpu_only_trace_shows_self_time_and_no_gpu_figure() {
    let env = TestEnv::new();
    let then = write_trace(&env, "then.json", &cpu_only(500));
    let now = write_trace(&env, "now.json", &cpu_only(540));
    let out = trace(&env, &["show", now.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("no GPU activity recorded (no kernel, copy or memset in the trace)"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("top host operators by self time"))
        .skip(1)
        .take(4)
        .collect();
    // count, self µs, share of all operators' self time (700 µs), µs with the operators inside.
    assert_eq!(
        rows,
        vec![
            "      1.0      540.0  77.1%      540.0  aten::mm",
            "      1.0      100.0  14.3%      100.0  aten::relu",
            "      1.0       50.0   7.1%      600.0  aten::linear",
            "      1.0       10.0   1.4%      550.0  aten::matmul",
        ],
        "{text}"
    );
    assert!(
        text.contains("self time of all host operators: 700.0 µs per step, 70.0% of the wall"),
        "{text}"
    );
    assert!(
        text.contains(
            "aten::mm leads with 540.0 µs per step, 77% of all host operators' self time"
        ),
        "{text}"
    );
    assert!(
        !text.contains("GPU busy") && !text.contains("idle"),
        "{text}"
    );

    let out = trace(
        &env,
        &[
            "diff",
            then.to_str().expect("utf-8"),
            now.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "per step: wall 1000.0 -> 1000.0 µs; no GPU activity recorded in either trace"
        ),
        "{text}"
    );
    assert!(
        !text.contains("GPU idle") && !text.contains("category shares"),
        "{text}"
    );
    assert!(
        text.contains("host operators, largest change of self time first:\n  aten::matmul -80% (50.0 -> 10.0 self µs per step; 1 -> 1 calls)\n  aten::mm +8% (500.0 -> 540.0 self µs per step; 1 -> 1 calls)"),
        "{text}"
    );
}
