//! The report of a stored run (with the verdicts stored with it, never re-judged), each case's
//! trend from the store, the template environment with the user's templates, and the files a
//! report becomes: the report directory and the Actions step summary. Reads the store and the
//! templates directory; writes files.

#![expect(
    clippy::disallowed_methods,
    reason = "reports and the step summary are files"
)]

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::config::LoadedConfig;
use crate::error::Error;
use crate::output;
use crate::report::{self, BUILTIN_TEMPLATES, Renderer, ReportFormat, RunReport};

use super::env::GithubEnv;

/// GitHub's limit on one step summary is 1 MiB; stay clear of it.
pub(super) const STEP_SUMMARY_LIMIT: usize = 1_000_000;

/// The template environment, with the user's templates from `[report] templates` when set.
pub fn renderer(loaded: Option<&LoadedConfig>) -> Result<Renderer, Error> {
    let mut overrides = BTreeMap::new();
    if let Some(loaded) = loaded
        && let Some(rel) = &loaded.config.report.templates
    {
        let dir = loaded.dir.join(rel);
        let entries = std::fs::read_dir(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !BUILTIN_TEMPLATES.iter().any(|(n, _)| *n == name) {
                if Path::new(&name)
                    .extension()
                    .is_some_and(|e| e.eq_ignore_ascii_case("j2"))
                {
                    let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|(n, _)| *n).collect();
                    output::warn(&format!(
                        "{}: replaces no built-in template (names: {})",
                        entry.path().display(),
                        names.join(", ")
                    ));
                }
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
                path: path.clone(),
                source,
            })?;
            overrides.insert(name, text);
        }
    }
    Ok(Renderer::new(&overrides)?)
}

fn write_file(path: &Path, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Create a report directory (early, before any measuring).
pub fn create_dir(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Write every format into `dir`.
pub fn write_report_dir(
    renderer: &Renderer,
    report: &RunReport,
    dir: &Path,
) -> Result<Vec<PathBuf>, Error> {
    create_dir(dir)?;
    let mut written = Vec::new();
    for format in ReportFormat::ALL {
        let path = dir.join(format.file_name());
        write_file(&path, &renderer.render(format, report)?)?;
        written.push(path);
    }
    Ok(written)
}

/// Append the step summary when Actions asks for one.
pub(super) fn write_step_summary(
    renderer: &Renderer,
    report: &RunReport,
    genv: &GithubEnv,
) -> Result<(), Error> {
    let Some(path) = &genv.step_summary else {
        return Ok(());
    };
    let text = report::fit_comment(
        &renderer.render(ReportFormat::Summary, report)?,
        STEP_SUMMARY_LIMIT,
    );
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()).map(|()| f))
        .map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
    file.flush().map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })
}
