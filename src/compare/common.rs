//! A common-mode shift: most cases of a grid moved together by a similar factor. The cause is
//! named only as far as the run supports it: the machine when its canary moved, the environment
//! when the reported versions changed, neither otherwise. It only informs: a dependency upgrade
//! that slows every case alike is exactly what the gate must still fail. Pure.

use super::Decision;
use crate::case::Verdict;

/// Cases a grid needs before a shared shift can be told from chance.
const MIN_CASES: usize = 4;
/// The share of judged cases that must have moved beyond their threshold, the same way.
const MIN_SHARE: f64 = 2.0 / 3.0;

/// Most cases moved together.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonMode {
    /// Cases that moved beyond their threshold in the shared direction, of those judged.
    pub moved: usize,
    pub judged: usize,
    /// The median drop of the moved cases (percent; negative: they got faster).
    pub median_drop_pct: f64,
}

/// What the run knows about a shift the whole grid shares: the sentence names only what the
/// evidence supports.
#[derive(Debug, Clone, PartialEq)]
pub enum SharedCause {
    /// The machine canary moved beyond its noise (its description).
    Machine(String),
    /// The reported environment changed under the cases (each change once).
    Environment(Vec<String>),
    /// The canary ran and held steady.
    CanarySteady,
    /// No canary, no environment change: nothing tells the machine from the code.
    Unknown,
}

impl SharedCause {
    /// The cause the decisions and their environment changes support, the canary first.
    #[must_use]
    pub fn of<'a>(
        decisions: impl IntoIterator<Item = &'a Decision>,
        env_changes: impl IntoIterator<Item = &'a super::EnvChange>,
    ) -> SharedCause {
        let mut canary = None;
        let mut steady = false;
        for d in decisions {
            match &d.canary {
                Some(c) if c.beyond_noise => {
                    canary.get_or_insert_with(|| c.describe());
                }
                Some(_) => steady = true,
                None => {}
            }
        }
        if let Some(c) = canary {
            return SharedCause::Machine(c);
        }
        let mut changes: Vec<String> = env_changes.into_iter().map(ToString::to_string).collect();
        changes.sort();
        changes.dedup();
        if !changes.is_empty() {
            SharedCause::Environment(changes)
        } else if steady {
            SharedCause::CanarySteady
        } else {
            SharedCause::Unknown
        }
    }
}

impl CommonMode {
    /// The summary's sentence, naming the cause only as far as `cause` supports it.
    #[must_use]
    pub fn describe(&self, cause: &SharedCause) -> String {
        let way = if self.median_drop_pct >= 0.0 {
            format!("dropped by a median {:.1}%", self.median_drop_pct)
        } else {
            format!("rose by a median {:.1}%", -self.median_drop_pct)
        };
        let moved = format!("{} of {} cases {way} together", self.moved, self.judged);
        match cause {
            SharedCause::Machine(canary) => format!(
                "{moved}, and the machine canary moved with them ({canary}): more likely the \
                 machine than the code"
            ),
            SharedCause::Environment(changes) => {
                let shown: Vec<&str> = changes.iter().take(3).map(String::as_str).collect();
                let more = changes.len().saturating_sub(3);
                let more = if more > 0 {
                    format!(", {more} more")
                } else {
                    String::new()
                };
                format!(
                    "{moved}, and the environment changed under them ({}{more}): the likely \
                     shared cause",
                    shown.join(", ")
                )
            }
            SharedCause::CanarySteady => format!(
                "{moved} while the machine canary held steady: more likely the code than the \
                 machine"
            ),
            SharedCause::Unknown => format!(
                "{moved}; this run had no machine canary to tell the machine from the code \
                 (enable [canary], or rerun on a quiet runner)"
            ),
        }
    }
}

/// Whether the judged cases (each decision with its threshold, percent) moved together: at
/// least 4 judged, two thirds of them beyond their threshold in the same direction, and those
/// within a factor of two of their median drop (a similar factor, not a few large outliers).
#[must_use]
pub fn common_mode(cases: &[(&Decision, f64)]) -> Option<CommonMode> {
    let judged: Vec<(f64, f64)> = cases
        .iter()
        .filter(|(d, _)| {
            matches!(
                d.verdict,
                Verdict::Pass | Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
            )
        })
        .filter_map(|(d, t)| d.drop_pct.filter(|x| x.is_finite()).map(|x| (x, *t)))
        .collect();
    if judged.len() < MIN_CASES {
        return None;
    }
    let best = [1.0, -1.0]
        .into_iter()
        .map(|sign: f64| {
            let mut moved: Vec<f64> = judged
                .iter()
                .filter(|(x, t)| sign * x > *t)
                .map(|(x, _)| *x)
                .collect();
            moved.sort_by(f64::total_cmp);
            moved
        })
        .max_by_key(Vec::len)?;
    if (best.len() as f64) < MIN_SHARE * judged.len() as f64 {
        return None;
    }
    let median = crate::stats::quantile(&best, 0.5);
    let similar = best
        .iter()
        .filter(|x| (**x / median) >= 0.5 && (**x / median) <= 2.0)
        .count();
    ((similar as f64) >= MIN_SHARE * judged.len() as f64).then_some(CommonMode {
        moved: similar,
        judged: judged.len(),
        median_drop_pct: median,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::error_decision;

    fn d(verdict: Verdict, drop: f64) -> Decision {
        let mut d = error_decision("x");
        d.verdict = verdict;
        d.drop_pct = Some(drop);
        d
    }

    #[test]
    fn a_whole_grid_ten_percent_slower_is_flagged() {
        let ds: Vec<Decision> = [9.1, 8.7, 9.6, 10.2, 8.9, 0.5]
            .iter()
            .map(|x| d(Verdict::Regressed, *x))
            .collect();
        let cases: Vec<(&Decision, f64)> = ds.iter().map(|d| (d, 3.0)).collect();
        let c = common_mode(&cases).expect("flagged");
        assert_eq!((c.moved, c.judged), (5, 6));
        let text = c.describe(&SharedCause::of(&ds, []));
        assert_eq!(
            text,
            "5 of 6 cases dropped by a median 9.1% together; this run had no machine canary to \
             tell the machine from the code (enable [canary], or rerun on a quiet runner)"
        );
    }

    #[test]
    fn the_shared_cause_named_is_the_one_the_run_supports() {
        let torch = crate::compare::EnvChange::Changed {
            key: "torch".to_owned(),
            then: "2.5.1".to_owned(),
            now: "2.6.0".to_owned(),
        };
        let plain = vec![d(Verdict::Regressed, 9.0)];
        let c = CommonMode {
            moved: 4,
            judged: 4,
            median_drop_pct: 9.0,
        };
        let env = c.describe(&SharedCause::of(&plain, [&torch, &torch]));
        assert!(
            env.ends_with(
                "the environment changed under them (torch 2.5.1 -> 2.6.0): the likely shared cause"
            ),
            "{env}"
        );
        assert!(!env.contains("machine"), "{env}");
        let mut steady = d(Verdict::Regressed, 9.0);
        steady.canary = Some(crate::compare::CanaryShift {
            figure: "stream_ms".to_owned(),
            then_ms: 4.0,
            now_ms: 4.01,
            shift: 0.0025,
            se: 0.01,
            beyond_noise: false,
        });
        let held = c.describe(&SharedCause::of([&steady], []));
        assert!(
            held.ends_with("more likely the code than the machine"),
            "{held}"
        );
        let mut moved = steady.clone();
        if let Some(canary) = moved.canary.as_mut() {
            canary.now_ms = 4.4;
            canary.shift = 0.095;
            canary.beyond_noise = true;
        }
        let machine = c.describe(&SharedCause::of([&moved], [&torch]));
        assert!(
            machine.contains("the machine canary moved with them (host"),
            "{machine}"
        );
    }

    #[test]
    fn one_regression_or_a_small_grid_is_not_common_mode() {
        let mut ds: Vec<Decision> = (0..10).map(|_| d(Verdict::Pass, 0.4)).collect();
        ds.push(d(Verdict::Regressed, 12.0));
        let cases: Vec<(&Decision, f64)> = ds.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
        let few: Vec<Decision> = (0..3).map(|_| d(Verdict::Regressed, 9.0)).collect();
        let cases: Vec<(&Decision, f64)> = few.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
        // Errors are not judged cases.
        let errs: Vec<Decision> = (0..6).map(|_| error_decision("boom")).collect();
        let cases: Vec<(&Decision, f64)> = errs.iter().map(|d| (d, 3.0)).collect();
        assert!(common_mode(&cases).is_none());
    }
}
