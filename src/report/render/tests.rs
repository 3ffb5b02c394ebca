//! Tests of the templates and rendering helpers, on a report built from a stored run whose
//! figures are chosen to exercise every verdict and section.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use jiff::Timestamp;
use proptest::prelude::*;

use super::*;
use crate::case::{CaseKey, Phase};
use crate::compare::{Decision, EnvChange, error_decision, missing_decision};
use crate::report::{BaselineRef, Judgement};
use crate::store::{RunId, RunSummary, StoredResult, StoredRun};

fn key(suite: &str, model: &str, batch: u64) -> CaseKey {
    CaseKey {
        suite: suite.into(),
        model: model.into(),
        precision: "bf16".into(),
        phase: if suite == "prefill" {
            Phase::Prefill
        } else {
            Phase::Decode
        },
        batch,
        context: 4096,
        axes: crate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

fn decision(verdict: Verdict, now: f64, then: f64, reasons: &[&str]) -> Decision {
    Decision {
        verdict,
        util_now: Some(now),
        util_then: Some(then),
        step_now_ms: Some(2.0 / now),
        step_then_ms: Some(2.0 / then),
        drop_pct: Some((then - now) / then * 100.0),
        interval_pct: Some((4.0, 9.0)),
        p_value: Some(1e-4),
        n_now: 60,
        n_then: 60,
        repeats_now: 3,
        repeats_then: 3,
        floor_changed: false,
        noise_pct: Some(0.4),
        resolution_pct: Some(1.1),
        suspect: false,
        untrusted: false,
        gated_on: crate::compare::GateStat::Median,
        tails: Vec::new(),
        decided_by: None,
        canary: None,
        host_adjusted_drop_pct: None,
        reach: None,
        slide: None,
        reasons: reasons.iter().map(|r| (*r).to_owned()).collect(),
        quality: Vec::new(),
        acceptance: None,
        energy: None,
    }
}

fn result(id: i64, key: &CaseKey, median_ms: Option<f64>, error: Option<&str>) -> StoredResult {
    let floor_ms = 2.0;
    StoredResult {
        id,
        run_id: RunId(7),
        key: key.clone(),
        gpu_sku: "h100-sxm".into(),
        started_at: Timestamp::from_second(1_767_225_600).expect("in range"),
        git_sha: Some("0123456789abcdef".into()),
        branch: Some("feature".into()),
        verdict: None,
        error: error.map(str::to_owned),
        floor_ms: Some(floor_ms),
        floor_json: Some(serde_json::json!({ "bound": "memory" })),
        median_ms,
        utilisation: median_ms.map(|m| floor_ms / m),
        mbu: median_ms.map(|m| floor_ms / m),
        mfu: median_ms.map(|m| 0.1 * floor_ms / m),
        summary_json: median_ms.map(|m| {
            serde_json::json!({ "p90_ms": m * 1.01, "p99_ms": m * 1.03, "n": 60, "repeats": 3, "repeat_spread_pct": 0.3 })
        }),
        decision_json: None,
        repeats_ms: Vec::new(),
        warmup_ms: Vec::new(),
        env: BTreeMap::new(),
        gpu_state_json: None,
        stderr_tail: None,
        budget: None,
    }
}

#[expect(clippy::too_many_lines, reason = "one fixture, read top to bottom")]
/// A run with two suites: decode has a regression (with an environment change, GPU state and a
/// trend), an error and a missing case; prefill only passes.
pub(crate) fn sample_report() -> RunReport {
    let regressed = key("decode", "llama-3.1-8b", 8);
    let passed = key("decode", "llama-3.1-8b", 1);
    let errored = key("decode", "qwen3-8b", 1);
    let missing = key("decode", "qwen3-8b", 8);
    let prefill_a = key("prefill", "llama-3.1-8b", 1);
    let prefill_b = key("prefill", "llama-3.1-8b", 4);
    let mut reg = result(1, &regressed, Some(6.5), None);
    reg.gpu_state_json = Some(serde_json::json!({
        "sm_clock_mhz": 1980,
        "throttle_reasons": ["sw_power_cap"],
        "power_limit_w": 700
    }));
    let run = StoredRun {
        summary: RunSummary {
            id: RunId(7),
            started_at: Timestamp::from_second(1_767_225_600).expect("in range"),
            finished_at: Timestamp::from_second(1_767_225_900).expect("in range"),
            git_sha: Some("0123456789abcdef".into()),
            branch: Some("feature".into()),
            trigger: Some("pull_request".into()),
            pr_number: Some(42),
            gpu_sku: "h100-sxm".into(),
            n_results: 5,
            verdicts: BTreeMap::new(),
        },
        gpu_json: None,
        host: Some("gpu-runner-1".into()),
        utilgate_version: "0.1.0".into(),
        config_json: None,
        results: vec![
            reg,
            result(2, &passed, Some(4.0), None),
            result(
                3,
                &errored,
                None,
                Some("repeat 0: harness exited with status 3"),
            ),
            result(4, &prefill_a, Some(2.5), None),
            result(5, &prefill_b, Some(2.6), None),
        ],
        budget_night: None,
    };
    let baseline = |util: f64| BaselineRef {
        run_id: 5,
        started_at: Some("2026-11-28T03:00:00Z".into()),
        git_sha: Some("fedcba9876543210".into()),
        median_ms: Some(2.0 / util),
        utilisation: Some(util),
    };
    let judgement = |key: &CaseKey, decision: Decision, base: Option<BaselineRef>| Judgement {
        key: key.clone(),
        decision,
        baseline: base,
        env_changes: Vec::new(),
        threshold_pct: 3.0,
    };
    let mut reg_j = judgement(
        &regressed,
        decision(
            Verdict::Regressed,
            2.0 / 6.5,
            0.333,
            &["Utilisation fell 7.6% (noise allows 4.0% to 9.0%), beyond the 3.0% threshold."],
        ),
        Some(baseline(0.333)),
    );
    reg_j.env_changes = vec![
        EnvChange::Changed {
            key: "torch".into(),
            then: "2.5.1".into(),
            now: "2.6.0".into(),
        },
        EnvChange::Added {
            key: "triton".into(),
            now: "3.2.0".into(),
        },
    ];
    let judgements = vec![
        reg_j,
        judgement(
            &passed,
            decision(Verdict::Pass, 0.5, 0.5, &["No change beyond the noise."]),
            Some(baseline(0.5)),
        ),
        judgement(
            &errored,
            error_decision(
                "repeat 0: harness exited with status 3\nstderr:\nRuntimeError: CUDA out of memory\n```\nhint: lower the batch",
            ),
            None,
        ),
        judgement(&missing, missing_decision(None), Some(baseline(0.6))),
        judgement(
            &prefill_a,
            decision(Verdict::Pass, 0.8, 0.8, &["No change beyond the noise."]),
            Some(baseline(0.8)),
        ),
        judgement(
            &prefill_b,
            Decision {
                util_then: None,
                step_then_ms: None,
                drop_pct: None,
                ..decision(Verdict::New, 0.77, 0.77, &["No baseline yet on h100-sxm."])
            },
            None,
        ),
    ];
    let report = RunReport::build(
        &run,
        &judgements,
        &[Verdict::Regressed, Verdict::Invalid],
        false,
    );
    let mut trends = BTreeMap::new();
    trends.insert(
        regressed.clone(),
        (1..=5)
            .map(|i| TrendPoint {
                run_id: i,
                started_at: format!("2026-01-0{i}T03:00:00Z"),
                git_sha: Some(format!("{i}{i}{i}{i}aaaabbbb")),
                median_ms: Some(6.0 + 0.01 * i as f64),
                utilisation: Some(0.333 - 0.001 * i as f64),
                current: false,
            })
            .collect(),
    );
    report.with_trends(&trends)
}

fn renderer() -> Renderer {
    Renderer::new(&BTreeMap::new()).expect("built-in templates compile")
}

/// Parse `text` as XML, checking every element is closed in order; returns element names seen.
pub(crate) fn well_formed(text: &str) -> Result<Vec<String>, String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                for attr in e.attributes() {
                    attr.map_err(|err| format!("bad attribute in <{name}>: {err}"))?;
                }
                seen.push(name.clone());
                stack.push(name);
            }
            Ok(Event::Empty(e)) => {
                seen.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Ok(Event::End(e)) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                match stack.pop() {
                    Some(open) if open == name => {}
                    other => return Err(format!("</{name}> closes {other:?}")),
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(err) => {
                return Err(format!("at byte {}: {err}", reader.buffer_position()));
            }
        }
    }
    if stack.is_empty() {
        Ok(seen)
    } else {
        Err(format!("unclosed elements: {stack:?}"))
    }
}

#[test]
fn every_template_renders_the_sample_report() {
    let report = sample_report();
    let r = renderer();
    for format in ReportFormat::ALL {
        let text = r.render(format, &report).expect("renders");
        insta::assert_snapshot!(format!("{format:?}").to_lowercase(), text);
    }
}

/// The sample report with energy on its regressed case (#33 item 4): 3 repeats of 100 steps
/// at 8 tokens a step, 1.1 J a token now against 1.0 then, the steps as before; a fourth
/// repeat's readings were too sparse.
fn energy_report() -> RunReport {
    use crate::compare::energy::{
        EnergySource, EnergyWindow, RepeatEnergy, apply_energy, judge_energy,
    };
    let repeats = |per_token: &[f64]| -> Vec<RepeatEnergy> {
        let mut out: Vec<RepeatEnergy> = per_token
            .iter()
            .zip(0..)
            .map(|(j, repeat)| RepeatEnergy {
                repeat,
                measured: Ok(EnergyWindow {
                    joules: j * 800.0,
                    steps: 100,
                    window_ms: 2000.0,
                    source: EnergySource::Counter,
                    power_limit_w: Some(700.0),
                }),
            })
            .collect();
        out.push(RepeatEnergy {
            repeat: 3,
            measured: Err("all 100 timed steps appeared between two GPU readings".into()),
        });
        out
    };
    let check = judge_energy(
        &repeats(&[1.0, 1.01, 0.99]),
        &repeats(&[1.1, 1.111, 1.089]),
        8,
        &crate::compare::Policy::default(),
        5,
        true,
    )
    .expect("a check");
    let mut report = sample_report();
    let case = report
        .cases
        .iter_mut()
        .find(|c| c.verdict == Verdict::Regressed)
        .expect("the regressed case");
    apply_energy(&mut case.decision, check);
    case.energy_line = case
        .decision
        .energy
        .as_ref()
        .map(|e| crate::report::context::energy_line(&e.now));
    report
}

#[test]
fn energy_shows_where_a_case_measured_it_with_the_figures_its_sentence_uses() {
    let report = energy_report();
    let r = renderer();
    let line = "energy: 1.100 J/token, 0.9091 tok/s/W, 8.800 J/step, 440 W mean at a 700 W \
                power limit (energy counter, 3 of 4 repeats; repeat 3: all 100 timed steps \
                appeared between two GPU readings)";
    // 2640 J over 6 s is 440 W; 2640 J over 300 steps is 8.8 J a step, 1.1 J a token.
    let md = r.render(ReportFormat::Markdown, &report).expect("renders");
    assert!(md.contains(&format!("- {line}")), "{md}");
    assert!(
        md.contains("Energy regressed: joules per token rose 10.0% (from 1.000 to 1.100 J/token"),
        "{md}"
    );
    let html = r.render(ReportFormat::Html, &report).expect("renders");
    // The HTML escaper writes '/' as an entity.
    let escaped = line.replace('/', "&#x2f;");
    assert!(html.contains(&format!("<li>{escaped}.</li>")), "{html}");
    well_formed(&html).expect("well-formed");
    let table = crate::report::render_human(
        &report,
        crate::report::Terminal {
            color: false,
            width: None,
        },
    );
    insta::assert_snapshot!("energy_run_table", table);
    // Without energy the table has no such column.
    let plain = crate::report::render_human(
        &sample_report(),
        crate::report::Terminal {
            color: false,
            width: None,
        },
    );
    assert!(!plain.contains("J/token"), "{plain}");
}

#[test]
fn the_comment_covers_one_suite_with_its_marker_first() {
    let report = sample_report();
    let text = renderer()
        .comment(&report, "decode", GITHUB_COMMENT_LIMIT)
        .expect("renders");
    assert!(text.starts_with("<!-- utilgate:comment suite=decode gpu=h100-sxm -->\n"));
    assert!(text.contains("❌ utilgate: Gate failed on h100-sxm: 1 regressed of 4 cases"));
    assert!(!text.contains("prefill"), "{text}");
    // Regressions first, and evidence for the cases that need a look, not for the pass.
    let reg = text.find("🔴 regressed").expect("regressed row");
    let pass = text.find("✅ pass").expect("pass row");
    assert!(reg < pass);
    assert!(text.contains("`torch` | 2.5.1 | 2.6.0"), "{text}");
    assert!(text.contains("throttle_reasons: sw_power_cap"), "{text}");
    assert_eq!(
        text.matches("<details>").count(),
        text.matches("</details>").count()
    );
}

#[test]
fn a_quiet_suite_folds_its_table_away() {
    let report = sample_report();
    let text = renderer()
        .comment(&report, "prefill", GITHUB_COMMENT_LIMIT)
        .expect("renders");
    assert!(
        text.contains("✅ utilgate: Gate passed on h100-sxm: 2 cases (1 new)."),
        "{text}"
    );
    let table = text.find("| case |").expect("table");
    let fold = text.find("<details><summary>prefill").expect("folded");
    assert!(fold < table);
    assert!(
        !text.contains("evidence"),
        "no per-case details when nothing needs a look"
    );
}

#[test]
fn html_is_well_formed_with_one_chart_per_case() {
    let report = sample_report();
    let html = renderer()
        .render(ReportFormat::Html, &report)
        .expect("renders");
    let elements = well_formed(&html).expect("well-formed");
    let charts = elements.iter().filter(|e| *e == "svg").count();
    assert_eq!(charts, report.cases.len());
    assert!(!html.contains("<script"), "no scripts");
    assert!(!html.contains("http://") || html.matches("http://").count() == charts);
    assert!(!html.contains("https://"), "no network resources");
}

#[test]
fn junit_is_well_formed_and_counts_what_ci_tools_show() {
    let report = sample_report();
    let xml = renderer()
        .render(ReportFormat::Junit, &report)
        .expect("renders");
    let elements = well_formed(&xml).expect("well-formed");
    let count = |name: &str| elements.iter().filter(|e| *e == name).count();
    assert_eq!(count("testcase"), report.cases.len());
    assert_eq!(count("testsuite"), 2);
    assert_eq!(count("failure"), 1);
    assert_eq!(count("error"), 1);
    assert_eq!(count("skipped"), 1);
    assert!(
        xml.contains(
            r#"<testsuites name="utilgate" tests="6" failures="1" errors="1" skipped="1">"#
        )
    );
}

#[test]
fn values_are_escaped_for_each_format() {
    let mut report = sample_report();
    report.cases[0].key.model = "evil<script>|x".into();
    report.cases[0].case = report.cases[0].key.to_string();
    report.cases[0].point = report.cases[0].key.point();
    let r = renderer();
    let html = r.render(ReportFormat::Html, &report).expect("renders");
    assert!(!html.contains("evil<script>"));
    assert!(html.contains("evil&lt;script&gt;"));
    well_formed(&html).expect("still well-formed");
    let xml = r.render(ReportFormat::Junit, &report).expect("renders");
    well_formed(&xml).expect("still well-formed");
    let md = r.render(ReportFormat::Markdown, &report).expect("renders");
    assert!(
        md.contains("evil<script>\\|x"),
        "code span keeps text, pipe escaped"
    );
    assert!(
        md.contains("evil&lt;script&gt;\\|x"),
        "text outside code is escaped"
    );
}

#[test]
fn user_templates_replace_built_ins_and_errors_name_the_template() {
    let mut overrides = BTreeMap::new();
    overrides.insert(
        "comment.md.j2".to_owned(),
        "custom: {{ summary }} ({{ cases|length }} cases)\n".to_owned(),
    );
    let r = Renderer::new(&overrides).expect("compiles");
    let text = r
        .comment(&sample_report(), "prefill", 1000)
        .expect("renders");
    assert_eq!(
        text,
        "<!-- utilgate:comment suite=prefill gpu=h100-sxm -->\ncustom: Gate passed on h100-sxm: 2 cases (1 new). (2 cases)\n"
    );

    overrides.insert("summary.md.j2".into(), "{% for %}".into());
    let err = Renderer::new(&overrides).err().expect("syntax error");
    assert!(
        err.to_string().starts_with("template summary.md.j2: "),
        "{err}"
    );

    overrides.insert("summary.md.j2".into(), "{{ no_such_field }}".into());
    let err = Renderer::new(&overrides)
        .expect("compiles")
        .render(ReportFormat::Summary, &sample_report())
        .expect_err("strict undefined");
    assert!(err.to_string().contains("summary.md.j2"), "{err}");
    assert!(err.to_string().contains("undefined"), "{err}");
}

#[test]
fn markers_are_per_suite_and_gpu_and_cannot_end_the_comment() {
    assert_eq!(
        comment_marker("decode", "h100-sxm"),
        "<!-- utilgate:comment suite=decode gpu=h100-sxm -->"
    );
    assert_ne!(comment_marker("a", "h100-sxm"), comment_marker("a", "h200"));
    let odd = comment_marker("x-->y", "g>");
    assert_eq!(odd.matches("-->").count(), 1);
    assert!(odd.ends_with("-->"));
}

#[test]
fn sparklines_scale_between_min_and_max() {
    let point = |u: Option<f64>| TrendPoint {
        run_id: 1,
        started_at: String::new(),
        git_sha: None,
        median_ms: None,
        utilisation: u,
        current: false,
    };
    let cases: [(&[Option<f64>], &str); 5] = [
        (&[], ""),
        (&[None], ""),
        (&[Some(0.5)], "▄"),
        (&[Some(0.5), Some(0.5)], "▄▄"),
        (
            &[Some(0.1), None, Some(0.2), Some(f64::NAN), Some(0.16)],
            "▁ █ ▅",
        ),
    ];
    for (values, want) in cases {
        let points: Vec<TrendPoint> = values.iter().map(|u| point(*u)).collect();
        assert_eq!(sparkline(&points), want, "{values:?}");
    }
}

#[test]
fn history_charts_plot_every_finite_point_inside_the_view() {
    let point = |i: i64, u: Option<f64>, current: bool| TrendPoint {
        run_id: i,
        started_at: String::new(),
        git_sha: Some("abcdef0123".into()),
        median_ms: None,
        utilisation: u,
        current,
    };
    let guide = crate::report::ChartGuide::default();
    let empty = crate::report::chart::verdict_svg(&[], &guide);
    assert!(empty.contains("no history yet"));
    well_formed(&empty).expect("well-formed");

    let one = crate::report::chart::verdict_svg(&[point(1, Some(0.3), true)], &guide);
    assert_eq!(one.matches("<circle").count(), 1);
    assert!(one.contains(r#"class="point current""#));

    let points: Vec<TrendPoint> = (0..10)
        .map(|i| {
            point(
                i,
                if i == 4 {
                    Some(f64::NAN)
                } else {
                    Some(0.3 + 0.01 * i as f64)
                },
                i == 9,
            )
        })
        .collect();
    let svg = crate::report::chart::verdict_svg(&points, &guide);
    well_formed(&svg).expect("well-formed");
    assert_eq!(svg.matches("<circle").count(), 9);
    assert!(
        svg.contains("<title>run 9 @ abcdef0, : 39.0%</title>"),
        "{svg}"
    );
    // Without a reference there are no bands.
    assert!(!svg.contains("threshold-band") && !svg.contains("noise-band"));
    // Every coordinate lies inside the 520 x 170 view box.
    for attr in ["cx=\"", "cy=\""] {
        for piece in svg.split(attr).skip(1) {
            let v: f64 = piece[..piece.find('"').expect("closing quote")]
                .parse()
                .expect("number");
            assert!((0.0..=520.0).contains(&v), "{attr}{v}");
            if attr == "cy=\"" {
                assert!((0.0..=170.0).contains(&v), "{attr}{v}");
            }
        }
    }
}

#[test]
fn trends_mark_and_append_the_current_run() {
    let report = sample_report();
    let reg = &report.cases[0];
    assert_eq!(reg.verdict, Verdict::Regressed);
    assert_eq!(reg.trend.len(), 6, "five earlier runs plus this one");
    assert!(reg.trend.last().is_some_and(|p| p.current && p.run_id == 7));
    let errored = report
        .cases
        .iter()
        .find(|c| c.verdict == Verdict::Error)
        .expect("error case");
    assert!(errored.trend.is_empty(), "no point without a measurement");
}

#[test]
fn suites_split_the_gate() {
    let report = sample_report();
    let names: BTreeSet<&str> = report.suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, BTreeSet::from(["decode", "prefill"]));
    let decode = report.for_suite("decode");
    assert!(!decode.gate.passed);
    assert_eq!(decode.cases.len(), 4);
    let prefill = report.for_suite("prefill");
    assert!(prefill.gate.passed);
    assert_eq!(prefill.summary, "Gate passed on h100-sxm: 2 cases (1 new).");
}

#[test]
fn an_oversized_comment_is_cut_with_balanced_blocks() {
    let mut text = String::from("<!-- marker -->\n<details><summary>x</summary>\n\n```text\n");
    for i in 0..10_000 {
        let _ = writeln!(text, "line {i} of a very long harness log");
    }
    let out = fit_comment(&text, GITHUB_COMMENT_LIMIT);
    assert!(out.len() <= GITHUB_COMMENT_LIMIT, "{}", out.len());
    assert!(out.starts_with("<!-- marker -->\n"));
    assert!(out.contains("Truncated to stay under GitHub's 65536-character comment limit"));
    assert_eq!(out.matches("```").count() % 2, 0, "fence closed");
    assert_eq!(
        out.matches("<details").count(),
        out.matches("</details>").count()
    );
    assert_eq!(fit_comment("short", 10), "short");
}

proptest! {
    #[test]
    fn fitted_comments_never_exceed_the_limit(
        lines in proptest::collection::vec("[a-zé<>`/ ]{0,40}", 0..200),
        limit in 300usize..5000,
    ) {
        let text = lines.join("\n");
        let out = fit_comment(&text, limit);
        prop_assert!(out.len() <= limit);
        if text.len() <= limit {
            prop_assert_eq!(out, text);
        }
    }
}

/// The run table (`run`, `runs show`, `report`) on a pipe and at 200, 120 and 80 columns: no
/// line past the width, every figure whole, and the shape kept by a snapshot.
#[test]
fn the_run_table_fits_200_120_and_80_columns_with_every_figure_whole() {
    let report = sample_report();
    let figures: Vec<String> = report
        .cases
        .iter()
        .flat_map(|c| [c.floor_ms, c.step_now_ms, c.p90_ms])
        .flatten()
        .map(|v| crate::report::format::ms(Some(v)))
        .collect();
    assert!(!figures.is_empty());
    for width in [None, Some(200_u16), Some(120), Some(80)] {
        let text = crate::report::render_human(
            &report,
            crate::report::Terminal {
                color: false,
                width,
            },
        );
        if let Some(width) = width {
            // The table, or its blocks (the details after it are prose the terminal wraps).
            let table = text.split("\nREGRESSED ").next().unwrap_or_default();
            let widest = table.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= usize::from(width), "wider than {width}:\n{text}");
        }
        for figure in &figures {
            assert!(
                text.lines().any(|l| l.contains(figure.as_str())),
                "{figure} is split at {width:?}:\n{text}"
            );
        }
        let name = width.map_or_else(|| "run_table_pipe".to_owned(), |w| format!("run_table_{w}"));
        insta::assert_snapshot!(name, text);
    }
}
