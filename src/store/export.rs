//! The portable baseline export (`utilgate baseline export|import`): one baseline per line so
//! reviewed diffs show which cases moved, and its parser. Pure: the command reads and writes
//! the file.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::case::{CaseKey, Verdict};
use crate::error::Error;
use crate::report::SCHEMA_VERSION;

/// One baseline in the portable export: enough to judge against it exactly as the store would.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// The export file: a header and one baseline per line, so diffs show which cases moved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportFile {
    pub schema_version: u32,
    pub gpu_sku: String,
    pub baselines: Vec<ExportedBaseline>,
}

/// Render an export with one baseline per line. Pure.
pub fn render_export(file: &ExportFile) -> Result<String, serde_json::Error> {
    let mut out = String::new();
    let _ = writeln!(out, "{{");
    let _ = writeln!(out, "  \"schema_version\": {},", file.schema_version);
    let _ = writeln!(
        out,
        "  \"gpu_sku\": {},",
        serde_json::to_string(&file.gpu_sku)?
    );
    let _ = writeln!(out, "  \"baselines\": [");
    for (i, b) in file.baselines.iter().enumerate() {
        let comma = if i + 1 < file.baselines.len() {
            ","
        } else {
            ""
        };
        let _ = writeln!(out, "    {}{comma}", serde_json::to_string(b)?);
    }
    let _ = writeln!(out, "  ]");
    let _ = writeln!(out, "}}");
    Ok(out)
}

/// Parse an export file; `origin` names it in errors. Pure.
pub fn parse_export(text: &str, origin: &Path) -> Result<ExportFile, Error> {
    let file: ExportFile = serde_json::from_str(text).map_err(|e| Error::BaselineFile {
        path: origin.to_path_buf(),
        message: e.to_string(),
    })?;
    if file.schema_version != SCHEMA_VERSION {
        return Err(Error::BaselineFile {
            path: origin.to_path_buf(),
            message: format!(
                "schema_version {} is not supported (this utilgate reads {SCHEMA_VERSION})",
                file.schema_version
            ),
        });
    }
    for b in &file.baselines {
        if b.repeats_ms
            .iter()
            .flatten()
            .any(|x| !(x.is_finite() && *x > 0.0))
        {
            return Err(Error::BaselineFile {
                path: origin.to_path_buf(),
                message: format!("case {}: a step time is not a positive number", b.key),
            });
        }
    }
    Ok(file)
}
