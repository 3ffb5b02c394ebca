//! Loading a config from disk: reads the file and the `hf_config` files it names, resolves the
//! models and validates. The only I/O of the config module.

#![expect(clippy::disallowed_methods, reason = "the config is a file")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::{Config, ConfigError, ModelConfig, Problem, ValidationContext, parse, validate};
use crate::catalog::{CatalogError, ModelSpec};

/// A config read from disk with its models resolved.
#[derive(Debug, Clone)]
pub struct LoadedConfig {
    pub path: PathBuf,
    /// The directory relative paths in the config are resolved against.
    pub dir: PathBuf,
    pub config: Config,
    pub models: BTreeMap<String, ModelSpec>,
}

impl LoadedConfig {
    /// The store path: `--db` when given (a file or a `postgres://` URL), else `[store] url`,
    /// else `[store] path` relative to the config's directory.
    #[must_use]
    pub fn store_path(&self, flag: Option<&Path>) -> PathBuf {
        match (flag, &self.config.store.url) {
            (Some(p), _) => p.to_path_buf(),
            (None, Some(url)) => PathBuf::from(url),
            (None, None) => self.dir.join(&self.config.store.path),
        }
    }

    /// The draft model of a speculative case (`key.speculation()`), resolved like the suite's
    /// models; `None` without speculation, for n-gram drafting, or for an unknown draft (the
    /// floor then says which).
    #[must_use]
    pub fn draft_of(&self, key: &crate::case::CaseKey) -> Option<&ModelSpec> {
        let spec = key.speculation()?;
        self.models.get(spec.draft_model()?)
    }
}

/// Read, parse, resolve models and validate. The only I/O in this module.
pub fn load(path: &Path) -> Result<LoadedConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let config = parse(&text, path)?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    let mut problems = Vec::new();
    let mut models = BTreeMap::new();
    for (name, model) in &config.models {
        let hf_text = match &model.hf_config {
            Some(rel) => {
                let file = dir.join(rel);
                let text =
                    std::fs::read_to_string(&file).map_err(|source| ConfigError::ReadModel {
                        model: name.clone(),
                        path: file.clone(),
                        source,
                    })?;
                Some((text, file.display().to_string()))
            }
            None => None,
        };
        match resolve_model(name, model, hf_text.as_ref().map(|(t, o)| (t.as_str(), o.as_str())))
        {
            Ok(Some(spec)) => {
                models.insert(name.clone(), spec);
            }
            Ok(None) => {}
            Err(err) => problems.push(Problem {
                key: format!("models.{name}"),
                message: err.to_string(),
                hint: "name the missing field in the config.json or use the bare form (params, kv_bytes_per_token)".into(),
            }),
        }
    }
    // Models named by suites but not declared come from the built-in catalogue.
    for suite in &config.suites {
        let draft = suite
            .speculative
            .as_ref()
            .and_then(|s| (s.draft != crate::case::Speculation::NGRAM).then_some(&s.draft));
        for name in suite.models.iter().chain(draft) {
            if !models.contains_key(name)
                && let Some(spec) = crate::catalog::model_by_name(name)
            {
                models.insert(name.clone(), spec);
            }
        }
    }
    let known: BTreeSet<String> = models.keys().cloned().collect();
    problems.extend(validate(
        &config,
        &ValidationContext {
            known_models: &known,
        },
    ));
    if !problems.is_empty() {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            problems,
        });
    }
    Ok(LoadedConfig {
        path: path.to_path_buf(),
        dir,
        config,
        models,
    })
}

/// Turn one `[models.NAME]` entry into a model spec. `hf` is the text of its `hf_config` file
/// and that file's name. Returns `None` for an entry that describes no model (validation
/// reports it). Pure.
pub fn resolve_model(
    name: &str,
    model: &ModelConfig,
    hf: Option<(&str, &str)>,
) -> Result<Option<ModelSpec>, CatalogError> {
    if let Some((text, origin)) = hf {
        return ModelSpec::from_hf_config(text, origin).map(Some);
    }
    if let Some(table) = &model.architecture {
        // The inline form holds the keys of a config.json: hand them over as JSON.
        let json = serde_json::to_string(table).unwrap_or_default();
        return ModelSpec::from_hf_config(&json, &format!("models.{name}.architecture")).map(Some);
    }
    if let (Some(params), Some(kv)) = (model.params, model.kv_bytes_per_token) {
        return ModelSpec::bare(params, kv, model.flops_per_token).map(Some);
    }
    Ok(None)
}
