//! The report context: one pure data structure built from a stored run and its judgements, from
//! which every output (terminal table, JSON, Markdown, HTML, `JUnit`) is rendered. Pure: trend
//! points and GPU state arrive as data from the command that read them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::case::{CaseKey, Verdict};
use crate::compare::{Decision, EnvChange, GateStat};
use crate::report::format::{MISSING, ms, pct, short_sha, signed_percent};
use crate::store::{StoredResult, StoredRun};

/// The JSON schema version of reports; bump on any breaking change.
pub const SCHEMA_VERSION: u32 = 1;

/// The baseline a case was judged against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineRef {
    pub run_id: i64,
    /// RFC 3339 time the baseline's run started (absent in decisions stored before 0.3).
    #[serde(default)]
    pub started_at: Option<String>,
    pub git_sha: Option<String>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
}

/// A case's decision with what it was judged against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Judgement {
    pub key: CaseKey,
    pub decision: Decision,
    pub baseline: Option<BaselineRef>,
    pub env_changes: Vec<EnvChange>,
    pub threshold_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: i64,
    pub started_at: String,
    pub finished_at: String,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub trigger: Option<String>,
    pub pr_number: Option<u64>,
    pub gpu_sku: String,
    pub host: Option<String>,
    pub utilgate_version: String,
    /// A merged group's report (`report|publish --group`): the group and the stored runs it
    /// counted, oldest first (`id` is then the latest of them). Absent for one run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupInfo>,
}

/// The run group a merged report covers.
#[derive(Debug, Clone, Serialize)]
pub struct GroupInfo {
    pub id: String,
    pub runs: Vec<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GateInfo {
    pub passed: bool,
    pub fail_on: Vec<Verdict>,
    pub counts: BTreeMap<Verdict, usize>,
    /// Cases that could not be measured (exit 2 unless the gate failed): a report with errors
    /// is never headed as a clean pass.
    pub errors: usize,
    pub baselines_promoted: bool,
    /// How the gate ended, as every headline shows it (mark and word).
    pub state: GateState,
    /// The largest drop the gate saw but could not confirm (see [`Unconfirmed`]).
    pub unconfirmed: Option<Unconfirmed>,
}

impl GateInfo {
    /// A gate with these facts; its `state` and `unconfirmed` are set with the summaries
    /// (`RunReport::refresh_summaries`), once the cases are known.
    fn new(
        passed: bool,
        fail_on: &[Verdict],
        counts: BTreeMap<Verdict, usize>,
        baselines_promoted: bool,
    ) -> GateInfo {
        GateInfo {
            passed,
            fail_on: fail_on.to_vec(),
            errors: counts.get(&Verdict::Error).copied().unwrap_or(0),
            counts,
            baselines_promoted,
            state: GateState::Passed,
            unconfirmed: None,
        }
    }
}

/// How a gate (or one suite of it) ended, in the order a headline checks them: a case failed
/// `fail_on`; a case could not be measured; an inconclusive case's point estimate lies beyond
/// its threshold (`undecided`: the gate could not tell, and shows no tick); else passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GateState {
    Failed,
    Error,
    Undecided,
    Passed,
}

impl GateState {
    /// The state of a gate with these facts.
    #[must_use]
    pub fn of(passed: bool, errors: usize, unconfirmed: Option<&Unconfirmed>) -> GateState {
        if !passed {
            GateState::Failed
        } else if errors > 0 {
            GateState::Error
        } else if unconfirmed.is_some() {
            GateState::Undecided
        } else {
            GateState::Passed
        }
    }

    /// The headline's mark: never a tick unless the gate passed and could tell.
    #[must_use]
    pub fn mark(self) -> &'static str {
        match self {
            GateState::Failed => "❌",
            GateState::Error => "⚠️",
            GateState::Undecided => "❔",
            GateState::Passed => "✅",
        }
    }

    /// The word a table or a terminal line shows.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            GateState::Failed => "failed",
            GateState::Error => "errors",
            GateState::Undecided => "could not tell",
            GateState::Passed => "passed",
        }
    }
}

/// The largest drop a gate could not confirm: the worst `inconclusive` case whose point
/// estimate of the drop exceeds its threshold (too noisy to confirm, too large to call a pass).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unconfirmed {
    pub case: String,
    pub drop_pct: f64,
    pub threshold_pct: f64,
    /// How many inconclusive cases lie beyond their thresholds.
    pub cases: usize,
    /// The drop is the host-adjusted reading (the canary moved and, with its shift taken off,
    /// the case dropped beyond its threshold), not the step time as measured.
    #[serde(default)]
    pub host_adjusted: bool,
}

impl Unconfirmed {
    /// The worst unconfirmed drop among `cases` (a case failing the gate is not unconfirmed).
    /// An inconclusive case's drop is the larger of the measured one and, where the host moved,
    /// the host-adjusted one: a faster host that hid a drop leaves the drop unconfirmed, not
    /// passed.
    #[must_use]
    pub fn of<'a>(cases: impl IntoIterator<Item = &'a CaseReport>) -> Option<Unconfirmed> {
        // The larger drop, the measured one on a tie.
        let worst_drop = |c: &CaseReport| -> Option<(f64, bool)> {
            let measured = c.drop_pct.map(|d| (d, false));
            let adjusted = c.decision.host_adjusted_drop_pct.map(|d| (d, true));
            measured
                .into_iter()
                .chain(adjusted)
                .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
        };
        let beyond: Vec<(&CaseReport, (f64, bool))> = cases
            .into_iter()
            .filter(|c| c.verdict == Verdict::Inconclusive && !c.fails_gate)
            .filter_map(|c| worst_drop(c).map(|d| (c, d)))
            .filter(|(c, (d, _))| *d > c.threshold_pct)
            .collect();
        let (worst, (drop_pct, host_adjusted)) =
            beyond.iter().max_by(|a, b| a.1.0.total_cmp(&b.1.0))?;
        Some(Unconfirmed {
            case: worst.case.clone(),
            drop_pct: *drop_pct,
            threshold_pct: worst.threshold_pct,
            cases: beyond.len(),
            host_adjusted: *host_adjusted,
        })
    }

    /// "12.3%" or "37.5% with the host's shift taken off".
    #[must_use]
    pub fn figure(&self) -> String {
        if self.host_adjusted {
            format!(
                "{:.1}% with the host's shift taken off",
                self.drop_pct + 0.0
            )
        } else {
            format!("{:.1}%", self.drop_pct + 0.0)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CaseReport {
    pub case: String,
    pub key: CaseKey,
    /// The key's point in the grid, `model/precision/phase/bB/cC`, with `/tpN` and `/epN`
    /// where the case spans GPUs (the tables' first column; axes have columns of their own).
    pub point: String,
    /// The suite's free axes at this case (`{"mode": "graphs"}`; `{}` without axes).
    pub axes: BTreeMap<String, String>,
    pub verdict: Verdict,
    pub floor_ms: Option<f64>,
    /// "memory" or "compute": the resource that sets the floor.
    pub bound: Option<String>,
    /// The stored result's plain median: every counted step of every process pooled (what
    /// `baseline list` and `runs show` list). Not the step the verdict weighs (`step_now_ms`).
    pub median_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Spread of the per-process medians, percent of the median.
    pub repeat_spread_pct: Option<f64>,
    pub n: Option<usize>,
    pub repeats: Option<usize>,
    /// The stored result's utilisation, MBU and MFU: `floor_ms / median_ms` and each resource's
    /// share of `median_ms` (what `baseline list` lists); reports show `util_now` instead.
    pub utilisation: Option<f64>,
    pub mbu: Option<f64>,
    pub mfu: Option<f64>,
    pub baseline: Option<BaselineRef>,
    /// The drop of the statistic that decided the verdict (`drop_stat`): the median's unless a
    /// tail statistic decided (a stall that failed while the median held).
    pub drop_pct: Option<f64>,
    /// The statistic `drop_pct` is of.
    pub drop_stat: GateStat,
    /// What the drop is of when it is not `1 - util_now / util_then`, as tables name it beside
    /// the drop: the deciding tail statistic (`stall`), or `step` when the floor changed and the
    /// drop compares step times alone; `None` otherwise.
    pub drop_note: Option<String>,
    pub threshold_pct: f64,
    pub decision: Decision,
    pub env_changes: Vec<EnvChange>,
    pub error: Option<String>,
    pub stderr_tail: Option<String>,
    /// Utilisation of the reference the verdict used: `floor / step_then_ms`; the baseline
    /// result's `floor / median` when the decision has none (a case that errored).
    pub util_then: Option<f64>,
    /// Utilisation of this run: `floor_ms / step_now_ms`, the step the verdict weighs; the
    /// stored `utilisation` when the decision has none. With `util_then` and `drop_pct` it is
    /// the one reference every surface shows.
    pub util_now: Option<f64>,
    /// The reference step (ms) the verdict used: the robust level of the reference's processes'
    /// median steps (the baseline result's plain median when the decision has none).
    pub step_then_ms: Option<f64>,
    /// This run's step (ms) the verdict weighs: the robust level of its processes' median steps
    /// (docs/verdict.md); the stored plain median when the decision has none.
    pub step_now_ms: Option<f64>,
    /// MBU and MFU at `step_now_ms`: the memory and the compute share of that step, so that
    /// `util_now` is the larger of the two.
    pub mbu_now: Option<f64>,
    pub mfu_now: Option<f64>,
    /// The one sentence on what the case is judged against (`then: ...`), every renderer's.
    pub then_line: Option<String>,
    /// The one sentence on this run's figures (`now: ...`), every renderer's.
    pub now_line: Option<String>,
    /// Whether this case's verdict is listed in `fail_on`.
    pub fails_gate: bool,
    /// Whether a reader should look at this case: anything but a plain pass or a new case, or a
    /// changed floor.
    pub attention: bool,
    /// The GPU's state while the case ran, as the sampler stored it (optional).
    pub gpu_state: Option<serde_json::Value>,
    /// `gpu_state` as readable `key: value` lines, throttling first.
    pub gpu_notes: Vec<String>,
    /// The case's energy figures in one line, where its repeats measured them (#33 item 4);
    /// its change against the baseline is a reason of the decision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_line: Option<String>,
    /// The case's recent results on this GPU, oldest first, this run last.
    pub trend: Vec<TrendPoint>,
    /// What the case's profiler trace says, diffed against the baseline's (when traced).
    /// Always serialised (null without a trace): templates see the name defined.
    #[serde(default)]
    pub evidence: Option<super::evidence::CaseEvidence>,
    /// What the case's Nsight Systems / Nsight Compute files say, each diffed against the
    /// baseline's file of the same kind (empty without one).
    #[serde(default)]
    pub nsight: Vec<super::nsight::NsightCaseEvidence>,
    /// The case's page on the published site (`[site] url`): absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_url: Option<String>,
}

/// One point of a case's history, for trend lines and charts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrendPoint {
    pub run_id: i64,
    pub started_at: String,
    pub git_sha: Option<String>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
    /// The point of the run being reported.
    pub current: bool,
}

/// One suite's share of a run: the unit of a PR comment and of a commit status.
#[derive(Debug, Clone, Serialize)]
pub struct SuiteReport {
    pub name: String,
    pub passed: bool,
    pub cases: usize,
    pub counts: BTreeMap<Verdict, usize>,
    /// Cases failing the gate other than errors, cases that errored, and missing cases.
    pub failures: usize,
    pub errors: usize,
    pub skipped: usize,
    /// Cases that need a reader's attention (see [`CaseReport::attention`]).
    pub attention: usize,
    /// One plain sentence: what happened in this suite.
    pub summary: String,
    /// The names of the suite's free axes (a column each in tables); empty without axes.
    pub axes: Vec<String>,
    /// How the suite ended (see [`GateState`]).
    pub state: GateState,
    /// The suite's largest unconfirmed drop (see [`Unconfirmed`]).
    pub unconfirmed: Option<Unconfirmed>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub schema_version: u32,
    pub run: RunInfo,
    pub gate: GateInfo,
    /// One plain sentence: what happened in the whole run.
    pub summary: String,
    /// The sentence on a shift most of the grid shares, with the cause the run supports (it
    /// also ends `summary`); null without one.
    pub shared_shift: Option<String>,
    pub suites: Vec<SuiteReport>,
    pub cases: Vec<CaseReport>,
    /// The run's service cases (suites of `kind = "serve"`), worst first; see `serve_view.rs`.
    pub service: Vec<super::ServeCaseReport>,
    /// The latency-split readings over the service grid's rates (estimates).
    pub service_readings: Vec<String>,
    /// The HTML report's service charts (latency against rate, then vs now; history).
    pub service_charts: Vec<super::ServeChart>,
    /// The time budget of a budgeted run (`run --budget`): absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<super::budget::BudgetReport>,
    /// The index of the published site (`[site] url`): absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub site_url: Option<String>,
}

/// "energy: 1.100 J/token, 0.909 tok/s/W, 1.100 J/step, 110 W mean at a 700 W power limit
/// (energy counter, 3 of 4 repeats; repeat 3: ...)": the figures of one case's energy.
#[must_use]
pub fn energy_line(f: &crate::compare::energy::EnergyFigures) -> String {
    use crate::compare::energy::joules;
    let limit = f
        .power_limit_w
        .map(|w| format!(" at a {w:.0} W power limit"))
        .unwrap_or_default();
    let source = match f.source.as_str() {
        "counter" => "energy counter",
        "integral" => "power readings integrated",
        other => other,
    };
    let refused = f
        .refused
        .first()
        .map(|why| format!("; {why}"))
        .unwrap_or_default();
    format!(
        "energy: {} J/token, {} tok/s/W, {} J/step, {:.0} W mean{limit} ({source}, {} of {} \
         repeats{refused})",
        joules(f.joules_per_token),
        joules(f.tokens_per_s_per_w),
        joules(f.joules_per_step),
        f.mean_power_w,
        f.repeats,
        f.repeats_of
    )
}

/// What a case's drop is of when it is not `1 - util_now / util_then` (see
/// [`CaseReport::drop_note`]).
fn drop_note(d: &Decision) -> Option<String> {
    let stat = d.deciding_drop().0;
    if stat != GateStat::Median {
        Some(stat.to_string())
    } else if d.floor_changed {
        Some("step".to_owned())
    } else {
        None
    }
}

/// The figures a report shows for one case, each from one source: the verdict's levels where
/// the decision has them, so that `util = floor / step` on both sides and the drop is
/// `1 - util_now / util_then` (docs/verdict.md, "The figures").
struct Reading {
    step_now_ms: Option<f64>,
    util_now: Option<f64>,
    mbu_now: Option<f64>,
    mfu_now: Option<f64>,
    step_then_ms: Option<f64>,
    util_then: Option<f64>,
}

impl Reading {
    fn of(d: &Decision, result: Option<&StoredResult>, baseline: Option<&BaselineRef>) -> Reading {
        let median = result.and_then(|r| r.median_ms);
        let (step_now_ms, util_now) = match (d.step_now_ms, d.util_now) {
            (Some(step), Some(util)) => (Some(step), Some(util)),
            _ => (median, result.and_then(|r| r.utilisation)),
        };
        let (step_then_ms, util_then) = match (d.step_then_ms, d.util_then) {
            (Some(step), Some(util)) => (Some(step), Some(util)),
            _ => (
                baseline.and_then(|b| b.median_ms),
                baseline.and_then(|b| b.utilisation),
            ),
        };
        // The stored shares are each resource's time over the median; the same time over the
        // verdict's step is its share of that step (MBU = bytes / step / peak bandwidth).
        let at_step = |share: Option<f64>| -> Option<f64> {
            let (share, median, step) = (share?, median?, step_now_ms?);
            (step > 0.0).then(|| share * median / step)
        };
        Reading {
            step_now_ms,
            util_now,
            mbu_now: at_step(result.and_then(|r| r.mbu)),
            mfu_now: at_step(result.and_then(|r| r.mfu)),
            step_then_ms,
            util_then,
        }
    }

    /// `then: step 11.531 ms, utilisation 42.8%, the reference the verdict used: 3 processes
    /// from baseline run 1 @ 0123456`; the baseline's own median when no reference was used.
    fn then_line(&self, d: &Decision, baseline: Option<&BaselineRef>) -> Option<String> {
        let run = |id: i64, sha: Option<&str>| {
            format!(
                "run {id}{}",
                sha.map_or_else(String::new, |s| format!(" @ {}", short_sha(s)))
            )
        };
        if d.step_then_ms.is_some() && d.util_then.is_some() {
            let rests_on = match (&d.slide, baseline) {
                (Some(start), _) => format!(
                    " from where the lineage began ({})",
                    run(start.run_id, start.git_sha.as_deref())
                ),
                (None, Some(b)) => {
                    format!(" from baseline {}", run(b.run_id, b.git_sha.as_deref()))
                }
                (None, None) => String::new(),
            };
            return Some(format!(
                "then: step {} ms, utilisation {}, the reference the verdict used: {} processes{rests_on}",
                ms(self.step_then_ms),
                pct(self.util_then),
                d.repeats_then,
            ));
        }
        baseline.map(|b| {
            format!(
                "then: baseline {}, median step {} ms, utilisation {} (not compared)",
                run(b.run_id, b.git_sha.as_deref()),
                ms(b.median_ms),
                pct(b.utilisation),
            )
        })
    }

    /// `now: step 12.684 ms, utilisation 38.9% = floor / step (MBU 38.9%, MFU 0.1%: the memory
    /// and compute shares of the step): drop +9.1%; all 60 steps of 3 processes: median ...`.
    fn now_line(
        &self,
        d: &Decision,
        result: Option<&StoredResult>,
        summary: Option<&serde_json::Value>,
    ) -> Option<String> {
        let median = result?.median_ms?;
        let drop = if d.step_then_ms.is_some() && d.drop_pct.is_some() {
            format!(": drop {}", signed_percent(d.drop_pct))
        } else {
            String::new()
        };
        let count = |field: &str| {
            whole(summary, field).map_or_else(|| MISSING.to_owned(), |n| n.to_string())
        };
        Some(format!(
            "now: step {} ms, utilisation {} = floor / step (MBU {}, MFU {}: the memory and \
             compute shares of the step){drop}; all {} steps of {} processes pooled: median {} ms, \
             p90 {} ms, p99 {} ms",
            ms(self.step_now_ms),
            pct(self.util_now),
            pct(self.mbu_now),
            pct(self.mfu_now),
            count("n"),
            count("repeats"),
            ms(Some(median)),
            ms(num(summary, "p90_ms")),
            ms(num(summary, "p99_ms")),
        ))
    }
}

/// Whether a reader should look at a case: anything but a plain pass or a new case, or a
/// changed floor.
fn needs_attention(d: &Decision) -> bool {
    !matches!(d.verdict, Verdict::Pass | Verdict::New) || d.floor_changed
}

/// How urgently a verdict needs a reader's eyes: reports list the worst first.
#[must_use]
pub fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Regressed => 0,
        Verdict::Invalid => 1,
        Verdict::Error => 2,
        Verdict::Inconclusive => 3,
        Verdict::Missing => 4,
        Verdict::Improved => 5,
        Verdict::New => 6,
        Verdict::Pass => 7,
    }
}

/// A count in a stored summary (`n`, `repeats`).
fn whole(value: Option<&serde_json::Value>, field: &str) -> Option<usize> {
    value
        .and_then(|v| v.get(field))
        .and_then(serde_json::Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn num(value: Option<&serde_json::Value>, field: &str) -> Option<f64> {
    value
        .and_then(|v| v.get(field))
        .and_then(serde_json::Value::as_f64)
}

impl RunReport {
    /// Build the report of `run` from its judgements (one per case, plus missing cases).
    #[must_use]
    pub fn build(
        run: &StoredRun,
        judgements: &[Judgement],
        fail_on: &[Verdict],
        baselines_promoted: bool,
    ) -> RunReport {
        let mut cases: Vec<CaseReport> = judgements
            .iter()
            .map(|j| {
                let result = run.results.iter().find(|r| r.key == j.key);
                let summary = result.and_then(|r| r.summary_json.as_ref());
                let reading = Reading::of(&j.decision, result, j.baseline.as_ref());
                CaseReport {
                    case: j.key.to_string(),
                    key: j.key.clone(),
                    point: j.key.point(),
                    axes: j.key.axes.as_map().clone(),
                    verdict: j.decision.verdict,
                    floor_ms: result.and_then(|r| r.floor_ms),
                    bound: result
                        .and_then(|r| r.floor_json.as_ref())
                        .and_then(|f| f.get("bound"))
                        .and_then(|b| b.as_str())
                        .map(str::to_owned),
                    median_ms: result.and_then(|r| r.median_ms),
                    p90_ms: num(summary, "p90_ms"),
                    p99_ms: num(summary, "p99_ms"),
                    repeat_spread_pct: num(summary, "repeat_spread_pct"),
                    n: whole(summary, "n"),
                    repeats: whole(summary, "repeats"),
                    utilisation: result.and_then(|r| r.utilisation),
                    mbu: result.and_then(|r| r.mbu),
                    mfu: result.and_then(|r| r.mfu),
                    baseline: j.baseline.clone(),
                    drop_pct: j.decision.deciding_drop().1,
                    drop_stat: j.decision.deciding_drop().0,
                    drop_note: drop_note(&j.decision),
                    threshold_pct: j.threshold_pct,
                    decision: j.decision.clone(),
                    env_changes: j.env_changes.clone(),
                    error: result.and_then(|r| r.error.clone()),
                    stderr_tail: result.and_then(|r| r.stderr_tail.clone()),
                    then_line: reading.then_line(&j.decision, j.baseline.as_ref()),
                    now_line: reading.now_line(&j.decision, result, summary),
                    util_then: reading.util_then,
                    util_now: reading.util_now,
                    step_then_ms: reading.step_then_ms,
                    step_now_ms: reading.step_now_ms,
                    mbu_now: reading.mbu_now,
                    mfu_now: reading.mfu_now,
                    fails_gate: fail_on.contains(&j.decision.verdict),
                    attention: needs_attention(&j.decision),
                    gpu_state: result.and_then(|r| r.gpu_state_json.clone()),
                    gpu_notes: result
                        .and_then(|r| r.gpu_state_json.as_ref())
                        .map(gpu_notes)
                        .unwrap_or_default(),
                    energy_line: j.decision.energy.as_ref().map(|e| energy_line(&e.now)),
                    trend: Vec::new(),
                    evidence: None,
                    nsight: Vec::new(),
                    page_url: None,
                }
            })
            .collect();
        cases.sort_by(|a, b| {
            severity(a.verdict)
                .cmp(&severity(b.verdict))
                .then_with(|| a.key.cmp(&b.key))
        });
        let counts = count(&cases);
        let verdicts: Vec<Verdict> = cases.iter().map(|c| c.verdict).collect();
        let mut report = RunReport {
            schema_version: SCHEMA_VERSION,
            run: RunInfo {
                id: run.summary.id.0,
                started_at: run.summary.started_at.to_string(),
                finished_at: run.summary.finished_at.to_string(),
                git_sha: run.summary.git_sha.clone(),
                branch: run.summary.branch.clone(),
                trigger: run.summary.trigger.clone(),
                pr_number: run.summary.pr_number,
                gpu_sku: run.summary.gpu_sku.clone(),
                host: run.host.clone(),
                utilgate_version: run.utilgate_version.clone(),
                group: None,
            },
            gate: GateInfo::new(
                !crate::compare::gate_failed(verdicts.iter().copied(), fail_on),
                fail_on,
                counts,
                baselines_promoted,
            ),
            summary: String::new(),
            shared_shift: None,
            suites: Vec::new(),
            cases,
            service: Vec::new(),
            service_readings: Vec::new(),
            service_charts: Vec::new(),
            budget: super::budget::BudgetReport::of_run(run),
            site_url: None,
        };
        report.refresh_summaries();
        report
    }

    /// Link the report to the site published at `url` (`[site] url`, docs/site.md): the index,
    /// and each case's page (the page `utilgate site` writes for it).
    #[must_use]
    pub fn with_site_url(mut self, url: &str) -> RunReport {
        let root = if url.ends_with('/') {
            url.to_owned()
        } else {
            format!("{url}/")
        };
        for case in &mut self.cases {
            let page = super::site::case_page(&case.key, &self.run.gpu_sku);
            case.page_url = Some(format!("{root}{page}"));
        }
        self.site_url = Some(format!("{root}index.html"));
        self
    }

    /// Attach each case's history (oldest first, as the command read it from the store). The
    /// run's own result is marked `current` and appended when the history does not hold it.
    #[must_use]
    pub fn with_trends(mut self, trends: &BTreeMap<CaseKey, Vec<TrendPoint>>) -> RunReport {
        for case in &mut self.cases {
            let mut points = trends.get(&case.key).cloned().unwrap_or_default();
            for p in &mut points {
                p.current = p.run_id == self.run.id;
            }
            let finished = case.error.is_none();
            if !finished {
                points.retain(|p| !p.current);
            } else if case.median_ms.is_some() && !points.iter().any(|p| p.current) {
                points.push(TrendPoint {
                    run_id: self.run.id,
                    started_at: self.run.started_at.clone(),
                    git_sha: self.run.git_sha.clone(),
                    median_ms: case.median_ms,
                    utilisation: case.utilisation,
                    current: true,
                });
            }
            case.trend = points;
        }
        self
    }

    /// The report restricted to one suite (a PR comment and a status cover one suite).
    #[must_use]
    pub fn for_suite(&self, suite: &str) -> RunReport {
        let cases: Vec<CaseReport> = self
            .cases
            .iter()
            .filter(|c| c.key.suite == suite)
            .cloned()
            .collect();
        let (service, service_readings, service_charts) = self.service_of_suite(suite);
        let mut counts = count(&cases);
        for c in &service {
            *counts.entry(c.verdict).or_insert(0) += 1;
        }
        let mut report = RunReport {
            schema_version: self.schema_version,
            run: self.run.clone(),
            gate: GateInfo::new(
                !cases.iter().any(|c| c.fails_gate) && !service.iter().any(|c| c.fails_gate),
                &self.gate.fail_on,
                counts,
                self.gate.baselines_promoted,
            ),
            summary: String::new(),
            shared_shift: None,
            suites: Vec::new(),
            cases,
            service,
            service_readings,
            service_charts,
            budget: self.budget.clone(),
            site_url: self.site_url.clone(),
        };
        report.refresh_summaries();
        report
    }

    pub(super) fn refresh_summaries(&mut self) {
        let mut names: Vec<&str> = self.cases.iter().map(|c| c.key.suite.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        self.suites = names
            .iter()
            .map(|name| {
                let cases: Vec<&CaseReport> =
                    self.cases.iter().filter(|c| c.key.suite == *name).collect();
                let counts = count(cases.iter().copied());
                let passed = !cases.iter().any(|c| c.fails_gate);
                let errors = counts.get(&Verdict::Error).copied().unwrap_or(0);
                let unconfirmed = Unconfirmed::of(cases.iter().copied());
                SuiteReport {
                    name: (*name).to_owned(),
                    passed,
                    state: GateState::of(passed, errors, unconfirmed.as_ref()),
                    unconfirmed,
                    cases: cases.len(),
                    failures: cases
                        .iter()
                        .filter(|c| c.fails_gate && c.verdict != Verdict::Error)
                        .count(),
                    errors,
                    skipped: counts.get(&Verdict::Missing).copied().unwrap_or(0),
                    attention: cases.iter().filter(|c| c.attention).count(),
                    summary: summary_line(&cases, &self.run.gpu_sku),
                    axes: axis_names(cases.iter().copied()),
                    counts,
                }
            })
            .collect();
        let all: Vec<&CaseReport> = self.cases.iter().collect();
        self.summary = summary_line(&all, &self.run.gpu_sku);
        self.gate.unconfirmed = Unconfirmed::of(all.iter().copied());
        let judged: Vec<(&crate::compare::Decision, f64)> = self
            .cases
            .iter()
            .map(|c| (&c.decision, c.threshold_pct))
            .collect();
        self.shared_shift = crate::compare::common_mode(&judged).map(|shift| {
            let cause = crate::compare::SharedCause::of(
                self.cases.iter().map(|c| &c.decision),
                self.cases.iter().flat_map(|c| c.env_changes.iter()),
            );
            shift.describe(&cause)
        });
        if let Some(shift) = &self.shared_shift {
            self.summary = format!("{} {shift}.", self.summary);
        }
        self.refresh_service_summaries();
        self.gate.state = GateState::of(
            self.gate.passed,
            self.gate.errors,
            self.gate.unconfirmed.as_ref(),
        );
    }
}

/// The axis names of `cases`, sorted, each once.
#[must_use]
pub fn axis_names<'a>(cases: impl IntoIterator<Item = &'a CaseReport>) -> Vec<String> {
    let mut names: Vec<String> = cases
        .into_iter()
        .flat_map(|c| c.axes.keys().cloned())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

pub(super) fn count<'a>(
    cases: impl IntoIterator<Item = &'a CaseReport>,
) -> BTreeMap<Verdict, usize> {
    let mut counts = BTreeMap::new();
    for c in cases {
        *counts.entry(c.verdict).or_insert(0) += 1;
    }
    counts
}

/// One sentence a reader takes in at a glance: the worst news first, and a quiet line when
/// nothing changed. `cases` is in report order (worst first).
#[must_use]
pub fn summary_line(cases: &[&CaseReport], gpu_sku: &str) -> String {
    let n = cases.len();
    let plural = |k: usize, word: &str| {
        if k == 1 {
            format!("{k} {word}")
        } else {
            format!("{k} {word}s")
        }
    };
    if n == 0 {
        return format!("No cases on {gpu_sku}.");
    }
    let counts = count(cases.iter().copied());
    let failing: Vec<&&CaseReport> = cases.iter().filter(|c| c.fails_gate).collect();
    if let Some(worst) = failing.first() {
        let parts: Vec<String> = count(failing.iter().map(|c| **c))
            .iter()
            .map(|(v, k)| format!("{k} {v}"))
            .collect();
        let detail = worst.drop_pct.map_or_else(
            || format!("; first: {}", worst.case),
            |d| format!("; worst: {}, drop {:.1}%", worst.case, d + 0.0),
        );
        return format!(
            "Gate failed on {gpu_sku}: {} of {}{detail}.",
            parts.join(", "),
            plural(n, "case")
        );
    }
    if let Some(k) = counts.get(&Verdict::Error) {
        let first = cases
            .iter()
            .find(|c| c.verdict == Verdict::Error)
            .map_or_else(String::new, |c| format!("; first: {}", c.case));
        return format!(
            "Not measured on {gpu_sku}: {k} of {} could not be measured{first}.",
            plural(n, "case")
        );
    }
    if let Some(u) = Unconfirmed::of(cases.iter().copied()) {
        let inconclusive = counts.get(&Verdict::Inconclusive).copied().unwrap_or(0);
        return format!(
            "Could not tell on {gpu_sku}: {inconclusive} of {} inconclusive; the largest unconfirmed drop is {} on {}, beyond its {}% threshold.",
            plural(n, "case"),
            u.figure(),
            u.case,
            u.threshold_pct,
        );
    }
    let noteworthy: Vec<String> = counts
        .iter()
        .filter(|(v, _)| **v != Verdict::Pass)
        .map(|(v, k)| format!("{k} {v}"))
        .collect();
    if noteworthy.is_empty() {
        format!(
            "All {} pass on {gpu_sku}; no change beyond the thresholds.",
            plural(n, "case")
        )
    } else {
        format!(
            "Gate passed on {gpu_sku}: {} ({}).",
            plural(n, "case"),
            noteworthy.join(", ")
        )
    }
}

/// Readable lines from the GPU state a sampler stored: scalar and list fields as `key: value`,
/// anything naming throttling or power first. Unknown shapes give no lines, never an error.
#[must_use]
pub fn gpu_notes(state: &serde_json::Value) -> Vec<String> {
    let Some(map) = state.as_object() else {
        return Vec::new();
    };
    let mut lines: Vec<(bool, String)> = map
        .iter()
        .filter_map(|(key, value)| {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Array(items) => {
                    if items.is_empty() {
                        "none".to_owned()
                    } else {
                        items
                            .iter()
                            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                }
                serde_json::Value::Null | serde_json::Value::Object(_) => return None,
                other => other.to_string(),
            };
            let urgent = key.contains("throttl") || key.contains("power") || key.contains("event");
            Some((!urgent, format!("{key}: {text}")))
        })
        .collect();
    lines.sort();
    lines.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(floor_changed: bool) -> Decision {
        let mut d = crate::compare::missing_decision(None);
        d.verdict = Verdict::Pass;
        d.step_now_ms = Some(5.0);
        d.util_now = Some(0.4);
        d.step_then_ms = Some(4.0);
        d.util_then = Some(0.5);
        d.drop_pct = Some(20.0);
        d.repeats_then = 3;
        d.floor_changed = floor_changed;
        d
    }

    #[test]
    fn a_drop_is_named_only_when_it_is_not_one_minus_util_over_util_then() {
        assert_eq!(drop_note(&judged(false)), None);
        assert_eq!(drop_note(&judged(true)).as_deref(), Some("step"));
    }

    #[test]
    fn the_then_line_is_the_reference_the_verdict_used_and_names_its_baseline() {
        let d = judged(false);
        let base = BaselineRef {
            run_id: 5,
            started_at: None,
            git_sha: Some("fedcba9876543210".into()),
            // The baseline result's own median differs from the reference level: not shown.
            median_ms: Some(3.9),
            utilisation: Some(0.513),
        };
        let reading = Reading::of(&d, None, Some(&base));
        assert_eq!(
            (reading.step_then_ms, reading.util_then),
            (Some(4.0), Some(0.5))
        );
        assert_eq!(
            reading.then_line(&d, Some(&base)).as_deref(),
            Some(
                "then: step 4.000 ms, utilisation 50.0%, the reference the verdict used: 3 \
                 processes from baseline run 5 @ fedcba9"
            )
        );
        // Without a reference in the decision, the baseline's median, said to be uncompared.
        let unjudged = crate::compare::missing_decision(None);
        let reading = Reading::of(&unjudged, None, Some(&base));
        assert_eq!(
            (reading.step_then_ms, reading.util_then),
            (Some(3.9), Some(0.513))
        );
        assert_eq!(
            reading.then_line(&unjudged, Some(&base)).as_deref(),
            Some(
                "then: baseline run 5 @ fedcba9, median step 3.900 ms, utilisation 51.3% (not compared)"
            )
        );
    }
}
