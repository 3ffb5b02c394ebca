//! The report stage: a stored run read back with the verdicts it stored (never re-judged), as the
//! one report model (`report::RunReport`) that every renderer reads. Reads the store.

use crate::case::Verdict;
use crate::cli::{Format, RunArgs};
use crate::compare;
use crate::config::Config;
use crate::error::Error;
use crate::output;
use crate::pipeline::judge;
use crate::report::{self, Judgement, RunReport};
use crate::store::meta::RunMeta;
use crate::store::{RunId, Store, StoredRun};

pub(crate) fn load_run(store: &Store, id: Option<i64>) -> Result<StoredRun, Error> {
    let id = match id {
        Some(id) => RunId(id),
        None => store.latest_run_id(None)?.ok_or(Error::NoRuns)?,
    };
    store.run(id)?.ok_or(Error::NoSuchRun(id.0))
}

/// The judgements a run stored when it ran.
pub(crate) fn stored_judgements(
    store: &Store,
    run: &StoredRun,
    config: Option<&Config>,
) -> Result<Vec<Judgement>, Error> {
    run.results
        .iter()
        .map(|r| {
            let decision = r
                .decision_json
                .as_ref()
                .and_then(|d| serde_json::from_value(d.clone()).ok())
                .unwrap_or_else(|| {
                    compare::error_decision(r.error.as_deref().unwrap_or("no stored decision"))
                });
            // The baseline the run was judged against: the one in place before it started.
            let baseline = judge::baseline_before(
                store,
                &r.key,
                &run.summary.gpu_sku,
                run.summary.started_at,
            )?;
            Ok(Judgement {
                key: r.key.clone(),
                decision,
                env_changes: baseline
                    .as_ref()
                    .map(|b| compare::env_diff(&b.env, &r.env))
                    .unwrap_or_default(),
                baseline: baseline.as_ref().map(judge::baseline_ref),
                threshold_pct: judge::policy_for(config, &r.key).max_drop_pct,
            })
        })
        .collect()
}

pub(crate) fn print_report(report: &RunReport, format: Format) -> Result<(), Error> {
    match format {
        Format::Human => output::emit(&report::render_human(report, output::stdout_terminal())),
        Format::Json => output::emit(&report::render_json(report)?),
    }
}

pub(crate) fn fail_on(config: Option<&Config>) -> Vec<crate::case::Verdict> {
    config.map_or_else(
        || crate::config::GateConfig::default().fail_on,
        |c| c.gate.fail_on.clone(),
    )
}

/// Reads the stored run back and prints its report in the chosen format (the service cases
/// of a mixed run attached).
pub(crate) fn report_run(
    store: &Store,
    run_id: crate::store::RunId,
    judgements: &[Judgement],
    (fail_on, promote_run): (&[Verdict], bool),
    serve: &crate::pipeline::serve_suite::MixedServe<'_>,
    meta: &RunMeta,
    args: &RunArgs,
) -> Result<report::RunReport, Error> {
    let stored = store.run(run_id)?.ok_or(Error::NoSuchRun(run_id.0))?;
    let mut report = report::RunReport::build(&stored, judgements, fail_on, promote_run);
    crate::pipeline::evidence::attach(store, &mut report);
    if let Format::Human = args.format.format {
        output::emit(&report::render_human(&report, output::stdout_terminal()))?;
    }
    let report = serve.attach(report, meta, args.format.format)?;
    if let Format::Json = args.format.format {
        output::emit(&report::render_json(&report)?)?;
    }
    Ok(report)
}
