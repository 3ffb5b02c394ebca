//! The command-line interface: clap derive structs only, no logic.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::case::Phase;

mod help;

#[derive(Debug, Parser)]
#[command(
    name = "utilgate",
    version,
    about = "Performance-regression gate for LLM inference: roofline floors, step timing, utilisation, baselines",
    after_help = help::MAIN
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Colour in terminal output.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table for people.
    Human,
    /// JSON with `"schema_version": 1`.
    Json,
}

/// Where the config and store are.
#[derive(Debug, Args, Clone)]
pub struct ConfigArgs {
    /// The config file.
    #[arg(long, short = 'c', env = "UTILGATE_CONFIG", default_value = crate::config::DEFAULT_CONFIG_PATH)]
    pub config: PathBuf,
    /// The `SQLite` store (default: `[store] path` in the config).
    #[arg(long, env = "UTILGATE_DB")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct FormatArgs {
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Measure every case of the configured suites, store the run, and gate it against baselines.
    #[command(after_help = help::RUN)]
    Run(RunArgs),
    /// The roofline floor of one case, and MBU/MFU for a measured step time.
    #[command(after_help = help::FLOOR)]
    Floor(FloorArgs),
    /// Recompute verdicts of a stored run from its raw samples.
    #[command(after_help = help::COMPARE)]
    Compare(CompareArgs),
    /// Inspect and move baselines.
    #[command(after_help = help::BASELINE, subcommand)]
    Baseline(BaselineCommand),
    /// Inspect stored runs.
    #[command(after_help = help::RUNS, subcommand)]
    Runs(RunsCommand),
    /// Check or print the config.
    #[command(after_help = help::CONFIG, subcommand)]
    Config(ConfigCommand),
    /// Render a stored run as Markdown, the step summary, HTML, junit XML or JSON.
    #[command(after_help = help::REPORT)]
    Report(ReportArgs),
    /// Post a stored run to GitHub from Actions: sticky PR comment, commit statuses, step summary, annotations.
    #[command(after_help = help::PUBLISH)]
    Publish(PublishArgs),
    /// Built-in harnesses that speak the harness protocol (used by the examples).
    #[command(subcommand, hide = true)]
    Harness(HarnessCommand),
    /// Measure the base and the head of a pull request interleaved on this machine (ABBA pairs
    /// of fresh processes) and judge each case on the paired difference. For noisy hosts and
    /// pull requests without a nightly history; nothing is stored.
    ///
    /// The head is `--config` (this checkout); the base is the config of the same name in
    /// `--base DIR`, e.g. `git worktree add ../base origin/main`.
    #[command(after_help = help::AB)]
    Ab(AbArgs),
    /// Store results produced elsewhere: a rescued run, or load-generator result files.
    #[command(after_help = help::IMPORT, subcommand)]
    Import(ImportCommand),
    /// Measure this GPU's achievable peaks (copy bandwidth, bf16 GEMM) and store them beside
    /// the datasheet figures. Needs an NVIDIA GPU (exit 2 without one).
    #[command(after_help = help::PROBE)]
    Probe(ProbeArgs),
    /// List the built-in GPU catalogue with its datasheet figures (the names `--gpu` and
    /// `[gpu] name` accept).
    #[command(after_help = help::GPUS)]
    Gpus(GpusArgs),
    /// Print a shell completion script to stdout.
    #[command(after_help = help::COMPLETIONS)]
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout.
    #[command(after_help = help::MAN)]
    Man(ManArgs),
    /// One case's nightly history on the baseline branch: change points, each with its night,
    /// size and what arrived (commits, environment, GPU), and any slow slide.
    #[command(after_help = help::HISTORY)]
    History(HistoryArgs),
    /// Change points and slides over every case's nightly history.
    #[command(after_help = help::CHANGES)]
    Changes(ChangesArgs),
    /// Analyse profiler traces (torch.profiler / Kineto JSON, .json.gz, or a
    /// `tensorboard_trace_handler` directory): per-step breakdown, diagnosis, and the diff of two.
    #[command(after_help = help::TRACE, subcommand)]
    Trace(TraceCommand),
}

#[derive(Debug, Args)]
pub struct AbArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The base checkout (a directory holding the same config file name), or its config file.
    #[arg(long, value_name = "DIR")]
    pub base: PathBuf,
    /// Only these suites (repeatable).
    #[arg(long = "suite", value_name = "NAME")]
    pub suites: Vec<String>,
    /// ABBA pairs per case (default: `[ab] pairs`, 10).
    #[arg(long)]
    pub pairs: Option<usize>,
    /// Further pairs for a suspect case (default: `[ab] confirm_pairs`, 30; 0 disables).
    #[arg(long)]
    pub confirm_pairs: Option<usize>,
    /// Start harnesses even though a GitHub credential is in the environment.
    #[arg(long)]
    pub trusted: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct GpusArgs {
    #[command(flatten)]
    pub format: FormatArgs,
}

/// How the change-point detector runs (docs/nightly.md).
#[derive(Debug, Args, Clone)]
pub struct DetectorArgs {
    /// Nights of history to read per case (newest).
    #[arg(long, default_value_t = 120)]
    pub nights: usize,
    /// Largest p-value of a reported change point: the chance of a false one on a case
    /// without any change.
    #[arg(long, default_value_t = 0.01)]
    pub max_pvalue: f64,
    /// Shuffles of the permutation test (the smallest reachable p-value is 1/(n+1)).
    #[arg(long, default_value_t = 199)]
    pub permutations: u32,
    /// Seed of the permutation test (the same seed gives the same answer).
    #[arg(long, default_value_t = 0x5eed)]
    pub seed: u64,
    /// Restrict to one GPU SKU.
    #[arg(long)]
    pub gpu: Option<String>,
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// The case as printed by `utilgate run` (suite/model/precision/phase/bB/cC), or a part of
    /// it that names one case.
    pub case: String,
    #[command(flatten)]
    pub detector: DetectorArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `utilgate.1` and one page per subcommand (`utilgate-run.1`, ...) into this
    /// directory instead of printing the main page.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Record load-generator result files (`vllm bench serve --save-result`, vLLM's
    /// `benchmark_serving.py`, `SGLang`'s `bench_serving` JSONL) as one run of service cases.
    ///
    /// Cases are keyed by the file's model, request rate (and max concurrency) and configured
    /// lengths; several files of one case are its repeats. No config is needed: without one the
    /// store is .utilgate/utilgate.db and the gate's defaults apply.
    #[command(after_help = help::IMPORT_SERVE)]
    Serve(ImportServeArgs),
    /// Store a run that `utilgate run` could not write, from the rescue file it printed.
    #[command(after_help = help::IMPORT_RUN)]
    Run(ImportRunArgs),
}

#[derive(Debug, Args)]
pub struct ImportServeArgs {
    /// Result files (JSON, or JSON lines with one result per line).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The config, when there is one: its store, gate and `[serve]` settings are used.
    #[arg(long, short = 'c', env = "UTILGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// The `SQLite` store (default: `[store] path` in the config, else .utilgate/utilgate.db).
    #[arg(long, env = "UTILGATE_DB")]
    pub db: Option<PathBuf>,
    /// Suite name the cases are stored under.
    #[arg(long, default_value = "serve")]
    pub suite: String,
    /// Model name for the case key (default: the file's `model_id`; required where the file
    /// has none, as in older `SGLang` output).
    #[arg(long)]
    pub model: Option<String>,
    /// GPU SKU the results were measured on (results are compared within one SKU).
    #[arg(long, default_value = "unknown")]
    pub gpu: String,
    /// Commit the results measure (default: `GITHUB_SHA`, else git).
    #[arg(long)]
    pub git_sha: Option<String>,
    /// Branch the results measure (default: `GITHUB_HEAD_REF` or `GITHUB_REF_NAME`, else git).
    #[arg(long)]
    pub branch: Option<String>,
    /// What produced them (default: `GITHUB_EVENT_NAME`, else "import").
    #[arg(long)]
    pub trigger: Option<String>,
    /// Pull-request number (default: from `GITHUB_REF`).
    #[arg(long)]
    pub pr: Option<u64>,
    /// Never move baselines, even on the baseline branch.
    #[arg(long)]
    pub no_promote: bool,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// Only change points from this date on (YYYY-MM-DD, UTC, or an RFC 3339 time).
    #[arg(long)]
    pub since: Option<String>,
    /// Only this suite.
    #[arg(long)]
    pub suite: Option<String>,
    #[command(flatten)]
    pub detector: DetectorArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Per-step analysis of one trace and what it suggests.
    #[command(after_help = help::TRACE_SHOW)]
    Show(TraceShowArgs),
    /// What changed from one trace to another, largest time change first.
    #[command(after_help = help::TRACE_DIFF)]
    Diff(TraceDiffArgs),
}

#[derive(Debug, Args)]
pub struct TraceShowArgs {
    /// A trace file (.json or .json.gz), a directory holding *.pt.trace.json[.gz] (the newest
    /// is read), or a stored run's id with `--case`.
    pub trace: PathBuf,
    /// With a run id: the case key, as `runs show` prints it (suite/model/precision/phase/bN/cN).
    #[arg(long)]
    pub case: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
    /// How many kernels or operators to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

#[derive(Debug, Args)]
pub struct TraceDiffArgs {
    /// The earlier trace (the last good run's).
    pub then: PathBuf,
    /// The later trace.
    pub now: PathBuf,
    /// With run ids: the case key whose stored analyses are compared.
    #[arg(long)]
    pub case: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
    /// How many changed kernels and operators to list.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

#[derive(Debug, Args)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent command-line flags"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
    /// Run only these suites (repeatable).
    #[arg(long = "suite")]
    pub suites: Vec<String>,
    /// Commit the run measures (default: `GITHUB_SHA`, else `git rev-parse HEAD`).
    #[arg(long)]
    pub git_sha: Option<String>,
    /// Branch the run measures (default: `GITHUB_HEAD_REF` or `GITHUB_REF_NAME`, else git).
    #[arg(long)]
    pub branch: Option<String>,
    /// What started the run: nightly, `pull_request`, manual... (default: `GITHUB_EVENT_NAME`, else "manual").
    #[arg(long)]
    pub trigger: Option<String>,
    /// Pull-request number (default: from `GITHUB_REF` `refs/pull/N/merge`).
    #[arg(long)]
    pub pr: Option<u64>,
    /// Never move baselines, even on the baseline branch.
    #[arg(long)]
    pub no_promote: bool,
    /// Write every report format (report.md, summary.md, report.html, junit.xml, report.json) here.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// Judge against the baseline files in DIR (or one file), as `baseline export` writes them,
    /// instead of the store's: for an ephemeral runner with no database. The run is kept only
    /// for its reports (--report-dir): the configured store is not touched, no baseline moves.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["resume", "init"])]
    pub baselines: Option<PathBuf>,
    /// Publish to GitHub after the run, as `utilgate publish` does (needs `GITHUB_TOKEN`, so
    /// also `--trusted`). Workflows run `run --report-dir` and post with `publish` from a job
    /// that runs no pull-request code (docs/github.md).
    #[arg(long)]
    pub github: bool,
    /// Finish an interrupted run: keep the cases its journal holds, measure only the rest.
    #[arg(long)]
    pub resume: bool,
    /// Start a new history in an existing empty (0-byte) store file instead of refusing it.
    #[arg(long)]
    pub init: bool,
    /// Start a grid larger than `[limits] max_cases` (or 1000 cases) without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Every harness this run starts is trusted code: start them even though utilgate holds
    /// a GitHub credential (`GITHUB_TOKEN`, `GH_TOKEN`, a token-shaped value, a token kept in
    /// the checkout's git config). Without it, `run` refuses: a harness could read them.
    #[arg(long)]
    pub trusted: bool,
    /// Record a profiler trace of every case in one extra repeat after the timed ones (as a
    /// suite's `trace = true`); regressed cases get the diff against the baseline's trace.
    #[arg(long)]
    pub trace: bool,
    /// Run one shard of the grid: every N-th case of its sorted order, starting at the K-th
    /// (K from 1), so N jobs of a CI matrix measure the grid once between them (docs/fleet.md).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::shard::Shard>,
    /// The group this run belongs to (the shards of one grid share it); `report --group`
    /// merges them. Default: `GITHUB_RUN_ID` under Actions when `--shard` is given.
    #[arg(long, value_name = "ID")]
    pub run_group: Option<String>,
}

#[derive(Debug, Args)]
pub struct FloorArgs {
    /// A catalogue model name, a model named in the config, or a path to a config.json.
    #[arg(long)]
    pub model: String,
    /// A catalogue GPU name (e.g. h100-sxm), or the one the config declares when omitted.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Weight precision: bf16, fp16, fp32, fp8, int8, w8a16, int4-g128 ...
    #[arg(long, default_value = "bf16")]
    pub precision: String,
    /// KV-cache dtype (default: the precision's activation dtype).
    #[arg(long)]
    pub kv_dtype: Option<String>,
    /// Decode (one new token per sequence) or prefill (the whole prompt).
    #[arg(long, value_enum)]
    pub phase: PhaseArg,
    /// Sequences per step.
    #[arg(long, default_value_t = 1)]
    pub batch: u64,
    /// KV length (decode) or prompt length (prefill), in tokens.
    #[arg(long)]
    pub context: u64,
    /// A measured step time in ms, to get MBU and MFU.
    #[arg(long)]
    pub step_ms: Option<f64>,
    /// Config to read [models] and [gpu] from, when present.
    #[arg(long, short = 'c', env = "UTILGATE_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    Decode,
    Prefill,
}

impl From<PhaseArg> for Phase {
    fn from(p: PhaseArg) -> Self {
        match p {
            PhaseArg::Decode => Phase::Decode,
            PhaseArg::Prefill => Phase::Prefill,
        }
    }
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The run to judge (default: the latest).
    pub run: Option<i64>,
    /// Compare against this run instead of the pinned baselines.
    #[arg(long)]
    pub against: Option<i64>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// The current baselines, one line per case and GPU.
    #[command(after_help = help::BASELINE_LIST)]
    List(BaselineListArgs),
    /// One case's baseline in full.
    #[command(after_help = help::BASELINE_SHOW)]
    Show(BaselineShowArgs),
    /// Every baseline move, with its reason.
    #[command(after_help = help::BASELINE_HISTORY)]
    History(BaselineListArgs),
    /// Move the baselines of matching cases to a run's results, for an intentional change.
    #[command(after_help = help::BASELINE_ACCEPT)]
    Accept(BaselineAcceptArgs),
    /// Write the current baselines to a portable, reviewable file.
    #[command(after_help = help::BASELINE_EXPORT)]
    Export(BaselineExportArgs),
    /// Read baselines from exported files (or baselines/ directories) into the store.
    #[command(after_help = help::BASELINE_IMPORT)]
    Import(BaselineImportArgs),
    /// Which cases' baselines moved between two exports (files or directories), or between an
    /// export and the store: a table, Markdown for a pull request, or JSON.
    #[command(after_help = help::BASELINE_DIFF)]
    Diff(BaselineDiffArgs),
}

#[derive(Debug, Args)]
pub struct BaselineDiffArgs {
    /// The old baselines: a file or a directory of exported files (e.g. the committed
    /// baselines/).
    pub old: PathBuf,
    /// The new baselines: a file or directory (default: the store's current baselines).
    pub new: Option<PathBuf>,
    /// Only this GPU SKU.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value_t = DiffFormat::Human)]
    pub format: DiffFormat,
    /// Exit 1 when any case moved, was added or was removed (as `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

/// The formats of `baseline diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// A table for people.
    Human,
    /// Markdown, for a pull request's description.
    Markdown,
    /// JSON with `"schema_version"`.
    Json,
}

#[derive(Debug, Args)]
pub struct BaselineListArgs {
    /// Only cases whose key contains this text (e.g. "decode/llama" or "b8").
    pub filter: Option<String>,
    /// Only this GPU SKU.
    #[arg(long)]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct BaselineShowArgs {
    /// The case key, as printed by `baseline list` (suite/model/precision/phase/bN/cN).
    pub case: String,
    /// The GPU SKU whose baseline to show (default: the only one the case has).
    #[arg(long)]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct BaselineAcceptArgs {
    /// Cases whose key contains this text ("" for all).
    pub filter: String,
    /// The run whose results become the baselines.
    #[arg(long)]
    pub run: i64,
    /// Why the change is intended (kept in the history).
    #[arg(long)]
    pub reason: String,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct BaselineExportArgs {
    /// Output file, or a directory (ending in /) for one file per GPU (default:
    /// baselines/<gpu>.json beside the config).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Only this GPU SKU's baselines.
    #[arg(long)]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct BaselineImportArgs {
    /// Exported baseline files, or directories of them (every *.json inside).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Stored runs, newest first.
    #[command(after_help = help::RUNS_LIST)]
    List(RunsListArgs),
    /// One run with every case result.
    #[command(after_help = help::RUNS_SHOW)]
    Show(RunsShowArgs),
}

#[derive(Debug, Args)]
pub struct RunsListArgs {
    /// How many runs to list, newest first.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Only runs of this branch.
    #[arg(long)]
    pub branch: Option<String>,
    /// Only runs on this GPU SKU.
    #[arg(long)]
    pub gpu: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct RunsShowArgs {
    /// The run id (default: the latest).
    pub run: Option<i64>,
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Validate the config without running anything.
    #[command(after_help = help::CONFIG_CHECK)]
    Check(ConfigCheckArgs),
    /// Print the commented default config, every key documented.
    #[command(after_help = help::CONFIG_DEFAULT)]
    Default,
}

#[derive(Debug, Args)]
pub struct ConfigCheckArgs {
    /// The config file to check.
    #[arg(long, short = 'c', env = "UTILGATE_CONFIG", default_value = crate::config::DEFAULT_CONFIG_PATH)]
    pub config: PathBuf,
    #[command(flatten)]
    pub format: FormatArgs,
}

#[derive(Debug, Args)]
pub struct ImportRunArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The rescue file.
    pub file: PathBuf,
    /// Also move the baselines the run would have promoted (off by default: newer runs may
    /// have been stored since).
    #[arg(long)]
    pub promote: bool,
}

#[derive(Debug, Subcommand)]
pub enum HarnessCommand {
    /// A memory-bound decode step on the CPU: reads the floor's weight and KV bytes each step.
    CpuDecode(CpuDecodeArgs),
    /// The reference step on the GPU (cuBLAS GEMMs, an NVRTC KV-cache kernel), CUDA-event timed.
    Reference(ReferenceArgs),
    /// Internal: runs one harness command under guard (parent-death signal, subreaper, cgroup
    /// scope) so that nothing it starts outlives its repeat or utilgate.
    #[command(hide = true)]
    Guard(GuardArgs),
}

#[derive(Debug, Args)]
pub struct GuardArgs {
    /// The utilgate process that started the guard.
    #[arg(long)]
    pub parent: u32,
    /// The repeat's cgroup v2 scope, when the machine allows one.
    #[arg(long)]
    pub scope: Option<PathBuf>,
    /// The rendered harness command, run by `sh -c`.
    #[arg(last = true, required = true)]
    pub command: String,
}

#[derive(Debug, Args)]
pub struct CpuDecodeArgs {
    /// The config whose `[models]` describe the model (`UTILGATE_MODEL` names it).
    #[arg(long, short = 'c')]
    pub config: PathBuf,
    /// Multiply every step's work by this factor (for demonstrating a slowdown).
    #[arg(long, env = "UTILGATE_EXAMPLE_SLOWDOWN", default_value_t = 1.0)]
    pub slowdown: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormatArg {
    /// The pull-request comment's Markdown.
    Markdown,
    /// The Markdown of the Actions step summary.
    Summary,
    /// A standalone HTML page with a history chart per case.
    Html,
    /// XML in the junit format, one testcase per case.
    Junit,
    /// JSON with `"schema_version": 1`.
    Json,
    /// Bencher Metric Format JSON, for `bencher run --adapter json`.
    Bmf,
    /// `OpenMetrics` text (gauges per case), for a Prometheus pushgateway or Grafana.
    Openmetrics,
    /// github-action-benchmark's `customSmallerIsBetter` JSON.
    Gab,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run id (default: the latest).
    pub run: Option<i64>,
    /// What to render.
    #[arg(long, value_enum, default_value_t = ReportFormatArg::Markdown)]
    pub format: ReportFormatArg,
    /// Write to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Merge the runs of this group (`run --run-group`, the shards of one grid) into one
    /// report: one table, failed if any shard failed.
    #[arg(long, value_name = "ID", conflicts_with = "run")]
    pub group: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// The run id (default: the latest).
    pub run: Option<i64>,
    /// Also write every report format here.
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// A saved `pull_request` event payload (default: `GITHUB_EVENT_PATH`); for posting from a
    /// `workflow_run` workflow.
    #[arg(long, value_name = "FILE")]
    pub event: Option<PathBuf>,
    /// The pull request to comment on (default: from the event payload, else the run's).
    #[arg(long)]
    pub pr: Option<u64>,
    /// The commit that gets the statuses (default: the pull request's head, else `GITHUB_SHA`).
    #[arg(long)]
    pub sha: Option<String>,
    /// Publish for the pull-request check a `workflow_run` event reports (`GITHUB_EVENT_PATH`
    /// or `--event`): the verdicts stored with its run when it concluded success or failure,
    /// else pending "not measured" statuses on its head commit. A missing `--db` counts as
    /// a check that left no report.
    #[arg(long, conflicts_with_all = ["pr", "sha"])]
    pub workflow_run: bool,
    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Args)]
pub struct ReferenceArgs {
    /// The config whose [models] describe the model (`UTILGATE_MODEL` names it).
    #[arg(long, short = 'c')]
    pub config: PathBuf,
    /// Capture each step into a CUDA graph and replay it.
    #[arg(long)]
    pub graphs: bool,
    /// KV-cache dtype of the suite (default: the precision's activation dtype).
    #[arg(long)]
    pub kv_dtype: Option<String>,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
    /// The catalogue GPU whose datasheet figures to compare with (default: the NVML or CUDA
    /// device name; the config's [gpu] name when set).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Bytes of each device-to-device copy, in MiB (default: 4096, or a quarter of free memory).
    #[arg(long)]
    pub copy_mib: Option<u64>,
    /// Size of the square bf16 GEMM.
    #[arg(long, default_value_t = 8192)]
    pub gemm_n: u64,
    /// Timed repetitions of each measurement.
    #[arg(long, default_value_t = 20)]
    pub iters: u32,
    /// Print only; store nothing.
    #[arg(long)]
    pub no_store: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
