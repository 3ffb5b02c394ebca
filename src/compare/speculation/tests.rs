use super::*;
use crate::case::Verdict;

fn counts(drafted: u64, accepted: u64) -> DraftCounts {
    DraftCounts { drafted, accepted }
}

/// The grid's level for one case with one metric: alpha = 0.01, z = 2.326348.
fn policy() -> QualityPolicy {
    QualityPolicy {
        threshold_pts: 2.0,
        alpha: 0.01,
    }
}

#[test]
fn tokens_per_round_count_the_targets_own_token() {
    // 70% of k = 4 drafts accepted: 2.8 drafted tokens plus the target's own.
    assert!((counts(3200, 2240).tokens_per_round(4) - 3.8).abs() < 1e-12);
    assert!(counts(0, 0).rate().abs() < f64::MIN_POSITIVE);
    assert_eq!(counts(10, 4).plus(counts(6, 2)), counts(16, 6));
}

/// 3,200 drafted at k = 4 are 800 rounds per night. Then 70.0% (560 rounds' worth), now
/// 62.5% (500): a drop of 7.5 points. Wilson bounds at z = 2.326348 and n = 800 give
/// Newcombe's lower bound 0.0199972 (2.0 points) and upper 0.1293747, by hand (the same
/// arithmetic as the accuracy guard's tests); counting the 3,200 tokens as trials would have
/// claimed at least 4.75 points.
#[test]
fn a_drop_in_acceptance_is_judged_on_rounds_not_tokens() {
    let check = judge_acceptance(Some(counts(3200, 2240)), counts(3200, 2000), 4, &policy());
    assert_eq!(check.verdict, QualityVerdict::Regressed);
    let drop = check.drop_pts.expect("a drop");
    assert!((drop - 7.5).abs() < 1e-9, "{drop}");
    let (lo, hi) = check.interval_pts.expect("an interval");
    assert!((lo - 1.999_717).abs() < 1e-4, "{lo}");
    assert!((hi - 12.937_474).abs() < 1e-4, "{hi}");
}

#[test]
fn few_rounds_cannot_tell_a_drop_from_chance_and_a_wobble_passes() {
    // 40 rounds each: the same 7.5 points could be chance (lower bound -16.4 points).
    let few = judge_acceptance(Some(counts(160, 112)), counts(160, 100), 4, &policy());
    assert_eq!(few.verdict, QualityVerdict::Inconclusive);
    assert!(few.interval_pts.expect("an interval").0 < 0.0);
    let wobble = judge_acceptance(Some(counts(3200, 2240)), counts(3200, 2200), 4, &policy());
    assert_eq!(wobble.verdict, QualityVerdict::Pass);
    let first = judge_acceptance(None, counts(3200, 2240), 4, &policy());
    assert_eq!(first.verdict, QualityVerdict::New);
}

#[test]
fn regressed_acceptance_fails_a_case_whose_steps_held_and_says_so_first() {
    let mut d = Decision::bare(Verdict::Pass);
    d.reasons.push("Steps held.".to_owned());
    let check = judge_acceptance(Some(counts(3200, 2240)), counts(3200, 2000), 4, &policy());
    apply_acceptance(&mut d, check);
    assert_eq!(d.verdict, Verdict::Regressed);
    assert!(
        d.reasons[0].starts_with(
            "Speculation regressed whatever the step time: acceptance fell from 70.0% (3.80 \
             tokens per round) to 62.5% of 3200 drafted tokens accepted (3.50 tokens per round \
             per sequence at k = 4), 7.5 points against a threshold of 2.0"
        ),
        "{}",
        d.reasons[0]
    );
    assert!(d.acceptance.is_some());
    // A pass keeps its verdict and says its figures last.
    let mut d = Decision::bare(Verdict::Pass);
    d.reasons.push("Steps held.".to_owned());
    let check = judge_acceptance(Some(counts(3200, 2240)), counts(3200, 2230), 4, &policy());
    apply_acceptance(&mut d, check);
    assert_eq!(d.verdict, Verdict::Pass);
    assert_eq!(
        d.reasons[1],
        "Speculation: 69.7% of 3200 drafted tokens accepted (3.79 tokens per round per \
         sequence at k = 4); the baseline accepted 70.0%."
    );
}
