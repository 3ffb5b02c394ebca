//! `utilgate run` for suites of `kind = "serve"` (DESIGN.md §12): per grid point and repeat,
//! render the command, run the load generator (`measure::harness::run_serve_repeat`), read the
//! result file it wrote (`serve::read_file`), then judge the service cases beside the step
//! cases of the same run ([`ServeCases`]), which `commands::run` stores and reports through the
//! same stages as every run. Sequences I/O; decides nothing itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::case::Verdict;
use crate::catalog::{GpuSpec, Precision};
use crate::cli::RunArgs;
use crate::compare::{self, ServeDecision, ServePolicy};
use crate::config::{LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::measure::harness::{self, HarnessError, ServeRepeatSpec};
use crate::output::Progress;
use crate::pipeline::context::env_lookup;
use crate::pipeline::serve::{ServeCaseInput, ServeRunPlan, decide_all, new_cases};
use crate::serve::{self, ServeCommandVars, ServeKey, ServeResult, format_rate, opt_text};
use crate::store::NewServeCase;
use crate::store::meta::RunMeta;

/// One point of a service suite's grid.
struct Point<'a> {
    suite: &'a SuiteConfig,
    key: ServeKey,
}

/// Every grid point of a service suite: models x rates x concurrencies x input x output
/// lengths; an empty list is one point without that setting (rates: unlimited).
fn grid(suite: &SuiteConfig) -> Vec<Point<'_>> {
    let rates: Vec<Option<f64>> = if suite.request_rates.is_empty() {
        vec![None]
    } else {
        suite
            .request_rates
            .iter()
            .map(|r| r.is_finite().then_some(*r))
            .collect()
    };
    let opt = |v: &[u64]| -> Vec<Option<u64>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    };
    let mut out = Vec::new();
    for model in &suite.models {
        for &rate in &rates {
            for conc in opt(&suite.max_concurrencies) {
                for input in opt(&suite.input_lens) {
                    for output in opt(&suite.output_lens) {
                        out.push(Point {
                            suite,
                            key: ServeKey {
                                suite: suite.name.clone(),
                                model: model.clone(),
                                request_rate: format_rate(rate),
                                max_concurrency: conc,
                                input_len: input,
                                output_len: output,
                                sweep: None,
                            },
                        });
                    }
                }
            }
        }
    }
    out
}

/// What utilgate asked for fills the settings the file does not state (vLLM writes no seed and
/// no lengths of a random dataset); what the file states always wins. The store keeps the
/// filled settings with the case, and a later run fills its baseline's repeats from them.
fn fill_settings(result: &mut ServeResult, point: &Point<'_>) {
    // The rate asked for, where the file states none (an AIPerf CSV): "inf" or a number.
    let asked = match point.key.request_rate.as_str() {
        "inf" => Some(None),
        r => r.parse::<f64>().ok().map(Some),
    };
    result.settings.fill_unset(&serve::Settings {
        request_rate: asked.flatten(),
        rate_unstated: asked.is_none(),
        seed: Some(point.suite.seed.unwrap_or(DEFAULT_SEED)),
        input_len: point.key.input_len,
        output_len: point.key.output_len,
        num_prompts: Some(point.suite.num_prompts.unwrap_or(DEFAULT_NUM_PROMPTS)),
        ..serve::Settings::default()
    });
}

/// Prompts per repeat and the dataset seed when the suite names none.
const DEFAULT_NUM_PROMPTS: u64 = 200;
const DEFAULT_SEED: u64 = 0;

struct Runner<'a> {
    loaded: &'a LoadedConfig,
    exe: String,
    cancel: Arc<AtomicBool>,
}

impl Runner<'_> {
    /// Runs every repeat of one grid point; the first failing repeat ends the case as an error.
    fn measure(&self, point: &Point<'_>) -> Result<ServeCaseInput, Error> {
        let suite = point.suite;
        let cwd = suite
            .cwd
            .as_ref()
            .map_or_else(|| self.loaded.dir.clone(), |c| self.loaded.dir.join(c));
        let extra_env: Vec<(String, String)> = suite
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let config_dir =
            std::path::absolute(&self.loaded.dir).unwrap_or_else(|_| self.loaded.dir.clone());
        let mut input = ServeCaseInput {
            key: point.key.clone(),
            repeats: Vec::new(),
            error: None,
            stderr_tail: None,
            estimate: None,
            gpus: suite.gpus,
            implausible: Vec::new(),
            plausibility_note: None,
        };
        let template = suite.command.as_deref().unwrap_or_default();
        for repeat in 0..suite.repeats {
            let dir = tempfile::tempdir().map_err(|source| Error::Io {
                path: std::env::temp_dir(),
                source,
            })?;
            let result_file: PathBuf = dir.path().join(format!("result-{repeat}.json"));
            let num_prompts = suite.num_prompts.unwrap_or(DEFAULT_NUM_PROMPTS);
            let seed = suite.seed.unwrap_or(DEFAULT_SEED);
            let burstiness = suite.burstiness.unwrap_or(1.0);
            let vars = ServeCommandVars {
                suite: &suite.name,
                model: &point.key.model,
                request_rate: point.key.request_rate.clone(),
                max_concurrency: opt_text(point.key.max_concurrency),
                input_len: opt_text(point.key.input_len),
                output_len: opt_text(point.key.output_len),
                num_prompts,
                seed,
                burstiness,
                repeat,
                result_file: &result_file.to_string_lossy(),
                utilgate: &self.exe,
                config_dir: &config_dir.to_string_lossy(),
            };
            let command = serve::render_serve_command(template, &vars).map_err(|source| {
                Error::CommandTemplate {
                    suite: suite.name.clone(),
                    source,
                }
            })?;
            let spec = ServeRepeatSpec {
                command: &command,
                cwd: &cwd,
                vars: vec![
                    (harness::UTILGATE_REQUEST_RATE, vars.request_rate.clone()),
                    (
                        harness::UTILGATE_MAX_CONCURRENCY,
                        vars.max_concurrency.clone(),
                    ),
                    (harness::UTILGATE_INPUT_LEN, vars.input_len.clone()),
                    (harness::UTILGATE_OUTPUT_LEN, vars.output_len.clone()),
                    (harness::UTILGATE_NUM_PROMPTS, num_prompts.to_string()),
                    (harness::UTILGATE_SEED, seed.to_string()),
                ],
                repeat,
                model: &point.key.model,
                result_file: &result_file,
                timeout: Duration::from_secs_f64(suite.timeout_s),
                extra_env: &extra_env,
                env_passthrough: &suite.env_passthrough,
                guard: Some(Path::new(&self.exe)),
            };
            let out = match harness::run_serve_repeat(&spec, &self.cancel) {
                Ok(out) => out,
                Err(HarnessError::Cancelled) => return Err(Error::Interrupted),
                Err(err) => {
                    input.stderr_tail = err.stderr_tail().map(str::to_owned);
                    input.error = Some(failure(repeat, &err, err.hint()));
                    return Ok(input);
                }
            };
            if !out.stderr_tail.is_empty() {
                input.stderr_tail = Some(out.stderr_tail.clone());
            }
            match read_one(&out.result_file) {
                Ok(mut result) => {
                    fill_settings(&mut result, point);
                    let source = format!("{}:repeat {repeat}", point.key);
                    input.repeats.push((source, result));
                }
                Err(err) => {
                    input.error = Some(failure(repeat, &err, err.hint()));
                    return Ok(input);
                }
            }
        }
        Ok(input)
    }
}

/// The one result a repeat's file must hold.
fn read_one(path: &Path) -> Result<ServeResult, serve::ServeError> {
    let mut results = serve::read_file(path)?;
    if results.len() == 1 {
        Ok(results.remove(0))
    } else {
        Err(serve::ServeError::SeveralResults {
            origin: path.display().to_string(),
            count: results.len(),
        })
    }
}

/// A case's error message: the repeat, what went wrong and the fix.
fn failure(repeat: u32, err: &dyn std::fmt::Display, hint: Option<String>) -> String {
    let hint = hint.map(|h| format!("\nhint: {h}")).unwrap_or_default();
    format!("repeat {repeat}: {err}{hint}")
}

/// Refuses the options of `run` the service path does not implement, rather than ignoring
/// them. `--resume`: the journal holds step cases (keyed by batch and context, with their step
/// times) and a service case's repeats are result files of a load generator, so a killed
/// service run is measured again. `--trace`: a load generator has no profiler trace of its
/// own to capture (trace the server itself).
pub(crate) fn check_options(suites: &[&SuiteConfig], args: &RunArgs) -> Result<(), Error> {
    let what = if suites.is_empty() {
        None
    } else if args.resume.is_some() {
        Some("--resume")
    } else if args.trace {
        Some("--trace")
    } else {
        None
    };
    match what {
        None => Ok(()),
        Some(what) => Err(Error::ServeSuiteUnsupported {
            what: what.to_owned(),
            suites: suites.iter().map(|s| s.name.clone()).collect(),
        }),
    }
}

/// The roofline plausibility of a measured case's files, where its model and the GPU are
/// known; the suite's first precision (default bf16) sets the bytes per weight.
fn check_plausible(
    loaded: &LoadedConfig,
    point: &Point<'_>,
    gpu: Option<&GpuSpec>,
    input: &mut ServeCaseInput,
) {
    let (Some(model), Some(gpu)) = (loaded.models.get(&point.key.model), gpu) else {
        return;
    };
    let precision = point
        .suite
        .precisions
        .first()
        .map_or("bf16", String::as_str);
    if let Ok(precision) = Precision::parse(precision, point.suite.kv_dtype.as_deref()) {
        input.check_plausible(model, gpu, &precision);
    }
}

/// The utilisation estimate of a measured case, where its model and the GPU are known; the
/// suite's first precision (default bf16) sets the bytes per weight.
fn estimate_of(
    loaded: &LoadedConfig,
    point: &Point<'_>,
    gpu: Option<&GpuSpec>,
    input: &ServeCaseInput,
) -> Option<serve::ServeEstimate> {
    let model = loaded.models.get(&point.key.model)?;
    let precision = point
        .suite
        .precisions
        .first()
        .map_or("bf16", String::as_str);
    let precision = Precision::parse(precision, point.suite.kv_dtype.as_deref()).ok()?;
    let repeats: Vec<ServeResult> = input.repeats.iter().map(|(_, r)| r.clone()).collect();
    serve::estimate(&repeats, model, gpu?, &precision)
}

/// The gate of one service case: its suite's `gated` metrics and `max_change_pct`, else the
/// defaults, with the statistics of `[gate]`.
pub(crate) fn policy_of(
    suites: &[&SuiteConfig],
    config: &crate::config::Config,
    key: &ServeKey,
) -> ServePolicy {
    let suite = suites.iter().find(|s| s.name == key.suite);
    let defaults = ServePolicy::default();
    ServePolicy {
        gated: suite
            .and_then(|s| s.gated.clone())
            .unwrap_or(defaults.gated),
        max_change_pct: suite
            .and_then(|s| s.max_change_pct)
            .unwrap_or(defaults.max_change_pct),
        stats: compare::Policy {
            family_alpha: config.gate.family_alpha,
            ..compare::Policy::default()
        },
        interactivity_levels: suite
            .and_then(|s| s.interactivity_levels.clone())
            .unwrap_or_default(),
    }
}

/// Measures every grid point of the service suites, in order (one progress bar); Ctrl-C ends
/// it as [`Error::Interrupted`].
pub(crate) fn measure_all(
    loaded: &LoadedConfig,
    suites: &[&SuiteConfig],
    cancel: &Arc<AtomicBool>,
    gpu: Option<&GpuSpec>,
) -> Result<Vec<ServeCaseInput>, Error> {
    let runner = Runner {
        loaded,
        exe: crate::pipeline::measure::runner::this_exe(),
        cancel: Arc::clone(cancel),
    };
    let points: Vec<Point<'_>> = suites.iter().flat_map(|s| grid(s)).collect();
    let progress = Progress::new(
        points.len() as u64,
        env_lookup()("GITHUB_ACTIONS").as_deref() == Some("true"),
    );
    let mut inputs = Vec::with_capacity(points.len());
    for point in &points {
        let name = point.key.to_string();
        progress.start_case(&name);
        let mut input = runner.measure(point)?;
        // Anything printed or stored from the load generator is masked before it is kept.
        input.error = input.error.as_deref().map(crate::redact::redact);
        input.stderr_tail = input.stderr_tail.as_deref().map(crate::redact::redact);
        progress.finish_case(&name, input.error.as_deref());
        input.estimate = estimate_of(loaded, point, gpu, &input);
        check_plausible(loaded, point, gpu, &mut input);
        inputs.push(input);
    }
    progress.clear();
    if cancel.load(Ordering::SeqCst) {
        return Err(Error::Interrupted);
    }
    Ok(gather_sweeps(suites, inputs))
}

/// The points of a sweeping suite (`sweep = "request_rate"`) gathered into one case per sweep:
/// its files are every repeat of every point, in grid order; a point that failed fails the
/// sweep, naming the point. Other cases pass through unchanged, in order.
fn gather_sweeps(suites: &[&SuiteConfig], inputs: Vec<ServeCaseInput>) -> Vec<ServeCaseInput> {
    let mut out: Vec<ServeCaseInput> = Vec::with_capacity(inputs.len());
    for input in inputs {
        let axis = suites
            .iter()
            .find(|s| s.name == input.key.suite)
            .and_then(|s| s.sweep);
        let Some(axis) = axis else {
            out.push(input);
            continue;
        };
        let point = input.key.clone();
        let key = input.key.into_sweep(axis);
        let i = if let Some(i) = out.iter().position(|c| c.key == key) {
            i
        } else {
            out.push(ServeCaseInput {
                key,
                repeats: Vec::new(),
                error: None,
                stderr_tail: None,
                estimate: None,
                gpus: input.gpus,
                implausible: Vec::new(),
                plausibility_note: None,
            });
            out.len() - 1
        };
        let sweep = &mut out[i];
        sweep.repeats.extend(input.repeats);
        sweep.implausible.extend(input.implausible);
        if sweep.error.is_none()
            && let Some(e) = input.error
        {
            sweep.error = Some(format!("point {point}: {e}"));
            sweep.stderr_tail = input.stderr_tail;
        }
    }
    out
}

/// The service suites of a run: measured before the step cases, judged beside them and
/// stored in the same run (`commands::run`); a run may hold only these.
pub(crate) struct ServeCases<'a> {
    loaded: &'a LoadedConfig,
    suites: Vec<&'a SuiteConfig>,
    inputs: Vec<ServeCaseInput>,
    decided: Vec<ServeDecision>,
}

impl<'a> ServeCases<'a> {
    /// Measures the service suites (none: an empty part that adds nothing to the run).
    pub(crate) fn measure(
        loaded: &'a LoadedConfig,
        suites: Vec<&'a SuiteConfig>,
        cancel: &Arc<AtomicBool>,
        gpu: Option<&GpuSpec>,
    ) -> Result<Self, Error> {
        let inputs = if suites.is_empty() {
            Vec::new()
        } else {
            measure_all(loaded, &suites, cancel, gpu)?
        };
        Ok(ServeCases {
            loaded,
            suites,
            inputs,
            decided: Vec::new(),
        })
    }

    /// Judges each service case against its baseline lineage on `gpu_sku`; returns the verdicts.
    pub(crate) fn judge(
        &mut self,
        store: &crate::store::Store,
        gpu_sku: &str,
        meta: &RunMeta,
    ) -> Result<Vec<Verdict>, Error> {
        let config = &self.loaded.config;
        let policy = |key: &ServeKey| policy_of(&self.suites, config, key);
        let plan = ServeRunPlan {
            gpu_sku,
            gate: &config.gate,
            policy: &policy,
            meta,
            no_promote: false,
            started_at: crate::pipeline::context::now(),
            config_json: None,
            host: None,
        };
        self.decided = decide_all(store, &self.inputs, &plan)?;
        Ok(self.decided.iter().map(|d| d.verdict).collect())
    }

    /// The service cases to store with the run.
    pub(crate) fn cases(&self, promote_run: bool) -> Vec<NewServeCase> {
        new_cases(&self.inputs, &self.decided, promote_run)
    }
}
