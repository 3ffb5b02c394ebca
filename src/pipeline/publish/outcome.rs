//! What a published run's exit is, and how a publishing failure after the run is stored weighs
//! against the gate. No I/O but printing a publishing error.

use crate::case::Verdict;
use crate::config::Config;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::report::RunReport;

/// The exit a stored run's report stands for: the gate first, then cases that failed to run.
pub(crate) fn outcome_of(report: &RunReport) -> Outcome {
    if !report.gate.passed {
        Outcome::GateFailed
    } else if report.gate.counts.contains_key(&Verdict::Error) {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    }
}

/// A publishing error after the run is stored: exit 2, unless the gate failed (exit 1 wins);
/// then it is printed and the gate's outcome stands.
pub(crate) fn unless_gate_failed(
    result: Result<(), Error>,
    gate_failed: bool,
) -> Result<(), Error> {
    match result {
        Err(err) if gate_failed => {
            let _ = output::report_error(&err);
            Ok(())
        }
        other => other,
    }
}

/// The status name: the publishing side's config when it has one (the default branch's, in
/// the publishing workflow), else the one stored with the run.
#[must_use]
pub fn status_context(
    config: Option<&Config>,
    stored: Option<&crate::store::PublishFacts>,
) -> String {
    config.map_or_else(
        || {
            stored.map_or_else(
                || crate::config::DEFAULT_STATUS_CONTEXT.to_owned(),
                |f| f.status_context.clone(),
            )
        },
        |c| c.report.status_context.clone(),
    )
}
