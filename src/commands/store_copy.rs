//! `utilgate store copy --from PATH_OR_URL --to PATH_OR_URL`: opens the source read-only and the
//! destination for writing, copies the history (`Store::copy_history_to`) and prints every
//! table's row count and checksum. Sequencing and printing only.

use std::fmt::Write as _;
use std::time::Duration;

use comfy_table::Table;
use comfy_table::presets::UTF8_BORDERS_ONLY;

use crate::cli::{Format, StoreCopyArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::report;
use crate::store::{CopyReport, Store};

pub fn copy(args: &StoreCopyArgs) -> Result<Outcome, Error> {
    let timeout = Duration::from_secs_f64(args.busy_timeout_s);
    crate::pipeline::context::refuse_shared_store_in_pull_request(
        &args.to,
        crate::pipeline::context::SharedWrite {
            verb: "store copy",
            origin: "--to",
            fix: "copy into the shared store from a job that runs no pull-request code (a `workflow_run` workflow, docs/github.md); in the pull request's job copy only to a local SQLite file",
        },
    )?;
    let mut from = Store::open_existing_read_only(&args.from, timeout)?;
    let mut to = Store::open(&args.to, timeout)?;
    let copied = from.copy_history_to(&mut to)?;
    let (from, to) = (from.path().display(), to.path().display());
    let text = match args.format.format {
        Format::Json => {
            let value = serde_json::json!({
                "schema_version": report::SCHEMA_VERSION,
                "from": from.to_string(),
                "to": to.to_string(),
                "copied_rows": copied.copied(),
                "tables": copied.tables,
            });
            format!("{}\n", serde_json::to_string_pretty(&value)?)
        }
        Format::Human => human(&copied, &from.to_string(), &to.to_string()),
    };
    output::emit(&text)?;
    Ok(Outcome::Passed)
}

fn human(copied: &CopyReport, from: &str, to: &str) -> String {
    let mut table = Table::new();
    table.load_style(UTF8_BORDERS_ONLY).force_no_tty();
    table.set_header(vec![
        "table",
        "rows",
        "copied",
        "sha256 (source = destination)",
    ]);
    for t in &copied.tables {
        let rows = if t.kept > 0 {
            format!("{} (+{} kept)", t.rows, t.kept)
        } else {
            t.rows.to_string()
        };
        table.add_row(vec![
            t.table.to_owned(),
            rows,
            t.copied.to_string(),
            t.sha256.clone(),
        ]);
    }
    let mut out = format!("{table}\n");
    if copied.copied() == 0 {
        let _ = writeln!(
            out,
            "nothing to copy: {to} already holds the history of {from} ({} rows in {} tables), verified",
            copied.rows(),
            copied.tables.len()
        );
    } else {
        let _ = writeln!(
            out,
            "copied {} of {} rows from {from} to {to}; every table's count and checksum verified",
            copied.copied(),
            copied.rows()
        );
    }
    out
}
