//! Tests of the baseline file format: round trip, version 1 still read, field errors. Pure.

use super::*;
use crate::case::Phase;

fn baseline(batch: u64) -> ExportedBaseline {
    ExportedBaseline {
        key: CaseKey {
            suite: "decode".into(),
            model: "seed-8b".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch,
            context: 4096,
            axes: crate::case::Axes::default(),
            tp: 1,
            ep: 1,
        },
        run_id: 0,
        git_sha: Some("abc123".into()),
        branch: Some("main".into()),
        measured_at: "2026-12-01T10:00:00Z".into(),
        moved_at: "2026-12-01T10:05:00Z".into(),
        how: "promote".into(),
        reason: "passed the gate on main".into(),
        verdict: Some(Verdict::Pass),
        floor_ms: Some(6.5),
        floor: None,
        median_ms: Some(10.0),
        utilisation: Some(0.65),
        mbu: Some(0.65),
        mfu: None,
        summary: None,
        env: BTreeMap::from([("torch".into(), "2.5.1".into())]),
        repeats_ms: vec![vec![10.0, 10.1], vec![9.9, 10.0]],
    }
}

fn file(baselines: Vec<ExportedBaseline>) -> ExportFile {
    ExportFile {
        schema_version: EXPORT_SCHEMA_VERSION,
        gpu_sku: "h100-sxm".into(),
        baselines,
    }
}

const PATH: &str = "baselines/h100-sxm.json";

#[test]
fn version_2_round_trips_in_key_order_three_lines_a_case_reviewed_figures_first() {
    let text = render_export(&file(vec![baseline(8), baseline(1)])).expect("renders");
    let back = parse_export(&text, Path::new(PATH)).expect("parses");
    assert_eq!(back.baselines, vec![baseline(1), baseline(8)]);
    let lines: Vec<&str> = text.lines().collect();
    // Header (4 lines), 2 cases of 3 lines, closing (2 lines).
    assert_eq!(lines.len(), 4 + 6 + 2, "{text}");
    assert!(
        lines[4].trim_start().starts_with(
            "{\"case\":\"decode/seed-8b/bf16/decode/b1/c4096\",\"floor_ms\":6.5,\"median_ms\":10.0"
        ),
        "{text}"
    );
    assert!(lines[4].contains("\"n\":4,\"repeats\":2,\"commit\":\"abc123\""));
    assert!(lines[5].trim_start().starts_with("\"detail\":"));
    assert!(lines[6].trim_start().starts_with("\"samples_ms\":"));
}

#[test]
fn version_1_files_are_still_read() {
    let line = serde_json::to_string(&baseline(1)).expect("serialises");
    let text = format!(
        "{{\n  \"schema_version\": 1,\n  \"gpu_sku\": \"h100-sxm\",\n  \"baselines\": [\n    {line}\n  ]\n}}\n"
    );
    let back = parse_export(&text, Path::new(PATH)).expect("parses");
    assert_eq!(back.schema_version, 1);
    assert_eq!(back.baselines, vec![baseline(1)]);
}

#[test]
fn other_versions_and_bad_fields_are_refused_naming_the_file_and_field() {
    let path = Path::new(PATH);
    let text = render_export(&file(vec![baseline(1)])).expect("renders");
    let message = |t: &str| parse_export(t, path).expect_err("refused").to_string();
    let newer = message(&text.replace("\"schema_version\": 2", "\"schema_version\": 9"));
    assert!(
        newer.contains(PATH) && newer.contains("schema_version 9"),
        "{newer}"
    );
    let older = message(&text.replace("\"schema_version\": 2", "\"schema_version\": 0"));
    assert!(older.contains("versions 1 to 2"), "{older}");
    let missing = message(&text.replace("\"schema_version\": 2,", ""));
    assert!(missing.contains("field schema_version"), "{missing}");
    let typo = message(&text.replace("\"median_ms\":10.0", "\"median_ms\":\"fast\""));
    assert!(typo.contains("baselines[0].median_ms"), "{typo}");
    let extra = message(&text.replace("\"n\":4", "\"m\":1,\"n\":4"));
    assert!(
        extra.contains("baselines[0]") && extra.contains('m'),
        "{extra}"
    );
    let edited = message(&text.replace("\"n\":4", "\"n\":5"));
    assert!(
        edited.contains("baselines[0].n") && edited.contains("holds 4"),
        "{edited}"
    );
    let key = message(&text.replace("\"case\":\"decode/seed-8b", "\"case\":\"x/seed-8b"));
    assert!(key.contains("baselines[0].case"), "{key}");
    let negative = message(&text.replace("[[10.0,", "[[-1.0,"));
    assert!(negative.contains("baselines[0].samples_ms"), "{negative}");
    let broken = message("{ not json");
    assert!(broken.contains(PATH), "{broken}");
}

#[test]
fn axes_round_trip_per_value_and_a_bad_axis_names_its_field() {
    let with = |mode: &str| {
        let mut b = baseline(1);
        b.key.axes = crate::case::Axes::new([("mode", mode)]).expect("valid");
        b
    };
    let text =
        render_export(&file(vec![with("graphs"), baseline(1), with("eager")])).expect("renders");
    let back = parse_export(&text, Path::new(PATH)).expect("parses");
    assert_eq!(
        back.baselines,
        vec![baseline(1), with("eager"), with("graphs")],
        "key order: no axes first, then by value"
    );
    assert!(
        text.contains("{\"case\":\"decode/seed-8b/bf16/decode/b1/c4096/mode=graphs\""),
        "{text}"
    );
    assert!(
        text.contains("\"context\":4096,\"axes\":{\"mode\":\"graphs\"}}"),
        "{text}"
    );
    // Without axes the key object is exactly the one written before axes existed.
    assert!(text.contains("\"context\":4096},\"branch\""), "{text}");

    let bad = text.replace("{\"mode\":\"graphs\"}", "{\"batch\":\"graphs\"}");
    let err = parse_export(&bad, Path::new(PATH)).expect_err("a built-in name");
    assert!(err.to_string().contains("detail.key.axes"), "{err}");
}
