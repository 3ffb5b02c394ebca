//! Parses load-generator result text into [`ServeResult`]s: one JSON object (vLLM) or JSON lines
//! (`SGLang` appends one object per run); the other load generators' formats (`AIPerf`, `GuideLLM`,
//! inference-perf, `MLPerf` `LoadGen`) are recognised by content and read by `loadgen`. Pure: the
//! text and its origin arrive as arguments.
//!
//! Built for the formats, not for a few samples: unknown keys are kept, Python's non-standard
//! `NaN` / `Infinity` tokens (what `json.dumps` writes for an empty mean or an unlimited rate)
//! are read, a rate may be a number or the string `"inf"`, and integers may arrive as `200.0`.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::ServeError;
use super::loadgen;
use super::model::{Samples, Schema, ServeResult, Settings, canonical_metric};

type Object = Map<String, Value>;

/// Parses every result in `text`; `origin` (the file name) prefixes every error.
pub fn parse(text: &str, origin: &str) -> Result<Vec<ServeResult>, ServeError> {
    if let Some(results) = loadgen::parse_text(text, origin) {
        return results;
    }
    let text = quote_non_finite(text);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ServeError::Empty {
            origin: origin.to_owned(),
        });
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value) => match loadgen::parse_value(&value, origin) {
            Some(results) => results,
            None => Ok(vec![parse_value(value, origin)?]),
        },
        Err(whole) => {
            // JSON lines: every non-empty line one object. A file that is neither reports the
            // first error of the whole-document parse when it has a single line.
            let lines: Vec<(usize, &str)> = trimmed
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .collect();
            let first_is_object = lines.first().is_some_and(|(_, l)| {
                matches!(serde_json::from_str::<Value>(l), Ok(Value::Object(_)))
            });
            if lines.len() < 2 || !first_is_object {
                return Err(ServeError::Json {
                    origin: origin.to_owned(),
                    source: whole,
                });
            }
            lines
                .into_iter()
                .map(|(i, line)| {
                    let at = format!("{origin}:{}", i + 1);
                    let value =
                        serde_json::from_str::<Value>(line).map_err(|source| ServeError::Json {
                            origin: at.clone(),
                            source,
                        })?;
                    parse_value(value, &at)
                })
                .collect()
        }
    }
}

/// Python's `json.dumps` writes bare `NaN`, `Infinity` and `-Infinity`; they become the strings
/// `"NaN"`, `"Infinity"` and `"-Infinity"` (outside string literals only).
fn quote_non_finite(text: &str) -> std::borrow::Cow<'_, str> {
    if !(text.contains("NaN") || text.contains("Infinity")) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            rest = &rest[c.len_utf8()..];
            continue;
        }
        if c == '"' {
            in_string = true;
        } else if let Some(token) = ["-Infinity", "Infinity", "NaN"]
            .into_iter()
            .find(|t| rest.starts_with(t))
        {
            out.push('"');
            out.push_str(token);
            out.push('"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    std::borrow::Cow::Owned(out)
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn bad(origin: &str, key: &str, expected: &'static str, found: &Value) -> ServeError {
    let mut shown = found.to_string();
    if shown.chars().count() > 40 {
        shown = shown.chars().take(40).collect::<String>() + "...";
    }
    ServeError::BadValue {
        origin: origin.to_owned(),
        key: key.to_owned(),
        expected,
        found: shown,
    }
}

/// A number, or one of the strings Python writes for non-finite floats.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "inf" | "Infinity" => Some(f64::INFINITY),
            "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
            "nan" | "NaN" => Some(f64::NAN),
            _ => None,
        },
        _ => None,
    }
}

/// A non-negative integer: a JSON integer, a float with an integral value (`200.0`), or a
/// decimal string (vLLM's `--metadata seed=42` stores strings).
fn count(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19)
                .map(|f| {
                    #[expect(
                        clippy::cast_possible_truncation,
                        clippy::cast_sign_loss,
                        reason = "checked integral, non-negative and below u64::MAX"
                    )]
                    let n = f as u64;
                    n
                })
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

struct Fields<'a> {
    obj: &'a Object,
    origin: &'a str,
    schema: Schema,
}

impl Fields<'_> {
    /// An optional value: absent and `null` are `None`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.obj.get(key).filter(|v| !v.is_null())
    }

    fn required(&self, key: &'static str) -> Result<&Value, ServeError> {
        self.get(key).ok_or_else(|| ServeError::MissingKey {
            origin: self.origin.to_owned(),
            key,
            schema: self.schema.as_str(),
        })
    }

    fn count(&self, key: &str) -> Result<Option<u64>, ServeError> {
        self.get(key)
            .map(|v| count(v).ok_or_else(|| bad(self.origin, key, "a whole number", v)))
            .transpose()
    }

    fn number(&self, key: &str) -> Result<Option<f64>, ServeError> {
        self.get(key)
            .map(|v| number(v).ok_or_else(|| bad(self.origin, key, "a number", v)))
            .transpose()
    }

    fn text(&self, key: &str) -> Result<Option<String>, ServeError> {
        self.get(key)
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(bad(self.origin, key, "a string", other)),
            })
            .transpose()
    }
}

fn detect(obj: &Object) -> Option<Schema> {
    let has = |k: &str| obj.contains_key(k);
    if has("request_goodput:") {
        return Some(Schema::VllmBenchmarkServing);
    }
    if [
        "endpoint_type",
        "failed",
        "max_concurrent_requests",
        "max_output_tokens_per_s",
    ]
    .iter()
    .any(|k| has(k))
    {
        return Some(Schema::VllmBenchServe);
    }
    let sglang_marks = [
        "total_output_tokens_retokenized",
        "accept_length",
        "dataset_name",
    ];
    if sglang_marks.iter().any(|k| has(k)) || obj.keys().any(|k| k.contains("e2e_latency")) {
        return Some(Schema::SglangBenchServing);
    }
    // vLLM's benchmark_serving.py before goodput existed: model_id and tokenizer_id, no marks.
    if has("model_id") || has("tokenizer_id") {
        return Some(Schema::VllmBenchmarkServing);
    }
    None
}

fn parse_value(value: Value, origin: &str) -> Result<ServeResult, ServeError> {
    let Value::Object(obj) = value else {
        return Err(ServeError::NotAnObject {
            origin: origin.to_owned(),
            found: type_name(&value),
        });
    };
    let Some(schema) = detect(&obj) else {
        return Err(ServeError::UnknownSchema {
            origin: origin.to_owned(),
        });
    };
    let f = Fields {
        obj: &obj,
        origin,
        schema,
    };
    let completed_v = f.required("completed")?;
    let completed = count(completed_v)
        .ok_or_else(|| bad(origin, "completed", "a whole number", completed_v))?;
    let duration_v = f.required("duration")?;
    let duration_s = number(duration_v)
        .filter(|d| d.is_finite() && *d >= 0.0)
        .ok_or_else(|| {
            bad(
                origin,
                "duration",
                "a non-negative number of seconds",
                duration_v,
            )
        })?;
    let rate_v = f.required("request_rate")?;
    let rate = number(rate_v)
        .filter(|r| *r > 0.0 && !r.is_nan())
        .ok_or_else(|| {
            bad(
                origin,
                "request_rate",
                "a positive number or \"inf\"",
                rate_v,
            )
        })?;
    let settings = settings(&f, rate)?;
    if schema != Schema::SglangBenchServing && settings.model.is_none() {
        f.required("model_id")?;
    }
    let mut metrics = BTreeMap::new();
    for (key, v) in &obj {
        let Some(name) = canonical_metric(key) else {
            continue;
        };
        match v {
            Value::Null => {}
            _ => match number(v) {
                Some(x) if x.is_finite() => {
                    metrics.insert(name, x);
                }
                Some(_) => {} // NaN or an infinity: no figure to record
                None => return Err(bad(origin, key, "a number", v)),
            },
        }
    }
    Ok(ServeResult {
        schema,
        completed,
        failed: f.count("failed")?,
        duration_s,
        metrics,
        samples: samples(&f)?,
        settings,
        fields: obj.clone(),
    })
}

fn settings(f: &Fields<'_>, rate: f64) -> Result<Settings, ServeError> {
    let dataset = match f.text("dataset_name")? {
        Some(d) => Some(d),
        None => f.text("dataset")?,
    };
    // SGLang writes its random-dataset lengths whatever the dataset; they describe the prompts
    // only for a random dataset.
    let random = dataset.as_deref().is_none_or(|d| d.starts_with("random"));
    let len = |keys: [&str; 2]| -> Result<Option<u64>, ServeError> {
        for key in keys {
            if let Some(n) = f.count(key)? {
                return Ok(Some(n));
            }
        }
        Ok(None)
    };
    let (input_len, output_len) = if random {
        (
            len(["random_input_len", "input_len"])?,
            len(["random_output_len", "output_len"])?,
        )
    } else {
        (
            len(["input_len", "input_len"])?,
            len(["output_len", "output_len"])?,
        )
    };
    Ok(Settings {
        request_rate: rate.is_finite().then_some(rate),
        rate_unstated: false,
        burstiness: f.number("burstiness")?,
        max_concurrency: f.count("max_concurrency")?,
        num_prompts: f.count("num_prompts")?,
        seed: f.count("seed")?,
        model: match f.text("model_id")? {
            Some(m) => Some(m),
            None => f.text("model")?,
        },
        tokenizer: f.text("tokenizer_id")?,
        dataset,
        input_len,
        output_len,
        range_ratio: if random {
            f.number("random_range_ratio")?
        } else {
            None
        },
        total_input_tokens: f.count("total_input_tokens")?,
    })
}

fn number_array(f: &Fields<'_>, key: &str) -> Result<Option<Vec<f64>>, ServeError> {
    let Some(v) = f.get(key) else {
        return Ok(None);
    };
    let Value::Array(items) = v else {
        return Err(bad(f.origin, key, "an array of numbers", v));
    };
    items
        .iter()
        .map(|x| number(x).ok_or_else(|| bad(f.origin, key, "an array of numbers", x)))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn count_array(f: &Fields<'_>, key: &str) -> Result<Vec<u64>, ServeError> {
    let Some(v) = f.get(key) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = v else {
        return Err(bad(f.origin, key, "an array of whole numbers", v));
    };
    items
        .iter()
        .map(|x| count(x).ok_or_else(|| bad(f.origin, key, "an array of whole numbers", x)))
        .collect()
}

/// Which requests succeeded: an empty `errors` entry (both vLLM and `SGLang` keep failed
/// requests in the arrays, with a zero TTFT and the error text).
fn succeeded(f: &Fields<'_>, n: usize) -> Vec<bool> {
    match f.get("errors") {
        Some(Value::Array(errors)) if errors.len() == n => errors
            .iter()
            .map(|e| match e {
                Value::String(s) => s.is_empty(),
                Value::Null => true,
                _ => false,
            })
            .collect(),
        _ => vec![true; n],
    }
}

fn samples(f: &Fields<'_>) -> Result<Option<Samples>, ServeError> {
    let ttfts = number_array(f, "ttfts")?;
    let itls = match f.get("itls") {
        None => None,
        Some(Value::Array(per_request)) => Some(
            per_request
                .iter()
                .map(|r| match r {
                    Value::Array(xs) => xs
                        .iter()
                        .map(|x| {
                            number(x).ok_or_else(|| bad(f.origin, "itls", "arrays of numbers", x))
                        })
                        .collect::<Result<Vec<_>, _>>(),
                    Value::Null => Ok(Vec::new()),
                    other => number(other)
                        .map(|x| vec![x])
                        .ok_or_else(|| bad(f.origin, "itls", "arrays of numbers", other)),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => return Err(bad(f.origin, "itls", "an array of arrays", other)),
    };
    if ttfts.is_none() && itls.is_none() {
        return Ok(None);
    }
    let n = ttfts
        .as_ref()
        .map_or(0, Vec::len)
        .max(itls.as_ref().map_or(0, Vec::len));
    let ok = succeeded(f, n);
    let usable = |x: f64| x.is_finite() && x > 0.0;
    let ttfts_ms = ttfts
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter(|(i, x)| ok[*i] && usable(*x))
        .map(|(_, x)| x * 1000.0)
        .collect();
    let output_lens = count_array(f, "output_lens")?;
    let tpots_ms = request_tpots(itls.as_deref(), &output_lens, &ok);
    let itls_ms = itls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| ok[*i])
        .flat_map(|(_, xs)| xs)
        .filter(|x| usable(*x))
        .map(|x| x * 1000.0)
        .collect();
    Ok(Some(Samples {
        ttfts_ms,
        itls_ms,
        tpots_ms,
        input_lens: count_array(f, "input_lens")?,
        output_lens,
    }))
}

/// Each successful request's time per output token (ms), as vLLM defines it: the time after
/// the first token over the tokens after the first, `sum(itls) / (output_len - 1)` (a streamed
/// chunk of several tokens is one gap, so the gaps' count can be below `output_len - 1`).
/// Requests of one output token have none; without both arrays there are none.
fn request_tpots(itls: Option<&[Vec<f64>]>, output_lens: &[u64], ok: &[bool]) -> Vec<f64> {
    let Some(itls) = itls else {
        return Vec::new();
    };
    if output_lens.len() != itls.len() {
        return Vec::new();
    }
    itls.iter()
        .zip(output_lens)
        .enumerate()
        .filter(|(i, (gaps, out))| ok[*i] && **out > 1 && !gaps.is_empty())
        .map(|(_, (gaps, out))| gaps.iter().sum::<f64>() * 1000.0 / (*out - 1) as f64)
        .filter(|t| t.is_finite() && *t > 0.0)
        .collect()
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "the values must reach the model unchanged, bit for bit"
)]
mod tests;
