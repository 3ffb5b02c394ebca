//! The parts of `utilgate run` that keep measured work safe and say what a run will cost
//! before it starts: the case-count gate and estimate, the per-case journal and `--resume`,
//! and the rescue file when the final store write fails. Sequences I/O only.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::case::CaseKey;
use crate::config::SuiteConfig;
use crate::error::Error;
use crate::output;
use crate::store::journal::{self, Journal, JournalHeader};
use crate::store::{NewRun, PublishFacts, RunId, Store};

/// The grid size above which a run outside CI asks for `--yes`, unless the config declares
/// its own `[limits] max_cases`.
pub const DEFAULT_MAX_CASES: usize = 1000;

/// Says how many cases the run has and what they will cost, and refuses a grid above the
/// limit without `--yes`: the config's `max_cases` everywhere, the default only outside CI.
pub fn check_grid(
    store: &Store,
    suites: &[&SuiteConfig],
    count: usize,
    max_cases: Option<usize>,
    yes: bool,
    in_ci: bool,
) -> Result<(), Error> {
    let estimate = estimate(store, suites)?;
    let limit = max_cases.unwrap_or(DEFAULT_MAX_CASES);
    let enforced = max_cases.is_some() || !in_ci;
    if count > limit && enforced && !yes {
        return Err(Error::TooManyCases {
            count,
            estimate,
            limit,
            configured: max_cases.is_some(),
        });
    }
    output::note(&format!("{count} cases to measure ({estimate})"));
    Ok(())
}

/// The run's cost: from the store's history of each suite (seconds per case in its last
/// run), else in steps (cases x repeats x steps).
fn estimate(store: &Store, suites: &[&SuiteConfig]) -> Result<String, Error> {
    let mut timed = Vec::new();
    let mut seconds = 0.0;
    let mut untimed_steps = 0u64;
    let mut untimed = Vec::new();
    for suite in suites {
        let cases = suite.case_keys().len() as u64;
        if let Some(per_case) = store.suite_seconds_per_case(&suite.name)? {
            seconds += per_case * cases as f64;
            timed.push(suite.name.as_str());
        } else {
            untimed_steps += cases * u64::from(suite.repeats) * (suite.steps + suite.warmup_steps);
            untimed.push(suite.name.as_str());
        }
    }
    let mut parts = Vec::new();
    if !timed.is_empty() {
        parts.push(format!(
            "about {}, from the last run of suite {}",
            human_seconds(seconds),
            timed.join(", ")
        ));
    }
    if !untimed.is_empty() {
        parts.push(format!(
            "{untimed_steps} harness steps in all (cases x repeats x steps) for suite {}, which has no earlier run to time it",
            untimed.join(", ")
        ));
    }
    Ok(parts.join("; "))
}

/// Seconds as people read them, to two significant figures.
fn human_seconds(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 90.0 * 60.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// The journal of this run, and the finished cases it recovered (`--resume`).
pub struct CaseJournal<T> {
    pub journal: Journal,
    pub recovered: BTreeMap<CaseKey, T>,
    /// The original start of a resumed run.
    pub started_at: Option<jiff::Timestamp>,
}

/// Opens the journal beside the store: recovers a matching interrupted run's cases with
/// `resume`, else starts afresh, discarding (with a note) a journal it finds.
pub fn open_journal<T: DeserializeOwned>(
    store_path: &Path,
    plan: serde_json::Value,
    started_at: jiff::Timestamp,
    resume: bool,
) -> Result<CaseJournal<T>, Error> {
    let path = journal::journal_path(store_path);
    let found = journal::read::<T>(&path)?;
    let header = JournalHeader {
        journal: journal::JOURNAL_VERSION,
        plan,
        started_at: started_at.to_string(),
    };
    match found {
        Some(rec) if resume && rec.header.plan == header.plan => {
            output::note(&format!(
                "resuming the interrupted run from {}: {} finished case(s) kept, measuring the rest",
                path.display(),
                rec.cases.len()
            ));
            let journal = Journal::open(&path, &rec.header, true)?;
            return Ok(CaseJournal {
                journal,
                started_at: rec.header.started_at.parse().ok(),
                recovered: rec.cases.into_iter().collect(),
            });
        }
        Some(_) if resume => output::warn(&format!(
            "--resume: the journal {} belongs to a different plan (config, cases or GPU changed): discarded; measuring every case",
            path.display()
        )),
        None if resume => output::warn(&format!(
            "--resume: no interrupted run to resume ({} does not exist); measuring every case",
            path.display()
        )),
        Some(rec) => output::warn(&format!(
            "discarded the journal of an interrupted run ({} finished case(s)) at {}: pass --resume to finish such a run instead",
            rec.cases.len(),
            path.display()
        )),
        None => {}
    }
    Ok(CaseJournal {
        journal: Journal::open(&path, &header, false)?,
        recovered: BTreeMap::new(),
        started_at: None,
    })
}

/// What a rescue file holds: the run, its service cases, and what `publish` needs of it.
#[derive(Debug, Serialize, serde::Deserialize)]
pub struct RescuedRun {
    pub run: NewRun,
    pub publish: Option<PublishFacts>,
    /// The service cases measured with the run (a config with both kinds); absent in rescue
    /// files of step-only runs and of older versions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub serve: Vec<crate::store::NewServeCase>,
}

/// Stores the run; if the store refuses it, writes the complete run to a rescue file beside
/// the store (else in the temporary directory) and returns an error naming that file.
/// `run` is the run and its service cases, stored in one transaction and rescued together.
pub fn store_or_rescue(
    store: &mut Store,
    (run, serve): (&NewRun, &[crate::store::NewServeCase]),
    facts: Option<&PublishFacts>,
    tmp: &Path,
) -> Result<RunId, Error> {
    match store.insert_run_with_serve(run, facts, serve) {
        Ok(id) => Ok(id),
        Err(err) => {
            let stamp = run.finished_at.strftime("%Y%m%dT%H%M%SZ").to_string();
            let rescued = RescuedRun {
                run: run.clone(),
                publish: facts.cloned(),
                serve: serve.to_vec(),
            };
            match journal::write_rescue(store.path(), &stamp, tmp, &rescued) {
                Ok(file) => {
                    output::warn(&format!(
                        "the run could not be stored; it was written to the rescue file {}",
                        file.display()
                    ));
                    Err(Error::Rescued {
                        source: Box::new(err.into()),
                        file,
                    })
                }
                Err(rescue_err) => {
                    output::warn(&format!(
                        "the rescue file could not be written either: {rescue_err}"
                    ));
                    Err(err.into())
                }
            }
        }
    }
}

/// The plan a journal belongs to: the config as stored with the run, the GPU, the cases.
#[must_use]
pub fn plan<C: Serialize>(config: &C, gpu: &str, cases: &[&CaseKey]) -> serde_json::Value {
    serde_json::json!({
        "config": serde_json::to_value(config).ok(),
        "gpu": gpu,
        "cases": cases.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}
