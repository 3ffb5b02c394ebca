//! `utilgate compare`: recomputes a stored run's verdicts from its raw samples, against the
//! baselines it ran against or another run. Never writes the store.

use std::collections::BTreeSet;

use crate::cli::CompareArgs;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::pipeline::context::store_from;
use crate::pipeline::judge::{self, Against, CaseInput};
use crate::pipeline::report::fail_on;
use crate::pipeline::report::load_run;
use crate::pipeline::report::print_report;
use crate::report::RunReport;
use crate::store::RunId;

pub fn compare(args: &CompareArgs) -> Result<Outcome, Error> {
    let (store, config) = store_from(&args.config)?;
    let run = load_run(&store, args.run)?;
    let against_run = match args.against {
        Some(id) => Some(store.run(RunId(id))?.ok_or(Error::NoSuchRun(id))?),
        None => None,
    };
    if let Some(other) = &against_run
        && other.summary.gpu_sku != run.summary.gpu_sku
    {
        return Err(Error::DifferentGpus {
            run: run.summary.id.0,
            gpu: run.summary.gpu_sku.clone(),
            other: other.summary.id.0,
            other_gpu: other.summary.gpu_sku.clone(),
        });
    }
    let inputs: Vec<CaseInput> = run
        .results
        .iter()
        .map(|r| {
            Ok(CaseInput {
                key: r.key.clone(),
                repeats_ms: r.repeats_ms.clone(),
                floor_ms: r.floor_ms,
                error: r.error.clone(),
                env: r.env.clone(),
                gpu_guard: None,
                gpu_state: r.gpu_state_json.clone(),
                first_repeats: r.budget.as_ref().map(|b| b.first_repeats as usize),
                // Re-judged without its night: the confirm step as configured.
                confirm_sized: None,
                quality: store.result_quality(r.id)?,
                speculative: store.result_speculation(r.id)?,
                energy: store.result_energy(r.id)?,
            })
        })
        .collect::<Result<_, Error>>()?;
    let suites: BTreeSet<String> = inputs.iter().map(|c| c.key.suite.clone()).collect();
    let canary: Option<crate::compare::Canary> = store
        .run_canary(run.summary.id)?
        .and_then(|j| serde_json::from_value(j).ok());
    // Without --against, the run is judged against the baselines it was judged against when it
    // ran: those in place before it started (it may have become the baseline itself since).
    let against = against_run
        .as_ref()
        .map_or(Against::PinnedAsOf(run.summary.started_at), Against::Run);
    let judgements = judge::judge(
        &store,
        &run.summary.gpu_sku,
        &inputs,
        &suites,
        config.as_ref(),
        &against,
        canary.as_ref(),
    )?;
    let fail_on = fail_on(config.as_ref());
    let report = RunReport::build(&run, &judgements, &fail_on, false);
    print_report(&report, args.format.format)?;
    Ok(if report.gate.passed {
        Outcome::Passed
    } else {
        Outcome::GateFailed
    })
}
