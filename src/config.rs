//! `utilgate.toml`: its shape, parsing and validation (pure: `parse`, `validate`), and loading
//! from disk (`load`, the only I/O here: reads the file and the `hf_config` files it names).
//!
//! Unknown keys are errors: in a gate a misspelt key would silently check nothing. After serde
//! has accepted the shape, `validate` reports every remaining problem at once, each with its key
//! path (`suite[1].batches`) and a fix.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::case::{Phase, Verdict};
use crate::catalog::{CatalogError, GpuSpec, ModelSpec, Precision};

/// Where the store lives unless `[store] path`, `--db` or `UTILGATE_DB` says otherwise.
pub const DEFAULT_STORE_PATH: &str = ".utilgate/utilgate.db";
/// The config file read unless `--config` or `UTILGATE_CONFIG` says otherwise.
pub const DEFAULT_CONFIG_PATH: &str = "utilgate.toml";

/// The embedded, commented default config: every key documented. `utilgate config default`
/// prints it; a test keeps it parseable.
pub const DEFAULT_CONFIG: &str = include_str!("../templates/utilgate.default.toml");

/// A parsed config. `models` is keyed by the model's full name: `[models.llama-3.1-8b]` is, in
/// TOML, the nested tables `llama-3` and `1-8b`, and is read back as the name `llama-3.1-8b`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    pub store: StoreConfig,
    pub gate: GateConfig,
    pub gpu: Option<GpuConfig>,
    pub report: ReportConfig,
    pub canary: CanaryConfig,
    pub models: BTreeMap<String, ModelConfig>,
    #[serde(rename = "suite")]
    pub suites: Vec<SuiteConfig>,
}

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
    canary: CanaryConfig,
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Path of the `SQLite` file, relative to the config file's directory.
    #[serde(default = "default_store_path")]
    pub path: String,
    /// How long to wait for another utilgate process that holds the store.
    #[serde(default = "default_busy_timeout_s")]
    pub busy_timeout_s: f64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            path: default_store_path(),
            busy_timeout_s: default_busy_timeout_s(),
        }
    }
}

/// `[report]`: how reports are rendered.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportConfig {
    /// A directory of user templates (relative to the config file's directory); a file there
    /// named like a built-in template (`comment.md.j2`, ...) replaces it.
    #[serde(default)]
    pub templates: Option<PathBuf>,
    /// Earlier results of a case shown in its trend (Markdown sparkline, HTML chart).
    #[serde(default = "default_trend_runs")]
    pub trend_runs: usize,
}

impl Default for ReportConfig {
    fn default() -> Self {
        Self {
            templates: None,
            trend_runs: default_trend_runs(),
        }
    }
}

fn default_trend_runs() -> usize {
    10
}

fn default_store_path() -> String {
    DEFAULT_STORE_PATH.to_owned()
}
fn default_busy_timeout_s() -> f64 {
    10.0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateConfig {
    /// Runs on this branch that pass the gate move the baseline.
    #[serde(default = "default_baseline_branch")]
    pub baseline_branch: String,
    /// Practical threshold: the utilisation drop (percent) that matters.
    #[serde(default = "default_max_drop_pct")]
    pub max_drop_pct: f64,
    /// Verdicts that fail the gate (exit 1).
    #[serde(default = "default_fail_on")]
    pub fail_on: Vec<Verdict>,
    /// Fresh repeats to re-measure a suspected regression with before failing it (0: off).
    #[serde(default = "default_confirm_repeats")]
    pub confirm_repeats: u32,
    /// Chance, per night, of any false alarm across the whole grid.
    #[serde(default = "default_family_alpha")]
    pub family_alpha: f64,
    /// Older good results of a case used to estimate its process-to-process noise.
    #[serde(default = "default_history_runs")]
    pub history_runs: usize,
    /// The statistics of each case's steps that are gated (median, mean, p99), each with the
    /// same two-level rule; the first one's figures are shown.
    #[serde(default = "default_gate_on")]
    pub gate_on: Vec<crate::compare::GateStat>,
    /// Threshold per statistic (percent); unlisted ones use `max_drop_pct` (median, mean) or
    /// three times it (p99).
    #[serde(default)]
    pub stat_max_drop_pct: BTreeMap<crate::compare::GateStat, f64>,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            baseline_branch: default_baseline_branch(),
            max_drop_pct: default_max_drop_pct(),
            fail_on: default_fail_on(),
            confirm_repeats: default_confirm_repeats(),
            family_alpha: default_family_alpha(),
            history_runs: default_history_runs(),
            gate_on: default_gate_on(),
            stat_max_drop_pct: BTreeMap::new(),
        }
    }
}

fn default_baseline_branch() -> String {
    "main".to_owned()
}
fn default_max_drop_pct() -> f64 {
    3.0
}
fn default_fail_on() -> Vec<Verdict> {
    vec![Verdict::Regressed, Verdict::Invalid]
}
fn default_confirm_repeats() -> u32 {
    9
}
fn default_family_alpha() -> f64 {
    0.01
}
fn default_history_runs() -> usize {
    10
}
fn default_gate_on() -> Vec<crate::compare::GateStat> {
    crate::compare::Policy::default().gate_on
}

/// The machine canary: a fixed reference measurement utilgate makes before and after every
/// run (`measure::canary`), so a whole-host slowdown reads as the machine, not the code.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CanaryConfig {
    /// `false` turns the canary off.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// A command to run instead of the built-in host canary (a stream and a spin loop): it
    /// prints one JSON object of figures to stdout, each a time in ms of a fixed piece of work
    /// or a list of such times, e.g. `{"copy_ms": [8.1, 8.2], "gemm_ms": 3.4}`.
    pub command: Option<String>,
}

impl Default for CanaryConfig {
    fn default() -> Self {
        CanaryConfig {
            enabled: true,
            command: None,
        }
    }
}

fn default_true() -> bool {
    true
}

/// The device: a catalogue entry, or declared figures, or a catalogue entry with overrides.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuConfig {
    pub name: Option<String>,
    pub mem_bandwidth_gb_s: Option<f64>,
    #[serde(default)]
    pub dense_tflops: BTreeMap<String, f64>,
    pub memory_gb: Option<f64>,
    /// Measure this host's memory read bandwidth once and cache it (CPU examples only).
    #[serde(default)]
    pub measure_host_bandwidth: bool,
}

impl GpuConfig {
    /// The device spec `[gpu]` declares: a catalogue entry with any overrides, or declared
    /// figures. `None` when it declares neither (e.g. only `measure_host_bandwidth`). Pure.
    pub fn declared_spec(&self) -> Result<Option<GpuSpec>, CatalogError> {
        if let Some(name) = &self.name
            && !self.measure_host_bandwidth
        {
            let spec = crate::catalog::gpu::resolve_gpu(name)?;
            return spec
                .with_overrides(self.mem_bandwidth_gb_s, &self.dense_tflops, self.memory_gb)
                .map(Some);
        }
        match self.mem_bandwidth_gb_s {
            Some(bw) if !self.measure_host_bandwidth => {
                GpuSpec::declared("declared-gpu", bw, &self.dense_tflops, self.memory_gb).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// A model: a Hugging Face `config.json`, its keys inline, or the bare form.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// Path to a Hugging Face `config.json`, relative to the config file's directory.
    pub hf_config: Option<String>,
    /// The keys of a `config.json`, inline.
    pub architecture: Option<toml::Table>,
    /// Bare form: total parameters, all read every step.
    pub params: Option<f64>,
    /// Bare form: KV-cache bytes per token of context.
    pub kv_bytes_per_token: Option<f64>,
    /// Bare form: FLOPs per token (default 2 x params).
    pub flops_per_token: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    pub name: String,
    /// The harness command, a minijinja template over the case.
    pub command: Option<String>,
    /// A built-in workload instead of `command`: `"reference"` (a cuBLAS step shaped like the
    /// model, see `measure::reference`).
    pub workload: Option<Workload>,
    /// For `workload = "reference"`: capture each step into a CUDA graph and replay it.
    pub graphs: Option<bool>,
    /// Working directory of the harness, relative to the config file's directory.
    pub cwd: Option<String>,
    /// Extra environment variables for the harness.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub models: Vec<String>,
    pub precisions: Vec<String>,
    /// KV-cache dtype (default: the activation dtype of the precision).
    pub kv_dtype: Option<String>,
    pub phases: Vec<Phase>,
    pub batches: Vec<u64>,
    pub contexts: Vec<u64>,
    #[serde(default = "default_warmup_steps")]
    pub warmup_steps: u64,
    #[serde(default = "default_steps")]
    pub steps: u64,
    #[serde(default = "default_repeats")]
    pub repeats: u32,
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// Per-suite practical threshold (default: `[gate] max_drop_pct`).
    pub max_drop_pct: Option<f64>,
    /// Per-suite gated statistics (default: `[gate] gate_on`).
    pub gate_on: Option<Vec<crate::compare::GateStat>>,
    /// Per-case thresholds: the first matching entry wins.
    #[serde(default, rename = "case")]
    pub cases: Vec<CaseOverride>,
}

/// A built-in workload a suite can time instead of a harness command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// The reference step: per layer the QKV, output and MLP GEMMs (cuBLAS) with real-size
    /// random weights, an NVRTC KV-cache kernel, and the `lm_head`.
    Reference,
}

fn default_warmup_steps() -> u64 {
    10
}
fn default_steps() -> u64 {
    100
}
fn default_repeats() -> u32 {
    3
}
fn default_timeout_s() -> f64 {
    600.0
}

/// Selects cases of a suite by any of their coordinates and sets their threshold.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseOverride {
    pub model: Option<String>,
    pub precision: Option<String>,
    pub phase: Option<Phase>,
    pub batch: Option<u64>,
    pub context: Option<u64>,
    pub max_drop_pct: f64,
}

impl CaseOverride {
    fn matches(&self, key: &crate::case::CaseKey) -> bool {
        self.model.as_ref().is_none_or(|m| *m == key.model)
            && self.precision.as_ref().is_none_or(|p| *p == key.precision)
            && self.phase.is_none_or(|p| p == key.phase)
            && self.batch.is_none_or(|b| b == key.batch)
            && self.context.is_none_or(|c| c == key.context)
    }
}

impl SuiteConfig {
    /// The practical threshold for one case: case override, then suite, then gate.
    #[must_use]
    pub fn max_drop_pct_for(&self, key: &crate::case::CaseKey, gate: &GateConfig) -> f64 {
        self.cases
            .iter()
            .find(|o| o.matches(key))
            .map(|o| o.max_drop_pct)
            .or(self.max_drop_pct)
            .unwrap_or(gate.max_drop_pct)
    }

    /// Every case of the grid, in a stable order.
    #[must_use]
    pub fn case_keys(&self) -> Vec<crate::case::CaseKey> {
        let mut keys = Vec::new();
        for model in &self.models {
            for precision in &self.precisions {
                for &phase in &self.phases {
                    for &batch in &self.batches {
                        for &context in &self.contexts {
                            keys.push(crate::case::CaseKey {
                                suite: self.name.clone(),
                                model: model.clone(),
                                precision: precision.clone(),
                                phase,
                                batch,
                                context,
                            });
                        }
                    }
                }
            }
        }
        keys
    }
}

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
            ConfigError::Parse { key, .. } => Some(parse_hint(key)),
            ConfigError::Invalid { .. } => {
                Some("`utilgate config default` prints every key with its meaning".to_owned())
            }
            ConfigError::ReadModel { model, .. } => Some(format!(
                "models.{model}.hf_config is relative to the config file's directory; point it at a Hugging Face config.json"
            )),
        }
    }
}

fn parse_hint(key: &str) -> String {
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
        canary: raw.canary,
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

/// Everything `validate` needs to know beyond the config itself.
pub struct ValidationContext<'a> {
    /// Models that resolve (from `[models]` or the built-in catalogue).
    pub known_models: &'a BTreeSet<String>,
}

/// Every problem in a parsed config, with key paths and fixes. Pure.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "one flat list of checks, each independent, in the order of the file"
)]
pub fn validate(config: &Config, ctx: &ValidationContext<'_>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut push = |key: String, message: String, hint: &str| {
        problems.push(Problem {
            key,
            message,
            hint: hint.to_owned(),
        });
    };

    if !(config.store.busy_timeout_s.is_finite() && config.store.busy_timeout_s >= 0.0) {
        push(
            "store.busy_timeout_s".into(),
            format!("{} is not a duration", config.store.busy_timeout_s),
            "write busy_timeout_s = 10.0",
        );
    }
    check_drop_pct(config.gate.max_drop_pct, "gate.max_drop_pct", &mut push);
    if !(config.gate.family_alpha > 0.0 && config.gate.family_alpha < 0.5) {
        push(
            "gate.family_alpha".into(),
            format!("{} is outside (0, 0.5)", config.gate.family_alpha),
            "write family_alpha = 0.01",
        );
    }
    if config.gate.baseline_branch.trim().is_empty() {
        push(
            "gate.baseline_branch".into(),
            "is empty".into(),
            "write baseline_branch = \"main\"",
        );
    }

    if let Some(gpu) = &config.gpu {
        if gpu.name.is_none() && gpu.mem_bandwidth_gb_s.is_none() && !gpu.measure_host_bandwidth {
            push(
                "gpu".into(),
                "names no GPU and declares no figures".into(),
                "write name = \"h100-sxm\" (see `utilgate floor --help` for the catalogue) or declare mem_bandwidth_gb_s and dense_tflops",
            );
        }
        if let Some(bw) = gpu.mem_bandwidth_gb_s
            && !(bw.is_finite() && bw > 0.0)
        {
            push(
                "gpu.mem_bandwidth_gb_s".into(),
                format!("{bw} is not a positive bandwidth"),
                "write the datasheet figure in GB/s, e.g. 3350",
            );
        }
        for (dtype, tflops) in &gpu.dense_tflops {
            if !(tflops.is_finite() && *tflops > 0.0) {
                push(
                    format!("gpu.dense_tflops.{dtype}"),
                    format!("{tflops} is not a positive peak"),
                    "write the dense (not sparse) datasheet figure in TFLOP/s",
                );
            }
        }
    }

    for (name, model) in &config.models {
        let forms = [
            model.hf_config.is_some(),
            model.architecture.is_some(),
            model.params.is_some(),
        ];
        let count = forms.iter().filter(|f| **f).count();
        if count != 1 {
            push(
                format!("models.{name}"),
                if count == 0 {
                    "describes no model".into()
                } else {
                    "mixes hf_config, architecture and params".into()
                },
                "give exactly one of hf_config = \"path/config.json\", architecture = { ... } or params = 8.0e9 with kv_bytes_per_token",
            );
        }
        if model.params.is_some() && model.kv_bytes_per_token.is_none() {
            push(
                format!("models.{name}.kv_bytes_per_token"),
                "is missing in the bare form".into(),
                "write kv_bytes_per_token = 131072 (2 x layers x kv_heads x head_dim x bytes)",
            );
        }
        if model.params.is_none()
            && (model.kv_bytes_per_token.is_some() || model.flops_per_token.is_some())
        {
            push(
                format!("models.{name}"),
                "kv_bytes_per_token and flops_per_token belong to the bare form".into(),
                "add params = ..., or remove them",
            );
        }
    }

    if config.suites.is_empty() {
        push(
            "suite".into(),
            "no suite is defined".into(),
            "add a [[suite]] table with name, command, models, precisions, phases, batches and contexts",
        );
    }
    let mut names = BTreeSet::new();
    for (i, suite) in config.suites.iter().enumerate() {
        let at = |field: &str| format!("suite[{i}].{field}");
        if suite.name.is_empty()
            || !suite
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            push(
                at("name"),
                format!("{:?} is not a plain name", suite.name),
                "use letters, digits, '-', '_' or '.'",
            );
        } else if !names.insert(suite.name.as_str()) {
            push(
                at("name"),
                format!("suite {:?} is defined twice", suite.name),
                "give each suite its own name",
            );
        }
        match (&suite.command, suite.workload) {
            (None, None) => push(
                at("command"),
                "is missing".into(),
                "write command = \"python3 bench.py --model {{ model }} --batch {{ batch }}\" or workload = \"reference\"",
            ),
            (Some(_), Some(_)) => push(
                at("workload"),
                "is given together with command".into(),
                "give exactly one: command = \"...\" (your harness) or workload = \"reference\" (built in)",
            ),
            (None, Some(_)) => {}
            (Some(command), None) => {
                if let Err(err) = crate::case::check_command_template(command) {
                    push(
                        at("command"),
                        format!("is not a valid template: {err}"),
                        "use {{ model }}, {{ precision }}, {{ phase }}, {{ batch }}, {{ context }}, {{ suite }}, {{ steps }}, {{ warmup_steps }}, {{ repeat }}, {{ kv_dtype }}, {{ utilgate }}, {{ config_dir }}",
                    );
                }
            }
        }
        if suite.graphs.is_some() && suite.workload.is_none() {
            push(
                at("graphs"),
                "applies only to workload = \"reference\"".into(),
                "remove graphs, or use workload = \"reference\" instead of command",
            );
        }
        for (field, empty) in [
            ("models", suite.models.is_empty()),
            ("precisions", suite.precisions.is_empty()),
            ("phases", suite.phases.is_empty()),
            ("batches", suite.batches.is_empty()),
            ("contexts", suite.contexts.is_empty()),
        ] {
            if empty {
                push(
                    at(field),
                    "is empty: the suite would run no case".into(),
                    "list at least one value",
                );
            }
        }
        for (j, model) in suite.models.iter().enumerate() {
            if !ctx.known_models.contains(model) {
                let known: Vec<&str> = ctx.known_models.iter().map(String::as_str).collect();
                push(
                    format!("suite[{i}].models[{j}]"),
                    format!("unknown model {model:?}; known: {}", known.join(", ")),
                    "add a [models.NAME] table (hf_config, architecture or params) or use a catalogue name",
                );
            }
        }
        for (j, precision) in suite.precisions.iter().enumerate() {
            if let Err(err) = Precision::parse(precision, suite.kv_dtype.as_deref()) {
                push(
                    format!("suite[{i}].precisions[{j}]"),
                    err.to_string(),
                    "write e.g. \"bf16\", \"fp8\", \"int8\" or \"int4-g128\"",
                );
            }
        }
        for (field, values) in [("batches", &suite.batches), ("contexts", &suite.contexts)] {
            if values.contains(&0) {
                push(
                    at(field),
                    "contains 0".into(),
                    "every value must be at least 1",
                );
            }
        }
        if suite.steps == 0 {
            push(at("steps"), "is 0".into(), "write steps = 100");
        }
        if suite.repeats == 0 {
            push(
                at("repeats"),
                "is 0".into(),
                "write repeats = 3 (each a fresh process)",
            );
        }
        if !(suite.timeout_s.is_finite() && suite.timeout_s > 0.0) {
            push(
                at("timeout_s"),
                format!("{} is not a positive number of seconds", suite.timeout_s),
                "write timeout_s = 600",
            );
        }
        if let Some(pct) = suite.max_drop_pct {
            check_drop_pct(pct, &at("max_drop_pct"), &mut push);
        }
        for (j, o) in suite.cases.iter().enumerate() {
            check_drop_pct(
                o.max_drop_pct,
                &format!("suite[{i}].case[{j}].max_drop_pct"),
                &mut push,
            );
        }
    }
    problems
}

fn check_drop_pct(pct: f64, key: &str, push: &mut impl FnMut(String, String, &str)) {
    if !(pct.is_finite() && pct > 0.0 && pct < 100.0) {
        push(
            key.to_owned(),
            format!("{pct} is outside (0, 100)"),
            "write a percentage such as 3.0",
        );
    }
}

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
    /// The store path: `--db` when given, else `[store] path` relative to the config's directory.
    #[must_use]
    pub fn store_path(&self, flag: Option<&Path>) -> PathBuf {
        match flag {
            Some(p) => p.to_path_buf(),
            None => self.dir.join(&self.config.store.path),
        }
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
        for name in &suite.models {
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

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
[store]
path = ".utilgate/utilgate.db"

[gate]
baseline_branch = "main"
max_drop_pct = 3.0
fail_on = ["regressed", "invalid"]

[gpu]
name = "h100-sxm"

[models.llama-3.1-8b]
hf_config = "models/llama-3.1-8b/config.json"

[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072

[[suite]]
name = "decode"
command = "python3 bench/decode.py --model {{ model }} --batch {{ batch }} --context {{ context }}"
models = ["llama-3.1-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8]
contexts = [4096]
warmup_steps = 10
steps = 100
repeats = 3
timeout_s = 600
"#;

    fn known(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn design_example_parses_and_validates() {
        let config = parse(EXAMPLE, Path::new("utilgate.toml")).expect("parses");
        assert_eq!(config.suites.len(), 1);
        assert_eq!(config.suites[0].batches, vec![1, 8]);
        assert_eq!(config.suites[0].case_keys().len(), 2);
        assert_eq!(
            config.gate.fail_on,
            vec![Verdict::Regressed, Verdict::Invalid]
        );
        let names = known(&["llama-3.1-8b", "seed-8b"]);
        let problems = validate(
            &config,
            &ValidationContext {
                known_models: &names,
            },
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn dotted_model_names_are_read_whole_and_their_errors_keep_the_name() {
        let config = parse(EXAMPLE, Path::new("u.toml")).expect("parses");
        let names: Vec<&str> = config.models.keys().map(String::as_str).collect();
        assert_eq!(names, vec!["llama-3.1-8b", "seed-8b"]);
        let text = EXAMPLE.replace("params = 8.0e9", "params = \"8B\"");
        let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
        assert!(err.to_string().contains("models.seed-8b.params"), "{err}");
        let text = EXAMPLE.replace(
            "hf_config = \"models/llama-3.1-8b/config.json\"",
            "hf_config = \"x\"\nlayers = 3",
        );
        let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
        assert!(err.to_string().contains("models.llama-3.1-8b"), "{err}");
        assert!(err.to_string().contains("layers"), "{err}");
    }

    #[test]
    fn gpu_table_declares_a_catalogue_entry_overrides_or_its_own_figures() {
        let named = GpuConfig {
            name: Some("h100-sxm".into()),
            mem_bandwidth_gb_s: Some(3000.0),
            ..GpuConfig::default()
        };
        let spec = named.declared_spec().expect("valid").expect("a spec");
        assert_eq!(spec.name, "h100-sxm");
        assert!((spec.mem_bandwidth_bytes_per_s - 3.0e12).abs() < 1.0);
        let own = GpuConfig {
            mem_bandwidth_gb_s: Some(1000.0),
            dense_tflops: [("bf16".to_owned(), 100.0)].into(),
            ..GpuConfig::default()
        };
        assert_eq!(
            own.declared_spec().expect("valid").expect("a spec").name,
            "declared-gpu"
        );
        let host = GpuConfig {
            measure_host_bandwidth: true,
            ..GpuConfig::default()
        };
        assert!(host.declared_spec().expect("valid").is_none());
        let unknown = GpuConfig {
            name: Some("h900".into()),
            ..GpuConfig::default()
        };
        assert!(unknown.declared_spec().is_err());
    }

    #[test]
    fn embedded_default_config_parses() {
        let config = parse(DEFAULT_CONFIG, Path::new("<default>")).expect("default parses");
        assert!(!config.suites.is_empty());
        assert_eq!(config.report.trend_runs, 10);
    }

    #[test]
    fn report_table_names_templates_and_rejects_unknown_keys() {
        let text = format!("{EXAMPLE}\n[report]\ntemplates = \"my-templates\"\n");
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        assert_eq!(
            config.report.templates.as_deref(),
            Some(Path::new("my-templates"))
        );
        assert_eq!(
            parse(EXAMPLE, Path::new("u.toml"))
                .expect("parses")
                .report
                .trend_runs,
            10
        );
        let text = format!("{EXAMPLE}\n[report]\ntemplate = \"x\"\n");
        let err = parse(&text, Path::new("u.toml")).expect_err("unknown key");
        assert!(err.to_string().contains("report"), "{err}");
    }

    #[test]
    fn wrong_type_names_the_key_path_and_line() {
        let text = EXAMPLE.replace("batches = [1, 8]", "batches = [1, \"8k\"]");
        let err = parse(&text, Path::new("utilgate.toml")).expect_err("must fail");
        let message = err.to_string();
        assert!(message.contains("utilgate.toml"), "{message}");
        assert!(message.contains("suite[0].batches"), "{message}");
        assert!(message.contains("line 26"), "{message}");
        assert!(err.hint().expect("hint").contains("batches = [1, 8, 64]"));
    }

    #[test]
    fn unknown_key_is_an_error() {
        let text = EXAMPLE.replace("repeats = 3", "repeats = 3\nrepeat = 5");
        let err = parse(&text, Path::new("u.toml")).expect_err("must fail");
        let message = err.to_string();
        assert!(message.contains("suite[0]"), "{message}");
        assert!(message.contains("repeat"), "{message}");
    }

    #[test]
    fn malformed_toml_names_the_line() {
        let err = parse("[gate\nmax_drop_pct = 3", Path::new("u.toml")).expect_err("must fail");
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn validation_reports_every_problem() {
        let text = EXAMPLE
            .replace("batches = [1, 8]", "batches = [0, 8]")
            .replace("steps = 100", "steps = 0")
            .replace("models = [\"llama-3.1-8b\"]", "models = [\"nope\"]")
            .replace("max_drop_pct = 3.0", "max_drop_pct = 300.0");
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        let names = known(&["llama-3.1-8b"]);
        let problems = validate(
            &config,
            &ValidationContext {
                known_models: &names,
            },
        );
        let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(
            keys,
            vec![
                "gate.max_drop_pct",
                "suite[0].models[0]",
                "suite[0].batches",
                "suite[0].steps"
            ]
        );
    }

    #[test]
    fn bad_template_is_reported() {
        let text = EXAMPLE.replace("{{ batch }}", "{{ batch ");
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        let names = known(&["llama-3.1-8b"]);
        let problems = validate(
            &config,
            &ValidationContext {
                known_models: &names,
            },
        );
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].key, "suite[0].command");
    }

    #[test]
    fn thresholds_resolve_case_then_suite_then_gate() {
        let text = EXAMPLE.replace(
            "timeout_s = 600",
            "timeout_s = 600\nmax_drop_pct = 4.0\n[[suite.case]]\nbatch = 8\nmax_drop_pct = 6.0",
        );
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        let suite = &config.suites[0];
        let keys = suite.case_keys();
        assert!((suite.max_drop_pct_for(&keys[0], &config.gate) - 4.0).abs() < 1e-12);
        assert!((suite.max_drop_pct_for(&keys[1], &config.gate) - 6.0).abs() < 1e-12);
    }

    #[test]
    fn a_suite_names_exactly_one_of_command_and_workload() {
        let names = known(&["llama-3.1-8b"]);
        let ctx = ValidationContext {
            known_models: &names,
        };
        let command_line = "command = \"python3 bench/decode.py --model {{ model }} --batch {{ batch }} --context {{ context }}\"";
        // (replacement for the command line, the keys of the problems expected)
        let cases: [(&str, Vec<&str>); 5] = [
            ("workload = \"reference\"", vec![]),
            ("workload = \"reference\"\ngraphs = true", vec![]),
            (
                &format!("{command_line}\nworkload = \"reference\""),
                vec!["suite[0].workload"],
            ),
            ("", vec!["suite[0].command"]),
            (
                &format!("{command_line}\ngraphs = false"),
                vec!["suite[0].graphs"],
            ),
        ];
        for (replacement, expected) in cases {
            let text = EXAMPLE.replace(command_line, replacement);
            let config = parse(&text, Path::new("u.toml")).expect("parses");
            let problems = validate(&config, &ctx);
            let keys: Vec<&str> = problems.iter().map(|p| p.key.as_str()).collect();
            assert_eq!(keys, expected, "{replacement}");
        }
        let text = EXAMPLE.replace(command_line, "workload = \"reference\"");
        let config = parse(&text, Path::new("u.toml")).expect("parses");
        assert_eq!(config.suites[0].workload, Some(Workload::Reference));
        let err = parse(
            &EXAMPLE.replace(command_line, "workload = \"fast\""),
            Path::new("u.toml"),
        )
        .expect_err("unknown workload");
        assert!(err.to_string().contains("suite[0].workload"), "{err}");
    }
}
