//! `utilgate site --out DIR [--since DATE] [--branch B]`: write the static site of every
//! case's nightly history (docs/site.md). Reads the store; writes only under DIR.

use crate::cli::SiteArgs;
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::site::{SiteOptions, build};
use crate::pipeline::{context, history, publish};

pub fn site(args: &SiteArgs) -> Result<Outcome, Error> {
    let detector = history::detector(&args.detector);
    let since = args.since;
    let loaded = context::optional_config(&args.config)?;
    let reports = publish::renderer(loaded.as_ref())?;
    let (store, config) = context::store_from(&args.config)?;
    // A site reads every night of every case: a page of the file per night, read in place.
    store.map_for_reading()?;
    let opts = SiteOptions {
        out: args.out.clone(),
        title: args.title.clone(),
        branch: args
            .branch
            .clone()
            .unwrap_or_else(|| history::baseline_branch(config.as_ref())),
        since,
        spark_nights: args.spark_nights.max(2),
        run_pages: args.run_pages,
        nights: args.detector.nights,
        detector,
        gpu: args.detector.gpu.clone(),
    };
    // The site's pages are rendered on every core, each thread reading through its own
    // connection to the same store.
    let open = || -> Result<crate::store::Store, Error> {
        let (reader, _) = context::store_from(&args.config)?;
        reader.map_for_reading()?;
        Ok(reader)
    };
    let built = build(
        &store,
        &open,
        config.as_ref(),
        &reports,
        &opts,
        context::now(),
    )?;
    output::emit(&format!(
        "site: {} case page{} ({} rewritten), {} run page{} ({} rewritten), {} change{} on branch {}{}; open {}\n",
        built.cases,
        plural(built.cases),
        built.cases_written,
        built.runs,
        plural(built.runs),
        built.runs_written,
        built.changes,
        plural(built.changes),
        opts.branch,
        if built.rebuilt { " (built whole)" } else { "" },
        opts.out.join("index.html").display(),
    ))?;
    Ok(Outcome::Passed)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
