//! `utilgate ab`: the base and the head of a pull request measured interleaved on this machine
//! in one session, each case judged on its paired difference (`compare::decide_ab`). Host drift
//! between nights, or between runners of one SKU, cancels because both sides see the same host
//! minutes apart. Sequences I/O (two configs, harness processes); decides nothing itself.
//!
//! The head is the config given with `--config` (the checkout under test); the base is the
//! same-named config in `--base DIR` (a second checkout, e.g. a `git worktree` of the base
//! commit). Each pair is two fresh processes, in ABBA order (`AB`, `BA`, `AB`, ...); a suspect
//! case gets `confirm_pairs` more pairs and is decided on all its pairs. Nothing is
//! stored: an A/B session compares two commits, it is not a night of history.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::case::{CaseKey, Verdict};
use crate::catalog::Precision;
use crate::cli::{AbArgs, Format};
use crate::compare::{AbPlan, Evidence, decide_ab, error_decision, should_confirm};
use crate::config::{LoadedConfig, SuiteConfig};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output::{self, Progress};
use crate::pipeline::device;
use crate::pipeline::measure::runner::{CasePlan, Measured, Runner};
use crate::report::{AbCase, AbReport, render_ab};

fn median_of_medians(repeats: &[Vec<f64>]) -> Option<f64> {
    let medians: Vec<f64> = repeats
        .iter()
        .filter_map(|r| crate::stats::median(r))
        .collect();
    crate::stats::median(&medians)
}

/// The base side's config: `--base DIR` holds a checkout with the head config's file name.
fn base_config_path(base: &Path, head_config: &Path) -> PathBuf {
    if base.is_file() {
        return base.to_path_buf();
    }
    base.join(head_config.file_name().unwrap_or(head_config.as_os_str()))
}

/// The plans of one side for the head's grid; the suite must exist on both sides.
fn side_plan<'a>(
    loaded: &'a LoadedConfig,
    suite: &str,
    key: &CaseKey,
    gpu: &crate::catalog::GpuSpec,
) -> Result<CasePlan<'a>, String> {
    let suite: &SuiteConfig = loaded
        .config
        .suites
        .iter()
        .find(|s| s.name == suite)
        .ok_or_else(|| format!("{} has no suite {suite:?}", loaded.path.display()))?;
    let model = loaded
        .models
        .get(&key.model)
        .ok_or_else(|| format!("{} has no model {:?}", loaded.path.display(), key.model))?;
    let precision =
        Precision::parse(&key.precision, suite.kv_dtype.as_deref()).map_err(|e| e.to_string())?;
    let floor = crate::floor::floor_of_case(model, loaded.draft_of(key), gpu, &precision, key)
        .map_err(|e| e.to_string());
    Ok(CasePlan {
        suite,
        key: key.clone(),
        kv_dtype: precision.kv.as_str().to_owned(),
        floor,
    })
}

/// `count` more pairs from pair `first` on, in ABBA order; stops at the first failed process.
fn pairs(
    (base, head): (&Runner<'_>, &Runner<'_>),
    (plan_a, plan_b): (&CasePlan<'_>, &CasePlan<'_>),
    first: u32,
    count: u32,
    (into_a, into_b): (&mut Measured, &mut Measured),
) -> Result<(), Error> {
    for i in first..first + count {
        if i % 2 == 0 {
            base.measure(plan_a, i..i + 1, into_a)?;
            head.measure(plan_b, i..i + 1, into_b)?;
        } else {
            head.measure(plan_b, i..i + 1, into_b)?;
            base.measure(plan_a, i..i + 1, into_a)?;
        }
        if into_a.error.is_some() || into_b.error.is_some() {
            break;
        }
    }
    Ok(())
}

fn side_error(side: &str, m: &Measured) -> Option<String> {
    m.error.as_ref().map(|e| format!("{side}: {e}"))
}

#[expect(
    clippy::too_many_lines,
    reason = "the session's steps in order, read top to bottom"
)]
pub fn ab(args: &AbArgs) -> Result<Outcome, Error> {
    crate::measure::workdir::sweep_stale(&std::env::temp_dir());
    let head = crate::config::load(&args.config.config)?;
    let base = crate::config::load(&base_config_path(&args.base, &args.config.config))?;
    if !args.trusted {
        let db = args.config.db.as_deref();
        crate::pipeline::credentials::refuse_near_harness(&head, db)?;
        crate::pipeline::credentials::refuse_near_harness(&base, db)?;
    }
    let config = &head.config;
    let suites = crate::pipeline::context::select_suites(&head, &args.suites)?;
    let plan = AbPlan {
        pairs: args.pairs.unwrap_or(config.ab.pairs),
        confirm_pairs: args.confirm_pairs.unwrap_or(config.ab.confirm_pairs),
        ..config.ab.clone()
    };
    if plan.pairs < 2 {
        return Err(Error::TooFewPairs { pairs: plan.pairs });
    }
    let store_path = head.store_path(args.config.db.as_deref());
    let gpu = device::device_spec(config.gpu.as_ref(), &store_path, None)?;

    let keys: Vec<CaseKey> = suites.iter().flat_map(|s| s.case_keys()).collect();

    let (cancel, exe) = (
        crate::pipeline::measure::runner::cancel_on_ctrl_c(),
        crate::pipeline::measure::runner::this_exe(),
    );
    let tmp = std::env::temp_dir();
    let run_dir = || {
        crate::measure::workdir::RunDir::create(&tmp).map_err(|source| Error::Io {
            path: tmp.clone(),
            source,
        })
    };
    let progress = Progress::new(keys.len() as u64, false);
    let runner = |loaded| -> Result<Runner<'_>, Error> {
        Ok(Runner {
            loaded,
            exe: exe.clone(),
            cancel: Arc::clone(&cancel),
            watch: None,
            run_dir: std::cell::RefCell::new(run_dir()?),
            progress: &progress,
        })
    };
    let (base_runner, head_runner) = (runner(&base)?, runner(&head)?);

    let mut cases = Vec::with_capacity(keys.len());
    for key in &keys {
        progress.start_case(&key.to_string());
        let mut policy = crate::config::policy_for(Some(config), key);
        policy.confirm_repeats = plan.confirm_pairs;
        policy.confirm_alpha = plan.confirm_alpha;
        let plans = side_plan(&base, &key.suite, key, &gpu)
            .and_then(|a| side_plan(&head, &key.suite, key, &gpu).map(|b| (a, b)));
        let (mut a, mut b) = (Measured::default(), Measured::default());
        let (decision, used, confirmed) = match &plans {
            Err(message) => (error_decision(message), 0, false),
            Ok((plan_a, plan_b)) => match (&plan_a.floor, &plan_b.floor) {
                (Err(m), _) | (_, Err(m)) => (error_decision(&format!("floor: {m}")), 0, false),
                (Ok(floor_a), Ok(floor_b)) => {
                    let runners = (&base_runner, &head_runner);
                    let sides = (plan_a, plan_b);
                    #[expect(clippy::cast_possible_truncation, reason = "pair counts are small")]
                    let first = plan.pairs as u32;
                    pairs(runners, sides, 0, first, (&mut a, &mut b))?;
                    let judge = |a: &[Vec<f64>], b: &[Vec<f64>]| {
                        decide_ab(
                            &Evidence {
                                repeats_ms: a,
                                floor_ms: floor_a.floor_ms,
                            },
                            &Evidence {
                                repeats_ms: b,
                                floor_ms: floor_b.floor_ms,
                            },
                            &policy,
                            plan.pairs,
                            keys.len(),
                            None,
                        )
                    };
                    if let Some(e) = side_error("base", &a).or_else(|| side_error("head", &b)) {
                        (error_decision(&e), a.repeats_ms.len(), false)
                    } else {
                        let d = judge(&a.repeats_ms, &b.repeats_ms);
                        if plan.confirm_pairs > 0 && should_confirm(&d) {
                            progress.warn(&format!(
                                "{key}: suspect; measuring {} more pairs before deciding",
                                plan.confirm_pairs
                            ));
                            #[expect(
                                clippy::cast_possible_truncation,
                                reason = "pair counts are small"
                            )]
                            let more = plan.confirm_pairs as u32;
                            pairs(runners, sides, first, more, (&mut a, &mut b))?;
                            if let Some(e) =
                                side_error("base", &a).or_else(|| side_error("head", &b))
                            {
                                (error_decision(&e), a.repeats_ms.len(), true)
                            } else {
                                // The final call rests on every pair (compare::ab says why).
                                let d = judge(&a.repeats_ms, &b.repeats_ms);
                                (d, a.repeats_ms.len(), true)
                            }
                        } else {
                            (d, a.repeats_ms.len(), false)
                        }
                    }
                }
            },
        };
        progress.finish_case(
            &key.to_string(),
            (decision.verdict == Verdict::Error)
                .then(|| decision.reasons.first().map_or("error", String::as_str)),
        );
        cases.push(AbCase {
            case: key.to_string(),
            base_median_ms: median_of_medians(&a.repeats_ms),
            head_median_ms: median_of_medians(&b.repeats_ms),
            pairs: used,
            confirmed,
            threshold_pct: policy.max_drop_pct,
            decision,
        });
    }
    progress.clear();

    let fail_on = config.gate.fail_on.clone();
    let gate_failed =
        crate::compare::gate_failed(cases.iter().map(|c| c.decision.verdict), &fail_on);
    let any_error = cases.iter().any(|c| c.decision.verdict == Verdict::Error);
    let report = AbReport {
        schema_version: 1,
        base_dir: base.dir.display().to_string(),
        head_config: head.path.display().to_string(),
        gpu: gpu.name.clone(),
        fail_on,
        gate_failed,
        cases,
    };
    match args.format.format {
        Format::Human => output::emit(&render_ab(&report, output::stdout_terminal()))?,
        Format::Json => output::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
    }
    Ok(if gate_failed {
        Outcome::GateFailed
    } else if any_error {
        Outcome::CasesFailed
    } else {
        Outcome::Passed
    })
}
