//! A case's free axes: the values a suite's `axes = { mode = ["eager", "graphs"] }` adds to its
//! grid, each part of the case key, a command template variable and a `UTILGATE_<NAME>`
//! variable for the harness. The rules for axis names and values, and the axes' text in case
//! keys and in the store (`mode=graphs`, several joined by `/`, sorted by name). Pure.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// Names an axis may not take: the built-in coordinates and template variables of step and
/// service suites, the fields reports give a case, and the suffixes of the `UTILGATE_*`
/// variables utilgate sets or reads itself (an axis `out` would overwrite `UTILGATE_OUT`).
pub const RESERVED_AXIS_NAMES: [&str; 35] = [
    "model",
    "tp",
    "ep",
    "precision",
    "kv_dtype",
    "phase",
    "batch",
    "context",
    "suite",
    "steps",
    "warmup_steps",
    "repeat",
    "utilgate",
    "config_dir",
    "request_rate",
    "max_concurrency",
    "input_len",
    "output_len",
    "num_prompts",
    "seed",
    "burstiness",
    "result_file",
    "protocol",
    "out",
    "trace_dir",
    "config",
    "db",
    "gpu",
    "gpu_sku",
    "gpu_tests",
    "example_slowdown",
    "case",
    "key",
    "verdict",
    "axes",
];

/// The longest axis name and value accepted.
pub const MAX_AXIS_LEN: usize = 64;

/// Why an axis name or value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxisError {
    #[error("axis name {name:?} is not a lowercase identifier")]
    BadName { name: String },
    #[error("axis name {name:?} is a built-in coordinate or variable")]
    ReservedName { name: String },
    #[error("axis {name}: value {value:?} is not a plain value")]
    BadValue { name: String, value: String },
    #[error("{text:?} is not an axis (name=value)")]
    NotAnAxis { text: String },
    #[error("axis {name} is given twice")]
    Duplicate { name: String },
}

impl AxisError {
    /// The fix.
    #[must_use]
    pub fn hint(&self) -> String {
        match self {
            AxisError::BadName { .. } => format!(
                "start with a lowercase letter, then lowercase letters, digits or '_' (at most {MAX_AXIS_LEN}), e.g. mode"
            ),
            AxisError::ReservedName { .. } => format!(
                "rename the axis (e.g. mode, backend, attn); these names are taken: {}",
                RESERVED_AXIS_NAMES.join(", ")
            ),
            AxisError::BadValue { .. } => format!(
                "use letters, digits, '-', '_', '.' or '+' (at most {MAX_AXIS_LEN}), e.g. \"graphs\""
            ),
            AxisError::NotAnAxis { .. } | AxisError::Duplicate { .. } => {
                "write each axis once as name=value, e.g. mode=graphs".to_owned()
            }
        }
    }
}

/// Checks an axis name: a lowercase identifier, not a built-in name.
pub fn check_axis_name(name: &str) -> Result<(), AxisError> {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= MAX_AXIS_LEN;
    if !plain {
        return Err(AxisError::BadName {
            name: name.to_owned(),
        });
    }
    if RESERVED_AXIS_NAMES.contains(&name) {
        return Err(AxisError::ReservedName {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// Checks an axis value: non-empty, and only characters that read the same in a case key, a
/// file name, an environment variable and a shell word.
pub fn check_axis_value(name: &str, value: &str) -> Result<(), AxisError> {
    let plain = !value.is_empty()
        && value.len() <= MAX_AXIS_LEN
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+".contains(c));
    if plain {
        Ok(())
    } else {
        Err(AxisError::BadValue {
            name: name.to_owned(),
            value: value.to_owned(),
        })
    }
}

/// The axis values of one case, sorted by axis name. Empty for a suite without axes, whose
/// case keys are then exactly those of a utilgate without axes.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(try_from = "BTreeMap<String, String>")]
pub struct Axes(BTreeMap<String, String>);

impl Serialize for Axes {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl TryFrom<BTreeMap<String, String>> for Axes {
    type Error = AxisError;
    fn try_from(map: BTreeMap<String, String>) -> Result<Self, Self::Error> {
        for (name, value) in &map {
            check_axis_name(name)?;
            check_axis_value(name, value)?;
        }
        Ok(Axes(map))
    }
}

impl Axes {
    /// Axes from `(name, value)` pairs, each checked.
    pub fn new<N: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (N, V)>,
    ) -> Result<Self, AxisError> {
        let mut map = BTreeMap::new();
        for (name, value) in pairs {
            let name = name.into();
            if map.insert(name.clone(), value.into()).is_some() {
                return Err(AxisError::Duplicate { name });
            }
        }
        Axes::try_from(map)
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(name, value)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// The axis names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// The map itself (for templates and reports).
    #[must_use]
    pub fn as_map(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    /// The environment variable of an axis: `mode` -> `UTILGATE_MODE`.
    #[must_use]
    pub fn env_name(name: &str) -> String {
        format!("UTILGATE_{}", name.to_ascii_uppercase())
    }

    /// The axes as the case key and the store write them: `attn=flash/mode=graphs`, "" for
    /// none.
    #[must_use]
    pub fn key_text(&self) -> String {
        self.to_string()
    }

    /// Reads [`Axes::key_text`] back; "" is no axes.
    pub fn parse_key_text(text: &str) -> Result<Self, AxisError> {
        if text.is_empty() {
            return Ok(Axes::default());
        }
        let pairs = text
            .split('/')
            .map(|part| {
                part.split_once('=').ok_or_else(|| AxisError::NotAnAxis {
                    text: part.to_owned(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Axes::new(pairs)
    }
}

/// [`Axes::parse_key_text`], for readers of stored text.
impl std::str::FromStr for Axes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Axes::parse_key_text(s).map_err(|e| e.to_string())
    }
}

impl fmt::Display for Axes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str("/")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// Every point of the product of `axes` (name -> values), in a stable order: names sorted,
/// values in the order given, the last name varying fastest. One empty point without axes.
#[must_use]
pub fn axis_points(axes: &BTreeMap<String, Vec<String>>) -> Vec<Axes> {
    let mut points = vec![BTreeMap::new()];
    for (name, values) in axes {
        points = points
            .into_iter()
            .flat_map(|point| {
                values.iter().map(move |value| {
                    let mut next = point.clone();
                    next.insert(name.clone(), value.clone());
                    next
                })
            })
            .collect();
    }
    points.into_iter().map(Axes).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lowercase_identifiers_not_builtins() {
        for ok in ["mode", "attn_backend", "m2"] {
            assert_eq!(check_axis_name(ok), Ok(()), "{ok}");
        }
        for bad in ["", "Mode", "2x", "mo-de", "mo de", "_x", "modé"] {
            assert!(
                matches!(check_axis_name(bad), Err(AxisError::BadName { .. })),
                "{bad}"
            );
        }
        for taken in ["model", "batch", "context", "phase", "out", "repeat", "gpu"] {
            assert!(
                matches!(check_axis_name(taken), Err(AxisError::ReservedName { .. })),
                "{taken}"
            );
        }
        assert!(
            AxisError::ReservedName {
                name: "batch".into()
            }
            .hint()
            .contains("precision")
        );
    }

    #[test]
    fn values_are_plain_words() {
        for ok in ["eager", "graphs", "torch.compile", "fa-2", "v1+cu124", "O3"] {
            assert_eq!(check_axis_value("mode", ok), Ok(()), "{ok}");
        }
        for bad in ["", "a/b", "a=b", "a b", "a,b", "x\n", "$(id)", "é"] {
            assert!(check_axis_value("mode", bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn key_text_round_trips_in_name_order() {
        let axes = Axes::new([("mode", "graphs"), ("attn", "flash")]).expect("valid");
        assert_eq!(axes.key_text(), "attn=flash/mode=graphs");
        assert_eq!(Axes::parse_key_text(&axes.key_text()), Ok(axes.clone()));
        assert_eq!(Axes::parse_key_text(""), Ok(Axes::default()));
        assert_eq!(Axes::default().key_text(), "");
        assert!(Axes::parse_key_text("mode").is_err());
        assert!(Axes::parse_key_text("mode=a/mode=b").is_err());
        assert!(Axes::parse_key_text("batch=2").is_err());
        assert_eq!(Axes::env_name("attn_backend"), "UTILGATE_ATTN_BACKEND");
    }

    #[test]
    fn points_are_the_product_in_a_stable_order() {
        let mut axes = BTreeMap::new();
        assert_eq!(axis_points(&axes), [Axes::default()]);
        axes.insert(
            "mode".to_owned(),
            vec!["eager".to_owned(), "graphs".to_owned()],
        );
        axes.insert(
            "attn".to_owned(),
            vec!["sdpa".to_owned(), "flash".to_owned()],
        );
        let texts: Vec<String> = axis_points(&axes).iter().map(Axes::key_text).collect();
        assert_eq!(
            texts,
            [
                "attn=sdpa/mode=eager",
                "attn=sdpa/mode=graphs",
                "attn=flash/mode=eager",
                "attn=flash/mode=graphs"
            ]
        );
    }

    #[test]
    fn deserialising_checks_names_and_values() {
        let ok: Axes = serde_json::from_str(r#"{"mode": "graphs"}"#).expect("valid");
        assert_eq!(ok.get("mode"), Some("graphs"));
        assert!(serde_json::from_str::<Axes>(r#"{"mode": "a/b"}"#).is_err());
        assert!(serde_json::from_str::<Axes>(r#"{"batch": "1"}"#).is_err());
        assert_eq!(
            serde_json::to_string(&ok).expect("json"),
            r#"{"mode":"graphs"}"#
        );
    }
}
