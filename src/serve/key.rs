//! The identity of a service case across runs: suite, model, offered load (request rate and/or
//! maximum concurrency) and the configured input and output lengths. Pure.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::model::ServeResult;

/// Which setting a sweep varies from point to point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SweepAxis {
    /// `--request-rate`: points keyed by requests per second (`inf` last).
    RequestRate,
    /// `--max-concurrency`: points keyed by the concurrency limit.
    MaxConcurrency,
}

impl SweepAxis {
    /// The name the case key and the store write.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SweepAxis::RequestRate => "rate",
            SweepAxis::MaxConcurrency => "conc",
        }
    }

    /// The axis a stored name stands for (`""` is no sweep).
    #[must_use]
    pub fn parse(text: &str) -> Option<SweepAxis> {
        match text {
            "rate" => Some(SweepAxis::RequestRate),
            "conc" => Some(SweepAxis::MaxConcurrency),
            _ => None,
        }
    }

    /// The point of a result on this axis, as the case key writes it (`"4"`, `"inf"`, `"64"`;
    /// no concurrency limit is `"none"`).
    #[must_use]
    pub fn point_of(self, result: &ServeResult) -> String {
        match self {
            SweepAxis::RequestRate => rate_of(&result.settings),
            SweepAxis::MaxConcurrency => result
                .settings
                .max_concurrency
                .map_or_else(|| "none".to_owned(), |c| c.to_string()),
        }
    }

    /// The order of points along the axis (by value; `inf` and "no limit" last).
    #[must_use]
    pub fn order_value(point: &str) -> f64 {
        point.parse::<f64>().unwrap_or(f64::INFINITY)
    }
}

/// One point of a service grid. Lengths and concurrency are `None` where the run does not fix
/// them (a `ShareGPT` dataset, no concurrency limit).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ServeKey {
    pub suite: String,
    pub model: String,
    /// The request rate as written in the key: `"inf"` or a number (`"4"`, `"0.5"`), so that
    /// equality never depends on float rounding.
    pub request_rate: String,
    pub max_concurrency: Option<u64>,
    pub input_len: Option<u64>,
    pub output_len: Option<u64>,
    /// A sweep's axis: the case is the whole sweep (its points are its files), the axis's own
    /// field is [`SWEPT_RATE`] (a rate sweep) or `None` (a concurrency sweep).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepAxis>,
}

/// The request rate a rate sweep's key holds: every rate of the sweep.
pub const SWEPT_RATE: &str = "sweep";

/// A rate as the key writes it: `None` (unlimited) is `"inf"`; whole numbers without a
/// fraction; others with the shortest exact form.
#[must_use]
pub fn format_rate(rate: Option<f64>) -> String {
    match rate {
        None => "inf".to_owned(),
        Some(r) if !r.is_finite() => "inf".to_owned(),
        Some(r) if r.fract() == 0.0 && r.abs() < 1e15 => format!("{r:.0}"),
        Some(r) => format!("{r}"),
    }
}

/// The request rate of a file that states none: unknown, never "inf".
pub const UNSTATED_RATE: &str = "unknown";

/// The rate of a result's settings as the key writes it: [`format_rate`], or
/// [`UNSTATED_RATE`] where the file states no rate.
#[must_use]
pub fn rate_of(settings: &super::model::Settings) -> String {
    if settings.rate_unstated {
        UNSTATED_RATE.to_owned()
    } else {
        format_rate(settings.request_rate)
    }
}

impl ServeKey {
    /// The order of a grid as people read it: by suite and model, then by request rate as a
    /// number (1 < 4 < 16 < inf, where the derived order of the text puts 16 before 4), then
    /// concurrency and lengths.
    #[must_use]
    pub fn grid_cmp(&self, other: &ServeKey) -> std::cmp::Ordering {
        let rate = |k: &ServeKey| match k.request_rate.as_str() {
            "inf" => f64::INFINITY,
            r => r.parse::<f64>().unwrap_or(f64::NAN),
        };
        self.suite
            .cmp(&other.suite)
            .then_with(|| self.model.cmp(&other.model))
            .then_with(|| rate(self).total_cmp(&rate(other)))
            .then_with(|| self.request_rate.cmp(&other.request_rate))
            .then_with(|| self.max_concurrency.cmp(&other.max_concurrency))
            .then_with(|| self.input_len.cmp(&other.input_len))
            .then_with(|| self.output_len.cmp(&other.output_len))
    }

    /// The key of a result imported without a suite: everything from the file.
    #[must_use]
    pub fn of_result(suite: &str, result: &ServeResult, model_override: Option<&str>) -> Self {
        let s = &result.settings;
        ServeKey {
            suite: suite.to_owned(),
            model: model_override
                .map(str::to_owned)
                .or_else(|| s.model.clone())
                .unwrap_or_else(|| "unknown".to_owned()),
            request_rate: rate_of(s),
            max_concurrency: s.max_concurrency,
            input_len: s.input_len,
            output_len: s.output_len,
            sweep: None,
        }
    }

    /// The key of the sweep a result is one point of: the swept setting left out.
    #[must_use]
    pub fn sweep_of_result(
        suite: &str,
        result: &ServeResult,
        model_override: Option<&str>,
        axis: SweepAxis,
    ) -> Self {
        ServeKey::of_result(suite, result, model_override).into_sweep(axis)
    }

    /// The key of the sweep over `axis` this point belongs to.
    #[must_use]
    pub fn into_sweep(mut self, axis: SweepAxis) -> Self {
        self.sweep = Some(axis);
        match axis {
            SweepAxis::RequestRate => SWEPT_RATE.clone_into(&mut self.request_rate),
            SweepAxis::MaxConcurrency => self.max_concurrency = None,
        }
        self
    }
}

impl fmt::Display for ServeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.suite, self.model)?;
        if self.sweep == Some(SweepAxis::RequestRate) {
            write!(f, "/sweep=rate")?;
        } else {
            write!(f, "/rate={}", self.request_rate)?;
        }
        if let Some(c) = self.max_concurrency {
            write!(f, "/conc={c}")?;
        }
        if self.sweep == Some(SweepAxis::MaxConcurrency) {
            write!(f, "/sweep=conc")?;
        }
        if let Some(i) = self.input_len {
            write!(f, "/in={i}")?;
        }
        if let Some(o) = self.output_len {
            write!(f, "/out={o}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_written_exactly() {
        assert_eq!(format_rate(None), "inf");
        assert_eq!(format_rate(Some(f64::INFINITY)), "inf");
        assert_eq!(format_rate(Some(4.0)), "4");
        assert_eq!(format_rate(Some(0.5)), "0.5");
        assert_eq!(format_rate(Some(1.25)), "1.25");
    }

    #[test]
    fn the_key_reads_like_a_path() {
        let k = ServeKey {
            suite: "serve".into(),
            model: "m".into(),
            request_rate: "4".into(),
            max_concurrency: Some(16),
            input_len: Some(1024),
            output_len: None,
            sweep: None,
        };
        assert_eq!(k.to_string(), "serve/m/rate=4/conc=16/in=1024");
        let rates = ServeKey {
            request_rate: SWEPT_RATE.into(),
            sweep: Some(SweepAxis::RequestRate),
            ..k.clone()
        };
        assert_eq!(rates.to_string(), "serve/m/sweep=rate/conc=16/in=1024");
        let conc = ServeKey {
            max_concurrency: None,
            sweep: Some(SweepAxis::MaxConcurrency),
            ..k
        };
        assert_eq!(conc.to_string(), "serve/m/rate=4/sweep=conc/in=1024");
    }

    #[test]
    fn a_grid_reads_in_rate_order_with_unlimited_last() {
        let key = |rate: &str| ServeKey {
            suite: "serve".into(),
            model: "m".into(),
            request_rate: rate.into(),
            max_concurrency: None,
            input_len: None,
            output_len: None,
            sweep: None,
        };
        let mut keys = [key("inf"), key("16"), key("4"), key("0.5"), key("1")];
        keys.sort_by(ServeKey::grid_cmp);
        let rates: Vec<&str> = keys.iter().map(|k| k.request_rate.as_str()).collect();
        assert_eq!(rates, ["0.5", "1", "4", "16", "inf"]);
    }
}
