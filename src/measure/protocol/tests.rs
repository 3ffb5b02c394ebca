//! Tests of `protocol`.

use super::*;

#[test]
fn a_byte_order_mark_is_skipped_and_steps_outside_the_range_are_errors() {
    let report = parse("\u{feff}{\"step_ms\": 6.0}\n").expect("a BOM is accepted");
    assert_eq!(report.steps_ms, vec![6.0]);
    for (text, line) in [
        ("{\"step_ms\": 1.0}\n{\"step_ms\": 1e308}\n", 2),
        ("{\"steps_ms\": [1e-300]}\n", 1),
        ("{\"step_ms\": 3600001, \"warmup\": true}\n", 1),
    ] {
        let err = parse(text).expect_err(text);
        assert_eq!(err.line, line, "{text}");
        assert!(
            matches!(err.kind, ProtocolErrorKind::OutOfRange { .. }),
            "{err}"
        );
        let message = err.to_string();
        assert!(message.len() < 120, "{message}");
        assert!(message.contains("1 ns .. 1 h"), "{message}");
    }
    let wide = StepRange {
        min_ms: 1e-305,
        max_ms: 1e305,
    };
    assert!(parse_with("{\"step_ms\": 1e-300}\n", wide).is_ok());
}

#[test]
fn bounded_figures_never_run_long() {
    let cases = [
        (6.02, "6.02"),
        (0.0, "0"),
        (-0.0, "0"),
        (1e-300, "1.00000e-300"),
        (1e300, "1.00000e300"),
        (123_456.789, "123456.789"),
        (0.001_234_567, "0.001235"),
    ];
    for (value, want) in cases {
        assert_eq!(bounded(value), want, "{value}");
    }
    for value in [f64::MAX, f64::MIN_POSITIVE, 5e-324, -1e200, 999_999.999_999] {
        assert!(bounded(value).len() <= 14, "{value}: {}", bounded(value));
    }
}

fn err_kind(text: &str) -> (usize, ProtocolErrorKind) {
    let err = parse(text).expect_err(text);
    (err.line, err.kind)
}

#[test]
fn parses_every_line_kind() {
    let text = concat!(
        "{\"step_ms\": 31.0, \"warmup\": true}\n",
        "{\"steps_ms\": [30.5, 29], \"warmup\": true}\n",
        "\n",
        "{\"step_ms\": 6.02}\n",
        "{\"step_ms\": 6, \"warmup\": false}\n",
        "{\"steps_ms\": [6.01, 6.03]}\r\n",
        "{\"env\": {\"torch\": \"2.5.1\", \"cuda\": 12.4, \"tf32\": true, \"sm\": 90}}\n",
        "{\"env\": {\"torch\": \"2.6.0\", \"missing\": null}}\n",
        "{\"trace\": \"traces/step.json\"}\n",
        "{\"nsys\": \"nsys/case.nsys-rep\", \"ncu\": \"ncu/case.csv\"}\n",
        "{\"future_key\": {\"nested\": [1, 2, {\"x\": null}]}, \"step_ms\": 6.04}\n",
        "{}\n",
        "   {\"step_ms\": 6.05}",
    );
    let report = parse(text).expect("valid protocol");
    assert_eq!(report.warmup_ms, vec![31.0, 30.5, 29.0]);
    assert_eq!(report.steps_ms, vec![6.02, 6.0, 6.01, 6.03, 6.04, 6.05]);
    let env: Vec<(&str, &str)> = report
        .env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        env,
        vec![
            ("cuda", "12.4"),
            ("sm", "90"),
            ("tf32", "true"),
            ("torch", "2.6.0")
        ]
    );
    assert_eq!(report.traces, vec!["traces/step.json".to_owned()]);
    assert_eq!(report.nsys, vec!["nsys/case.nsys-rep".to_owned()]);
    assert_eq!(report.ncu, vec!["ncu/case.csv".to_owned()]);
}

#[test]
fn empty_and_blank_input_is_an_empty_report() {
    for text in ["", "\n", "\n\n  \n\t\n", "\r\n"] {
        assert_eq!(parse(text), Ok(HarnessReport::default()), "{text:?}");
    }
}

#[test]
fn escaped_strings_are_decoded() {
    let report = parse(r#"{"env": {"na\u006de": "v\"1\""}, "trace": "a\\b.json"}"#).expect("valid");
    assert_eq!(report.env.get("name").map(String::as_str), Some("v\"1\""));
    assert_eq!(report.traces, vec!["a\\b.json".to_owned()]);
}

#[test]
fn harness_text_is_sanitised() {
    let report = parse("{\"env\": {\"k\\u001b[31m\": \"red\\u001b[0m\"}}").expect("valid");
    assert_eq!(report.env.get("k").map(String::as_str), Some("red"));
}

#[test]
#[expect(clippy::too_many_lines, reason = "one table holding every error case")]
fn errors_name_the_line_and_the_problem() {
    use ProtocolErrorKind as K;
    let ok = "{\"step_ms\": 1}\n";
    let cases: Vec<(String, usize, K)> = vec![
        (
            format!("{ok}{{\"step_ms\": NaN}}"),
            2,
            K::NotFinite {
                key: "step_ms".into(),
                what: "NaN",
            },
        ),
        (
            format!("{ok}{ok}{{\"steps_ms\": [1.0, Infinity]}}\n"),
            3,
            K::NotFinite {
                key: "steps_ms".into(),
                what: "infinite",
            },
        ),
        (
            "{\"step_ms\": -Infinity}".into(),
            1,
            K::NotFinite {
                key: "step_ms".into(),
                what: "infinite",
            },
        ),
        (
            "{\"step_ms\": 1e999}".into(),
            1,
            K::NotFinite {
                key: "a number".into(),
                what: "infinite",
            },
        ),
        (
            "{\"step_ms\": 0}".into(),
            1,
            K::NotPositive {
                key: "step_ms".into(),
                value: 0.0,
            },
        ),
        (
            format!("{ok}\n{{\"step_ms\": -2.5}}"),
            3,
            K::NotPositive {
                key: "step_ms".into(),
                value: -2.5,
            },
        ),
        (
            "{\"steps_ms\": [1, 0.0]}".into(),
            1,
            K::NotPositive {
                key: "steps_ms[1]".into(),
                value: 0.0,
            },
        ),
        (
            "{\"step_ms\": \"6.02\"}".into(),
            1,
            K::StepNotNumber { found: "a string" },
        ),
        (
            "{\"step_ms\": null}".into(),
            1,
            K::StepNotNumber { found: "null" },
        ),
        (
            "{\"step_ms\": [6.02]}".into(),
            1,
            K::StepNotNumber { found: "an array" },
        ),
        (
            "{\"steps_ms\": 6.02}".into(),
            1,
            K::StepsNotArray { found: "a number" },
        ),
        (
            "{\"steps_ms\": [6.02, \"x\"]}".into(),
            1,
            K::StepsElement {
                index: 1,
                found: "a string",
            },
        ),
        (
            "{\"steps_ms\": [[6.02]]}".into(),
            1,
            K::StepsElement {
                index: 0,
                found: "an array",
            },
        ),
        (
            "{\"step_ms\": 1, \"warmup\": 1}".into(),
            1,
            K::WarmupNotBool { found: "a number" },
        ),
        (
            "{\"env\": [\"torch\"]}".into(),
            1,
            K::EnvNotObject { found: "an array" },
        ),
        (
            "{\"env\": {\"torch\": [2, 5]}}".into(),
            1,
            K::EnvValue {
                key: "torch".into(),
                found: "an array",
            },
        ),
        (
            "{\"trace\": 3}".into(),
            1,
            K::TraceNotString { found: "a number" },
        ),
        (
            "{\"nsys\": true}".into(),
            1,
            K::ProfileNotString {
                key: "nsys",
                found: "a boolean",
            },
        ),
        (
            "{\"ncu\": [\"a.csv\"]}".into(),
            1,
            K::ProfileNotString {
                key: "ncu",
                found: "an array",
            },
        ),
        ("[6.02]".into(), 1, K::NotObject { found: "an array" }),
        ("6.02".into(), 1, K::NotObject { found: "a number" }),
        ("\"step\"".into(), 1, K::NotObject { found: "a string" }),
        ("null".into(), 1, K::NotObject { found: "null" }),
        (format!("{ok}{{\"step_ms\": 6."), 2, K::Truncated),
        (format!("{ok}{{\"step_ms\""), 2, K::Truncated),
    ];
    for (text, line, kind) in cases {
        assert_eq!(err_kind(&text), (line, kind), "{text:?}");
    }
}

#[test]
fn malformed_lines_report_the_column_not_serdes_line() {
    let cases = [
        ("{\"step_ms\": 1}\nnot json\n", 2),
        ("{\"step_ms\": 1,}", 1),
        ("{\"step_ms\": 1} trailing", 1),
        ("{'step_ms': 1}", 1),
        ("{\"step_ms\": 1, \"step_ms\": 2}", 1),
    ];
    for (text, line) in cases {
        let err = parse(text).expect_err(text);
        assert_eq!(err.line, line, "{text:?}");
        match &err.kind {
            ProtocolErrorKind::Malformed { message } => {
                assert!(!message.contains("at line"), "{message}");
            }
            other => panic!("{text:?}: expected malformed, got {other:?}"),
        }
    }
    let err = parse("x\n").expect_err("garbage");
    assert!(
        err.to_string().starts_with("line 1: malformed JSON"),
        "{err}"
    );
}

#[test]
fn nan_inside_a_string_is_not_mistaken_for_a_literal() {
    // A genuinely malformed line that mentions NaN only inside a string.
    let err = parse("{\"note\": \"NaN\" \"step_ms\": 1}").expect_err("missing comma");
    assert!(
        matches!(err.kind, ProtocolErrorKind::Malformed { .. }),
        "{err:?}"
    );
    // And a valid line with such a string parses.
    assert!(parse("{\"note\": \"NaN\", \"step_ms\": 1}").is_ok());
}

#[test]
fn every_error_has_a_hint_and_a_lowercase_message() {
    let texts = [
        "x",
        "{\"step_ms\": NaN}",
        "{\"step_ms\": 0}",
        "{\"step_ms\": \"1\"}",
        "{\"steps_ms\": 1}",
        "{\"steps_ms\": [\"1\"]}",
        "{\"warmup\": 2}",
        "{\"env\": 1}",
        "{\"env\": {\"a\": {}}}",
        "{\"trace\": 1}",
        "{\"nsys\": 1}",
        "{\"ncu\": null}",
        "[]",
        "{\"step_ms\": 1",
    ];
    for text in texts {
        let err = parse(text).expect_err(text);
        assert!(!err.hint().is_empty());
        let message = err.kind.to_string();
        let first = message.chars().next().expect("non-empty message");
        assert!(
            !first.is_uppercase() || message.starts_with("NaN"),
            "{message}"
        );
    }
}

#[test]
fn sanitize_strips_escapes_and_controls() {
    let cases = [
        ("plain text", "plain text"),
        ("tab\there\nnext", "tab\there\nnext"),
        ("\u{1b}[31mred\u{1b}[0m", "red"),
        ("\u{1b}[1;38;5;208mbold\u{1b}[m", "bold"),
        ("\u{1b}]0;title\u{7}after", "after"),
        ("\u{1b}]8;;http://x\u{1b}\\link\u{1b}]8;;\u{1b}\\", "link"),
        ("\u{1b}cclear", "clear"),
        ("bell\u{7} nul\u{0} del\u{7f}", "bell nul del"),
        ("c1\u{9b}2Jcsi", "c1csi"),
        ("a\u{85}b", "ab"),
        ("windows\r\nline", "windows\nline"),
        ("10%\r50%\r100%\ndone", "100%\ndone"),
        ("first\nbar 1\rbar 2", "first\nbar 2"),
        ("rtl\u{202e}evil\u{2066}", "rtlevil"),
        ("unicode: µs ✓", "unicode: µs ✓"),
        ("trailing esc\u{1b}", "trailing esc"),
        ("unterminated \u{1b}[31", "unterminated "),
    ];
    for (input, expected) in cases {
        assert_eq!(sanitize(input), expected, "{input:?}");
    }
}

/// The accuracy guard's key: answers as counts or as a share of a sample, a metric reported
/// twice adding its answers, and each kind of bad value named with its metric.
#[test]
fn quality_lines_are_counted_and_checked() {
    use crate::compare::quality::QualityCount;
    let report = parse(
        "{\"step_ms\": 6.0}\n\
         {\"quality\": {\"gsm8k\": {\"correct\": 412, \"total\": 500}, \"mmlu\": {\"score\": 0.7125, \"n\": 400}}}\n\
         {\"quality\": {\"gsm8k\": {\"correct\": 100.0, \"total\": 100}}}\n",
    )
    .expect("valid");
    assert_eq!(
        report.quality["gsm8k"],
        QualityCount {
            correct: 512,
            total: 600
        }
    );
    // 0.7125 x 400 = 285 right.
    assert_eq!(
        report.quality["mmlu"],
        QualityCount {
            correct: 285,
            total: 400
        }
    );
    for (line, expected) in [
        (
            "{\"quality\": [1]}",
            "quality is an array, not an object of metric names",
        ),
        (
            "{\"quality\": {\"x\": 3}}",
            "quality.x is a number, not an object",
        ),
        (
            "{\"quality\": {\"x\": {\"correct\": 5, \"total\": 4}}}",
            "quality.x has 5 correct of 4",
        ),
        (
            "{\"quality\": {\"x\": {\"correct\": -1, \"total\": 4}}}",
            "quality.x.correct is a number, not a whole number of answers",
        ),
        (
            "{\"quality\": {\"x\": {\"score\": 1.5, \"n\": 10}}}",
            "quality.x.score is 1.5, not a share from 0 to 1",
        ),
        (
            "{\"quality\": {\"x\": {\"score\": 0.5}}}",
            "quality.x needs correct and total, or score and n",
        ),
    ] {
        let err = parse(line).expect_err(line);
        assert!(err.to_string().contains(expected), "{line}: {err}");
        assert!(err.hint().contains("\"correct\": 412"), "{}", err.hint());
    }
}

#[test]
fn speculative_lines_add_their_rounds_and_are_checked() {
    use crate::compare::speculation::DraftCounts;
    let report = parse(
        "{\"step_ms\": 7.9}\n\
         {\"speculative\": {\"drafted\": 1600, \"accepted\": 1123}}\n\
         {\"speculative\": {\"drafted\": 400.0, \"accepted\": 0}}\n",
    )
    .expect("valid");
    assert_eq!(
        report.speculative,
        Some(DraftCounts {
            drafted: 2000,
            accepted: 1123
        })
    );
    assert_eq!(
        parse("{\"step_ms\": 7.9}\n").expect("valid").speculative,
        None
    );
    for (line, expected) in [
        (
            "{\"speculative\": 3}",
            "speculative is a number, not an object",
        ),
        (
            "{\"speculative\": {\"drafted\": 4, \"accepted\": 5}}",
            "speculative accepts 5 of 4 drafted tokens",
        ),
        (
            "{\"speculative\": {\"drafted\": 4}}",
            "speculative has no accepted",
        ),
        (
            "{\"speculative\": {\"drafted\": 4, \"accepted\": 1.5}}",
            "speculative.accepted is a number, not a whole number of tokens",
        ),
    ] {
        let err = parse(line).expect_err(line);
        assert!(err.to_string().contains(expected), "{line}: {err}");
        assert!(err.hint().contains("\"drafted\": 1600"), "{}", err.hint());
    }
}

proptest::proptest! {
    #[test]
    fn sanitized_text_has_no_controls_but_newline_and_tab(s in ".*") {
        let clean = sanitize(&s);
        proptest::prop_assert!(clean.chars().all(|c| !c.is_control() || c == '\n' || c == '\t'));
        proptest::prop_assert_eq!(sanitize(&clean), clean.clone());
    }

    #[test]
    fn step_lines_round_trip(steps in proptest::collection::vec(1e-6f64..1e6, 0..50)) {
        let mut text = String::new();
        for s in &steps {
            text.push_str("{\"step_ms\": ");
            text.push_str(&s.to_string());
            text.push_str("}\n");
        }
        let report = parse(&text).expect("valid");
        proptest::prop_assert_eq!(report.steps_ms.len(), steps.len());
        // serde_json's default float parser may be 1 ulp off the shortest repr.
        for (got, want) in report.steps_ms.iter().zip(&steps) {
            proptest::prop_assert!((got - want).abs() <= want * 4.0 * f64::EPSILON);
        }
    }
}

#[test]
fn steps_written_so_far_count_complete_lines_only() {
    // Warm-up steps never count; an array counts each step; a half-written last line waits.
    let text = "{\"step_ms\": 30.0, \"warmup\": true}\n{\"step_ms\": 6.0}\n{\"steps_ms\": [6.0, 6.1]}\n{\"step_m";
    assert_eq!(timed_steps_written(text, StepRange::default()), Some(3));
    assert_eq!(timed_steps_written("", StepRange::default()), Some(0));
    assert_eq!(
        timed_steps_written("{\"step_ms\": 6.0}", StepRange::default()),
        Some(0)
    );
    assert_eq!(
        timed_steps_written("not json\n", StepRange::default()),
        None
    );
}
