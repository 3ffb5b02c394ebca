//! Errors of the catalogues (GPU, model, precision). Pure: each names the origin (a file or a
//! config key), the field and the accepted forms, and offers a hint line.

use thiserror::Error;

/// How to declare a GPU that is not in the catalogue, shown as a hint.
pub const DECLARE_GPU_HINT: &str = "declare it in utilgate.toml: [gpu] name = \"my-gpu\", \
     mem_bandwidth_gb_s = 3350, dense_tflops = { bf16 = 989.4, fp8 = 1978.9 }, memory_gb = 80 \
     (dense datasheet figures, never the sparse ones)";

#[derive(Debug, Error)]
pub enum CatalogError {
    #[error("unknown GPU {name:?} (known: {known})")]
    UnknownGpu {
        name: String,
        known: String,
        /// The closest catalogue name, if one is close.
        suggestion: Option<String>,
    },

    #[error("unknown model {name:?} (built in: {known})")]
    UnknownModel {
        name: String,
        known: String,
        /// The closest known model name, if one is close.
        suggestion: Option<String>,
    },

    #[error("failed to parse model config {origin}: {source}")]
    Json {
        origin: String,
        #[source]
        source: serde_json::Error,
    },

    #[error("model config {origin}: {context}missing field `{field}`")]
    MissingField {
        origin: String,
        field: String,
        /// Leading words saying how the config was read, e.g. for an unknown family.
        context: String,
    },

    #[error("model config {origin}: field `{field}`: expected {expected}, found {found}")]
    FieldType {
        origin: String,
        field: String,
        expected: &'static str,
        found: String,
    },

    #[error("model config {origin}: field `{field}`: {reason}")]
    InvalidField {
        origin: String,
        field: String,
        reason: String,
    },

    #[error("unknown precision {given:?}: expected one of {accepted}")]
    UnknownPrecision { given: String, accepted: String },

    #[error("unknown KV-cache dtype {given:?}: expected one of {accepted}")]
    UnknownKvDtype { given: String, accepted: String },

    #[error("unknown compute dtype {given:?}: expected one of {accepted}")]
    UnknownComputeDtype { given: String, accepted: String },

    #[error("{what}: expected a positive finite number, found {value}")]
    InvalidFigure { what: String, value: f64 },

    #[error(
        "model config {origin}: field `quantization_config.quant_method`: {method:?} is not \
         understood (supported: {supported})"
    )]
    UnsupportedQuantisation {
        origin: String,
        method: String,
        supported: String,
    },
}

impl CatalogError {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            CatalogError::UnknownGpu { suggestion, .. } => Some(format!(
                "{}`utilgate gpus` lists the catalogue with its figures; or {DECLARE_GPU_HINT}",
                suggestion
                    .as_ref()
                    .map_or_else(String::new, |s| format!("did you mean `{s}`? "))
            )),
            CatalogError::UnknownModel { suggestion, .. } => Some(format!(
                "{}pass a path to a Hugging Face config.json, or declare [models.NAME] in \
                 utilgate.toml with hf_config = \"path/config.json\" or the bare form \
                 params = 8.0e9, kv_bytes_per_token = 131072",
                suggestion
                    .as_ref()
                    .map_or_else(String::new, |s| format!("did you mean `{s}`? or "))
            )),
            CatalogError::MissingField { field, .. } => Some(format!(
                "add `{field}` to the config, or describe the model in the bare form: \
                 params = 8.0e9, kv_bytes_per_token = 131072 (optional flops_per_token)"
            )),
            CatalogError::UnknownPrecision { .. } => {
                Some("write e.g. --precision bf16, --precision fp8 or --precision int4-g128".into())
            }
            CatalogError::UnknownKvDtype { .. } => {
                Some("write e.g. --kv-dtype fp8, or omit it for the default".into())
            }
            CatalogError::UnsupportedQuantisation { .. } => Some(
                "pass the precision explicitly (e.g. --precision nvfp4, fp8-b128, int4-g128), \
                 which overrides the checkpoint's"
                    .into(),
            ),
            CatalogError::Json { .. }
            | CatalogError::FieldType { .. }
            | CatalogError::InvalidField { .. }
            | CatalogError::UnknownComputeDtype { .. }
            | CatalogError::InvalidFigure { .. } => None,
        }
    }
}
