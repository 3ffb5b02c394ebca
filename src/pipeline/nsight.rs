//! Nsight Systems and Nsight Compute files in `utilgate run` and `utilgate trace`: the file a
//! profiled repeat wrote, read (`measure::profiler`), summarised and packed as the case's
//! stored evidence. A file that cannot be read becomes a warning on the case, never an error
//! of the run.

#![expect(clippy::disallowed_methods, reason = "Nsight exports are files")]

use std::path::{Path, PathBuf};

use crate::case::CaseKey;
use crate::evidence::nsight::NsightSummary;
use crate::evidence::{Options, ncu};
use crate::measure::profiler::{
    NsightFileError, Profiler, find, is_ncu_report, ncu_text, nsys_sqlite, summarise_nsys,
};
use crate::store::NewEvidence;

/// Reads the Nsight file at `path` (`kind` "nsys" or "ncu") into its stored summary and the file
/// to keep (the export or the CSV); `scratch` takes an export made here. Only a regular file is
/// read, a CSV only up to `cap` bytes.
pub fn read(
    kind: &str,
    path: &Path,
    scratch: &Path,
    cap: u64,
    options: &Options,
) -> Result<(NsightSummary, PathBuf, Vec<String>), NsightFileError> {
    if kind == "nsys" {
        let out = scratch.join(
            path.file_stem()
                .map_or_else(|| "report".into(), |s| s.to_string_lossy().into_owned())
                + ".sqlite",
        );
        let nsys_bin = find("nsys");
        let sqlite = nsys_sqlite(path, nsys_bin.as_deref(), Some(&out))?;
        let (summary, steps) = summarise_nsys(&sqlite, options)?;
        let mut notes = Vec::new();
        if summary.kernels.is_empty() {
            notes.push("the export holds no kernels (did the harness call cudaProfilerStart? the capture range is cudaProfilerApi)".into());
        }
        return Ok((NsightSummary::nsys(summary, steps), sqlite, notes));
    }
    let ncu_bin = find("ncu");
    let text = ncu_text(path, ncu_bin.as_deref(), cap)?;
    let report = ncu::parse(&text).map_err(|source| NsightFileError::Ncu {
        path: path.to_owned(),
        source,
    })?;
    let file = if is_ncu_report(path) {
        let csv = scratch.join("ncu.csv");
        std::fs::write(&csv, &text).map_err(|source| NsightFileError::Io {
            path: csv.clone(),
            source,
        })?;
        csv
    } else {
        path.to_owned()
    };
    let mut notes = Vec::new();
    if report.kernels.is_empty() {
        notes.push("ncu profiled no kernel (does kernel_regex match a kernel name?)".into());
    }
    Ok((NsightSummary::ncu(report), file, notes))
}

/// The evidence of one Nsight file: its summary and the compressed file, or a warning.
#[must_use]
pub fn evidence(
    key: &CaseKey,
    kind: &str,
    path: &Path,
    max_bytes: u64,
    options: &Options,
) -> NewEvidence {
    let mut ev = NewEvidence {
        key: key.clone(),
        kind: kind.to_owned(),
        name: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        blob: None,
        analysis: None,
        warning: None,
    };
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            ev.warning = Some(format!("{kind} file not read: no scratch directory: {e}"));
            return ev;
        }
    };
    let (summary, file, notes) = match read(kind, path, scratch.path(), max_bytes, options) {
        Ok(read) => read,
        Err(e) => {
            ev.warning = Some(format!("{kind} file not read: {}", e.warning()));
            return ev;
        }
    };
    ev.analysis = serde_json::to_value(&summary).ok();
    let mut warnings = notes;
    match crate::pipeline::evidence::pack(&file, max_bytes) {
        Ok(None) => warnings.push(format!(
            "the {kind} file is over {:.1} MB compressed ([evidence] max_trace_mb): only its summary is stored",
            max_bytes as f64 / 1e6
        )),
        Ok(Some(blob)) => ev.blob = Some(blob),
        Err(e) => warnings.push(format!("the {kind} file could not be stored: {e}")),
    }
    if !warnings.is_empty() {
        ev.warning = Some(warnings.join("; "));
    }
    ev
}

/// The evidence of a profiler that is not installed: a warning, the verdict stands.
#[must_use]
pub fn missing(key: &CaseKey, profiler: &Profiler) -> NewEvidence {
    let program = profiler.program();
    NewEvidence {
        key: key.clone(),
        kind: program.to_owned(),
        name: format!("({program} not run)"),
        blob: None,
        analysis: None,
        warning: Some(format!(
            "{program} is not on PATH, so the {program} repeat was not run (fix: {}; or have the harness report a file with {{\"{program}\": \"path\"}}); the verdict stands",
            profiler.install_hint()
        )),
    }
}
