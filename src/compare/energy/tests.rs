use super::*;
use crate::case::Axes;

fn key(phase: Phase, batch: u64, context: u64) -> CaseKey {
    CaseKey {
        suite: "s".into(),
        model: "m".into(),
        precision: "bf16".into(),
        phase,
        batch,
        context,
        tp: 1,
        ep: 1,
        axes: Axes::default(),
    }
}

fn window(joules: f64, steps: u64, window_ms: f64, source: EnergySource) -> EnergyWindow {
    EnergyWindow {
        joules,
        steps,
        window_ms,
        source,
        power_limit_w: Some(700.0),
    }
}

/// Repeats whose joules per token are `per_token`, 100 steps of 8 tokens each.
fn repeats(per_token: &[f64]) -> Vec<RepeatEnergy> {
    per_token
        .iter()
        .zip(0..)
        .map(|(j, repeat)| RepeatEnergy {
            repeat,
            measured: Ok(window(j * 800.0, 100, 1000.0, EnergySource::Counter)),
        })
        .collect()
}

#[test]
fn tokens_per_step_count_as_throughput_does() {
    assert_eq!(tokens_per_step(&key(Phase::Decode, 8, 4096)), 8);
    assert_eq!(tokens_per_step(&key(Phase::Prefill, 2, 1024)), 2048);
}

#[test]
fn figures_pool_the_windows_and_name_their_sources() {
    // 132.5 J over 40 steps in 0.2 s (integrated) and 132 J over 40 steps in 0.2 s (counter):
    // 264.5 J / 80 steps = 3.30625 J/step; 8 tokens a step: 0.41328125 J/token, 2.41966 tokens
    // per joule; 264.5 J / 0.4 s = 661.25 W.
    let r = vec![
        RepeatEnergy {
            repeat: 0,
            measured: Ok(window(132.5, 40, 200.0, EnergySource::Integral)),
        },
        RepeatEnergy {
            repeat: 1,
            measured: Ok(window(132.0, 40, 200.0, EnergySource::Counter)),
        },
        RepeatEnergy {
            repeat: 2,
            measured: Err("too sparse".into()),
        },
    ];
    let f = figures(&r, 8).expect("figures");
    assert!((f.joules_per_step - 3.30625).abs() < 1e-12);
    assert!((f.joules_per_token - 0.413_281_25).abs() < 1e-12);
    assert!((f.tokens_per_s_per_w - 1.0 / 0.413_281_25).abs() < 1e-9);
    assert!((f.tokens_per_s_per_w - 2.419_659).abs() < 1e-6);
    assert!((f.mean_power_w - 661.25).abs() < 1e-9);
    assert_eq!(f.source, "counter and integral");
    assert_eq!((f.repeats, f.repeats_of, f.steps), (2, 3, 80));
    assert_eq!(f.power_limit_w, Some(700.0));
    assert_eq!(f.refused, ["repeat 2: too sparse"]);
    // No window, or a step of no tokens: no figure.
    assert!(figures(&r[2..], 8).is_none());
    assert!(figures(&r, 0).is_none());
}

#[test]
fn ten_percent_more_joules_per_token_regresses_at_the_same_step_time() {
    let policy = Policy::default();
    let then = repeats(&[1.00, 1.01, 0.99]);
    let now = repeats(&[1.10, 1.111, 1.089]);
    let check = judge_energy(&then, &now, 8, &policy, 2, true).expect("a check");
    assert_eq!(check.verdict, Verdict::Regressed);
    let drop = check.drop_pct.expect("drop");
    // 1 - 1 / 1.1 = 9.09% of the tokens per joule lost.
    assert!((drop - 9.09).abs() < 0.05, "{drop}");
    let (then_j, now_j) = (
        check.level_then_j.expect("then"),
        check.level_now_j.expect("now"),
    );
    assert!((1.0 - then_j / now_j - drop / 100.0).abs() < 1e-9);
    assert_eq!(
        check.change(),
        "joules per token rose 10.0% (from 1.000 to 1.100 J/token; tokens per joule fell 9.1%)"
    );

    // Folded into a passing decision, it makes the case regressed and says so first.
    let mut d = Decision::bare(Verdict::Pass);
    d.drop_pct = Some(0.1);
    apply_energy(&mut d, check);
    assert_eq!(d.verdict, Verdict::Regressed);
    assert!(
        d.reasons[0].starts_with("Energy regressed: joules per token rose 10.0%"),
        "{:?}",
        d.reasons
    );
    assert!(d.reasons[0].contains(
        "at a 700 W power limit; the fall of tokens per joule is beyond the 3% threshold (the \
         noise allows a fall of tokens per joule from"
    ));
    assert_eq!(d.deciding_drop().0, GateStat::JoulesPerToken);
    assert!((d.deciding_drop().1.expect("drop") - drop).abs() < 1e-12);
    assert!(
        d.deciding_change()
            .starts_with("joules per token rose 10.0%")
    );
}

#[test]
fn unchanged_or_small_changes_pass_and_an_untrusted_case_stays_inconclusive() {
    let policy = Policy::default();
    let then = repeats(&[1.00, 1.01, 0.99]);
    let same =
        judge_energy(&then, &repeats(&[1.0, 0.99, 1.01]), 8, &policy, 2, true).expect("check");
    assert_eq!(same.verdict, Verdict::Pass);
    let small =
        judge_energy(&then, &repeats(&[1.01, 1.02, 1.0]), 8, &policy, 2, true).expect("check");
    assert_eq!(small.verdict, Verdict::Pass, "1% is under the 3% threshold");
    let mut d = Decision::bare(Verdict::Pass);
    apply_energy(&mut d, same);
    assert_eq!(d.verdict, Verdict::Pass);
    assert!(!d.energy.as_ref().expect("kept").decides);
    assert_eq!(d.deciding_drop().0, GateStat::Median);

    let worse =
        judge_energy(&then, &repeats(&[1.2, 1.21, 1.19]), 8, &policy, 2, true).expect("check");
    let mut guarded = Decision::bare(Verdict::Inconclusive);
    guarded.untrusted = true;
    apply_energy(&mut guarded, worse);
    assert_eq!(guarded.verdict, Verdict::Inconclusive);
}

#[test]
fn a_baseline_without_energy_makes_the_check_new_and_none_without_a_figure() {
    let policy = Policy::default();
    let now = repeats(&[1.0, 1.0, 1.0]);
    let check = judge_energy(&[], &now, 8, &policy, 1, true).expect("a check");
    assert_eq!(check.verdict, Verdict::New);
    assert_eq!(check.drop_pct, None);
    assert_eq!(check.change(), "1.000 J/token");
    let mut d = Decision::bare(Verdict::Pass);
    apply_energy(&mut d, check);
    assert_eq!(d.verdict, Verdict::Pass);
    assert!(d.reasons.is_empty());
    let refused = vec![RepeatEnergy {
        repeat: 0,
        measured: Err("no reading".into()),
    }];
    assert!(judge_energy(&now, &refused, 8, &policy, 1, true).is_none());
}

#[test]
fn the_threshold_is_its_own_when_configured() {
    let mut policy = Policy::default();
    policy
        .stat_max_drop_pct
        .insert(GateStat::JoulesPerToken, 12.0);
    let then = repeats(&[1.00, 1.01, 0.99]);
    let now = repeats(&[1.10, 1.111, 1.089]);
    let check = judge_energy(&then, &now, 8, &policy, 2, true).expect("a check");
    assert!((check.threshold_pct - 12.0).abs() < 1e-12);
    assert_eq!(check.verdict, Verdict::Pass, "9.1% is under 12%");
}

#[test]
fn joules_print_with_four_significant_digits() {
    assert_eq!(joules(1.1), "1.100");
    assert_eq!(joules(0.012_345), "0.01235");
    assert_eq!(joules(412.34), "412.3");
    assert_eq!(joules(12_345.6), "12346");
}

#[test]
fn ungated_energy_is_shown_but_never_moves_the_verdict() {
    let policy = Policy::default();
    let then = repeats(&[1.00, 1.01, 0.99]);
    let now = repeats(&[1.10, 1.111, 1.089]);
    let check = judge_energy(&then, &now, 8, &policy, 2, false).expect("a check");
    assert_eq!(check.verdict, Verdict::Regressed);
    let mut d = Decision::bare(Verdict::Pass);
    apply_energy(&mut d, check);
    assert_eq!(d.verdict, Verdict::Pass);
    assert_eq!(d.deciding_drop().0, GateStat::Median);
    assert_eq!(
        d.reasons,
        [
            "Energy regressed (not gated): joules per token rose 10.0% (from 1.000 to 1.100 J/token; \
          tokens per joule fell 9.1%); add \"joules_per_token\" to gate_on to judge it."
        ]
    );
}
