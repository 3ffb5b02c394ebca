//! `utilgate trace show|diff`: reads trace files (torch.profiler/Kineto JSON, an Nsight Systems
//! `SQLite` export or `.nsys-rep`, `nsys stats` CSVs, an `ncu --csv` file or `.ncu-rep`,
//! recognised by content and extension) or the analyses stored with a
//! run's results (I/O), analyses them with the pure evidence module and prints the renderings.

use std::path::Path;

use crate::case::CaseKey;
use crate::cli::{ConfigArgs, Format, TraceDiffArgs, TraceShowArgs};
use crate::error::Error;
use crate::evidence::nsight::{NsightSummary, ncu_diff, nsys_diff};
use crate::evidence::nsys_steps::NsysSteps;
use crate::evidence::{Analysis, Options, diagnose, diff};
use crate::outcome::Outcome;
use crate::output;
use crate::report::evidence::{analysis_json, analysis_text, diff_json, diff_text};
use crate::report::nsight::{
    kernel_diff_json, kernel_diff_text, ncu_json, ncu_text, nsys_json, nsys_text,
};
use crate::store::StoredEvidence;

/// A stored result named by `RUN --case KEY`, and the evidence stored with it.
struct StoredCase {
    run: i64,
    case: String,
    evidence: Vec<StoredEvidence>,
}

impl StoredCase {
    fn label(&self) -> String {
        format!("run {} {}", self.run, self.case)
    }

    fn no_trace(&self) -> Error {
        Error::NoTrace {
            run: self.run,
            case: self.case.clone(),
        }
    }
}

/// `RUN` (a stored run's id, not a file) with `--case`: that result's stored evidence. `None`
/// when `what` names a file.
fn stored_evidence(
    what: &Path,
    case: Option<&str>,
    config: &ConfigArgs,
) -> Result<Option<StoredCase>, Error> {
    let run_id = what.to_str().and_then(|s| s.parse::<i64>().ok());
    let (false, Some(run_id)) = (what.exists(), run_id) else {
        return Ok(None);
    };
    let case = case.ok_or_else(|| Error::TraceNeedsCase { run: run_id })?;
    let loaded = crate::config::load(&config.config).ok();
    let store_path = config
        .db
        .clone()
        .or_else(|| loaded.as_ref().map(|l| l.store_path(None)));
    let store_path = store_path.unwrap_or_else(|| crate::config::DEFAULT_STORE_PATH.into());
    let store = crate::pipeline::context::open_store(&store_path, 10.0)?;
    let run = store
        .run(crate::store::RunId(run_id))?
        .ok_or(Error::NoSuchRun(run_id))?;
    let key: CaseKey = run
        .results
        .iter()
        .map(|r| r.key.clone())
        .find(|k| k.to_string() == case)
        .ok_or_else(|| Error::NoSuchCase {
            run: run_id,
            case: case.to_owned(),
        })?;
    Ok(Some(StoredCase {
        run: run_id,
        case: case.to_owned(),
        evidence: store.evidence_for(crate::store::RunId(run_id), &key)?,
    }))
}

/// The trace analysis among a result's stored evidence.
fn stored_trace(stored: &[StoredEvidence]) -> Option<Analysis> {
    stored
        .iter()
        .filter(|e| e.kind == "trace")
        .find_map(|e| e.analysis.clone())
        .and_then(|v| serde_json::from_value(v).ok())
}

/// The Nsight summaries among a result's stored evidence: the file's name and its summary.
fn stored_nsight(stored: &[StoredEvidence]) -> Vec<(&str, NsightSummary)> {
    stored
        .iter()
        .filter(|e| e.kind == "nsys" || e.kind == "ncu")
        .filter_map(|e| {
            let summary = serde_json::from_value(e.analysis.clone()?).ok()?;
            Some((e.name.as_str(), summary))
        })
        .collect()
}

/// A trace file, or `RUN` (a stored run's id) with `--case`: the analysis stored with that result.
fn analysis_of(
    what: &Path,
    case: Option<&str>,
    config: &ConfigArgs,
) -> Result<(String, Analysis), Error> {
    if let Some(stored) = stored_evidence(what, case, config)? {
        return stored_trace(&stored.evidence)
            .map(|a| (stored.label(), a))
            .ok_or_else(|| stored.no_trace());
    }
    let (file, analysis, _) = crate::evidence::analyse_file(what, &Options::default())?;
    Ok((file.display().to_string(), analysis))
}

/// What a file holds, recognised by its content (not only its extension).
enum Kind {
    Kineto,
    /// An `SQLite` export, or a `.nsys-rep` exported with `nsys export` first.
    Nsys,
    /// `ncu --csv` text (a `.ncu-rep` read through `ncu --import --csv`).
    Ncu(String),
    /// `nsys stats --format csv` summaries.
    NsysStats(String),
}

impl Kind {
    fn label(&self) -> &'static str {
        match self {
            Kind::Kineto => "a torch.profiler trace",
            Kind::Nsys => "an Nsight Systems export",
            Kind::Ncu(_) => "an Nsight Compute CSV",
            Kind::NsysStats(_) => "an nsys stats CSV",
        }
    }
}

/// Sniffs `path`: `SQLite` magic bytes mean an nsys export; a text with an `ncu --csv` header
/// (after any program output) an ncu file; anything else (JSON, gzip, a directory) a trace.
fn kind_of(path: &Path) -> Result<Kind, Error> {
    use crate::measure::profiler as nsight;
    if path.is_dir() {
        return Ok(Kind::Kineto);
    }
    if nsight::is_nsys_report(path) {
        return Ok(Kind::Nsys);
    }
    if nsight::is_ncu_report(path) {
        let bin = nsight::find("ncu");
        return Ok(Kind::Ncu(nsight::ncu_text(
            path,
            bin.as_deref(),
            crate::evidence::file::DEFAULT_CAP_BYTES,
        )?));
    }
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    // Sniff the head only: a trace is streamed later and never read whole here.
    let mut head = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(crate::evidence::file::open_regular(path).map_err(io)?, 4096),
        &mut head,
    )
    .map_err(io)?;
    // A file named as an export is read as one, so that one that is not (empty, text, gzip)
    // gets the export's error and its fix, not a torch.profiler trace's.
    if head.starts_with(crate::evidence::nsys_sqlite::SQLITE_MAGIC)
        || crate::evidence::nsys_sqlite::named_as_export(path)
    {
        return Ok(Kind::Nsys);
    }
    let first = head.iter().find(|b| !b.is_ascii_whitespace());
    if matches!(first, Some(b'{' | 0x1f) | None) && (first.is_some() || head.len() < 4096) {
        return Ok(Kind::Kineto);
    }
    let bytes = crate::evidence::file::read_capped(path, crate::evidence::file::DEFAULT_CAP_BYTES)
        .map_err(io)?;
    match String::from_utf8(bytes) {
        Ok(text) if crate::evidence::ncu::looks_like(&text) => Ok(Kind::Ncu(text)),
        Ok(text) if crate::evidence::nsys_stats::looks_like(&text) => Ok(Kind::NsysStats(text)),
        _ => Ok(Kind::Kineto),
    }
}

fn ncu_of(path: &Path, text: &str) -> Result<crate::evidence::ncu::NcuReport, Error> {
    crate::evidence::ncu::parse(text).map_err(|source| Error::Ncu {
        path: path.to_owned(),
        source,
    })
}

/// The `nsys stats` summaries of an export (a `.nsys-rep` is exported beside itself first) with
/// its per-NVTX-step analysis, or of an `nsys stats` CSV (no timeline, so no steps).
fn nsys_of(
    path: &Path,
    kind: &Kind,
) -> Result<(crate::evidence::nsys::Summary, Option<NsysSteps>), Error> {
    if let Kind::NsysStats(text) = kind {
        let reports = crate::evidence::nsys_stats::parse(text, path.to_str()).map_err(|e| {
            Error::NsysStatsCsv {
                path: path.to_owned(),
                problem: e.to_string(),
            }
        })?;
        return Ok((crate::evidence::nsys_stats::summary(&reports), None));
    }
    let nsys = crate::measure::profiler::find("nsys");
    let sqlite = crate::measure::profiler::nsys_sqlite(path, nsys.as_deref(), None)?;
    // The same reading as a run's capture: a file shows what its stored copy would.
    let (summary, steps) = crate::measure::profiler::summarise_nsys(&sqlite, &Options::default())?;
    Ok((summary, Some(steps)))
}

/// A file path (not a run id) that holds Nsight evidence.
fn nsight_kind(what: &Path) -> Result<Option<Kind>, Error> {
    if !what.exists() {
        return Ok(None);
    }
    Ok(match kind_of(what)? {
        Kind::Kineto => None,
        k => Some(k),
    })
}

fn show_nsight(args: &TraceShowArgs, kind: &Kind) -> Result<Outcome, Error> {
    let path = &args.trace;
    let source = path.display().to_string();
    let text = match (kind, args.format.format) {
        (Kind::Ncu(t), Format::Human) => ncu_text(&source, &ncu_of(path, t)?, args.top),
        (Kind::Ncu(t), Format::Json) => format!("{:#}\n", ncu_json(&source, &ncu_of(path, t)?)),
        (_, format) => {
            let (summary, steps) = nsys_of(path, kind)?;
            match format {
                Format::Human => nsys_text(&source, &summary, steps.as_ref(), args.top),
                Format::Json => format!("{:#}\n", nsys_json(&source, &summary, steps.as_ref())),
            }
        }
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

fn diff_nsight(args: &TraceDiffArgs, then: &Kind, now: &Kind) -> Result<Outcome, Error> {
    let (tp, np) = (&args.then, &args.now);
    let (kind, changes) = match (then, now) {
        (Kind::Ncu(a), Kind::Ncu(b)) => ("ncu", ncu_diff(&ncu_of(tp, a)?, &ncu_of(np, b)?)),
        (Kind::Nsys | Kind::NsysStats(_), Kind::Nsys | Kind::NsysStats(_)) => (
            "nsys",
            nsys_diff(&nsys_of(tp, then)?.0.kernels, &nsys_of(np, now)?.0.kernels),
        ),
        _ => {
            return Err(Error::EvidenceKinds {
                then: tp.clone(),
                then_kind: then.label().to_string(),
                now: np.clone(),
                now_kind: now.label().to_string(),
            });
        }
    };
    let (ts, ns) = (tp.display().to_string(), np.display().to_string());
    let text = match args.format.format {
        Format::Human => kernel_diff_text(kind, &ts, &ns, &changes, args.top),
        Format::Json => format!("{:#}\n", kernel_diff_json(kind, &ts, &ns, &changes)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

pub fn show(args: &TraceShowArgs) -> Result<Outcome, Error> {
    if let Some(kind) = nsight_kind(&args.trace)? {
        return show_nsight(args, &kind);
    }
    if let Some(stored) = stored_evidence(&args.trace, args.case.as_deref(), &args.config)? {
        return show_stored(args, &stored);
    }
    let (file, a, _) = crate::evidence::analyse_file(&args.trace, &Options::default())?;
    let source = file.display().to_string();
    let diagnosis = diagnose(&a, None);
    let text = match args.format.format {
        Format::Human => analysis_text(&source, &a, &diagnosis, args.top),
        Format::Json => format!("{:#}\n", analysis_json(&source, &a, &diagnosis)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

/// A stored result's evidence: its trace analysis and its Nsight summaries, whichever it has.
/// JSON: the trace's object with the summaries under `nsight` (`[{file, ...}]`).
fn show_stored(args: &TraceShowArgs, stored: &StoredCase) -> Result<Outcome, Error> {
    let trace = stored_trace(&stored.evidence);
    let nsight = stored_nsight(&stored.evidence);
    if trace.is_none() && nsight.is_empty() {
        return Err(stored.no_trace());
    }
    let source = &stored.label();
    let text = match args.format.format {
        Format::Human => {
            let mut parts: Vec<String> = trace
                .iter()
                .map(|a| analysis_text(source, a, &diagnose(a, None), args.top))
                .collect();
            for (name, summary) in &nsight {
                let label = format!("{source} ({name})");
                parts.push(match summary {
                    NsightSummary::Nsys { summary, steps, .. } => {
                        nsys_text(&label, summary, Some(steps), args.top)
                    }
                    NsightSummary::Ncu { report, .. } => ncu_text(&label, report, args.top),
                });
            }
            parts.join("\n")
        }
        Format::Json => {
            let mut value = match &trace {
                Some(a) => analysis_json(source, a, &diagnose(a, None)),
                None => serde_json::json!({ "schema_version": 1, "trace": null }),
            };
            let files: Vec<serde_json::Value> = nsight
                .iter()
                .map(|(name, summary)| {
                    let mut v = match summary {
                        NsightSummary::Nsys { summary, steps, .. } => {
                            nsys_json(source, summary, Some(steps))
                        }
                        NsightSummary::Ncu { report, .. } => ncu_json(source, report),
                    };
                    v["file"] = serde_json::Value::from(*name);
                    v
                })
                .collect();
            if !files.is_empty() {
                value["nsight"] = serde_json::Value::from(files);
            }
            format!("{value:#}\n")
        }
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

pub fn diff_cmd(args: &TraceDiffArgs) -> Result<Outcome, Error> {
    let (then_kind, now_kind) = (nsight_kind(&args.then)?, nsight_kind(&args.now)?);
    if then_kind.is_some() || now_kind.is_some() {
        let then_kind = then_kind.unwrap_or(Kind::Kineto);
        let now_kind = now_kind.unwrap_or(Kind::Kineto);
        return diff_nsight(args, &then_kind, &now_kind);
    }
    let (then_src, then) = analysis_of(&args.then, args.case.as_deref(), &args.config)?;
    let (now_src, now) = analysis_of(&args.now, args.case.as_deref(), &args.config)?;
    let d = diff(&then, &now);
    let text = match args.format.format {
        Format::Human => diff_text(&then_src, &now_src, &d, args.top),
        Format::Json => format!("{:#}\n", diff_json(&then_src, &now_src, &d)),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}
