//! `utilgate man [--out-dir DIR]`: the man pages generated from the CLI's definition. Prints to
//! stdout, or writes one file per command.

#![expect(clippy::disallowed_methods, reason = "man pages are written as files")]

use std::path::Path;

use clap::CommandFactory;

use crate::cli::{Cli, ManArgs};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;

pub fn man(args: &ManArgs) -> Result<Outcome, Error> {
    let cmd = Cli::command();
    let Some(dir) = &args.out_dir else {
        output::emit(&String::from_utf8_lossy(&render_page(cmd, "utilgate")?))?;
        return Ok(Outcome::Passed);
    };
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    write_page(dir, "utilgate", &render_page(cmd.clone(), "utilgate")?)?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("utilgate-{}", sub.get_name());
        write_page(dir, &name, &render_page(sub.clone(), &name)?)?;
    }
    Ok(Outcome::Passed)
}

fn render_page(cmd: clap::Command, title: &str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .title(title)
        .render(&mut out)
        .map_err(|source| Error::Io {
            path: "<man page>".into(),
            source,
        })?;
    Ok(out)
}

fn write_page(dir: &Path, name: &str, page: &[u8]) -> Result<(), Error> {
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page).map_err(|source| Error::Io { path, source })
}
