//! The GPU itself: its state through NVML (fingerprint, sampling, the inconclusive guard) and
//! the errors of the GPU-facing I/O (NVML, the CUDA driver, cuBLAS, NVRTC). Declarations only.

pub mod energy;
pub mod error;
pub mod libs;
pub mod nvml;
pub mod state;

pub use error::GpuError;
pub use state::{GpuFingerprint, GpuSample, GpuStateSummary, guard, guard_json, summarise};
