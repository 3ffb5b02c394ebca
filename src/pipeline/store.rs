//! The store stage of a run: the store it writes (the configured one, or a scratch store seeded
//! from baseline files), its journal, the run's row, whether it promotes, and the one
//! transaction (or the rescue file) that stores it. Does I/O on the store and the journal.

use std::path::PathBuf;
use std::time::Duration;

use crate::case::{CaseKey, Verdict};
use crate::cli::RunArgs;
use crate::compare;
use crate::config::{Config, LoadedConfig};
use crate::error::Error;
use crate::output;
use crate::pipeline::context::open_store;
use crate::pipeline::gpu::{self, GpuWatch};
use crate::pipeline::judge::Judgement;
use crate::pipeline::measure::runner::{CasePlan, Measured};
use crate::store::meta::RunMeta;
use crate::store::{NewRun, Store};

/// The store a run writes: the configured one, or with `--baselines` a scratch store seeded
/// from the files that lasts for the run.
pub(crate) struct RunStores {
    pub(crate) store: Store,
    /// Where the store (and its journal) lives.
    pub(crate) path: PathBuf,
    /// The configured store's path, scratch or not (the pinned host bandwidth lives beside it).
    pub(crate) configured: PathBuf,
    pub(crate) scratch: Option<crate::pipeline::baselines::Scratch>,
}

impl RunStores {
    /// `base_baselines`: a pull request's run judges against its base branch's copy of the
    /// `--baselines` files (`base_gate`), not the pull request's.
    pub(crate) fn open(
        args: &RunArgs,
        loaded: &LoadedConfig,
        base_baselines: Option<&std::path::Path>,
    ) -> Result<Self, Error> {
        let config = &loaded.config;
        let configured = loaded.store_path(args.config.db.as_deref());
        let files = base_baselines.or(args.baselines.as_deref());
        let (store, scratch) = if let Some(files) = files {
            let (store, scratch) =
                crate::pipeline::baselines::seeded_store(files, config.store.busy_timeout_s)?;
            (store, Some(scratch))
        } else if args.init {
            refuse_in_pull_request(&configured, args, loaded)?;
            let timeout = Duration::from_secs_f64(config.store.busy_timeout_s);
            (crate::store::Store::open_init(&configured, timeout)?, None)
        } else {
            refuse_in_pull_request(&configured, args, loaded)?;
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
    pub(crate) fn unpromoted_note(
        &self,
        args: &RunArgs,
        verdicts: &[Verdict],
        config: &Config,
        meta: &RunMeta,
        run_id: crate::store::RunId,
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
            run_id.0,
        )
    }
}

/// A run in a pull request's job writes only a local `SQLite` file, `--trusted` or not.
pub(crate) fn refuse_in_pull_request(
    store: &std::path::Path,
    args: &RunArgs,
    loaded: &LoadedConfig,
) -> Result<(), Error> {
    let origin = crate::pipeline::context::store_origin(args.config.db.is_some(), &loaded.path);
    crate::pipeline::context::refuse_shared_store_in_pull_request(
        store,
        crate::pipeline::context::SharedWrite {
            verb: "run",
            origin: &origin,
            fix: crate::pipeline::context::MEASURE_LOCALLY,
        },
    )
}

/// The run's row apart from its cases, canary and group: when, where, what, and on what.
pub(crate) fn new_run(
    config: &Config,
    meta: &RunMeta,
    device: &crate::pipeline::device::RunDevice,
    watch: Option<&GpuWatch>,
) -> NewRun {
    NewRun {
        started_at: crate::pipeline::context::now(),
        finished_at: crate::pipeline::context::now(),
        git_sha: meta.git_sha.clone(),
        branch: meta.branch.clone(),
        trigger: Some(meta.trigger.clone()),
        pr_number: meta.pr_number,
        gpu_sku: device.name.clone(),
        gpu_json: device.spec.as_ref().and_then(|s| gpu::gpu_json(s, watch)),
        host: Some(crate::pipeline::device::hostname()),
        utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_json: serde_json::to_value(config).ok(),
        promote_reason: format!("run passed the gate on {}", config.gate.baseline_branch),
        results: Vec::new(),
        canary_json: None,
        uid: None,
        budget_night: None,
        group: None,
    }
}

/// What `publish` needs later to post a stored run as this run would have.
pub(crate) fn publish_facts(
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
        gate_notes: Vec::new(),
    }
}

/// Whether the run moves baselines: it passed the gate on the baseline branch, was not measured
/// for a pull request (a fork may name its branch `main`), and nothing (`--no-promote`, a
/// `--baselines` run) holds it back.
pub(crate) fn promotes(
    config: &Config,
    meta: &RunMeta,
    verdicts: &[Verdict],
    no_promote: bool,
) -> bool {
    let on_baseline_branch = meta.branch.as_deref() == Some(config.gate.baseline_branch.as_str())
        && !meta.for_pull_request();
    compare::run_promotes(
        verdicts,
        &config.gate.fail_on,
        on_baseline_branch,
        no_promote,
    )
}

/// Stores the run in one transaction (or writes the rescue file `import run` reads), then
/// ends its journal and adds its traces; a trace the store refuses is a warning only.
pub(crate) fn store_run(
    store: &mut Store,
    run: (&NewRun, &[crate::store::NewServeCase]),
    facts: &crate::store::PublishFacts,
    journal: crate::store::journal::Journal,
    evidence: &[crate::store::NewEvidence],
    config: &Config,
) -> Result<crate::store::RunId, Error> {
    let run_id =
        crate::pipeline::journal::store_or_rescue(store, run, Some(facts), &std::env::temp_dir())?;
    // The run is stored: its journal has done its work.
    if let Err(err) = journal.finish() {
        output::warn(&err.to_string());
    }
    // Evidence never fails the gate: a store error here is a warning.
    if !evidence.is_empty()
        && let Err(e) = store.add_evidence(run_id, evidence, config.evidence.keep_runs)
    {
        output::warn(&format!("traces were not stored: {e}"));
    }
    Ok(run_id)
}

/// This run's journal beside the store, holding its plan (and, with `resume`, the cases an
/// interrupted run of the same plan had measured). A resumed run that its imported rescue file
/// stored already is refused naming that run, and its journal removed: it holds nothing the
/// store lacks.
pub(crate) fn open_journal(
    stores: &RunStores,
    config: &Config,
    gpu_sku: &str,
    plans: &[CasePlan<'_>],
    resume: crate::pipeline::journal::Resume<'_>,
) -> Result<crate::pipeline::journal::CaseJournal<Measured>, Error> {
    let keys: Vec<&CaseKey> = plans.iter().map(|p| &p.key).collect();
    let journal = crate::pipeline::journal::open_journal::<Measured>(
        &stores.path,
        crate::pipeline::journal::plan(config, gpu_sku, &keys),
        crate::pipeline::context::now(),
        resume,
    )?;
    if journal.resumed
        && let Some(first) = stores.store.run_by_uid(&journal.uid)?
    {
        let path = journal.journal.path().to_owned();
        journal.journal.finish()?;
        output::warn(&format!(
            "removed the journal {}: its run is stored as run #{first}",
            path.display()
        ));
        return Err(crate::store::StoreError::AlreadyStored {
            path: stores.path.clone(),
            uid: journal.uid,
            run_id: first.0,
        }
        .into());
    }
    Ok(journal)
}
