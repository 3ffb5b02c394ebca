//! Evidence: why a case got slower. Readers (Kineto traces today; Nsight Systems and Nsight
//! Compute next) feed one evidence model, analysed per step, diagnosed and diffed against the
//! baseline's evidence. Pure but the readers: `source.rs` opens files. Declarations only.

pub mod hta;
pub mod kineto;
pub mod model;
pub mod source;

#[cfg(test)]
mod hta_golden;

pub use kineto::KinetoError;
pub use model::{CpuKind, CpuOp, GpuKind, GpuOp, NameId, Names, Trace};
pub use source::{TraceFileError, load};
