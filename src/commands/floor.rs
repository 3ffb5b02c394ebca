//! `utilgate floor`: resolves the model (catalogue, config, or a config.json path) and the GPU,
//! then prints the pure floor report. Reads files only.

use std::path::Path;

use crate::catalog::{CatalogError, GpuSpec, ModelSpec, Precision};
use crate::cli::{FloorArgs, Format};
use crate::commands::Outcome;
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::output;
use crate::report::floor::{build_report, render_human};

fn resolve_model(name: &str, loaded: Option<&LoadedConfig>) -> Result<ModelSpec, Error> {
    if let Some(spec) = loaded.and_then(|l| l.models.get(name)) {
        return Ok(spec.clone());
    }
    if let Some(spec) = crate::catalog::model_by_name(name) {
        return Ok(spec);
    }
    let path = Path::new(name);
    if path.extension().is_some_and(|e| e == "json") || path.exists() {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        return Ok(ModelSpec::from_hf_config(&text, name)?);
    }
    Err(crate::catalog::model::resolve_model(name)
        .err()
        .unwrap_or_else(|| CatalogError::UnknownModel {
            name: name.to_owned(),
            known: crate::catalog::known_models().join(", "),
        })
        .into())
}

fn resolve_gpu(name: Option<&str>, loaded: Option<&LoadedConfig>) -> Result<GpuSpec, Error> {
    if let Some(name) = name {
        return Ok(crate::catalog::gpu::resolve_gpu(name)?);
    }
    let gpu = loaded
        .and_then(|l| l.config.gpu.as_ref())
        .ok_or(Error::NoDeviceSpec)?;
    gpu.declared_spec()?.ok_or(Error::NoDeviceSpec)
}

pub fn floor(args: &FloorArgs) -> Result<Outcome, Error> {
    let loaded = match &args.config {
        Some(path) => Some(crate::config::load(path)?),
        None => None,
    };
    let model = resolve_model(&args.model, loaded.as_ref())?;
    let gpu = resolve_gpu(args.gpu.as_deref(), loaded.as_ref())?;
    let precision = Precision::parse(&args.precision, args.kv_dtype.as_deref())?;
    let report = build_report(
        &args.model,
        &model,
        &gpu,
        &precision,
        args.phase.into(),
        args.batch,
        args.context,
        args.step_ms,
    )?;
    for warning in &report.warnings {
        output::warn(warning);
    }
    match args.format.format {
        Format::Human => output::emit(&render_human(&report))?,
        Format::Json => {
            output::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
        }
    }
    Ok(Outcome::Passed)
}
