//! A case's nights as the site keeps them: `cases/<page>.csv`, every measured night of the
//! case on the site's branch, oldest first. It is the page's data for a reader (a spreadsheet,
//! a script) and the next build's starting point: results are append-only and a run's facts
//! never change, so a case with a new night reads only the results stored after the newest one
//! here, not its whole history again. Every figure is written in the shortest form that reads
//! back to the same number, so a page built from this file is the page built from the store.
//! I/O: reads and writes that one file.

#![expect(
    clippy::disallowed_methods,
    reason = "the site's own data files, beside its pages"
)]

use std::path::Path;

use jiff::Timestamp;

use crate::case::Verdict;
use crate::store::{RunId, SitePoint};

const HEADER: [&str; 10] = [
    "night",
    "run",
    "result",
    "branch",
    "commit",
    "verdict",
    "untrusted",
    "utilisation",
    "median_step_ms",
    "noise_pct",
];

/// Every night as CSV, with the branch they were read on.
pub(super) fn to_csv(points: &[SitePoint], branch: &str) -> String {
    let mut out = csv::Writer::from_writer(Vec::new());
    let number = |x: Option<f64>| x.map_or_else(String::new, |x| x.to_string());
    let _ = out.write_record(HEADER);
    for p in points {
        let _ = out.write_record([
            p.started_at.to_string().as_str(),
            &p.run_id.0.to_string(),
            &p.result_id.to_string(),
            branch,
            p.git_sha.as_deref().unwrap_or(""),
            p.verdict.map_or("", |v| v.as_str()),
            if p.untrusted { "true" } else { "false" },
            &p.utilisation.to_string(),
            &number(p.median_ms),
            &number(p.noise_pct),
        ]);
    }
    // Written to memory, from UTF-8 text: neither can fail.
    String::from_utf8(out.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// The nights a build wrote, or `None` when the file is missing or not one this build can read
/// back exactly (then the case is read from the store whole).
pub(super) fn read(path: &Path) -> Option<Vec<SitePoint>> {
    let text = std::fs::read(path).ok()?;
    let mut rows = csv::Reader::from_reader(text.as_slice());
    if rows.headers().ok()?.iter().ne(HEADER) {
        return None;
    }
    let number = |s: &str| -> Option<Option<f64>> {
        if s.is_empty() {
            Some(None)
        } else {
            s.parse().ok().map(Some)
        }
    };
    let mut points = Vec::new();
    for row in rows.records() {
        let row = row.ok()?;
        let field = |i: usize| row.get(i);
        points.push(SitePoint {
            started_at: field(0)?.parse::<Timestamp>().ok()?,
            run_id: RunId(field(1)?.parse().ok()?),
            result_id: field(2)?.parse().ok()?,
            git_sha: Some(field(4)?).filter(|s| !s.is_empty()).map(str::to_owned),
            verdict: match field(5)? {
                "" => None,
                v => Some(v.parse::<Verdict>().ok()?),
            },
            untrusted: match field(6)? {
                "true" => true,
                "false" => false,
                _ => return None,
            },
            utilisation: field(7)?.parse().ok()?,
            median_ms: number(field(8)?)?,
            noise_pct: number(field(9)?)?,
        });
    }
    Some(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_reads_back_as_written() {
        let points = vec![
            SitePoint {
                result_id: 7,
                run_id: RunId(3),
                started_at: "2026-11-14T22:13:20.123456789Z".parse().expect("ts"),
                git_sha: Some("a,\"b\"".into()),
                verdict: Some(Verdict::Regressed),
                median_ms: Some(0.1 + 0.2),
                utilisation: 1.0 / 3.0,
                untrusted: true,
                noise_pct: None,
            },
            SitePoint {
                result_id: 9,
                run_id: RunId(4),
                started_at: "2026-11-15T00:00:00Z".parse().expect("ts"),
                git_sha: None,
                verdict: None,
                median_ms: None,
                utilisation: 0.8,
                untrusted: false,
                noise_pct: Some(1.25e-3),
            },
        ];
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("case.csv");
        std::fs::write(&path, to_csv(&points, "main")).expect("write");
        assert_eq!(read(&path), Some(points));
    }

    #[test]
    fn a_file_of_another_shape_is_not_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("case.csv");
        assert_eq!(read(&path), None, "missing");
        std::fs::write(&path, "night,run\n2026-11-14T00:00:00Z,1\n").expect("write");
        assert_eq!(read(&path), None, "other columns");
        let mut text = to_csv(&[], "main");
        text.push_str("2026-11-14T00:00:00Z,1,1,main,,pass,maybe,0.5,,\n");
        std::fs::write(&path, text).expect("write");
        assert_eq!(read(&path), None, "an unreadable field");
    }
}
