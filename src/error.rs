//! The crate's error type: one variant per I/O module's error enum, each carrying the file, key
//! or case it concerns. `hint` gives the user's next step, printed on its own line.

use std::path::PathBuf;

use thiserror::Error;

use crate::catalog::CatalogError;
use crate::config::ConfigError;
use crate::evidence::TraceFileError;
use crate::floor::FloorError;
use crate::github::GithubError;
use crate::gpu::GpuError;
use crate::measure::harness::HarnessError;
use crate::report::RenderError;
use crate::store::StoreError;

#[derive(Debug, Error)]
pub enum Error {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Floor(#[from] FloorError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Harness(#[from] HarnessError),
    #[error(transparent)]
    Github(#[from] GithubError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Trace(#[from] TraceFileError),
    #[error("failed to access {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no device spec: the GPU could not be identified and the config declares none")]
    NoDeviceSpec,
    #[error("{}: no suite is defined, so `run` has nothing to measure", path.display())]
    NoSuites { path: PathBuf },
    #[error("interrupted: the run was stopped before it finished; nothing was stored")]
    Interrupted,
    #[error("no run {0} in the store")]
    NoSuchRun(i64),
    #[error("the store holds no run yet")]
    NoRuns,
    #[error("failed to write JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("failed to read baselines file {}: {message}", path.display())]
    BaselineFile { path: PathBuf, message: String },
}

impl Error {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Config(e) => e.hint(),
            Error::Store(e) => e.hint(),
            Error::Harness(e) => e.hint(),
            Error::Catalog(e) => e.hint(),
            Error::Floor(e) => e.hint(),
            Error::Github(e) => e.hint(),
            Error::Render(e) => e.hint(),
            Error::Gpu(e) => e.hint(),
            Error::Trace(e) => e.hint(),
            Error::NoSuites { .. } => Some(
                "add a [[suite]] table with name, command, models, precisions, phases, batches and contexts (`utilgate config default` shows one)".into(),
            ),
            Error::NoDeviceSpec => Some(
                "add [gpu] name = \"h100-sxm\" (a catalogue name) or declare mem_bandwidth_gb_s and dense_tflops in the config".into(),
            ),
            Error::Interrupted => Some("earlier history and baselines are untouched; run again".into()),
            Error::NoSuchRun(_) | Error::NoRuns => {
                Some("`utilgate runs list` shows the stored runs".into())
            }
            Error::BaselineFile { .. } => Some(
                "baseline files are written by `utilgate baseline export`; restore it from version control".into(),
            ),
            _ => None,
        }
    }
}
