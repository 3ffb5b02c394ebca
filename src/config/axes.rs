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

/// One point of the suite's axes to check its command template at: every axis whose name is
/// valid, at its first valid value (a placeholder where it has none, which is reported
/// apart), so a template naming a declared axis is never also reported as unknown.
pub(super) fn template_sample(suite: &SuiteConfig) -> Axes {
    let pairs = suite
        .axes
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
    for (j, o) in suite.cases.iter().enumerate() {
        for (name, value) in &o.axes {
            let key = at(&format!("case[{j}].axes.{}", name.escape_debug()));
            match suite.axes.get(name) {
                None => {
                    let known: Vec<&str> = suite.axes.keys().map(String::as_str).collect();
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
