//! The config's shape: every table of `utilgate.toml` as serde reads it, with its defaults and
//! the small derived views (thresholds per case, the case keys of a suite). Pure.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::case::{Phase, Verdict};
use crate::catalog::{CatalogError, GpuSpec};

/// Where the store lives unless `[store] path`, `--db` or `UTILGATE_DB` says otherwise.
pub const DEFAULT_STORE_PATH: &str = ".utilgate/utilgate.db";
/// The config file read unless `--config` or `UTILGATE_CONFIG` says otherwise.
pub const DEFAULT_CONFIG_PATH: &str = "utilgate.toml";

/// The embedded, commented default config: every key documented. `utilgate config default`
/// prints it; a test keeps it parseable.
pub const DEFAULT_CONFIG: &str = include_str!("../../templates/utilgate.default.toml");

/// A parsed config. `models` is keyed by the model's full name: `[models.llama-3.1-8b]` is, in
/// TOML, the nested tables `llama-3` and `1-8b`, and is read back as the name `llama-3.1-8b`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Config {
    pub store: StoreConfig,
    pub gate: GateConfig,
    pub gpu: Option<GpuConfig>,
    pub report: ReportConfig,
    pub limits: LimitsConfig,
    pub canary: CanaryConfig,
    /// `utilgate ab`: pairs per case and the confirmation of suspects.
    pub ab: crate::compare::AbPlan,
    pub github: GithubConfig,
    pub models: BTreeMap<String, ModelConfig>,
    #[serde(rename = "suite")]
    pub suites: Vec<SuiteConfig>,
    pub evidence: EvidenceConfig,
    /// `[run]`: the night's time budget (docs/nightly.md).
    pub run: RunConfig,
    /// `[site]`: where `utilgate site`'s pages are published (docs/site.md).
    pub site: SiteConfig,
}

/// `[suite.speculative]`: a speculative-decoding suite's draft and draft lengths. A step is one
/// round: the draft proposes `k` tokens per sequence, the target verifies `k + 1`; the harness
/// reports the drafted tokens each step accepted (docs/protocol.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpeculativeConfig {
    /// A model of the catalogue or `[models]` (a draft model, or an EAGLE / MTP head declared
    /// as a model), or `"ngram"` (prompt lookup: no draft on the GPU).
    pub draft: String,
    /// Draft lengths, each its own case.
    pub k: Vec<u64>,
}

/// `[site]`: the published site of `utilgate site` (docs/site.md). With `url` set, the pull
/// request's comment and the nightly's issue link each case that needs a look to its page there.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteConfig {
    /// The address the site is published at (`https://org.github.io/repo/`).
    #[serde(default)]
    pub url: Option<String>,
}

/// `[run]`: how long a run may take. With a budget, `utilgate run` plans each case's steps and
/// repeats from the store's history so the grid fits, stops a case once its evidence is
/// decisive, and stops measuring once the budget and its grace are spent (docs/nightly.md).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// The run's time budget in minutes (`--budget 10m` overrides it). Unset: no budget.
    #[serde(default)]
    pub budget_minutes: Option<f64>,
    /// How far past the budget a run may go before it stops measuring, in minutes (default: 5%
    /// of the budget, at least 15 seconds).
    #[serde(default)]
    pub grace_minutes: Option<f64>,
}

impl RunConfig {
    /// The grace, in seconds, for a budget of `budget_s` seconds.
    #[must_use]
    pub fn grace_s(&self, budget_s: f64) -> f64 {
        self.grace_minutes
            .map_or_else(|| (budget_s * 0.05).max(15.0), |m| m * 60.0)
    }
}

/// `[evidence]`: profiler traces stored with results (docs/traces.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvidenceConfig {
    /// Largest compressed trace stored, MB; a larger one keeps only its analysis, with a warning.
    #[serde(default = "default_max_trace_mb")]
    pub max_trace_mb: f64,
    /// Raw traces are kept for current baselines and for the results of this many latest runs.
    #[serde(default = "default_keep_runs")]
    pub keep_runs: u32,
    /// Kernel-name rules tried before the built-in classifier.
    #[serde(default)]
    pub classify: Vec<ClassifyRule>,
}

/// `[[evidence.classify]]`: a case-insensitive regex on kernel names and its category.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassifyRule {
    pub pattern: String,
    /// gemm, attention, normalisation, elementwise, reduction, memory, communication or other.
    pub category: String,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        Self {
            max_trace_mb: default_max_trace_mb(),
            keep_runs: default_keep_runs(),
            classify: Vec::new(),
        }
    }
}

fn default_max_trace_mb() -> f64 {
    64.0
}
fn default_keep_runs() -> u32 {
    30
}

/// `[github]`: how results show beside a pull request.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GithubConfig {
    /// `"status"` (default), `"check-run"` or `"both"`.
    #[serde(default)]
    pub checks: crate::github::ChecksMode,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Path of the `SQLite` file, relative to the config file's directory.
    #[serde(default = "default_store_path")]
    pub path: String,
    /// A `PostgreSQL` store instead of the file: `postgres://USER@HOST:PORT/DATABASE` (the
    /// password from `PGPASSWORD`). `--db` and `UTILGATE_DB` take either form too.
    #[serde(default)]
    pub url: Option<String>,
    /// How long to wait for another utilgate process that holds the store.
    #[serde(default = "default_busy_timeout_s")]
    pub busy_timeout_s: f64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            path: default_store_path(),
            url: None,
            busy_timeout_s: default_busy_timeout_s(),
        }
    }
}

/// `[limits]`: what a run may cost and what a harness may report.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// The grid size this config expects: above it `run` asks for `--yes` (default: 1000
    /// cases, outside CI only).
    #[serde(default)]
    pub max_cases: Option<usize>,
    /// Counted steps kept per repeat; a harness reporting more keeps only the last ones.
    #[serde(default = "default_max_samples")]
    pub max_samples: usize,
    /// The shortest step time accepted (ms): 1 ns.
    #[serde(default = "default_min_step_ms")]
    pub min_step_ms: f64,
    /// The longest step time accepted (ms): 1 hour.
    #[serde(default = "default_max_step_ms")]
    pub max_step_ms: f64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            max_cases: None,
            max_samples: default_max_samples(),
            min_step_ms: default_min_step_ms(),
            max_step_ms: default_max_step_ms(),
        }
    }
}

fn default_max_samples() -> usize {
    100_000
}
fn default_min_step_ms() -> f64 {
    crate::measure::protocol::StepRange::default().min_ms
}
fn default_max_step_ms() -> f64 {
    crate::measure::protocol::StepRange::default().max_ms
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
    /// The commit status name per suite: `{suite}` and `{gpu}` are filled in. Without
    /// `{gpu}` (the default) the name stays the same across a mixed runner pool, so a
    /// required status check can name it.
    #[serde(default = "default_status_context")]
    pub status_context: String,
}

impl Default for ReportConfig {
    fn default() -> Self {
        Self {
            templates: None,
            trend_runs: default_trend_runs(),
            status_context: default_status_context(),
        }
    }
}

fn default_trend_runs() -> usize {
    10
}

/// The default commit status name: `utilgate/decode`.
pub const DEFAULT_STATUS_CONTEXT: &str = "utilgate/{suite}";

fn default_status_context() -> String {
    DEFAULT_STATUS_CONTEXT.to_owned()
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
    /// The statistics of each case's steps that are gated (median, stall, mean, p99), each with the
    /// same two-level rule; the first one's figures are shown.
    #[serde(default = "default_gate_on")]
    pub gate_on: Vec<crate::compare::GateStat>,
    /// Threshold per statistic (percent); unlisted ones use `max_drop_pct` (median, mean) or
    /// three times it (p99).
    #[serde(default)]
    pub stat_max_drop_pct: BTreeMap<crate::compare::GateStat, f64>,
    /// Compare each case also with where its lineage began (its first baseline, or its last
    /// accept or import), so that a slow slide, each night within the noise of the last, fails
    /// as `regressed` once it adds up past the threshold. Off: the slide is a warning.
    #[serde(default = "default_fail_on_slide")]
    pub fail_on_slide: bool,
    /// The accuracy guard's practical threshold: a drop in a quality metric's share correct, in
    /// percentage points, that fails a case whatever its speed (when its answers show it).
    #[serde(default = "default_quality_max_drop_pts")]
    pub quality_max_drop_pts: f64,
    /// Speculative decoding's practical threshold: a drop in the share of drafted tokens
    /// accepted, in percentage points, that fails a case whatever its speed (when its rounds
    /// show it).
    #[serde(default = "default_acceptance_max_drop_pts")]
    pub acceptance_max_drop_pts: f64,
}

impl Default for GateConfig {
    fn default() -> Self {
        Self {
            baseline_branch: default_baseline_branch(),
            max_drop_pct: default_max_drop_pct(),
            fail_on: default_fail_on(),
            fail_on_slide: default_fail_on_slide(),
            confirm_repeats: default_confirm_repeats(),
            family_alpha: default_family_alpha(),
            history_runs: default_history_runs(),
            gate_on: default_gate_on(),
            stat_max_drop_pct: BTreeMap::new(),
            quality_max_drop_pts: default_quality_max_drop_pts(),
            acceptance_max_drop_pts: default_acceptance_max_drop_pts(),
        }
    }
}

fn default_quality_max_drop_pts() -> f64 {
    1.0
}

fn default_acceptance_max_drop_pts() -> f64 {
    2.0
}

fn default_baseline_branch() -> String {
    "main".to_owned()
}
fn default_max_drop_pct() -> f64 {
    3.0
}
fn default_fail_on_slide() -> bool {
    true
}
fn default_fail_on() -> Vec<Verdict> {
    vec![Verdict::Regressed, Verdict::Invalid]
}
fn default_confirm_repeats() -> u32 {
    12
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

fn one_gpu() -> Vec<u64> {
    vec![1]
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
    /// What one GPU sends per second to its peers, one direction, GB/s: the link a tensor- or
    /// expert-parallel case's collectives cross (overrides the catalogue's).
    pub interconnect_gb_s: Option<f64>,
    /// Measure this host's memory read bandwidth once and cache it (CPU examples only).
    #[serde(default)]
    pub measure_host_bandwidth: bool,
}

impl GpuConfig {
    /// The device spec `[gpu]` declares: a catalogue entry with any overrides, or declared
    /// figures. `None` when it declares neither (e.g. only `measure_host_bandwidth`). Pure.
    pub fn declared_spec(&self) -> Result<Option<GpuSpec>, CatalogError> {
        if self.measure_host_bandwidth {
            return Ok(None);
        }
        let spec = crate::catalog::declare_device(self.name.as_deref(), self.figures())?;
        match (spec, self.interconnect_gb_s) {
            (Some(spec), Some(gb_s)) => spec.with_interconnect(gb_s).map(Some),
            (spec, _) => Ok(spec),
        }
    }

    /// The figures this table declares.
    #[must_use]
    pub fn figures(&self) -> crate::catalog::DeclaredFigures<'_> {
        crate::catalog::DeclaredFigures {
            mem_bandwidth_gb_s: self.mem_bandwidth_gb_s,
            dense_tflops: &self.dense_tflops,
            memory_gb: self.memory_gb,
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
    /// `"step"` (the default): a harness timing steps (DESIGN.md §5). `"serve"`: a load
    /// generator against a server, its result file read after each repeat (DESIGN.md §12,
    /// docs/serve.md).
    #[serde(default)]
    pub kind: SuiteKind,
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
    /// Credential variables the harness keeps (all of `redact::CREDENTIAL_VARS` are removed
    /// from its environment otherwise).
    #[serde(default)]
    pub env_passthrough: Vec<String>,
    pub models: Vec<String>,
    #[serde(default)]
    pub precisions: Vec<String>,
    /// KV-cache dtype (default: the activation dtype of the precision).
    pub kv_dtype: Option<String>,
    #[serde(default)]
    pub phases: Vec<Phase>,
    #[serde(default)]
    pub batches: Vec<u64>,
    #[serde(default)]
    pub contexts: Vec<u64>,
    /// Tensor-parallel degrees: each a case of its own (`UTILGATE_TP`, `{{ tp }}`), floored
    /// per GPU with its all-reduces (docs/floor.md).
    #[serde(default = "one_gpu")]
    pub tp: Vec<u64>,
    /// Expert-parallel degrees (mixture-of-experts models): `UTILGATE_EP`, `{{ ep }}`.
    #[serde(default = "one_gpu")]
    pub ep: Vec<u64>,
    /// Free axes crossed with the built-in ones, e.g. `axes = { mode = ["eager", "graphs"] }`:
    /// each value is part of the case key, a template variable (`{{ mode }}`) and a
    /// `UTILGATE_MODE` variable for the harness.
    #[serde(default)]
    pub axes: BTreeMap<String, Vec<String>>,
    /// Speculative decoding: the draft and its lengths, each length a case of its own (the
    /// key's `draft` and `draft_k` axes, `UTILGATE_DRAFT` and `UTILGATE_DRAFT_K`; docs/floor.md).
    #[serde(default)]
    pub speculative: Option<SpeculativeConfig>,
    #[serde(default = "default_warmup_steps")]
    pub warmup_steps: u64,
    #[serde(default = "default_steps")]
    pub steps: u64,
    /// How many percent fewer counted steps than `steps` a repeat may report (default 0).
    #[serde(default)]
    pub steps_tolerance_pct: f64,
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
    /// Record a profiler trace of each case in one extra repeat after the timed ones.
    #[serde(default)]
    pub trace: bool,
    /// Record an Nsight Systems report of each case in one extra repeat after the timed ones
    /// (`nsys profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi`; docs/nsight.md).
    #[serde(default)]
    pub nsys: bool,
    /// Record Nsight Compute metrics of the kernels matching a pattern in one extra repeat
    /// after the timed ones (`ncu --set full -k regex:PATTERN -c COUNT`; docs/nsight.md).
    pub ncu: Option<NcuCapture>,
    /// Service suites: offered request rates (requests/s; `inf` sends all at once).
    #[serde(default)]
    pub request_rates: Vec<f64>,
    /// Service suites: maximum concurrent requests (crossed with the rates when both are set).
    #[serde(default)]
    pub max_concurrencies: Vec<u64>,
    /// Service suites: configured input lengths (random datasets).
    #[serde(default)]
    pub input_lens: Vec<u64>,
    /// Service suites: configured output lengths (random datasets).
    #[serde(default)]
    pub output_lens: Vec<u64>,
    /// Service suites: prompts per repeat (default 200).
    pub num_prompts: Option<u64>,
    /// Service suites: the dataset seed, the same for every repeat (default 0).
    pub seed: Option<u64>,
    /// Service suites: arrival burstiness (1 = Poisson, the default).
    pub burstiness: Option<f64>,
    /// Service suites: the metrics to gate (default: median and p99 TTFT, median ITL, output
    /// throughput).
    pub gated: Option<Vec<String>>,
    /// Service suites: practical threshold, percent worse (latency up, throughput down;
    /// default 5).
    pub max_change_pct: Option<f64>,
    /// Service suites: judge the grid's rates (`"request_rate"`) or concurrency limits
    /// (`"max_concurrency"`) as one sweep, on its throughput-interactivity frontier.
    pub sweep: Option<crate::serve::SweepAxis>,
    /// Service suites: GPUs the server runs on (a sweep's throughput is per GPU; default 1).
    pub gpus: Option<u32>,
    /// Service sweeps: the interactivity levels (tokens/s per user) the frontier is judged at
    /// (default: those of the baseline's frontier points).
    pub interactivity_levels: Option<Vec<f64>>,
}

/// `ncu = { kernel_regex = "gemm", count = 5 }`: which kernels Nsight Compute profiles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcuCapture {
    /// A regular expression over kernel names (`ncu -k regex:...`).
    pub kernel_regex: String,
    /// How many matching launches are profiled (`ncu -c`, default 5).
    #[serde(default = "default_ncu_count")]
    pub count: u32,
}

fn default_ncu_count() -> u32 {
    5
}

/// The most launches `ncu.count` may ask for: each is replayed once per metric pass.
pub const MAX_NCU_COUNT: u32 = 1000;

/// What a suite measures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuiteKind {
    /// Step times through the harness protocol.
    #[default]
    Step,
    /// Service metrics from a load generator's result file.
    Serve,
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
    /// Axis values the case must have, e.g. `axes = { mode = "compile" }`.
    #[serde(default)]
    pub axes: BTreeMap<String, String>,
    pub max_drop_pct: f64,
}

impl CaseOverride {
    fn matches(&self, key: &crate::case::CaseKey) -> bool {
        self.model.as_ref().is_none_or(|m| *m == key.model)
            && self.precision.as_ref().is_none_or(|p| *p == key.precision)
            && self.phase.is_none_or(|p| p == key.phase)
            && self.batch.is_none_or(|b| b == key.batch)
            && self.context.is_none_or(|c| c == key.context)
            && self
                .axes
                .iter()
                .all(|(name, value)| key.axes.get(name) == Some(value.as_str()))
    }
}

impl SuiteConfig {
    /// The suite's free axes with its speculation's (`draft`, `draft_k`) added: what its case
    /// keys, template variables and harness variables carry.
    #[must_use]
    pub fn all_axes(&self) -> BTreeMap<String, Vec<String>> {
        let mut axes = self.axes.clone();
        if let Some(spec) = &self.speculative {
            use crate::case::Speculation;
            axes.insert(Speculation::DRAFT_AXIS.to_owned(), vec![spec.draft.clone()]);
            axes.insert(
                Speculation::K_AXIS.to_owned(),
                spec.k.iter().map(u64::to_string).collect(),
            );
        }
        axes
    }

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

    /// Every case of the grid (the built-in axes crossed with the suite's free axes, which
    /// vary fastest), in a stable order. A validated config's axes are valid; a point whose
    /// axes are not is left out (validation names it).
    #[must_use]
    pub fn case_keys(&self) -> Vec<crate::case::CaseKey> {
        let mut keys = Vec::new();
        // A service suite's cases are keyed by load, not steps (`commands::serve_suite`).
        if self.kind == SuiteKind::Serve {
            return keys;
        }
        let points = self.axis_points();
        for model in &self.models {
            for precision in &self.precisions {
                for &phase in &self.phases {
                    for &batch in &self.batches {
                        for &context in &self.contexts {
                            for (&tp, &ep) in self.parallel_points() {
                                for axes in &points {
                                    keys.push(crate::case::CaseKey {
                                        suite: self.name.clone(),
                                        model: model.clone(),
                                        precision: precision.clone(),
                                        phase,
                                        batch,
                                        context,
                                        axes: axes.clone(),
                                        tp,
                                        ep,
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        keys
    }

    /// Every (tp, ep) pair of the suite's grid.
    fn parallel_points(&self) -> impl Iterator<Item = (&u64, &u64)> {
        self.tp
            .iter()
            .flat_map(|tp| self.ep.iter().map(move |ep| (tp, ep)))
    }

    /// The points of the suite's free axes (one empty point without axes), each checked.
    #[must_use]
    pub fn axis_points(&self) -> Vec<crate::case::Axes> {
        crate::case::axis_points(&self.all_axes())
            .into_iter()
            .filter_map(|point| crate::case::Axes::try_from(point.as_map().clone()).ok())
            .collect()
    }
}
