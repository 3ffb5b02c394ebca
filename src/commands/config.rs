//! `utilgate config check` and `utilgate config default`. Reads the config, resolves the
//! device as `run` does and computes every case's floor; runs nothing.

use std::fmt::Write as _;

use serde::Serialize;

use crate::catalog::{GpuSpec, Precision};
use crate::cli::{ConfigCheckArgs, Format};
use crate::config::{ConfigError, LoadedConfig, Problem};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::output;
use crate::pipeline::context::env_lookup;
use crate::pipeline::device;
use crate::pipeline::gpu::GpuWatch;

/// One case of the grid and its floor (or why it has none).
#[derive(Debug, Serialize)]
struct CheckedCase {
    case: String,
    floor_ms: Option<f64>,
    bound: Option<String>,
    error: Option<String>,
}

/// What `config check --format json` prints.
#[derive(Debug, Serialize)]
struct CheckReport {
    schema_version: u32,
    path: String,
    ok: bool,
    suites: usize,
    models: usize,
    device: Option<String>,
    cases: Vec<CheckedCase>,
    notes: Vec<String>,
    problems: Vec<String>,
}

pub fn check(args: &ConfigCheckArgs) -> Result<Outcome, Error> {
    let loaded = crate::config::load(&args.config)?;
    let config = &loaded.config;
    let mut notes = Vec::new();
    let mut problems: Vec<Problem> = Vec::new();
    let mut cases = Vec::new();
    let mut device_name = None;
    if config.suites.is_empty() {
        notes.push(
            "no suite is defined: `floor`, `runs`, `baseline` and `report` work; `run` needs a [[suite]]"
                .to_owned(),
        );
    } else if config
        .suites
        .iter()
        .all(|s| s.kind == crate::config::SuiteKind::Serve)
    {
        // Service suites alone need no device: the server's GPU is `[gpu]` when declared.
    } else {
        // The device exactly as `run` resolves it; then every case's floor.
        let gpu_config = config.gpu.as_ref();
        let watch = if device::needs_nvml(gpu_config) {
            GpuWatch::start(config, env_lookup()("CUDA_VISIBLE_DEVICES").as_deref())
        } else {
            None
        };
        match device::device_spec(gpu_config, &loaded.store_path(None), watch.as_ref()) {
            Err(err) => problems.push(Problem {
                key: "gpu".into(),
                message: err.to_string(),
                hint: err.hint().unwrap_or_default(),
            }),
            Ok(gpu) => {
                device_name = Some(gpu.name.clone());
                cases = case_floors(&loaded, &gpu, &mut problems);
            }
        }
    }
    if config
        .suites
        .iter()
        .any(|s| s.kind == crate::config::SuiteKind::Serve)
    {
        notes.push(service_note(config));
    }
    let report = CheckReport {
        schema_version: 1,
        path: loaded.path.display().to_string(),
        ok: problems.is_empty(),
        suites: config.suites.len(),
        models: loaded.models.len(),
        device: device_name,
        cases,
        notes,
        problems: problems.iter().map(ToString::to_string).collect(),
    };
    match args.format.format {
        Format::Json => output::emit(&format!("{}\n", serde_json::to_string_pretty(&report)?))?,
        Format::Human => {
            if report.ok {
                let mut text = format!(
                    "{}: ok ({} suite(s), {} case(s) with a floor on {}, {} model(s))\n",
                    report.path,
                    report.suites,
                    report.cases.len(),
                    report.device.as_deref().unwrap_or("no device"),
                    report.models
                );
                for note in &report.notes {
                    let _ = writeln!(text, "note: {note}");
                }
                output::emit(&text)?;
            }
        }
    }
    if problems.is_empty() {
        Ok(Outcome::Passed)
    } else {
        Err(ConfigError::Invalid {
            path: loaded.path.clone(),
            problems,
        }
        .into())
    }
}

/// What the service suites of a config will run: they need no device of their own (the
/// server's GPU is `[gpu]`, when declared, for the estimates only).
fn service_note(config: &crate::config::Config) -> String {
    let points: usize = config
        .suites
        .iter()
        .filter(|s| s.kind == crate::config::SuiteKind::Serve)
        .map(|s| {
            let n = |v: usize| v.max(1);
            s.models.len()
                * n(s.request_rates.len())
                * n(s.max_concurrencies.len())
                * n(s.input_lens.len())
                * n(s.output_lens.len())
        })
        .sum();
    format!(
        "{points} service case(s) of kind = \"serve\": the load generator runs against the server; no floor"
    )
}

/// Every case's floor on `gpu`; a case without one is also a problem.
fn case_floors(
    loaded: &LoadedConfig,
    gpu: &GpuSpec,
    problems: &mut Vec<Problem>,
) -> Vec<CheckedCase> {
    let mut cases = Vec::new();
    for (i, suite) in loaded.config.suites.iter().enumerate() {
        for key in suite.case_keys() {
            let floor = Precision::parse(&key.precision, suite.kv_dtype.as_deref())
                .map_err(|e| (e.to_string(), e.hint()))
                .and_then(|precision| {
                    crate::floor::floor_of_case(
                        &loaded.models[&key.model],
                        loaded.draft_of(&key),
                        gpu,
                        &precision,
                        &key,
                    )
                    .map_err(|e| (e.to_string(), e.hint()))
                });
            let (floor_ms, bound, error) = match floor {
                Ok(f) => (Some(f.floor_ms), Some(f.bound.as_str().to_owned()), None),
                Err((message, hint)) => {
                    problems.push(Problem {
                        key: format!("suite[{i}] case {key}"),
                        message: format!("cannot compute a floor: {message}"),
                        hint: hint.unwrap_or_default(),
                    });
                    (None, None, Some(message))
                }
            };
            cases.push(CheckedCase {
                case: key.to_string(),
                floor_ms,
                bound,
                error,
            });
        }
    }
    cases
}

pub fn print_default() -> Result<Outcome, Error> {
    output::emit(crate::config::DEFAULT_CONFIG)?;
    Ok(Outcome::Passed)
}
