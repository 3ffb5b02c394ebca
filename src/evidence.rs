//! Evidence: why a case got slower. Readers (torch.profiler/Kineto traces, Nsight Systems
//! exports, Nsight Compute CSVs) feed one evidence model, analysed per step, diagnosed and
//! diffed against the baseline's evidence. Pure but three readers: `source.rs` opens trace files,
//! `nsys_sqlite.rs` opens an export read-only and `file.rs` opens what a harness reported. Declarations only.

pub mod analysis;
mod chunks;
pub mod classify;
pub mod diagnosis;
pub mod diff;
pub mod file;
pub mod hta;
pub mod kineto;
mod kineto_error;
pub mod model;
pub mod ncu;
pub mod nsight;
pub mod nsys;
pub mod nsys_sqlite;
pub mod nsys_stats;
pub mod nsys_steps;
pub mod source;

#[cfg(test)]
mod analysis_tests;
#[cfg(test)]
mod hta_golden;

pub use analysis::{Analysis, NameStat, Options, StepSummary, Window, analyse};
pub use classify::{Category, Classifier};
pub use diagnosis::{attention_growth, diagnose};
pub use diff::{Change, TraceDiff, diff};
pub use kineto::KinetoError;
pub use model::{CpuKind, CpuOp, GpuKind, GpuOp, NameId, Names, Trace};
pub use source::{StreamStats, TraceFileError, analyse_file, load};
