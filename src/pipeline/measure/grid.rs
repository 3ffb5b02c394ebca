//! The measure stage's entry point for a grid: every planned case measured in fresh processes
//! (one repeat at a time under a budget), between the machine canary's two readings, each case
//! journalled as it ends, with the traced and profiled repeats. Starts processes through
//! [`super::runner::Runner`].

use std::time::Instant;

use crate::compare::Canary;
use crate::error::Error;
use crate::pipeline::measure::runner::{CasePlan, Measured, Runner};
use crate::pipeline::record::CaseRecord;

/// Measures the machine canary into `canary`: on a GPU NVML watches (and no canary command),
/// the GPU's copy, GEMM and clocks; else the configured one. A failure drops it with a warning.
pub(crate) fn measure_canary(runner: &Runner<'_>, canary: &mut Option<Canary>) {
    let Some(c) = canary.as_mut() else {
        return;
    };
    let config = &runner.loaded.config.canary;
    let measured = match runner.watch {
        Some(watch) if config.command.is_none() => {
            let (result, samples) =
                watch.sample(&|| None, || crate::measure::canary::measure_gpu(c, 0));
            crate::measure::canary::add_clock_periods(c, &samples);
            result
        }
        _ => crate::measure::canary::measure(
            config,
            &crate::measure::canary::CommandRun {
                dir: &runner.loaded.dir,
                guard: Some(std::path::Path::new(&runner.exe)),
                cancel: &runner.cancel,
            },
            c,
        ),
    };
    if let Err(e) = measured {
        runner
            .progress
            .warn(&format!("{e}; this run has no canary"));
        *canary = None;
    }
}

/// Measures every planned case, between the machine canary's two readings (or takes it from the journal of the interrupted run being
/// resumed), journalling each as it ends; returns the records and the traces taken.
pub(crate) fn measure_all<'a>(
    runner: &Runner<'_>,
    plans: Vec<CasePlan<'a>>,
    (journal, canary, mut night): (
        &mut crate::pipeline::journal::CaseJournal<Measured>,
        &mut Option<Canary>,
        Option<&mut crate::pipeline::budget::NightRun<'_>>,
    ),
    trace: bool,
    evidence_options: &crate::evidence::Options,
) -> Result<(Vec<CaseRecord<'a>>, Vec<crate::store::NewEvidence>), Error> {
    let progress = runner.progress;
    measure_canary(runner, canary);
    let mut records = Vec::with_capacity(plans.len());
    let mut evidence = Vec::new();
    for (i, plan) in plans.into_iter().enumerate() {
        let measured = if let Some(recovered) = journal.recovered.remove(&plan.key) {
            progress.start_case(&plan.key.to_string());
            if let Some(n) = night.as_deref_mut() {
                n.night.recovered(i, &recovered);
            }
            recovered
        } else if let Some(n) = night.as_deref_mut() {
            // A budgeted night: one repeat at a time until the case is decisive; a case the
            // budget was spent before is not measured (nor stored).
            let Some(measured) = n.measure(runner, i, &plan, progress)? else {
                continue;
            };
            // Its traced and profiled repeats count against the budget too.
            let suite = plan.suite;
            let traces = trace || suite.trace || suite.nsys || suite.ncu.is_some();
            if !traces || n.night.may_trace(i) {
                let t = Instant::now();
                evidence.extend(runner.trace_case(&plan, &measured, trace, evidence_options)?);
                n.night.charge(i, t.elapsed().as_secs_f64());
            } else {
                progress.warn(&format!(
                    "{}: not traced or profiled: the budget has no room left for that repeat",
                    plan.key
                ));
            }
            journal.journal.append(&plan.key, &measured)?;
            measured
        } else {
            progress.start_case(&plan.key.to_string());
            let (measured, traced) = runner.measure_case(&plan, trace, evidence_options)?;
            evidence.extend(traced);
            journal.journal.append(&plan.key, &measured)?;
            measured
        };
        let (mut record, warnings) = CaseRecord::new(plan, measured);
        if let Some(n) = night.as_deref() {
            record.night = Some(i);
            record.first_repeats = Some(n.night.first_repeats(i) as usize);
            record.confirm_sized = n.night.confirm_sized(i);
        }
        for warning in warnings {
            progress.warn(&format!("{}: {warning}", record.plan.key));
        }
        progress.finish_case(
            &record.plan.key.to_string(),
            record.measured.error.as_deref(),
        );
        if let Some(n) = night.as_deref() {
            progress.note(&n.night.progress_line());
        }
        records.push(record);
    }
    measure_canary(runner, canary);
    progress.clear();
    Ok((records, evidence))
}
