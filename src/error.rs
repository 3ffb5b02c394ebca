//! The crate's error type: one variant per I/O module's error enum, each carrying the file, key
//! or case it concerns. `hint` gives the user's next step, printed on its own line.

use std::path::PathBuf;

use thiserror::Error;

use crate::catalog::CatalogError;
use crate::config::ConfigError;
use crate::evidence::TraceFileError;
use crate::evidence::classify::RuleError;
use crate::floor::FloorError;
use crate::github::GithubError;
use crate::gpu::GpuError;
use crate::measure::harness::HarnessError;
use crate::report::RenderError;
use crate::serve::ServeError;
use crate::store::StoreError;

/// The process's exit status: the one list of what each code means (`--help` prints it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// The gate passed, or the command did what it was asked.
    Success = 0,
    /// The gate failed: a case got a verdict listed in `[gate] fail_on`.
    GateFailed = 1,
    /// An error (usage, config, store, harness, driver), or a case that could not be measured.
    Error = 2,
    /// `bisect --run`: this commit cannot be tested (git-bisect-run's skip).
    BisectSkip = 125,
    /// `bisect --run`: abort the bisection (git-bisect-run stops at 128 and above).
    BisectAbort = 128,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

#[derive(Debug, Error)]
pub enum Error {
    #[error("--suite {name}: no such suite in {}; suites: {}", path.display(), known.join(", "))]
    UnknownSuite {
        name: String,
        path: PathBuf,
        known: Vec<String>,
        suggestion: Option<String>,
    },
    #[error("suite {suite}: command template: {source}")]
    CommandTemplate {
        suite: String,
        #[source]
        source: crate::case::TemplateError,
    },
    #[error("{name} is not set")]
    ProtocolVarMissing { name: String, harness: String },
    #[error("{name}={value:?} is not a whole number")]
    ProtocolVarNumber {
        name: String,
        value: String,
        #[source]
        source: std::num::ParseIntError,
    },
    #[error("{name}: {message}")]
    ProtocolVarPhase { name: String, message: String },
    #[error("model {model:?} is not in {}", path.display())]
    HarnessModel { model: String, path: PathBuf },
    #[error("the cpu-decode example harness times decode steps only")]
    CpuDecodePhase,
    #[error("no baseline for case {case:?}")]
    NoBaseline {
        case: String,
        suggestion: Option<String>,
    },
    #[error("--reason is empty")]
    EmptyReason,
    #[error("no result of run {run} matches {filter:?}")]
    NoMatchingResult { run: i64, filter: String },
    #[error("case {case} of run {run} is {state}: only a valid measurement can become a baseline")]
    NotAcceptable {
        case: String,
        run: i64,
        state: String,
    },
    #[error("no baselines to export")]
    NothingToExport,
    #[error("the store holds baselines for several GPUs ({})", gpus.join(", "))]
    ExportNeedsGpu { gpus: Vec<String> },
    #[error(
        "run {run} ran on {gpu} and run {other} on {other_gpu}: results are only compared within one GPU SKU"
    )]
    DifferentGpus {
        run: i64,
        gpu: String,
        other: i64,
        other_gpu: String,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    Floor(#[from] FloorError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Harness(#[from] HarnessError),
    #[error(transparent)]
    Github(#[from] GithubError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error(transparent)]
    Journal(#[from] crate::store::journal::JournalError),
    #[error("{count} cases to measure ({estimate}), more than {limit}")]
    TooManyCases {
        count: usize,
        estimate: String,
        limit: usize,
        /// The limit is the config's `max_cases`, not the built-in threshold.
        configured: bool,
    },
    #[error("{source}")]
    Rescued {
        #[source]
        source: Box<Error>,
        /// Where the complete run was written instead.
        file: PathBuf,
    },
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    HistoryFile(#[from] crate::store::history_file::HistoryFileError),
    #[error(transparent)]
    Trace(#[from] TraceFileError),
    #[error(transparent)]
    Nsys(#[from] crate::evidence::nsys_sqlite::NsysError),
    #[error(transparent)]
    NsightFile(#[from] crate::measure::profiler::NsightFileError),
    #[error("Nsight Compute file {}: {source}", path.display())]
    Ncu {
        path: PathBuf,
        #[source]
        source: crate::evidence::ncu::NcuError,
    },
    #[error(transparent)]
    EvidenceRule(#[from] RuleError),
    #[error("failed to access {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no device spec: the GPU could not be identified and the config declares none")]
    NoDeviceSpec,
    #[error("{}: no suite is defined, so `run` has nothing to measure", path.display())]
    NoSuites { path: PathBuf },
    #[error("interrupted: the run was stopped before it finished; nothing was stored")]
    Interrupted,
    #[error("no run {0} in the store")]
    NoSuchRun(i64),
    #[error("the store holds no run yet")]
    NoRuns,
    #[error("failed to write JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("failed to read baselines file {}: {message}", path.display())]
    BaselineFile { path: PathBuf, message: String },
    #[error("baselines file {}: field {field}: {message}", path.display())]
    BaselineField {
        path: PathBuf,
        field: String,
        message: String,
    },
    #[error(
        "baselines file {} has schema_version {found}; this utilgate reads versions {oldest} to {newest}",
        path.display()
    )]
    BaselineVersion {
        path: PathBuf,
        found: u32,
        newest: u32,
        oldest: u32,
    },
    #[error("{run} is a run id: name the case with --case SUITE/MODEL/PRECISION/PHASE/bB/cC")]
    TraceNeedsCase { run: i64 },
    #[error("run {run} has no case {case:?}")]
    NoSuchCase { run: i64, case: String },
    #[error("run {run} holds no analysed trace or Nsight summary for {case}")]
    NoTrace { run: i64, case: String },
    #[error("{what} is not available for suites of kind = \"serve\" (selected: {})", suites.join(", "))]
    ServeSuiteUnsupported { what: String, suites: Vec<String> },
    /// A case named on the command line that matches no case, or several (whole name, else a
    /// unique part of it).
    #[error("{}", case_match_message(wanted, within, matches, known))]
    CaseMatch {
        wanted: String,
        /// Where it was looked for: "the store", "run 3".
        within: String,
        /// The cases it matched (two or more), empty when it matched none.
        matches: Vec<String>,
        /// Some of the cases there are, when it matched none.
        known: Vec<String>,
    },
    #[error("--run-group \"\": a group id cannot be empty")]
    EmptyRunGroup,
    #[error("--shard {shard}: a shard needs a run group to be merged with the other shards")]
    ShardWithoutGroup { shard: String },
    #[error("--group {group}: its runs measured different GPUs ({}); one report covers one GPU", gpus.join(", "))]
    GroupGpus { group: String, gpus: Vec<String> },
    #[error("--group {group}: no stored run belongs to this group")]
    EmptyGroup { group: String },
    #[error(
        "--group {group}: its runs measured different pull-request heads ({first} and {other})"
    )]
    GroupHeads {
        group: String,
        first: String,
        other: String,
    },
    #[error("--resume: {} interrupted runs of this plan have a journal: {}", runs.len(), runs.join("; "))]
    ResumeWhich { runs: Vec<String> },
    #[error("--resume={id}: no interrupted run of this plan has that id")]
    ResumeNoSuchRun { id: String },
    #[error("--pairs {pairs}: the noise of a paired difference needs at least 2 pairs")]
    TooFewPairs { pairs: usize },
    #[error("history of {case} on {gpu}: {problem}")]
    HistoryRead {
        case: String,
        gpu: String,
        problem: String,
    },
    #[error("{}: not a readable nsys stats CSV: {problem}", path.display())]
    NsysStatsCsv { path: PathBuf, problem: String },
    #[error("{} is {then_kind}, {} is {now_kind}: a diff needs two files of one kind", then.display(), now.display())]
    EvidenceKinds {
        then: PathBuf,
        then_kind: String,
        now: PathBuf,
        now_kind: String,
    },
    #[error(
        "--promote {}: the run was measured for a pull request (trigger {trigger}, pull request {pr}), and a pull request's run never moves a baseline",
        file.display()
    )]
    PromotePullRequestRun {
        file: PathBuf,
        trigger: String,
        pr: String,
    },
    #[error(
        "{origin}: `utilgate {verb}` in a job started by a {event} event (GITHUB_EVENT_NAME) would write a PostgreSQL store, and a job that runs pull-request code writes nothing shared"
    )]
    SharedStoreInPullRequest {
        origin: String,
        verb: String,
        event: String,
        fix: String,
    },
    #[error("--run: re-measuring needs the case")]
    BisectNeedsCase,
    #[error("--case {case}: run {run} did not measure it")]
    BisectNotMeasured { case: String, run: i64 },
    #[error("--good {good} --bad {bad}: {case} is not slower in run {bad} than in run {good}")]
    BisectNotSlower { case: String, good: i64, bad: i64 },
    #[error("case {case}: this commit cannot be tested: {reason}")]
    BisectUntestable { case: String, reason: String },
}

/// What `Error::CaseMatch` says: the cases it matched, or some of those there are.
fn case_match_message(wanted: &str, within: &str, matches: &[String], known: &[String]) -> String {
    if matches.is_empty() {
        let known = if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        };
        format!("{wanted:?} matches no case of {within}; its cases include: {known}")
    } else {
        format!(
            "{wanted:?} matches {} cases of {within}: {}",
            matches.len(),
            matches.join(", ")
        )
    }
}

impl Error {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Config(e) => e.hint(),
            Error::Store(e) => e.hint(),
            Error::Harness(e) => e.hint(),
            Error::Catalog(e) => e.hint(),
            Error::Floor(e) => e.hint(),
            Error::Github(e) => e.hint(),
            Error::Render(e) => e.hint(),
            Error::Gpu(e) => e.hint(),
            Error::Journal(e) => e.hint(),
            Error::TooManyCases { configured: true, count, .. } => Some(format!(
                "pass --yes to start it anyway, or raise [limits] max_cases to {count}"
            )),
            Error::TooManyCases { count, .. } => Some(format!(
                "pass --yes to start it, or declare the size you expect with [limits] max_cases = {count}"
            )),
            Error::Rescued { source, file } => Some(format!(
                "nothing measured is lost: the complete run is in the rescue file {}; {}store it with `utilgate import run {}`",
                file.display(),
                source.hint().map_or_else(String::new, |h| format!("{h}; then ")),
                file.display()
            )),
            Error::Serve(e) => e.hint(),
            Error::HistoryFile(e) => e.hint(),
            Error::Trace(e) => e.hint(),
            Error::Nsys(e) => e.hint(),
            Error::NsightFile(e) => e.hint(),
            Error::Ncu { source, .. } => source.hint(),
            Error::NoSuites { .. } => Some(
                "add a [[suite]] table with name, command, models, precisions, phases, batches and contexts (`utilgate config default` shows one)".into(),
            ),
            Error::EvidenceRule(e) => e.hint(),
            Error::NoDeviceSpec => Some(
                "add [gpu] name = \"h100-sxm\" (a catalogue name) or declare mem_bandwidth_gb_s and dense_tflops in the config".into(),
            ),
            Error::Interrupted => Some("earlier history and baselines are untouched; run again".into()),
            Error::NoSuchRun(_) | Error::NoRuns => {
                Some("`utilgate runs list` shows the stored runs".into())
            }
            Error::UnknownSuite { suggestion, .. } => Some(suggestion.as_ref().map_or_else(
                || "`utilgate config check` lists the config's suites".to_owned(),
                |s| format!("did you mean `--suite {s}`?"),
            )),
            Error::CommandTemplate { source, .. } => Some(source.hint()),
            Error::ProtocolVarMissing { harness, .. } => Some(format!(
                "`utilgate harness {harness}` is started by `utilgate run` as a suite's harness"
            )),
            Error::ProtocolVarNumber { .. } | Error::ProtocolVarPhase { .. } => {
                Some("this variable is set by `utilgate run`; do not set it by hand".into())
            }
            Error::HarnessModel { .. } => {
                Some("the suite names a model the config neither declares nor finds built in".into())
            }
            Error::CpuDecodePhase => Some("remove \"prefill\" from the suite's phases".into()),
            Error::NoBaseline { suggestion, .. } => Some(suggestion.as_ref().map_or_else(
                || "`utilgate baseline list` shows the keys".to_owned(),
                |s| format!("did you mean `{s}`? `utilgate baseline list` shows the keys"),
            )),
            Error::EmptyReason => Some(
                "say why the change is intended: --reason \"...\"; it is kept in the baseline history"
                    .into(),
            ),
            Error::ServeSuiteUnsupported { .. } => Some(
                "--resume: the journal holds step cases only, and a killed service run is measured again; --trace: a load generator has no trace of its own (trace the server). Run the step suites with `--suite NAME` to use it, and the service suites without it".into(),
            ),
            Error::NoTrace { .. } => Some(
                "traces are captured by suites with trace = true or `utilgate run --trace`, Nsight files by nsys = true or ncu = { ... }".into(),
            ),
            Error::TraceNeedsCase { run }
            | Error::NoSuchCase { run, .. }
            | Error::NoMatchingResult { run, .. } => {
                Some(format!("`utilgate runs show {run}` lists its cases"))
            }
            Error::NotAcceptable { .. } => Some("narrow the filter to valid results".into()),
            Error::NothingToExport => {
                Some("a passing run on the baseline branch sets them".into())
            }
            Error::ExportNeedsGpu { .. } => Some(
                "pass --gpu with a file --out, or an --out directory (ending in /) for one file per GPU"
                    .into(),
            ),
            Error::DifferentGpus { .. } => Some(
                "compare runs of the same GPU: `utilgate runs list` shows each run's GPU".into(),
            ),
            Error::BaselineField { .. } => Some(
                "re-export the file with `utilgate baseline export` (or restore it from version control); baselines/README.md describes each field".into(),
            ),
            Error::BaselineVersion { found, newest, .. } => Some(if found > newest {
                "a newer utilgate wrote it: upgrade utilgate, or re-export with this version".into()
            } else {
                "re-export it with `utilgate baseline export` from a store that holds these baselines".into()
            }),
            Error::BaselineFile { .. } => Some(
                "baseline files are written by `utilgate baseline export`; restore it from version control".into(),
            ),
            Error::SharedStoreInPullRequest { fix, .. } => Some(fix.clone()),
            _ => self.argument_hint().map(str::to_owned),
        }
    }

    /// The fix for a command-line value that parses but cannot be used.
    fn argument_hint(&self) -> Option<&'static str> {
        match self {
            Error::PromotePullRequestRun { .. } => Some(
                "import it without --promote; to make one of its results a baseline, `utilgate baseline accept FILTER --run ID --reason \"...\"`",
            ),
            Error::CaseMatch { .. } => Some(
                "give one whole case name, as `utilgate runs show` prints it (with --gpu where the store holds several GPUs)",
            ),
            Error::EmptyRunGroup => Some("name the group, e.g. --run-group \"$GITHUB_RUN_ID\""),
            Error::ShardWithoutGroup { .. } => Some(
                "add --run-group ID (the same for every shard; under Actions it defaults to GITHUB_RUN_ID)",
            ),
            Error::GroupGpus { .. } => Some(
                "give each runner's shards a group of their own, e.g. --run-group \"$GITHUB_RUN_ID-<gpu>\"",
            ),
            Error::EmptyGroup { .. } => Some(
                "store the shards with `utilgate run --shard K/N --run-group ID` (under Actions the group defaults to GITHUB_RUN_ID); `utilgate runs list` shows the runs",
            ),
            Error::GroupHeads { .. } => Some(
                "give each workflow run's shards a group of their own (the default, GITHUB_RUN_ID, is one per workflow run)",
            ),
            Error::ResumeWhich { .. } => {
                Some("pass --resume=RUN_ID with one of the run ids above (a prefix will do)")
            }
            Error::ResumeNoSuchRun { .. } => {
                Some("run with --resume alone to list the interrupted runs")
            }
            Error::TooFewPairs { .. } => {
                Some("use --pairs 16 (the default) or more, or raise [ab] pairs")
            }
            Error::HistoryRead { .. } => Some("check --nights, --max-pvalue and --permutations"),
            Error::NsysStatsCsv { .. } => Some(
                "give the CSV `nsys stats --report cuda_gpu_kern_sum --format csv` printed or wrote, or the .sqlite export",
            ),
            Error::EvidenceKinds { .. } => Some(
                "diff two files of the same kind: two ncu CSVs, two nsys exports or two traces",
            ),
            Error::BisectNeedsCase => Some("add --case NAME"),
            Error::BisectNotMeasured { .. } => Some("pick a good run that measured the case"),
            Error::BisectNotSlower { .. } => {
                Some("swap --good and --bad, or pick runs around the slowdown")
            }
            Error::BisectUntestable { .. } => Some("git bisect skips this commit"),
            _ => None,
        }
    }
}
