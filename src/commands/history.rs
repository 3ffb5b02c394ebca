//! `utilgate history CASE`: one case's nightly history on the baseline branch, read for change
//! points and slow slides (`pipeline::history`). Reads the store; writes nothing.

use crate::case::CaseKey;
use crate::cli::{Format, HistoryArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;

use crate::pipeline::context::{CommitLog, store_from};
use crate::pipeline::history::{case_report, detector};
use crate::report::history::{render_history, render_json};

pub fn history(args: &HistoryArgs) -> Result<Outcome, Error> {
    let detector = detector(&args.detector);
    let (store, config) = store_from(&args.config)?;
    let all = store.series()?;
    let wanted: Vec<&(CaseKey, String)> = all
        .iter()
        .filter(|(_, sku)| args.detector.gpu.as_ref().is_none_or(|g| g == sku))
        .collect();
    let exact: Vec<&&(CaseKey, String)> = wanted
        .iter()
        .filter(|(k, _)| k.to_string() == args.case)
        .collect();
    let matches = if exact.is_empty() {
        wanted
            .iter()
            .filter(|(k, _)| k.to_string().contains(&args.case))
            .collect()
    } else {
        exact
    };
    let (key, sku) = match matches.as_slice() {
        [one] => (&one.0, &one.1),
        [] => {
            let known: Vec<String> = wanted
                .iter()
                .take(5)
                .map(|(k, s)| format!("{k} ({s})"))
                .collect();
            return Err(Error::CaseMatch {
                wanted: args.case.clone(),
                within: "the store".into(),
                matches: Vec::new(),
                known,
            });
        }
        many => {
            return Err(Error::CaseMatch {
                wanted: args.case.clone(),
                within: "the store".into(),
                matches: many.iter().map(|(k, s)| format!("{k} ({s})")).collect(),
                known: Vec::new(),
            });
        }
    };
    let report = case_report(
        &store,
        config.as_ref(),
        key,
        sku,
        args.detector.nights,
        detector,
        &mut CommitLog::default(),
    )?;
    match args.format.format {
        Format::Human => output::emit(&render_history(&report, &detector))?,
        Format::Json => output::emit(&render_json(&[report], &detector)?)?,
    }
    Ok(Outcome::Passed)
}
