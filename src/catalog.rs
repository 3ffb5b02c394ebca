//! The catalogues behind every floor: GPU specs (datasheet peaks), model specs (from a Hugging
//! Face `config.json`, inline fields or the bare form) and precisions. Pure: config text is
//! passed in, nothing is read from disk.

pub mod device;
pub mod error;
pub mod gpu;
pub mod model;
pub mod precision;

pub use device::{DeclaredFigures, declare_device};
pub use error::CatalogError;
pub use gpu::{GpuSpec, gpu_by_name, gpu_from_nvml_name};
pub use model::{ModelSpec, known_models, model_by_name};
pub use precision::{ComputeDtype, Precision, StorageDtype};
