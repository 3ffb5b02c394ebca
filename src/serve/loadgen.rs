//! Readers for the load generators besides vLLM and `SGLang`: `AIPerf`'s profile export (JSON or
//! CSV), `GuideLLM`'s benchmark report, kubernetes-sigs/inference-perf's summary report and `MLPerf`
//! `LoadGen`'s text summary. Each maps its units and statistics onto the canonical metric names
//! of `model.rs` (`p99_ttft_ms`, `median_itl_ms`, `output_throughput`, ...) and keeps every
//! field of the file. Pure: text in, results out; `parse.rs` asks here first.
//!
//! Formats are told apart by content, never by file name: a text file by its first lines, a
//! JSON object by the keys only its tool writes. A field a supported version writes that is
//! missing or changed is a [`ServeError::Field`] naming the file, the field and the fix.

mod aiperf;
mod guidellm;
mod inference_perf;
mod mlperf;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::ServeError;
use super::model::{Schema, ServeResult};

/// The results of a text (non-JSON) format this module reads; `None` when `text` is none of
/// them.
pub(super) fn parse_text(text: &str, origin: &str) -> Option<Result<Vec<ServeResult>, ServeError>> {
    if mlperf::is_summary(text) {
        return Some(mlperf::parse(text, origin).map(|r| vec![r]));
    }
    if aiperf::is_csv(text) {
        return Some(aiperf::parse_csv(text, origin).map(|r| vec![r]));
    }
    None
}

/// The results of a JSON document this module reads (including the stored forms of the text
/// formats); `None` when `value` is none of them.
pub(super) fn parse_value(
    value: &Value,
    origin: &str,
) -> Option<Result<Vec<ServeResult>, ServeError>> {
    let Value::Object(obj) = value else {
        return None;
    };
    if let Some(Value::String(text)) = obj.get(mlperf::JSON_KEY) {
        return Some(mlperf::parse(text, origin).map(|r| vec![r]));
    }
    if let Some(Value::String(text)) = obj.get(aiperf::CSV_JSON_KEY) {
        return Some(aiperf::parse_csv(text, origin).map(|r| vec![r]));
    }
    if aiperf::is_json(obj) {
        return Some(aiperf::parse_json(obj, origin).map(|r| vec![r]));
    }
    if guidellm::is_report(obj) {
        return Some(guidellm::parse(obj, origin));
    }
    if inference_perf::is_summary(obj) {
        return Some(inference_perf::parse(obj, origin).map(|r| vec![r]));
    }
    None
}

/// A load generator as its errors name it.
struct Tool {
    name: &'static str,
    schema: Schema,
    /// The versions whose layout the reader was built from.
    supported: &'static str,
    /// What to do about a file that is not what the tool writes.
    remedy: &'static str,
}

impl Tool {
    fn err(&self, origin: &str, field: &str, problem: String, fix: String) -> ServeError {
        ServeError::Field {
            origin: origin.to_owned(),
            tool: self.name,
            field: field.to_owned(),
            problem,
            fix,
        }
    }

    /// A field a supported version always writes is absent: the file comes from another
    /// version (or was edited).
    fn missing(&self, origin: &str, field: &str) -> ServeError {
        self.err(
            origin,
            field,
            format!(
                "is missing ({} writes it): the file comes from another version of the tool",
                self.supported
            ),
            format!(
                "{}; utilgate reads {}: re-run with one of those, or tell utilgate's maintainers the version that writes this layout",
                self.remedy, self.supported
            ),
        )
    }

    fn not_a(&self, origin: &str, field: &str, expected: &str, found: &Value) -> ServeError {
        let mut shown = found.to_string();
        if shown.chars().count() > 40 {
            shown = shown.chars().take(40).collect::<String>() + "...";
        }
        self.err(
            origin,
            field,
            format!("is {shown}, where {} writes {expected}", self.supported),
            self.remedy.to_owned(),
        )
    }
}

/// Reads a tool's JSON with errors that name the tool, the file and the field's path.
struct Doc<'a> {
    tool: &'a Tool,
    origin: &'a str,
}

type Object = Map<String, Value>;

impl Doc<'_> {
    /// The value at `path`; absent and `null` are `None`.
    #[expect(
        clippy::unused_self,
        reason = "one accessor family on `Doc`: its siblings name the tool and file in errors"
    )]
    fn get<'v>(&self, root: &'v Object, path: &[&str]) -> Option<&'v Value> {
        let (last, parents) = path.split_last()?;
        let mut obj = root;
        for key in parents {
            obj = obj.get(*key)?.as_object()?;
        }
        obj.get(*last).filter(|v| !v.is_null())
    }

    fn need<'v>(&self, root: &'v Object, path: &[&str]) -> Result<&'v Value, ServeError> {
        self.get(root, path)
            .ok_or_else(|| self.tool.missing(self.origin, &path.join(".")))
    }

    fn need_object<'v>(&self, root: &'v Object, path: &[&str]) -> Result<&'v Object, ServeError> {
        let v = self.need(root, path)?;
        v.as_object().ok_or_else(|| {
            self.tool
                .not_a(self.origin, &path.join("."), "an object", v)
        })
    }

    fn need_number(&self, root: &Object, path: &[&str]) -> Result<f64, ServeError> {
        let v = self.need(root, path)?;
        v.as_f64()
            .ok_or_else(|| self.tool.not_a(self.origin, &path.join("."), "a number", v))
    }

    fn number(&self, root: &Object, path: &[&str]) -> Result<Option<f64>, ServeError> {
        self.get(root, path)
            .map(|v| {
                v.as_f64()
                    .ok_or_else(|| self.tool.not_a(self.origin, &path.join("."), "a number", v))
            })
            .transpose()
    }

    /// A whole number (`40` or `40.0`).
    fn count(&self, root: &Object, path: &[&str]) -> Result<Option<u64>, ServeError> {
        self.number(root, path)?
            .map(|x| {
                whole(x).ok_or_else(|| {
                    self.tool.not_a(
                        self.origin,
                        &path.join("."),
                        "a whole number",
                        &Value::from(x),
                    )
                })
            })
            .transpose()
    }

    fn text(&self, root: &Object, path: &[&str]) -> Option<String> {
        self.get(root, path)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// Puts every statistic of the distribution at `path` into `metrics` as
    /// `{stat}_{family}_ms`, each value times `to_ms`. `stat` maps the tool's statistic names
    /// (`avg`, `p99`, `std_dev`, ...) to canonical ones; others are left in the fields only.
    fn distribution(
        &self,
        root: &Object,
        path: &[&str],
        family: &str,
        to_ms: f64,
        stat: fn(&str) -> Option<String>,
        metrics: &mut BTreeMap<String, f64>,
    ) -> Result<(), ServeError> {
        let Some(v) = self.get(root, path) else {
            return Ok(());
        };
        let Some(obj) = v.as_object() else {
            return Err(self.tool.not_a(
                self.origin,
                &path.join("."),
                "an object of statistics",
                v,
            ));
        };
        for (key, x) in obj {
            let Some(name) = stat(key) else { continue };
            match x {
                Value::Null => {}
                Value::Number(n) => {
                    if let Some(x) = n.as_f64().filter(|x| x.is_finite()) {
                        metrics.insert(format!("{name}_{family}_ms"), x * to_ms);
                    }
                }
                other => {
                    let field = format!("{}.{key}", path.join("."));
                    return Err(self.tool.not_a(self.origin, &field, "a number", other));
                }
            }
        }
        Ok(())
    }
}

/// `x` as a whole number when it is one.
fn whole(x: f64) -> Option<u64> {
    (x.fract() == 0.0 && (0.0..1.8e19).contains(&x)).then(|| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "checked integral, non-negative and below u64::MAX"
        )]
        let n = x as u64;
        n
    })
}

/// The canonical statistic of a percentile: the 50th is `median` (the name the vLLM reader and
/// the default gate use), others `p90`, `p99`, `p99.9`. `None` outside 0..=100.
fn stat_name(p: f64) -> Option<String> {
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    if p.total_cmp(&50.0).is_eq() {
        return Some("median".to_owned());
    }
    Some(format!("p{p}"))
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "the values must reach the model unchanged, bit for bit"
)]
mod tests;
