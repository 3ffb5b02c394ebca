//! The command-line interface: clap derive structs only, no logic. The top level and the
//! arguments every command shares are here; each family's arguments are in a module of its
//! own: `measure` (run, ab, floor, compare, probe, harnesses), `store` (baseline, runs,
//! import), `inspect` (report, publish, history, changes, site, trace, gpus, config, completions,
//! man). Every subcommand's examples and exit codes are in `help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod help;
mod inspect;
mod measure;
mod store;

pub use inspect::*;
pub use measure::*;
pub use store::*;

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
    /// Move the history between stores (`SQLite`, `PostgreSQL`).
    #[command(after_help = help::STORE, subcommand)]
    Store(StoreCommand),
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
    /// Write a static site of every case's nightly history from the store: an index of every
    /// case with sparklines, a page per case (utilisation from the floor, baselines, change
    /// points, every night linked to its run) and per run. No server; works from `file://`.
    #[command(after_help = help::SITE)]
    Site(SiteArgs),
    /// What arrived between a good and a bad stored run (commits, environment, GPU), and with
    /// `--run` one step of `git bisect run`: re-measure a case at the checked-out commit and
    /// exit 0 good, 1 bad, 125 skip.
    #[command(after_help = help::BISECT)]
    Bisect(BisectArgs),
    /// Analyse profiler evidence (torch.profiler / Kineto JSON, .json.gz, or a
    /// `tensorboard_trace_handler` directory; Nsight Systems .sqlite, .nsys-rep or `nsys stats`
    /// CSV; Nsight Compute `ncu --csv` or .ncu-rep): per-step breakdown, diagnosis, and the diff
    /// of two.
    #[command(after_help = help::TRACE, subcommand)]
    Trace(TraceCommand),
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
