//! The parts of `utilgate run` that keep measured work safe and say what a run will cost
//! before it starts: the case-count gate and estimate, the per-case journal and `--resume`,
//! and the rescue file when the final store write fails. Sequences I/O only.

use std::collections::BTreeMap;
use std::fmt::Write as _;
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

/// What [`check_grid`] weighs besides the grid itself.
pub struct GridLimits {
    /// `[limits] max_cases` (the built-in threshold applies outside CI without it).
    pub max_cases: Option<usize>,
    /// `--yes`: start a grid above the limit.
    pub yes: bool,
    pub in_ci: bool,
    /// `[gate] confirm_repeats`: the fresh processes each suspect may take after the grid.
    pub confirm_repeats: u32,
    /// The run's budget in seconds, when it has one: the budget's plan, printed next, is
    /// what the night will take.
    pub budget_s: Option<f64>,
}

/// Says how many cases the run has and what they will cost, and refuses a grid above the
/// limit without `--yes`: the config's `max_cases` everywhere, the default only outside CI.
pub fn check_grid(
    store: &Store,
    suites: &[&SuiteConfig],
    count: usize,
    limits: &GridLimits,
) -> Result<(), Error> {
    let estimate = estimate(store, suites, limits.confirm_repeats)?;
    let limit = limits.max_cases.unwrap_or(DEFAULT_MAX_CASES);
    let enforced = limits.max_cases.is_some() || !limits.in_ci;
    if count > limit && enforced && !limits.yes {
        return Err(Error::TooManyCases {
            count,
            estimate,
            limit,
            configured: limits.max_cases.is_some(),
        });
    }
    let line = match limits.budget_s {
        // Under a budget the plan decides the night's length: one figure, the plan's.
        Some(budget) => format!(
            "{count} cases to measure within the budget of {} (its plan follows)",
            crate::report::format::duration(budget)
        ),
        None => format!("{count} cases to measure ({estimate})"),
    };
    output::note(&line);
    Ok(())
}

/// The run's cost without a budget: from the store's history of each suite (the last run's
/// wall seconds per harness process, times the processes this run starts), else in steps
/// (cases x repeats x steps); with the most the confirm step can add when every case is a
/// suspect (`confirm_repeats` more processes each).
fn estimate(store: &Store, suites: &[&SuiteConfig], confirm_repeats: u32) -> Result<String, Error> {
    let mut timed = Vec::new();
    let (mut seconds, mut confirm_seconds) = (0.0, 0.0);
    let (mut untimed_steps, mut confirm_steps) = (0u64, 0u64);
    let mut untimed = Vec::new();
    for suite in suites {
        let cases = suite.case_keys().len() as u64;
        if let Some(per_process) = store.suite_seconds_per_process(&suite.name)? {
            seconds += per_process * (cases * u64::from(suite.repeats)) as f64;
            confirm_seconds += per_process * (cases * u64::from(confirm_repeats)) as f64;
            timed.push(suite.name.as_str());
        } else {
            let steps = suite.steps + suite.warmup_steps;
            untimed_steps += cases * u64::from(suite.repeats) * steps;
            confirm_steps += cases * u64::from(confirm_repeats) * steps;
            untimed.push(suite.name.as_str());
        }
    }
    let mut parts = Vec::new();
    if !timed.is_empty() {
        let mut part = format!(
            "about {}, from the last run of suite {}",
            crate::report::format::duration(seconds),
            timed.join(", ")
        );
        if confirm_seconds > 0.0 {
            let _ = write!(
                part,
                "; up to {} if every case needs the confirm step ({confirm_repeats} more \
                 processes each)",
                crate::report::format::duration(seconds + confirm_seconds)
            );
        }
        parts.push(part);
    }
    if !untimed.is_empty() {
        let mut part = format!(
            "{untimed_steps} harness steps in all (cases x repeats x steps) for suite {}, which has no earlier run to time it",
            untimed.join(", ")
        );
        if confirm_steps > 0 {
            let _ = write!(
                part,
                "; up to {} if every case needs the confirm step",
                untimed_steps + confirm_steps
            );
        }
        parts.push(part);
    }
    Ok(parts.join("; "))
}

/// The journal of this run, and the finished cases it recovered (`--resume`).
pub struct CaseJournal<T> {
    pub journal: Journal,
    pub recovered: BTreeMap<CaseKey, T>,
    /// The original start of a resumed run.
    pub started_at: Option<jiff::Timestamp>,
    /// The run's unique id: drawn now, or the resumed run's.
    pub uid: String,
    /// Whether this run resumes an interrupted one.
    pub resumed: bool,
}

/// What `--resume` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume<'a> {
    /// No `--resume`: a new run.
    No,
    /// `--resume`: the one interrupted run of this plan.
    Interrupted,
    /// `--resume=ID`: the interrupted run with that id (or id prefix).
    Run(&'a str),
}

impl<'a> Resume<'a> {
    /// From the `--resume[=ID]` flag.
    #[must_use]
    pub fn from_flag(flag: Option<&'a Option<String>>) -> Self {
        match flag {
            None => Resume::No,
            Some(None) => Resume::Interrupted,
            Some(Some(id)) => Resume::Run(id),
        }
    }
}

/// An interrupted run's journal: no live process holds it.
struct Interrupted<T> {
    path: std::path::PathBuf,
    rec: journal::Recovered<T>,
}

impl<T> Interrupted<T> {
    fn uid(&self) -> &str {
        self.rec.header.uid.as_deref().unwrap_or("")
    }

    /// How the messages name it: its id, start, owner and finished cases.
    fn describe(&self) -> String {
        let h = &self.rec.header;
        format!(
            "run {} started {}{} ({} finished case(s)) at {}",
            h.uid.as_deref().unwrap_or("(no id: an older journal)"),
            h.started_at,
            h.pid.map(|p| format!(" by pid {p}")).unwrap_or_default(),
            self.rec.cases.len(),
            self.path.display()
        )
    }
}

/// The journals beside the store that no live run holds, readable as journals.
fn interrupted<T: DeserializeOwned>(store_path: &Path) -> Result<Vec<Interrupted<T>>, Error> {
    let mut out = Vec::new();
    for path in journal::journals(store_path)? {
        if journal::is_live(&path) {
            continue;
        }
        if let Some(rec) = journal::read::<T>(&path)? {
            out.push(Interrupted { path, rec });
        }
    }
    Ok(out)
}

/// Opens this run's own journal beside the store (one per run: concurrent runs never share
/// one). With `resume` ([`Resume::Interrupted`]: the one interrupted run of this plan;
/// [`Resume::Run`]: the run with that id or id prefix) it continues an interrupted run's journal and recovers
/// its cases; several candidates are an error listing them. Without it, interrupted runs'
/// journals are kept and named.
pub fn open_journal<T: DeserializeOwned>(
    store_path: &Path,
    plan: serde_json::Value,
    started_at: jiff::Timestamp,
    resume: Resume<'_>,
) -> Result<CaseJournal<T>, Error> {
    let found = interrupted::<T>(store_path)?;
    let which = match resume {
        Resume::No => None,
        Resume::Interrupted => Some(None),
        Resume::Run(id) => Some(Some(id)),
    };
    match which {
        Some(which) => {
            let mut same: Vec<Interrupted<T>> = found
                .into_iter()
                .filter(|f| f.rec.header.plan == plan)
                .filter(|f| which.is_none_or(|w| f.uid().starts_with(w)))
                .collect();
            if same.len() > 1 {
                return Err(Error::ResumeWhich {
                    runs: same.iter().map(Interrupted::describe).collect(),
                });
            }
            if let Some(f) = same.pop() {
                return resumed(f);
            }
            if let Some(w) = which {
                return Err(Error::ResumeNoSuchRun { id: w.to_owned() });
            }
            output::warn(&format!(
                "--resume: no interrupted run of this plan beside {} (config, cases and GPU must match); measuring every case",
                store_path.display()
            ));
        }
        None => {
            for f in &found {
                output::warn(&format!(
                    "kept the journal of an interrupted {}: pass --resume to finish it",
                    f.describe()
                ));
            }
        }
    }
    let uid = crate::pipeline::context::new_run_uid();
    let header = JournalHeader {
        journal: journal::JOURNAL_VERSION,
        plan,
        started_at: started_at.to_string(),
        uid: Some(uid.clone()),
        pid: Some(std::process::id()),
    };
    let path = journal::run_journal_path(store_path, &uid);
    Ok(CaseJournal {
        journal: Journal::open(&path, &header, false)?,
        recovered: BTreeMap::new(),
        started_at: None,
        uid,
        resumed: false,
    })
}

/// Continues the interrupted run `f`: its journal, its cases, its start and its id.
fn resumed<T>(f: Interrupted<T>) -> Result<CaseJournal<T>, Error> {
    output::note(&format!(
        "resuming the interrupted {}: measuring the rest",
        f.describe()
    ));
    let journal = Journal::open(&f.path, &f.rec.header, true)?;
    Ok(CaseJournal {
        journal,
        started_at: f.rec.header.started_at.parse().ok(),
        // An older journal's run had no id: it gets one now.
        uid: f
            .rec
            .header
            .uid
            .clone()
            .unwrap_or_else(crate::pipeline::context::new_run_uid),
        resumed: true,
        recovered: f.rec.cases.into_iter().collect(),
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

impl RescuedRun {
    /// The id of a rescued run that carries none (written before runs had one): `rescue-` and
    /// the SHA-256 of its content, so the same file imported twice has the same id.
    #[must_use]
    pub fn content_uid(&self) -> String {
        use sha2::{Digest, Sha256};
        let text = serde_json::to_string(self).unwrap_or_default();
        let digest = Sha256::digest(text.as_bytes());
        let hex = digest.iter().fold(String::with_capacity(64), |mut acc, b| {
            use std::fmt::Write as _;
            let _ = write!(acc, "{b:02x}");
            acc
        });
        format!("rescue-{hex}")
    }
}

impl RescuedRun {
    /// A rescue file written before a budgeted night's records had tables of their own (store
    /// schema 12) keeps them as JSON: the night's in the run's config (`budget_night`), each
    /// case's and its repeats' costs in the result's summary (`budget`, `cost`). Reads them
    /// into the typed fields, as migration 0012 does for stored runs; a record that does not
    /// parse is left out, as the old readers left it out. Typed fields already set win.
    pub fn lift_budget_records(&mut self) {
        fn take<T: serde::de::DeserializeOwned>(
            json: Option<&mut serde_json::Value>,
            key: &str,
        ) -> Option<T> {
            let map = json?.as_object_mut()?;
            serde_json::from_value(map.remove(key)?).ok()
        }
        if self.run.budget_night.is_none() {
            self.run.budget_night = take(self.run.config_json.as_mut(), "budget_night");
        }
        for r in &mut self.run.results {
            if r.budget.is_none() {
                r.budget = take(r.summary_json.as_mut(), "budget");
            }
            if r.costs.is_empty() {
                r.costs = take(r.summary_json.as_mut(), "cost").unwrap_or_default();
            }
        }
    }
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
        // Stored already (a replay): a rescue file would only be a third copy.
        Err(err @ crate::store::StoreError::AlreadyStored { .. }) => Err(err.into()),
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
