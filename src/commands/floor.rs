//! `utilgate floor`: resolves the model (catalogue, config, or a config.json path) and the GPU,
//! then prints the pure floor report. Reads files only.

#![expect(clippy::disallowed_methods, reason = "floor reads a model config file")]

use std::path::Path;

use crate::case::Speculation;
use crate::catalog::{CatalogError, GpuSpec, ModelSpec, Precision};
use crate::cli::{FloorArgs, Format};
use crate::config::LoadedConfig;
use crate::error::Error;
use crate::floor::Parallelism;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::env_lookup;
use crate::pipeline::device;
use crate::pipeline::gpu::GpuWatch;
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
    let known: Vec<&str> = loaded
        .map(|l| l.models.keys().map(String::as_str).collect())
        .unwrap_or_default();
    Err(CatalogError::UnknownModel {
        name: name.to_owned(),
        known: crate::catalog::known_models().join(", "),
        suggestion: crate::suggest::did_you_mean(
            name,
            known.into_iter().chain(crate::catalog::known_models()),
        )
        .map(str::to_owned),
    }
    .into())
}

/// The device: `--gpu NAME` (the config's declared device when `[gpu]` has that name, else a
/// catalogue entry), else `[gpu]` resolved exactly as `run` resolves it.
fn resolve_gpu(name: Option<&str>, loaded: Option<&LoadedConfig>) -> Result<GpuSpec, Error> {
    let gpu = loaded.and_then(|l| l.config.gpu.as_ref());
    if let Some(name) = name
        && gpu.and_then(|g| g.name.as_deref()) != Some(name)
    {
        return Ok(crate::catalog::gpu::resolve_gpu(name)?);
    }
    let store_path = loaded.map_or_else(
        || std::path::PathBuf::from(crate::config::DEFAULT_STORE_PATH),
        |l| l.store_path(None),
    );
    let watch = if device::needs_nvml(gpu) {
        let config = loaded.map(|l| l.config.clone()).unwrap_or_default();
        GpuWatch::start(&config, env_lookup()("CUDA_VISIBLE_DEVICES").as_deref())
    } else {
        None
    };
    device::device_spec(gpu, &store_path, watch.as_ref())
}

/// `--config`, else `./utilgate.toml` when it exists (as `run` reads it), else none.
fn floor_config(flag: Option<&Path>) -> Result<Option<LoadedConfig>, Error> {
    let default = Path::new(crate::config::DEFAULT_CONFIG_PATH);
    match flag {
        Some(path) => Ok(Some(crate::config::load(path)?)),
        None if default.exists() => Ok(Some(crate::config::load(default)?)),
        None => Ok(None),
    }
}

/// `--precision`, else the checkpoint's own (`quantization_config`), else bf16; `--kv-dtype`
/// overrides the cache either way.
fn floor_precision(model: &ModelSpec, args: &FloorArgs) -> Result<Precision, Error> {
    let kv = args.kv_dtype.as_deref();
    Ok(match (&args.precision, model.checkpoint_precision()) {
        (Some(text), _) => Precision::parse(text, kv)?,
        (None, Some(declared)) => {
            let mut p = declared.precision.clone();
            if let Some(kv) = kv
                .map(crate::catalog::precision::parse_kv_dtype)
                .transpose()?
            {
                p.kv = kv.unwrap_or(p.kv);
            }
            p
        }
        (None, None) => Precision::parse("bf16", kv)?,
    })
}

pub fn floor(args: &FloorArgs) -> Result<Outcome, Error> {
    let loaded = floor_config(args.config.as_deref())?;
    let model = resolve_model(&args.model, loaded.as_ref())?;
    let mut gpu = resolve_gpu(args.gpu.as_deref(), loaded.as_ref())?;
    if let Some(gb_s) = args.interconnect_gb_s {
        gpu = gpu.with_interconnect(gb_s)?;
    }
    let precision = floor_precision(&model, args)?;
    let speculation = match (&args.draft, args.draft_k) {
        (Some(draft), Some(k)) => Some(Speculation {
            draft: draft.clone(),
            k,
        }),
        _ => None,
    };
    let draft = match speculation.as_ref().and_then(Speculation::draft_model) {
        Some(name) => Some(resolve_model(name, loaded.as_ref())?),
        None => None,
    };
    let report = build_report(
        &args.model,
        &model,
        &gpu,
        &precision,
        args.phase.into(),
        args.batch,
        args.context,
        Parallelism {
            tp: args.tp,
            ep: args.ep,
        },
        speculation.as_ref().map(|s| (s, draft.as_ref())),
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
