//! `utilgate import history FILE...`: an existing benchmark history (CSV, github-action-benchmark
//! data.js, Bencher Metric Format) stored as one run per night with the night's own date,
//! commit and branch. Sequences I/O only: the formats are read by `store::history_file`.
#![expect(
    clippy::disallowed_methods,
    reason = "reads the history files and the case map named on the command line"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::cli::{HistoryFormatArg, ImportHistoryArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::{StoreMode, store_with};
use crate::pipeline::history::baseline_branch;
use crate::store::RunId;
use crate::store::history_file::{
    self, BmfNight, CaseNaming, HistoryFileError, HistoryFormat, ImportedNight,
};

fn read_text(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `--case-map FILE`: a TOML table of benchmark name -> case key.
fn case_map(path: &Path) -> Result<BTreeMap<String, String>, Error> {
    let text = read_text(path)?;
    toml::from_str(&text).map_err(|e| {
        Error::HistoryFile(HistoryFileError::Bad {
            origin: path.display().to_string(),
            entry: e
                .span()
                .map_or_else(|| "the map".to_owned(), |s| format!("byte {}", s.start)),
            problem: format!("not a case map: {}", e.message()),
            hint: "write one line per benchmark: \"bench name\" = \"SUITE/MODEL/PRECISION/PHASE/bB/cC\""
                .to_owned(),
        })
    })
}

/// Every file's nights, read and checked before the store is touched.
fn read_files(args: &ImportHistoryArgs, naming: &CaseNaming) -> Result<Vec<ImportedNight>, Error> {
    let flag_date = match &args.date {
        None => None,
        Some(d) => Some(history_file::parse_date(d).ok_or_else(|| {
            Error::HistoryFile(HistoryFileError::Bad {
                origin: "--date".to_owned(),
                entry: d.clone(),
                problem: "not a date".to_owned(),
                hint: "write --date 2026-11-01 or 2026-11-01T02:00:00Z".to_owned(),
            })
        })?),
    };
    let mut files = Vec::new();
    for path in &args.files {
        let origin = path.display().to_string();
        let text = read_text(path)?;
        let format = match args.format {
            HistoryFormatArg::Csv => HistoryFormat::Csv,
            HistoryFormatArg::Bmf => HistoryFormat::Bmf,
            HistoryFormatArg::Gab => HistoryFormat::Gab,
            HistoryFormatArg::Auto => HistoryFormat::detect(&origin, &text).ok_or_else(|| {
                HistoryFileError::UnknownFormat {
                    origin: origin.clone(),
                }
            })?,
        };
        // A BMF file is one night: its name says which, else the flags.
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let mut bmf = history_file::bmf_night_from_name(stem);
        if bmf.date.is_none() {
            bmf = BmfNight {
                date: flag_date,
                commit: args.commit.clone(),
            };
        }
        let nights = history_file::read_history(&text, &origin, format, naming, &bmf)?;
        files.push((origin, nights));
    }
    Ok(history_file::merge_nights(files)?)
}

pub fn import_history(args: &ImportHistoryArgs) -> Result<Outcome, Error> {
    let naming = CaseNaming {
        suite: args.suite.clone(),
        map: match &args.case_map {
            Some(path) => case_map(path)?,
            None => BTreeMap::new(),
        },
        entries: args.entries.clone(),
    };
    let nights = read_files(args, &naming)?;
    let (mut store, config) = store_with(&args.config, StoreMode::Create)?;
    let branch = args
        .branch
        .clone()
        .unwrap_or_else(|| baseline_branch(config.as_ref()));
    let mut out = String::new();
    let (mut stored, mut skipped, mut results) = (0usize, 0usize, 0usize);
    // Oldest first, so run ids follow the nights' dates as a nightly's would.
    for night in &nights {
        let run = history_file::night_run(night, &args.gpu, &branch);
        let day = night.started_at.to_string();
        let sha = night.git_sha.as_deref().unwrap_or("-");
        if let Some(uid) = &run.uid
            && let Some(RunId(id)) = store.run_by_uid(uid)?
        {
            skipped += 1;
            let _ = writeln!(
                out,
                "skipped {day} {sha}: already imported as run {id} (nothing stored twice)"
            );
            continue;
        }
        let id = store.insert_run(&run)?;
        stored += 1;
        results += run.results.len();
        let _ = writeln!(
            out,
            "stored run {id}: {day} {sha} on {} ({} case(s))",
            run.branch.as_deref().unwrap_or("-"),
            run.results.len()
        );
    }
    let _ = writeln!(
        out,
        "imported {stored} night(s) ({results} result(s)) on {}; {skipped} already imported; \
         baselines unchanged (pin one with `utilgate baseline accept FILTER --run N --reason ...`)",
        args.gpu
    );
    output::emit(&out)?;
    Ok(Outcome::Passed)
}
