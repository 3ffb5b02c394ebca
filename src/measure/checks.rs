//! Sanity checks of what a harness reported, against what it was asked for (issue #11): the
//! number of counted steps against `UTILGATE_STEPS`, with a tolerance for harnesses that drop a
//! few, and a cap on the samples kept from a harness that reports far more. Pure.

/// What to do with one repeat's counted steps.
#[derive(Debug, Clone, PartialEq)]
pub enum StepCount {
    /// As asked (or within the tolerance).
    Fine,
    /// Fewer than the tolerance allows: the case is `error`, with this message.
    TooFew(String),
    /// Far more than asked: keep only the last `keep` (the steadiest part of the run) and warn.
    TooMany { keep: usize, warning: String },
}

/// How far above the asked count a harness may go before it is warned about.
const MANY_FACTOR: usize = 2;

/// Judges `got` counted steps against `asked`, allowing `tolerance_pct` percent fewer, and
/// keeping at most `max_samples`.
#[must_use]
pub fn step_count(got: usize, asked: u64, tolerance_pct: f64, max_samples: usize) -> StepCount {
    let asked_n = usize::try_from(asked).unwrap_or(usize::MAX);
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a non-negative count below `asked`, which fits"
    )]
    let least = ((asked as f64) * (1.0 - tolerance_pct.clamp(0.0, 100.0) / 100.0)).ceil() as usize;
    if got < least.max(1) {
        let allowed = if least < asked_n {
            format!(" (steps_tolerance_pct allows as few as {least})")
        } else {
            String::new()
        };
        return StepCount::TooFew(format!(
            "the harness reported {got} counted steps but was asked for {asked} (UTILGATE_STEPS){allowed}"
        ));
    }
    if got > max_samples {
        return StepCount::TooMany {
            keep: max_samples,
            warning: format!(
                "the harness reported {got} counted steps but was asked for {asked}; only the last {max_samples} are kept ([limits] max_samples)"
            ),
        };
    }
    if got > asked_n.saturating_mul(MANY_FACTOR) {
        return StepCount::TooMany {
            keep: got,
            warning: format!(
                "the harness reported {got} counted steps but was asked for {asked}: check that it reads UTILGATE_STEPS"
            ),
        };
    }
    StepCount::Fine
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_judged_against_the_ask() {
        assert_eq!(step_count(60, 60, 0.0, 100_000), StepCount::Fine);
        assert_eq!(step_count(100, 60, 0.0, 100_000), StepCount::Fine);
        let StepCount::TooFew(message) = step_count(2, 60, 0.0, 100_000) else {
            panic!("2 of 60 is too few");
        };
        assert!(
            message.contains("2 counted steps") && message.contains("60"),
            "{message}"
        );
        // 10% tolerance: 54 of 60 is enough, 53 is not.
        assert_eq!(step_count(54, 60, 10.0, 100_000), StepCount::Fine);
        assert!(
            matches!(step_count(53, 60, 10.0, 100_000), StepCount::TooFew(m) if m.contains("as few as 54"))
        );
        // Even full tolerance needs one step.
        assert!(matches!(
            step_count(0, 60, 100.0, 100_000),
            StepCount::TooFew(_)
        ));
        assert!(matches!(
            step_count(1_000_000, 60, 0.0, 100_000),
            StepCount::TooMany { keep: 100_000, .. }
        ));
        assert!(matches!(
            step_count(500, 60, 0.0, 100_000),
            StepCount::TooMany { keep: 500, .. }
        ));
    }
}
