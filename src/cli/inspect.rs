//! Arguments of the commands that read, render or post what is stored: `report`, `publish`,
//! `history`, `changes`, `site`, `trace`, `gpus`, `config`, `completions`, `man`. Clap derive structs
//! only, no logic.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{ConfigArgs, FormatArgs, help};

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
    #[arg(long, default_value_t = 0.01, value_parser = pvalue)]
    pub max_pvalue: f64,
    /// Shuffles of the permutation test (the smallest reachable p-value is 1/(n+1)).
    #[arg(long, default_value_t = 199, value_parser = permutations)]
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

/// `--max-pvalue`: a probability strictly between 0 and 1.
fn pvalue(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|p| *p > 0.0 && *p < 1.0)
        .ok_or_else(|| "must be a number between 0 and 1; write --max-pvalue 0.01".to_owned())
}

/// `--permutations`: at least one shuffle.
fn permutations(text: &str) -> Result<u32, String> {
    text.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
        "no permutation test can run with it; use at least 19, e.g. --permutations 199".to_owned()
    })
}

/// `--since`: a UTC date (midnight) or an RFC 3339 time.
fn since(text: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = text.parse::<jiff::Timestamp>() {
        return Ok(t);
    }
    text.parse::<jiff::civil::Date>()
        .ok()
        .and_then(|d| jiff::tz::TimeZone::UTC.to_timestamp(d.at(0, 0, 0, 0)).ok())
        .ok_or_else(|| {
            "not a date; write --since 2026-11-01 or --since 2026-11-01T03:00:00Z".to_owned()
        })
}

/// `--out` of `site`: a directory, or a path where one can be made.
fn site_dir(text: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(text);
    if path.exists() && !path.is_dir() {
        return Err(format!(
            "{text} is a file, not a directory; name the site's directory (created if \
             missing), e.g. --out site"
        ));
    }
    Ok(path)
}

#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// Only change points from this date on (YYYY-MM-DD, UTC, or an RFC 3339 time).
    #[arg(long, value_parser = since)]
    pub since: Option<jiff::Timestamp>,
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

#[derive(Debug, Args)]
pub struct SiteArgs {
    /// The site's directory (created if missing; a later build rewrites only the pages whose
    /// data changed).
    #[arg(long, value_name = "DIR", value_parser = site_dir)]
    pub out: PathBuf,
    /// Only nights from this date on (YYYY-MM-DD, UTC, or an RFC 3339 time).
    #[arg(long, value_parser = since)]
    pub since: Option<jiff::Timestamp>,
    /// The branch whose nights the charts show (default: the config's `baseline_branch`).
    #[arg(long)]
    pub branch: Option<String>,
    /// Nights each sparkline of the index shows.
    #[arg(long, default_value_t = 30)]
    pub spark_nights: usize,
    /// The newest nights per GPU whose runs get a page (the run's HTML report); older nights
    /// keep their marks and figures without a link.
    #[arg(long, default_value_t = 120)]
    pub run_pages: usize,
    /// The title in every page's header.
    #[arg(long, default_value = "utilgate")]
    pub title: String,
    #[command(flatten)]
    pub detector: DetectorArgs,
    #[command(flatten)]
    pub config: ConfigArgs,
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
    /// is read), an Nsight file (.sqlite, .nsys-rep, nsys stats CSV, ncu CSV, .ncu-rep), or a
    /// stored run's id with `--case`.
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
    /// Publish the runs of this group (`run --run-group`, the shards of one grid) merged: one
    /// comment and one status over every shard's cases, failed if any shard's gate failed.
    #[arg(long, value_name = "ID", conflicts_with_all = ["run", "workflow_run"])]
    pub group: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}
