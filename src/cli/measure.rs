//! Arguments of the commands that measure or compute a case: `run`, `ab`, `floor`, `compare`,
//! `probe`, and the built-in harnesses. Clap derive structs only, no logic.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{ConfigArgs, FormatArgs};
use crate::case::Phase;

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
    /// ABBA pairs per case (default: `[ab] pairs`, 16).
    #[arg(long)]
    pub pairs: Option<usize>,
    /// Further pairs for a suspect case (default: `[ab] confirm_pairs`, 50; 0 disables).
    #[arg(long)]
    pub confirm_pairs: Option<usize>,
    /// Start harnesses even though a GitHub credential or a database login is within their
    /// reach (as for `run --trusted`).
    #[arg(long)]
    pub trusted: bool,
    #[command(flatten)]
    pub format: FormatArgs,
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
    /// With several interrupted runs of one plan, name one: `--resume=RUN_ID` (a prefix will do).
    #[arg(long, value_name = "RUN_ID", num_args = 0..=1, require_equals = true)]
    pub resume: Option<Option<String>>,
    /// Start a new history in an existing empty (0-byte) store file instead of refusing it.
    #[arg(long)]
    pub init: bool,
    /// Start a grid larger than `[limits] max_cases` (or 1000 cases) without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Every harness this run starts is trusted code: start them even though a GitHub
    /// credential (`GITHUB_TOKEN`, `GH_TOKEN`, a value holding a token, a token kept in the
    /// checkout's git config) or a database login (`PGPASSWORD`, a store URL or libpq string
    /// with a password, any `PostgreSQL` store) is in reach: in utilgate's environment or that
    /// of a process that started it, its command line or the config. Without it, `run`
    /// refuses: a harness could use them.
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
    /// A time budget for the run (`10m`, `90s`, `1h 30m`; overrides `[run] budget_minutes`):
    /// steps and repeats are planned per case from the store's history, decisive cases stop
    /// early, and measuring stops once the budget and its grace are spent (docs/nightly.md).
    #[arg(long, value_name = "DURATION", env = "UTILGATE_BUDGET", value_parser = parse_budget)]
    pub budget: Option<BudgetArg>,
}

#[derive(Debug, Args)]
pub struct BisectArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    #[command(flatten)]
    pub format: FormatArgs,
    /// A stored run measured at a good commit (`utilgate runs list`).
    #[arg(long, value_name = "RUN")]
    pub good: i64,
    /// A stored run measured at a bad (slower) commit.
    #[arg(long, value_name = "RUN")]
    pub bad: i64,
    /// Only this case (as `runs show` names it; a unique part of the name will do).
    #[arg(long)]
    pub case: Option<String>,
    /// Re-measure the case at the checked-out commit (its config and harness) and exit 0 when
    /// it is on the good run's side, 1 on the bad run's, 125 when it cannot tell: the command
    /// for `git bisect run`. Nothing is stored.
    #[arg(long, requires = "case")]
    pub run: bool,
    /// The harness is trusted code: start it although a GitHub credential or a database login
    /// is within its reach (as for `run --trusted`).
    #[arg(long)]
    pub trusted: bool,
}

/// A run's time budget from `--budget`, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetArg(pub f64);

/// `10m`, `90s`, `1h 30m`, `PT10M` (jiff's friendly or ISO 8601 durations).
fn parse_budget(text: &str) -> Result<BudgetArg, String> {
    let d: jiff::SignedDuration = text
        .trim()
        .parse()
        .map_err(|e| format!("{e}; write a duration with its unit: 10m, 90s, 1h 30m"))?;
    let s = d.as_secs_f64();
    if s > 0.0 {
        Ok(BudgetArg(s))
    } else {
        Err("the budget must be longer than zero: write 10m".to_owned())
    }
}

#[derive(Debug, Args)]
pub struct FloorArgs {
    /// A catalogue model name, a model named in the config, or a path to a config.json.
    #[arg(long)]
    pub model: String,
    /// A catalogue GPU name (e.g. h100-sxm), or the one the config declares when omitted.
    #[arg(long)]
    pub gpu: Option<String>,
    /// Weight precision: bf16, fp16, fp32, fp8, int8, w8a16, int4-g128, nvfp4, mxfp4(-wo),
    /// mxfp8, fp8-b128 ... (default: the checkpoint's own quantisation config, else bf16).
    #[arg(long)]
    pub precision: Option<String>,
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
    /// Tensor-parallel GPUs: the floor is one GPU's share plus the all-reduces.
    #[arg(long, default_value_t = 1)]
    pub tp: u64,
    /// Expert-parallel GPUs (mixture-of-experts models): experts spread over them, tokens
    /// sent by all-to-all.
    #[arg(long, default_value_t = 1)]
    pub ep: u64,
    /// Interconnect bandwidth per GPU, one direction, GB/s (default: the catalogue's link).
    #[arg(long)]
    pub interconnect_gb_s: Option<f64>,
    /// Speculative decoding: the draft (a catalogue or config model, or `ngram`); the floor
    /// is then one round, the draft's steps and the target's verification.
    #[arg(long, requires = "draft_k")]
    pub draft: Option<String>,
    /// Tokens the draft proposes per sequence per round.
    #[arg(long, requires = "draft")]
    pub draft_k: Option<u64>,
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
    /// Be the guard of a whole run: start each repeat's harness command on request, over the
    /// socket on stdin, with the same promises.
    #[arg(long, conflicts_with = "scope")]
    pub serve: bool,
    /// The rendered harness command, run by `sh -c`.
    #[arg(
        last = true,
        required_unless_present = "serve",
        conflicts_with = "serve"
    )]
    pub command: Option<String>,
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
