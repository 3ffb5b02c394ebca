//! Readers for the load generators besides vLLM and `SGLang`: AIPerf's profile export (JSON or
//! CSV), GuideLLM's benchmark report, kubernetes-sigs/inference-perf's summary report and MLPerf
//! LoadGen's text summary. Each maps its units and statistics onto the canonical metric names
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

use serde_json::Value;

use super::error::ServeError;
use super::model::{Schema, ServeResult};

/// The results of a text (non-JSON) format this module reads; `None` when `text` is none of
/// them.
pub(super) fn parse_text(
    text: &str,
    origin: &str,
) -> Option<Result<Vec<ServeResult>, ServeError>> {
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

/// The canonical statistic of a percentile: the 50th is `median` (the name the vLLM reader and
/// the default gate use), others `p90`, `p99`, `p99.9`. `None` outside 0..=100.
fn stat_name(p: f64) -> Option<String> {
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    if p == 50.0 {
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
