//! "Did you mean": the closest known name to a mistyped one (a GPU, a model, a suite, a config
//! key). Pure.
//!
//! A name the user typed as the start of a known one (`h100` for `h100-sxm`) is the strongest
//! match, the first such name in the caller's order winning; otherwise the Jaro-Winkler
//! similarity (strsim), which favours a shared start, must reach [`MIN_SIMILARITY`] (what cargo
//! and clap use for their own suggestions, 0.8, after lower-casing).

/// The least Jaro-Winkler similarity that is offered as a suggestion.
pub const MIN_SIMILARITY: f64 = 0.8;

/// The known name closest to `given`, if one is close enough.
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let wanted = given.trim().to_lowercase();
    if wanted.is_empty() {
        return None;
    }
    let mut best: Option<(f64, &'a str)> = None;
    for name in known {
        let candidate = name.to_lowercase();
        if candidate == wanted {
            continue;
        }
        let score = if candidate.starts_with(&wanted) {
            2.0
        } else {
            strsim::jaro_winkler(&wanted, &candidate)
        };
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, name));
        }
    }
    best.filter(|(s, _)| *s >= MIN_SIMILARITY).map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const GPUS: [&str; 5] = ["h100-sxm", "h100-pcie", "h100-nvl", "h200", "a100-80gb"];

    #[test]
    fn the_start_of_a_name_suggests_the_first_match() {
        assert_eq!(did_you_mean("h100", GPUS), Some("h100-sxm"));
        assert_eq!(did_you_mean("H100-P", GPUS), Some("h100-pcie"));
    }

    #[test]
    fn a_typo_suggests_the_nearest_name() {
        let keys = ["name", "command", "models", "batches", "contexts", "phases"];
        assert_eq!(did_you_mean("batchs", keys), Some("batches"));
        assert_eq!(did_you_mean("contxts", keys), Some("contexts"));
        assert_eq!(did_you_mean("a100-80g", GPUS), Some("a100-80gb"));
    }

    #[test]
    fn nothing_close_suggests_nothing() {
        assert_eq!(did_you_mean("tpu-v5", GPUS), None);
        assert_eq!(did_you_mean("", GPUS), None);
        assert_eq!(did_you_mean("h200", ["h200"]), None, "the name itself");
        assert_eq!(did_you_mean("x", Vec::<&str>::new()), None);
    }

    proptest! {
        #[test]
        fn a_suggestion_is_always_a_known_name(given in any::<String>()) {
            if let Some(s) = did_you_mean(&given, GPUS) {
                prop_assert!(GPUS.contains(&s));
            }
        }
    }
}
