//! Errors of the GPU-facing I/O modules (`gpu::nvml`, `gpu::libs`, `measure::cuda`), each
//! naming the library or call it concerns, with a hint for the next step.

use thiserror::Error;

/// The message required when no CUDA driver can be loaded (exit 2).
pub const NO_DRIVER: &str =
    "no NVIDIA driver found (libcuda.so.1); run on a GPU runner or use a harness suite";

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no NVML (libnvidia-ml.so.1): {source}")]
    NoNvml {
        #[source]
        source: nvml_wrapper::error::NvmlError,
    },
    #[error("NVML: {what}: {source}")]
    Nvml {
        what: String,
        #[source]
        source: nvml_wrapper::error::NvmlError,
    },
    #[error("{}", NO_DRIVER)]
    NoDriver,
    #[error(
        "{library} could not be loaded; the CUDA driver is present but {wanted} is not on the library path"
    )]
    MissingLibrary {
        library: &'static str,
        wanted: &'static str,
    },
    #[error("CUDA driver: {what}: {source}")]
    Driver {
        what: String,
        #[source]
        source: cudarc::driver::DriverError,
    },
    #[error("cuBLAS: {what}: {source}")]
    Blas {
        what: String,
        #[source]
        source: cudarc::cublas::result::CublasError,
    },
    #[error("NVRTC failed to compile {kernel}: {log}")]
    Compile { kernel: &'static str, log: String },
    #[error("the reference workload cannot run model {model}: {reason}")]
    Unsupported { model: String, reason: String },
    #[error(
        "the reference workload needs {need_gb:.1} GB of GPU memory for this case; {free_gb:.1} GB are free"
    )]
    OutOfMemory { need_gb: f64, free_gb: f64 },
}

impl GpuError {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            GpuError::NoNvml { .. } => Some(
                "install the NVIDIA driver (it ships libnvidia-ml.so.1), or run on a GPU runner".into(),
            ),
            GpuError::NoDriver => Some(
                "`utilgate probe` and `workload = \"reference\"` suites need an NVIDIA GPU with its driver; a suite with `command` runs anywhere".into(),
            ),
            GpuError::MissingLibrary { .. } => Some(
                "install the CUDA 12 libraries (libcublas.so.12, libcublasLt.so.12, libnvrtc.so.12, e.g. pip install nvidia-cublas-cu12 nvidia-cuda-nvrtc-cu12) and add their directory to LD_LIBRARY_PATH".into(),
            ),
            GpuError::Compile { .. } => Some(
                "the NVRTC library may be older than the GPU's architecture; install a newer CUDA 12 NVRTC".into(),
            ),
            GpuError::Unsupported { .. } => Some(
                "the reference workload runs dense transformers at bf16 or fp16; use a harness suite for other models".into(),
            ),
            GpuError::OutOfMemory { .. } => Some(
                "use a smaller batch or context for the reference suite, or a GPU with more memory".into(),
            ),
            _ => None,
        }
    }
}
