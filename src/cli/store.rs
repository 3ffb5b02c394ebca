//! Arguments of the commands that read and move the history: `baseline`, `runs`, `import`.
//! Clap derive structs only, no logic.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{ConfigArgs, FormatArgs, help};

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
    /// Load an existing benchmark history (CSV, github-action-benchmark data.js, Bencher
    /// Metric Format) as one stored run per night, each with its own date, commit and branch.
    ///
    /// Runs are stamped with the night's date (never now) and trigger "import", so `history`,
    /// `changes` and `changes --since` read them from the first night. Imported nights never
    /// move baselines; a night already imported (same GPU, date and commit) is skipped. Another
    /// utilgate store is copied with `utilgate store copy`, which keeps every run's timestamps.
    /// Formats, columns and the naming rule: docs/import.md.
    #[command(after_help = help::IMPORT_HISTORY)]
    History(ImportHistoryArgs),
}

/// The formats `import history` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HistoryFormatArg {
    /// By content: `window.BENCHMARK_DATA` or `entries` is github-action-benchmark, other
    /// JSON is BMF, a `.csv` or a header starting `date` is CSV.
    Auto,
    /// A CSV with the header of docs/import.md.
    Csv,
    /// Bencher Metric Format: one night per file.
    Bmf,
    /// github-action-benchmark's data.js or its JSON.
    Gab,
}

#[derive(Debug, Args)]
pub struct ImportHistoryArgs {
    /// History files, read in full before the store is touched.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub config: ConfigArgs,
    /// The files' format.
    #[arg(long, value_enum, default_value_t = HistoryFormatArg::Auto)]
    pub format: HistoryFormatArg,
    /// GPU SKU the history was measured on (results are compared within one SKU).
    #[arg(long, default_value = "unknown")]
    pub gpu: String,
    /// Suite for benchmark names of the form MODEL/PRECISION/PHASE/bB/cC.
    #[arg(long)]
    pub suite: Option<String>,
    /// Branch of nights whose file gives none (default: the config's baseline branch, else
    /// main).
    #[arg(long)]
    pub branch: Option<String>,
    /// A TOML file mapping benchmark names to case keys: `"fib_10" = "decode/m/bf16/decode/b1/c8"`.
    #[arg(long, value_name = "FILE")]
    pub case_map: Option<PathBuf>,
    /// Read only this github-action-benchmark entry (the benchmark group, e.g. "Rust
    /// Benchmark"); repeat it for several. Default: every entry.
    #[arg(long = "entry", value_name = "NAME")]
    pub entries: Vec<String>,
    /// The night of a BMF file whose name carries no date (`DATE[_COMMIT].json`).
    #[arg(long, value_name = "DATE")]
    pub date: Option<String>,
    /// The commit of a BMF file whose name carries none.
    #[arg(long)]
    pub commit: Option<String>,
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
    /// Import the files as one sweep over this setting (points keyed by each file's rate or
    /// concurrency), judged on its throughput-interactivity frontier.
    #[arg(long, value_enum, value_name = "AXIS")]
    pub sweep: Option<SweepArg>,
    /// GPUs the server ran on: a sweep's throughput is per GPU (default: the file's `num_gpus`
    /// or `gpu_count`, else 1).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub gpus: Option<u32>,
    /// An interactivity level (tokens/s per user, 1000 / TPOT ms) to judge a sweep's frontier
    /// at; repeat it for several (default: those of the baseline's frontier points).
    #[arg(long = "level", value_name = "TOK_S_USER", requires = "sweep")]
    pub levels: Vec<f64>,
    /// Weight precision the server ran (bf16, fp8, int4, ...). A result file names none, so only
    /// with it is each file's output throughput per GPU checked against the decode floor of the
    /// model (`[models]` of the config, or built in) on `--gpu`; without it the cases say the
    /// check did not run.
    #[arg(long, value_name = "P")]
    pub precision: Option<String>,
    #[command(flatten)]
    pub format: FormatArgs,
}

/// The setting a sweep varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepArg {
    /// `--request-rate`.
    Rate,
    /// `--max-concurrency`.
    Concurrency,
}

impl SweepArg {
    #[must_use]
    pub fn axis(self) -> crate::serve::SweepAxis {
        match self {
            SweepArg::Rate => crate::serve::SweepAxis::RequestRate,
            SweepArg::Concurrency => crate::serve::SweepAxis::MaxConcurrency,
        }
    }
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
pub enum StoreCommand {
    /// Copy the whole history (runs, results, samples, evidence, baseline moves, service
    /// results) from one store into another, `SQLite` file or `postgres://` URL either way.
    ///
    /// Ids are kept; the destination is written in one transaction and read back, and every
    /// table's row count and checksum is printed. Rerun, it copies only what the destination
    /// lacks (nothing, if the source did not grow); a destination holding a different history
    /// is refused and left untouched. The source is only read.
    #[command(after_help = help::STORE_COPY)]
    Copy(StoreCopyArgs),
}

#[derive(Debug, Args)]
pub struct StoreCopyArgs {
    /// The store to read: an `SQLite` file or a `postgres://` URL.
    #[arg(long, value_name = "PATH_OR_URL")]
    pub from: PathBuf,
    /// The store to write: created when absent, migrated when older.
    #[arg(long, value_name = "PATH_OR_URL")]
    pub to: PathBuf,
    /// How long to wait for another writer's lock on either store.
    #[arg(long, default_value_t = 30.0, value_name = "SECONDS")]
    pub busy_timeout_s: f64,
    #[command(flatten)]
    pub format: FormatArgs,
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
