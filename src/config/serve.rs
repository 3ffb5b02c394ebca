//! Validation of a suite of `kind = "serve"` (DESIGN.md §12): its command template over the
//! service variables, its grid of rates, concurrencies and lengths, and its gate settings.
//! Pure.

use super::names::check_name;
use super::types::SuiteConfig;

/// Pushes every problem of a service suite with its key and a fix.
#[expect(
    clippy::too_many_lines,
    reason = "one flat list of checks, each independent, in the order of the suite's keys"
)]
pub(crate) fn validate_serve_suite(
    suite: &SuiteConfig,
    at: &dyn Fn(&str) -> String,
    push: &mut impl FnMut(String, String, &str),
) {
    match &suite.command {
        None => push(
            at("command"),
            "is missing".into(),
            "write command = \"vllm bench serve ... --save-result --result-filename {{ result_file }}\"",
        ),
        Some(command) => {
            if let Err(err) = crate::serve::check_serve_template(command) {
                let message = match &err {
                    crate::case::TemplateError::Syntax(_) => {
                        format!("is not a valid template: {err}")
                    }
                    _ => err.to_string(),
                };
                push(
                    at("command"),
                    message,
                    &crate::serve::serve_template_hint(&err),
                );
            }
        }
    }
    for (j, model) in suite.models.iter().enumerate() {
        check_name(&format!("{}[{j}]", at("models")), model, push);
    }
    if suite.models.is_empty() {
        push(
            at("models"),
            "is empty: the suite would run no case".into(),
            "list the served model, e.g. models = [\"Qwen/Qwen2.5-7B-Instruct\"]",
        );
    }
    if suite.request_rates.is_empty() && suite.max_concurrencies.is_empty() {
        push(
            at("request_rates"),
            "is empty, and so is max_concurrencies: the suite offers no load".into(),
            "write request_rates = [1.0, 4.0, inf] and/or max_concurrencies = [16, 64]",
        );
    }
    for (j, r) in suite.request_rates.iter().enumerate() {
        if r.is_nan() || *r <= 0.0 {
            push(
                format!("{}[{j}]", at("request_rates")),
                format!("{r} is not a positive rate"),
                "write a number of requests per second, or inf",
            );
        }
    }
    for (field, values) in [
        ("max_concurrencies", &suite.max_concurrencies),
        ("input_lens", &suite.input_lens),
        ("output_lens", &suite.output_lens),
    ] {
        if let Some(j) = values.iter().position(|v| *v == 0) {
            push(
                format!("{}[{j}]", at(field)),
                "is 0".into(),
                "write a positive number",
            );
        }
    }
    for (field, given) in [
        ("workload", suite.workload.is_some()),
        ("graphs", suite.graphs.is_some()),
        ("phases", !suite.phases.is_empty()),
        ("batches", !suite.batches.is_empty()),
        ("contexts", !suite.contexts.is_empty()),
        ("trace", suite.trace),
        ("nsys", suite.nsys),
        ("ncu", suite.ncu.is_some()),
        ("max_drop_pct", suite.max_drop_pct.is_some()),
        ("case", !suite.cases.is_empty()),
    ] {
        if given {
            push(
                at(field),
                "applies only to step suites".into(),
                "remove it: a service suite's grid is request_rates, max_concurrencies, input_lens and output_lens; its threshold max_change_pct",
            );
        }
    }
    for (j, precision) in suite.precisions.iter().enumerate() {
        if let Err(err) = crate::catalog::Precision::parse(precision, suite.kv_dtype.as_deref()) {
            push(
                format!("{}[{j}]", at("precisions")),
                err.to_string(),
                "a service suite's precision only feeds the utilisation estimate: write e.g. \"bf16\" or \"fp8\"",
            );
        }
    }
    if suite.num_prompts == Some(0) {
        push(at("num_prompts"), "is 0".into(), "write num_prompts = 200");
    }
    if suite.repeats == 0 {
        push(at("repeats"), "is 0".into(), "write repeats = 3");
    }
    if !(suite.timeout_s.is_finite() && suite.timeout_s > 0.0) {
        push(
            at("timeout_s"),
            format!("{} is not a positive number of seconds", suite.timeout_s),
            "write timeout_s = 1800",
        );
    }
    if let Some(pct) = suite.max_change_pct
        && !(pct.is_finite() && pct >= 0.0)
    {
        push(
            at("max_change_pct"),
            format!("{pct} is not a percentage"),
            "write max_change_pct = 5.0",
        );
    }
    if let Some(b) = suite.burstiness
        && !(b.is_finite() && b > 0.0)
    {
        push(
            at("burstiness"),
            format!("{b} is not positive"),
            "write burstiness = 1.0 (Poisson arrivals)",
        );
    }
    let swept = match suite.sweep {
        Some(crate::serve::SweepAxis::RequestRate) => {
            Some(("request_rates", suite.request_rates.len()))
        }
        Some(crate::serve::SweepAxis::MaxConcurrency) => {
            Some(("max_concurrencies", suite.max_concurrencies.len()))
        }
        None => None,
    };
    if let Some((field, n)) = swept
        && n < 2
    {
        push(
            at("sweep"),
            format!("sweeps {field}, which holds {n} value(s)"),
            "a sweep needs at least two points: list them, e.g. request_rates = [1.0, 4.0, inf]",
        );
    }
    if suite.gpus == Some(0) {
        push(
            at("gpus"),
            "is 0".into(),
            "write the server's GPU count, e.g. gpus = 8",
        );
    }
    for (j, level) in suite.interactivity_levels.iter().flatten().enumerate() {
        if !(level.is_finite() && *level > 0.0) {
            push(
                format!("{}[{j}]", at("interactivity_levels")),
                format!("{level} is not a positive number of tokens/s per user"),
                "write levels as 1000 / TPOT ms, e.g. interactivity_levels = [20.0, 40.0]",
            );
        }
    }
    if suite.interactivity_levels.is_some() && suite.sweep.is_none() {
        push(
            at("interactivity_levels"),
            "applies only to a sweep".into(),
            "add sweep = \"request_rate\" (or \"max_concurrency\"), or remove it",
        );
    }
    for (j, m) in suite.gated.iter().flatten().enumerate() {
        if crate::serve::canonical_metric(m).as_deref() != Some(m.as_str())
            || crate::serve::direction_of(m) == crate::serve::Direction::Info
        {
            push(
                format!("{}[{j}]", at("gated")),
                format!("{m:?} is not a gateable service metric"),
                "use names like median_ttft_ms, p99_ttft_ms, median_itl_ms, p99_tpot_ms, mean_e2el_ms, output_throughput, request_throughput",
            );
        }
    }
}

/// A step suite given a service suite's keys: each one named, with the fix.
pub(crate) fn refuse_serve_keys(
    suite: &SuiteConfig,
    at: &dyn Fn(&str) -> String,
    push: &mut impl FnMut(String, String, &str),
) {
    for (field, given) in [
        ("request_rates", !suite.request_rates.is_empty()),
        ("max_concurrencies", !suite.max_concurrencies.is_empty()),
        ("input_lens", !suite.input_lens.is_empty()),
        ("output_lens", !suite.output_lens.is_empty()),
        ("num_prompts", suite.num_prompts.is_some()),
        ("seed", suite.seed.is_some()),
        ("burstiness", suite.burstiness.is_some()),
        ("gated", suite.gated.is_some()),
        ("max_change_pct", suite.max_change_pct.is_some()),
        ("sweep", suite.sweep.is_some()),
        ("gpus", suite.gpus.is_some()),
        ("interactivity_levels", suite.interactivity_levels.is_some()),
    ] {
        if given {
            push(
                at(field),
                "applies only to suites of kind = \"serve\"".into(),
                "write kind = \"serve\" for a load-generator suite, or remove it",
            );
        }
    }
}
