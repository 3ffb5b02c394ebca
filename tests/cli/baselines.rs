//! The reviewable baselines/ end to end: `baseline export` into a directory (schema version 2,
//! stable, a block per case), `baseline diff` between exports and the store, `run --baselines`
//! judging against committed files with no store, a version 1 file still read, and a newer or
//! malformed file refused with its name, field and fix while the store is untouched.

use std::path::Path;

use crate::env::{TestEnv, stderr, stdout, verdict_of};

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";
const B8: &str = "decode/seed-8b/bf16/decode/b8/c4096";
const V1: &str = "tests/fixtures/baselines/v1-h100-sxm.json";

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn export(env: &TestEnv, out: &str) {
    let done = env
        .cmd()
        .args(["baseline", "export", "--out", out])
        .output()
        .expect("runs");
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
}

fn diff_json(env: &TestEnv, args: &[&str]) -> serde_json::Value {
    let out = env
        .cmd()
        .args(["baseline", "diff"])
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn v1_fixture(env: &TestEnv) -> std::path::PathBuf {
    let text = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join(V1));
    env.write("old/h100-sxm.json", &text)
}

#[test]
fn export_writes_a_stable_block_per_case_and_an_accept_changes_only_its_case() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    export(&env, "baselines/");
    let first = read(&env.path().join("baselines/h100-sxm.json"));
    assert!(first.contains("\"schema_version\": 2"), "{first}");
    // Each case: its reviewed figures on the first line of its block, samples on the last.
    let opening = first
        .lines()
        .find(|l| l.contains(&format!("{{\"case\":\"{B1}\"")))
        .unwrap_or_else(|| panic!("no block for {B1}: {first}"));
    for field in [
        "floor_ms",
        "median_ms",
        "utilisation",
        "\"n\":60",
        "\"repeats\":3",
        "\"commit\":\"0123456789abcdef\"",
        "measured_at",
        "\"how\":\"promote\"",
        "reason",
    ] {
        assert!(opening.contains(field), "{field} missing: {opening}");
    }
    assert!(!opening.contains("samples_ms"), "{opening}");
    // A second export of the same store is byte for byte the same.
    export(&env, "baselines/");
    assert_eq!(read(&env.path().join("baselines/h100-sxm.json")), first);

    // A slower run accepted for b1 with a reason: only b1's block changes.
    accept_a_slower_b1(&env);
    export(&env, "baselines/");
    let second = read(&env.path().join("baselines/h100-sxm.json"));
    let (a, b): (Vec<&str>, Vec<&str>) = (first.lines().collect(), second.lines().collect());
    assert_eq!(a.len(), b.len());
    let changed: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    assert_eq!(changed.len(), 3, "one block of 3 lines moved: {changed:?}");
    assert!(b[changed[0]].contains(B1) && b[changed[0]].contains("new attention kernel"));
    assert!(a.iter().any(|l| l.contains(B8)) && b.iter().any(|l| l.contains(B8)));
}

/// Run 2 on a branch, 10% slower, then its b1 result accepted as the baseline with a reason.
fn accept_a_slower_b1(env: &TestEnv) {
    assert_eq!(
        env.run("feature", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    let out = env
        .cmd()
        .args(["baseline", "accept", "b1/", "--run", "2"])
        .args(["--reason", "new attention kernel"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn diff_names_the_moved_case_its_utilisation_change_and_reason_in_every_format() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    export(&env, "old/");
    accept_a_slower_b1(&env);
    export(&env, "new/");

    let json = diff_json(&env, &["old/", "new/"]);
    assert_eq!(json["unchanged"], 1, "{json}");
    let changes = json["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 1, "{json}");
    assert_eq!(changes[0]["case"], B1);
    assert_eq!(changes[0]["change"], "moved");
    assert_eq!(changes[0]["reason"], "new attention kernel");
    let delta = changes[0]["delta_pp"].as_f64().expect("delta");
    assert!((-5.0..-4.0).contains(&delta), "49.2% -> 44.7%: {delta}");
    // A file against the store: the same change.
    let against_store = diff_json(&env, &["old/h100-sxm.json"]);
    assert_eq!(against_store["changes"], json["changes"]);
    assert_eq!(against_store["new"], "the store");

    let markdown = env
        .cmd()
        .args(["baseline", "diff", "old/", "new/", "--format", "markdown"])
        .output()
        .expect("runs");
    let md = stdout(&markdown);
    assert!(md.contains("### utilgate: baselines moved"), "{md}");
    assert!(
        md.contains("1 moved, 0 added, 0 removed, 1 unchanged"),
        "{md}"
    );
    assert!(
        md.contains(&format!("| h100-sxm | `{B1}` | moved | 49.2% → 44.7% |")),
        "{md}"
    );
    assert!(md.contains("accept: new attention kernel"), "{md}");
    let table = env
        .cmd()
        .args(["baseline", "diff", "old/", "new/"])
        .output()
        .expect("runs");
    assert!(stdout(&table).contains(B1) && !stdout(&table).contains(B8));
    // `--exit-code` says whether anything moved, as `git diff --exit-code` does.
    let code = |args: &[&str]| {
        env.cmd()
            .args(["baseline", "diff", "--exit-code"])
            .args(args)
            .output()
            .expect("runs")
            .status
            .code()
    };
    assert_eq!(code(&["old/", "new/"]), Some(1));
    assert_eq!(code(&["new/", "new/"]), Some(0));
}

#[test]
fn run_with_baselines_judges_against_the_files_and_never_creates_a_store() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    export(&env, "baselines/");
    let committed = read(&env.path().join("baselines/h100-sxm.json"));

    // An ephemeral runner: the config and the committed files, no database.
    let fresh = TestEnv::new();
    fresh.write("baselines/h100-sxm.json", &committed);
    for (step, code, verdict) in [("10.0", 0, "pass"), ("11.0", 1, "regressed")] {
        let out = fresh
            .cmd()
            .args(["run", "--branch", "main", "--baselines", "baselines/"])
            .args(["--report-dir", "reports"])
            .env("STEP_MS", step)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        assert!(stderr(&out).contains("judging against 2 baseline(s)"));
        // Imported baselines were measured elsewhere and took no time here: the opening
        // estimate never times the night by them ("about 0 s").
        assert!(
            stderr(&out).contains("2 cases to measure (")
                && !stderr(&out).contains("from the last run of suite"),
            "{}",
            stderr(&out)
        );
        let report: serde_json::Value =
            serde_json::from_str(&read(&fresh.path().join("reports/report.json"))).expect("JSON");
        assert_eq!(verdict_of(&report, B1), verdict, "{report}");
        assert_eq!(verdict_of(&report, B8), verdict);
    }
    // Cases the files lack are new, and the note says how to give them a baseline.
    std::fs::create_dir_all(fresh.path().join("empty")).expect("mkdir");
    let out = fresh
        .cmd()
        .args(["run", "--branch", "main", "--baselines", "empty"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no baseline in empty"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("--run"), "{}", stderr(&out));
    assert!(!fresh.db().exists(), "no store is created");
    // Even a pass on the baseline branch leaves the committed files as they were.
    assert_eq!(
        read(&fresh.path().join("baselines/h100-sxm.json")),
        committed
    );
    // The import-into-a-fresh-store path keeps working and judges the same.
    let out = fresh
        .cmd()
        .args(["baseline", "import", "baselines/"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // Exported again, the seeded store gives the committed file back: no spurious move.
    export(&fresh, "again/");
    assert_eq!(read(&fresh.path().join("again/h100-sxm.json")), committed);
    assert_eq!(
        fresh.run("feature", &[("STEP_MS", "11.0")]).status.code(),
        Some(1)
    );
    assert_eq!(verdict_of(&fresh.json(&["runs", "show"]), B1), "regressed");
}

#[test]
fn a_version_1_file_is_still_read_by_import_diff_and_run() {
    let env = TestEnv::new();
    let old = v1_fixture(&env);
    let out = env
        .cmd()
        .args(["run", "--branch", "feature", "--baselines"])
        .arg(&old)
        .env("STEP_MS", "11.0")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("REGRESSED {B1}")),
        "{}",
        stdout(&out)
    );

    let out = env
        .cmd()
        .args(["baseline", "import", "old/"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let list = env.json(&["baseline", "list"]);
    assert_eq!(list["baselines"][0]["git_sha"], "0123456789abcdef");
    // Re-exported as version 2, the figures are the same: the diff finds nothing moved.
    export(&env, "new/");
    assert!(read(&env.path().join("new/h100-sxm.json")).contains("\"schema_version\": 2"));
    let json = diff_json(&env, &["old/", "new/"]);
    assert_eq!(json["unchanged"], 2, "{json}");
    assert_eq!(json["changes"], serde_json::json!([]));
}

/// `text` with the first case's utilisation set to `value`.
fn with_utilisation(text: &str, value: &str) -> String {
    let start = text.find("\"utilisation\":").expect("a utilisation") + "\"utilisation\":".len();
    let end = start + text[start..].find(',').expect("a comma after it");
    format!("{}{value}{}", &text[..start], &text[end..])
}

/// `text` with its first case listed a second time.
fn twice(text: &str) -> String {
    let mut file: serde_json::Value = serde_json::from_str(text).expect("json");
    let cases = file["baselines"].as_array_mut().expect("baselines");
    let first = cases[0].clone();
    cases.push(first);
    serde_json::to_string_pretty(&file).expect("json")
}

#[test]
fn a_newer_or_malformed_file_is_refused_naming_file_field_and_fix_and_the_store_is_untouched() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    export(&env, "baselines/");
    let good = read(&env.path().join("baselines/h100-sxm.json"));
    let before = env.json(&["baseline", "list"]);
    let runs_before = env.json(&["runs", "list"]);
    let cases = [
        (
            good.replace("\"schema_version\": 2", "\"schema_version\": 7"),
            "schema_version 7",
            "upgrade utilgate",
        ),
        (
            good.replacen("\"median_ms\":10.04", "\"median_ms\":\"10.04 ms\"", 1),
            "field baselines[0].median_ms",
            "re-export",
        ),
        (
            good.replacen("\"n\":60", "\"n\":61", 1),
            "field baselines[0].n",
            "re-export",
        ),
        (
            good.replacen("\"median_ms\":10.04", "\"median_ms\":-4", 1),
            "field baselines[0].median_ms",
            "is not a step time",
        ),
        (
            good.replacen("\"median_ms\":10.04", "\"median_ms\":0", 1),
            "field baselines[0].median_ms",
            "is not a step time",
        ),
        (
            good.replacen("\"median_ms\":10.04", "\"median_ms\":1e308", 1),
            "field baselines[0].median_ms",
            "is not a step time",
        ),
        (
            with_utilisation(&good, "5.0"),
            "field baselines[0].utilisation",
            "is not a utilisation",
        ),
        (
            twice(&good),
            "is listed twice (also baselines[0])",
            "keep one",
        ),
    ];
    for (text, names, fix) in cases {
        let path = env.write("bad/h100-sxm.json", &text);
        let import = env
            .cmd()
            .args(["baseline", "import"])
            .arg(&path)
            .output()
            .expect("runs");
        let diff = env
            .cmd()
            .args(["baseline", "diff", "bad/", "baselines/"])
            .output()
            .expect("runs");
        let run = env
            .cmd()
            .args(["run", "--branch", "main", "--baselines", "bad/"])
            .output()
            .expect("runs");
        for out in [import, diff, run] {
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("bad/h100-sxm.json"), "names the file: {err}");
            assert!(err.contains(names), "names {names}: {err}");
            assert!(err.contains(fix), "says the fix: {err}");
        }
        assert_eq!(env.json(&["baseline", "list"]), before);
        assert_eq!(env.json(&["runs", "list"]), runs_before);
    }
}
