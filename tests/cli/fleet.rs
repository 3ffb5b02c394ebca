//! A fleet of runners through the real binary: `run --shard K/N --run-group ID` partitions a
//! real grid, `report --group ID` merges the shards, and the exports (`report --format
//! bmf|openmetrics|gab`) of a stored run parse as their formats.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::env::{TestEnv, stderr, stdout};

/// A grid of eight cases (four batches by two contexts).
fn fleet_env() -> TestEnv {
    let env = TestEnv::new();
    let config = TestEnv::config_with("").replace(
        "batches = [1, 8]\ncontexts = [4096]",
        "batches = [1, 2, 4, 8]\ncontexts = [1024, 4096]",
    );
    assert!(config.contains("contexts = [1024, 4096]"));
    env.write_config(&config);
    env
}

/// `utilgate run` of one shard on `branch` with the harness environment `envs`.
fn shard(env: &TestEnv, branch: &str, shard: &str, group: &str, envs: &[(&str, &str)]) -> i32 {
    let mut cmd = env.cmd();
    cmd.args(["run", "--branch", branch, "--git-sha", "0123456789abcdef"]);
    cmd.args(["--shard", shard, "--run-group", group]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "shard {shard}: {}",
        stderr(&out)
    );
    out.status.code().expect("exit code")
}

/// `report` with `args` as JSON.
fn report_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env
        .cmd()
        .args(["report", "--format", "json"])
        .args(args)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    serde_json::from_str(&stdout(&out)).expect("JSON report")
}

fn cases(report: &Value) -> BTreeMap<String, Value> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| (c["case"].as_str().expect("case").to_owned(), c.clone()))
        .collect()
}

#[test]
fn three_shards_measure_the_grid_once_and_report_group_merges_them() {
    let env = fleet_env();
    let base = env.run("main", &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    // The same grid unsharded on the feature branch: the figures the shards must match.
    let whole = env.run("feature", &[]);
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    let whole = cases(&report_json(&env, &[]));
    assert_eq!(whole.len(), 8);

    for k in 1..=3 {
        assert_eq!(shard(&env, "feature", &format!("{k}/3"), "g-1", &[]), 0);
    }
    // Each shard's own run: disjoint, and together the grid, each case measured once.
    let runs = env.json(&["runs", "list"]);
    let ids: Vec<i64> = runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["id"].as_i64().expect("id"))
        .collect();
    assert_eq!(ids.len(), 5, "{runs}");
    let mut measured: Vec<String> = Vec::new();
    let mut sizes = Vec::new();
    for id in ids.iter().copied().filter(|id| *id > 2) {
        let shard_cases = cases(&report_json(&env, &[&id.to_string()]));
        assert!(
            shard_cases.values().all(|c| c["verdict"] != "missing"),
            "another shard's cases are not missing: {shard_cases:?}"
        );
        sizes.push(shard_cases.len());
        measured.extend(shard_cases.into_keys());
    }
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 3, 3]);
    let unique: BTreeSet<&String> = measured.iter().collect();
    assert_eq!(
        unique.len(),
        measured.len(),
        "a case measured twice: {measured:?}"
    );
    assert_eq!(
        unique.into_iter().cloned().collect::<Vec<_>>(),
        whole.keys().cloned().collect::<Vec<_>>()
    );

    // The group's report: one table over every case, judged at the whole grid's level.
    let merged = report_json(&env, &["--group", "g-1"]);
    assert_eq!(merged["gate"]["passed"], true, "{merged}");
    let merged_cases = cases(&merged);
    assert_eq!(
        merged_cases.keys().collect::<Vec<_>>(),
        whole.keys().collect::<Vec<_>>()
    );
    for (case, c) in &merged_cases {
        let interval = &c["decision"]["interval_pct"];
        assert!(interval.is_array(), "{case}: {c}");
        assert_eq!(
            interval, &whole[case]["decision"]["interval_pct"],
            "{case}: a shard's interval is the whole grid's (8 cases), not its own"
        );
    }
    let markdown = env
        .cmd()
        .args(["report", "--group", "g-1"])
        .output()
        .expect("runs");
    assert!(markdown.status.success(), "{}", stderr(&markdown));
    let markdown = stdout(&markdown);
    for case in whole.keys() {
        // The table groups cases by suite and names them without it.
        let (_, name) = case.split_once('/').expect("suite/...");
        assert!(
            markdown.contains(&format!("`{name}`")),
            "{case} in the table:\n{markdown}"
        );
    }
    assert!(markdown.contains("All 8 cases pass"), "{markdown}");
}

#[test]
fn one_failing_shard_fails_the_group() {
    let env = fleet_env();
    let base = env.run("main", &[]);
    assert_eq!(base.status.code(), Some(0), "{}", stderr(&base));
    assert_eq!(shard(&env, "feature", "1/2", "g-2", &[]), 0);
    assert_eq!(
        shard(&env, "feature", "2/2", "g-2", &[("STEP_MS", "11.5")]),
        1,
        "the slow shard fails its own gate"
    );
    let merged = report_json(&env, &["--group", "g-2"]);
    assert_eq!(merged["gate"]["passed"], false, "{merged}");
    let merged = cases(&merged);
    assert_eq!(merged.len(), 8);
    assert_eq!(
        merged
            .values()
            .filter(|c| c["verdict"] == "regressed")
            .count(),
        4
    );
    // A group with a shard absent says so, and an unknown group is a clear error.
    assert_eq!(shard(&env, "feature", "1/3", "g-3", &[]), 0);
    let out = env
        .cmd()
        .args(["report", "--group", "g-3"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no run of shard 2/3, 3/3"),
        "{}",
        stderr(&out)
    );
    let out = env
        .cmd()
        .args(["report", "--group", "nope"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no stored run belongs to this group"));
    assert!(stderr(&out).contains("--run-group"));
}

#[test]
fn bad_shards_are_usage_errors_and_github_run_id_is_the_default_group() {
    let env = fleet_env();
    for (value, fix) in [
        ("0/4", "--shard 1/4 to 4/4"),
        ("5/4", "--shard 1/4 to 4/4"),
        ("a/b", "two whole numbers"),
    ] {
        let out = env
            .cmd()
            .args(["run", "--shard", value, "--run-group", "g"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{value}: {}", stderr(&out));
        assert!(stderr(&out).contains(fix), "{value}: {}", stderr(&out));
    }
    assert!(!env.db().exists(), "nothing measured, no store made");
    let out = env
        .cmd()
        .args(["run", "--shard", "1/2"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--run-group"), "{}", stderr(&out));

    let out = env
        .cmd()
        .env("GITHUB_RUN_ID", "7781")
        .args(["run", "--branch", "main", "--shard", "2/2"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let merged = report_json(&env, &["--group", "7781"]);
    assert_eq!(cases(&merged).len(), 4);
}

/// github-action-benchmark's entry, as its real samples have it.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GabEntry {
    name: String,
    unit: String,
    value: f64,
    #[serde(default)]
    range: Option<Value>,
    #[serde(default)]
    extra: Option<String>,
}

#[test]
fn exports_of_a_stored_run_parse_as_their_formats() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json = report_json(&env, &[]);
    let figures = cases(&json);
    assert_eq!(figures.len(), 2);

    let sample = include_str!(
        "../fixtures/bench_formats/github-action-benchmark__customSmallerIsBetter_output.json"
    );
    let _: Vec<GabEntry> = serde_json::from_str(sample).expect("the real sample parses");
    let gab: Vec<GabEntry> = serde_json::from_str(&env.report("gab")).expect("gab parses");
    assert_eq!(gab.len(), 4, "median and p90 of two cases");
    for (case, c) in &figures {
        let median = gab
            .iter()
            .find(|e| e.name == format!("{case} on h100-sxm: median step"))
            .expect("median entry");
        assert_eq!(median.unit, "ms");
        assert_eq!(Some(median.value), c["median_ms"].as_f64());
        assert!(median.range.is_some() && median.extra.is_some());
    }

    let bmf: BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>> =
        serde_json::from_str(&env.report("bmf")).expect("BMF parses");
    for (case, c) in &figures {
        let measures = &bmf[case];
        assert_eq!(
            Some(measures["step-median-ms"]["value"]),
            c["median_ms"].as_f64()
        );
        assert_eq!(
            Some(measures["utilisation"]["value"]),
            c["utilisation"].as_f64()
        );
        assert_eq!(Some(measures["floor-ms"]["value"]), c["floor_ms"].as_f64());
        for metric in measures.values() {
            assert!(metric.contains_key("value"));
            assert!(
                metric
                    .keys()
                    .all(|k| ["value", "lower_value", "upper_value"].contains(&k.as_str()))
            );
        }
    }

    let text = env.report("openmetrics");
    let parsed = openmetrics_parser::openmetrics::parse_openmetrics(&text)
        .unwrap_or_else(|e| panic!("{e:?}:\n{text}"));
    let util = &parsed.families["utilgate_utilisation_ratio"];
    assert_eq!(util.iter_samples().count(), 2);
    assert_eq!(
        parsed.families["utilgate_step_median_seconds"]
            .iter_samples()
            .count(),
        2
    );
}
