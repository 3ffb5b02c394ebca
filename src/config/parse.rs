//! Parsing config text: TOML into [`Config`], every error with its key path and line, and the
//! dotted model names (`[models.llama-3.1-8b]`) read back whole. Pure.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{
    CanaryConfig, Config, ConfigError, GateConfig, GithubConfig, GpuConfig, LimitsConfig,
    ModelConfig, Problem, ReportConfig, StoreConfig, SuiteConfig,
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
    limits: LimitsConfig,
    #[serde(default)]
    canary: CanaryConfig,
    #[serde(default)]
    ab: crate::compare::AbPlan,
    #[serde(default)]
    github: GithubConfig,
    #[serde(default)]
    models: toml::Table,
    #[serde(default, rename = "suite")]
    suites: Vec<SuiteConfig>,
    #[serde(default)]
    evidence: super::EvidenceConfig,
    #[serde(default)]
    run: super::RunConfig,
    #[serde(default)]
    site: super::SiteConfig,
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

pub(super) fn parse_hint(key: &str, message: &str) -> String {
    if let Some((field, expected)) = unknown_field(message)
        && let Some(near) = crate::suggest::did_you_mean(field, expected.iter().copied())
    {
        return format!("did you mean `{near}`?");
    }
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

/// One problem of several, its fix beside it. A misspelt key with a near match is named alone:
/// the full list of accepted keys would bury the suggestion.
fn problem(key: String, message: &str) -> Problem {
    let hint = parse_hint(&key, message);
    let message = match unknown_field(message) {
        Some((field, _)) if hint.starts_with("did you mean") => format!("unknown field `{field}`"),
        _ => message.to_owned(),
    };
    Problem { key, message, hint }
}

/// The misspelt key and the accepted ones from serde's "unknown field `x`, expected one of `a`,
/// `b`" (or "expected `a`").
fn unknown_field(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest.split('`').skip(1).step_by(2).collect();
    Some((field, expected))
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
        let first = parse_error(key, e.inner());
        // Report every problem at once: the others are found by setting each one aside.
        let more = more_shape_errors(text, 20);
        if more.len() <= 1 {
            return first;
        }
        let ConfigError::Parse { path, key, message } = first else {
            return first;
        };
        let mut problems = vec![problem(key, &message)];
        for (key, message) in more.into_iter().skip(1) {
            problems.push(problem(key, &message));
        }
        ConfigError::ParseAll { path, problems }
    })?;
    let mut models = BTreeMap::new();
    flatten_models(&raw.models, "", &mut models, origin)?;
    Ok(Config {
        store: raw.store,
        gate: raw.gate,
        gpu: raw.gpu,
        report: raw.report,
        limits: raw.limits,
        canary: raw.canary,
        ab: raw.ab,
        github: raw.github,
        models,
        suites: raw.suites,
        evidence: raw.evidence,
        run: raw.run,
        site: raw.site,
    })
}

/// The shape errors of `text` (key path, message), found one at a time by removing each
/// offending key and deserialising again, up to `limit`. A missing required key ends the search
/// (nothing can be set aside for it).
fn more_shape_errors(text: &str, limit: usize) -> Vec<(String, String)> {
    let Ok(mut value) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    while found.len() < limit {
        let Err(err) =
            serde_path_to_error::deserialize::<_, RawConfig>(toml::Value::Table(value.clone()))
        else {
            break;
        };
        let key = err.path().to_string();
        let message = err.inner().message().trim().to_owned();
        let segments: Vec<serde_path_to_error::Segment> = err.path().iter().cloned().collect();
        let missing = message.starts_with("missing field");
        found.push((if key == "." { String::new() } else { key }, message));
        if missing || !remove_at(&mut value, &segments) {
            break;
        }
    }
    found
}

/// Removes the value at `path` from `table`; false when the path leads nowhere.
fn remove_at(table: &mut toml::Table, path: &[serde_path_to_error::Segment]) -> bool {
    use serde_path_to_error::Segment;
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut current: &mut toml::Value = match parents.first() {
        None => {
            return match last {
                Segment::Map { key } => table.remove(key).is_some(),
                _ => false,
            };
        }
        Some(Segment::Map { key }) => match table.get_mut(key) {
            Some(v) => v,
            None => return false,
        },
        Some(_) => return false,
    };
    for segment in &parents[1..] {
        let next = match (segment, current) {
            (Segment::Map { key }, toml::Value::Table(t)) => t.get_mut(key),
            (Segment::Seq { index }, toml::Value::Array(a)) => a.get_mut(*index),
            _ => None,
        };
        match next {
            Some(v) => current = v,
            None => return false,
        }
    }
    match (last, current) {
        (Segment::Map { key }, toml::Value::Table(t)) => t.remove(key).is_some(),
        (Segment::Seq { index }, toml::Value::Array(a)) if *index < a.len() => {
            a.remove(*index);
            true
        }
        _ => false,
    }
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
