//! `utilgate import run FILE`: stores a run that `utilgate run` measured but could not write
//! (the rescue file it printed), in one transaction; `utilgate import serve FILE...`: records
//! load-generator result files as one gated run of service cases. Sequences I/O only.

use std::fmt::Write as _;
use std::path::Path;

use crate::cli::{ImportRunArgs, ImportServeArgs, SweepArg};
use crate::compare::{self, ServePolicy};
use crate::config::GateConfig;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::{
    MEASURE_LOCALLY, SharedWrite, StoreMode, open_store, refuse_shared_store_in_pull_request,
    store_origin, store_with,
};
use crate::pipeline::journal::RescuedRun;
use crate::pipeline::plan::meta_of;
use crate::pipeline::serve::{ServeCaseInput, ServeRunPlan, judge_and_store};
use crate::serve::{self, ServeKey};
use crate::store::journal;
use crate::store::meta::{MetaFlags, is_pull_request_run};

pub fn import_run(args: &ImportRunArgs) -> Result<Outcome, Error> {
    // Read and check the file before touching the store.
    let mut rescued: RescuedRun = journal::read_rescue(&args.file)?;
    // A rescue file from before runs carried an id is known by its content: imported twice, it
    // is refused all the same.
    let uid = rescued
        .run
        .uid
        .clone()
        .unwrap_or_else(|| rescued.content_uid());
    // After the id: an older file's id is the hash of its content as written.
    rescued.lift_budget_records();
    let RescuedRun {
        mut run,
        publish,
        mut serve,
    } = rescued;
    run.uid = Some(uid);
    // A pull request's run is advice: it never moves a baseline (its moves would not count).
    if args.promote && is_pull_request_run(run.trigger.as_deref(), run.pr_number) {
        return Err(Error::PromotePullRequestRun {
            file: args.file.clone(),
            trigger: run.trigger.as_deref().unwrap_or("unknown").to_owned(),
            pr: run
                .pr_number
                .map_or_else(|| "unknown".to_owned(), |n| format!("#{n}")),
        });
    }
    let (mut store, _) = store_with(&args.config, StoreMode::Create)?;
    let promoted = run.results.iter().filter(|r| r.promote).count()
        + serve.iter().filter(|c| c.promote).count();
    if !args.promote {
        // Newer runs may have moved these baselines since: moving them back is a decision.
        for result in &mut run.results {
            result.promote = false;
        }
        for case in &mut serve {
            case.promote = false;
        }
    }
    let id = store.insert_run_with_serve(&run, publish.as_ref(), &serve)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "stored run {id} ({} result(s), measured {} on {}) from {}",
        run.results.len() + serve.len(),
        run.started_at,
        run.gpu_sku,
        args.file.display()
    );
    if promoted > 0 && !args.promote {
        let _ = writeln!(
            out,
            "baselines unchanged: the run would have promoted {promoted}; pass --promote to move them, or `utilgate baseline accept`"
        );
    }
    let _ = writeln!(
        out,
        "the rescue file is no longer needed: delete {}",
        args.file.display()
    );
    output::emit(&out)?;
    Ok(Outcome::Passed)
}

/// Reads every file first (a bad file fails before the store is touched), keyed and grouped.
fn read_inputs(args: &ImportServeArgs) -> Result<Vec<ServeCaseInput>, Error> {
    let mut groups: Vec<ServeCaseInput> = Vec::new();
    for path in &args.files {
        let results = serve::read_file(path)?;
        let many = results.len() > 1;
        for (i, result) in results.into_iter().enumerate() {
            if result.settings.model.is_none() && args.model.is_none() {
                return Err(Error::Serve(serve::ServeError::NoModel {
                    origin: path.display().to_string(),
                    schema: result.schema.as_str(),
                }));
            }
            let origin = || {
                if many {
                    format!("{}:{}", path.display(), i + 1)
                } else {
                    path.display().to_string()
                }
            };
            let key = match args.sweep {
                Some(axis) => {
                    let not_on = |key| {
                        Error::Serve(serve::ServeError::NotOnFrontier {
                            origin: origin(),
                            key,
                        })
                    };
                    if !result.metrics.contains_key("output_throughput") {
                        return Err(not_on("output_throughput"));
                    }
                    if serve::tpot_ms(&result).is_none() {
                        return Err(not_on("median_tpot_ms"));
                    }
                    if axis == SweepArg::Rate && result.settings.rate_unstated {
                        return Err(Error::Serve(serve::ServeError::no_rate(
                            origin(),
                            result.schema,
                        )));
                    }
                    ServeKey::sweep_of_result(
                        &args.suite,
                        &result,
                        args.model.as_deref(),
                        axis.axis(),
                    )
                }
                None => ServeKey::of_result(&args.suite, &result, args.model.as_deref()),
            };
            let source = origin();
            match groups.iter_mut().find(|g| g.key == key) {
                Some(g) => g.repeats.push((source, result)),
                None => groups.push(ServeCaseInput {
                    key,
                    repeats: vec![(source, result)],
                    error: None,
                    stderr_tail: None,
                    estimate: None,
                    gpus: args.gpus,
                    implausible: Vec::new(),
                    plausibility_note: None,
                }),
            }
        }
    }
    for g in &groups {
        if let Some(axis) = g.key.sweep {
            let mut points: Vec<String> = g.repeats.iter().map(|(_, r)| axis.point_of(r)).collect();
            points.sort();
            points.dedup();
            if points.len() < 2 {
                return Err(Error::Serve(serve::ServeError::OnePointSweep {
                    case: g.key.to_string(),
                    points: points.len(),
                }));
            }
        }
    }
    Ok(groups)
}

/// `utilgate import serve FILE...`.
pub fn import_serve(args: &ImportServeArgs) -> Result<Outcome, Error> {
    let loaded = match &args.config {
        Some(path) => Some(crate::config::load(path)?),
        None if Path::new(crate::config::DEFAULT_CONFIG_PATH).is_file() => Some(
            crate::config::load(Path::new(crate::config::DEFAULT_CONFIG_PATH))?,
        ),
        None => None,
    };
    let mut inputs = read_inputs(args)?;
    let precision = args
        .precision
        .as_deref()
        .map(|p| crate::catalog::Precision::parse(p, None))
        .transpose()?;
    let no_models = std::collections::BTreeMap::new();
    let models = loaded.as_ref().map_or(&no_models, |l| &l.models);
    for input in &mut inputs {
        input.check_imported(models, &args.gpu, precision.as_ref());
    }
    let mut notes: Vec<&str> = inputs
        .iter()
        .filter_map(|i| i.plausibility_note.as_deref())
        .collect();
    notes.sort_unstable();
    notes.dedup();
    for note in notes {
        output::warn(note);
    }
    let store_path = match &loaded {
        Some(l) => l.store_path(args.db.as_deref()),
        None => args
            .db
            .clone()
            .unwrap_or_else(|| crate::config::DEFAULT_STORE_PATH.into()),
    };
    let default_gate = GateConfig::default();
    let gate = loaded.as_ref().map_or(&default_gate, |l| &l.config.gate);
    let busy = loaded
        .as_ref()
        .map_or(10.0, |l| l.config.store.busy_timeout_s);
    let origin = match &loaded {
        Some(l) => store_origin(args.db.is_some(), &l.path),
        None => store_origin(true, Path::new("")),
    };
    let write = SharedWrite {
        verb: "import serve",
        origin: &origin,
        fix: MEASURE_LOCALLY,
    };
    refuse_shared_store_in_pull_request(&store_path, write)?;
    let mut store = open_store(&store_path, busy)?;
    let dir = loaded
        .as_ref()
        .map_or_else(|| Path::new(".").to_path_buf(), |l| l.dir.clone());
    let flags = MetaFlags {
        git_sha: args.git_sha.clone(),
        branch: args.branch.clone(),
        trigger: args.trigger.clone(),
        pr_number: args.pr,
    };
    let mut meta = meta_of(&flags, &dir);
    if meta.trigger == "manual" {
        "import".clone_into(&mut meta.trigger);
    }
    let stats = compare::Policy {
        family_alpha: gate.family_alpha,
        ..compare::Policy::default()
    };
    let levels = args.levels.clone();
    let policy = move |_: &ServeKey| ServePolicy {
        stats: stats.clone(),
        interactivity_levels: levels.clone(),
        ..ServePolicy::default()
    };
    let plan = ServeRunPlan {
        gpu_sku: &args.gpu,
        gate,
        policy: &policy,
        meta: &meta,
        no_promote: args.no_promote,
        started_at: crate::pipeline::context::now(),
        config_json: None,
        host: None,
    };
    let (run_id, outcome) = judge_and_store(&mut store, &inputs, &plan)?;
    // Read back as every verb reads a stored run.
    let run = crate::pipeline::report::load_run(&store, Some(run_id.0))?;
    let config = loaded.as_ref().map(|l| &l.config);
    let report = crate::pipeline::report::stored_report(&store, &run, config)?;
    crate::pipeline::report::print_report(&report, args.format.format)?;
    Ok(outcome)
}
