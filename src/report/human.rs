//! The terminal table and the JSON rendering of a run report. Pure: returns strings.

use std::fmt::Write as _;

use comfy_table::Color;

use crate::report::Terminal;
use crate::report::terminal::{Grid, GridCell};

use crate::case::Verdict;
use crate::report::format::{MISSING, count, ms, pct, percent, short_sha, signed_percent};
use crate::report::{CaseReport, GateState, RunReport};

fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::Regressed | Verdict::Invalid | Verdict::Error => Color::Red,
        Verdict::Inconclusive | Verdict::Missing => Color::Yellow,
        Verdict::Improved => Color::Green,
        Verdict::Pass | Verdict::New => Color::Reset,
    }
}

/// The run table's columns: the case, its axes, the figures, `J/token` where a case has one.
fn header(axes: &[String], energy: bool) -> Vec<String> {
    let mut header: Vec<String> = vec!["case".to_owned()];
    header.extend(axes.iter().cloned());
    header.extend(
        [
            "floor ms",
            "bound",
            "step ms",
            "p90 ms",
            "repeat spread",
            "n",
            "util",
            "util then",
        ]
        .map(str::to_owned),
    );
    if energy {
        header.push("J/token".to_owned());
    }
    header.extend(["drop", "verdict"].map(str::to_owned));
    header
}

/// The run as a table with a details section for every case that needs attention.
#[must_use]
pub fn render_human(report: &RunReport, terminal: Terminal) -> String {
    // A suite's free axes are columns of their own after the case (which then shows its
    // point in the built-in grid): two modes of one case read side by side.
    let axes = crate::report::context::axis_names(&report.cases);
    // Energy per token is a column only where a case measured it (#33 item 4).
    let energy = report.cases.iter().any(|c| c.decision.energy.is_some());
    let header = header(&axes, energy);
    let verdict = header.len() - 1;
    let mut table = Grid::new(terminal, header)
        .key_column(0)
        .beside_key(verdict);
    for c in &report.cases {
        table.row(row(c, &axes, energy));
    }
    let mut out = String::new();
    let run = &report.run;
    let _ = writeln!(
        out,
        "run {} on {} ({}{}{})",
        run.id,
        run.gpu_sku,
        run.branch.as_deref().unwrap_or("no branch"),
        run.git_sha
            .as_deref()
            .map_or_else(String::new, |s| format!(" @ {}", short_sha(s))),
        run.pr_number
            .map_or_else(String::new, |n| format!(", PR #{n}")),
    );
    // A run of service cases only has no step table to show.
    if !report.cases.is_empty() || report.service.is_empty() {
        let _ = writeln!(out, "{}", table.render());
    }
    for c in report.cases.iter().filter(|c| needs_detail(c)) {
        details(&mut out, c);
    }
    if !report.service.is_empty() {
        let _ = writeln!(out, "service cases: means over repeats");
        let _ = writeln!(
            out,
            "{}",
            super::serve::service_table(&report.service, terminal)
        );
        super::serve::service_notes(&mut out, &report.service, &report.service_readings);
    }
    if let Some(budget) = &report.budget {
        out.push_str(&super::budget::render_human(budget));
    }
    if let Some(shift) = &report.shared_shift {
        let _ = writeln!(out, "grid: {shift}.");
    }
    let counts: Vec<String> = report
        .gate
        .counts
        .iter()
        .map(|(v, n)| format!("{n} {v}"))
        .collect();
    let _ = writeln!(
        out,
        "gate: {} ({}); fail_on: {}; baselines {}",
        // A case that could not be measured exits 2 even when the gate passed: say so. An
        // unconfirmed drop beyond its threshold is no pass either.
        match report.gate.state {
            GateState::Failed => "FAILED".to_owned(),
            GateState::Error => "error".to_owned(),
            GateState::Undecided => report.gate.unconfirmed.as_ref().map_or_else(
                || "could not tell".to_owned(),
                |u| {
                    format!(
                        "could not tell, largest unconfirmed drop {} on {}",
                        u.figure(),
                        u.case
                    )
                },
            ),
            GateState::Passed => "passed".to_owned(),
        },
        counts.join(", "),
        report
            .gate
            .fail_on
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        if report.gate.baselines_promoted {
            "promoted"
        } else {
            "unchanged"
        },
    );
    out
}

/// One table row of a case; `axes` are the table's axis columns.
fn row(c: &CaseReport, axes: &[String], energy: bool) -> Vec<GridCell> {
    let verdict = GridCell::left(c.verdict.as_str()).colored(verdict_color(c.verdict));
    let case = if axes.is_empty() {
        c.case.clone()
    } else {
        format!("{}/{}", c.key.suite, c.key.point())
    };
    let mut cells = vec![GridCell::left(case)];
    cells.extend(
        axes.iter()
            .map(|name| GridCell::left(c.axes.get(name).map_or(MISSING, String::as_str))),
    );
    cells.extend([
        GridCell::right(ms(c.floor_ms)),
        GridCell::left(c.bound.as_deref().unwrap_or(MISSING)),
        GridCell::right(ms(c.step_now_ms)),
        GridCell::right(ms(c.p90_ms)),
        GridCell::right(percent(c.repeat_spread_pct)),
        GridCell::right(count(c.n)),
        GridCell::right(pct(c.util_now)),
        GridCell::right(pct(c.util_then)),
    ]);
    if energy {
        cells.push(GridCell::right(c.decision.energy.as_ref().map_or_else(
            || MISSING.to_owned(),
            |e| crate::compare::energy::joules(e.now.joules_per_token),
        )));
    }
    cells.extend([GridCell::right(drop_cell(c)), verdict]);
    cells
}

/// The drop, named when it is not `1 - util / util then` ("+28.2% stall", "+5.0% step").
fn drop_cell(c: &CaseReport) -> String {
    let drop = signed_percent(c.drop_pct);
    match &c.drop_note {
        Some(note) => format!("{drop} {note}"),
        None => drop,
    }
}

fn needs_detail(c: &CaseReport) -> bool {
    !matches!(c.verdict, Verdict::Pass | Verdict::New) || c.decision.floor_changed
}

fn details(out: &mut String, c: &CaseReport) {
    let _ = writeln!(out, "{} {}:", c.verdict.as_str().to_uppercase(), c.case);
    // One line on the reference, one on this run: the same sentences as every other report's.
    for line in [&c.then_line, &c.now_line, &c.energy_line]
        .into_iter()
        .flatten()
    {
        let _ = writeln!(out, "  {}", super::escape::terminal(line));
    }
    // Every string below may carry harness, trace or file text: one line each, controls
    // stripped, newlines written `\n`, so none can begin a line (a workflow command).
    let t = super::escape::terminal;
    for reason in &c.decision.reasons {
        let _ = writeln!(out, "  {}", t(reason));
    }
    // A regressed or inconclusive case's reasons already name the changes as the likely cause
    // (`compare::with_env_causes`); listing them again printed every upgrade twice.
    let named_in_reasons = matches!(c.verdict, Verdict::Regressed | Verdict::Inconclusive);
    if !c.env_changes.is_empty() && !named_in_reasons {
        let _ = writeln!(
            out,
            "  environment changed since the baseline (the likely cause):"
        );
        for change in &c.env_changes {
            let _ = writeln!(out, "    {}", t(&change.to_string()));
        }
    }
    if let Some(ev) = &c.evidence {
        if let Some(w) = &ev.warning {
            let _ = writeln!(out, "  trace {}: warning: {}", t(&ev.trace), t(w));
        }
        if !ev.diff_lines.is_empty() {
            let _ = writeln!(
                out,
                "  trace diff, the baseline result's trace -> this run's ({}):",
                t(&ev.trace)
            );
            for line in &ev.diff_lines {
                let _ = writeln!(out, "    {}", t(line));
            }
        }
        for d in &ev.diagnosis {
            let _ = writeln!(out, "  trace: {}", t(d));
        }
        if !ev.host_lines.is_empty() {
            let _ = writeln!(out, "  trace: host operators by self time:");
            for line in &ev.host_lines {
                let _ = writeln!(out, "    {}", t(line));
            }
        }
    }
    for ev in &c.nsight {
        let what = format!("{} {}", ev.kind, t(&ev.file));
        if let Some(w) = &ev.warning {
            let _ = writeln!(out, "  {what}: warning: {}", t(w));
        }
        if !ev.diff_lines.is_empty() {
            let _ = writeln!(
                out,
                "  {} diff, the baseline result's file -> this run's ({}):",
                ev.kind,
                t(&ev.file)
            );
            for line in &ev.diff_lines {
                let _ = writeln!(out, "    {}", t(line));
            }
        }
        if !ev.lines.is_empty() {
            let _ = writeln!(out, "  {what}:");
            for line in &ev.lines {
                let _ = writeln!(out, "    {}", t(line));
            }
        }
    }
    // An error's reason already carries the harness's stderr tail.
}

/// The report as JSON, with `schema_version`.
pub fn render_json(report: &RunReport) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    Ok(text)
}
