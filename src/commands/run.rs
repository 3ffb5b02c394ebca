//! `utilgate run`: config -> cases -> device spec -> per case: floor, repeats through the
//! harness, summary -> verdicts against baselines -> one transaction in the store -> report ->
//! exit code. Sequences I/O; every decision is delegated to pure modules.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::case::{CaseKey, CommandVars, Verdict};
use crate::catalog::Precision;
use crate::cli::{Format, RunArgs};
use crate::commands::gpu_run::{self, GpuWatch};
use crate::commands::judge::{self, Against, CaseInput};
use crate::commands::{Outcome, device, env_lookup, open_store};
use crate::compare;
use crate::config::{LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::floor::Floor;
use crate::gpu::GpuSample;
use crate::measure::harness::{self, HarnessError, RepeatSpec};
use crate::output::{self, Progress};
use crate::report;
use crate::stats;
use crate::store::meta::{MetaFlags, resolve_meta};
use crate::store::{NewResult, NewRun};

/// Ask git about the checkout the config lives in; silence when it is not one.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Option<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: reading the checkout's commit"
    )]
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !text.is_empty() && text != "HEAD").then_some(text)
}

/// Everything needed to run one case.
pub(crate) struct CasePlan<'a> {
    pub(crate) suite: &'a SuiteConfig,
    pub(crate) key: CaseKey,
    pub(crate) floor: Result<Floor, String>,
    pub(crate) kv_dtype: String,
}

/// The outcome of running a case's repeats (journalled as soon as the case ends).
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct Measured {
    pub(crate) repeats_ms: Vec<Vec<f64>>,
    warmup_ms: Vec<Vec<f64>>,
    env: BTreeMap<String, String>,
    stderr_tail: Option<String>,
    pub(crate) error: Option<String>,
    /// NVML readings taken while the repeats ran (empty without NVML).
    gpu_samples: Vec<GpuSample>,
    /// Trace paths the harness reported.
    traces: Vec<String>,
}

pub(crate) struct Runner<'a> {
    pub(crate) loaded: &'a LoadedConfig,
    pub(crate) exe: String,
    pub(crate) cancel: Arc<AtomicBool>,
    pub(crate) watch: Option<&'a GpuWatch>,
    /// The run's temporary directory for results files (swept at the next start if killed).
    pub(crate) run_dir: std::cell::RefCell<crate::measure::workdir::RunDir>,
    /// Progress lines (warnings about step counts).
    pub(crate) progress: &'a Progress,
}

impl Runner<'_> {
    fn harness_cwd(&self, suite: &SuiteConfig) -> PathBuf {
        suite
            .cwd
            .as_ref()
            .map_or_else(|| self.loaded.dir.clone(), |c| self.loaded.dir.join(c))
    }

    pub(crate) fn measure(
        &self,
        plan: &CasePlan<'_>,
        repeats: std::ops::Range<u32>,
        into: &mut Measured,
    ) -> Result<(), Error> {
        self.measure_with(plan, repeats, into, None)
    }

    /// One extra repeat with `UTILGATE_TRACE_DIR` set, after the timed ones: its step times are
    /// not counted; what it yields is the trace, analysed and packed for the store.
    fn trace(
        &self,
        plan: &CasePlan<'_>,
        options: &crate::evidence::Options,
    ) -> Result<crate::store::NewEvidence, Error> {
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let repeat = plan.suite.repeats + self.loaded.config.gate.confirm_repeats;
        let mut traced = Measured::default();
        self.measure_with(plan, repeat..repeat + 1, &mut traced, Some(dir.path()))?;
        let cfg = &self.loaded.config.evidence;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a validated, positive size in MB"
        )]
        let max_bytes = (cfg.max_trace_mb.max(0.0) * 1e6) as u64;
        let mut evidence = crate::commands::evidence::capture(
            &plan.key,
            &traced.traces,
            &self.harness_cwd(plan.suite),
            dir.path(),
            max_bytes,
            options,
        );
        if let Some(err) = traced.error {
            evidence.warning = Some(format!("the traced repeat failed: {err}"));
        }
        Ok(evidence)
    }

    fn measure_with(
        &self,
        plan: &CasePlan<'_>,
        repeats: std::ops::Range<u32>,
        into: &mut Measured,
        trace_dir: Option<&Path>,
    ) -> Result<(), Error> {
        let suite = plan.suite;
        let cwd = self.harness_cwd(suite);
        let mut extra_env: Vec<(String, String)> = suite
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(dir) = trace_dir {
            extra_env.push((
                crate::commands::evidence::TRACE_DIR_ENV.to_owned(),
                dir.display().to_string(),
            ));
        }
        let config_dir = absolute(&self.loaded.dir);
        for repeat in repeats {
            let vars = CommandVars {
                suite: &suite.name,
                model: &plan.key.model,
                precision: &plan.key.precision,
                kv_dtype: &plan.kv_dtype,
                phase: plan.key.phase,
                batch: plan.key.batch,
                context: plan.key.context,
                warmup_steps: suite.warmup_steps,
                steps: suite.steps,
                repeat,
                utilgate: &self.exe,
                config_dir: &config_dir.to_string_lossy(),
                axes: &plan.key.axes,
            };
            let command =
                crate::case::render_command(&gpu_run::suite_command(suite, self.loaded), &vars)
                    .map_err(|source| Error::CommandTemplate {
                        suite: suite.name.clone(),
                        source,
                    })?;
            let out_dir = {
                let mut run_dir = self.run_dir.borrow_mut();
                run_dir.repeat_dir().map_err(|source| Error::Io {
                    path: run_dir.path().to_path_buf(),
                    source,
                })?
            };
            let limits = &self.loaded.config.limits;
            let spec = RepeatSpec {
                command: &command,
                cwd: &cwd,
                case: &plan.key,
                warmup_steps: suite.warmup_steps,
                steps: suite.steps,
                repeat,
                out_dir: &out_dir,
                timeout: Duration::from_secs_f64(suite.timeout_s),
                extra_env: &extra_env,
                env_passthrough: &suite.env_passthrough,
                guard: Some(Path::new(&self.exe)),
                step_range: crate::measure::protocol::StepRange {
                    min_ms: limits.min_step_ms,
                    max_ms: limits.max_step_ms,
                },
            };
            let (result, samples) = match self.watch {
                Some(watch) => watch.sample(|| harness::run_repeat(&spec, &self.cancel)),
                None => (harness::run_repeat(&spec, &self.cancel), Vec::new()),
            };
            into.gpu_samples.extend(samples);
            let _ = std::fs::remove_dir_all(&out_dir);
            match result {
                Ok(mut out) => {
                    if let Err(message) = self.check_steps(plan, repeat, &mut out.report.steps_ms) {
                        into.stderr_tail = Some(out.stderr_tail).filter(|t| !t.is_empty());
                        into.error = Some(message);
                        return Ok(());
                    }
                    into.repeats_ms.push(out.report.steps_ms);
                    into.warmup_ms.push(out.report.warmup_ms);
                    into.env.extend(out.report.env);
                    into.traces.extend(out.report.traces);
                    if !out.stderr_tail.is_empty() {
                        into.stderr_tail = Some(out.stderr_tail);
                    }
                }
                Err(HarnessError::Cancelled) => return Err(Error::Interrupted),
                Err(err) => {
                    into.stderr_tail = err.stderr_tail().map(str::to_owned);
                    let mut message = format!("repeat {repeat}: {err}");
                    if let Some(hint) = err.hint() {
                        let _ = write!(message, "\nhint: {hint}");
                    }
                    into.error = Some(message);
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

impl Runner<'_> {
    /// Checks a repeat's counted steps against the suite's `steps`: too few is the case's
    /// error (returned), far too many is a warning and only the last `max_samples` are kept.
    fn check_steps(
        &self,
        plan: &CasePlan<'_>,
        repeat: u32,
        steps_ms: &mut Vec<f64>,
    ) -> Result<(), String> {
        use crate::measure::checks::{StepCount, step_count};
        let suite = plan.suite;
        match step_count(
            steps_ms.len(),
            suite.steps,
            suite.steps_tolerance_pct,
            self.loaded.config.limits.max_samples,
        ) {
            StepCount::Fine => Ok(()),
            StepCount::TooFew(message) => Err(format!(
                "repeat {repeat}: {message}\nhint: the harness must time exactly $UTILGATE_STEPS counted steps, or set the suite's steps_tolerance_pct"
            )),
            StepCount::TooMany { keep, warning } => {
                self.progress
                    .warn(&format!("{}: repeat {repeat}: {warning}", plan.key));
                let cut = steps_ms.len() - keep;
                steps_ms.drain(..cut);
                Ok(())
            }
        }
    }
}

/// A flag Ctrl-C sets: harnesses stop and nothing is stored. A second handler cannot be
/// installed (e.g. in tests calling `run` twice): the first one still sets a flag nobody
/// reads, and Ctrl-C then ends the process.
pub(crate) fn cancel_on_ctrl_c() -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    cancel
}

/// The path of this binary, for `{{ utilgate }}` in command templates.
pub(crate) fn this_exe() -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the path of this binary for templates"
    )]
    let exe = std::env::current_exe();
    exe.map_or_else(
        |_| "utilgate".to_owned(),
        |p| p.to_string_lossy().into_owned(),
    )
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[expect(
    clippy::too_many_lines,
    reason = "the run's steps in order, read top to bottom; each step is a call"
)]
pub fn run(args: &RunArgs) -> Result<Outcome, Error> {
    // What a killed run left behind (results directories, cgroup scopes) goes first.
    crate::measure::workdir::sweep_stale(&std::env::temp_dir());
    let group = crate::commands::fleet::run_group(args, &env_lookup())?;
    // Validate everything cheap before the first harness starts.
    let loaded = crate::config::load(&args.config.config)?;
    let config = &loaded.config;
    let suites = crate::commands::select_suites(&loaded, &args.suites)?;
    // A harness could read a token from utilgate's own environment (DESIGN.md §13).
    if !args.trusted {
        crate::commands::credentials::refuse_near_harness(&loaded.dir)?;
    }
    // Suites of kind = "serve" (commands/serve_suite.rs): alone, a service run; beside step
    // suites, measured first and stored in the same run.
    let (serve_suites, suites): (Vec<&SuiteConfig>, Vec<&SuiteConfig>) = suites
        .into_iter()
        .partition(|s| s.kind == crate::config::SuiteKind::Serve);
    if suites.is_empty() {
        return crate::commands::serve_suite::run_serve_suites(&loaded, &serve_suites, args);
    }
    crate::commands::serve_suite::check_options(&serve_suites, args)?;
    let mut publishing = crate::commands::publish::prepare_run(args, &loaded)?;
    let pr_event = crate::commands::publish::pull_request_event(&env_lookup())?;
    gpu_run::check_workloads(&suites)?;
    let configured_store = loaded.store_path(args.config.db.as_deref());
    // `--baselines`: judged against the files, in a scratch store of this run only.
    let (mut store, scratch) = if let Some(files) = args.baselines.as_deref() {
        let (store, scratch) =
            crate::commands::baseline_files::seeded_store(files, config.store.busy_timeout_s)?;
        (store, Some(scratch))
    } else if args.init {
        let timeout = Duration::from_secs_f64(config.store.busy_timeout_s);
        (
            crate::store::Store::open_init(&configured_store, timeout)?,
            None,
        )
    } else {
        (
            open_store(&configured_store, config.store.busy_timeout_s)?,
            None,
        )
    };
    let store_path = scratch
        .as_ref()
        .map_or_else(|| configured_store.clone(), |s| s.path.clone());
    let no_promote = args.no_promote || scratch.is_some();
    // The store must take the run before an hour of measuring goes into it.
    store.preflight()?;
    let watch = GpuWatch::start(config, env_lookup()("CUDA_VISIBLE_DEVICES").as_deref());
    // A measured host bandwidth stays pinned beside the configured store, scratch or not.
    let gpu = device::device_spec(config.gpu.as_ref(), &configured_store, watch.as_ref())?;
    if let Some(publishing) = publishing.as_mut() {
        let names: Vec<&str> = suites
            .iter()
            .chain(&serve_suites)
            .map(|s| s.name.as_str())
            .collect();
        publishing.start(&gpu.name, &names)?;
    }
    let gpu_state = |m: &Measured| watch.as_ref().and_then(|w| w.summary_json(&m.gpu_samples));

    let mut plans = Vec::new();
    for suite in &suites {
        for key in suite.case_keys() {
            let model = &loaded.models[&key.model];
            let precision = Precision::parse(&key.precision, suite.kv_dtype.as_deref())?;
            let floor =
                crate::floor::floor(model, &gpu, &precision, key.phase, key.batch, key.context)
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
    let grid: Vec<CaseKey> = plans.iter().map(|p| p.key.clone()).collect();
    if let Some(shard) = args.shard {
        let keys: Vec<&CaseKey> = grid.iter().collect();
        let keep: BTreeSet<usize> = shard.select(&keys).into_iter().collect();
        let mut i = 0;
        plans.retain(|_| {
            i += 1;
            keep.contains(&(i - 1))
        });
    }

    let env = env_lookup();
    let in_ci = ["CI", "GITHUB_ACTIONS"]
        .iter()
        .any(|v| env(v).is_some_and(|x| x == "true" || x == "1"));
    crate::commands::resume::check_grid(
        &store,
        &suites,
        plans.len(),
        config.limits.max_cases,
        args.yes,
        in_ci,
    )?;
    let mut meta = resolve_meta(
        &MetaFlags {
            git_sha: args.git_sha.clone(),
            branch: args.branch.clone(),
            trigger: args.trigger.clone(),
            pr_number: args.pr,
        },
        &env,
        git(&loaded.dir, &["rev-parse", "HEAD"]),
        git(&loaded.dir, &["rev-parse", "--abbrev-ref", "HEAD"]),
    );
    if let Some(event) = pr_event {
        meta.pr_number = meta.pr_number.or(event.pr_number);
        meta.head_sha = event.head_sha;
    }

    let (cancel, exe) = (cancel_on_ctrl_c(), this_exe());
    let mut serve =
        crate::commands::serve_suite::MixedServe::measure(&loaded, serve_suites, &cancel, &gpu)?;
    let tmp = std::env::temp_dir();
    let run_dir = crate::measure::workdir::RunDir::create(&tmp).map_err(|source| Error::Io {
        path: tmp.clone(),
        source,
    })?;
    let progress = Progress::new(
        plans.len() as u64,
        env("GITHUB_ACTIONS").as_deref() == Some("true"),
    );
    let runner = Runner {
        loaded: &loaded,
        exe,
        cancel: Arc::clone(&cancel),
        watch: watch.as_ref(),
        run_dir: std::cell::RefCell::new(run_dir),
        progress: &progress,
    };

    let keys: Vec<&CaseKey> = plans.iter().map(|p| &p.key).collect();
    let mut journal = crate::commands::resume::open_journal::<Measured>(
        &store_path,
        crate::commands::resume::plan(config, &gpu.name, &keys),
        crate::commands::now(),
        args.resume,
    )?;
    let started_at = journal.started_at.unwrap_or_else(crate::commands::now);
    let evidence_options = crate::commands::evidence::options(&config.evidence)?;
    let mut evidence: Vec<crate::store::NewEvidence> = Vec::new();
    // The machine canary before the cases (and after them, below), stored with the run.
    let mut canary = config.canary.enabled.then(crate::compare::Canary::default);
    let measure_canary = |canary: &mut Option<crate::compare::Canary>| {
        if let Some(c) = canary.as_mut()
            && let Err(e) = crate::measure::canary::measure(&config.canary, &loaded.dir, c)
        {
            progress.warn(&format!("{e}; this run has no canary"));
            *canary = None;
        }
    };
    measure_canary(&mut canary);
    let mut inputs = Vec::with_capacity(plans.len());
    let mut measured_all = Vec::with_capacity(plans.len());
    let mut process_variance = Vec::with_capacity(plans.len());
    for plan in &plans {
        progress.start_case(&plan.key.to_string());
        let recovered = journal.recovered.remove(&plan.key);
        let resumed = recovered.is_some();
        let mut measured = recovered.unwrap_or_default();
        if !resumed {
            match &plan.floor {
                Err(message) => measured.error = Some(format!("floor: {message}")),
                Ok(_) => runner.measure(plan, 0..plan.suite.repeats, &mut measured)?,
            }
            if (args.trace || plan.suite.trace) && measured.error.is_none() && plan.floor.is_ok() {
                evidence.push(runner.trace(plan, &evidence_options)?);
            }
            if measured.error.is_none() && measured.repeats_ms.iter().all(Vec::is_empty) {
                measured.error = Some("the harness reported no counted steps".to_owned());
            }
            // Anything printed or stored from the harness is masked before it is kept.
            measured.error = measured.error.as_deref().map(crate::redact::redact);
            measured.stderr_tail = measured.stderr_tail.as_deref().map(crate::redact::redact);
            journal.journal.append(&plan.key, &measured)?;
        }
        let mut variance = None;
        for warning in stats::steady_state_warnings(&measured.repeats_ms) {
            // Process variance is worth a word only where it limits the verdict (below).
            if matches!(warning, stats::SteadyStateWarning::ProcessVariance { .. }) {
                variance = Some(warning);
            } else {
                progress.warn(&format!("{}: {warning}", plan.key));
            }
        }
        process_variance.push(variance);
        progress.finish_case(&plan.key.to_string(), measured.error.as_deref());
        inputs.push(CaseInput {
            key: plan.key.clone(),
            repeats_ms: measured.repeats_ms.clone(),
            floor_ms: plan.floor.as_ref().ok().map(|f| f.floor_ms),
            error: measured.error.clone(),
            env: measured.env.clone(),
            gpu_guard: None,
            gpu_state: gpu_state(&measured),
        });
        measured_all.push(measured);
    }
    measure_canary(&mut canary);
    progress.clear();

    let suite_names: BTreeSet<String> = suites.iter().map(|s| s.name.clone()).collect();
    let mut judgements = match args.shard {
        None => judge::judge(
            &store,
            &gpu.name,
            &inputs,
            &suite_names,
            Some(config),
            &Against::Pinned,
            canary.as_ref(),
        )?,
        Some(shard) => judge::judge_shard(
            &store,
            &gpu.name,
            &inputs,
            &judge::ShardGrid {
                keys: &grid,
                suites: &suite_names,
                reports_missing: shard.index == 1,
            },
            Some(config),
            canary.as_ref(),
        )?,
    };

    // Re-measure suspected regressions in fresh processes before failing them.
    if config.gate.confirm_repeats > 0 {
        for (i, plan) in plans.iter().enumerate() {
            if !compare::should_confirm(&judgements[i].decision) {
                continue;
            }
            let first = plan.suite.repeats;
            progress.warn(&format!(
                "{}: suspect ({}); re-measuring in {} fresh processes before deciding",
                plan.key,
                judgements[i].decision.drop_pct.map_or_else(
                    || "noise".to_owned(),
                    |d| if d >= 0.0 {
                        format!("utilisation fell {d:.1}%")
                    } else {
                        format!("utilisation rose {:.1}%", -d)
                    }
                ),
                config.gate.confirm_repeats
            ));
            runner.measure(
                plan,
                first..first + config.gate.confirm_repeats,
                &mut measured_all[i],
            )?;
            inputs[i].repeats_ms.clone_from(&measured_all[i].repeats_ms);
            inputs[i].error.clone_from(&measured_all[i].error);
            inputs[i].env.clone_from(&measured_all[i].env);
            inputs[i].gpu_state = gpu_state(&measured_all[i]);
            // Only this case changes; the grid's size still sets its test level.
            judgements[i] = judge::judge_case(
                &store,
                &gpu.name,
                &inputs[i],
                grid.len(),
                Some(config),
                &Against::Pinned,
                canary.as_ref(),
            )?;
            judgements[i].decision.reasons.push(format!(
                "Re-measured in {} fresh processes before deciding (confirm_repeats); the \
                 verdict rests on those fresh processes, not on the ones that made it a suspect.",
                config.gate.confirm_repeats
            ));
        }
    }

    for ((plan, judgement), warning) in plans.iter().zip(&judgements).zip(&process_variance) {
        let limits = judgement
            .decision
            .resolution_pct
            .is_some_and(|r| r > judgement.threshold_pct);
        if let Some(warning) = warning.as_ref().filter(|_| limits) {
            progress.warn(&format!(
                "{}: {warning} (it limits this case: only a drop above {:.1}% could be \
                 confirmed against the {}% threshold)",
                plan.key,
                judgement.decision.resolution_pct.unwrap_or(f64::NAN),
                judgement.threshold_pct
            ));
        }
    }
    let mut verdicts: Vec<Verdict> = judgements.iter().map(|j| j.decision.verdict).collect();
    verdicts.extend(serve.judge(&store, &gpu.name, &meta)?);
    let gate_failed = compare::gate_failed(verdicts.iter().copied(), &config.gate.fail_on);
    let on_baseline_branch = meta.branch.as_deref() == Some(config.gate.baseline_branch.as_str());
    let any_error = verdicts.contains(&Verdict::Error);
    let promote_run = compare::run_promotes(
        &verdicts,
        &config.gate.fail_on,
        on_baseline_branch,
        no_promote,
    );

    let results: Vec<NewResult> = plans
        .iter()
        .zip(&measured_all)
        .zip(&judgements)
        .map(|((plan, measured), judgement)| {
            let floor = plan.floor.as_ref().ok();
            let summary = stats::summarise(&measured.repeats_ms);
            let util = floor
                .zip(summary.as_ref())
                .map(|(f, s)| f.utilisation(s.median_ms));
            NewResult {
                key: plan.key.clone(),
                verdict: Some(judgement.decision.verdict),
                error: measured.error.clone(),
                floor_ms: floor.map(|f| f.floor_ms),
                floor_json: floor.and_then(|f| serde_json::to_value(f).ok()),
                median_ms: summary.as_ref().map(|s| s.median_ms),
                utilisation: util.map(|u| u.utilisation),
                mbu: util.map(|u| u.mbu),
                mfu: util.map(|u| u.mfu),
                summary_json: summary.as_ref().and_then(|s| serde_json::to_value(s).ok()),
                decision_json: serde_json::to_value(&judgement.decision).ok(),
                repeats_ms: measured.repeats_ms.clone(),
                warmup_ms: measured.warmup_ms.clone(),
                env: measured.env.clone(),
                gpu_state_json: gpu_state(measured),
                stderr_tail: measured.stderr_tail.clone(),
                promote: promote_run && compare::promotable(&judgement.decision),
            }
        })
        .collect();

    let new_run = NewRun {
        started_at,
        finished_at: crate::commands::now(),
        git_sha: meta.git_sha.clone(),
        branch: meta.branch.clone(),
        trigger: Some(meta.trigger.clone()),
        pr_number: meta.pr_number,
        gpu_sku: gpu.name.clone(),
        gpu_json: gpu_run::gpu_json(&gpu, watch.as_ref()),
        host: Some(device::hostname()),
        utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_json: serde_json::to_value(config).ok(),
        promote_reason: format!("run passed the gate on {}", config.gate.baseline_branch),
        results,
        canary_json: canary.as_ref().and_then(|c| serde_json::to_value(c).ok()),
        group,
    };
    if cancel.load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    let facts = crate::store::PublishFacts {
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
            .skip(plans.len())
            .map(|j| crate::store::MissingCase {
                key: j.key.clone(),
                decision: j.decision.clone(),
            })
            .collect(),
    };
    let serve_cases = serve.cases(promote_run);
    let run_id = crate::commands::resume::store_or_rescue(
        &mut store,
        (&new_run, &serve_cases),
        Some(&facts),
        &tmp,
    )?;
    // The run is stored: its journal has done its work.
    if let Err(err) = journal.journal.finish() {
        output::warn(&err.to_string());
    }
    if !evidence.is_empty() {
        // Evidence never fails the gate: a store error here is a warning.
        if let Err(e) = store.add_evidence(run_id.0, &evidence, config.evidence.keep_runs) {
            output::warn(&format!("traces were not stored: {e}"));
        }
    }
    let stored = store.run(run_id)?.ok_or(Error::NoSuchRun(run_id.0))?;
    let mut report =
        report::RunReport::build(&stored, &judgements, &config.gate.fail_on, promote_run);
    crate::commands::evidence::attach(&store, &mut report);
    if let Format::Human = args.format.format {
        output::emit(&report::render_human(&report, output::color_stdout()))?;
    }
    let report = serve.attach(report, &meta, args.format.format)?;
    if let Format::Json = args.format.format {
        output::emit(&report::render_json(&report)?)?;
    }
    if let (Some(files), Some(_)) = (args.baselines.as_deref(), &scratch) {
        // Nothing of a `--baselines` run is kept: `accept --run` could not find it.
        if verdicts.contains(&Verdict::New) {
            output::warn(&format!(
                "new cases have no baseline in {}: a --baselines run keeps nothing; measure them where a store is kept and export it (`utilgate baseline export --out baselines/`)",
                files.display()
            ));
        }
    } else if let Some(note) = compare::unpromoted_note(
        &verdicts,
        &config.gate.fail_on,
        meta.branch.as_deref(),
        &config.gate.baseline_branch,
        no_promote,
        run_id.0,
    ) {
        output::warn(&note);
    }
    if let Some(publishing) = publishing {
        publishing.finish(&store, &report, gate_failed, meta.head_sha.as_deref())?;
    }
    Ok(if gate_failed {
        Outcome::GateFailed
    } else if any_error {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    })
}
