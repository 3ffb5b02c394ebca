//! What a set of decisions means for the run: which cases are missing, whether the gate fails,
//! which results may become the baseline and which ones deserve a second look. Pure.

use std::collections::BTreeSet;

use super::Decision;
use crate::case::{CaseKey, Verdict};

/// Keys that have a baseline but are absent from this run, sorted and without duplicates.
#[must_use]
pub fn missing_keys(baseline: &[CaseKey], run: &[CaseKey]) -> Vec<CaseKey> {
    let ran: BTreeSet<&CaseKey> = run.iter().collect();
    let missing: BTreeSet<&CaseKey> = baseline.iter().filter(|k| !ran.contains(k)).collect();
    missing.into_iter().cloned().collect()
}

/// Whether a result may move the baseline pointer when its run passes on the baseline branch:
/// only `pass`, `improved` and `new`. A regression, an error, an invalid or untrusted result and
/// a missing case never move it (a regression moves only by an explicit accept with a reason),
/// nor does a result measured on a machine that moved (the canary shifted beyond its noise).
#[must_use]
pub fn promotable(decision: &Decision) -> bool {
    matches!(
        decision.verdict,
        Verdict::Pass | Verdict::Improved | Verdict::New
    ) && !decision.untrusted
}

/// Whether a run moves baselines at all: only a run on the baseline branch that passed the gate
/// cleanly (no verdict in `fail_on`, no failed case) and was not told `--no-promote`. A failed
/// case never moves any baseline.
#[must_use]
pub fn run_promotes(
    verdicts: &[Verdict],
    fail_on: &[Verdict],
    on_baseline_branch: bool,
    no_promote: bool,
) -> bool {
    on_baseline_branch
        && !no_promote
        && !gate_failed(verdicts.iter().copied(), fail_on)
        && !verdicts.contains(&Verdict::Error)
}

/// Why a run moved no baseline, and what to do, when that matters: some case has no baseline
/// yet (a first run), so "baselines unchanged" alone would leave it never judged. `None` when
/// the run promoted or every case already has a baseline. Pure.
#[must_use]
pub fn unpromoted_note(
    verdicts: &[Verdict],
    fail_on: &[Verdict],
    branch: Option<&str>,
    baseline_branch: &str,
    no_promote: bool,
    run_id: i64,
) -> Option<String> {
    let on_branch = branch == Some(baseline_branch);
    if !verdicts.contains(&Verdict::New) || run_promotes(verdicts, fail_on, on_branch, no_promote) {
        return None;
    }
    let accept =
        format!("`utilgate baseline accept \"\" --run {run_id} --reason \"first baseline\"`");
    let why = if no_promote {
        "--no-promote was given".to_owned()
    } else if gate_failed(verdicts.iter().copied(), fail_on) || verdicts.contains(&Verdict::Error) {
        return Some(
            "baselines unchanged: a case failed or errored, and a failed run never sets baselines; fix it and run again".to_owned(),
        );
    } else if let Some(branch) = branch {
        format!(
            "this run is on branch {branch:?}, and baselines move only on passing runs of the baseline branch {baseline_branch:?} ([gate] baseline_branch)"
        )
    } else {
        format!(
            "this run has no branch (not a git checkout, and no --branch), and baselines move only on passing runs of the baseline branch {baseline_branch:?}"
        )
    };
    Some(format!(
        "baselines unchanged, so the new cases have none yet: {why}. To set them, run with --branch {baseline_branch}, or accept this run's results: {accept}"
    ))
}

/// Whether a result may be accepted by hand, with a reason, as the new baseline: anything that
/// measured something physically possible. An `error`, `missing` or `invalid` result never can.
#[must_use]
pub fn acceptable(decision: &Decision) -> bool {
    !matches!(
        decision.verdict,
        Verdict::Error | Verdict::Missing | Verdict::Invalid
    )
}

/// Whether the gate fails: any verdict listed in `fail_on`.
pub fn gate_failed(verdicts: impl IntoIterator<Item = Verdict>, fail_on: &[Verdict]) -> bool {
    verdicts.into_iter().any(|v| fail_on.contains(&v))
}

/// Whether the case should be re-measured in fresh processes before its verdict is final
/// (when the policy's `confirm_repeats` is above zero). Never for a GPU-guarded, new, invalid
/// or failed case.
#[must_use]
pub fn should_confirm(decision: &Decision) -> bool {
    decision.suspect
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Phase;
    use crate::compare::{Evidence, Policy, decide, error_decision, missing_decision};

    fn key(batch: u64) -> CaseKey {
        CaseKey {
            suite: "decode".into(),
            model: "m".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch,
            context: 4096,
            axes: crate::case::Axes::default(),
            tp: 1,
            ep: 1,
        }
    }

    #[test]
    fn missing_keys_are_those_only_in_the_baseline() {
        let baseline = [key(8), key(1), key(64), key(1)];
        let run = [key(1), key(16)];
        assert_eq!(missing_keys(&baseline, &run), vec![key(8), key(64)]);
        assert!(missing_keys(&[], &run).is_empty());
    }

    #[test]
    fn only_pass_improved_and_new_are_promotable() {
        for verdict in Verdict::ALL {
            let mut d = error_decision("x");
            d.verdict = verdict;
            let want = matches!(verdict, Verdict::Pass | Verdict::Improved | Verdict::New);
            assert_eq!(promotable(&d), want, "{verdict}");
        }
    }

    #[test]
    fn an_error_never_moves_a_baseline() {
        let d = error_decision("harness timed out after 600 s");
        assert!(!promotable(&d));
        assert!(!acceptable(&d), "not even by an explicit accept");
        assert!(!acceptable(&missing_decision(None)));
    }

    #[test]
    fn an_accepted_regression_becomes_the_reference() {
        let ev = |r| Evidence {
            repeats_ms: r,
            floor_ms: 3.0,
        };
        let old = vec![vec![6.0; 50]; 3];
        let slower = vec![vec![6.6; 50]; 3];
        let d = decide(
            Some(&ev(&old)),
            &ev(&slower),
            &[],
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(d.verdict, Verdict::Regressed);
        assert!(
            !promotable(&d),
            "a regression never moves the baseline by itself"
        );
        assert!(acceptable(&d), "but someone may accept it with a reason");
        // Once accepted, the same performance passes against it.
        let again = vec![vec![6.6; 50]; 3];
        let next = decide(
            Some(&ev(&slower)),
            &ev(&again),
            &[],
            &Policy::default(),
            1,
            None,
        );
        assert_eq!(next.verdict, Verdict::Pass);
        assert!(promotable(&next));
    }

    #[test]
    fn gate_fails_on_listed_verdicts_only() {
        let fail_on = [Verdict::Regressed, Verdict::Invalid];
        assert!(!gate_failed(
            [Verdict::Pass, Verdict::Inconclusive, Verdict::Error],
            &fail_on
        ));
        assert!(gate_failed([Verdict::Pass, Verdict::Invalid], &fail_on));
        assert!(!gate_failed([], &fail_on));
        assert!(gate_failed([Verdict::Error], &[Verdict::Error]));
    }

    #[test]
    fn suspects_are_confirmed_guarded_cases_are_not() {
        let ev = |r| Evidence {
            repeats_ms: r,
            floor_ms: 3.0,
        };
        let base = vec![vec![6.0; 50]; 3];
        let slow = vec![vec![6.6; 50]; 3];
        let policy = Policy::default();
        assert!(should_confirm(&decide(
            Some(&ev(&base)),
            &ev(&slow),
            &[],
            &policy,
            1,
            None
        )));
        assert!(!should_confirm(&decide(
            Some(&ev(&base)),
            &ev(&base),
            &[],
            &policy,
            1,
            None
        )));
        let guarded = decide(
            Some(&ev(&base)),
            &ev(&slow),
            &[],
            &policy,
            1,
            Some("throttled"),
        );
        assert!(!should_confirm(&guarded));
    }

    #[test]
    fn a_run_promotes_only_when_clean_on_the_baseline_branch() {
        let fail_on = [Verdict::Regressed, Verdict::Invalid];
        let clean = [Verdict::Pass, Verdict::New, Verdict::Improved];
        assert!(run_promotes(&clean, &fail_on, true, false));
        assert!(!run_promotes(&clean, &fail_on, false, false), "off branch");
        assert!(!run_promotes(&clean, &fail_on, true, true), "--no-promote");
        assert!(!run_promotes(
            &[Verdict::Pass, Verdict::Regressed],
            &fail_on,
            true,
            false
        ));
        assert!(!run_promotes(
            &[Verdict::Pass, Verdict::Error],
            &fail_on,
            true,
            false
        ));
    }

    #[test]
    fn a_first_run_that_sets_no_baseline_says_why_and_what_to_do() {
        let fail_on = [Verdict::Regressed, Verdict::Invalid];
        let new = [Verdict::New, Verdict::New];
        let off =
            unpromoted_note(&new, &fail_on, Some("feature"), "main", false, 3).expect("a note");
        assert!(off.contains("branch \"feature\""), "{off}");
        assert!(off.contains("--branch main"), "{off}");
        assert!(off.contains("baseline accept \"\" --run 3"), "{off}");
        let none = unpromoted_note(&new, &fail_on, None, "main", false, 3).expect("a note");
        assert!(none.contains("no branch"), "{none}");
        assert!(
            unpromoted_note(&new, &fail_on, Some("main"), "main", false, 3).is_none(),
            "it promoted"
        );
        assert!(
            unpromoted_note(
                &[Verdict::Pass],
                &fail_on,
                Some("feature"),
                "main",
                false,
                3
            )
            .is_none(),
            "every case has a baseline: a pull request run needs no note"
        );
        let flag = unpromoted_note(&new, &fail_on, Some("main"), "main", true, 3).expect("note");
        assert!(flag.contains("--no-promote"), "{flag}");
    }
}
