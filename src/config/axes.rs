//! Validating a suite's free axes (`axes = { mode = ["eager", "graphs"] }`) and the axis
//! values its `[[suite.case]]` overrides select: names, values, and where axes apply. Pure.

use std::collections::BTreeSet;

use super::{SuiteConfig, SuiteKind};
use crate::case::{Axes, check_axis_name, check_axis_value};

/// Every problem of `suite.axes` and of its overrides' `axes`, pushed with its key path
/// (`suite[0].axes.mode[1]`) and the fix.
pub(super) fn validate_axes(
    suite: &SuiteConfig,
    at: &dyn Fn(&str) -> String,
    push: &mut impl FnMut(String, String, &str),
) {
    validate_speculative(suite, at, push);
    if suite.axes.is_empty() {
        check_overrides(suite, at, push);
        return;
    }
    if suite.kind == SuiteKind::Serve {
        push(
            at("axes"),
            "applies only to step suites (a service case is keyed by its load)".into(),
            "remove axes, or give each setting a suite of its own",
        );
        return;
    }
    if suite.workload.is_some() {
        push(
            at("axes"),
            "has no effect with a built-in workload: nothing reads the axis values".into(),
            "remove axes, or time your own harness with command = \"... {{ mode }}\"",
        );
    }
    for (name, values) in &suite.axes {
        let key = at(&format!("axes.{}", name.escape_debug()));
        if let Err(err) = check_axis_name(name) {
            push(key, err.to_string(), &err.hint());
            continue;
        }
        if values.is_empty() {
            push(
                key.clone(),
                "is empty: the suite would run no case".into(),
                &format!("list at least one value, e.g. {name} = [\"eager\", \"graphs\"]"),
            );
        }
        let mut seen = BTreeSet::new();
        for (j, value) in values.iter().enumerate() {
            let key = format!("{key}[{j}]");
            if let Err(err) = check_axis_value(name, value) {
                push(key, err.to_string(), &err.hint());
            } else if !seen.insert(value.as_str()) {
                push(
                    key,
                    format!("{value:?} is listed twice"),
                    "list each value once: a value is a case of its own",
                );
            }
        }
    }
    check_overrides(suite, at, push);
}

/// The speculative table: a draft named as an axis value may be, whole draft lengths, decode
/// cases of a step suite, and no free axis of the same name. Whether the draft model is known
/// is the floor's to say (`config check` and `run` report it on each case).
fn validate_speculative(
    suite: &SuiteConfig,
    at: &dyn Fn(&str) -> String,
    push: &mut impl FnMut(String, String, &str),
) {
    use crate::case::{Phase, Speculation};
    let Some(spec) = &suite.speculative else {
        return;
    };
    if suite.kind == SuiteKind::Serve {
        push(
            at("speculative"),
            "applies only to step suites (a server's speculation is its own flag)".into(),
            "remove [suite.speculative], or pass the server's speculative settings in its command",
        );
        return;
    }
    if let Err(err) = check_axis_value(Speculation::DRAFT_AXIS, &spec.draft) {
        push(
            at("speculative.draft"),
            err.to_string(),
            "name a model of the catalogue or [models] (e.g. \"llama-3.2-1b\"), or \"ngram\"",
        );
    }
    if spec.k.is_empty() || spec.k.contains(&0) {
        push(
            at("speculative.k"),
            format!("{:?} is not a list of draft lengths of 1 or more", spec.k),
            "write k = [4] (tokens drafted per sequence per round), or several: k = [2, 4]",
        );
    }
    let mut seen = BTreeSet::new();
    if let Some(k) = spec.k.iter().find(|k| !seen.insert(**k)) {
        push(
            at("speculative.k"),
            format!("{k} is listed twice"),
            "list each draft length once: each is a case of its own",
        );
    }
    if suite.phases.contains(&Phase::Prefill) {
        push(
            at("phases"),
            "holds prefill, but a speculative suite drafts decode steps only".into(),
            "write phases = [\"decode\"], and time prefill in a suite of its own",
        );
    }
    for name in [Speculation::DRAFT_AXIS, Speculation::K_AXIS] {
        if suite.axes.contains_key(name) {
            push(
                at(&format!("axes.{name}")),
                "is set by [suite.speculative]".into(),
                "remove the axis: [suite.speculative] gives draft and k",
            );
        }
    }
}

/// One point of the suite's axes to check its command template at: every axis whose name is
/// valid, at its first valid value (a placeholder where it has none, which is reported
/// apart), so a template naming a declared axis is never also reported as unknown.
pub(super) fn template_sample(suite: &SuiteConfig) -> Axes {
    let axes = suite.all_axes();
    let pairs = axes
        .iter()
        .filter(|(name, _)| check_axis_name(name).is_ok())
        .map(|(name, values)| {
            let value = values
                .iter()
                .find(|v| check_axis_value(name, v).is_ok())
                .map_or("value", String::as_str);
            (name.as_str(), value)
        });
    Axes::new(pairs).unwrap_or_default()
}

/// `[[suite.case]] axes = { mode = "compile" }` must name the suite's axes and their values.
fn check_overrides(
    suite: &SuiteConfig,
    at: &dyn Fn(&str) -> String,
    push: &mut impl FnMut(String, String, &str),
) {
    let axes = suite.all_axes();
    for (j, o) in suite.cases.iter().enumerate() {
        for (name, value) in &o.axes {
            let key = at(&format!("case[{j}].axes.{}", name.escape_debug()));
            match axes.get(name) {
                None => {
                    let known: Vec<&str> = axes.keys().map(String::as_str).collect();
                    push(
                        key,
                        format!("{name:?} is not an axis of this suite"),
                        &if known.is_empty() {
                            "declare it on the suite first: axes = { NAME = [\"a\", \"b\"] }"
                                .to_owned()
                        } else {
                            format!("use one of the suite's axes: {}", known.join(", "))
                        },
                    );
                }
                Some(values) if !values.contains(value) => push(
                    key,
                    format!("{value:?} is not one of the axis's values"),
                    &format!("use one of: {}", values.join(", ")),
                ),
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
