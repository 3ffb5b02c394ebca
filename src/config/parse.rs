//! Parsing config text: TOML into [`Config`], every error with its key path and line, and the
//! dotted model names (`[models.llama-3.1-8b]`) read back whole. Pure.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{
    Config, ConfigError, GateConfig, GithubConfig, GpuConfig, ModelConfig, ReportConfig,
    StoreConfig, SuiteConfig,
};
use crate::case::Verdict;

/// The file's shape as serde reads it; `models` is flattened into names afterwards.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    store: StoreConfig,
    #[serde(default)]
    gate: GateConfig,
    #[serde(default)]
    gpu: Option<GpuConfig>,
    #[serde(default)]
    report: ReportConfig,
    #[serde(default)]
    github: GithubConfig,
    #[serde(default)]
    models: toml::Table,
    #[serde(default, rename = "suite")]
    suites: Vec<SuiteConfig>,
}

/// The keys that make a table a model description rather than a level of a dotted name.
const MODEL_KEYS: [&str; 5] = [
    "hf_config",
    "architecture",
    "params",
    "kv_bytes_per_token",
    "flops_per_token",
];

/// Flatten `[models.a.b]` into the name `a.b`, then read each model table.
fn flatten_models(
    table: &toml::Table,
    prefix: &str,
    out: &mut BTreeMap<String, ModelConfig>,
    origin: &Path,
) -> Result<(), ConfigError> {
    for (name, value) in table {
        let full = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        let key = format!("models.{full}");
        let toml::Value::Table(inner) = value else {
            return Err(ConfigError::Parse {
                path: origin.to_path_buf(),
                key,
                message: format!("expected a table, found {}", value.type_str()),
            });
        };
        let describes_model =
            inner.is_empty() || inner.keys().any(|k| MODEL_KEYS.contains(&k.as_str()));
        if describes_model {
            let model: ModelConfig =
                serde_path_to_error::deserialize(value.clone()).map_err(|e| {
                    let inner_key = e.path().to_string();
                    ConfigError::Parse {
                        path: origin.to_path_buf(),
                        key: if inner_key == "." {
                            key.clone()
                        } else {
                            format!("{key}.{inner_key}")
                        },
                        message: e.inner().message().trim().to_owned(),
                    }
                })?;
            out.insert(full, model);
        } else {
            flatten_models(inner, &full, out, origin)?;
        }
    }
    Ok(())
}

pub(super) fn parse_hint(key: &str) -> String {
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let leaf = leaf.split('[').next().unwrap_or(leaf);
    match leaf {
        "batches" | "contexts" => format!("write {leaf} = [1, 8, 64] (whole numbers)"),
        "phases" => "write phases = [\"decode\", \"prefill\"]".to_owned(),
        "fail_on" => format!(
            "write fail_on = [\"regressed\", \"invalid\"] using verdicts from: {}",
            Verdict::ALL.map(Verdict::as_str).join(", ")
        ),
        "" => "check the TOML syntax at the line shown".to_owned(),
        _ => "`utilgate config default` prints every key with its type and meaning".to_owned(),
    }
}

/// Parse config text. `origin` names the file in messages. Pure.
pub fn parse(text: &str, origin: &Path) -> Result<Config, ConfigError> {
    let parse_error = |key: String, err: &toml::de::Error| ConfigError::Parse {
        path: origin.to_path_buf(),
        key,
        message: one_line_toml_error(text, err),
    };
    let de = toml::de::Deserializer::parse(text).map_err(|e| parse_error(String::new(), &e))?;
    let raw = serde_path_to_error::deserialize::<_, RawConfig>(de).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        parse_error(key, e.inner())
    })?;
    let mut models = BTreeMap::new();
    flatten_models(&raw.models, "", &mut models, origin)?;
    Ok(Config {
        store: raw.store,
        gate: raw.gate,
        gpu: raw.gpu,
        report: raw.report,
        github: raw.github,
        models,
        suites: raw.suites,
    })
}

/// toml's messages span several lines with a source excerpt; keep the message and add the line.
fn one_line_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().to_owned();
    match err.span() {
        Some(span) => {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!("{message} (line {line})")
        }
        None => message,
    }
}
