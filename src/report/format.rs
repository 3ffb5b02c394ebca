//! The one place numbers and commit ids become text, for every renderer (terminal tables, the
//! floor report, Markdown, HTML, `JUnit`). Pure.
//!
//! Char-safe: user text (a `--git-sha`, a branch) is cut by characters, never by bytes, so a
//! non-ASCII commit id cannot panic a listing. A missing or non-finite figure prints as
//! [`MISSING`], never as `NaN` or `inf`.

/// What a figure that is absent (or not a finite number) prints as.
pub const MISSING: &str = "–";

/// How many characters of a commit id listings and reports show (git's default abbreviation).
pub const SHORT_SHA_CHARS: usize = 7;

/// The first `chars` characters of `s` (all of it when shorter). Never splits a character.
#[must_use]
pub fn prefix_chars(s: &str, chars: usize) -> &str {
    let end = s.char_indices().nth(chars).map_or(s.len(), |(i, _)| i);
    &s[..end]
}

/// A commit id shortened to [`SHORT_SHA_CHARS`] characters.
#[must_use]
pub fn short_sha(sha: &str) -> &str {
    prefix_chars(sha, SHORT_SHA_CHARS)
}

/// An optional commit id shortened, or [`MISSING`].
#[must_use]
pub fn short_sha_or_missing(sha: Option<&str>) -> String {
    sha.filter(|s| !s.is_empty())
        .map_or(MISSING, short_sha)
        .to_owned()
}

/// `x` with `decimals` decimals, or [`MISSING`] when it is not finite.
#[must_use]
pub fn fixed(x: f64, decimals: usize) -> String {
    if !x.is_finite() {
        MISSING.to_owned()
    } else if x.abs() >= LARGE {
        // An absurd figure (which `invalid` marks) in bounded scientific notation, never
        // hundreds of digits.
        format!("{x:.3e}")
    } else {
        format!("{x:.decimals$}")
    }
}

/// From here on a figure prints in scientific notation.
const LARGE: f64 = 1e9;

/// A time in milliseconds with three decimals (`6.020`), or [`MISSING`].
#[must_use]
pub fn ms(x: Option<f64>) -> String {
    x.map_or_else(|| MISSING.to_owned(), |v| fixed(v, 3))
}

/// A fraction as a percentage with one decimal (`0.4915` -> `49.2%`), or [`MISSING`].
#[must_use]
pub fn pct(x: Option<f64>) -> String {
    // A huge finite fraction overflows to infinity when scaled: check the percentage.
    match x.map(|v| v * 100.0) {
        Some(p) if p.is_finite() => format!("{}%", fixed(p, 1)),
        _ => MISSING.to_owned(),
    }
}

/// A figure already in percent with one decimal (`2.5` -> `2.5%`), or [`MISSING`].
#[must_use]
pub fn percent(x: Option<f64>) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.1}%"),
        _ => MISSING.to_owned(),
    }
}

/// A change in percent with its sign (`+1.5%`, `-13.0%`; zero as `+0.0%`), or [`MISSING`].
#[must_use]
pub fn signed_percent(x: Option<f64>) -> String {
    match x {
        // Adding 0.0 turns -0.0 into 0.0, so no change prints as "-0.0%".
        Some(v) if v.is_finite() => format!("{:+.1}%", v + 0.0),
        _ => MISSING.to_owned(),
    }
}

/// A count, or [`MISSING`].
#[must_use]
pub fn count(x: Option<usize>) -> String {
    x.map_or_else(|| MISSING.to_owned(), |n| n.to_string())
}

/// Four significant digits, no exponent (`4.936`, `1234`, `0.01235`); zero and non-finite
/// values as Rust prints them.
#[must_use]
pub fn sig4(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let digits = x.abs().log10().floor();
    let decimals = (3.0 - digits).clamp(0.0, 9.0);
    // Invariant: decimals is within 0..=9 after the clamp.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "clamped to 0..=9"
    )]
    let decimals = decimals as usize;
    format!("{x:.decimals$}")
}

/// A value with an SI prefix (k, M, G, T, P, E) and four significant digits: `16.06 GB`.
#[must_use]
pub fn si(x: f64, unit: &str) -> String {
    const PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    let mut v = x;
    let mut p = 0;
    while v.abs() >= 1000.0 && p + 1 < PREFIXES.len() {
        v /= 1000.0;
        p += 1;
    }
    format!("{} {}{unit}", sig4(v), PREFIXES[p])
}

/// An integer-valued count with thousands separators: `8,030,261,248`.
#[must_use]
pub fn grouped(x: f64) -> String {
    let text = format!("{:.0}", x.round());
    let (sign, digits) = text
        .strip_prefix('-')
        .map_or(("", text.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (n, c) in digits.chars().enumerate() {
        if n > 0 && (digits.len() - n) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    format!("{sign}{out}")
}

/// A duration as people write it, for every renderer and the log: `12 ms`, `0.8 s`, `12.3 s`,
/// `4 min 05 s`. Rounded once, to milliseconds where tenths of a second would read `0.0 s`, to
/// tenths under a minute and to seconds above, so 59.96 s reads `1 min 00 s`, never `60.0 s`.
/// A non-finite duration prints as [`MISSING`]; a negative one as zero.
#[must_use]
pub fn duration(s: f64) -> String {
    if !s.is_finite() {
        return MISSING.to_owned();
    }
    let s = s.max(0.0);
    if (s * 10.0).round() < 1.0 {
        format!("{:.0} ms", s * 1000.0)
    } else if (s * 10.0).round() < 600.0 {
        format!("{s:.1} s")
    } else {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a finite, non-negative number of seconds"
        )]
        let whole = s.round() as u64;
        format!("{} min {:02} s", whole / 60, whole % 60)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn durations_read_as_people_write_them_and_round_once() {
        assert_eq!(duration(0.8), "0.8 s");
        assert_eq!(duration(12.34), "12.3 s");
        assert_eq!(duration(59.94), "59.9 s");
        assert_eq!(duration(59.96), "1 min 00 s");
        assert_eq!(duration(245.0), "4 min 05 s");
        assert_eq!(duration(-1.0), "0 ms");
        // A fast night's estimate: never "about 0.0 s".
        assert_eq!(duration(0.0312), "31 ms");
        assert_eq!(duration(0.0499), "50 ms");
        assert_eq!(duration(0.05), "0.1 s");
        assert_eq!(duration(f64::NAN), MISSING);
    }

    #[test]
    fn commit_ids_are_cut_by_characters() {
        assert_eq!(short_sha("0123456789abcdef"), "0123456");
        assert_eq!(short_sha("abc"), "abc");
        assert_eq!(short_sha(""), "");
        // The id from the issue: byte 10 falls inside 'é'.
        assert_eq!(prefix_chars("abcdefghié", 10), "abcdefghié");
        assert_eq!(prefix_chars("abcdefghié", 9), "abcdefghi");
        assert_eq!(short_sha("ééééééééé"), "ééééééé");
        assert_eq!(short_sha_or_missing(None), MISSING);
    }

    #[test]
    fn missing_and_non_finite_figures_print_the_same_dash() {
        for x in [
            None,
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
        ] {
            assert_eq!(ms(x), MISSING, "{x:?}");
            assert_eq!(pct(x), MISSING, "{x:?}");
        }
        assert_eq!(ms(Some(6.0204)), "6.020");
        assert_eq!(pct(Some(0.4916)), "49.2%");
        assert_eq!(fixed(f64::NAN, 2), MISSING);
        assert_eq!(percent(Some(2.54)), "2.5%");
        assert_eq!(signed_percent(Some(-13.0)), "-13.0%");
        assert_eq!(signed_percent(Some(-0.0)), "+0.0%");
        assert_eq!(signed_percent(Some(f64::NAN)), MISSING);
        assert_eq!(count(None), MISSING);
    }

    #[test]
    fn significant_digits_prefixes_and_groups() {
        assert_eq!(sig4(4.936_12), "4.936");
        assert_eq!(sig4(1234.4), "1234");
        assert_eq!(sig4(0.012_345), "0.01235");
        assert_eq!(si(16.06e9, "B"), "16.06 GB");
        assert_eq!(si(999.0, "B"), "999.0 B");
        assert_eq!(grouped(8_030_261_248.0), "8,030,261,248");
        assert_eq!(grouped(-1234.0), "-1,234");
        assert_eq!(grouped(12.0), "12");
    }

    proptest! {
        #[test]
        fn prefixes_of_any_text_are_char_boundaries(s in any::<String>(), n in 0usize..40) {
            let p = prefix_chars(&s, n);
            prop_assert!(s.starts_with(p));
            prop_assert_eq!(p.chars().count(), n.min(s.chars().count()));
            let sha = short_sha(&s);
            prop_assert!(sha.chars().count() <= SHORT_SHA_CHARS);
        }

        #[test]
        fn any_float_formats_without_panicking(x in any::<f64>()) {
            let shown = [ms(Some(x)), pct(Some(x)), fixed(x, 2), sig4(x), si(x, "B")];
            if x.is_finite() {
                prop_assert!(shown[..3].iter().all(|t| !t.contains("NaN") && !t.contains("inf")));
                let back: f64 = shown[0].parse().expect("ms parses back");
                // Past `LARGE` a figure is shown in scientific notation to 4 digits.
                let tolerance = if x.abs() < LARGE { 0.000_5 + x.abs() * 1e-12 } else { x.abs() * 1e-3 };
                prop_assert!((back - x).abs() <= tolerance);
            } else {
                prop_assert_eq!(&shown[0], MISSING);
                prop_assert_eq!(&shown[1], MISSING);
            }
        }

        #[test]
        fn grouping_keeps_the_digits(x in -1e15f64..1e15) {
            let text = grouped(x);
            let digits: String = text.chars().filter(|c| *c != ',').collect();
            prop_assert_eq!(digits, format!("{:.0}", x.round()));
        }
    }
}
