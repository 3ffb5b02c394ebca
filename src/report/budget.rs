//! The time budget as reports state it: the plan printed before measuring, the progress line
//! (budget, time left, ETA), and the run report's section (the budget, the time each case
//! used, why its sampling stopped, what a longer budget would resolve), rebuilt from what the
//! run stored. Pure.

use serde::Serialize;

use crate::compare::budget::{NightRecord, Plan, PlanNote, Stop};
use crate::report::format::duration;
use crate::store::StoredRun;

/// The progress display's budget line.
#[must_use]
pub fn progress_line(night: &NightRecord, elapsed_s: f64, eta_s: f64) -> String {
    let left = night.budget_s - elapsed_s;
    let left = if left >= 0.0 {
        format!("{} left", duration(left))
    } else {
        format!(
            "{} over (grace {})",
            duration(-left),
            duration(night.grace_s)
        )
    };
    format!(
        "budget {}: {} used, {left}, ETA {}",
        duration(night.budget_s),
        duration(elapsed_s),
        duration(eta_s)
    )
}

fn note_text(note: PlanNote) -> &'static str {
    match note {
        PlanNote::Resolved => "resolved",
        PlanNote::NoHistory => "no history: configured sampling, costs recorded tonight",
        PlanNote::OverBudget => "unresolved: over budget",
        PlanNote::TooNoisy => "unresolved: too noisy for any budget tonight",
    }
}

/// The plan as printed before measuring: a summary line and one line per case, then one
/// warning per case the budget cannot resolve (named, with what would resolve it).
#[must_use]
pub fn plan_text(plan: &Plan, night: &NightRecord) -> (String, Vec<String>) {
    use std::fmt::Write as _;
    let mut out = format!(
        "plan: budget {} (+{} grace), {} planned over cases with history, {} kept for suspects",
        duration(night.budget_s),
        duration(night.grace_s),
        duration(plan.planned_s),
        duration(plan.reserve_s)
    );
    for c in &plan.cases {
        let _ = write!(
            out,
            "\n  {}: {} repeats x {} steps{} ({})",
            c.name,
            c.repeats,
            c.steps,
            c.estimate_s
                .map_or_else(String::new, |s| format!(", ~{}", duration(s))),
            note_text(c.note)
        );
    }
    let warnings = plan
        .unresolved()
        .map(|c| {
            let what = match (c.note, c.needed_repeats, c.needed_s) {
                (PlanNote::OverBudget, Some(r), Some(s)) => {
                    format!("it needs {r} repeats (~{}) to resolve", duration(s))
                }
                _ => "its noise (or its reference's) is too high to resolve the threshold at any repeats tonight".to_owned(),
            };
            format!(
                "{}: cannot be resolved within the budget ({what}); it gets {} repeats and may end inconclusive",
                c.name, c.repeats
            )
        })
        .chain(plan.budget_to_resolve_all_s.map(|s| {
            format!(
                "a budget of {} would resolve every case that can be resolved",
                duration(s)
            )
        }))
        .collect();
    (out, warnings)
}

/// One case's line of the budget section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseBudget {
    pub case: String,
    pub note: PlanNote,
    pub stop: Stop,
    pub planned_repeats: u32,
    /// Repeats measured tonight (before and in the confirm step).
    pub repeats: u32,
    pub confirm_repeats: u32,
    pub time_s: f64,
    /// Seconds that would resolve it, where the plan knew.
    pub needed_s: Option<f64>,
}

/// The run report's budget section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetReport {
    pub budget_s: f64,
    pub grace_s: f64,
    pub used_s: f64,
    /// Whether the budget cut a case short or left one unstarted.
    pub stopped: bool,
    pub not_started: Vec<String>,
    pub budget_to_resolve_all_s: Option<f64>,
    pub cases: Vec<CaseBudget>,
    /// Plain sentences: the budget, what it cut, what a longer one would resolve.
    pub lines: Vec<String>,
}

impl BudgetReport {
    /// The section of a stored run, when a budget ran it.
    #[must_use]
    pub fn of_run(run: &StoredRun) -> Option<BudgetReport> {
        let night = run.budget_night.as_ref()?;
        let cases: Vec<CaseBudget> = run
            .results
            .iter()
            .filter_map(|r| {
                let rec = r.budget.as_ref()?;
                Some(CaseBudget {
                    case: r.key.to_string(),
                    note: rec.note,
                    stop: rec.stop,
                    planned_repeats: rec.planned_repeats,
                    repeats: rec.first_repeats + rec.confirm_repeats,
                    confirm_repeats: rec.confirm_repeats,
                    time_s: rec.time_s,
                    needed_s: rec.needed_s,
                })
            })
            .collect();
        let lines = lines(night, &cases);
        Some(BudgetReport {
            budget_s: night.budget_s,
            grace_s: night.grace_s,
            used_s: night.used_s,
            stopped: night.stopped,
            not_started: night.not_started.clone(),
            budget_to_resolve_all_s: night.budget_to_resolve_all_s,
            cases,
            lines,
        })
    }
}

fn stop_text(stop: Stop) -> &'static str {
    match stop {
        Stop::Decisive => "decisive, stopped early",
        Stop::Suspect => "suspect, confirmed",
        Stop::Planned => "planned repeats done",
        Stop::Budget => "cut short by the budget",
        Stop::Error => "failed",
        Stop::NotStarted => "not started",
    }
}

fn lines(night: &NightRecord, cases: &[CaseBudget]) -> Vec<String> {
    let mut out = vec![format!(
        "Budget {} (+{} grace): measuring took {}{}.",
        duration(night.budget_s),
        duration(night.grace_s),
        duration(night.used_s),
        if night.used_s > night.budget_s + night.grace_s {
            " (over budget and grace: measuring stopped and the run judged what it had)"
        } else if night.stopped {
            " (the budget ran out: measuring stopped and the run judged what it had)"
        } else {
            ""
        }
    )];
    let early = cases.iter().filter(|c| c.stop == Stop::Decisive).count();
    if early > 0 {
        out.push(format!(
            "{early} case(s) were decisive before their planned repeats and stopped early."
        ));
    }
    let cut: Vec<&str> = cases
        .iter()
        .filter(|c| c.stop == Stop::Budget)
        .map(|c| c.case.as_str())
        .collect();
    if !cut.is_empty() {
        out.push(format!(
            "Cut short by the budget (judged on what they have; their baselines do not move): {}.",
            cut.join(", ")
        ));
    }
    if !night.not_started.is_empty() {
        out.push(format!(
            "Not measured (the budget was spent first; not stored): {}.",
            night.not_started.join(", ")
        ));
    }
    let unresolved: Vec<&str> = cases
        .iter()
        // The plan's word, kept only where the night bore it out: a case the plan could not
        // resolve that was decisive (or a confirmed suspect) after all was resolved.
        .filter(|c| matches!(c.note, PlanNote::OverBudget | PlanNote::TooNoisy))
        .filter(|c| !matches!(c.stop, Stop::Decisive | Stop::Suspect))
        .map(|c| c.case.as_str())
        .collect();
    if !unresolved.is_empty() {
        out.push(format!(
            "Unresolved within the budget (named in the plan): {}.",
            unresolved.join(", ")
        ));
    }
    if let Some(s) = night.budget_to_resolve_all_s {
        out.push(format!(
            "A budget of {} would have resolved every case that can be resolved.",
            duration(s)
        ));
    }
    out
}

/// The budget section of the terminal report.
#[must_use]
pub fn render_human(b: &BudgetReport) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for line in &b.lines {
        let _ = writeln!(out, "{line}");
    }
    for c in &b.cases {
        let _ = writeln!(
            out,
            "  {}: {} in {} repeats ({} planned{}), {}",
            c.case,
            duration(c.time_s),
            c.repeats,
            c.planned_repeats,
            if c.confirm_repeats > 0 {
                format!(", {} to confirm", c.confirm_repeats)
            } else {
                String::new()
            },
            stop_text(c.stop)
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_progress_line_says_budget_left_and_eta_and_an_overrun() {
        let night = NightRecord {
            budget_s: 600.0,
            grace_s: 30.0,
            planned_s: 500.0,
            reserve_s: 90.0,
            budget_to_resolve_all_s: None,
            not_started: Vec::new(),
            used_s: 0.0,
            stopped: false,
        };
        assert_eq!(
            progress_line(&night, 120.0, 300.0),
            "budget 10 min 00 s: 2 min 00 s used, 8 min 00 s left, ETA 5 min 00 s"
        );
        assert!(progress_line(&night, 610.0, 0.0).contains("10.0 s over (grace 30.0 s)"));
    }

    #[test]
    fn a_case_the_plan_could_not_resolve_that_was_decisive_is_not_listed_unresolved() {
        let night = NightRecord {
            budget_s: 120.0,
            grace_s: 10.0,
            planned_s: 100.0,
            reserve_s: 20.0,
            budget_to_resolve_all_s: None,
            not_started: Vec::new(),
            used_s: 90.0,
            stopped: false,
        };
        let case = |name: &str, note, stop| CaseBudget {
            case: name.into(),
            note,
            stop,
            planned_repeats: 3,
            repeats: 3,
            confirm_repeats: 0,
            time_s: 10.0,
            needed_s: None,
        };
        let cases = [
            case("a", PlanNote::OverBudget, Stop::Decisive),
            case("b", PlanNote::TooNoisy, Stop::Planned),
            case("c", PlanNote::TooNoisy, Stop::Suspect),
        ];
        let text = lines(&night, &cases).join("\n");
        assert!(text.contains("1 case(s) were decisive"), "{text}");
        assert!(
            text.contains("Unresolved within the budget (named in the plan): b."),
            "only the case still unresolved: {text}"
        );
    }
}
