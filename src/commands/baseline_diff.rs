//! `utilgate baseline diff OLD [NEW]`: reads the two sides (files, directories, or a file and
//! the store) and prints their comparison (`report::baseline_diff`) as a table, Markdown or
//! JSON. Reads files and the store.

use std::path::Path;

use crate::cli::{BaselineDiffArgs, DiffFormat};
use crate::commands::Outcome;
use crate::commands::baseline_files::{from_store, read_files};
use crate::commands::runs::store_from;
use crate::error::Error;
use crate::output;
use crate::report::baseline_diff::{Side, diff_baselines, render_markdown, render_table};

fn side_from_files(path: &Path, gpu: Option<&str>) -> Result<Side, Error> {
    let mut side = Side::new();
    for (_, file) in read_files(&[path.to_path_buf()])? {
        if gpu.is_some_and(|g| g != file.gpu_sku) {
            continue;
        }
        for b in file.baselines {
            side.insert((file.gpu_sku.clone(), b.key.clone()), b);
        }
    }
    Ok(side)
}

pub(crate) fn diff(args: &BaselineDiffArgs) -> Result<Outcome, Error> {
    let gpu = args.gpu.as_deref();
    let old = side_from_files(&args.old, gpu)?;
    let (new, new_label) = if let Some(path) = &args.new {
        (side_from_files(path, gpu)?, path.display().to_string())
    } else {
        let (store, _) = store_from(&args.config)?;
        let mut side = Side::new();
        for (sku, baselines) in from_store(&store, gpu)? {
            for b in baselines {
                side.insert((sku.clone(), b.key.clone()), b);
            }
        }
        (side, "the store".to_owned())
    };
    let d = diff_baselines(&old, &new, (args.old.display().to_string(), new_label));
    let text = match args.format {
        DiffFormat::Human => render_table(&d, output::stdout_terminal()),
        DiffFormat::Markdown => render_markdown(&d),
        DiffFormat::Json => format!("{}\n", serde_json::to_string_pretty(&d)?),
    };
    output::emit(&text)?;
    if args.exit_code && !d.changes.is_empty() {
        return Ok(Outcome::GateFailed);
    }
    Ok(Outcome::Passed)
}
