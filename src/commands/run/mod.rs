//! `utilgate run`, in the order it happens: plan the cases (config, device, floors, shard) ->
//! measure each in fresh processes (journalled as it ends) -> judge against the baselines ->
//! confirm suspects with fresh repeats -> store the run in one transaction -> report and exit
//! code. Each case is one [`record::CaseRecord`] from plan to store. Sequences I/O; every
//! decision is delegated to pure modules.

mod record;
mod runner;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::case::{CaseKey, Verdict};
use crate::catalog::{GpuSpec, Precision};
use crate::cli::{Format, RunArgs};
use crate::commands::gpu_run::{self, GpuWatch};
use crate::commands::judge::{self, Against, Judgement};
use crate::commands::{Outcome, device, env_lookup, open_store};
use crate::compare::{self, Canary};
use crate::config::{Config, LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::output::{self, Progress};
use crate::report;
use crate::shard::Shard;
use crate::store::meta::{MetaFlags, RunMeta, resolve_meta};
use crate::store::{NewRun, Store};

use record::{CaseRecord, JudgedCase};
pub(crate) use runner::{
    CasePlan, Measured, RepeatLimits, Runner, cancel_on_ctrl_c, git, this_exe,
};

#[expect(
    clippy::too_many_lines,
    reason = "the run's steps in order, read top to bottom; each step is a call"
)]
pub fn run(args: &RunArgs) -> Result<Outcome, Error> {
    // A budget (`--budget`) covers the whole run, from here.
    let clock = std::time::Instant::now();
    // What a killed run left behind (results directories, cgroup scopes) goes first.
    crate::measure::workdir::sweep_stale(&std::env::temp_dir());
    let group = crate::commands::fleet::run_group(args, &env_lookup())?;
    // Validate everything cheap before the first harness starts.
    let loaded = crate::config::load(&args.config.config)?;
    let config = &loaded.config;
    let (serve_suites, suites) = split_suites(&loaded, args)?;
    if suites.is_empty() {
        return crate::commands::serve_suite::run_serve_suites(&loaded, &serve_suites, args);
    }
    crate::commands::serve_suite::check_options(&serve_suites, args)?;
    let mut publishing = crate::commands::publish::prepare_run(args, &loaded)?;
    let pr_event = crate::commands::publish::pull_request_event(&env_lookup())?;
    gpu_run::check_workloads(&suites)?;
    let mut stores = RunStores::open(args, &loaded)?;
    // The store must take the run before an hour of measuring goes into it.
    stores.store.preflight()?;
    let watch = GpuWatch::start(config, env_lookup()("CUDA_VISIBLE_DEVICES").as_deref());
    // A measured host bandwidth stays pinned beside the configured store, scratch or not.
    let gpu = device::device_spec(config.gpu.as_ref(), &stores.configured, watch.as_ref())?;
    if let Some(publishing) = publishing.as_mut() {
        let names = suites.iter().chain(&serve_suites).map(|s| s.name.as_str());
        publishing.start(&gpu.name, &names.collect::<Vec<_>>())?;
    }

    // Plan.
    let (plans, grid) = plan_cases(&loaded, &suites, &gpu, args.shard)?;
    check_grid(&stores.store, &suites, plans.len(), args, config)?;
    let meta = run_meta(args, &loaded, pr_event);

    // Measure, each case journalled as it ends.
    let (cancel, exe) = (cancel_on_ctrl_c(), this_exe());
    let mut serve =
        crate::commands::serve_suite::MixedServe::measure(&loaded, serve_suites, &cancel, &gpu)?;
    let in_actions = env_lookup()("GITHUB_ACTIONS").as_deref() == Some("true");
    let progress = Progress::new(plans.len() as u64, in_actions);
    let runner = Runner::new(&loaded, Arc::clone(&cancel), watch.as_ref(), &progress, exe)?;
    let mut journal = open_journal(&stores, config, &gpu.name, &plans, args.resume)?;
    let started_at = journal.started_at.unwrap_or_else(crate::commands::now);
    let evidence_options = crate::commands::evidence::options(&config.evidence)?;
    // With a budget, the night is planned from the store's history and printed first.
    let mut night = crate::commands::budget::NightRun::start(
        args.budget,
        &stores.store,
        &gpu.name,
        config,
        (&plans, grid.keys.len()),
        clock,
        &progress,
    )?;
    // The machine canary before the cases (and after them, below), stored with the run.
    let mut canary = config.canary.enabled.then(Canary::default);
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
    for warning in cases.iter().filter_map(JudgedCase::limiting_variance) {
        progress.warn(&warning);
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
                crate::commands::budget::add_to_result(
                    &mut result,
                    &c.record.measured,
                    record.as_ref(),
                );
                result
            })
            .collect(),
        canary_json: canary.as_ref().and_then(|c| serde_json::to_value(c).ok()),
        group,
        ..new_run(config, &meta, &gpu, watch.as_ref())
    };
    new_run.config_json = crate::commands::budget::config_with(
        new_run.config_json.take(),
        night.as_ref().map(|n| &n.record),
    );
    if cancel.load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    let judgements = JudgedCase::all_judgements(&cases, missing);
    let facts = publish_facts(config, &meta, &judgements, cases.len(), gate_failed);
    let serve_cases = serve.cases(promote_run);
    let (store, to_store) = (&mut stores.store, (&new_run, serve_cases.as_slice()));
    let run_id = store_run(store, to_store, &facts, journal.journal, &evidence, config)?;

    // Report.
    let report = report_run(
        store,
        run_id,
        &judgements,
        (&config.gate.fail_on, promote_run),
        &serve,
        &meta,
        args,
    )?;
    if let Some(note) = stores.unpromoted_note(args, &verdicts, config, &meta, run_id.0) {
        output::warn(&note);
    }
    if let Some(publishing) = publishing {
        publishing.finish(
            &stores.store,
            &report,
            gate_failed,
            meta.head_sha.as_deref(),
        )?;
    }
    Ok(outcome(gate_failed, &verdicts))
}

/// The store a run writes: the configured one, or with `--baselines` a scratch store seeded
/// from the files that lasts for the run.
struct RunStores {
    store: Store,
    /// Where the store (and its journal) lives.
    path: PathBuf,
    /// The configured store's path, scratch or not (the pinned host bandwidth lives beside it).
    configured: PathBuf,
    scratch: Option<crate::commands::baseline_files::Scratch>,
}

impl RunStores {
    fn open(args: &RunArgs, loaded: &LoadedConfig) -> Result<Self, Error> {
        let config = &loaded.config;
        let configured = loaded.store_path(args.config.db.as_deref());
        let (store, scratch) = if let Some(files) = args.baselines.as_deref() {
            let (store, scratch) =
                crate::commands::baseline_files::seeded_store(files, config.store.busy_timeout_s)?;
            (store, Some(scratch))
        } else if args.init {
            let timeout = Duration::from_secs_f64(config.store.busy_timeout_s);
            (crate::store::Store::open_init(&configured, timeout)?, None)
        } else {
            (open_store(&configured, config.store.busy_timeout_s)?, None)
        };
        let path = scratch
            .as_ref()
            .map_or_else(|| configured.clone(), |s| s.path.clone());
        Ok(Self {
            store,
            path,
            configured,
            scratch,
        })
    }

    /// Why this run moved no baseline, when that needs saying.
    fn unpromoted_note(
        &self,
        args: &RunArgs,
        verdicts: &[Verdict],
        config: &Config,
        meta: &RunMeta,
        run_id: i64,
    ) -> Option<String> {
        if let (Some(files), Some(_)) = (args.baselines.as_deref(), &self.scratch) {
            // Nothing of a `--baselines` run is kept: `accept --run` could not find it.
            return verdicts.contains(&Verdict::New).then(|| {
                format!(
                    "new cases have no baseline in {}: a --baselines run keeps nothing; measure them where a store is kept and export it (`utilgate baseline export --out baselines/`)",
                    files.display()
                )
            });
        }
        compare::unpromoted_note(
            verdicts,
            &config.gate.fail_on,
            meta.branch.as_deref(),
            &config.gate.baseline_branch,
            args.no_promote,
            run_id,
        )
    }
}

/// The grid the run's cases belong to: every case of every selected suite, and the shard of
/// it this run measures.
struct Grid {
    keys: Vec<CaseKey>,
    suites: BTreeSet<String>,
    shard: Option<Shard>,
}

/// Every case's plan (its floor on this device), keeping this shard's share of the grid.
fn plan_cases<'a>(
    loaded: &LoadedConfig,
    suites: &[&'a SuiteConfig],
    gpu: &GpuSpec,
    shard: Option<Shard>,
) -> Result<(Vec<CasePlan<'a>>, Grid), Error> {
    let mut plans = Vec::new();
    for suite in suites {
        for key in suite.case_keys() {
            let model = &loaded.models[&key.model];
            let precision = Precision::parse(&key.precision, suite.kv_dtype.as_deref())?;
            let floor =
                crate::floor::floor(model, gpu, &precision, key.phase, key.batch, key.context)
                    .map_err(|e| e.to_string());
            plans.push(CasePlan {
                suite,
                kv_dtype: precision.kv.as_str().to_owned(),
                key,
                floor,
            });
        }
    }
    // A shard measures its share of the whole grid; the grid still sets the test level.
    let keys: Vec<CaseKey> = plans.iter().map(|p| p.key.clone()).collect();
    if let Some(shard) = shard {
        let refs: Vec<&CaseKey> = keys.iter().collect();
        let keep: BTreeSet<usize> = shard.select(&refs).into_iter().collect();
        let mut i = 0;
        plans.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
    }
    let grid = Grid {
        keys,
        suites: suites.iter().map(|s| s.name.clone()).collect(),
        shard,
    };
    Ok((plans, grid))
}

/// The run's commit, branch, trigger and pull request, from flags, the environment, git and
/// the pull-request event (a service-only run's too).
pub(crate) fn run_meta(
    args: &RunArgs,
    loaded: &LoadedConfig,
    pr_event: Option<crate::github::EventInfo>,
) -> RunMeta {
    let mut meta = resolve_meta(
        &MetaFlags {
            git_sha: args.git_sha.clone(),
            branch: args.branch.clone(),
            trigger: args.trigger.clone(),
            pr_number: args.pr,
        },
        &env_lookup(),
        git(&loaded.dir, &["rev-parse", "HEAD"]),
        git(&loaded.dir, &["rev-parse", "--abbrev-ref", "HEAD"]),
    );
    if let Some(event) = pr_event {
        meta.pr_number = meta.pr_number.or(event.pr_number);
        meta.head_sha = event.head_sha;
    }
    meta
}

/// Measures the machine canary into `canary`: on a GPU NVML watches (and no canary command),
/// the GPU's copy, GEMM and clocks; else the configured one. A failure drops it with a warning.
fn measure_canary(runner: &Runner<'_>, canary: &mut Option<Canary>) {
    let Some(c) = canary.as_mut() else {
        return;
    };
    let config = &runner.loaded.config.canary;
    let measured = match runner.watch {
        Some(watch) if config.command.is_none() => {
            let (result, samples) = watch.sample(|| crate::measure::canary::measure_gpu(c, 0));
            crate::measure::canary::add_clock_periods(c, &samples);
            result
        }
        _ => crate::measure::canary::measure(config, &runner.loaded.dir, c),
    };
    if let Err(e) = measured {
        runner
            .progress
            .warn(&format!("{e}; this run has no canary"));
        *canary = None;
    }
}

/// What the judge needs besides the cases.
struct Judging<'a> {
    store: &'a Store,
    gpu_sku: &'a str,
    config: &'a Config,
    canary: Option<&'a Canary>,
    watch: Option<&'a GpuWatch>,
}

impl Judging<'_> {
    /// Judges every record against the pinned baselines; returns the judged cases and the
    /// baselines of the grid that no case measured (missing).
    fn judge<'p>(
        &self,
        records: Vec<CaseRecord<'p>>,
        grid: &Grid,
    ) -> Result<(Vec<JudgedCase<'p>>, Vec<Judgement>), Error> {
        let inputs: Vec<_> = records.iter().map(|r| r.input(self.watch)).collect();
        let (store, sku, config, canary) =
            (self.store, self.gpu_sku, Some(self.config), self.canary);
        let mut judgements = match grid.shard {
            None => judge::judge(
                store,
                sku,
                &inputs,
                &grid.suites,
                config,
                &Against::Pinned,
                canary,
            )?,
            Some(shard) => {
                let shard_grid = judge::ShardGrid {
                    keys: &grid.keys,
                    suites: &grid.suites,
                    reports_missing: shard.index == 1,
                };
                judge::judge_shard(store, sku, &inputs, &shard_grid, config, canary)?
            }
        };
        let missing = judgements.split_off(records.len());
        let cases = records
            .into_iter()
            .zip(judgements)
            .map(|(record, judgement)| JudgedCase { record, judgement })
            .collect();
        Ok((cases, missing))
    }

    /// Re-measures each suspect in `confirm_repeats` fresh processes and judges it again on
    /// everything it measured; the grid's size still sets its test level.
    fn confirm(
        &self,
        runner: &Runner<'_>,
        cases: &mut [JudgedCase<'_>],
        cases_in_grid: usize,
        mut night: Option<&mut crate::commands::budget::NightRun<'_>>,
    ) -> Result<(), Error> {
        let extra = self.config.gate.confirm_repeats;
        if extra == 0 {
            return Ok(());
        }
        // Under a budget the suspects whose confirm step is expected to find most per second go
        // first (`budget::confirm_order`): what the grid left of the budget rarely covers them
        // all.
        let suspects: Vec<compare::budget::Suspect> = night
            .as_deref()
            .map(|n| {
                cases
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| compare::should_confirm(&c.judgement.decision))
                    .filter_map(|(i, c)| {
                        let k = c.record.night?;
                        Some(n.night.suspect(k, i, &c.judgement.decision))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let order: Vec<usize> = match night.as_deref() {
            Some(n) => n.night.confirm_order(&suspects),
            None => cases
                .iter()
                .enumerate()
                .filter(|(_, c)| compare::should_confirm(&c.judgement.decision))
                .map(|(i, _)| i)
                .collect(),
        };
        for i in order {
            let case = &mut cases[i];
            let moved = case.judgement.decision.drop_pct.map_or_else(
                || "noise".to_owned(),
                |d| {
                    if d >= 0.0 {
                        format!("utilisation fell {d:.1}%")
                    } else {
                        format!("utilisation rose {:.1}%", -d)
                    }
                },
            );
            // Under a budget the night sizes each confirm step from the case's noise.
            let sized = night.as_deref().zip(case.record.night);
            let asked = sized.map_or(extra, |(n, k)| n.night.confirm_size(k));
            let in_night = sized.is_some();
            runner.progress.warn(&format!(
                "{}: suspect ({moved}); re-measuring in {asked} fresh processes before deciding",
                case.record.plan.key
            ));
            let record = &mut case.record;
            // The confirm step draws on what is left of the budget.
            let (fresh, futile) = if let (Some(n), Some(k)) = (night.as_deref_mut(), record.night) {
                let fresh = n.confirm(runner, k, &record.plan, &mut record.measured)?;
                (fresh, n.night.confirm_futile(k))
            } else {
                let first = record.plan.suite.repeats;
                runner.measure(&record.plan, first..first + extra, &mut record.measured)?;
                (extra, false)
            };
            if fresh == 0 {
                case.judgement.decision.reasons.push(
                    "The budget left no time to re-measure this suspect (confirm_repeats): the \
                     verdict rests on the processes that made it a suspect."
                        .to_owned(),
                );
                continue;
            }
            let mut judgement = judge::judge_case(
                self.store,
                self.gpu_sku,
                &case.record.input(self.watch),
                cases_in_grid,
                Some(self.config),
                &Against::Pinned,
                self.canary,
            )?;
            judgement.decision.reasons.push(if futile {
                format!(
                    "Re-measured in {fresh} of {asked} fresh processes before deciding: they \
                     were already clearly under the threshold (its estimate more than two \
                     standard errors below it), so the rest were not run; the verdict rests on \
                     those fresh processes, not on the ones that made it a suspect."
                )
            } else if fresh < asked {
                format!(
                    "Re-measured in {fresh} of {asked} fresh processes before deciding (the \
                     budget ran out for the rest); the verdict rests on those fresh processes, \
                     not on the ones that made it a suspect."
                )
            } else {
                let sized = if in_night {
                    "as many as its noise needs"
                } else {
                    "confirm_repeats"
                };
                format!(
                    "Re-measured in {asked} fresh processes before deciding ({sized}); the \
                     verdict rests on those fresh processes, not on the ones that made it a \
                     suspect."
                )
            });
            case.judgement = judgement;
        }
        Ok(())
    }
}

/// What `publish` needs later to post a stored run as this run would have.
fn publish_facts(
    config: &Config,
    meta: &RunMeta,
    judgements: &[Judgement],
    measured: usize,
    gate_failed: bool,
) -> crate::store::PublishFacts {
    crate::store::PublishFacts {
        fail_on: config.gate.fail_on.clone(),
        gate_passed: !gate_failed,
        baseline_branch: config.gate.baseline_branch.clone(),
        thresholds_pct: judgements
            .iter()
            .map(|j| (j.key.to_string(), j.threshold_pct))
            .collect(),
        status_context: config.report.status_context.clone(),
        pr_head_sha: meta.head_sha.clone(),
        missing: judgements
            .iter()
            .skip(measured)
            .map(|j| crate::store::MissingCase {
                key: j.key.clone(),
                decision: j.decision.clone(),
            })
            .collect(),
    }
}

/// The journal beside the store, holding this run's plan (and, with `resume`, the cases an
/// interrupted run of the same plan had measured).
fn open_journal(
    stores: &RunStores,
    config: &Config,
    gpu_sku: &str,
    plans: &[CasePlan<'_>],
    resume: bool,
) -> Result<crate::commands::resume::CaseJournal<Measured>, Error> {
    let keys: Vec<&CaseKey> = plans.iter().map(|p| &p.key).collect();
    crate::commands::resume::open_journal::<Measured>(
        &stores.path,
        crate::commands::resume::plan(config, gpu_sku, &keys),
        crate::commands::now(),
        resume,
    )
}

/// Measures every planned case, between the machine canary's two readings (or takes it from the journal of the interrupted run being
/// resumed), journalling each as it ends; returns the records and the traces taken.
fn measure_all<'a>(
    runner: &Runner<'_>,
    plans: Vec<CasePlan<'a>>,
    (journal, canary, mut night): (
        &mut crate::commands::resume::CaseJournal<Measured>,
        &mut Option<Canary>,
        Option<&mut crate::commands::budget::NightRun<'_>>,
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

/// The run's row apart from its cases, canary and group: when, where, what, and on what.
fn new_run(config: &Config, meta: &RunMeta, gpu: &GpuSpec, watch: Option<&GpuWatch>) -> NewRun {
    NewRun {
        started_at: crate::commands::now(),
        finished_at: crate::commands::now(),
        git_sha: meta.git_sha.clone(),
        branch: meta.branch.clone(),
        trigger: Some(meta.trigger.clone()),
        pr_number: meta.pr_number,
        gpu_sku: gpu.name.clone(),
        gpu_json: gpu_run::gpu_json(gpu, watch),
        host: Some(device::hostname()),
        utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_json: serde_json::to_value(config).ok(),
        promote_reason: format!("run passed the gate on {}", config.gate.baseline_branch),
        results: Vec::new(),
        canary_json: None,
        group: None,
    }
}

/// Reads the stored run back and prints its report in the chosen format (the service cases
/// of a mixed run attached).
fn report_run(
    store: &Store,
    run_id: crate::store::RunId,
    judgements: &[Judgement],
    (fail_on, promote_run): (&[Verdict], bool),
    serve: &crate::commands::serve_suite::MixedServe<'_>,
    meta: &RunMeta,
    args: &RunArgs,
) -> Result<report::RunReport, Error> {
    let stored = store.run(run_id)?.ok_or(Error::NoSuchRun(run_id.0))?;
    let mut report = report::RunReport::build(&stored, judgements, fail_on, promote_run);
    crate::commands::evidence::attach(store, &mut report);
    if let Format::Human = args.format.format {
        output::emit(&report::render_human(&report, output::stdout_terminal()))?;
    }
    let report = serve.attach(report, meta, args.format.format)?;
    if let Format::Json = args.format.format {
        output::emit(&report::render_json(&report)?)?;
    }
    Ok(report)
}

/// Refuses a grid larger than the run's case limit before anything is measured.
fn check_grid(
    store: &Store,
    suites: &[&SuiteConfig],
    cases: usize,
    args: &RunArgs,
    config: &Config,
) -> Result<(), Error> {
    let env = env_lookup();
    let in_ci = ["CI", "GITHUB_ACTIONS"]
        .iter()
        .any(|v| env(v).is_some_and(|x| x == "true" || x == "1"));
    let max_cases = config.limits.max_cases;
    crate::commands::resume::check_grid(store, suites, cases, max_cases, args.yes, in_ci)
}

/// Whether the run moves baselines: it passed the gate on the baseline branch and nothing
/// (`--no-promote`, a `--baselines` run) holds it back.
fn promotes(config: &Config, meta: &RunMeta, verdicts: &[Verdict], no_promote: bool) -> bool {
    let on_baseline_branch = meta.branch.as_deref() == Some(config.gate.baseline_branch.as_str());
    compare::run_promotes(
        verdicts,
        &config.gate.fail_on,
        on_baseline_branch,
        no_promote,
    )
}

/// Stores the run in one transaction (or writes the rescue file `import run` reads), then
/// ends its journal and adds its traces; a trace the store refuses is a warning only.
fn store_run(
    store: &mut Store,
    run: (&NewRun, &[crate::store::NewServeCase]),
    facts: &crate::store::PublishFacts,
    journal: crate::store::journal::Journal,
    evidence: &[crate::store::NewEvidence],
    config: &Config,
) -> Result<crate::store::RunId, Error> {
    let run_id =
        crate::commands::resume::store_or_rescue(store, run, Some(facts), &std::env::temp_dir())?;
    // The run is stored: its journal has done its work.
    if let Err(err) = journal.finish() {
        output::warn(&err.to_string());
    }
    // Evidence never fails the gate: a store error here is a warning.
    if !evidence.is_empty()
        && let Err(e) = store.add_evidence(run_id.0, evidence, config.evidence.keep_runs)
    {
        output::warn(&format!("traces were not stored: {e}"));
    }
    Ok(run_id)
}

/// The selected suites as (service suites, step suites), once the harness environment is
/// known to hold no token (DESIGN.md §13) unless `--trusted`.
fn split_suites<'a>(
    loaded: &'a LoadedConfig,
    args: &RunArgs,
) -> Result<(Vec<&'a SuiteConfig>, Vec<&'a SuiteConfig>), Error> {
    let suites = crate::commands::select_suites(loaded, &args.suites)?;
    if !args.trusted {
        crate::commands::credentials::refuse_near_harness(loaded, args.config.db.as_deref())?;
    }
    // Suites of kind = "serve" (commands/serve_suite.rs): alone, a service run; beside step
    // suites, measured first and stored in the same run.
    Ok(suites
        .into_iter()
        .partition(|s| s.kind == crate::config::SuiteKind::Serve))
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
