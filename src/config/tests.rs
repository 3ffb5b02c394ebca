//! Tests of parsing, validation and loading of the config.

use std::collections::BTreeSet;
use std::path::Path;

use super::*;
use crate::case::Verdict;

const EXAMPLE: &str = r#"
[store]
path = ".utilgate/utilgate.db"

[gate]
baseline_branch = "main"
max_drop_pct = 3.0
fail_on = ["regressed", "invalid"]

[gpu]
name = "h100-sxm"

[models.llama-3.1-8b]
hf_config = "models/llama-3.1-8b/config.json"

[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072

[[suite]]
name = "decode"
command = "python3 bench/decode.py --model {{ model }} --batch {{ batch }} --context {{ context }}"
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8]
contexts = [4096]
warmup_steps = 10
steps = 100
repeats = 3
timeout_s = 600
"#;

fn known(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn design_example_parses_and_validates() {
    let config = parse(EXAMPLE, Path::new("utilgate.toml")).expect("parses");
    assert_eq!(config.suites.len(), 1);
    assert_eq!(config.suites[0].batches, vec![1, 8]);
    assert_eq!(config.suites[0].case_keys().len(), 2);
    assert_eq!(
        config.gate.fail_on,
        vec![Verdict::Regressed, Verdict::Invalid]
    );
    let names = known(&["llama-3.1-8b", "seed-8b"]);
    let problems = validate(
        &config,
        &ValidationContext {
            known_models: &names,
        },
    );
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn dotted_model_names_are_read_whole_and_their_errors_keep_the_name() {
    let config = parse(EXAMPLE, Path::new("u.toml")).expect("parses");
    let names: Vec<&str> = config.models.keys().map(String::as_str).collect();
    assert_eq!(names, vec!["llama-3.1-8b", "seed-8b"]);
    let text = EXAMPLE.replace("params = 8.0e9", "params = \"8B\"");
    let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
    assert!(err.to_string().contains("models.seed-8b.params"), "{err}");
    let text = EXAMPLE.replace(
        "hf_config = \"models/llama-3.1-8b/config.json\"",
        "hf_config = \"x\"\nlayers = 3",
    );
    let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
    assert!(err.to_string().contains("models.llama-3.1-8b"), "{err}");
    assert!(err.to_string().contains("layers"), "{err}");
}

#[test]
fn gpu_table_declares_a_catalogue_entry_overrides_or_its_own_figures() {
    let named = GpuConfig {
        name: Some("h100-sxm".into()),
        mem_bandwidth_gb_s: Some(3000.0),
        ..GpuConfig::default()
    };
    let spec = named.declared_spec().expect("valid").expect("a spec");
    assert_eq!(spec.name, "h100-sxm");
    assert!((spec.mem_bandwidth_bytes_per_s - 3.0e12).abs() < 1.0);
    // The catalogue's NVLink 4 unless the table declares the link.
    assert!((spec.interconnect.expect("link").bytes_per_s - 450e9).abs() < 1.0);
    let linked = GpuConfig {
        name: Some("h100-sxm".into()),
        interconnect_gb_s: Some(200.0),
        ..GpuConfig::default()
    };
    let spec = linked.declared_spec().expect("valid").expect("a spec");
    assert!((spec.interconnect.expect("link").bytes_per_s - 200e9).abs() < 1.0);
    let own = GpuConfig {
        mem_bandwidth_gb_s: Some(1000.0),
        dense_tflops: [("bf16".to_owned(), 100.0)].into(),
        ..GpuConfig::default()
    };
    assert_eq!(
        own.declared_spec().expect("valid").expect("a spec").name,
        "declared-gpu"
    );
    let host = GpuConfig {
        measure_host_bandwidth: true,
        ..GpuConfig::default()
    };
    assert!(host.declared_spec().expect("valid").is_none());
    let unknown = GpuConfig {
        name: Some("h900".into()),
        ..GpuConfig::default()
    };
    assert!(unknown.declared_spec().is_err());
}

#[test]
fn every_suite_key_is_documented_in_the_default_config() {
    let config = parse(DEFAULT_CONFIG, Path::new("<default>")).expect("default parses");
    let suite = serde_json::to_value(&config.suites[0]).expect("serialises");
    let keys = suite.as_object().expect("a table").keys();
    let lines: Vec<&str> = DEFAULT_CONFIG.lines().map(str::trim_start).collect();
    for key in keys {
        let written = |line: &&str| {
            let line = line.trim_start_matches("# ");
            line.starts_with(&format!("{key} =")) || (key == "case" && line == "[[suite.case]]")
        };
        assert!(
            lines.iter().any(written),
            "suite key `{key}` is not in templates/utilgate.default.toml"
        );
    }
}

#[test]
fn a_serve_suite_parses_with_its_grid_and_no_step_keys() {
    let text = r#"
[[suite]]
name = "serve"
kind = "serve"
models = ["org/model"]
request_rates = [1.0, inf]
input_lens = [128]
command = "bench --rate {{ request_rate }} --out {{ result_file }}"
"#;
    let config = parse(text, Path::new("u.toml")).expect("parses");
    let suite = &config.suites[0];
    assert_eq!(suite.kind, SuiteKind::Serve);
    assert_eq!(suite.request_rates.len(), 2);
    assert!(suite.request_rates[0].is_finite() && suite.request_rates[1].is_infinite());
    assert!(suite.case_keys().is_empty(), "no step cases");
}

#[test]
fn embedded_default_config_parses() {
    let config = parse(DEFAULT_CONFIG, Path::new("<default>")).expect("default parses");
    assert!(!config.suites.is_empty());
    assert_eq!(config.report.trend_runs, 10);
}

#[test]
fn report_table_names_templates_and_rejects_unknown_keys() {
    let text = format!("{EXAMPLE}\n[report]\ntemplates = \"my-templates\"\n");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    assert_eq!(
        config.report.templates.as_deref(),
        Some(Path::new("my-templates"))
    );
    assert_eq!(
        parse(EXAMPLE, Path::new("u.toml"))
            .expect("parses")
            .report
            .trend_runs,
        10
    );
    let text = format!("{EXAMPLE}\n[report]\ntemplate = \"x\"\n");
    let err = parse(&text, Path::new("u.toml")).expect_err("unknown key");
    assert!(err.to_string().contains("report"), "{err}");
}

#[test]
fn wrong_type_names_the_key_path_and_line() {
    let text = EXAMPLE.replace("batches = [1, 8]", "batches = [1, \"8k\"]");
    let err = parse(&text, Path::new("utilgate.toml")).expect_err("must fail");
    let message = err.to_string();
    assert!(message.contains("utilgate.toml"), "{message}");
    assert!(message.contains("suite[0].batches"), "{message}");
    assert!(message.contains("line 26"), "{message}");
    assert!(err.hint().expect("hint").contains("batches = [1, 8, 64]"));
}

#[test]
fn unknown_key_is_an_error() {
    let text = EXAMPLE.replace("repeats = 3", "repeats = 3\nrepeat = 5");
    let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
    let message = err.to_string();
    assert!(message.contains("suite[0]"), "{message}");
    assert!(message.contains("repeat"), "{message}");
}

#[test]
fn a_misspelt_key_suggests_the_real_one() {
    let text = EXAMPLE.replace("batches = [1, 8]", "batchs = [1, 8]");
    let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
    let hint = err.hint().expect("hint");
    assert!(hint.contains("did you mean `batches`?"), "{hint}");
    let text = EXAMPLE.replace("max_drop_pct = 3.0", "max_drop = 3.0");
    let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
    let hint = err.hint().expect("hint");
    assert!(hint.contains("did you mean `max_drop_pct`?"), "{hint}");
}

#[test]
fn malformed_toml_names_the_line() {
    let err = parse("[gate\nmax_drop_pct = 3", Path::new("u.toml")).expect_err("must fail");
    assert!(err.to_string().contains("line 1"), "{err}");
}

#[test]
fn validation_reports_every_problem() {
    let text = EXAMPLE
        .replace("batches = [1, 8]", "batches = [0, 8]")
        .replace("steps = 100", "steps = 0")
        .replace("models = [\"llama-3.1-8b\"]", "models = [\"nope\"]")
        .replace("max_drop_pct = 3.0", "max_drop_pct = 300.0");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let names = known(&["llama-3.1-8b"]);
    let problems = validate(
        &config,
        &ValidationContext {
            known_models: &names,
        },
    );
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        vec![
            "gate.max_drop_pct",
            "suite[0].models[0]",
            "suite[0].batches",
            "suite[0].steps"
        ]
    );
}

#[test]
fn bad_template_is_reported() {
    let text = EXAMPLE.replace("{{ batch }}", "{{ batch ");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let names = known(&["llama-3.1-8b"]);
    let problems = validate(
        &config,
        &ValidationContext {
            known_models: &names,
        },
    );
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].key, "suite[0].command");
}

#[test]
fn thresholds_resolve_case_then_suite_then_gate() {
    let text = EXAMPLE.replace(
        "timeout_s = 600",
        "timeout_s = 600\nmax_drop_pct = 4.0\n[[suite.case]]\nbatch = 8\nmax_drop_pct = 6.0",
    );
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let suite = &config.suites[0];
    let keys = suite.case_keys();
    assert!((suite.max_drop_pct_for(&keys[0], &config.gate) - 4.0).abs() < 1e-12);
    assert!((suite.max_drop_pct_for(&keys[1], &config.gate) - 6.0).abs() < 1e-12);
}

#[test]
fn a_suite_names_exactly_one_of_command_and_workload() {
    let names = known(&["llama-3.1-8b"]);
    let ctx = ValidationContext {
        known_models: &names,
    };
    let command_line = "command = \"python3 bench/decode.py --model {{ model }} --batch {{ batch }} --context {{ context }}\"";
    // (replacement for the command line, the keys of the problems expected)
    let cases: [(&str, Vec<&str>); 5] = [
        ("workload = \"reference\"", vec![]),
        ("workload = \"reference\"\ngraphs = true", vec![]),
        (
            &format!("{command_line}\nworkload = \"reference\""),
            vec!["suite[0].workload"],
        ),
        ("", vec!["suite[0].command"]),
        (
            &format!("{command_line}\ngraphs = false"),
            vec!["suite[0].graphs"],
        ),
    ];
    for (replacement, expected) in cases {
        let text = EXAMPLE.replace(command_line, replacement);
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        let problems = validate(&config, &ctx);
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, expected, "{replacement}");
    }
    let text = EXAMPLE.replace(command_line, "workload = \"reference\"");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    assert_eq!(config.suites[0].workload, Some(Workload::Reference));
    let err = parse(
        &EXAMPLE.replace(command_line, "workload = \"fast\""),
        Path::new("u.toml"),
    )
    .expect_err("unknown workload");
    assert!(err.to_string().contains("suite[0].workload"), "{err}");
}

#[test]
fn status_names_must_tell_suites_apart() {
    let names = known(&["llama-3.1-8b"]);
    let problems_for = |status: &str, extra_suite: bool| {
        let mut text = format!("{EXAMPLE}\n[report]\nstatus_context = {status:?}\n");
        if extra_suite {
            let suite = &EXAMPLE[EXAMPLE.find("[[suite]]").expect("a suite")..];
            text.push_str(&suite.replace("name = \"decode\"", "name = \"decode-2\""));
        }
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        validate(
            &config,
            &ValidationContext {
                known_models: &names,
            },
        )
        .into_iter()
        .filter(|p| p.key == "report.status_context")
        .map(|p| p.message)
        .collect::<Vec<_>>()
    };
    assert!(problems_for("utilgate/{suite}", true).is_empty());
    assert!(problems_for("perf/{suite} ({gpu})", true).is_empty());
    assert!(
        problems_for("utilgate", false).is_empty(),
        "one suite, one name"
    );
    assert_eq!(
        problems_for("utilgate", true),
        vec!["\"utilgate\" gives every suite the same status name".to_owned()]
    );
    assert_eq!(problems_for("utilgate/{model}", false).len(), 1);
    assert_eq!(problems_for(" ", false), vec!["is empty".to_owned()]);
}

#[test]
fn nsight_keys_parse_and_a_bad_ncu_table_names_the_field_and_fix() {
    let names = known(&["llama-3.1-8b"]);
    let ctx = ValidationContext {
        known_models: &names,
    };
    let text = format!("{EXAMPLE}nsys = true\nncu = {{ kernel_regex = \"gemm|gemv\" }}\n");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let suite = &config.suites[0];
    assert!(suite.nsys);
    let ncu = suite.ncu.as_ref().expect("ncu");
    assert_eq!((ncu.kernel_regex.as_str(), ncu.count), ("gemm|gemv", 5));
    assert!(validate(&config, &ctx).is_empty());

    let text = format!("{EXAMPLE}ncu = {{ kernel_regex = \"(gemm\", count = 0 }}\n");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let problems = validate(&config, &ctx);
    let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
    assert_eq!(
        keys,
        vec!["suite[0].ncu.kernel_regex", "suite[0].ncu.count"]
    );
    assert!(
        problems[0].message.contains("not a regular expression"),
        "{}",
        problems[0]
    );
    assert!(problems[1].hint.contains("count = 5"), "{}", problems[1]);
    let text = format!("{EXAMPLE}ncu = {{ kernel_regex = \" \" }}\n");
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    assert_eq!(validate(&config, &ctx)[0].message, "is empty");

    // A misspelt key inside the table is an error, as everywhere.
    let text = format!("{EXAMPLE}ncu = {{ kernel_regexp = \"gemm\" }}\n");
    let err = parse(&text, Path::new("u.toml")).expect_err("unknown key");
    assert!(err.to_string().contains("kernel_regexp"), "{err}");
}

/// `tp` and `ep` lists cross the grid: each pair a case of its own; 0 is refused.
#[test]
fn tp_and_ep_are_grid_coordinates() {
    let text = EXAMPLE.replace(
        "contexts = [4096]",
        "contexts = [4096]\ntp = [1, 4]\nep = [1, 8]",
    );
    let config = parse(&text, Path::new("u.toml")).expect("parses");
    let keys = config.suites[0].case_keys();
    // 2 batches x 2 tp x 2 ep.
    assert_eq!(keys.len(), 8);
    let pairs: Vec<(u64, u64)> = keys.iter().take(4).map(|k| (k.tp, k.ep)).collect();
    assert_eq!(pairs, [(1, 1), (1, 8), (4, 1), (4, 8)]);
    // Without the keys, one GPU.
    let plain = parse(EXAMPLE, Path::new("u.toml")).expect("parses");
    assert!(
        plain.suites[0]
            .case_keys()
            .iter()
            .all(|k| (k.tp, k.ep) == (1, 1))
    );
    let bad = parse(
        &EXAMPLE.replace("contexts = [4096]", "contexts = [4096]\ntp = [0]"),
        Path::new("u.toml"),
    )
    .expect("parses");
    let names = known(&["llama-3.1-8b"]);
    let problems = validate(
        &bad,
        &ValidationContext {
            known_models: &names,
        },
    );
    assert!(
        problems.iter().any(|p| p.key == "suite[0].tp"),
        "{problems:?}"
    );
}
