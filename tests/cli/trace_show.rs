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
