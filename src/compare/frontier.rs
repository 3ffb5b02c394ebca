//! The verdict of a serving sweep (#32): the frontier is judged, not its points. Pure.
//!
//! Each file of a sweep is one point (one request rate or concurrency limit) of one run of the
//! whole sweep; the points become a throughput-interactivity frontier (`serve::Frontier`), and
//! the decision compares the throughput per GPU the baseline's frontier and tonight's reach at a
//! set of interactivity levels (the suite's `interactivity_levels`, else the interactivity of the
//! baseline's frontier points). A regression at the interactivity a product is sold at cannot
//! hide behind unchanged extremes, and a point that merely moved along the curve (a little more
//! throughput for a little less interactivity) is no loss.
//!
//! The noise of the throughput at a level comes from
//! * repeated sweeps (`repeats >= 2`): the frontier of each run of the sweep gives one value per
//!   run, and the two sides are compared by Welch's t-test on those values;
//! * else each point's per-request spread, where the files hold per-request arrays
//!   (`--save-detailed`): a bootstrap over each point's requests (their TPOTs, so the median
//!   TPOT and with it the point's interactivity) redraws the frontier `BOOTSTRAP` times; the
//!   spread of the level's throughput over the redraws is its standard error. A point's
//!   throughput is kept as measured: with the same dataset and seed every run sends the same
//!   prompts, so redrawing the prompt mix would count as noise what never varies;
//! * else none: a change beyond the threshold is `inconclusive`, naming what would resolve it.
//!
//! The verdict at each level is the service gate's two-level rule: worse by more than
//! `max_change_pct` and beyond the noise at the grid-corrected level (`family_alpha` over every
//! level of every case), one-sided.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

use super::service::{
    FrontierFigures, MetricDecision, ServeDecision, ServePolicy, combine, invalid_reason,
    settings_diff,
};
use crate::case::Verdict;
use crate::serve::{
    Direction, Frontier, FrontierPoint, PointError, ServeResult, Settings, SweepAxis, area_between,
};

/// Redraws of a sweep's frontier from its points' requests.
const BOOTSTRAP: usize = 400;

/// A fixed seed: the same files always get the same verdict.
const BOOTSTRAP_SEED: u64 = 0x5eed_f00d;

/// One file of a sweep with its place in the sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepFile {
    pub result: ServeResult,
    /// The point on the swept axis, as the key writes it.
    pub point: String,
    /// Which run of the whole sweep the file belongs to (0 first).
    pub sweep_repeat: u32,
    pub gpus: u32,
}

/// The points of one side with their place on the frontier: files whose point cannot be placed
/// are named.
struct Side {
    /// One frontier per run of the sweep, in run order.
    runs: Vec<Vec<FrontierPoint>>,
    /// Per point (in the order of the pooled frontier's input), the per-request TPOTs of each
    /// run's file, when every file has them.
    tpots: Option<Vec<Vec<f64>>>,
    /// The mean over runs of each point.
    pooled: Vec<FrontierPoint>,
    /// Requests behind the per-request TPOTs (0 without them).
    requests: usize,
}

fn side_of(files: &[SweepFile]) -> Result<Side, String> {
    let mut points: Vec<String> = Vec::new();
    for f in files {
        if !points.contains(&f.point) {
            points.push(f.point.clone());
        }
    }
    points.sort_by(|a, b| {
        SweepAxis::order_value(a)
            .total_cmp(&SweepAxis::order_value(b))
            .then(a.cmp(b))
    });
    let runs_n = files
        .iter()
        .map(|f| f.sweep_repeat)
        .max()
        .map_or(0, |m| m + 1);
    let mut runs: Vec<Vec<FrontierPoint>> = vec![Vec::new(); runs_n as usize];
    let mut pooled = Vec::with_capacity(points.len());
    let mut tpots: Option<Vec<Vec<f64>>> = Some(Vec::new());
    let mut requests = 0;
    for point in &points {
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for f in files.iter().filter(|f| &f.point == point) {
            let p = FrontierPoint::of_result(point.clone(), &f.result, f.gpus).map_err(|e| {
                let what = match e {
                    PointError::NoThroughput => "no output_throughput",
                    PointError::NoTpot => "no median_tpot_ms, mean_tpot_ms or median_itl_ms",
                };
                format!(
                    "point {point} (run {} of the sweep) has {what}, so it has no place on the \
                     frontier",
                    f.sweep_repeat + 1
                )
            })?;
            xs.push(p.interactivity_tok_s_user);
            ys.push(p.throughput_tok_s_gpu);
            runs[f.sweep_repeat as usize].push(p);
            match (&mut tpots, f.result.samples.as_ref()) {
                (Some(t), Some(s)) if !s.tpots_ms.is_empty() && runs_n == 1 => {
                    requests += s.tpots_ms.len();
                    t.push(s.tpots_ms.clone());
                }
                _ => tpots = None,
            }
        }
        pooled.push(FrontierPoint {
            point: point.clone(),
            interactivity_tok_s_user: mean(&xs),
            throughput_tok_s_gpu: mean(&ys),
        });
    }
    Ok(Side {
        runs,
        tpots,
        pooled,
        requests,
    })
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

fn sd(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt()
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// The throughput a frontier reaches at `level`, allowing a frontier that stops just short of
/// it (within `tolerance_pct` of interactivity) its last point: one run's top point lands a
/// little left or right of another's by noise alone.
fn reach(f: &Frontier, level: f64, tolerance_pct: f64) -> Option<f64> {
    f.throughput_at(level).or_else(|| {
        let (_, hi) = f.span()?;
        (level <= hi * (1.0 + tolerance_pct / 100.0))
            .then(|| f.points.last().map(|p| p.throughput_tok_s_gpu))
            .flatten()
    })
}

/// What one side says about a level: its value and, where measurable, the values its runs or
/// redraws give (the spread of which is the noise).
struct LevelEvidence {
    value: f64,
    /// Per-run values (Welch) or bootstrap redraws.
    spread: Spread,
}

enum Spread {
    Runs(Vec<f64>),
    Redraws(Vec<f64>),
    None,
}

fn evidence_at(side: &Side, level: f64, tol: f64, redraws: &[Frontier]) -> Option<LevelEvidence> {
    let value = reach(&Frontier::of_points(&side.pooled), level, tol)?;
    let spread = if side.runs.len() >= 2 {
        let per_run: Option<Vec<f64>> = side
            .runs
            .iter()
            .map(|r| reach(&Frontier::of_points(r), level, tol))
            .collect();
        per_run.map_or(Spread::None, Spread::Runs)
    } else if redraws.is_empty() {
        Spread::None
    } else {
        Spread::Redraws(
            redraws
                .iter()
                .filter_map(|f| reach(f, level, tol))
                .collect(),
        )
    };
    Some(LevelEvidence { value, spread })
}

/// `BOOTSTRAP` frontiers of a one-run side redrawn from its points' requests (none without
/// per-request arrays).
fn redraw(side: &Side, seed: u64) -> Vec<Frontier> {
    let Some(tpots) = &side.tpots else {
        return Vec::new();
    };
    let mut rng = StdRng::seed_from_u64(seed);
    (0..BOOTSTRAP)
        .map(|_| {
            let points: Vec<FrontierPoint> = side
                .pooled
                .iter()
                .zip(tpots)
                .map(|(p, t)| {
                    let mut draw: Vec<f64> = (0..t.len())
                        .map(|_| t[rng.random_range(0..t.len())])
                        .collect();
                    let mut all = t.clone();
                    // The redraw moves the point by its median's change, so the redraws centre
                    // on the file's own figure whichever TPOT statistic it came from.
                    let shift = median(&mut all) / median(&mut draw);
                    FrontierPoint {
                        interactivity_tok_s_user: p.interactivity_tok_s_user * shift,
                        ..p.clone()
                    }
                })
                .collect();
            Frontier::of_points(&points)
        })
        .collect()
}

/// The settings all points of a sweep share: the swept setting, and the prompt count and input
/// tokens (which a sweep may set per point), left out.
fn shared(settings: &Settings, axis: SweepAxis) -> Settings {
    let mut s = settings.clone();
    match axis {
        SweepAxis::RequestRate => s.request_rate = None,
        SweepAxis::MaxConcurrency => s.max_concurrency = None,
    }
    s.num_prompts = None;
    s.total_input_tokens = None;
    s
}

/// This run's side of a sweep, or the verdict and reason that stop it from being compared: no
/// file, failed requests, points that are not one sweep, a point with no place on the frontier.
fn current_side(axis: SweepAxis, current: &[SweepFile]) -> Result<Side, (Verdict, String)> {
    let Some(first) = current.first() else {
        return Err((
            Verdict::Error,
            "The sweep has no result file: the load generator wrote nothing.".to_owned(),
        ));
    };
    let results: Vec<ServeResult> = current.iter().map(|f| f.result.clone()).collect();
    if let Some(reason) = invalid_reason(&results) {
        return Err((Verdict::Invalid, reason));
    }
    let common = shared(&first.result.settings, axis);
    let within: Vec<String> = current
        .iter()
        .skip(1)
        .flat_map(|f| settings_diff(&common, &shared(&f.result.settings, axis)))
        .collect();
    if !within.is_empty() {
        return Err((
            Verdict::Inconclusive,
            format!(
                "The points of this sweep used different settings ({}), so they are not one \
                 sweep.",
                within.join("; ")
            ),
        ));
    }
    side_of(current).map_err(|e| (Verdict::Inconclusive, format!("Not judged: {e}.")))
}

/// Decides a sweep. `baseline` holds the files of the pinned good sweep (None: new);
/// `cases_in_grid` the service cases judged together (the grid correction multiplies it by the
/// levels).
#[must_use]
pub fn decide_sweep(
    axis: SweepAxis,
    baseline: Option<&[SweepFile]>,
    current: &[SweepFile],
    policy: &ServePolicy,
    cases_in_grid: usize,
) -> (ServeDecision, Option<FrontierFigures>) {
    let mut out = ServeDecision {
        verdict: Verdict::Pass,
        metrics: Vec::new(),
        reasons: Vec::new(),
        frontier: None,
    };
    let fail = |mut out: ServeDecision, verdict, reason: String| {
        out.verdict = verdict;
        out.reasons.push(reason);
        (out, None)
    };
    let now = match current_side(axis, current) {
        Ok(s) => s,
        Err((verdict, reason)) => return fail(out, verdict, reason),
    };
    let now_frontier = Frontier::of_points(&now.pooled);
    let mut figures = FrontierFigures {
        axis,
        then: None,
        now: now_frontier.clone(),
        levels: Vec::new(),
        area_lost_pct: None,
        area_gained_pct: None,
    };
    let Some(base_files) = baseline.filter(|b| !b.is_empty()) else {
        out.verdict = Verdict::New;
        out.reasons.push(format!(
            "Frontier recorded: {} points, {} on the frontier (no baseline yet).",
            now.pooled.len(),
            now_frontier.points.len()
        ));
        return (out, Some(figures));
    };
    let diff = baseline_diff(axis, base_files, current);
    if !diff.is_empty() {
        return fail(
            out,
            Verdict::Inconclusive,
            format!(
                "Not compared: the load differs from the baseline's ({}). Sweeps at different \
                 settings are not comparable; accept this run as the new baseline if the change \
                 is intended.",
                diff.join("; ")
            ),
        );
    }
    let then = match side_of(base_files) {
        Ok(s) => s,
        Err(e) => {
            return fail(
                out,
                Verdict::Inconclusive,
                format!("Not judged: the baseline's {e}."),
            );
        }
    };
    let then_frontier = Frontier::of_points(&then.pooled);
    let levels: Vec<f64> = if policy.interactivity_levels.is_empty() {
        then_frontier
            .points
            .iter()
            .map(|p| p.interactivity_tok_s_user)
            .collect()
    } else {
        policy.interactivity_levels.clone()
    };
    let sides = Sides {
        then: &then,
        now: &now,
        now_frontier: &now_frontier,
    };
    judge_levels(&mut out, &sides, &levels, policy, cases_in_grid);
    if let Some(reason) = area_reason(&then_frontier, &now_frontier, &mut figures) {
        out.reasons.push(reason);
    }
    figures.then = Some(then_frontier);
    figures.levels = levels;
    out.verdict = combine(true, &out.metrics);
    if out.metrics.is_empty() {
        out.verdict = Verdict::Inconclusive;
        out.reasons.insert(
            0,
            "No interactivity level lies on both frontiers: set interactivity_levels inside the \
             baseline's range."
                .to_owned(),
        );
        return (out, Some(figures));
    }
    lead_with_largest_loss(&mut out);
    (out, Some(figures))
}

/// The settings that differ from the baseline's: those all points share, then each point's
/// own against the same point of the baseline.
fn baseline_diff(axis: SweepAxis, base: &[SweepFile], current: &[SweepFile]) -> Vec<String> {
    let mut diff = match (base.first(), current.first()) {
        (Some(b), Some(c)) => settings_diff(
            &shared(&b.result.settings, axis),
            &shared(&c.result.settings, axis),
        ),
        _ => Vec::new(),
    };
    for f in current {
        if let Some(b) = base.iter().find(|b| b.point == f.point) {
            for d in settings_diff(&b.result.settings, &f.result.settings) {
                let d = format!("point {}: {d}", f.point);
                if !diff.contains(&d) {
                    diff.push(d);
                }
            }
        }
    }
    diff
}

/// The two sides of a comparison.
struct Sides<'a> {
    then: &'a Side,
    now: &'a Side,
    now_frontier: &'a Frontier,
}

/// One decision per level, the grid correction spanning every level of every case.
fn judge_levels(
    out: &mut ServeDecision,
    sides: &Sides<'_>,
    levels: &[f64],
    policy: &ServePolicy,
    cases_in_grid: usize,
) {
    let tol = policy.max_change_pct;
    let redraw_then = redraw(sides.then, BOOTSTRAP_SEED);
    let redraw_now = redraw(sides.now, BOOTSTRAP_SEED ^ 1);
    let tests = cases_in_grid.max(1) * levels.len().max(1);
    let alpha = policy.stats.family_alpha / tests as f64;
    for &level in levels {
        let Some(then_ev) = evidence_at(sides.then, level, tol, &redraw_then) else {
            out.reasons.push(format!(
                "{level:.1} tok/s/user is beyond the baseline's frontier, so it was not gated."
            ));
            continue;
        };
        let decision = match evidence_at(sides.now, level, tol, &redraw_now) {
            Some(now_ev) => level_decision(level, &then_ev, &now_ev, sides, policy, alpha),
            None => unreached(level, &then_ev, sides.now_frontier, policy.max_change_pct),
        };
        out.metrics.push(decision);
    }
}

/// Puts first the reason of the level where the loss is largest among those with the case's
/// verdict.
fn lead_with_largest_loss(out: &mut ServeDecision) {
    let lead = out
        .metrics
        .iter()
        .filter(|m| m.verdict == out.verdict)
        .max_by(|a, b| {
            a.worse_pct
                .unwrap_or(f64::NEG_INFINITY)
                .total_cmp(&b.worse_pct.unwrap_or(f64::NEG_INFINITY))
        })
        .map(|m| m.reason.clone());
    if let Some(lead) = lead {
        out.reasons.insert(0, lead);
    }
}

/// The area between the frontiers over the interactivity both span, into `figures`, and the
/// sentence that states it.
fn area_reason(then: &Frontier, now: &Frontier, figures: &mut FrontierFigures) -> Option<String> {
    let (lo, hi) = common_span(then, now)?;
    let a = area_between(then, now, lo, hi).filter(|a| a.baseline > 0.0)?;
    let lost = 100.0 * a.loss / a.baseline;
    let gained = 100.0 * a.gain / a.baseline;
    figures.area_lost_pct = Some(lost);
    figures.area_gained_pct = Some(gained);
    Some(format!(
        "Area between the frontiers from {lo:.1} to {hi:.1} tok/s/user: {lost:.1}% of the \
         baseline's lost, {gained:.1}% gained."
    ))
}

fn common_span(a: &Frontier, b: &Frontier) -> Option<(f64, f64)> {
    let (alo, ahi) = a.span()?;
    let (blo, bhi) = b.span()?;
    let (lo, hi) = (alo.max(blo), ahi.min(bhi));
    (hi > lo).then_some((lo, hi))
}

/// The metric name of a level: what is judged, at which interactivity.
#[must_use]
pub fn level_metric(level: f64) -> String {
    format!("tok/s/gpu at {level:.1} tok/s/user")
}

/// Tonight's frontier does not reach a level the baseline's did, even allowing the tolerance:
/// the interactivity itself fell by more than the threshold.
fn unreached(level: f64, b: &LevelEvidence, now: &Frontier, threshold: f64) -> MetricDecision {
    let top = now.span().map_or(0.0, |(_, hi)| hi);
    MetricDecision {
        metric: level_metric(level),
        direction: Direction::Higher,
        verdict: Verdict::Regressed,
        then: Some(b.value),
        now: None,
        worse_pct: Some(100.0),
        interval_pct: None,
        p_value: None,
        noise_pct: None,
        per_request: false,
        repeats_now: 0,
        repeats_then: 0,
        reason: format!(
            "{}: not reached: tonight's frontier ends at {top:.1} tok/s/user, more than the \
             {threshold}% threshold below {level:.1}, where the baseline served {:.1} tok/s per \
             GPU.",
            level_metric(level),
            b.value
        ),
    }
}

/// The standard error of one side's value at a level (in its unit), with the runs it came
/// from where it came from runs.
fn standard_error(
    e: &LevelEvidence,
    requests: usize,
    floor_pct: f64,
) -> Option<(f64, Option<usize>)> {
    match &e.spread {
        Spread::Runs(v) => {
            let floor = e.value * floor_pct / 100.0 / (v.len() as f64).sqrt();
            Some(((sd(v) / (v.len() as f64).sqrt()).max(floor), Some(v.len())))
        }
        Spread::Redraws(v) if v.len() >= 2 => {
            let floor = e.value * floor_pct / 100.0 / (requests.max(1) as f64).sqrt();
            Some((sd(v).max(floor), None))
        }
        _ => None,
    }
}

fn level_decision(
    level: f64,
    then_ev: &LevelEvidence,
    now_ev: &LevelEvidence,
    sides: &Sides<'_>,
    policy: &ServePolicy,
    alpha: f64,
) -> MetricDecision {
    let threshold = policy.max_change_pct;
    let worse = 100.0 * (then_ev.value - now_ev.value) / then_ev.value;
    let floor = policy.stats.min_noise_pct;
    let se_b = standard_error(then_ev, sides.then.requests, floor);
    let se_n = standard_error(now_ev, sides.now.requests, floor);
    // One side's noise stands for the other's where only one side can measure it.
    let (se_b, se_n) = match (se_b, se_n) {
        (Some(x), Some(y)) => (Some(x), Some(y)),
        (Some(x), None) => (Some(x), Some((x.0 * now_ev.value / then_ev.value, None))),
        (None, Some(y)) => (Some((y.0 * then_ev.value / now_ev.value, None)), Some(y)),
        (None, None) => (None, None),
    };
    let per_request =
        matches!(then_ev.spread, Spread::Redraws(_)) || matches!(now_ev.spread, Spread::Redraws(_));
    let runs = |e: &LevelEvidence| match &e.spread {
        Spread::Runs(v) => v.len(),
        _ => 1,
    };
    let mut decision = MetricDecision {
        metric: level_metric(level),
        direction: Direction::Higher,
        verdict: Verdict::Pass,
        then: Some(then_ev.value),
        now: Some(now_ev.value),
        worse_pct: Some(worse),
        interval_pct: None,
        p_value: None,
        noise_pct: None,
        per_request,
        repeats_now: runs(now_ev),
        repeats_then: runs(then_ev),
        reason: String::new(),
    };
    let (Some((sb, rb)), Some((sn, rn))) = (se_b, se_n) else {
        return without_noise(decision, threshold);
    };
    let se_pct = 100.0 * (sb * sb + sn * sn).sqrt() / then_ev.value;
    decision.noise_pct = Some(se_pct);
    // Welch-Satterthwaite degrees of freedom where both sides' noise comes from runs.
    let df = match (rb, rn) {
        (Some(nb), Some(nn)) if nb >= 2 && nn >= 2 => {
            let (vb, vn) = (sb * sb, sn * sn);
            Some(
                (vb + vn).powi(2)
                    / (vb * vb / (nb as f64 - 1.0) + vn * vn / (nn as f64 - 1.0))
                        .max(f64::MIN_POSITIVE),
            )
        }
        _ => None,
    };
    let score = worse / se_pct;
    let tails = df
        .and_then(|df| StudentsT::new(0.0, 1.0, df).ok())
        .map(|t| (t.cdf(score), t.inverse_cdf(1.0 - alpha)))
        .or_else(|| {
            Normal::new(0.0, 1.0)
                .ok()
                .map(|n| (n.cdf(score), n.inverse_cdf(1.0 - alpha)))
        });
    let (below, quantile) = tails.unwrap_or((0.5, f64::INFINITY));
    let (p_worse, p_better) = (1.0 - below, below);
    decision.p_value = Some(p_worse);
    decision.interval_pct = Some((worse - quantile * se_pct, worse + quantile * se_pct));
    decision.verdict = if worse > threshold && p_worse < alpha {
        Verdict::Regressed
    } else if worse > threshold {
        Verdict::Inconclusive
    } else if -worse > threshold && p_better < alpha {
        Verdict::Improved
    } else {
        Verdict::Pass
    };
    let source = match (rb, rn) {
        (Some(a), Some(c)) => format!("{c} runs of the sweep now, {a} in the reference"),
        _ => "each point's per-request spread, bootstrapped".to_owned(),
    };
    let resolve = if decision.verdict == Verdict::Inconclusive {
        if per_request {
            "; repeat the sweep (repeats >= 3) to resolve it"
        } else {
            "; more runs of the sweep (repeats) would resolve it"
        }
    } else {
        ""
    };
    let verdict = verdict_words(decision.verdict, threshold);
    let (lo, hi) = decision.interval_pct.unwrap_or((worse, worse));
    decision.reason = format!(
        "{}: {} ({:.1} then, {:.1} now tok/s per GPU): {verdict}; the noise allows {lo:+.1}% to \
         {hi:+.1}% (one-sided p = {p_worse:.2e}; {source}){resolve}.",
        decision.metric,
        change(worse),
        then_ev.value,
        now_ev.value,
    );
    decision
}

/// A level whose noise neither side can measure: a change beyond the threshold cannot be
/// resolved, and says what would resolve it.
fn without_noise(mut m: MetricDecision, threshold: f64) -> MetricDecision {
    let (then, now, worse) = (
        m.then.unwrap_or(0.0),
        m.now.unwrap_or(0.0),
        m.worse_pct.unwrap_or(0.0),
    );
    let big = worse.abs() > threshold;
    m.verdict = if big {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    m.reason = format!(
        "{}: {} ({then:.1} then, {now:.1} now tok/s per GPU): {}.",
        m.metric,
        change(worse),
        if big {
            format!(
                "more than the {threshold}% threshold, but the noise cannot be measured with \
                 one run of the sweep on each side and no per-request arrays: repeat the \
                 sweep (repeats >= 2) or save per-request arrays (vllm bench serve \
                 --save-detailed)"
            )
        } else {
            format!("within the {threshold}% threshold")
        }
    );
    m
}

fn verdict_words(verdict: Verdict, threshold: f64) -> String {
    match verdict {
        Verdict::Regressed => format!("more than the {threshold}% threshold and beyond the noise"),
        Verdict::Inconclusive => {
            format!("more than the {threshold}% threshold, but not beyond the noise")
        }
        Verdict::Improved => "better beyond the threshold and the noise (informational)".to_owned(),
        _ => format!("within the {threshold}% threshold or the noise"),
    }
}

fn change(worse: f64) -> String {
    if worse >= 0.0 {
        format!("{worse:.1}% lower")
    } else {
        format!("{:.1}% higher", -worse)
    }
}

#[cfg(test)]
mod tests;
