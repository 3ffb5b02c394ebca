//! `utilgate run`, in the order it happens: plan the cases (config, device, floors, shard) ->
//! measure each in fresh processes (journalled as it ends) -> judge against the baselines ->
//! confirm suspects with fresh repeats -> store the run in one transaction -> report and exit
//! code. Each case is one [`record::CaseRecord`] from plan to store. Sequences I/O; every
//! decision is delegated to pure modules.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::case::Verdict;
use crate::cli::RunArgs;
use crate::compare::{self, Canary};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output::{self, Progress};
use crate::pipeline::context::env_lookup;
use crate::pipeline::gpu::{self, GpuWatch};
use crate::pipeline::measure::grid::measure_all;
use crate::pipeline::measure::runner::{Runner, cancel_on_ctrl_c, this_exe};
use crate::pipeline::plan::{check_grid, plan_cases, run_meta, split_suites};
use crate::pipeline::record::JudgedCase;
use crate::pipeline::report::report_run;
use crate::pipeline::serve_suite::ServeCases;
use crate::pipeline::store::{
    RunStores, new_run, open_journal, promotes, publish_facts, store_run,
};
use crate::pipeline::verdicts::Judging;
use crate::store::NewRun;

#[expect(
    clippy::too_many_lines,
    reason = "the run's steps in order, read top to bottom; each step is a call"
)]
pub fn run(args: &RunArgs) -> Result<Outcome, Error> {
    // A budget (`--budget`) covers the whole run, from here.
    let clock = std::time::Instant::now();
    // What a killed run left behind (results directories, cgroup scopes) goes first.
    crate::measure::workdir::sweep_stale(&std::env::temp_dir());
    let group = crate::pipeline::fleet::run_group(args, &env_lookup())?;
    // Validate everything cheap before the first harness starts.
    let mut loaded = crate::config::load(&args.config.config)?;
    // A pull request's gate settings and baselines are its base branch's, not its own.
    let pr_event = crate::pipeline::publish::env::pull_request_event(&env_lookup())?;
    let base = crate::pipeline::base_gate::apply(
        &mut loaded,
        args.baselines.as_deref(),
        pr_event.as_ref(),
    );
    let loaded = loaded;
    let config = &loaded.config;
    // Step cases and service cases (`kind = "serve"`) go through the same stages; a run may
    // hold either kind or both.
    let (serve_suites, suites) = split_suites(&loaded, args)?;
    crate::pipeline::serve_suite::check_options(&serve_suites, args)?;
    let mut publishing = crate::pipeline::publish::during_run::prepare_run(args, &loaded)?;
    gpu::check_workloads(&suites)?;
    let base_files = base.baselines.as_ref().map(|b| b.path.as_path());
    let mut stores = RunStores::open(args, &loaded, base_files)?;
    // The store must take the run before an hour of measuring goes into it.
    stores.store.preflight()?;
    let step_cases = !suites.is_empty();
    let watch = step_cases
        .then(|| GpuWatch::start(config, env_lookup()("CUDA_VISIBLE_DEVICES").as_deref()))
        .flatten();
    // A measured host bandwidth stays pinned beside the configured store, scratch or not.
    let gpu = crate::pipeline::device::run_device(
        &loaded,
        &stores.configured,
        watch.as_ref(),
        step_cases,
    )?;
    if let Some(publishing) = publishing.as_mut() {
        let names = suites.iter().chain(&serve_suites).map(|s| s.name.as_str());
        publishing.start(&gpu.name, &names.collect::<Vec<_>>())?;
    }

    // Plan.
    let (plans, grid) = plan_cases(&loaded, &suites, gpu.spec.as_ref(), args.shard)?;
    check_grid(&stores.store, &suites, plans.len(), args, config)?;
    let meta = run_meta(args, &loaded, pr_event);

    // Measure, each case journalled as it ends.
    let (cancel, exe) = (cancel_on_ctrl_c(), this_exe());
    let mut serve = ServeCases::measure(&loaded, serve_suites, &cancel, gpu.spec.as_ref())?;
    let in_actions = env_lookup()("GITHUB_ACTIONS").as_deref() == Some("true");
    let progress = Progress::new(plans.len() as u64, in_actions);
    let runner = Runner::new(&loaded, Arc::clone(&cancel), watch.as_ref(), &progress, exe)?;
    let resume = crate::pipeline::journal::Resume::from_flag(args.resume.as_ref());
    let mut journal = open_journal(&stores, config, &gpu.name, &plans, resume)?;
    let started_at = journal
        .started_at
        .unwrap_or_else(crate::pipeline::context::now);
    let evidence_options = crate::pipeline::evidence::options(&config.evidence)?;
    // With a budget, the night is planned from the store's history and printed first.
    let mut night = crate::pipeline::budget::NightRun::start(
        args.budget,
        &stores.store,
        &gpu.name,
        config,
        (&plans, grid.keys.len()),
        clock,
        &progress,
    )?;
    // The machine canary before the cases (and after them, below), stored with the run.
    // (A run of service cases only has no step to weigh against it.)
    let mut canary = (config.canary.enabled && step_cases).then(Canary::default);
    let (records, evidence) = measure_all(
        &runner,
        plans,
        (&mut journal, &mut canary, night.as_mut()),
        args.trace,
        &evidence_options,
    )?;

    // Judge, then confirm suspects in fresh processes before failing them.
    let (store, sku, watched) = (&stores.store, gpu.name.as_str(), watch.as_ref());
    let judging = Judging {
        store,
        gpu_sku: sku,
        config,
        canary: canary.as_ref(),
        watch: watched,
    };
    let (mut cases, missing) = judging.judge(records, &grid)?;
    judging.confirm(&runner, &mut cases, grid.keys.len(), night.as_mut())?;
    let night = night.map(|n| n.night.finish_with(&progress));
    for warning in cases.iter().filter_map(JudgedCase::unresolvable) {
        progress.warn(&warning);
    }
    for line in crate::pipeline::evidence::captured_lines(&evidence) {
        progress.note(&line);
    }
    let (startup_s, wall_s) = JudgedCase::startup_share(&cases);
    if wall_s > 0.0 && startup_s / wall_s > 0.5 {
        progress.note(&format!(
            "process start-up took {:.0}% of the repeats' wall time ({startup_s:.1} s of \
             {wall_s:.1} s outside the timed and warm-up steps): fewer, longer repeats (more \
             steps) measure more per second",
            100.0 * startup_s / wall_s
        ));
    }
    // The grid's baselines no case measured (missing) count in the gate like measured cases.
    let measured = cases.iter().map(|c| &c.judgement);
    let judged = measured.chain(&missing).map(|j| j.decision.verdict);
    let mut verdicts: Vec<Verdict> = judged.collect();
    verdicts.extend(serve.judge(&stores.store, &gpu.name, &meta)?);
    let gate_failed = compare::gate_failed(verdicts.iter().copied(), &config.gate.fail_on);
    let no_promote = args.no_promote || stores.scratch.is_some();
    let promote_run = promotes(config, &meta, &verdicts, no_promote);

    // Store: one transaction, or a rescue file that `import run` reads.
    let mut new_run = NewRun {
        started_at,
        results: cases
            .iter()
            .map(|c| {
                let mut result = c.result(watch.as_ref(), promote_run);
                let record = night
                    .as_ref()
                    .zip(c.record.night)
                    .map(|(n, i)| n.case_record(i));
                crate::pipeline::budget::add_to_result(
                    &mut result,
                    &c.record.measured,
                    record.as_ref(),
                );
                result
            })
            .collect(),
        canary_json: canary.as_ref().and_then(|c| serde_json::to_value(c).ok()),
        group,
        uid: Some(journal.uid.clone()),
        ..new_run(config, &meta, &gpu, watch.as_ref())
    };
    new_run.budget_night = night.as_ref().map(|n| n.record.clone());
    if cancel.load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    let judgements = JudgedCase::all_judgements(&cases, missing);
    let mut facts = publish_facts(config, &meta, &judgements, cases.len(), gate_failed);
    facts.gate_notes.clone_from(&base.notes);
    let serve_cases = serve.cases(promote_run);
    let (store, to_store) = (&mut stores.store, (&new_run, serve_cases.as_slice()));
    let run_id = store_run(store, to_store, &facts, journal.journal, &evidence, config)?;

    // Report.
    let report = report_run(store, run_id, &judgements, config, args)?;
    if let Some(note) = stores.unpromoted_note(args, &verdicts, config, &meta, run_id) {
        output::warn(&note);
    }
    if let Some(mut publishing) = publishing {
        publishing.gate_notes(&base.notes);
        publishing.finish(
            &stores.store,
            &report,
            gate_failed,
            meta.head_sha.as_deref(),
        )?;
    }
    Ok(outcome(gate_failed, &verdicts))
}

/// The exit: a failed gate first, then any case that errored.
fn outcome(gate_failed: bool, verdicts: &[Verdict]) -> Outcome {
    if gate_failed {
        Outcome::GateFailed
    } else if verdicts.contains(&Verdict::Error) {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    }
}
