//! The config's errors: reading, parsing and validation problems, each with its key path and a
//! hint. Pure.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use super::parse::parse_hint;

/// One problem found by validation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub key: String,
    pub message: String,
    pub hint: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (fix: {})", self.key, self.message, self.hint)
    }
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("failed to read config {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse config {}: {key}: {message}", path.display())]
    Parse {
        path: PathBuf,
        key: String,
        message: String,
    },
    #[error("failed to parse config {}:\n{}", path.display(), problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    ParseAll {
        path: PathBuf,
        problems: Vec<Problem>,
    },
    #[error("invalid config {}:\n{}", path.display(), problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
    #[error("failed to read models.{model}.hf_config {}: {source}", path.display())]
    ReadModel {
        model: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ConfigError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            ConfigError::Read { path, .. } => Some(format!(
                "create {} (`utilgate config default > {}` writes a commented one) or pass --config PATH",
                path.display(),
                path.display()
            )),
            ConfigError::Parse { key, message, .. } => Some(parse_hint(key, message)),
            ConfigError::ParseAll { problems, .. } => {
                // A misspelt key also leaves its real key missing: lead with the suggestion.
                let mut hints: Vec<&str> = problems
                    .iter()
                    .map(|p| p.hint.as_str())
                    .filter(|h| h.contains("did you mean"))
                    .collect();
                hints.dedup();
                hints.push("fix each key above; `utilgate config default` prints every key with its type and meaning");
                Some(hints.join(" "))
            }
            ConfigError::Invalid { .. } => {
                Some("`utilgate config default` prints every key with its meaning".to_owned())
            }
            ConfigError::ReadModel { model, .. } => Some(format!(
                "models.{model}.hf_config is relative to the config file's directory; point it at a Hugging Face config.json"
            )),
        }
    }
}
