//! What a built-in harness reads from the protocol's environment (DESIGN.md §5), and the model
//! it names in the config. Shared by `harness cpu-decode` and `harness reference`. Does I/O
//! (the environment).

use crate::case::Phase;
use crate::catalog::ModelSpec;
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::measure::harness as names;

/// The case and step counts `utilgate run` hands a harness.
pub struct ProtocolInputs {
    pub model: String,
    pub precision: String,
    pub phase: Phase,
    pub batch: u64,
    pub context: u64,
    pub warmup: u64,
    pub steps: u64,
    pub out: String,
}

impl ProtocolInputs {
    /// Read every protocol variable. `harness` names the built-in harness in errors.
    pub fn from_env(harness: &str) -> Result<ProtocolInputs, Error> {
        let var = |name: &str| -> Result<String, Error> {
            #[expect(
                clippy::disallowed_methods,
                reason = "a harness reads the protocol's environment"
            )]
            std::env::var(name).map_err(|_| {
                Error::Usage(format!(
                    "{name} is not set: `utilgate harness {harness}` is started by `utilgate run` as a suite's harness"
                ))
            })
        };
        let number = |name: &str| -> Result<u64, Error> {
            let text = var(name)?;
            text.parse()
                .map_err(|_| Error::Usage(format!("{name}={text:?} is not a whole number")))
        };
        Ok(ProtocolInputs {
            model: var(names::UTILGATE_MODEL)?,
            precision: var(names::UTILGATE_PRECISION)?,
            phase: var(names::UTILGATE_PHASE)?.parse().map_err(Error::Usage)?,
            batch: number(names::UTILGATE_BATCH)?,
            context: number(names::UTILGATE_CONTEXT)?,
            warmup: number(names::UTILGATE_WARMUP_STEPS)?,
            steps: number(names::UTILGATE_STEPS)?,
            out: var(names::UTILGATE_OUT)?,
        })
    }

    /// The model the case names, from the config's resolved models.
    pub fn model_spec<'a>(&self, loaded: &'a LoadedConfig) -> Result<&'a ModelSpec, Error> {
        loaded.models.get(&self.model).ok_or_else(|| {
            Error::Usage(format!(
                "model {:?} is not in {}",
                self.model,
                loaded.path.display()
            ))
        })
    }
}
