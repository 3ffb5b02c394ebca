//! `utilgate changes [--since DATE]`: every case's change points and slides over the nightly
//! history, newest first. Reads the store; writes nothing.

use crate::cli::{ChangesArgs, Format};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::{CommitLog, store_from};
use crate::pipeline::history::{case_report, detector, keep_since};
use crate::report::history::{render_changes, render_json};

pub fn changes(args: &ChangesArgs) -> Result<Outcome, Error> {
    let detector = detector(&args.detector);
    let from = args.since;
    let (store, config) = store_from(&args.config)?;
    let mut reports = Vec::new();
    let mut commits = CommitLog::default();
    for (key, sku) in store.series()? {
        if args.suite.as_ref().is_some_and(|s| *s != key.suite)
            || args.detector.gpu.as_ref().is_some_and(|g| *g != sku)
        {
            continue;
        }
        let mut report = case_report(
            &store,
            config.as_ref(),
            &key,
            &sku,
            args.detector.nights,
            detector,
            &mut commits,
        )?;
        if let Some(from) = from {
            keep_since(&mut report, from);
        }
        reports.push(report);
    }
    match args.format.format {
        Format::Human => output::emit(&render_changes(&reports, &detector, args.since))?,
        Format::Json => output::emit(&render_json(&reports, &detector)?)?,
    }
    Ok(Outcome::Passed)
}
