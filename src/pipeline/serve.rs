//! Service cases (DESIGN.md §12): `utilgate import serve` records load-generator result files as
//! one run, and [`judge_and_store`] judges, stores and reports service cases for it and for a
//! suite of `kind = "serve"`. Sequences I/O (files, store, stdout); the verdicts come from
//! `compare::decide_serve`, the readers from `serve`.

use std::collections::BTreeMap;

use crate::case::Verdict;
use crate::compare::{self, ServeDecision, ServePolicy, SweepFile};
use crate::config::GateConfig;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::report::ServeCaseReport;
use crate::serve::{self, ServeEstimate, ServeKey, ServeResult, SplitPoint, SweepAxis, SweepPoint};
use crate::store::meta::RunMeta;
use crate::store::{NewRun, NewServeCase, NewServeRepeat, RunId, Store, StoredServeCase};

/// One service case as measured or imported: its repeats (source name and parsed result), or
/// the error that kept it from producing any.
#[derive(Debug, Clone)]
pub struct ServeCaseInput {
    pub key: ServeKey,
    pub repeats: Vec<(String, ServeResult)>,
    pub error: Option<String>,
    pub stderr_tail: Option<String>,
    pub estimate: Option<ServeEstimate>,
    /// The server's GPU count for a sweep's throughput per GPU (`--gpus`, suite `gpus`); `None`:
    /// each file's own count, else 1.
    pub gpus: Option<u32>,
    /// Files whose output throughput per GPU exceeds the decode floor's bound (checked where
    /// the model and the GPU are known): the case is `invalid`.
    pub implausible: Vec<serve::Implausible>,
    /// Why the roofline plausibility was not checked, where it could not be (an import without
    /// `--precision`, a model or GPU utilgate does not know, a file without the figures the
    /// bound needs): said among the case's reasons, never silent.
    pub plausibility_note: Option<String>,
}

impl ServeCaseInput {
    /// Checks every file against the decode floor of `model` on `gpu` (#32 item 5), each on its
    /// sweep point's GPUs or the case's.
    pub(crate) fn check_plausible(
        &mut self,
        model: &crate::catalog::ModelSpec,
        gpu: &crate::catalog::GpuSpec,
        precision: &crate::catalog::Precision,
    ) {
        let points = self.sweep_points();
        self.implausible = self
            .repeats
            .iter()
            .enumerate()
            .filter_map(|(i, (source, r))| {
                let gpus = points.get(i).map_or_else(
                    || self.gpus.or_else(|| serve::gpus_of_file(r)).unwrap_or(1),
                    |p| p.gpus,
                );
                serve::implausible(source, r, model, gpu, precision, gpus)
            })
            .collect();
    }

    /// The plausibility of an imported case: checked where the model (`models`, else built
    /// in), the GPU and the precision are known, else a note saying which is missing and how to
    /// supply it; a file the bound cannot be computed for is named in the note.
    pub(crate) fn check_imported(
        &mut self,
        models: &BTreeMap<String, crate::catalog::ModelSpec>,
        gpu: &str,
        precision: Option<&crate::catalog::Precision>,
    ) {
        let model = models
            .get(&self.key.model)
            .cloned()
            .or_else(|| crate::catalog::model_by_name(&self.key.model));
        let spec = crate::catalog::gpu_by_name(gpu);
        let why = match (precision, &model, &spec) {
            (None, _, _) => Some(
                "a result file names no weight precision; pass --precision (bf16, fp8, ...) to \
                 check each file's throughput against the decode floor"
                    .to_owned(),
            ),
            (Some(_), None, _) => Some(format!(
                "the model `{}` is neither in the config's [models] nor built in; add it there \
                 (params, kv_bytes_per_token or hf_config) and pass --config",
                self.key.model
            )),
            (Some(_), Some(_), None) => Some(format!(
                "--gpu `{gpu}` is not a GPU utilgate knows; pass the catalogue's name (`utilgate \
                 gpus` lists them)"
            )),
            (Some(p), Some(m), Some(g)) => {
                self.check_plausible(m, g, p);
                let unchecked: Vec<String> = self
                    .repeats
                    .iter()
                    .filter_map(|(source, r)| {
                        serve::unchecked_reason(r).map(|why| format!("{source}: {why}"))
                    })
                    .collect();
                (!unchecked.is_empty()).then(|| unchecked.join("; "))
            }
        };
        self.plausibility_note =
            why.map(|why| format!("Roofline plausibility not checked: {why}."));
    }

    /// Where each repeat lies in its sweep, in the order of `repeats` (empty for one point).
    fn sweep_points(&self) -> Vec<SweepPoint> {
        let Some(axis) = self.key.sweep else {
            return Vec::new();
        };
        let results: Vec<&ServeResult> = self.repeats.iter().map(|(_, r)| r).collect();
        serve::place_files(axis, &results, self.gpus)
    }
}

/// How a service run is judged and recorded.
pub struct ServeRunPlan<'a> {
    pub gpu_sku: &'a str,
    pub gate: &'a GateConfig,
    pub policy: &'a dyn Fn(&ServeKey) -> ServePolicy,
    pub meta: &'a RunMeta,
    pub no_promote: bool,
    pub started_at: jiff::Timestamp,
    pub config_json: Option<serde_json::Value>,
    pub host: Option<String>,
}

/// Re-reads the repeats of a stored service result (their raw objects are stored as written),
/// each with the settings its file did not state filled from the case's stored settings (what
/// a suite asked the load generator for, such as the seed).
fn stored_repeats(case: &StoredServeCase) -> Vec<ServeResult> {
    let stored: Option<serve::Settings> = case
        .settings_json
        .as_ref()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    case.repeats
        .iter()
        .filter_map(|r| {
            let mut result = serve::parse(&r.raw_json, &r.source)
                .ok()?
                .into_iter()
                .next()?;
            if let Some(stored) = &stored {
                result.settings.fill_unset(stored);
            }
            Some(result)
        })
        .collect()
}

/// A case with a file above its decode floor's bound is `invalid`, whatever its comparison
/// said, with the arithmetic first among its reasons.
fn with_plausibility(mut d: ServeDecision, input: &ServeCaseInput) -> ServeDecision {
    if d.verdict == Verdict::Error {
        return d;
    }
    if let Some(note) = &input.plausibility_note {
        d.reasons.push(note.clone());
    }
    if input.implausible.is_empty() {
        return d;
    }
    d.verdict = Verdict::Invalid;
    let lines: Vec<String> = input.implausible.iter().map(ToString::to_string).collect();
    d.reasons.insert(
        0,
        format!("Faster than the roofline allows: {}.", lines.join("; ")),
    );
    d
}

fn sweep_file(result: ServeResult, p: SweepPoint) -> SweepFile {
    SweepFile {
        result,
        point: p.point,
        sweep_repeat: p.sweep_repeat,
        gpus: p.gpus,
    }
}

/// A stored sweep's files with their stored places (placed again where a row lacks one).
fn stored_sweep(case: &StoredServeCase, axis: SweepAxis) -> Vec<SweepFile> {
    let results = stored_repeats(case);
    let refs: Vec<&ServeResult> = results.iter().collect();
    let placed = serve::place_files(axis, &refs, None);
    results
        .iter()
        .zip(placed)
        .zip(&case.repeats)
        .map(|((r, fresh), stored)| {
            sweep_file(r.clone(), stored.sweep_point.clone().unwrap_or(fresh))
        })
        .collect()
}

/// Each case's decision against its baseline lineage.
pub(crate) fn decide_all(
    store: &Store,
    inputs: &[ServeCaseInput],
    plan: &ServeRunPlan<'_>,
) -> Result<Vec<ServeDecision>, Error> {
    let mut decided: Vec<ServeDecision> = Vec::with_capacity(inputs.len());
    for input in inputs {
        if let Some(message) = &input.error {
            let mut d = ServeDecision {
                verdict: Verdict::Error,
                metrics: Vec::new(),
                reasons: vec![format!("The case failed to run: {message}")],
                frontier: None,
            };
            d.reasons.dedup();
            decided.push(d);
            continue;
        }
        let (baseline, history) =
            store.serve_lineage(&input.key, plan.gpu_sku, plan.gate.history_runs)?;
        if let Some(axis) = input.key.sweep {
            let current: Vec<SweepFile> = input
                .repeats
                .iter()
                .zip(input.sweep_points())
                .map(|((_, r), p)| sweep_file(r.clone(), p))
                .collect();
            let base = baseline.as_ref().map(|b| stored_sweep(b, axis));
            let (mut d, figures) = compare::decide_sweep(
                axis,
                base.as_deref(),
                &current,
                &(plan.policy)(&input.key),
                inputs.len(),
            );
            d.frontier = figures;
            decided.push(with_plausibility(d, input));
            continue;
        }
        let base = baseline.as_ref().map(stored_repeats);
        let hist: Vec<Vec<ServeResult>> = history.iter().map(stored_repeats).collect();
        let hist_refs: Vec<&[ServeResult]> = hist.iter().map(Vec::as_slice).collect();
        let current: Vec<ServeResult> = input.repeats.iter().map(|(_, r)| r.clone()).collect();
        let d = compare::decide_serve(
            base.as_deref(),
            &current,
            &hist_refs,
            &(plan.policy)(&input.key),
            inputs.len(),
        );
        decided.push(with_plausibility(d, input));
    }
    Ok(decided)
}

/// The service cases to store, each promoted when the run promotes and its verdict allows.
pub(crate) fn new_cases(
    inputs: &[ServeCaseInput],
    decided: &[ServeDecision],
    promote_run: bool,
) -> Vec<NewServeCase> {
    inputs
        .iter()
        .zip(decided)
        .map(|(input, d)| NewServeCase {
            key: input.key.clone(),
            verdict: Some(d.verdict),
            error: input.error.clone(),
            settings_json: input
                .repeats
                .first()
                .and_then(|(_, r)| serde_json::to_value(&r.settings).ok()),
            decision_json: serde_json::to_value(d).ok(),
            estimate_json: input
                .estimate
                .as_ref()
                .and_then(|e| serde_json::to_value(e).ok()),
            stderr_tail: input.stderr_tail.clone(),
            repeats: {
                let mut points = input.sweep_points().into_iter();
                input
                    .repeats
                    .iter()
                    .map(|(source, r)| NewServeRepeat {
                        source: source.clone(),
                        schema: r.schema.as_str().to_owned(),
                        raw_json: serde_json::Value::Object(r.fields.clone()).to_string(),
                        metrics: r.metrics.clone(),
                        sweep_point: points.next(),
                    })
                    .collect()
            },
            promote: promote_run
                && matches!(d.verdict, Verdict::Pass | Verdict::Improved | Verdict::New),
        })
        .collect()
}

/// Judges every case against its baseline lineage and stores the run in one transaction
/// (promoting on the baseline branch as `run` does); returns the stored run and the outcome.
/// The report is read back from the store (`pipeline::report::stored_report`), as every verb
/// reads a stored run.
pub fn judge_and_store(
    store: &mut Store,
    inputs: &[ServeCaseInput],
    plan: &ServeRunPlan<'_>,
) -> Result<(RunId, Outcome), Error> {
    let decided = decide_all(store, inputs, plan)?;
    let verdicts: Vec<Verdict> = decided.iter().map(|d| d.verdict).collect();
    let gate_failed = compare::gate_failed(verdicts.iter().copied(), &plan.gate.fail_on);
    // A pull request's run is advice: it never moves a baseline, whatever its branch is called.
    let on_branch = plan.meta.branch.as_deref() == Some(plan.gate.baseline_branch.as_str())
        && !plan.meta.for_pull_request();
    let any_error = verdicts.contains(&Verdict::Error);
    let promote_run =
        compare::run_promotes(&verdicts, &plan.gate.fail_on, on_branch, plan.no_promote);
    let cases = new_cases(inputs, &decided, promote_run);
    let run = NewRun {
        started_at: plan.started_at,
        finished_at: crate::pipeline::context::now(),
        git_sha: plan.meta.git_sha.clone(),
        branch: plan.meta.branch.clone(),
        trigger: Some(plan.meta.trigger.clone()),
        pr_number: plan.meta.pr_number,
        gpu_sku: plan.gpu_sku.to_owned(),
        gpu_json: None,
        host: plan.host.clone(),
        utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_json: plan.config_json.clone(),
        promote_reason: format!("run passed the gate on {}", plan.gate.baseline_branch),
        results: Vec::new(),
        canary_json: None,
        group: None,
        uid: Some(crate::pipeline::context::new_run_uid()),
        budget_night: None,
    };
    // Load-generator results read here may live in temporary files: a store that refuses the
    // run gets them in a rescue file (`utilgate import run`), never lost.
    let run_id = crate::pipeline::journal::store_or_rescue(
        store,
        (&run, &cases),
        None,
        &std::env::temp_dir(),
    )?;
    let outcome = if gate_failed {
        Outcome::GateFailed
    } else if any_error {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    };
    Ok((run_id, outcome))
}

/// The latency-split readings per model and suite, over the grid's rates and lengths.
pub(crate) fn readings(cases: &[ServeCaseReport]) -> Vec<String> {
    let mut groups: BTreeMap<(String, String), Vec<SplitPoint>> = BTreeMap::new();
    // A case whose files state no rate has no place on the rate axis.
    for c in cases
        .iter()
        .filter(|c| c.verdict != Verdict::Error)
        .filter(|c| !c.settings.as_ref().is_some_and(|s| s.rate_unstated))
    {
        let input = c
            .key
            .input_len
            .map(|n| n as f64)
            .or_else(|| c.estimate.as_ref().and_then(|e| e.mean_input_len));
        groups
            .entry((c.key.suite.clone(), c.key.model.clone()))
            .or_default()
            .push(SplitPoint {
                request_rate: c.settings.as_ref().and_then(|s| s.request_rate),
                input_len: input,
                median_ttft_ms: c.means.get("median_ttft_ms").copied(),
                median_itl_ms: c.means.get("median_itl_ms").copied(),
            });
    }
    groups
        .into_iter()
        .filter(|(_, points)| points.len() > 1)
        .flat_map(|((suite, model), points)| {
            serve::latency_split(&points)
                .into_iter()
                .map(move |s| format!("{suite}/{model}: {s}"))
        })
        .collect()
}
