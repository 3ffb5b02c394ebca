//! Validating a parsed config: every remaining problem at once, each with its key path
//! (`suite[1].batches`) and a fix. Pure.

use std::collections::BTreeSet;

use super::names::check_name;
use super::{Config, Problem};
use crate::catalog::Precision;

/// Everything `validate` needs to know beyond the config itself.
pub struct ValidationContext<'a> {
    /// Models that resolve (from `[models]` or the built-in catalogue).
    pub known_models: &'a BTreeSet<String>,
}

fn has_control(text: &str) -> bool {
    text.chars().any(char::is_control)
}

/// Every problem in a parsed config, with key paths and fixes. Pure.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "one flat list of checks, each independent, in the order of the file"
)]
pub fn validate(config: &Config, ctx: &ValidationContext<'_>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut push = |key: String, message: String, hint: &str| {
        problems.push(Problem {
            key,
            message,
            hint: hint.to_owned(),
        });
    };

    if !(config.store.busy_timeout_s.is_finite() && config.store.busy_timeout_s >= 0.0) {
        push(
            "store.busy_timeout_s".into(),
            format!("{} is not a duration", config.store.busy_timeout_s),
            "write busy_timeout_s = 10.0",
        );
    }
    check_drop_pct(config.gate.max_drop_pct, "gate.max_drop_pct", &mut push);
    check_drop_pct(
        config.gate.quality_max_drop_pts,
        "gate.quality_max_drop_pts",
        &mut push,
    );
    check_drop_pct(
        config.gate.acceptance_max_drop_pts,
        "gate.acceptance_max_drop_pts",
        &mut push,
    );
    if let Some(url) = config.site.url.as_deref().filter(|u| !site_url_ok(u)) {
        push(
            "site.url".into(),
            format!("{url:?} is not the http(s) address of a published site"),
            "write url = \"https://org.github.io/repo/\" (where `utilgate site --out DIR` is published)",
        );
    }
    for (key, value) in [
        ("run.budget_minutes", config.run.budget_minutes),
        ("run.grace_minutes", config.run.grace_minutes),
    ] {
        if let Some(v) = value.filter(|v| !(v.is_finite() && *v > 0.0)) {
            push(
                key.into(),
                format!("{v} is not a positive number of minutes"),
                "write budget_minutes = 10 (minutes; fractions allowed: 0.5 is 30 s)",
            );
        }
    }
    let limits = &config.limits;
    if !(limits.min_step_ms.is_finite()
        && limits.max_step_ms.is_finite()
        && limits.min_step_ms > 0.0
        && limits.min_step_ms < limits.max_step_ms)
    {
        push(
            "limits.min_step_ms".into(),
            format!(
                "{} .. {} is not a range of step times",
                crate::measure::protocol::bounded(limits.min_step_ms),
                crate::measure::protocol::bounded(limits.max_step_ms)
            ),
            "write min_step_ms = 1e-6 and max_step_ms = 3.6e6 (1 ns .. 1 h), min below max",
        );
    }
    if limits.max_samples == 0 {
        push(
            "limits.max_samples".into(),
            "is 0: no step would be kept".into(),
            "write max_samples = 100000",
        );
    }
    if limits.max_cases == Some(0) {
        push(
            "limits.max_cases".into(),
            "is 0: no run could start".into(),
            "write the number of cases you expect, e.g. max_cases = 2000",
        );
    }
    if config.ab.pairs < 2 {
        push(
            "ab.pairs".into(),
            format!(
                "is {}: the noise of a paired difference needs 2 pairs",
                config.ab.pairs
            ),
            "write pairs = 16",
        );
    }
    if !(config.ab.confirm_alpha > 0.0 && config.ab.confirm_alpha < 1.0) {
        push(
            "ab.confirm_alpha".into(),
            format!(
                "{} is not a p-value between 0 and 1",
                config.ab.confirm_alpha
            ),
            "write confirm_alpha = 0.25",
        );
    }
    for name in config.models.keys() {
        check_name(&format!("models.{}", name.escape_debug()), name, &mut push);
    }
    if !(config.gate.family_alpha > 0.0 && config.gate.family_alpha < 0.5) {
        push(
            "gate.family_alpha".into(),
            format!("{} is outside (0, 0.5)", config.gate.family_alpha),
            "write family_alpha = 0.01",
        );
    }
    if config.gate.baseline_branch.trim().is_empty() {
        push(
            "gate.baseline_branch".into(),
            "is empty".into(),
            "write baseline_branch = \"main\"",
        );
    }

    check_status_context(config, &mut push);

    if let Some(gpu) = &config.gpu {
        if gpu.name.is_none() && gpu.mem_bandwidth_gb_s.is_none() && !gpu.measure_host_bandwidth {
            push(
                "gpu".into(),
                "names no GPU and declares no figures".into(),
                "write name = \"h100-sxm\" (`utilgate gpus` lists the catalogue) or declare mem_bandwidth_gb_s and dense_tflops",
            );
        }
        if let Some(bw) = gpu.mem_bandwidth_gb_s
            && !(bw.is_finite() && bw > 0.0)
        {
            push(
                "gpu.mem_bandwidth_gb_s".into(),
                format!("{bw} is not a positive bandwidth"),
                "write the datasheet figure in GB/s, e.g. 3350",
            );
        }
        for (dtype, tflops) in &gpu.dense_tflops {
            if !(tflops.is_finite() && *tflops > 0.0) {
                push(
                    format!("gpu.dense_tflops.{dtype}"),
                    format!("{tflops} is not a positive peak"),
                    "write the dense (not sparse) datasheet figure in TFLOP/s",
                );
            }
        }
    }

    for (name, model) in &config.models {
        let forms = [
            model.hf_config.is_some(),
            model.architecture.is_some(),
            model.params.is_some(),
        ];
        let count = forms.iter().filter(|f| **f).count();
        if count != 1 {
            push(
                format!("models.{name}"),
                if count == 0 {
                    "describes no model".into()
                } else {
                    "mixes hf_config, architecture and params".into()
                },
                "give exactly one of hf_config = \"path/config.json\", architecture = { ... } or params = 8.0e9 with kv_bytes_per_token",
            );
        }
        if model.params.is_some() && model.kv_bytes_per_token.is_none() {
            push(
                format!("models.{name}.kv_bytes_per_token"),
                "is missing in the bare form".into(),
                "write kv_bytes_per_token = 131072 (2 x layers x kv_heads x head_dim x bytes)",
            );
        }
        if model.params.is_none()
            && (model.kv_bytes_per_token.is_some() || model.flops_per_token.is_some())
        {
            push(
                format!("models.{name}"),
                "kv_bytes_per_token and flops_per_token belong to the bare form".into(),
                "add params = ..., or remove them",
            );
        }
    }

    // No suite is fine here: `floor`, `runs`, `baseline` and `report` need none; `run`
    // refuses an empty grid itself (`Error::NoSuites`) and `config check` notes it.
    let mut names = BTreeSet::new();
    for (i, suite) in config.suites.iter().enumerate() {
        let at = |field: &str| format!("suite[{i}].{field}");
        if has_control(&suite.name) {
            check_name(&at("name"), &suite.name, &mut push);
        } else if suite.name.is_empty()
            || !suite
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            push(
                at("name"),
                format!("{:?} is not a plain name", suite.name),
                "use letters, digits, '-', '_' or '.'",
            );
        } else if !names.insert(suite.name.as_str()) {
            push(
                at("name"),
                format!("suite {:?} is defined twice", suite.name),
                "give each suite its own name",
            );
        }
        check_env_passthrough(i, &suite.env_passthrough, &mut push);
        super::axes::validate_axes(suite, &at, &mut push);
        if suite.kind == super::SuiteKind::Serve {
            super::serve::validate_serve_suite(suite, &at, &mut push);
            continue;
        }
        super::serve::refuse_serve_keys(suite, &at, &mut push);
        match (&suite.command, suite.workload) {
            (None, None) => push(
                at("command"),
                "is missing".into(),
                "write command = \"python3 bench.py --model {{ model }} --batch {{ batch }}\" or workload = \"reference\"",
            ),
            (Some(_), Some(_)) => push(
                at("workload"),
                "is given together with command".into(),
                "give exactly one: command = \"...\" (your harness) or workload = \"reference\" (built in)",
            ),
            (None, Some(_)) => {}
            (Some(command), None) => {
                // Axes are variables of the template: check it at one point of them.
                let sample = super::axes::template_sample(suite);
                if let Err(err) = crate::case::check_suite_command(command, &sample) {
                    let message = match &err {
                        crate::case::TemplateError::Syntax(_) => {
                            format!("is not a valid template: {err}")
                        }
                        _ => err.to_string(),
                    };
                    push(at("command"), message, &err.hint());
                }
            }
        }
        if suite.graphs.is_some() && suite.workload.is_none() {
            push(
                at("graphs"),
                "applies only to workload = \"reference\"".into(),
                "remove graphs, or use workload = \"reference\" instead of command",
            );
        }
        for (field, empty) in [
            ("models", suite.models.is_empty()),
            ("precisions", suite.precisions.is_empty()),
            ("phases", suite.phases.is_empty()),
            ("batches", suite.batches.is_empty()),
            ("contexts", suite.contexts.is_empty()),
        ] {
            if empty {
                push(
                    at(field),
                    "is empty: the suite would run no case".into(),
                    "list at least one value",
                );
            }
        }
        if !(suite.steps_tolerance_pct.is_finite()
            && (0.0..=100.0).contains(&suite.steps_tolerance_pct))
        {
            push(
                at("steps_tolerance_pct"),
                format!("{} is not a percentage", suite.steps_tolerance_pct),
                "write steps_tolerance_pct = 5 to accept up to 5% fewer counted steps than steps",
            );
        }
        for (j, precision) in suite.precisions.iter().enumerate() {
            check_name(&format!("suite[{i}].precisions[{j}]"), precision, &mut push);
        }
        for (j, model) in suite.models.iter().enumerate() {
            if has_control(model) {
                check_name(&format!("suite[{i}].models[{j}]"), model, &mut push);
                continue;
            }
            if !ctx.known_models.contains(model) {
                let known: Vec<&str> = ctx.known_models.iter().map(String::as_str).collect();
                push(
                    format!("suite[{i}].models[{j}]"),
                    format!("unknown model {model:?}; known: {}", known.join(", ")),
                    "add a [models.NAME] table (hf_config, architecture or params) or use a catalogue name",
                );
            }
        }
        for (j, precision) in suite.precisions.iter().enumerate() {
            if has_control(precision) {
                continue;
            }
            if let Err(err) = Precision::parse(precision, suite.kv_dtype.as_deref()) {
                push(
                    format!("suite[{i}].precisions[{j}]"),
                    err.to_string(),
                    "write e.g. \"bf16\", \"fp8\", \"int8\" or \"int4-g128\"",
                );
            }
        }
        for (field, values) in [
            ("batches", &suite.batches),
            ("contexts", &suite.contexts),
            ("tp", &suite.tp),
            ("ep", &suite.ep),
        ] {
            if values.contains(&0) {
                push(
                    at(field),
                    "contains 0".into(),
                    "every value must be at least 1",
                );
            }
        }
        if suite.steps == 0 {
            push(at("steps"), "is 0".into(), "write steps = 100");
        }
        if suite.repeats == 0 {
            push(
                at("repeats"),
                "is 0".into(),
                "write repeats = 3 (each a fresh process)",
            );
        }
        if !(suite.timeout_s.is_finite() && suite.timeout_s > 0.0) {
            push(
                at("timeout_s"),
                format!("{} is not a positive number of seconds", suite.timeout_s),
                "write timeout_s = 600",
            );
        }
        if let Some(pct) = suite.max_drop_pct {
            check_drop_pct(pct, &at("max_drop_pct"), &mut push);
        }
        if let Some(ncu) = &suite.ncu {
            check_ncu(ncu, &at("ncu"), &mut push);
        }
        for (j, o) in suite.cases.iter().enumerate() {
            check_drop_pct(
                o.max_drop_pct,
                &format!("suite[{i}].case[{j}].max_drop_pct"),
                &mut push,
            );
        }
    }
    problems
}

/// A suite may keep only credential variables utilgate would remove.
fn check_env_passthrough(i: usize, names: &[String], push: &mut impl FnMut(String, String, &str)) {
    for (j, name) in names.iter().enumerate() {
        if !crate::redact::CREDENTIAL_VARS.contains(&name.as_str()) {
            push(
                format!("suite[{i}].env_passthrough[{j}]"),
                format!("{name:?} is not a credential variable utilgate removes"),
                &format!(
                    "list only variables of {} here; every other variable reaches the harness anyway (set values with env = {{ ... }})",
                    crate::redact::CREDENTIAL_VARS.join(", ")
                ),
            );
        }
    }
}

/// `ncu = { kernel_regex, count }`: a pattern that compiles and matches something, a bounded
/// count. ncu's own `regex:` syntax is ECMAScript-like; what the `regex` crate rejects (an
/// unbalanced group) ncu rejects too, after the timed repeats, so it is caught here.
fn check_ncu(
    ncu: &super::types::NcuCapture,
    key: &str,
    push: &mut impl FnMut(String, String, &str),
) {
    let pattern = ncu.kernel_regex.trim();
    if pattern.is_empty() {
        push(
            format!("{key}.kernel_regex"),
            "is empty".into(),
            "name the kernels to profile, e.g. kernel_regex = \"gemm\" (ncu -k regex:gemm)",
        );
    } else if has_control(pattern) {
        push(
            format!("{key}.kernel_regex"),
            format!("{:?} holds a control character", ncu.kernel_regex),
            "write a plain pattern such as \"gemm|gemv\"",
        );
    } else if let Err(e) = regex::Regex::new(pattern) {
        push(
            format!("{key}.kernel_regex"),
            format!("{:?} is not a regular expression: {e}", ncu.kernel_regex),
            "write a pattern such as \"gemm|gemv\" (no unbalanced brackets)",
        );
    }
    if ncu.count == 0 || ncu.count > super::types::MAX_NCU_COUNT {
        push(
            format!("{key}.count"),
            format!(
                "{} is not between 1 and {}",
                ncu.count,
                super::types::MAX_NCU_COUNT
            ),
            "write count = 5: each profiled launch is replayed once per metric pass",
        );
    }
}

fn check_drop_pct(pct: f64, key: &str, push: &mut impl FnMut(String, String, &str)) {
    if !(pct.is_finite() && pct > 0.0 && pct < 100.0) {
        push(
            key.to_owned(),
            format!("{pct} is outside (0, 100)"),
            "write a percentage such as 3.0",
        );
    }
}

/// `[report] status_context` names one commit status per suite: with several suites it must
/// tell them apart, and only `{suite}` and `{gpu}` are filled in.
fn check_status_context(config: &Config, push: &mut impl FnMut(String, String, &str)) {
    let template = &config.report.status_context;
    let key = "report.status_context".to_owned();
    let rest = template.replace("{suite}", "").replace("{gpu}", "");
    if template.trim().is_empty() {
        push(
            key,
            "is empty".into(),
            "write status_context = \"utilgate/{suite}\"",
        );
    } else if rest.contains('{') || rest.contains('}') {
        push(
            key,
            format!("{template:?} has a placeholder other than {{suite}} and {{gpu}}"),
            "write status_context = \"utilgate/{suite}\" (add ({gpu}) for one name per GPU)",
        );
    } else if config.suites.len() > 1 && !template.contains("{suite}") {
        push(
            key,
            format!("{template:?} gives every suite the same status name"),
            "put {suite} in it: status_context = \"utilgate/{suite}\"",
        );
    }
}

/// Whether `url` can begin a link to a page of the site: an http(s) address with a host, with
/// nothing a Markdown link or an HTML attribute would end at.
fn site_url_ok(url: &str) -> bool {
    let host = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    host.is_some_and(|h| !h.is_empty() && !h.starts_with('/'))
        && !url
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "\"'<>()[]`".contains(c))
}
