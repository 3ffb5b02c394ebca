//! How `run` measures one case: the case's plan, the harness repeats it runs in fresh processes
//! (through the guard), the step-count check, the traced and profiled (nsys, ncu) repeats, and
//! what the repeats measured.
//! Does I/O: starts harness processes and reads their results files.

#![expect(
    clippy::disallowed_methods,
    reason = "evidence files are copied into the store"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::case::{CaseKey, CommandVars};
use crate::config::{LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::floor::Floor;
use crate::gpu::GpuSample;
use crate::measure::harness::{self, HarnessError, RepeatSpec};
use crate::output::Progress;
use crate::pipeline::gpu::{self, GpuWatch};

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
    pub(crate) warmup_ms: Vec<Vec<f64>>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) stderr_tail: Option<String>,
    pub(crate) error: Option<String>,
    /// NVML readings taken while the repeats ran (empty without NVML).
    pub(crate) gpu_samples: Vec<GpuSample>,
    /// Trace paths the harness reported.
    pub(crate) traces: Vec<String>,
    /// Nsight Systems and Nsight Compute files the harness reported (`{"nsys": path}`,
    /// `{"ncu": path}`).
    #[serde(default)]
    pub(crate) nsys: Vec<String>,
    #[serde(default)]
    pub(crate) ncu: Vec<String>,
    /// What each repeat cost (wall time, steps), stored for the budget planner.
    #[serde(default)]
    pub(crate) costs: Vec<crate::compare::budget::RepeatCost>,
    /// Under a budget: why its sampling ended, for a resumed run (the journal keeps it).
    #[serde(default)]
    pub(crate) budget_stop: Option<crate::compare::budget::Stop>,
    /// Under a budget: its repeats before the confirm step, for a resumed run.
    #[serde(default)]
    pub(crate) budget_first: Option<u32>,
    /// Quality metrics the harness scored (the accuracy guard), every repeat's answers added.
    #[serde(default)]
    pub(crate) quality: crate::compare::quality::QualityCounts,
    /// A speculative case's drafted and accepted tokens, every repeat's added.
    #[serde(default)]
    pub(crate) speculative: Option<crate::compare::speculation::DraftCounts>,
    /// Each timed repeat's energy over its timed window, or why it has none (NVML only).
    #[serde(default)]
    pub(crate) energy: Vec<crate::compare::energy::RepeatEnergy>,
}

/// One repeat's energy from its readings (`gpu::energy`); a case on several GPUs has none, as
/// NVML watches one of them.
fn repeat_energy(
    key: &CaseKey,
    repeat: u32,
    samples: &[GpuSample],
    written: usize,
) -> crate::compare::energy::RepeatEnergy {
    let gpus = key.tp.saturating_mul(key.ep);
    let measured = if gpus > 1 {
        Err(format!(
            "the case runs on {gpus} GPUs and utilgate watches one, so its joules would be a \
             share of the step's"
        ))
    } else {
        crate::gpu::energy::repeat_energy(samples, written as u64)
    };
    crate::compare::energy::RepeatEnergy { repeat, measured }
}

/// What a repeat after the timed ones adds: variables for the harness, and a profiler around
/// its command.
struct Extra<'p> {
    env: Vec<(String, String)>,
    wrap: Option<&'p dyn Fn(&str) -> String>,
}

/// How a budgeted night runs one repeat: its planned steps, and a harness timeout capped at
/// what is left of the budget's grace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RepeatLimits {
    pub(crate) steps: u64,
    pub(crate) timeout_cap: Duration,
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

impl<'a> Runner<'a> {
    /// A runner for one run, with its own temporary directory for results files.
    pub(crate) fn new(
        loaded: &'a LoadedConfig,
        cancel: Arc<AtomicBool>,
        watch: Option<&'a GpuWatch>,
        progress: &'a Progress,
        exe: String,
    ) -> Result<Self, Error> {
        let tmp = std::env::temp_dir();
        let run_dir =
            crate::measure::workdir::RunDir::create(&tmp).map_err(|source| Error::Io {
                path: tmp.clone(),
                source,
            })?;
        Ok(Self {
            loaded,
            exe,
            cancel,
            watch,
            run_dir: std::cell::RefCell::new(run_dir),
            progress,
        })
    }
}

impl Runner<'_> {
    fn harness_cwd(&self, suite: &SuiteConfig) -> PathBuf {
        suite
            .cwd
            .as_ref()
            .map_or_else(|| self.loaded.dir.clone(), |c| self.loaded.dir.join(c))
    }

    /// Measures a case afresh: its repeats (none when its floor failed), the traced and
    /// profiled repeats when asked, and the case's error masked for secrets before anything
    /// prints or keeps it.
    pub(crate) fn measure_case(
        &self,
        plan: &CasePlan<'_>,
        trace: bool,
        evidence_options: &crate::evidence::Options,
    ) -> Result<(Measured, Vec<crate::store::NewEvidence>), Error> {
        let mut measured = Measured::default();
        match &plan.floor {
            Err(message) => measured.error = Some(format!("floor: {message}")),
            Ok(_) => self.measure(plan, 0..plan.suite.repeats, &mut measured)?,
        }
        let evidence = self.trace_case(plan, &measured, trace, evidence_options)?;
        if measured.error.is_none() && measured.repeats_ms.iter().all(Vec::is_empty) {
            measured.error = Some("the harness reported no counted steps".to_owned());
        }
        // Anything printed or stored from the harness is masked before it is kept.
        measured.error = measured.error.as_deref().map(crate::redact::redact);
        measured.stderr_tail = measured.stderr_tail.as_deref().map(crate::redact::redact);
        Ok((measured, evidence))
    }

    /// The extra repeats of a measured case, after its timed ones, each when asked: the traced
    /// one (`trace`), then Nsight Systems (`nsys`), then Nsight Compute (`ncu`). Without a
    /// profiled repeat, a file the harness reported with `{"nsys": path}` or `{"ncu": path}`
    /// in a timed repeat is attached instead. A case that did not measure gets none.
    pub(crate) fn trace_case(
        &self,
        plan: &CasePlan<'_>,
        measured: &Measured,
        trace: bool,
        options: &crate::evidence::Options,
    ) -> Result<Vec<crate::store::NewEvidence>, Error> {
        use crate::measure::profiler::Profiler;
        let mut out = Vec::new();
        if measured.error.is_some() || plan.floor.is_err() {
            return Ok(out);
        }
        let suite = plan.suite;
        let mut repeat = suite.repeats + self.loaded.config.gate.confirm_repeats;
        if trace || suite.trace {
            out.push(self.trace(plan, repeat, options)?);
            repeat += 1;
        }
        let ncu = suite.ncu.as_ref().map(|c| Profiler::Ncu {
            kernel_regex: c.kernel_regex.trim().to_owned(),
            count: c.count,
        });
        for (kind, profiler, reported) in [
            ("nsys", suite.nsys.then_some(Profiler::Nsys), &measured.nsys),
            ("ncu", ncu, &measured.ncu),
        ] {
            let evidence = match profiler {
                Some(p) => {
                    repeat += 1;
                    self.profiled(plan, &p, repeat - 1, options)?
                }
                None => match reported.last() {
                    Some(path) => crate::pipeline::nsight::evidence(
                        &plan.key,
                        kind,
                        &self.harness_cwd(suite).join(path),
                        self.max_evidence_bytes(),
                        options,
                    ),
                    None => continue,
                },
            };
            if let Some(w) = &evidence.warning {
                let w = crate::report::escape::terminal(w);
                self.progress.warn(&format!("{}: {kind}: {w}", plan.key));
            }
            out.push(evidence);
        }
        Ok(out)
    }

    /// `[evidence] max_trace_mb` in bytes.
    fn max_evidence_bytes(&self) -> u64 {
        let cfg = &self.loaded.config.evidence;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a validated, positive size in MB"
        )]
        let max_bytes = (cfg.max_trace_mb.max(0.0) * 1e6) as u64;
        max_bytes
    }

    /// One extra repeat under `profiler` (never a timed one: the observer effect), its report
    /// read and packed for the store. A profiler not on PATH, a repeat that failed under it or
    /// a report that cannot be read is a warning on the case.
    fn profiled(
        &self,
        plan: &CasePlan<'_>,
        profiler: &crate::measure::profiler::Profiler,
        repeat: u32,
        options: &crate::evidence::Options,
    ) -> Result<crate::store::NewEvidence, Error> {
        use crate::measure::profiler;
        use crate::pipeline::nsight;
        let kind = profiler.program();
        let Some(program) = profiler::find(kind) else {
            return Ok(nsight::missing(&plan.key, profiler));
        };
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let out = dir.path().join(format!("utilgate-{kind}"));
        let wrap = |command: &str| profiler.wrap(&program, &out, command);
        let extra = Extra {
            env: vec![(profiler::PROFILER_ENV.to_owned(), kind.to_owned())],
            wrap: Some(&wrap),
        };
        let mut under = Measured::default();
        self.measure_with(plan, repeat..repeat + 1, &mut under, Some(&extra), None)?;
        let reported = if kind == "nsys" {
            under.nsys.last()
        } else {
            under.ncu.last()
        };
        let file = reported.map_or_else(
            || profiler.report_file(&out),
            |p| self.harness_cwd(plan.suite).join(p),
        );
        let mut evidence = if file.exists() {
            nsight::evidence(&plan.key, kind, &file, self.max_evidence_bytes(), options)
        } else {
            crate::store::NewEvidence {
                key: plan.key.clone(),
                kind: kind.to_owned(),
                name: format!("({kind} wrote no report)"),
                blob: None,
                analysis: None,
                warning: Some(format!(
                    "{kind} wrote no report {}; the verdict stands",
                    file.display()
                )),
            }
        };
        if let Some(err) = under.error {
            let first = format!(
                "the {kind} repeat failed ({}): {err}",
                profiler.wrap(&program, &out, "...")
            );
            evidence.warning = Some(match evidence.warning {
                Some(w) => format!("{first}; {w}"),
                None => first,
            });
        }
        Ok(evidence)
    }

    pub(crate) fn measure(
        &self,
        plan: &CasePlan<'_>,
        repeats: std::ops::Range<u32>,
        into: &mut Measured,
    ) -> Result<(), Error> {
        self.measure_with(plan, repeats, into, None, None)
            .map(|_| ())
    }

    /// One repeat of a budgeted night; `Ok(false)` when the capped timeout stopped it (the
    /// repeat is discarded, the case is not an error).
    pub(crate) fn measure_limited(
        &self,
        plan: &CasePlan<'_>,
        repeat: u32,
        into: &mut Measured,
        limits: RepeatLimits,
    ) -> Result<bool, Error> {
        self.measure_with(plan, repeat..repeat + 1, into, None, Some(limits))
    }

    /// One extra repeat with `UTILGATE_TRACE_DIR` set, after the timed ones: its step times are
    /// not counted; what it yields is the trace, analysed and packed for the store.
    fn trace(
        &self,
        plan: &CasePlan<'_>,
        repeat: u32,
        options: &crate::evidence::Options,
    ) -> Result<crate::store::NewEvidence, Error> {
        let dir = tempfile::tempdir().map_err(|source| Error::Io {
            path: std::env::temp_dir(),
            source,
        })?;
        let mut traced = Measured::default();
        let extra = Extra {
            env: vec![(
                crate::pipeline::evidence::TRACE_DIR_ENV.to_owned(),
                dir.path().display().to_string(),
            )],
            wrap: None,
        };
        self.measure_with(plan, repeat..repeat + 1, &mut traced, Some(&extra), None)?;
        let max_bytes = self.max_evidence_bytes();
        let mut evidence = crate::pipeline::evidence::capture(
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

    #[expect(
        clippy::too_many_lines,
        reason = "one repeat after another: render, spec, run, keep; a budgeted night's limits are two lines of it"
    )]
    fn measure_with(
        &self,
        plan: &CasePlan<'_>,
        repeats: std::ops::Range<u32>,
        into: &mut Measured,
        extra: Option<&Extra<'_>>,
        budgeted: Option<RepeatLimits>,
    ) -> Result<bool, Error> {
        let suite = plan.suite;
        let steps = budgeted.map_or(suite.steps, |l| l.steps);
        let suite_timeout = Duration::from_secs_f64(suite.timeout_s);
        let timeout = budgeted.map_or(suite_timeout, |l| l.timeout_cap.min(suite_timeout));
        let cwd = self.harness_cwd(suite);
        let mut extra_env: Vec<(String, String)> = suite
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if let Some(extra) = extra {
            extra_env.extend(extra.env.iter().cloned());
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
                tp: plan.key.tp,
                ep: plan.key.ep,
                warmup_steps: suite.warmup_steps,
                steps,
                repeat,
                utilgate: &self.exe,
                config_dir: &config_dir.to_string_lossy(),
                axes: &plan.key.axes,
            };
            let command =
                crate::case::render_command(&gpu::suite_command(suite, self.loaded), &vars)
                    .map_err(|source| Error::CommandTemplate {
                        suite: suite.name.clone(),
                        source,
                    })?;
            let command = match extra.and_then(|e| e.wrap) {
                Some(wrap) => wrap(&command),
                None => command,
            };
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
                steps,
                repeat,
                out_dir: &out_dir,
                timeout,
                extra_env: &extra_env,
                env_passthrough: &suite.env_passthrough,
                guard: Some(Path::new(&self.exe)),
                step_range: crate::measure::protocol::StepRange {
                    min_ms: limits.min_step_ms,
                    max_ms: limits.max_step_ms,
                },
            };
            // Each reading counts the timed steps written so far: the energy's window.
            let results_file = harness::results_path(&out_dir, repeat);
            let range = spec.step_range;
            let written = || {
                std::fs::read_to_string(&results_file)
                    .ok()
                    .and_then(|text| crate::measure::protocol::timed_steps_written(&text, range))
            };
            let (result, samples) = match self.watch {
                Some(watch) => watch.sample(&written, || harness::run_repeat(&spec, &self.cancel)),
                None => (harness::run_repeat(&spec, &self.cancel), Vec::new()),
            };
            let _ = std::fs::remove_dir_all(&out_dir);
            match result {
                Ok(mut out) => {
                    if self.watch.is_some() && extra.is_none() {
                        into.energy.push(repeat_energy(
                            &plan.key,
                            repeat,
                            &samples,
                            out.report.steps_ms.len(),
                        ));
                    }
                    into.gpu_samples.extend(samples);
                    if let Err(message) =
                        self.check_steps(plan, repeat, steps, &mut out.report.steps_ms)
                    {
                        into.stderr_tail = Some(out.stderr_tail).filter(|t| !t.is_empty());
                        into.error = Some(message);
                        return Ok(true);
                    }
                    into.costs.push(crate::compare::budget::repeat_cost(
                        out.wall,
                        &out.report.steps_ms,
                        &out.report.warmup_ms,
                    ));
                    into.repeats_ms.push(out.report.steps_ms);
                    into.warmup_ms.push(out.report.warmup_ms);
                    into.env.extend(out.report.env);
                    into.traces.extend(out.report.traces);
                    into.nsys.extend(out.report.nsys);
                    into.ncu.extend(out.report.ncu);
                    if let Some(counts) = out.report.speculative {
                        into.speculative = Some(into.speculative.unwrap_or_default().plus(counts));
                    }
                    for (metric, count) in out.report.quality {
                        let entry = into.quality.entry(metric).or_default();
                        *entry = entry.plus(count);
                    }
                    if !out.stderr_tail.is_empty() {
                        into.stderr_tail = Some(out.stderr_tail);
                    }
                }
                Err(HarnessError::Cancelled) => {
                    into.gpu_samples.extend(samples);
                    return Err(Error::Interrupted);
                }
                // The budget's end, not the harness: the repeat is dropped, the case judged
                // on what it has.
                Err(HarnessError::TimedOut { .. }) if timeout < suite_timeout => {
                    into.gpu_samples.extend(samples);
                    return Ok(false);
                }
                Err(err) => {
                    into.gpu_samples.extend(samples);
                    into.stderr_tail = err.stderr_tail().map(str::to_owned);
                    let mut message = format!("repeat {repeat}: {err}");
                    if let Some(hint) = err.hint() {
                        let _ = write!(message, "\nhint: {hint}");
                    }
                    into.error = Some(message);
                    return Ok(true);
                }
            }
        }
        Ok(true)
    }
}

impl Runner<'_> {
    /// Checks a repeat's counted steps against the suite's `steps`: too few is the case's
    /// error (returned), far too many is a warning and only the last `max_samples` are kept.
    fn check_steps(
        &self,
        plan: &CasePlan<'_>,
        repeat: u32,
        steps: u64,
        steps_ms: &mut Vec<f64>,
    ) -> Result<(), String> {
        use crate::measure::checks::{StepCount, step_count};
        let suite = plan.suite;
        match step_count(
            steps_ms.len(),
            steps,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Readings of a repeat whose 50 timed steps were written between 200 and 400 ms.
    fn readings() -> Vec<GpuSample> {
        [(0.0, 0), (200.0, 10), (300.0, 30), (400.0, 50)]
            .into_iter()
            .map(|(t_ms, steps)| GpuSample {
                t_ms,
                power_w: Some(650.0),
                timed_steps: Some(steps),
                ..GpuSample::default()
            })
            .collect()
    }

    fn key(tp: u64) -> CaseKey {
        CaseKey {
            suite: "s".into(),
            model: "m".into(),
            precision: "bf16".into(),
            phase: crate::case::Phase::Decode,
            batch: 8,
            context: 4096,
            tp,
            ep: 1,
            axes: crate::case::Axes::default(),
        }
    }

    #[test]
    fn one_gpu_gets_its_window_and_several_get_the_reason() {
        let one = repeat_energy(&key(1), 2, &readings(), 50);
        assert_eq!(one.repeat, 2);
        // 650 W over the 0.2 s window: 130 J for the 40 steps written inside it.
        let w = one.measured.expect("a window");
        assert!((w.joules - 130.0).abs() < 1e-9, "{}", w.joules);
        assert_eq!(w.steps, 40);
        let two = repeat_energy(&key(2), 0, &readings(), 50);
        let why = two.measured.expect_err("no figure");
        assert!(why.starts_with("the case runs on 2 GPUs"), "{why}");
    }
}
