//! Readers of an existing benchmark history for `utilgate import history`: a CSV with a
//! documented header, github-action-benchmark's `data.js` (or its JSON), and Bencher Metric
//! Format (BMF) files. Each night keeps its own date, commit and branch; each benchmark name
//! becomes a case key by the naming rule or a case map; every value becomes milliseconds or is
//! refused. Pure: the text and its origin arrive as arguments (docs/import.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use jiff::Timestamp;
use serde::Deserialize;
use thiserror::Error;

use crate::case::CaseKey;

/// The file formats `import history` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryFormat {
    Csv,
    Bmf,
    Gab,
}

impl HistoryFormat {
    /// The format a file's name and first characters say (`--format auto`).
    #[must_use]
    pub fn detect(name: &str, text: &str) -> Option<HistoryFormat> {
        let head = text.trim_start();
        if head.starts_with("window.BENCHMARK_DATA") {
            return Some(HistoryFormat::Gab);
        }
        if head.starts_with('{') {
            // github-action-benchmark's JSON has `entries` of lists; BMF maps names to measures.
            return Some(
                if head.contains("\"entries\"") && head.contains("\"benches\"") {
                    HistoryFormat::Gab
                } else {
                    HistoryFormat::Bmf
                },
            );
        }
        let csv = std::path::Path::new(name)
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
        (csv || head.starts_with("date")).then_some(HistoryFormat::Csv)
    }
}

/// Why a history file cannot be imported. Each names the file, the line or entry, and the fix.
#[derive(Debug, Error)]
pub enum HistoryFileError {
    #[error("{origin}: cannot tell its format")]
    UnknownFormat { origin: String },
    #[error("{origin}: {entry}: {problem}")]
    Bad {
        origin: String,
        /// `line 4`, `entry "Bench" [2] bench "fib_10"`, `benchmark "x" measure "latency"`.
        entry: String,
        problem: String,
        hint: String,
    },
}

impl HistoryFileError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            HistoryFileError::UnknownFormat { .. } => Some(
                "pass --format csv|bmf|gab, or name a CSV *.csv with a header starting `date`"
                    .to_owned(),
            ),
            HistoryFileError::Bad { hint, .. } => Some(hint.clone()),
        }
    }
}

/// How benchmark names become case keys.
#[derive(Debug, Clone, Default)]
pub struct CaseNaming {
    /// `--suite`: a name of five parts (`MODEL/PRECISION/PHASE/bB/cC`) is put under it.
    pub suite: Option<String>,
    /// `--case-map`: exact benchmark name -> case key (or its five parts, with `--suite`).
    pub map: BTreeMap<String, String>,
    /// `--entry`: the github-action-benchmark entries (its benchmark groups) to read; empty:
    /// every one.
    pub entries: Vec<String>,
}

impl CaseNaming {
    /// The case key of benchmark `name`, or why it has none.
    pub fn key(&self, name: &str) -> Result<CaseKey, (String, String)> {
        let mapped = self.map.get(name).map(String::as_str);
        let text = mapped.unwrap_or(name);
        if let Ok(key) = text.parse::<CaseKey>() {
            return Ok(key);
        }
        if let Some(suite) = &self.suite
            && let Ok(key) = format!("{suite}/{text}").parse::<CaseKey>()
        {
            return Ok(key);
        }
        let problem = match mapped {
            Some(m) => format!("benchmark {name:?} is mapped to {m:?}, which is not a case key"),
            None => format!("benchmark {name:?} is not a case key"),
        };
        let hint = format!(
            "name it SUITE/MODEL/PRECISION/PHASE/bB/cC (e.g. decode/llama-8b/bf16/decode/b1/c2048), \
             pass --suite NAME for names of the form MODEL/PRECISION/PHASE/bB/cC, or map it in a \
             --case-map file: \"{}\" = \"decode/llama-8b/bf16/decode/b1/c2048\"",
            name.replace('"', "\\\"")
        );
        Err((problem, hint))
    }
}

/// One case's figure on one night.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedCase {
    pub key: CaseKey,
    /// The night's step time (milliseconds): its median, or the one value the file gives.
    pub median_ms: f64,
    pub utilisation: Option<f64>,
    pub floor_ms: Option<f64>,
    /// Per-repeat figures (ms), when the file gives them.
    pub repeats_ms: Vec<f64>,
    /// Where in the file it came from (`line 4`, `entry "Bench" [2]`).
    pub entry: String,
}

/// One night of the history: its own date, commit and branch.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedNight {
    pub started_at: Timestamp,
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub cases: Vec<ImportedCase>,
}

/// The date and commit of a BMF file (one night per file): from its name
/// (`2026-11-01[_COMMIT].json`) or else from `--date` / `--commit`.
#[derive(Debug, Clone, Default)]
pub struct BmfNight {
    pub date: Option<Timestamp>,
    pub commit: Option<String>,
}

/// Read one file's nights.
pub fn read_history(
    text: &str,
    origin: &str,
    format: HistoryFormat,
    naming: &CaseNaming,
    bmf: &BmfNight,
) -> Result<Vec<ImportedNight>, HistoryFileError> {
    match format {
        HistoryFormat::Csv => read_csv(text, origin, naming),
        HistoryFormat::Gab => read_gab(text, origin, naming),
        HistoryFormat::Bmf => read_bmf(text, origin, naming, bmf),
    }
}

fn bad(origin: &str, entry: &str, problem: String, hint: impl Into<String>) -> HistoryFileError {
    HistoryFileError::Bad {
        origin: origin.to_owned(),
        entry: entry.to_owned(),
        problem,
        hint: hint.into(),
    }
}

/// Milliseconds per one of `unit`, for a time unit; why not, for anything else. A `/iter`
/// (cargo bench, Google Benchmark) or `/op` (Go) suffix is a time per iteration. Throughput
/// (`ops/s`, `iter/sec`, `tokens/s`) is refused: a bigger-is-better figure read as a time would
/// invert every change.
pub fn unit_to_ms(unit: &str) -> Result<f64, (String, String)> {
    let u = unit.trim();
    let base = u
        .strip_suffix("/iter")
        .or_else(|| u.strip_suffix("/op"))
        .unwrap_or(u);
    let factor = match base {
        "ms" | "msec" | "millisecond" | "milliseconds" => Some(1.0),
        "us" | "µs" | "μs" | "usec" | "microsecond" | "microseconds" => Some(1e-3),
        "ns" | "nsec" | "nanosecond" | "nanoseconds" => Some(1e-6),
        "s" | "sec" | "secs" | "second" | "seconds" => Some(1e3),
        _ => None,
    };
    if let Some(f) = factor {
        return Ok(f);
    }
    let lower = u.to_ascii_lowercase();
    let rate = lower.ends_with("/s")
        || lower.ends_with("/sec")
        || lower.ends_with("/second")
        || lower.contains("per second")
        || lower.contains("bigger");
    if rate {
        Err((
            format!("unit {u:?} is a throughput (bigger is better), not a step time"),
            "utilgate stores step times: convert each value to a time (e.g. 1000 / ops_per_s ms) \
             and write it with unit \"ms\" before importing, remove this benchmark from the file, \
             or (github-action-benchmark) read only the entries of times with --entry NAME"
                .to_owned(),
        ))
    } else {
        Err((
            format!("unit {u:?} is not a time"),
            "utilgate stores step times in ms, us, ns or s (optionally per iter, as ns/iter); \
             leave this benchmark out or convert it to a time"
                .to_owned(),
        ))
    }
}

/// Benchmark `name`'s one figure on a night, as the file gives it and the milliseconds per one
/// of its unit, as the case its name maps to; `entry` says where in the file it is.
fn timed_case(
    naming: &CaseNaming,
    name: &str,
    (value, ms_per_unit): (f64, f64),
    origin: &str,
    entry: String,
) -> Result<ImportedCase, HistoryFileError> {
    let ms = value * ms_per_unit;
    if !(ms.is_finite() && ms > 0.0) {
        return Err(bad(
            origin,
            &entry,
            format!("value {value} is not a positive time"),
            "leave this benchmark out",
        ));
    }
    let key = naming
        .key(name)
        .map_err(|(problem, hint)| bad(origin, &entry, problem, hint))?;
    Ok(ImportedCase {
        key,
        median_ms: ms,
        utilisation: None,
        floor_ms: None,
        repeats_ms: Vec::new(),
        entry,
    })
}

#[must_use]
/// A date: RFC 3339, or a day (`2026-11-01`, read as midnight UTC).
pub fn parse_date(text: &str) -> Option<Timestamp> {
    let t = text.trim();
    if let Ok(ts) = t.parse::<Timestamp>() {
        return Some(ts);
    }
    let day: jiff::civil::Date = t.parse().ok()?;
    format!("{day}T00:00:00Z").parse().ok()
}

// ---- CSV ----------------------------------------------------------------------------------

/// The columns a history CSV may hold (docs/import.md).
const CSV_COLUMNS: [&str; 14] = [
    "date",
    "commit",
    "branch",
    "case",
    "suite",
    "model",
    "precision",
    "phase",
    "batch",
    "context",
    "median_ms",
    "utilisation",
    "floor_ms",
    "samples_ms",
];

fn read_csv(
    text: &str,
    origin: &str,
    naming: &CaseNaming,
) -> Result<Vec<ImportedNight>, HistoryFileError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| bad(origin, "line 1", e.to_string(), "write a header line"))?
        .iter()
        .map(str::to_owned)
        .collect();
    let has_case = check_csv_header(&header, origin)?;
    let mut nights: Vec<ImportedNight> = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let line = format!("line {}", i + 2);
        let record = record.map_err(|e| bad(origin, &line, e.to_string(), "fix the CSV row"))?;
        let get = |col: &str| {
            header
                .iter()
                .position(|h| h == col)
                .and_then(|p| record.get(p))
                .filter(|v| !v.is_empty())
        };
        let date_text = get("date").unwrap_or("");
        let started_at = parse_date(date_text).ok_or_else(|| {
            bad(
                origin,
                &line,
                format!("date {date_text:?} is not a date"),
                "write 2026-11-01 or 2026-11-01T02:00:00Z",
            )
        })?;
        let name = if has_case {
            get("case").unwrap_or("").to_owned()
        } else {
            let part = |c: &str| get(c).unwrap_or("");
            format!(
                "{}/{}/{}/{}/b{}/c{}",
                part("suite"),
                part("model"),
                part("precision"),
                part("phase"),
                part("batch"),
                part("context")
            )
        };
        let key = naming
            .key(&name)
            .map_err(|(problem, hint)| bad(origin, &line, problem, hint))?;
        let number = |col: &str| -> Result<Option<f64>, HistoryFileError> {
            get(col)
                .map(|v| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| x.is_finite() && *x > 0.0)
                        .ok_or_else(|| {
                            bad(
                                origin,
                                &line,
                                format!("{col} {v:?} is not a positive number"),
                                format!("write {col} as a number, e.g. 12.5"),
                            )
                        })
                })
                .transpose()
        };
        let median_ms = number("median_ms")?.ok_or_else(|| {
            bad(
                origin,
                &line,
                "median_ms is empty".to_owned(),
                "write the night's median step time in ms",
            )
        })?;
        let repeats_ms = match get("samples_ms") {
            None => Vec::new(),
            Some(v) => parse_samples(v).ok_or_else(|| {
                bad(
                    origin,
                    &line,
                    format!("samples_ms {v:?} is not a list of positive numbers"),
                    "write samples_ms as numbers separated by ';' (e.g. 10.1;10.3;9.9)",
                )
            })?,
        };
        let case = ImportedCase {
            key,
            median_ms,
            utilisation: number("utilisation")?,
            floor_ms: number("floor_ms")?,
            repeats_ms,
            entry: line.clone(),
        };
        let git_sha = get("commit").map(str::to_owned);
        let branch = get("branch").map(str::to_owned);
        push_case(&mut nights, started_at, git_sha, branch, case, origin)?;
    }
    Ok(nights)
}

/// The header's columns are known ones, with a date, a median and a case (or its coordinates);
/// whether the case is one `case` column.
fn check_csv_header(header: &[String], origin: &str) -> Result<bool, HistoryFileError> {
    let columns_hint = format!(
        "write a header of date,commit,branch,case,median_ms (case may be given as \
         suite,model,precision,phase,batch,context), optionally utilisation,floor_ms,samples_ms; \
         known columns: {}",
        CSV_COLUMNS.join(", ")
    );
    for name in header {
        if !CSV_COLUMNS.contains(&name.as_str()) {
            return Err(bad(
                origin,
                "line 1",
                format!("unknown column {name:?}"),
                columns_hint.clone(),
            ));
        }
    }
    for required in ["date", "median_ms"] {
        if !header.iter().any(|h| h == required) {
            return Err(bad(
                origin,
                "line 1",
                format!("no `{required}` column"),
                columns_hint.clone(),
            ));
        }
    }
    let has_case = header.iter().any(|h| h == "case");
    let coords = ["suite", "model", "precision", "phase", "batch", "context"];
    if !has_case && !coords.iter().all(|c| header.iter().any(|h| h == c)) {
        return Err(bad(
            origin,
            "line 1",
            "no `case` column and not all of suite,model,precision,phase,batch,context".to_owned(),
            columns_hint,
        ));
    }
    Ok(has_case)
}

/// `10.1;10.3;9.9` as positive numbers.
fn parse_samples(v: &str) -> Option<Vec<f64>> {
    v.split([';', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x > 0.0))
        .collect()
}

/// Add a case to its night (same date, commit and branch), refusing a case twice in a night.
fn push_case(
    nights: &mut Vec<ImportedNight>,
    started_at: Timestamp,
    git_sha: Option<String>,
    branch: Option<String>,
    case: ImportedCase,
    origin: &str,
) -> Result<(), HistoryFileError> {
    let i = if let Some(i) = nights
        .iter()
        .position(|n| n.started_at == started_at && n.git_sha == git_sha && n.branch == branch)
    {
        i
    } else {
        nights.push(ImportedNight {
            started_at,
            git_sha,
            branch,
            cases: Vec::new(),
        });
        nights.len() - 1
    };
    let night = &mut nights[i];
    if let Some(first) = night.cases.iter().find(|c| c.key == case.key) {
        return Err(bad(
            origin,
            &case.entry,
            format!(
                "case {} appears twice on one night (first at {})",
                case.key, first.entry
            ),
            "keep one row per case and night (give repeats in samples_ms), or map the two \
             names to different case keys",
        ));
    }
    night.cases.push(case);
    Ok(())
}

// ---- github-action-benchmark ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct GabData {
    entries: BTreeMap<String, Vec<GabEntry>>,
}

#[derive(Debug, Deserialize)]
struct GabEntry {
    commit: GabCommit,
    /// Milliseconds since the epoch, when the action stored the entry.
    date: i64,
    benches: Vec<GabBench>,
}

#[derive(Debug, Deserialize)]
struct GabCommit {
    id: String,
    /// The commit's own time; the night's time is the entry's `date`.
    #[serde(default)]
    #[expect(dead_code, reason = "kept in the model for readers of the format")]
    timestamp: Option<String>,
}

#[derive(Debug, Deserialize)]
struct GabBench {
    name: String,
    value: f64,
    unit: String,
}

/// The JSON inside `window.BENCHMARK_DATA = {...};`, or the text itself.
fn gab_json(text: &str) -> &str {
    let t = text.trim();
    let t = t
        .strip_prefix("window.BENCHMARK_DATA")
        .map_or(t, |rest| rest.trim_start().trim_start_matches('=').trim());
    t.strip_suffix(';').unwrap_or(t)
}

fn read_gab(
    text: &str,
    origin: &str,
    naming: &CaseNaming,
) -> Result<Vec<ImportedNight>, HistoryFileError> {
    let data: GabData = serde_json::from_str(gab_json(text)).map_err(|e| {
        bad(
            origin,
            &format!("line {}", e.line()),
            format!("not github-action-benchmark data: {e}"),
            "give the data.js of the benchmark branch (window.BENCHMARK_DATA = {...}) or its JSON",
        )
    })?;
    if let Some(missing) = naming
        .entries
        .iter()
        .find(|e| !data.entries.contains_key(e.as_str()))
    {
        let known: Vec<&str> = data.entries.keys().map(String::as_str).collect();
        return Err(bad(
            origin,
            &format!("--entry {missing:?}"),
            format!("the file has no entry {missing:?}"),
            format!("its entries: {}", known.join(", ")),
        ));
    }
    let mut nights = Vec::new();
    let chosen = data
        .entries
        .iter()
        .filter(|(name, _)| naming.entries.is_empty() || naming.entries.contains(*name));
    for (suite, entries) in chosen {
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("entry {suite:?} [{i}]");
            let started_at = Timestamp::from_millisecond(entry.date).map_err(|e| {
                bad(
                    origin,
                    &at,
                    format!("date {} is not a time: {e}", entry.date),
                    "date is milliseconds since 1970 as the action writes it",
                )
            })?;
            for bench in &entry.benches {
                let here = format!("{at} bench {:?}", bench.name);
                let factor = unit_to_ms(&bench.unit)
                    .map_err(|(problem, hint)| bad(origin, &here, problem, hint))?;
                let case = timed_case(naming, &bench.name, (bench.value, factor), origin, here)?;
                push_case(
                    &mut nights,
                    started_at,
                    Some(entry.commit.id.clone()),
                    None,
                    case,
                    origin,
                )?;
            }
        }
    }
    Ok(nights)
}

// ---- Bencher Metric Format ----------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct BmfMetric {
    value: f64,
}

/// BMF gives no unit: the measure's name says it. `latency` is Bencher's built-in measure in
/// nanoseconds; a measure named `*_ms`, `*_us`, `*_ns` or `*_s` is in that unit.
fn bmf_measure_ms(measure: &str) -> Result<f64, (String, String)> {
    if measure == "latency" {
        return Ok(1e-6);
    }
    for (suffix, unit) in [("_ms", "ms"), ("_us", "us"), ("_ns", "ns"), ("_s", "s")] {
        if measure.ends_with(suffix) {
            return unit_to_ms(unit);
        }
    }
    Err((
        format!(
            "measure {measure:?} is not a time (utilgate reads `latency`, in ns, or a measure \
             named *_ms, *_us, *_ns or *_s)"
        ),
        "throughput and other measures are refused: write the step time as `latency` (ns) or \
         `step_ms`, or leave the measure out"
            .to_owned(),
    ))
}

fn read_bmf(
    text: &str,
    origin: &str,
    naming: &CaseNaming,
    night: &BmfNight,
) -> Result<Vec<ImportedNight>, HistoryFileError> {
    let data: BTreeMap<String, BTreeMap<String, BmfMetric>> =
        serde_json::from_str(text).map_err(|e| {
            bad(
                origin,
                &format!("line {}", e.line()),
                format!("not Bencher Metric Format: {e}"),
                "BMF is {\"benchmark\": {\"latency\": {\"value\": 1.0}}}",
            )
        })?;
    let started_at = night.date.ok_or_else(|| {
        bad(
            origin,
            "file name",
            "a BMF file has no date, and neither its name nor --date gives one".to_owned(),
            "name the file DATE[_COMMIT].json (e.g. 2026-11-01_abc1234.json) or pass --date \
             2026-11-01 --commit SHA for one file",
        )
    })?;
    let mut nights = Vec::new();
    for (name, measures) in &data {
        for (measure, metric) in measures {
            let here = format!("benchmark {name:?} measure {measure:?}");
            let factor = bmf_measure_ms(measure)
                .map_err(|(problem, hint)| bad(origin, &here, problem, hint))?;
            let case = timed_case(naming, name, (metric.value, factor), origin, here)?;
            push_case(
                &mut nights,
                started_at,
                night.commit.clone(),
                None,
                case,
                origin,
            )?;
        }
    }
    Ok(nights)
}

/// A BMF file's night from its name: `2026-11-01.json` or `2026-11-01_abc1234.json`.
#[must_use]
pub fn bmf_night_from_name(stem: &str) -> BmfNight {
    let (date, commit) = stem
        .split_once('_')
        .map_or((stem, None), |(d, c)| (d, Some(c)));
    BmfNight {
        date: parse_date(date),
        commit: commit.filter(|c| !c.is_empty()).map(str::to_owned),
    }
}

/// Put the nights of several files together: one night per date, commit and branch (a case
/// twice on one night is refused, naming the second file), oldest first.
pub fn merge_nights(
    files: Vec<(String, Vec<ImportedNight>)>,
) -> Result<Vec<ImportedNight>, HistoryFileError> {
    let mut all: Vec<ImportedNight> = Vec::new();
    for (origin, nights) in files {
        for night in nights {
            for case in night.cases {
                push_case(
                    &mut all,
                    night.started_at,
                    night.git_sha.clone(),
                    night.branch.clone(),
                    case,
                    &origin,
                )?;
            }
        }
    }
    all.sort_by_key(|n| n.started_at);
    Ok(all)
}

/// The stored identity of an imported night (`runs.uid`): the GPU, the night's time, commit
/// and branch. Imported again, the same night has the same id and is skipped.
#[must_use]
pub fn night_uid(night: &ImportedNight, gpu_sku: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [
        gpu_sku,
        &night.started_at.to_string(),
        night.git_sha.as_deref().unwrap_or(""),
        night.branch.as_deref().unwrap_or(""),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let hex = h
        .finalize()
        .iter()
        .take(16)
        .fold(String::new(), |mut acc, b| {
            let _ = write!(acc, "{b:02x}");
            acc
        });
    format!("import-{hex}")
}

/// An imported night as a run to store: its own time (start and end), commit and branch,
/// trigger `import`, one result per case with no verdict, and never a baseline move.
#[must_use]
pub fn night_run(night: &ImportedNight, gpu_sku: &str, default_branch: &str) -> super::NewRun {
    let results = night
        .cases
        .iter()
        .map(|c| super::NewResult {
            key: c.key.clone(),
            verdict: None,
            error: None,
            floor_ms: c.floor_ms,
            floor_json: None,
            median_ms: Some(c.median_ms),
            // Given, or the floor over the step (DESIGN.md: utilisation = floor / step).
            utilisation: c.utilisation.or(c.floor_ms.map(|f| f / c.median_ms)),
            mbu: None,
            mfu: None,
            summary_json: None,
            decision_json: None,
            repeats_ms: if c.repeats_ms.is_empty() {
                Vec::new()
            } else {
                vec![c.repeats_ms.clone()]
            },
            warmup_ms: Vec::new(),
            env: BTreeMap::new(),
            gpu_state_json: None,
            stderr_tail: None,
            promote: false,
            budget: None,
            costs: Vec::new(),
            quality: std::collections::BTreeMap::new(),
            speculative: None,
            energy: Vec::new(),
        })
        .collect();
    super::NewRun {
        started_at: night.started_at,
        finished_at: night.started_at,
        git_sha: night.git_sha.clone(),
        branch: Some(
            night
                .branch
                .clone()
                .unwrap_or_else(|| default_branch.to_owned()),
        ),
        trigger: Some("import".to_owned()),
        pr_number: None,
        gpu_sku: gpu_sku.to_owned(),
        gpu_json: None,
        host: None,
        utilgate_version: env!("CARGO_PKG_VERSION").to_owned(),
        config_json: None,
        promote_reason: String::new(),
        results,
        canary_json: None,
        group: None,
        uid: Some(night_uid(night, gpu_sku)),
        budget_night: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_become_ms_and_rates_are_refused() {
        for (unit, ms) in [
            ("ms", 1.0),
            ("ns/iter", 1e-6),
            ("ns/op", 1e-6),
            ("us", 1e-3),
            ("s", 1e3),
        ] {
            assert_eq!(unit_to_ms(unit).ok(), Some(ms), "{unit}");
        }
        for unit in ["ops/s", "iter/sec", "req/s", "tokens/s"] {
            let (problem, _) = unit_to_ms(unit).expect_err(unit);
            assert!(problem.contains("throughput"), "{problem}");
        }
        assert!(
            unit_to_ms("Megabytes")
                .expect_err("bytes")
                .0
                .contains("not a time")
        );
    }

    #[test]
    fn names_map_by_rule_or_map() {
        let mut naming = CaseNaming::default();
        assert!(naming.key("decode/m/bf16/decode/b1/c8").is_ok());
        assert!(naming.key("m/bf16/decode/b1/c8").is_err());
        naming.suite = Some("nightly".to_owned());
        assert_eq!(
            naming.key("m/bf16/decode/b1/c8").map(|k| k.suite),
            Ok("nightly".to_owned())
        );
        naming
            .map
            .insert("fib_10".to_owned(), "m/bf16/decode/b1/c8".to_owned());
        assert!(naming.key("fib_10").is_ok());
        let (problem, hint) = naming.key("fib_20").expect_err("unmapped");
        assert!(problem.contains("\"fib_20\"") && hint.contains("--case-map"));
    }

    #[test]
    fn bmf_names_and_dates() {
        let n = bmf_night_from_name("2026-11-01_abc1234");
        assert_eq!(n.commit.as_deref(), Some("abc1234"));
        assert_eq!(
            n.date.map(|d| d.to_string()).as_deref(),
            Some("2026-11-01T00:00:00Z")
        );
        assert!(bmf_night_from_name("results").date.is_none());
    }
}
