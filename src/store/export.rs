//! The portable baseline files (`baselines/<gpu-sku>.json`, written by `utilgate baseline
//! export`, read by `baseline import|diff` and `run --baselines`): their format, rendering and
//! parsing. Pure: the commands read and write the files.
//!
//! Schema version 2 (baselines/README.md documents it) writes each case as a block of three
//! lines, so a reviewed diff reads case by case: first the reviewed figures (floor, median
//! step time, utilisation, n, repeats, commit, dates, how the baseline moved and why), then the
//! details a report needs, last the raw samples the noise model judges against. Version 1 (one
//! case per line, every field flat) is still read.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::{CaseKey, Verdict};
use crate::error::Error;

/// The version of the baseline file's own format. It moves on its own: a change to the JSON
/// report's schema (`report::SCHEMA_VERSION`) never makes older baseline files unreadable.
pub const EXPORT_SCHEMA_VERSION: u32 = 2;

/// The oldest version this utilgate still reads.
pub const OLDEST_READ_VERSION: u32 = 1;

/// One baseline, as every version of the file holds it: enough to judge against it exactly as
/// the store would. This is schema version 1's line, field for field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedBaseline {
    pub key: CaseKey,
    pub run_id: i64,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub measured_at: String,
    pub moved_at: String,
    pub how: String,
    pub reason: String,
    pub verdict: Option<Verdict>,
    pub floor_ms: Option<f64>,
    pub floor: Option<serde_json::Value>,
    pub median_ms: Option<f64>,
    pub utilisation: Option<f64>,
    pub mbu: Option<f64>,
    pub mfu: Option<f64>,
    pub summary: Option<serde_json::Value>,
    pub env: BTreeMap<String, String>,
    pub repeats_ms: Vec<Vec<f64>>,
}

/// The baselines of one GPU SKU, whatever version of the file they were read from.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportFile {
    pub schema_version: u32,
    pub gpu_sku: String,
    pub baselines: Vec<ExportedBaseline>,
}

/// Schema version 1: a header and one flat baseline per line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV1 {
    /// Checked by [`version_of`] before this struct is read.
    #[serde(rename = "schema_version")]
    _schema_version: u32,
    gpu_sku: String,
    baselines: Vec<ExportedBaseline>,
}

/// Schema version 2's file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileV2 {
    /// Checked by [`version_of`] before this struct is read.
    #[serde(rename = "schema_version")]
    _schema_version: u32,
    gpu_sku: String,
    baselines: Vec<CaseV2>,
}

/// The reviewed figures of a case: the first line of its block.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reviewed {
    case: String,
    floor_ms: Option<f64>,
    median_ms: Option<f64>,
    utilisation: Option<f64>,
    /// Counted samples, over all repeats.
    n: usize,
    repeats: usize,
    commit: Option<String>,
    measured_at: String,
    moved_at: String,
    how: String,
    reason: String,
}

/// What a report needs beside the reviewed figures: the second line of a case's block.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Detail {
    key: CaseKey,
    branch: Option<String>,
    verdict: Option<Verdict>,
    mbu: Option<f64>,
    mfu: Option<f64>,
    floor: Option<serde_json::Value>,
    summary: Option<serde_json::Value>,
    env: BTreeMap<String, String>,
}

/// One case of schema version 2 (as read; written line by line by [`render_export`]).
#[derive(Deserialize)]
struct CaseV2 {
    #[serde(flatten)]
    reviewed: ReviewedFields,
    detail: Detail,
    samples_ms: Vec<Vec<f64>>,
}

/// [`Reviewed`] under `flatten` (serde cannot deny unknown fields through a flattened struct,
/// so the case's own `deny_unknown_fields` is replaced by this map's check).
#[derive(Deserialize)]
struct ReviewedFields(BTreeMap<String, serde_json::Value>);

fn reviewed_of(b: &ExportedBaseline) -> Reviewed {
    Reviewed {
        case: b.key.to_string(),
        floor_ms: b.floor_ms,
        median_ms: b.median_ms,
        utilisation: b.utilisation,
        n: b.repeats_ms.iter().map(Vec::len).sum(),
        repeats: b.repeats_ms.len(),
        commit: b.git_sha.clone(),
        measured_at: b.measured_at.clone(),
        moved_at: b.moved_at.clone(),
        how: b.how.clone(),
        reason: b.reason.clone(),
    }
}

/// Render the baselines of one GPU SKU as schema version 2, cases in key order. Pure.
pub fn render_export(file: &ExportFile) -> Result<String, serde_json::Error> {
    let mut baselines: Vec<&ExportedBaseline> = file.baselines.iter().collect();
    baselines.sort_by(|a, b| a.key.cmp(&b.key));
    let mut out = String::new();
    let _ = writeln!(out, "{{");
    let _ = writeln!(out, "  \"schema_version\": {EXPORT_SCHEMA_VERSION},");
    let _ = writeln!(
        out,
        "  \"gpu_sku\": {},",
        serde_json::to_string(&file.gpu_sku)?
    );
    let _ = writeln!(out, "  \"baselines\": [");
    for (i, b) in baselines.iter().enumerate() {
        let reviewed = serde_json::to_string(&reviewed_of(b))?;
        // The reviewed figures open the block: drop the closing brace to continue the object.
        let reviewed = reviewed.strip_suffix('}').unwrap_or(&reviewed);
        let detail = Detail {
            key: b.key.clone(),
            branch: b.branch.clone(),
            verdict: b.verdict,
            mbu: b.mbu,
            mfu: b.mfu,
            floor: b.floor.clone(),
            summary: b.summary.clone(),
            env: b.env.clone(),
        };
        let comma = if i + 1 < baselines.len() { "," } else { "" };
        let _ = writeln!(out, "    {reviewed},");
        let _ = writeln!(out, "     \"detail\": {},", serde_json::to_string(&detail)?);
        let _ = writeln!(
            out,
            "     \"samples_ms\": {}}}{comma}",
            serde_json::to_string(&b.repeats_ms)?
        );
    }
    let _ = writeln!(out, "  ]");
    let _ = writeln!(out, "}}");
    Ok(out)
}

fn field_error(origin: &Path, field: &str, message: impl Into<String>) -> Error {
    Error::BaselineField {
        path: origin.to_path_buf(),
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Deserialise `text` as `T`, naming the field (`baselines[3].detail.key`) of any error.
fn read_as<T: serde::de::DeserializeOwned>(text: &str, origin: &Path) -> Result<T, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        if field == "." || inner.is_syntax() || inner.is_eof() {
            Error::BaselineFile {
                path: origin.to_path_buf(),
                message: inner.to_string(),
            }
        } else {
            field_error(origin, &field, inner.to_string())
        }
    })
}

/// The schema version a file declares, before its body is read.
fn version_of(text: &str, origin: &Path) -> Result<u32, Error> {
    #[derive(Deserialize)]
    struct Header {
        schema_version: Option<serde_json::Value>,
    }
    let header: Header = read_as(text, origin)?;
    let Some(value) = header.schema_version else {
        return Err(field_error(origin, "schema_version", "missing"));
    };
    value
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            field_error(
                origin,
                "schema_version",
                format!("{value} is not a version"),
            )
        })
}

/// A case of version 2 back as an [`ExportedBaseline`], its reviewed figures checked against
/// its details and samples.
fn from_v2(i: usize, case: CaseV2, origin: &Path) -> Result<ExportedBaseline, Error> {
    let at = |field: &str| {
        if field == "." {
            format!("baselines[{i}]")
        } else {
            format!("baselines[{i}].{field}")
        }
    };
    let value = serde_json::Value::Object(case.reviewed.0.into_iter().collect());
    let reviewed: Reviewed = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        field_error(origin, &at(&field), e.into_inner().to_string())
    })?;
    let d = case.detail;
    if reviewed.case != d.key.to_string() {
        return Err(field_error(
            origin,
            &at("case"),
            format!("{:?} does not match detail.key ({})", reviewed.case, d.key),
        ));
    }
    let n: usize = case.samples_ms.iter().map(Vec::len).sum();
    if reviewed.n != n || reviewed.repeats != case.samples_ms.len() {
        return Err(field_error(
            origin,
            &at("n"),
            format!(
                "n = {} over {} repeats, but samples_ms holds {n} over {}",
                reviewed.n,
                reviewed.repeats,
                case.samples_ms.len()
            ),
        ));
    }
    Ok(ExportedBaseline {
        key: d.key,
        // Version 2 keeps no run id: it is the exporting store's own numbering.
        run_id: 0,
        git_sha: reviewed.commit,
        branch: d.branch,
        measured_at: reviewed.measured_at,
        moved_at: reviewed.moved_at,
        how: reviewed.how,
        reason: reviewed.reason,
        verdict: d.verdict,
        floor_ms: reviewed.floor_ms,
        floor: d.floor,
        median_ms: reviewed.median_ms,
        utilisation: reviewed.utilisation,
        mbu: d.mbu,
        mfu: d.mfu,
        summary: d.summary,
        env: d.env,
        repeats_ms: case.samples_ms,
    })
}

/// Parse a baseline file of any version this utilgate reads; `origin` names it in errors.
/// Pure.
pub fn parse_export(text: &str, origin: &Path) -> Result<ExportFile, Error> {
    let version = version_of(text, origin)?;
    let (gpu_sku, baselines) = match version {
        1 => {
            let file: FileV1 = read_as(text, origin)?;
            (file.gpu_sku, file.baselines)
        }
        2 => {
            let file: FileV2 = read_as(text, origin)?;
            let baselines = file
                .baselines
                .into_iter()
                .enumerate()
                .map(|(i, c)| from_v2(i, c, origin))
                .collect::<Result<_, _>>()?;
            (file.gpu_sku, baselines)
        }
        other => {
            return Err(Error::BaselineVersion {
                path: origin.to_path_buf(),
                found: other,
                newest: EXPORT_SCHEMA_VERSION,
                oldest: OLDEST_READ_VERSION,
            });
        }
    };
    check_samples(&baselines, origin)?;
    check_figures(&baselines, origin)?;
    Ok(ExportFile {
        schema_version: version,
        gpu_sku,
        baselines,
    })
}

fn check_samples(baselines: &[ExportedBaseline], origin: &Path) -> Result<(), Error> {
    for (i, b) in baselines.iter().enumerate() {
        if b.repeats_ms
            .iter()
            .flatten()
            .any(|x| !(x.is_finite() && *x > 0.0))
        {
            return Err(field_error(
                origin,
                &format!("baselines[{i}].samples_ms"),
                format!("case {}: a step time is not a positive number", b.key),
            ));
        }
    }
    Ok(())
}

/// The largest step time (ms) a baseline may state: about 11.6 days.
const MAX_STEP_MS: f64 = 1e9;
/// The largest utilisation (or MBU, MFU) a baseline may state: a floor can be beaten a little
/// by a device faster than its datasheet, never by half again.
const MAX_UTILISATION: f64 = 1.5;

/// The figures a baseline states must be ones a measurement could give, and each case must be
/// listed once: a hand edit of `-4`, `0`, `1e308` or a utilisation of 5 would otherwise be
/// stored and judged against.
fn check_figures(baselines: &[ExportedBaseline], origin: &Path) -> Result<(), Error> {
    let mut seen: BTreeMap<&CaseKey, usize> = BTreeMap::new();
    for (i, b) in baselines.iter().enumerate() {
        for (name, value) in [("median_ms", b.median_ms), ("floor_ms", b.floor_ms)] {
            if let Some(x) = value
                && !(x.is_finite() && x > 0.0 && x <= MAX_STEP_MS)
            {
                return Err(field_error(
                    origin,
                    &format!("baselines[{i}].{name}"),
                    format!(
                        "case {}: {x} is not a step time (a positive number of milliseconds up to {MAX_STEP_MS:e})",
                        b.key
                    ),
                ));
            }
        }
        for (name, value) in [
            ("utilisation", b.utilisation),
            ("detail.mbu", b.mbu),
            ("detail.mfu", b.mfu),
        ] {
            if let Some(x) = value
                && !(0.0..=MAX_UTILISATION).contains(&x)
            {
                return Err(field_error(
                    origin,
                    &format!("baselines[{i}].{name}"),
                    format!(
                        "case {}: {x} is not a utilisation (a fraction from 0 to {MAX_UTILISATION})",
                        b.key
                    ),
                ));
            }
        }
        if let Some(first) = seen.insert(&b.key, i) {
            return Err(field_error(
                origin,
                &format!("baselines[{i}].case"),
                format!(
                    "case {} is listed twice (also baselines[{first}]): keep one",
                    b.key
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
