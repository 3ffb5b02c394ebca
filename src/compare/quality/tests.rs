use super::*;

fn count(correct: u64, total: u64) -> QualityCount {
    QualityCount { correct, total }
}

fn counts(metric: &str, correct: u64, total: u64) -> QualityCounts {
    QualityCounts::from([(metric.to_owned(), count(correct, total))])
}

/// 412 of 500 at z = 1.96, by hand: p = 0.824, z^2/n = 0.0076832;
/// centre = (0.824 + 3.8416 / 1000) / 1.0076832 = 0.8215296;
/// half = 1.96 / 1.0076832 * sqrt(0.824 * 0.176 / 500 + 3.8416 / 1e6) = 0.0333445;
/// so (0.788185, 0.854874). Each bound also solves the score equation that defines it:
/// (p - bound)^2 = z^2 bound (1 - bound) / n.
#[test]
fn the_wilson_interval_is_the_hand_computed_one_and_solves_its_equation() {
    let (lo, hi) = wilson(count(412, 500), 1.96);
    assert!(
        (lo - 0.788_185).abs() < 1e-6 && (hi - 0.854_874).abs() < 1e-6,
        "{lo} {hi}"
    );
    for bound in [lo, hi] {
        let lhs = (0.824 - bound).powi(2);
        let rhs = 1.96f64.powi(2) * bound * (1.0 - bound) / 500.0;
        assert!((lhs - rhs).abs() < 1e-12, "{bound}: {lhs} vs {rhs}");
    }
    // No answers: nothing known.
    assert_eq!(wilson(count(0, 0), 1.96), (0.0, 1.0));
}

/// Newcombe's interval for 412/500 then, 300/500 now, one-sided 95% (z = 1.644854): the drop
/// is 0.224; Wilson bounds at that z are (0.794264, 0.850248) then and (0.563518, 0.635406)
/// now; lower = 0.224 - sqrt(0.029736^2 + 0.035406^2) = 0.177763, upper = 0.224 +
/// sqrt(0.026248^2 + 0.036482^2) = 0.268943.
#[test]
fn the_drop_interval_is_newcombes_hybrid_score_interval() {
    let z = 1.644_853_627;
    let (lo, hi) = drop_interval(count(412, 500), count(300, 500), z);
    assert!(
        (lo - 0.177_764).abs() < 1e-5 && (hi - 0.268_943).abs() < 1e-5,
        "{lo} {hi}"
    );
}

#[test]
fn a_collapse_regresses_a_wobble_passes_and_too_few_answers_cannot_tell() {
    let policy = QualityPolicy {
        threshold_pts: 1.0,
        alpha: 0.05,
    };
    // GSM8K collapsed on a fast path (82.4% -> 60.0%): regressed, at least 17.8 points.
    let c = &judge_quality(
        &counts("gsm8k", 412, 500),
        &counts("gsm8k", 300, 500),
        &policy,
    )[0];
    assert_eq!(c.verdict, QualityVerdict::Regressed);
    assert!((c.drop_pts.expect("drop") - 22.4).abs() < 1e-9);
    assert!((c.interval_pts.expect("interval").0 - 17.7764).abs() < 1e-3);
    // 7 answers fewer of 500: 1.4 points, beyond the threshold but within chance
    // (the interval reaches -2.6 points): inconclusive.
    let c = &judge_quality(
        &counts("gsm8k", 412, 500),
        &counts("gsm8k", 405, 500),
        &policy,
    )[0];
    assert_eq!(c.verdict, QualityVerdict::Inconclusive, "{c:?}");
    // 2 fewer: 0.4 points, under the threshold.
    let c = &judge_quality(
        &counts("gsm8k", 412, 500),
        &counts("gsm8k", 410, 500),
        &policy,
    )[0];
    assert_eq!(c.verdict, QualityVerdict::Pass);
    // 5 points on 100 prompts: the interval reaches -4.4 points: cannot tell.
    let c = &judge_quality(&counts("mmlu", 82, 100), &counts("mmlu", 77, 100), &policy)[0];
    assert_eq!(c.verdict, QualityVerdict::Inconclusive);
    // A metric the baseline never reported is new.
    let c = &judge_quality(&counts("mmlu", 82, 100), &counts("gsm8k", 1, 500), &policy)[0];
    assert_eq!((c.verdict, c.then), (QualityVerdict::New, None));
}

#[test]
fn a_quality_regression_fails_a_fast_case_and_says_why_first() {
    let policy = QualityPolicy {
        threshold_pts: 1.0,
        alpha: 0.05,
    };
    let mut d = Decision::bare(Verdict::Improved);
    d.reasons.push("The step got 4.0% faster.".to_owned());
    apply_quality(
        &mut d,
        judge_quality(
            &counts("gsm8k", 412, 500),
            &counts("gsm8k", 300, 500),
            &policy,
        ),
    );
    assert_eq!(d.verdict, Verdict::Regressed);
    assert!(
        d.reasons[0].starts_with(
            "Quality regressed whatever the speed: gsm8k fell from 82.4% (412/500) to 60.0% \
             (300/500), 22.4 points against a threshold of 1.0; the drop is at least 17.8 points"
        ),
        "{:?}",
        d.reasons
    );
    assert_eq!(d.reasons[1], "The step got 4.0% faster.");
    assert_eq!(d.quality.len(), 1);

    // An unresolved drop makes a passing case inconclusive, never a failing one passing.
    let mut d = Decision::bare(Verdict::Pass);
    apply_quality(
        &mut d,
        judge_quality(&counts("mmlu", 82, 100), &counts("mmlu", 77, 100), &policy),
    );
    assert_eq!(d.verdict, Verdict::Inconclusive);
    assert!(
        d.reasons[0].contains("score more prompts"),
        "{:?}",
        d.reasons
    );
    let mut d = Decision::bare(Verdict::Invalid);
    apply_quality(
        &mut d,
        judge_quality(&counts("mmlu", 82, 100), &counts("mmlu", 30, 100), &policy),
    );
    assert_eq!(
        d.verdict,
        Verdict::Invalid,
        "a wrong measurement stays what it is"
    );
}
