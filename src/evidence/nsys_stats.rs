//! Reader of `nsys stats --format csv` summary outputs users already have (pure): one or more
//! reports, each named by the line nsys printed before it (`** CUDA GPU Kernel Summary
//! (cuda_gpu_kern_sum):`, `Executing 'nvtx_sum' stats report`, `Processing [...] with
//! [.../reports/gpukernsum.py]`) or by the file name `nsys stats --output PREFIX` gave it
//! (`PREFIX_cuda_gpu_kern_sum.csv`). Both the current report names and the older ones (2020-2021:
//! `gpukernsum`, `cudaapisum`, `gpumemtimesum`, `gpumemsizesum`, `nvtxsum`, `nvtxppsum`) are
//! read, with either generation's columns (`Time (%)`/`Time(%)`, `Avg (ns)`/`Average`,
//! `Instances`/`Num Calls`/`Count`/`Operations`, `Name`/`Operation`/`Range`). Times are in ns;
//! sizes are turned into bytes from their unit (`Total (MB)`; the older size report wrote KiB).
//! A statistic the older reports do not give (median, standard deviation) is NaN: missing.

use std::sync::LazyLock;

use regex::Regex;

use super::nsys::{Stat, StatsCsvError, Summary};

/// The summaries this reader knows, current name first, then the older names.
const REPORTS: &[(&str, &[&str])] = &[
    ("cuda_gpu_kern_sum", &["gpukernsum"]),
    ("cuda_api_sum", &["cudaapisum"]),
    ("cuda_gpu_mem_time_sum", &["gpumemtimesum"]),
    ("cuda_gpu_mem_size_sum", &["gpumemsizesum"]),
    ("nvtx_sum", &["nvtxsum", "nvtxppsum"]),
];

/// The current name of a report, given a current or an older one.
#[must_use]
pub fn canonical(name: &str) -> Option<&'static str> {
    REPORTS
        .iter()
        .find(|(current, old)| *current == name || old.contains(&name))
        .map(|(current, _)| *current)
}

/// One report read from the text.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsReport {
    /// The report's current name (`cuda_gpu_kern_sum`).
    pub report: &'static str,
    /// The name it was written under (`gpukernsum` for an older nsys).
    pub written_as: String,
    pub rows: Vec<Stat>,
}

static NAME_LINE: LazyLock<Regex> = LazyLock::new(|| {
    // Invariant: a constant pattern (exercised by every test of this module).
    Regex::new(r"(?:Executing '|reports/|\[|\()([A-Za-z][A-Za-z0-9_]*)(?:'|\.py|\)|\])")
        .expect("constant pattern compiles")
});

/// The report a non-CSV line names, if any.
fn named_in(line: &str) -> Option<String> {
    NAME_LINE
        .captures_iter(line)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().to_owned())
        .find(|n| canonical(n).is_some() || n.ends_with("_sum") || n.ends_with("sum"))
}

/// The report a file name names (`PREFIX_cuda_gpu_kern_sum.csv`, `PREFIX_gpukernsum.csv`).
fn named_by_file(file: &str) -> Option<String> {
    let stem = file.rsplit('/').next()?.strip_suffix(".csv")?;
    REPORTS
        .iter()
        .flat_map(|(current, old)| std::iter::once(*current).chain(old.iter().copied()))
        .filter(|n| stem == *n || stem.ends_with(&format!("_{n}")))
        .max_by_key(|n| n.len())
        .map(str::to_owned)
}

fn is_header(line: &str) -> bool {
    let l = line.trim_start_matches('"');
    l.starts_with("Time") || l.starts_with("Total") || l.starts_with("Count")
}

/// Splits the text into (name line, CSV block) sections.
fn sections(text: &str) -> Vec<(Option<String>, String)> {
    let mut out: Vec<(Option<String>, String)> = Vec::new();
    let mut name: Option<String> = None;
    let mut block: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            if let Some(b) = block.take() {
                out.push((name.take(), b));
            }
            continue;
        }
        if let Some(b) = block.as_mut() {
            b.push_str(trimmed);
            b.push('\n');
        } else if trimmed.contains(',') && is_header(trimmed) {
            block = Some(format!("{trimmed}\n"));
        } else if let Some(n) = named_in(trimmed) {
            name = Some(n);
        }
    }
    if let Some(b) = block {
        out.push((name, b));
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Col {
    Share,
    Total,
    Count,
    Avg,
    Median,
    Min,
    Max,
    StdDev,
    Name,
}

/// A header cell's meaning and its unit (`Avg (ns)` -> Avg, "ns"; `Time(%)` -> Share).
fn column(header: &str) -> Option<(Col, String)> {
    let h = header.trim();
    let (base, unit) = match h.find('(') {
        Some(i) => (
            h[..i].trim(),
            h[i + 1..].trim_end_matches(')').trim().to_owned(),
        ),
        None => (h, String::new()),
    };
    let col = match base.to_ascii_lowercase().as_str() {
        "time" if unit == "%" => Col::Share,
        "total time" | "total" => Col::Total,
        "instances" | "num calls" | "calls" | "count" | "operations" => Col::Count,
        "avg" | "average" => Col::Avg,
        "med" | "median" => Col::Median,
        "min" | "minimum" => Col::Min,
        "max" | "maximum" => Col::Max,
        "stddev" | "std dev" => Col::StdDev,
        "name" | "operation" | "range" => Col::Name,
        _ => return None,
    };
    Some((col, unit))
}

/// Bytes per unit of a size column; the older size report wrote KiB without saying so.
fn size_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "KiB" => 1024.0,
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "MiB" => 1_048_576.0,
        "GB" => 1e9,
        "GiB" => 1_073_741_824.0,
        _ => return None,
    })
}

/// ns per unit of a time column (older reports wrote ns without saying so).
fn time_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

fn number(text: &str) -> Option<f64> {
    let t: String = text.trim().chars().filter(|c| *c != ',').collect();
    t.parse().ok()
}

fn parse_block(report: &'static str, block: &str) -> Result<Vec<Stat>, StatsCsvError> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(block.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| StatsCsvError::Csv(e.to_string()))?
        .clone();
    let sized = report == "cuda_gpu_mem_size_sum";
    let mut cols: Vec<(usize, Col, f64)> = Vec::new();
    for (i, h) in header.iter().enumerate() {
        let Some((col, unit)) = column(h) else {
            continue;
        };
        let scale = match col {
            Col::Share | Col::Count | Col::Name => Some(1.0),
            _ if sized => size_scale(&unit),
            _ => time_scale(&unit),
        };
        let scale = scale.ok_or_else(|| {
            StatsCsvError::Csv(format!("column {h:?} has a unit this reader does not know"))
        })?;
        cols.push((i, col, scale));
    }
    let find = |c: Col| cols.iter().find(|(_, k, _)| *k == c).copied();
    for (need, label) in [
        (Col::Name, "Name"),
        (Col::Total, "Total Time (ns)"),
        (Col::Count, "Instances"),
    ] {
        if find(need).is_none() {
            return Err(StatsCsvError::MissingColumn { column: label });
        }
    }
    let mut rows = Vec::new();
    for (row, rec) in reader.records().enumerate() {
        let rec = rec.map_err(|e| StatsCsvError::Csv(e.to_string()))?;
        let get = |c: Col, column: &'static str| -> Result<f64, StatsCsvError> {
            let Some((i, _, scale)) = find(c) else {
                return Ok(f64::NAN);
            };
            let v = rec.get(i).unwrap_or("");
            number(v)
                .map(|x| x * scale)
                .ok_or_else(|| StatsCsvError::BadNumber {
                    row: row + 1,
                    column,
                    value: v.to_owned(),
                })
        };
        let count = get(Col::Count, "Instances")?;
        let total = get(Col::Total, "Total")?;
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a count nsys printed as an integer"
        )]
        let count_u = count.max(0.0) as u64;
        rows.push(Stat {
            name: find(Col::Name)
                .and_then(|(i, _, _)| rec.get(i))
                .unwrap_or("")
                .to_owned(),
            count: count_u,
            total,
            avg: get(Col::Avg, "Avg")?,
            median: get(Col::Median, "Med")?,
            min: get(Col::Min, "Min")?,
            max: get(Col::Max, "Max")?,
            stddev: get(Col::StdDev, "StdDev")?,
            share_pct: get(Col::Share, "Time (%)")?,
        });
    }
    // The size report has no share column: the share of the total, as the time reports give.
    if rows.iter().any(|r| r.share_pct.is_nan()) {
        let grand: f64 = rows.iter().map(|r| r.total).sum();
        for r in &mut rows {
            r.share_pct = if grand > 0.0 {
                100.0 * r.total / grand
            } else {
                0.0
            };
        }
    }
    Ok(rows)
}

/// Reads every report of an `nsys stats --format csv` output; `file` (its name) names a report
/// the text does not name.
pub fn parse(text: &str, file: Option<&str>) -> Result<Vec<StatsReport>, StatsCsvError> {
    let found = sections(text);
    if found.is_empty() {
        return Err(StatsCsvError::Csv(
            "no nsys stats table (a header starting with Time, Total or Count) was found".into(),
        ));
    }
    let single = found.len() == 1;
    let mut out = Vec::new();
    for (name, block) in found {
        let name = name
            .or_else(|| single.then(|| file.and_then(named_by_file)).flatten())
            .ok_or_else(|| {
                StatsCsvError::Csv(
                    "the report's name is not in the text or the file name (nsys stats prints it before each table; `--output PREFIX` names files PREFIX_REPORT.csv)".into(),
                )
            })?;
        let report = canonical(&name).ok_or_else(|| {
            StatsCsvError::Csv(format!(
                "report {name:?} is not one of the summaries read here (cuda_gpu_kern_sum, cuda_api_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum, nvtx_sum, or their older names)"
            ))
        })?;
        out.push(StatsReport {
            report,
            written_as: name,
            rows: parse_block(report, &block)?,
        });
    }
    Ok(out)
}

/// Whether a text looks like `nsys stats` CSV output (a header this reader knows).
#[must_use]
pub fn looks_like(text: &str) -> bool {
    text.lines().take(200).any(|l| {
        let l = l.trim();
        is_header(l)
            && l.contains(',')
            && (l.contains("Total Time") || l.contains("Total"))
            && (l.contains("Name") || l.contains("Operation") || l.contains("Range"))
    })
}

/// The reports as one [`Summary`] (what `trace show` prints for an export).
#[must_use]
pub fn summary(reports: &[StatsReport]) -> Summary {
    let mut s = Summary {
        kernels: Vec::new(),
        api: Vec::new(),
        mem_time: Vec::new(),
        mem_size: Vec::new(),
        nvtx: Vec::new(),
        syncs: Vec::new(),
        kernel_span_ns: 0,
        kernel_total_ns: None,
        notes: Vec::new(),
    };
    for r in reports {
        let into = match r.report {
            "cuda_gpu_kern_sum" => &mut s.kernels,
            "cuda_api_sum" => &mut s.api,
            "cuda_gpu_mem_time_sum" => &mut s.mem_time,
            "cuda_gpu_mem_size_sum" => &mut s.mem_size,
            _ => &mut s.nvtx,
        };
        into.extend(r.rows.iter().cloned());
        if r.written_as != r.report {
            s.notes.push(format!(
                "{} read as {} (the report's older name)",
                r.written_as, r.report
            ));
        }
        if r.rows.iter().any(|x| x.median.is_nan()) {
            s.notes.push(format!(
                "{}: median and standard deviation are missing (an older nsys did not report them)",
                r.written_as
            ));
        }
    }
    // The CSV holds every kernel row: their totals add up to the kernel time.
    s.kernel_total_ns = (!s.kernels.is_empty()).then(|| s.kernels.iter().map(|k| k.total).sum());
    s.notes
        .push("read from nsys stats CSV: the kernel span is not in these reports".into());
    s
}

#[cfg(test)]
#[expect(clippy::float_cmp, reason = "figures parsed exactly from text")]
mod tests {
    use super::*;

    /// `nsys stats --report cuda_gpu_kern_sum,nvtx_sum --format csv report.sqlite` as nsys
    /// 2023-2024 prints it: a processing line and a titled header before each table.
    const CURRENT: &str = "Processing [report.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/reports/cuda_gpu_kern_sum.py]... \n\
\n\
 ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\
\n\
\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\",\"StdDev (ns)\",\"Name\"\n\
\"75.0\",\"300000\",\"3\",\"100000.0\",\"100000.0\",\"90000\",\"110000\",\"10000.0\",\"ampere_bf16_s16816gemm_bf16_128x64_tn\"\n\
\"25.0\",\"100000\",\"2\",\"50000.0\",\"50000.0\",\"50000\",\"50000\",\"0.0\",\"void flash_fwd_kernel<128>(Params)\"\n\
\n\
Processing [report.sqlite] with [/opt/nvidia/nsight-systems/2024.5.1/host-linux-x64/reports/nvtx_sum.py]... \n\
\n\
 ** NVTX Range Summary (nvtx_sum):\n\
\n\
\"Time (%)\",\"Total Time (ns)\",\"Instances\",\"Avg (ns)\",\"Med (ns)\",\"Min (ns)\",\"Max (ns)\",\"StdDev (ns)\",\"Style\",\"Range\"\n\
\"100.0\",\"3481709\",\"1\",\"3481709.0\",\"3481709.0\",\"3481709\",\"3481709\",\"0.0\",\"PushPop\",\"decode_step\"\n";

    /// Nsight Systems 2021.1 (`gpukernsum`, `gpumemsizesum`): older columns, no median or
    /// standard deviation, sizes in KiB.
    const OLDER: &str = "Using report.sqlite for SQL queries.\n\
Running [/opt/nvidia/nsight-systems/2021.1.1/target-linux-x64/reports/gpukernsum.py report.sqlite]... \n\
\n\
Time(%),Total Time (ns),Instances,Average,Minimum,Maximum,Name\n\
60.0,600,3,200.0,100,300,gemv_kernel\n\
40.0,400,1,400.0,400,400,rms_norm_kernel\n\
\n\
Running [/opt/nvidia/nsight-systems/2021.1.1/target-linux-x64/reports/gpumemsizesum.py report.sqlite]... \n\
\n\
Total,Operations,Average,Minimum,Maximum,Operation\n\
2048.000,2,1024.000,1024.000,1024.000,[CUDA memcpy HtoD]\n";

    #[test]
    fn current_reports_are_named_by_their_header_and_read_in_ns() {
        assert!(looks_like(CURRENT));
        let r = parse(CURRENT, None).expect("parses");
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].report, "cuda_gpu_kern_sum");
        assert_eq!(r[0].rows.len(), 2);
        let k = &r[0].rows[0];
        assert_eq!(
            (k.count, k.total, k.median, k.stddev),
            (3, 300_000.0, 100_000.0, 10_000.0)
        );
        assert_eq!(k.share_pct, 75.0);
        assert_eq!(r[1].report, "nvtx_sum");
        assert_eq!(r[1].rows[0].name, "decode_step");
        let s = summary(&r);
        assert_eq!(s.kernels.len(), 2);
        assert_eq!(s.nvtx.len(), 1);
    }

    #[test]
    fn older_report_names_and_columns_are_read_with_missing_figures_missing() {
        assert!(looks_like(OLDER));
        let r = parse(OLDER, None).expect("parses");
        assert_eq!(r[0].report, "cuda_gpu_kern_sum");
        assert_eq!(r[0].written_as, "gpukernsum");
        let k = &r[0].rows[0];
        assert_eq!(
            (k.name.as_str(), k.count, k.avg, k.min, k.max),
            ("gemv_kernel", 3, 200.0, 100.0, 300.0)
        );
        assert!(k.median.is_nan() && k.stddev.is_nan(), "missing, not zero");
        assert_eq!(r[1].report, "cuda_gpu_mem_size_sum");
        let m = &r[1].rows[0];
        assert_eq!(m.total, 2048.0 * 1024.0, "KiB in bytes");
        assert_eq!(m.share_pct, 100.0);
        let s = summary(&r);
        assert!(
            s.notes
                .iter()
                .any(|n| n.contains("gpukernsum read as cuda_gpu_kern_sum")),
            "{:?}",
            s.notes
        );
    }

    #[test]
    fn a_bare_csv_is_named_by_its_file_and_unknown_layouts_are_errors() {
        let bare = "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n\
                    90.0,9000,3,3000.0,3000.0,2000,4000,1000.0,cudaLaunchKernel\n";
        let r = parse(bare, Some("out/run_cuda_api_sum.csv")).expect("named by file");
        assert_eq!(r[0].report, "cuda_api_sum");
        let r = parse(bare, Some("run_cudaapisum.csv")).expect("older name in file");
        assert_eq!(
            (r[0].report, r[0].written_as.as_str()),
            ("cuda_api_sum", "cudaapisum")
        );
        let err = parse(bare, None).expect_err("no name anywhere");
        assert!(err.to_string().contains("name"), "{err}");
        let err = parse(bare, Some("run_osrt_sum.csv")).expect_err("not a summary read here");
        assert!(
            err.to_string().contains("name") || err.to_string().contains("osrt"),
            "{err}"
        );
        let err = parse(
            "Time (%),Total Time (ns),Widgets\n1,2,3\n",
            Some("x_nvtx_sum.csv"),
        )
        .expect_err("no name column");
        assert!(matches!(err, StatsCsvError::MissingColumn { .. }), "{err}");
        assert!(parse("hello\nworld\n", None).is_err());
        let bad = "Time (%),Total Time (ns),Instances,Name\n1.0,lots,1,k\n";
        let err = parse(bad, Some("a_gpukernsum.csv")).expect_err("not a number");
        assert!(err.to_string().contains("lots"), "{err}");
    }
}
