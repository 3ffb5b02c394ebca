//! Traces in `utilgate run` and the stored-run reports (I/O: reads, compresses and hashes the
//! files a harness wrote; reads evidence from the store). The analysis and the report's evidence
//! are pure (`evidence`, `report::evidence`); a bad trace becomes a warning, never an error.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::case::CaseKey;
use crate::config::EvidenceConfig;
use crate::error::Error;
use crate::evidence::classify::RuleError;
use crate::evidence::{Analysis, Category, Classifier, Options, source};
use crate::report::RunReport;
use crate::report::evidence::case_evidence;
use crate::store::{NewEvidence, RunId, Store};

/// The variable that asks a harness for a trace and says where to write it.
pub const TRACE_DIR_ENV: &str = "UTILGATE_TRACE_DIR";

/// Analysis options from `[evidence]`: the configured classifier rules before the built-ins.
pub fn options(cfg: &EvidenceConfig) -> Result<Options, Error> {
    let mut rules = Vec::with_capacity(cfg.classify.len());
    for (index, rule) in cfg.classify.iter().enumerate() {
        let category = Category::from_label(&rule.category).ok_or_else(|| RuleError::Category {
            index,
            category: rule.category.clone(),
        })?;
        rules.push((rule.pattern.clone(), category));
    }
    Ok(Options {
        classifier: Classifier::new(&rules)?,
        ..Options::default()
    })
}

/// Where the bytes written so far are counted, so that compressing stops at the cap.
struct Capped {
    bytes: Vec<u8>,
    cap: u64,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if (self.bytes.len() + buf.len()) as u64 > self.cap {
            return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The gzip of `file` (kept as is when it is gzip already), or `None` when it is over `cap`
/// bytes: reading and compressing stop there, so what is held is bounded by the cap. Only a
/// regular file is read (a FIFO or a device is an error).
fn compressed(file: &Path, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut f = crate::evidence::file::open_regular(file)?;
    let mut head = [0u8; 2];
    let n = f.read(&mut head)?;
    let mut input = std::io::Cursor::new(head[..n].to_vec()).chain(f);
    let out = Capped {
        bytes: Vec::new(),
        cap,
    };
    let packed = if head[..n] == [0x1f, 0x8b] {
        let mut out = out;
        std::io::copy(&mut input, &mut out).map(|_| out)
    } else {
        let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
        std::io::copy(&mut input, &mut gz).and_then(|_| gz.finish())
    };
    match packed {
        Ok(out) => Ok(Some(out.bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Ok(None),
        Err(e) => Err(e),
    }
}

/// The SHA-256 of compressed bytes, as the store keys them.
fn content_address(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut acc, b| {
            let _ = write!(acc, "{b:02x}");
            acc
        })
}

/// A file as the store keeps it: its content address and its gzip (kept as is when gzip), or
/// `None` when its gzip is over `cap` bytes.
pub(crate) fn pack(file: &Path, cap: u64) -> std::io::Result<Option<(String, Vec<u8>)>> {
    Ok(compressed(file, cap)?.map(|bytes| (content_address(&bytes), bytes)))
}

/// Reads, analyses and packs the trace a traced repeat wrote: the path it reported (relative to
/// the harness's working directory), else the trace directory (its newest trace).
#[must_use]
pub fn capture(
    key: &CaseKey,
    reported: &[String],
    cwd: &Path,
    trace_dir: &Path,
    max_bytes: u64,
    options: &Options,
) -> NewEvidence {
    let path = reported
        .last()
        .map_or_else(|| trace_dir.to_path_buf(), |p| cwd.join(p));
    let mut evidence = NewEvidence {
        key: key.clone(),
        kind: "trace".into(),
        name: reported
            .last()
            .cloned()
            .unwrap_or_else(|| "(trace directory)".into()),
        blob: None,
        analysis: None,
        warning: None,
    };
    let (file, analysis, _) = match source::analyse_file(&path, options) {
        Ok(analysed) => analysed,
        Err(e) => {
            evidence.warning = Some(format!("trace not analysed: {e}"));
            return evidence;
        }
    };
    if let Some(name) = file.file_name() {
        evidence.name = name.to_string_lossy().into_owned();
    }
    if !analysis.has_gpu && analysis.operators.is_empty() {
        evidence.warning = Some("the trace holds no GPU rows and no host operators".into());
    }
    evidence.analysis = serde_json::to_value(&analysis).ok();
    match pack(&file, max_bytes) {
        Ok(None) => {
            evidence.warning = Some(format!(
                "the trace is over {:.1} MB compressed ([evidence] max_trace_mb): only its analysis is stored",
                max_bytes as f64 / 1e6
            ));
        }
        Ok(Some(blob)) => evidence.blob = Some(blob),
        Err(e) => evidence.warning = Some(format!("the trace could not be stored: {e}")),
    }
    evidence
}

/// The newest Nsight evidence of each kind of a case, diffed against the baseline's.
fn nsight_of(
    store: &Store,
    run_id: RunId,
    case: &crate::report::CaseReport,
) -> Vec<crate::report::nsight::NsightCaseEvidence> {
    use crate::evidence::nsight::NsightSummary;
    let newest = |run: RunId, kind: &str| {
        store
            .evidence_for(run, &case.key)
            .ok()?
            .into_iter()
            .find(|e| e.kind == kind)
    };
    let summary = |e: &crate::store::StoredEvidence| -> Option<NsightSummary> {
        serde_json::from_value(e.analysis.clone()?).ok()
    };
    let mut out = Vec::new();
    for kind in ["nsys", "ncu"] {
        let Some(now) = newest(run_id, kind) else {
            continue;
        };
        let then = case
            .baseline
            .as_ref()
            .filter(|b| b.run_id != run_id.0)
            .and_then(|b| newest(RunId(b.run_id), kind))
            .as_ref()
            .and_then(summary);
        out.push(crate::report::nsight::case_nsight(
            kind,
            &now.name,
            now.warning.clone(),
            summary(&now).as_ref(),
            then.as_ref(),
        ));
    }
    out
}

fn first_analysis(
    store: &Store,
    run_id: RunId,
    key: &CaseKey,
) -> Option<(String, Option<String>, Option<Analysis>)> {
    let ev = store
        .evidence_for(run_id, key)
        .ok()?
        .into_iter()
        .find(|e| e.kind == "trace")?;
    let analysis = ev.analysis.and_then(|v| serde_json::from_value(v).ok());
    Some((ev.name, ev.warning, analysis))
}

/// Attaches to every case of `report` the evidence stored with its result, diffed against the
/// evidence of the case's baseline result.
pub fn attach(store: &Store, report: &mut RunReport) {
    let run_id = RunId(report.run.id);
    let mut analysed: Vec<(usize, Analysis)> = Vec::new();
    for (i, case) in report.cases.iter_mut().enumerate() {
        case.nsight = nsight_of(store, run_id, case);
        let Some((name, warning, now)) = first_analysis(store, run_id, &case.key) else {
            continue;
        };
        let then = case
            .baseline
            .as_ref()
            .filter(|b| b.run_id != run_id.0)
            .and_then(|b| first_analysis(store, RunId(b.run_id), &case.key))
            .and_then(|(_, _, a)| a);
        case.evidence = Some(case_evidence(
            &name,
            warning,
            now.as_ref(),
            then.as_ref(),
            // The MBU the report shows for the case: of the step the verdict weighs.
            case.mbu_now.or(case.mbu),
        ));
        if let Some(a) = now {
            analysed.push((i, a));
        }
    }
    attention_across_contexts(report, &analysed);
}

/// Across the contexts of one suite's otherwise equal cases (same model, precision, phase,
/// batch and axes), whether attention time per step grows faster than the context: the
/// sentence goes to the diagnosis of the largest context's case. `analysed` holds each traced
/// case's analysis by its index in `report.cases`.
fn attention_across_contexts(report: &mut RunReport, analysed: &[(usize, Analysis)]) {
    let mut groups: std::collections::BTreeMap<CaseKey, Vec<(u64, usize, &Analysis)>> =
        std::collections::BTreeMap::new();
    for (i, a) in analysed {
        let key = &report.cases[*i].key;
        let group = CaseKey {
            context: 0,
            ..key.clone()
        };
        groups.entry(group).or_default().push((key.context, *i, a));
    }
    for points in groups.values() {
        let pairs: Vec<(u64, &Analysis)> = points.iter().map(|(c, _, a)| (*c, *a)).collect();
        let Some(sentence) = crate::evidence::diagnosis::attention_growth(&pairs) else {
            continue;
        };
        if let Some((_, i, _)) = points.iter().max_by_key(|(c, _, _)| *c)
            && let Some(evidence) = report.cases[*i].evidence.as_mut()
        {
            evidence.diagnosis.push(sentence);
        }
    }
}

/// One line per case whose evidence this run captured: "KEY: evidence captured: 1 profiler
/// trace, 1 Nsight Systems file (stored with the run)", with what was not kept named.
pub(crate) fn captured_lines(evidence: &[crate::store::NewEvidence]) -> Vec<String> {
    use std::collections::BTreeMap;
    let mut by_case: BTreeMap<String, BTreeMap<&str, (usize, usize)>> = BTreeMap::new();
    for e in evidence {
        let what = match e.kind.as_str() {
            "trace" => "profiler trace",
            "nsys" => "Nsight Systems file",
            "ncu" => "Nsight Compute file",
            other => other,
        };
        let slot = by_case
            .entry(e.key.to_string())
            .or_default()
            .entry(what)
            .or_default();
        slot.0 += 1;
        if e.blob.is_none() {
            slot.1 += 1;
        }
    }
    by_case
        .into_iter()
        .map(|(key, kinds)| {
            let parts: Vec<String> = kinds
                .into_iter()
                .map(|(what, (n, unkept))| {
                    let plural = if n == 1 { "" } else { "s" };
                    if unkept > 0 {
                        format!("{n} {what}{plural} ({unkept} too large to keep)")
                    } else {
                        format!("{n} {what}{plural}")
                    }
                })
                .collect();
            format!("{key}: evidence captured: {}", parts.join(", "))
        })
        .collect()
}
