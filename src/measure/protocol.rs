//! Harness protocol v1 (DESIGN.md §5): parses the JSON lines a harness appends to
//! `$UTILGATE_OUT` into step times, warm-up times, environment versions, trace and Nsight file
//! paths, and sanitises harness text before it can reach a terminal. Pure: the caller reads the
//! file.
//!
//! Each line is parsed on its own into a typed struct of the known keys (no `serde_json::Value`):
//! serde skips unknown keys without building them, and every type error is reported by this
//! module, naming the 1-based line number, what is wrong and how to fix it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use thiserror::Error;

/// Everything a harness reported for one repeat, in the order it wrote it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HarnessReport {
    /// Warm-up step times (ms): stored, never counted.
    pub warmup_ms: Vec<f64>,
    /// Counted step times (ms), finite and above zero.
    pub steps_ms: Vec<f64>,
    /// Versions of what the step depends on; a later line overrides an earlier key.
    pub env: BTreeMap<String, String>,
    /// Profiler trace paths, as written (relative paths are relative to the harness's cwd).
    pub traces: Vec<String>,
    /// Nsight Systems files (`.nsys-rep` or an `SQLite` export), from `{"nsys": "path"}`.
    pub nsys: Vec<String>,
    /// Nsight Compute files (`.ncu-rep` or `ncu --csv` output), from `{"ncu": "path"}`.
    pub ncu: Vec<String>,
    /// Quality metrics scored beside the steps (the accuracy guard), from
    /// `{"quality": {"gsm8k": {"correct": 412, "total": 500}}}` or `{"score": 0.824, "n": 500}`;
    /// a metric reported twice adds its answers.
    pub quality: crate::compare::quality::QualityCounts,
    /// A speculative case's drafted and accepted tokens over its counted rounds, from
    /// `{"speculative": {"drafted": 1600, "accepted": 1123}}`; several lines add up.
    pub speculative: Option<crate::compare::speculation::DraftCounts>,
}

/// A line of the results file that breaks protocol v1.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("line {line}: {kind}")]
pub struct ProtocolError {
    /// 1-based line number in the results file.
    pub line: usize,
    pub kind: ProtocolErrorKind,
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ProtocolErrorKind {
    #[error("malformed JSON: {message}")]
    Malformed { message: String },
    #[error("the line ends in the middle of a JSON value")]
    Truncated,
    #[error("{key} is {what}, which is not a step time")]
    NotFinite { key: String, what: &'static str },
    #[error("expected a JSON object, found {found}")]
    NotObject { found: &'static str },
    #[error("step_ms is {found}, not a number")]
    StepNotNumber { found: &'static str },
    #[error("{key} is {}, but a step time must be above zero", bounded(*.value))]
    NotPositive { key: String, value: f64 },
    #[error("{key} is {} ms, outside the sane range of a step ({} .. {})", bounded(*.value), duration_text(.range.min_ms), duration_text(.range.max_ms))]
    OutOfRange {
        key: String,
        value: f64,
        range: StepRange,
    },
    #[error("steps_ms is {found}, not an array of numbers")]
    StepsNotArray { found: &'static str },
    #[error("steps_ms[{index}] is {found}, not a number")]
    StepsElement { index: usize, found: &'static str },
    #[error("warmup is {found}, not true or false")]
    WarmupNotBool { found: &'static str },
    #[error("env is {found}, not an object of names to versions")]
    EnvNotObject { found: &'static str },
    #[error("env.{key} is {found}, not a version string")]
    EnvValue { key: String, found: &'static str },
    #[error("trace is {found}, not a path string")]
    TraceNotString { found: &'static str },
    #[error("{key} is {found}, not a path string")]
    ProfileNotString {
        key: &'static str,
        found: &'static str,
    },
    #[error("quality is {found}, not an object of metric names")]
    QualityNotObject { found: &'static str },
    #[error("quality.{metric}{problem}")]
    QualityMetric { metric: String, problem: String },
    #[error("speculative{problem}")]
    Speculative { problem: String },
}

impl ProtocolError {
    /// A one-line fix for the harness author.
    #[must_use]
    pub fn hint(&self) -> String {
        match &self.kind {
            ProtocolErrorKind::Malformed { .. } | ProtocolErrorKind::NotObject { .. } => {
                "write one JSON object per line, e.g. {\"step_ms\": 6.02}".to_owned()
            }
            ProtocolErrorKind::Truncated => {
                "the harness probably died while writing: check its stderr, and write each \
                 line in one call ending with a newline"
                    .to_owned()
            }
            ProtocolErrorKind::NotFinite { .. } => {
                "the step produced no valid time: record the end event after the step and \
                 synchronise before reading the timer"
                    .to_owned()
            }
            ProtocolErrorKind::NotPositive { .. } => {
                "a step cannot take zero or negative time: read the timer after the step \
                 finishes (synchronise the device), and report milliseconds"
                    .to_owned()
            }
            ProtocolErrorKind::OutOfRange { .. } => {
                "report each step's device time in milliseconds (6.02 for 6.02 ms); a different \
                 range is set with [limits] min_step_ms and max_step_ms"
                    .to_owned()
            }
            ProtocolErrorKind::StepNotNumber { .. } | ProtocolErrorKind::StepsElement { .. } => {
                "write step times as JSON numbers in milliseconds, e.g. {\"step_ms\": 6.02}"
                    .to_owned()
            }
            ProtocolErrorKind::StepsNotArray { .. } => {
                "write several steps as {\"steps_ms\": [6.02, 6.01]}".to_owned()
            }
            ProtocolErrorKind::WarmupNotBool { .. } => {
                "mark a warm-up step with \"warmup\": true, or leave the key out".to_owned()
            }
            ProtocolErrorKind::EnvNotObject { .. } | ProtocolErrorKind::EnvValue { .. } => {
                "write versions as {\"env\": {\"torch\": \"2.5.1\"}}".to_owned()
            }
            ProtocolErrorKind::TraceNotString { .. } => {
                "write the trace as {\"trace\": \"path/to/trace.json\"}".to_owned()
            }
            ProtocolErrorKind::QualityNotObject { .. }
            | ProtocolErrorKind::QualityMetric { .. } => {
                "write each metric's answers as {\"quality\": {\"gsm8k\": {\"correct\": 412, \
                 \"total\": 500}}}, or a share with its sample count as {\"score\": 0.824, \
                 \"n\": 500}"
                    .to_owned()
            }
            ProtocolErrorKind::Speculative { .. } => {
                "write the counted rounds' tokens as {\"speculative\": {\"drafted\": 1600, \
                 \"accepted\": 1123}} (whole numbers, accepted at most drafted)"
                    .to_owned()
            }
            ProtocolErrorKind::ProfileNotString { key, .. } => format!(
                "write the file as {{\"{key}\": \"path/to/report.{}\"}}",
                if *key == "nsys" {
                    "nsys-rep"
                } else {
                    "ncu-rep"
                }
            ),
        }
    }
}

/// The range a step time must fall in (ms): outside it the harness reported something other
/// than a step's device time (seconds for milliseconds, a timer read before the step began).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepRange {
    pub min_ms: f64,
    pub max_ms: f64,
}

impl Default for StepRange {
    /// 1 ns to 1 hour.
    fn default() -> Self {
        StepRange {
            min_ms: 1e-6,
            max_ms: 3.6e6,
        }
    }
}

/// A figure with bounded precision (at most 6 significant digits, scientific notation far
/// from 1), so that no value, however absurd, prints hundreds of digits.
#[must_use]
pub fn bounded(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || !value.is_finite() || (1e-3..1e6).contains(&magnitude) {
        let text = format!("{value:.6}");
        let text = if text.contains('.') {
            text.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            text
        };
        if text == "-0" { "0".to_owned() } else { text }
    } else {
        format!("{value:.5e}")
    }
}

/// A range bound in the unit that reads best (1 ns, 1 h).
fn duration_text(ms: f64) -> String {
    let (value, unit) = if ms >= 3.6e6 {
        (ms / 3.6e6, "h")
    } else if ms >= 1e3 {
        (ms / 1e3, "s")
    } else if ms >= 1.0 {
        (ms, "ms")
    } else if ms >= 1e-3 {
        (ms * 1e3, "us")
    } else {
        (ms * 1e6, "ns")
    };
    format!("{} {unit}", bounded(value))
}

/// Parses the whole results file of one repeat with the default step range.
pub fn parse(text: &str) -> Result<HarnessReport, ProtocolError> {
    parse_with(text, StepRange::default())
}

/// The timed steps a results file holds so far, read while the harness still writes it: its
/// complete lines only (a half-written last line waits for the next reading); `None` when
/// those do not parse under `range` (the repeat's own parse says why, at its end).
#[must_use]
pub fn timed_steps_written(text: &str, range: StepRange) -> Option<u64> {
    let complete = text.rfind('\n').map_or("", |end| &text[..=end]);
    parse_with(complete, range)
        .ok()
        .map(|r| u64::try_from(r.steps_ms.len()).unwrap_or(u64::MAX))
}

/// Parses the whole results file of one repeat.
///
/// A UTF-8 byte-order mark at the start is skipped (some Windows-born tools write one). Blank
/// lines are skipped; a last line without a trailing newline is parsed like any other (a
/// half-written line is then reported as truncated). Lines with no known key are ignored, for
/// forward compatibility. A counted or warm-up step outside `range` is an error.
pub fn parse_with(text: &str, range: StepRange) -> Result<HarnessReport, ProtocolError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut report = HarnessReport::default();
    for (index, raw) in text.split('\n').enumerate() {
        let line = index + 1;
        let content = raw.strip_suffix('\r').unwrap_or(raw);
        if content.trim().is_empty() {
            continue;
        }
        parse_line(content, &mut report, range).map_err(|kind| ProtocolError { line, kind })?;
    }
    Ok(report)
}

#[expect(
    clippy::too_many_lines,
    reason = "one match per known key of the protocol, in the order they are documented"
)]
fn parse_line(
    content: &str,
    report: &mut HarnessReport,
    range: StepRange,
) -> Result<(), ProtocolErrorKind> {
    // A derived struct also deserialises from a JSON array (by position): insist on an object.
    if !content.trim_start().starts_with('{') {
        let found = match serde_json::from_str::<Json<'_>>(content) {
            Ok(value) => value.kind(),
            Err(err) => return Err(syntax_error(content, &err)),
        };
        return Err(ProtocolErrorKind::NotObject { found });
    }
    let parsed: Line<'_> =
        serde_json::from_str(content).map_err(|err| syntax_error(content, &err))?;

    let warmup = match parsed.warmup {
        Json::Absent | Json::Bool(false) => false,
        Json::Bool(true) => true,
        other => {
            return Err(ProtocolErrorKind::WarmupNotBool {
                found: other.kind(),
            });
        }
    };
    let target = if warmup {
        &mut report.warmup_ms
    } else {
        &mut report.steps_ms
    };

    match parsed.step_ms {
        Json::Absent => {}
        Json::Number(value) => target.push(check_time("step_ms", value, range)?),
        other => {
            return Err(ProtocolErrorKind::StepNotNumber {
                found: other.kind(),
            });
        }
    }
    match parsed.steps_ms {
        Json::Absent => {}
        Json::Array(items) => {
            target.reserve(items.len());
            for (index, item) in items.into_iter().enumerate() {
                match item {
                    Json::Number(value) => {
                        target.push(check_time(&format!("steps_ms[{index}]"), value, range)?);
                    }
                    other => {
                        return Err(ProtocolErrorKind::StepsElement {
                            index,
                            found: other.kind(),
                        });
                    }
                }
            }
        }
        other => {
            return Err(ProtocolErrorKind::StepsNotArray {
                found: other.kind(),
            });
        }
    }
    match parsed.env {
        Json::Absent => {}
        Json::Object(entries) => {
            for (key, value) in entries {
                let text = match value {
                    Json::Str(s) => sanitize(&s),
                    Json::Number(n) => n.text(),
                    Json::Bool(b) => b.to_string(),
                    // An unknown version (Python's None) is not worth failing a case over.
                    Json::Null => continue,
                    other => {
                        return Err(ProtocolErrorKind::EnvValue {
                            key: sanitize(&key),
                            found: other.kind(),
                        });
                    }
                };
                report.env.insert(sanitize(&key), text);
            }
        }
        other => {
            return Err(ProtocolErrorKind::EnvNotObject {
                found: other.kind(),
            });
        }
    }
    match parsed.trace {
        Json::Absent => {}
        Json::Str(path) => report.traces.push(sanitize(&path)),
        other => {
            return Err(ProtocolErrorKind::TraceNotString {
                found: other.kind(),
            });
        }
    }
    for (key, value, into) in [
        ("nsys", parsed.nsys, &mut report.nsys),
        ("ncu", parsed.ncu, &mut report.ncu),
    ] {
        match value {
            Json::Absent => {}
            Json::Str(path) => into.push(sanitize(&path)),
            other => {
                return Err(ProtocolErrorKind::ProfileNotString {
                    key,
                    found: other.kind(),
                });
            }
        }
    }
    match parsed.quality {
        Json::Absent => {}
        Json::Object(metrics) => {
            for (name, value) in metrics {
                let metric = sanitize(&name);
                let count =
                    quality_count(value).map_err(|problem| ProtocolErrorKind::QualityMetric {
                        metric: metric.clone(),
                        problem,
                    })?;
                let entry = report.quality.entry(metric).or_default();
                *entry = entry.plus(count);
            }
        }
        other => {
            return Err(ProtocolErrorKind::QualityNotObject {
                found: other.kind(),
            });
        }
    }
    if !matches!(parsed.speculative, Json::Absent) {
        let counts = draft_counts(parsed.speculative)
            .map_err(|problem| ProtocolErrorKind::Speculative { problem })?;
        report.speculative = Some(report.speculative.unwrap_or_default().plus(counts));
    }
    Ok(())
}

/// `{"drafted": D, "accepted": A}`: whole numbers, A <= D.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "whole, non-negative and below 2^53 where cast (checked before)"
)]
fn draft_counts(value: Json<'_>) -> Result<crate::compare::speculation::DraftCounts, String> {
    let Json::Object(fields) = value else {
        return Err(format!(" is {}, not an object", value.kind()));
    };
    let whole = |key: &str| -> Result<u64, String> {
        match fields.iter().find(|(k, _)| k == key).map(|(_, v)| v) {
            Some(Json::Number(Number::Unsigned(n))) => Ok(*n),
            Some(Json::Number(Number::Float(x))) if x.fract() == 0.0 && *x >= 0.0 && *x < 9e15 => {
                Ok(*x as u64)
            }
            Some(other) => Err(format!(
                ".{key} is {}, not a whole number of tokens",
                other.kind()
            )),
            None => Err(format!(" has no {key}")),
        }
    };
    let (drafted, accepted) = (whole("drafted")?, whole("accepted")?);
    if accepted > drafted {
        return Err(format!(
            " accepts {accepted} of {drafted} drafted tokens: accepted cannot exceed drafted"
        ));
    }
    Ok(crate::compare::speculation::DraftCounts { drafted, accepted })
}

/// One quality metric: `{"correct": C, "total": N}` (whole numbers, C <= N) or
/// `{"score": S, "n": N}` (a share 0..=1 of N samples, counted as round(S x N) correct).
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "whole, non-negative and below 2^53 where cast (checked before)"
)]
fn quality_count(value: Json<'_>) -> Result<crate::compare::quality::QualityCount, String> {
    let Json::Object(fields) = value else {
        return Err(format!(" is {}, not an object", value.kind()));
    };
    let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let whole = |key: &str| -> Result<Option<u64>, String> {
        match field(key) {
            None => Ok(None),
            Some(Json::Number(Number::Unsigned(n))) => Ok(Some(*n)),
            Some(Json::Number(Number::Float(x))) if x.fract() == 0.0 && *x >= 0.0 && *x < 9e15 => {
                Ok(Some(*x as u64))
            }
            Some(other) => Err(format!(
                ".{key} is {}, not a whole number of answers",
                other.kind()
            )),
        }
    };
    let (correct, total) = match (whole("correct")?, whole("total")?, whole("n")?) {
        (Some(correct), Some(total), _) => (correct, total),
        (None, None, Some(n)) => {
            let score = match field("score") {
                Some(Json::Number(x)) => x.as_f64(),
                Some(other) => return Err(format!(".score is {}, not a number", other.kind())),
                None => return Err(" has n but no score".to_owned()),
            };
            if !(0.0..=1.0).contains(&score) {
                return Err(format!(
                    ".score is {}, not a share from 0 to 1",
                    bounded(score)
                ));
            }
            ((score * n as f64).round() as u64, n)
        }
        _ => return Err(" needs correct and total, or score and n".to_owned()),
    };
    if total == 0 || correct > total {
        return Err(format!(
            " has {correct} correct of {total}: total must be above zero and at least correct"
        ));
    }
    Ok(crate::compare::quality::QualityCount { correct, total })
}

fn check_time(key: &str, number: Number, range: StepRange) -> Result<f64, ProtocolErrorKind> {
    let value = number.as_f64();
    if !value.is_finite() {
        // serde_json rejects out-of-range literals, so this is a defensive check.
        return Err(ProtocolErrorKind::NotFinite {
            key: key.to_owned(),
            what: "infinite",
        });
    }
    if value <= 0.0 {
        return Err(ProtocolErrorKind::NotPositive {
            key: key.to_owned(),
            value,
        });
    }
    if !(range.min_ms..=range.max_ms).contains(&value) {
        return Err(ProtocolErrorKind::OutOfRange {
            key: key.to_owned(),
            value,
            range,
        });
    }
    Ok(value)
}

/// Turns a `serde_json` syntax error into a protocol error, recognising the literals harnesses
/// write for missing values (`NaN`, `Infinity`: Python's `json.dumps` emits them) and numbers too
/// large for a double.
fn syntax_error(content: &str, err: &serde_json::Error) -> ProtocolErrorKind {
    if err.is_eof() {
        return ProtocolErrorKind::Truncated;
    }
    if let Some((key, what)) = non_finite_literal(content) {
        return ProtocolErrorKind::NotFinite { key, what };
    }
    let message = err.to_string();
    if message.starts_with("number out of range") {
        return ProtocolErrorKind::NotFinite {
            key: "a number".to_owned(),
            what: "infinite",
        };
    }
    // Every line is parsed on its own, so serde's "at line 1" would contradict our line number.
    let message = match message.rfind(" at line ") {
        Some(at) => format!("{} at column {}", &message[..at], err.column()),
        None => message,
    };
    ProtocolErrorKind::Malformed { message }
}

/// Finds a bare `NaN` / `Infinity` / `inf` token outside JSON strings, and the key before it.
fn non_finite_literal(content: &str) -> Option<(String, &'static str)> {
    let bytes = content.as_bytes();
    let mut in_string = false;
    let mut escaped = false;
    let mut last_string: (usize, usize) = (0, 0);
    let mut string_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                last_string = (string_start, i);
            }
            i += 1;
            continue;
        }
        if b == b'"' {
            in_string = true;
            string_start = i + 1;
            i += 1;
            continue;
        }
        if b.is_ascii_alphabetic() {
            let end = bytes[i..]
                .iter()
                .position(|c| !c.is_ascii_alphanumeric())
                .map_or(bytes.len(), |p| i + p);
            let word = &content[i..end];
            let what = match word.to_ascii_lowercase().as_str() {
                "nan" => Some("NaN"),
                "infinity" | "inf" => Some("infinite"),
                _ => None,
            };
            if let Some(what) = what {
                let key = content
                    .get(last_string.0..last_string.1)
                    .filter(|k| !k.is_empty())
                    .map_or_else(|| "a value".to_owned(), sanitize);
                return Some((key, what));
            }
            i = end;
            continue;
        }
        i += 1;
    }
    None
}

/// Removes ANSI escape sequences (CSI, OSC, and two-byte escapes), C0 and C1 control characters
/// other than newline and tab, and Unicode bidirectional overrides, so that harness output cannot
/// move the cursor, retitle the terminal or reorder text. A carriage return that is not part of
/// `\r\n` rewinds the line, as a terminal would show it (progress bars).
#[must_use]
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut line_start = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI and OSC introducers: same as ESC [ and ESC ].
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' => skip_osc(&mut chars),
            '\n' => {
                out.push('\n');
                line_start = out.len();
            }
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    continue;
                }
                out.truncate(line_start);
            }
            '\t' => out.push('\t'),
            c if c.is_control() => {}
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']' | 'P' | 'X' | '^' | '_') => skip_osc(chars),
        // Two-byte escapes (ESC c, ESC 7, ...) and a lone trailing ESC: drop them.
        _ => {}
    }
}

/// CSI: parameter and intermediate bytes, ended by a final byte in 0x40..=0x7E.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
    }
}

/// OSC / DCS / APC / PM strings: ended by BEL or ST (ESC \ or U+009C).
fn skip_osc(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => return,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

/// The known keys of a protocol line; anything else is skipped.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(default, borrow)]
    step_ms: Json<'a>,
    #[serde(default, borrow)]
    steps_ms: Json<'a>,
    #[serde(default, borrow)]
    warmup: Json<'a>,
    #[serde(default, borrow)]
    env: Json<'a>,
    #[serde(default, borrow)]
    trace: Json<'a>,
    #[serde(default, borrow)]
    nsys: Json<'a>,
    #[serde(default, borrow)]
    ncu: Json<'a>,
    #[serde(default, borrow)]
    quality: Json<'a>,
    #[serde(default, borrow)]
    speculative: Json<'a>,
}

/// A JSON number as `serde_json` delivered it, so integers keep their exact text in `env`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Number {
    fn as_f64(self) -> f64 {
        match self {
            Number::Unsigned(n) => n as f64,
            Number::Signed(n) => n as f64,
            Number::Float(x) => x,
        }
    }

    fn text(self) -> String {
        match self {
            Number::Unsigned(n) => n.to_string(),
            Number::Signed(n) => n.to_string(),
            Number::Float(x) => x.to_string(),
        }
    }
}

/// A borrowed JSON value for the known keys only. `Absent` is the default of a missing key, so
/// that an explicit `null` is seen (and reported) rather than folded into "missing".
#[derive(Debug, Default)]
enum Json<'a> {
    #[default]
    Absent,
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl Json<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Json::Absent => "missing",
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::Str(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor(PhantomData))
    }
}

struct JsonVisitor<'a>(PhantomData<&'a ()>);

impl<'de: 'a, 'a> Visitor<'de> for JsonVisitor<'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Json::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Json::Number(Number::Unsigned(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Json::Number(Number::Signed(v)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Json::Number(Number::Float(v)))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::Str(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Json<'a>>()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Key<'a>>()? {
            let value = map.next_value::<Json<'a>>()?;
            entries.push((key.0, value));
        }
        Ok(Json::Object(entries))
    }
}

/// An object key, borrowed where the JSON text has no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Json::deserialize(deserializer)? {
            Json::Str(s) => Ok(Key(s)),
            _ => Err(de::Error::custom("object keys must be strings")),
        }
    }
}

#[cfg(test)]
mod tests;
