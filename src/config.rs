//! `utilgate.toml`: its shape (`types`), parsing (`parse`, pure), validation (`validate`, pure)
//! and loading from disk (`load`, the only I/O here: reads the file and the `hf_config` files it
//! names). Declarations and re-exports only.
//!
//! Unknown keys are errors: in a gate a misspelt key would silently check nothing. After serde
//! has accepted the shape, `validate` reports every remaining problem at once, each with its key
//! path (`suite[1].batches`) and a fix.

mod axes;
mod error;
mod load;
mod names;
mod parse;
mod policy;
mod serve;
mod types;
mod validate;

#[cfg(test)]
mod tests;

pub use error::{ConfigError, Problem};
pub use load::{LoadedConfig, load, resolve_model};
pub use parse::parse;
pub(crate) use policy::policy_for;
pub use types::{
    CanaryConfig, CaseOverride, ClassifyRule, Config, DEFAULT_CONFIG, DEFAULT_CONFIG_PATH,
    DEFAULT_STATUS_CONTEXT, DEFAULT_STORE_PATH, EvidenceConfig, GateConfig, GithubConfig,
    GpuConfig, LimitsConfig, ModelConfig, ReportConfig, RunConfig, SiteConfig, StoreConfig,
    SuiteConfig, SuiteKind, Workload,
};
pub use validate::{ValidationContext, validate};
