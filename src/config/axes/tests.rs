//! Tests of a suite's free axes: the grid they make, the keys, overrides and every refusal.

use std::collections::BTreeSet;
use std::path::Path;

use crate::config::{ValidationContext, parse, validate};

const SUITE: &str = r#"
[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072

[[suite]]
name = "decode"
command = "bench --mode {{ mode }} --attn {{ attn }} -b {{ batch }}"
models = ["seed-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8]
contexts = [4096]
"#;

fn problems(extra: &str, command: Option<&str>) -> Vec<(String, String, String)> {
    let mut text = SUITE.replace("contexts = [4096]", &format!("contexts = [4096]\n{extra}"));
    if let Some(command) = command {
        text = text.replace(
            "command = \"bench --mode {{ mode }} --attn {{ attn }} -b {{ batch }}\"",
            command,
        );
    }
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let names: BTreeSet<String> = ["seed-8b".to_owned()].into();
    validate(
        &config,
        &ValidationContext {
            known_models: &names,
        },
    )
    .into_iter()
    .map(|p| (p.key, p.message, p.hint))
    .collect()
}

fn keys(found: &[(String, String, String)]) -> Vec<&str> {
    found.iter().map(|(k, _, _)| k.as_str()).collect()
}

#[test]
fn axes_cross_the_grid_in_a_stable_order_and_thresholds_select_them() {
    let text = SUITE.replace(
        "contexts = [4096]",
        "contexts = [4096]\naxes = { mode = [\"eager\", \"graphs\", \"compile\"], attn = [\"sdpa\"] }\n\
         [[suite.case]]\naxes = { mode = \"compile\" }\nmax_drop_pct = 6.0",
    );
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let suite = &config.suites[0];
    let keys: Vec<String> = suite.case_keys().iter().map(ToString::to_string).collect();
    assert_eq!(
        keys,
        [
            "decode/seed-8b/bf16/decode/b1/c4096/attn=sdpa/mode=eager",
            "decode/seed-8b/bf16/decode/b1/c4096/attn=sdpa/mode=graphs",
            "decode/seed-8b/bf16/decode/b1/c4096/attn=sdpa/mode=compile",
            "decode/seed-8b/bf16/decode/b8/c4096/attn=sdpa/mode=eager",
            "decode/seed-8b/bf16/decode/b8/c4096/attn=sdpa/mode=graphs",
            "decode/seed-8b/bf16/decode/b8/c4096/attn=sdpa/mode=compile",
        ]
    );
    for key in suite.case_keys() {
        assert_eq!(key.to_string().parse(), Ok(key.clone()));
        let want = if key.axes.get("mode") == Some("compile") {
            6.0
        } else {
            config.gate.max_drop_pct
        };
        assert!((suite.max_drop_pct_for(&key, &config.gate) - want).abs() < 1e-12);
    }
    assert!(problems("axes = { mode = [\"eager\"], attn = [\"sdpa\"] }", None).is_empty());
}

#[test]
fn a_suite_without_axes_keeps_its_keys() {
    let config = parse(
        &SUITE.replace(" --mode {{ mode }} --attn {{ attn }}", ""),
        Path::new("u.toml"),
    )
    .expect("parses");
    let keys: Vec<String> = config.suites[0]
        .case_keys()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        keys,
        [
            "decode/seed-8b/bf16/decode/b1/c4096",
            "decode/seed-8b/bf16/decode/b8/c4096"
        ]
    );
    assert!(
        config.suites[0]
            .case_keys()
            .iter()
            .all(|k| k.axes.is_empty())
    );
}

#[test]
fn bad_names_values_and_places_are_refused_with_the_field_and_a_fix() {
    let found = problems(
        "axes = { Mode = [\"a\"], batch = [\"1\"], mode = [], attn = [\"x\", \"x\", \"a b\", \"\"] }",
        None,
    );
    assert_eq!(
        keys(&found),
        [
            "suite[0].axes.Mode",
            "suite[0].axes.attn[1]",
            "suite[0].axes.attn[2]",
            "suite[0].axes.attn[3]",
            "suite[0].axes.batch",
            "suite[0].axes.mode",
        ],
        "{found:#?}"
    );
    let by_key = |k: &str| found.iter().find(|(key, _, _)| key == k).expect(k);
    assert!(by_key("suite[0].axes.Mode").2.contains("lowercase"));
    assert!(by_key("suite[0].axes.batch").1.contains("built-in"));
    assert!(by_key("suite[0].axes.batch").2.contains("e.g. mode"));
    assert!(by_key("suite[0].axes.attn[1]").1.contains("listed twice"));
    assert!(
        by_key("suite[0].axes.attn[2]")
            .2
            .contains("letters, digits")
    );
    assert!(by_key("suite[0].axes.mode").1.contains("is empty"));

    // An axis a template names must be declared, and a typo gets a suggestion.
    let found = problems("axes = { mode = [\"a\"] }", None);
    assert_eq!(keys(&found), ["suite[0].command"], "{found:#?}");
    assert!(found[0].1.contains("unknown variable `attn`"), "{found:#?}");
    let found = problems(
        "axes = { mode = [\"a\"] }",
        Some("command = \"bench --mode {{ mdoe }}\""),
    );
    assert!(found[0].1.contains("did you mean `mode`"), "{found:#?}");
    assert!(
        found[0].2.contains("an axis of the suite: {{ mode }}"),
        "{found:#?}"
    );

    // Overrides name the suite's axes and values.
    let found = problems(
        "axes = { mode = [\"a\"], attn = [\"x\"] }\n[[suite.case]]\naxes = { mode = \"b\", backend = \"x\" }\nmax_drop_pct = 5.0",
        None,
    );
    assert_eq!(
        keys(&found),
        [
            "suite[0].case[0].axes.backend",
            "suite[0].case[0].axes.mode"
        ],
        "{found:#?}"
    );
    assert!(found[1].2.contains("use one of: a"), "{found:#?}");
}

#[test]
fn axes_belong_to_suites_with_a_command() {
    let found = problems(
        "axes = { mode = [\"a\"] }",
        Some("workload = \"reference\""),
    );
    assert_eq!(keys(&found), ["suite[0].axes"], "{found:#?}");
    assert!(found[0].1.contains("built-in workload"), "{found:#?}");

    let text = r#"
[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072

[[suite]]
name = "serve"
kind = "serve"
command = "bench --out {{ result_file }}"
models = ["seed-8b"]
request_rates = [1.0]
axes = { mode = ["a"] }
"#;
    let config = parse(text, Path::new("u.toml")).expect("parses");
    let names: BTreeSet<String> = ["seed-8b".to_owned()].into();
    let found = validate(
        &config,
        &ValidationContext {
            known_models: &names,
        },
    );
    assert!(
        found
            .iter()
            .any(|p| p.key == "suite[0].axes" && p.message.contains("step suites")),
        "{found:#?}"
    );
}
