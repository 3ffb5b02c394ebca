//! Runs one repeat of a case through the user's harness process (DESIGN.md §5) and turns what
//! happened into a `HarnessReport` or a `HarnessError`. I/O: child processes, pipes, signals and
//! the results file; it decides nothing about verdicts.
//!
//! The command runs as `sh -c COMMAND` in a process group of its own, so that a timeout or a
//! cancellation reaches every process it started (SIGTERM, a grace period, then SIGKILL), and so
//! that the terminal's Ctrl-C reaches only utilgate, which then cancels through the flag. Anything
//! still alive in the group after the harness exits is terminated the same way: a stray process
//! must not share the GPU with the next case. stdout is drained and discarded (the protocol says
//! the harness never writes to it for utilgate, and a chatty harness must not block on a full
//! pipe); stderr is drained keeping only a bounded tail for error messages.

#![expect(
    clippy::disallowed_methods,
    reason = "a harness writes its results to a file"
)]

use std::fs;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use thiserror::Error;

use crate::case::CaseKey;
use crate::measure::cgroup;
use crate::measure::protocol::{self, HarnessReport, ProtocolError, sanitize};

mod guarded;
mod process;
pub use guarded::close as close_guard;
mod serve;
use process::{Group, Leader, PipeOut, TailReader};
pub use serve::{
    ServeRepeatOutput, ServeRepeatSpec, UTILGATE_INPUT_LEN, UTILGATE_MAX_CONCURRENCY,
    UTILGATE_NUM_PROMPTS, UTILGATE_OUTPUT_LEN, UTILGATE_REQUEST_RATE, UTILGATE_RESULT_FILE,
    UTILGATE_SEED, run_serve_repeat,
};

/// Protocol version; `UTILGATE_PROTOCOL` is set to it.
pub const PROTOCOL_VERSION: &str = "1";
pub const UTILGATE_PROTOCOL: &str = "UTILGATE_PROTOCOL";
/// The results file the harness appends JSON lines to.
pub const UTILGATE_OUT: &str = "UTILGATE_OUT";
pub const UTILGATE_MODEL: &str = "UTILGATE_MODEL";
pub const UTILGATE_PRECISION: &str = "UTILGATE_PRECISION";
pub const UTILGATE_PHASE: &str = "UTILGATE_PHASE";
pub const UTILGATE_BATCH: &str = "UTILGATE_BATCH";
pub const UTILGATE_CONTEXT: &str = "UTILGATE_CONTEXT";
/// Tensor- and expert-parallel degrees of the case.
pub const UTILGATE_TP: &str = "UTILGATE_TP";
pub const UTILGATE_EP: &str = "UTILGATE_EP";
pub const UTILGATE_WARMUP_STEPS: &str = "UTILGATE_WARMUP_STEPS";
pub const UTILGATE_STEPS: &str = "UTILGATE_STEPS";
pub const UTILGATE_REPEAT: &str = "UTILGATE_REPEAT";

/// The most stderr kept in memory (bytes), however much the harness writes.
const STDERR_TAIL_BYTES: usize = 4096;
/// The most stderr lines shown in an error.
const STDERR_TAIL_LINES: usize = 20;
/// How long the process group has to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long to wait for the group to disappear after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How long to wait for the pipes to close once the group is gone.
const READER_WAIT: Duration = Duration::from_secs(1);
/// The longest pause between two looks at whether a process group is gone (after a signal).
const MAX_POLL: Duration = Duration::from_millis(20);
/// How often the wait for the harness looks at the cancel flag (its exit wakes the wait at once).
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// One repeat to run.
#[derive(Debug, Clone, Copy)]
pub struct RepeatSpec<'a> {
    /// The suite's command, already rendered from its template for this case.
    pub command: &'a str,
    /// The harness's working directory.
    pub cwd: &'a Path,
    pub case: &'a CaseKey,
    pub warmup_steps: u64,
    pub steps: u64,
    /// Passed verbatim in `UTILGATE_REPEAT`; it also names the results file.
    pub repeat: u32,
    /// A fresh directory owned by the caller; the results file is created inside it.
    pub out_dir: &'a Path,
    pub timeout: Duration,
    /// Extra variables for the child; the protocol variables win over them.
    pub extra_env: &'a [(String, String)],
    /// Credential variables (`redact::CREDENTIAL_VARS`) the harness may keep; every other one
    /// is removed from its environment.
    pub env_passthrough: &'a [String],
    /// The utilgate binary, started as `utilgate harness guard` around the shell so that no
    /// harness process outlives the repeat or utilgate (see `guard.rs`); `None` runs `sh -c`
    /// directly (the process group is then the only net).
    pub guard: Option<&'a Path>,
    /// Step times outside this range are protocol errors.
    pub step_range: protocol::StepRange,
}

/// What a successful repeat produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RepeatOutput {
    /// At least one counted step.
    pub report: HarnessReport,
    /// The last lines of the harness's stderr, sanitised.
    pub stderr_tail: String,
    /// Wall time from start to exit of the harness process.
    pub wall: Duration,
}

/// Why a repeat produced no usable steps. The `Display` of the process failures ends with the
/// stderr tail (indented), so printing the error shows what the harness said.
#[derive(Debug, Error)]
pub enum HarnessError {
    #[error("harness command `{program}` was not found (sh exit status 127){}", tail_block(.stderr_tail))]
    NotFound {
        program: String,
        stderr_tail: String,
    },
    #[error("harness command `{program}` could not be executed (sh exit status 126){}", tail_block(.stderr_tail))]
    NotExecutable {
        program: String,
        stderr_tail: String,
    },
    #[error("harness exited with status {code}{}", tail_block(.stderr_tail))]
    Exited { code: i32, stderr_tail: String },
    #[error("harness was killed by {}{}", signal_name(*.signal), tail_block(.stderr_tail))]
    Signalled { signal: i32, stderr_tail: String },
    #[error("harness timed out after {}{}", seconds(*.timeout), tail_block(.stderr_tail))]
    TimedOut {
        timeout: Duration,
        stderr_tail: String,
    },
    #[error("harness run cancelled")]
    Cancelled,
    #[error("{}{}", no_steps_message(.path, *.file_missing, *.warmup_steps), tail_block(.stderr_tail))]
    NoSteps {
        path: PathBuf,
        /// The harness never created the results file.
        file_missing: bool,
        /// Warm-up steps it did report (never counted).
        warmup_steps: usize,
        stderr_tail: String,
    },
    /// The results file is deleted with the run's working directory, so the message carries
    /// the offending line itself (`excerpt`), not the file's path.
    #[error("harness results ($UTILGATE_OUT), {source}; the line was: {excerpt}")]
    Protocol {
        excerpt: String,
        source: ProtocolError,
    },
    #[error("{action} {}: {source}", .path.display())]
    Io {
        /// What was being done, e.g. "failed to start the harness in".
        action: &'static str,
        path: PathBuf,
        source: io::Error,
    },
}

impl HarnessError {
    /// A one-line suggestion printed after the error, when there is one.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            HarnessError::NotFound { program, .. } => Some(format!(
                "check the suite's `command`: `{program}` must be on PATH or a path relative \
                 to the harness's working directory"
            )),
            HarnessError::NotExecutable { program, .. } => Some(format!(
                "make `{program}` executable (chmod +x) or run it through its interpreter in \
                 the suite's `command`, e.g. `python3 {program}`"
            )),
            HarnessError::Exited { .. } => Some(
                "run the rendered command by hand with the UTILGATE_* variables set to see the \
                 failure"
                    .to_owned(),
            ),
            HarnessError::Signalled { .. } => Some(
                "the harness crashed: run the rendered command by hand, and check the kernel log \
                 (dmesg) for a GPU fault (Xid) or the OOM killer"
                    .to_owned(),
            ),
            HarnessError::TimedOut { .. } => Some(
                "raise the suite's `timeout_s`, or lower its `steps` or `warmup_steps`".to_owned(),
            ),
            HarnessError::NoSteps {
                file_missing: false,
                warmup_steps,
                ..
            } if *warmup_steps > 0 => Some(
                "every step was marked \"warmup\": true; write the timed steps without it, e.g. \
                 {\"step_ms\": 6.02}"
                    .to_owned(),
            ),
            HarnessError::NoSteps { .. } => Some(format!(
                "the harness must append one JSON line per step, e.g. {{\"step_ms\": 6.02}}, to \
                 the file named by ${UTILGATE_OUT}"
            )),
            HarnessError::Protocol { source, .. } => Some(source.hint()),
            HarnessError::Cancelled | HarnessError::Io { .. } => None,
        }
    }

    /// The sanitised tail of the harness's stderr, where the error has one.
    #[must_use]
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            HarnessError::NotFound { stderr_tail, .. }
            | HarnessError::NotExecutable { stderr_tail, .. }
            | HarnessError::Exited { stderr_tail, .. }
            | HarnessError::Signalled { stderr_tail, .. }
            | HarnessError::TimedOut { stderr_tail, .. }
            | HarnessError::NoSteps { stderr_tail, .. } => Some(stderr_tail),
            HarnessError::Cancelled | HarnessError::Protocol { .. } | HarnessError::Io { .. } => {
                None
            }
        }
    }
}

fn tail_block(tail: &str) -> String {
    if tail.is_empty() {
        return String::new();
    }
    let mut block = String::from("; its stderr ends with:");
    for line in tail.lines() {
        block.push_str("\n  | ");
        block.push_str(line);
    }
    block
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal).map_or_else(|_| format!("signal {signal}"), |s| s.as_str().to_owned())
}

fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn no_steps_message(path: &Path, file_missing: bool, warmup_steps: usize) -> String {
    if file_missing {
        format!(
            "harness exited successfully but never wrote its results file {}",
            path.display()
        )
    } else if warmup_steps > 0 {
        format!(
            "harness reported {warmup_steps} warm-up steps but no counted steps in {}",
            path.display()
        )
    } else {
        format!("harness reported no steps in {}", path.display())
    }
}

/// The program a shell command starts: its first word after any `NAME=value` assignments and
/// `exec`/`env`, without quotes. Only used to name the program in an error.
fn program_name(command: &str) -> String {
    let is_assignment = |word: &str| {
        word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    };
    command
        .split_whitespace()
        .find(|word| !is_assignment(word) && *word != "exec" && *word != "env")
        .map(|word| sanitize(word.trim_matches(|c| c == '"' || c == '\'')))
        .unwrap_or_default()
}

/// What each step of [`run_group`] was doing, for its errors.
pub(crate) struct GroupSteps {
    start: &'static str,
    pipes: &'static str,
    wait: &'static str,
}

const HARNESS_STEPS: GroupSteps = GroupSteps {
    start: "failed to start the harness (sh -c) in",
    pipes: "failed to start a reader thread for the harness in",
    wait: "failed to wait for the harness in",
};

/// How a harness's `sh -c` is started: directly, or under guard (the run's guard, else a guard
/// of its own), inside its cgroup scope where there is one.
pub(crate) struct Launch<'a> {
    /// `sh -c COMMAND` in its own process group, with its working directory and environment.
    pub(crate) shell: Command,
    /// The utilgate binary, the guard; `None` starts the shell directly.
    pub(crate) guard: Option<&'a Path>,
    pub(crate) scope: Option<cgroup::Scope>,
    /// The shell's stdout; `None`: a pipe, drained and discarded.
    pub(crate) stdout: Option<fs::File>,
}

/// Starts the launch's shell as its own process group (inside its scope where there is one),
/// waits for it until `deadline` while watching `cancel`, then kills whatever it left running
/// in its group or scope, and checks how it ended. Returns its sanitised stderr tail. `shown`
/// is the command as the user wrote it and the directory it ran in, for errors; the deadline is
/// `timeout` after `start`.
pub(crate) fn run_group(
    launch: Launch<'_>,
    steps: &GroupSteps,
    (shown, cwd): (&str, &Path),
    (start, timeout): (Instant, Duration),
    cancel: &AtomicBool,
) -> Result<String, HarnessError> {
    let io_err = |action: &'static str| {
        move |source| HarnessError::Io {
            action,
            path: cwd.to_path_buf(),
            source,
        }
    };
    let Launch {
        shell,
        guard,
        scope,
        stdout,
    } = launch;
    let remote = guard.and_then(|exe| {
        guarded::start(
            exe,
            &shell,
            scope.as_ref().map(cgroup::Scope::dir),
            stdout.as_ref(),
        )
    });
    let leader = if let Some(remote) = remote {
        Leader::Remote(remote.map_err(io_err(steps.start))?)
    } else {
        let mut command = match guard {
            Some(exe) => own_guard(&shell, exe, scope.as_ref()),
            None => shell,
        };
        if let Some(file) = stdout {
            command.stdout(file);
        }
        Leader::Local(command.spawn().map_err(io_err(steps.start))?)
    };
    // From here on, `Group`'s drop kills the group on any early return.
    let mut group = Group::new(leader);
    let (out, err) = group.leader.take_pipes();
    let pipes = Pipes::start(out, err).map_err(io_err(steps.pipes))?;
    let ended = wait_for_exit(&mut group, start + timeout, cancel).map_err(io_err(steps.wait))?;
    // Whatever the process left running in its group (or its scope) goes too.
    group.terminate();
    drop(scope);
    let stderr_tail = pipes.finish();
    match ended {
        Ended::Exited(status) => check_status(status, shown, stderr_tail.clone())?,
        Ended::Cancelled => return Err(HarnessError::Cancelled),
        Ended::TimedOut => {
            return Err(HarnessError::TimedOut {
                timeout,
                stderr_tail,
            });
        }
    }
    Ok(stderr_tail)
}

/// `utilgate harness guard` around the `sh -c` command `shell`, with its working directory,
/// environment and stdio: the guard of one repeat, where the run's guard cannot serve.
fn own_guard(shell: &Command, utilgate: &Path, scope: Option<&cgroup::Scope>) -> Command {
    #[expect(
        clippy::disallowed_methods,
        reason = "the harness runner is the edge that starts processes"
    )]
    let mut command = Command::new(utilgate);
    command
        .args(["harness", "guard", "--parent"])
        .arg(std::process::id().to_string());
    if let Some(scope) = scope {
        command.arg("--scope").arg(scope.dir());
    }
    command.arg("--");
    if let Some(line) = shell.get_args().last() {
        command.arg(line);
    }
    if let Some(dir) = shell.get_current_dir() {
        command.current_dir(dir);
    }
    for (name, value) in shell.get_envs() {
        match value {
            Some(value) => command.env(name, value),
            None => command.env_remove(name),
        };
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    command
}

const COMMAND_STEPS: GroupSteps = GroupSteps {
    start: "failed to start the command (sh -c) in",
    pipes: "failed to start a reader thread for the command in",
    wait: "failed to wait for the command in",
};

/// A short command of the user's that is not a harness (the canary command), run as a harness
/// is: under the guard when there is one (no process outlives it or utilgate), in its own
/// process group, with the credential variables removed, killed at `timeout`. Its stdout goes
/// to `stdout`; returns its sanitised stderr tail.
pub fn run_command(
    command: &str,
    cwd: &Path,
    guard: Option<&Path>,
    (timeout, cancel): (Duration, &AtomicBool),
    stdout: fs::File,
) -> Result<String, HarnessError> {
    check_cwd(cwd)?;
    let start = Instant::now();
    let scope = guard.and_then(|_| cgroup::Scope::create());
    let shell = shell_command(&Shell {
        command,
        cwd,
        env_passthrough: &[],
        extra_env: &[],
    });
    run_group(
        Launch {
            shell,
            guard,
            scope,
            stdout: Some(stdout),
        },
        &COMMAND_STEPS,
        (command, cwd),
        (start, timeout),
        cancel,
    )
}

/// The results file (`UTILGATE_OUT`) of repeat `repeat` in `out_dir`.
#[must_use]
pub fn results_path(out_dir: &Path, repeat: u32) -> PathBuf {
    out_dir.join(format!("repeat-{repeat}.jsonl"))
}

/// Runs one repeat: starts the harness, waits for it within the timeout while watching
/// `cancel`, and parses its results file.
pub fn run_repeat(spec: &RepeatSpec, cancel: &AtomicBool) -> Result<RepeatOutput, HarnessError> {
    let out_path = results_path(spec.out_dir, spec.repeat);
    check_cwd(spec.cwd)?;
    // The protocol appends: a leftover file would add another run's steps to this one.
    match fs::remove_file(&out_path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            return Err(HarnessError::Io {
                action: "failed to clear the harness results file",
                path: out_path,
                source: err,
            });
        }
        _ => {}
    }

    if cancel.load(Ordering::Relaxed) {
        return Err(HarnessError::Cancelled);
    }
    let start = Instant::now();
    // A cgroup v2 scope holds every process of the repeat where the machine allows one.
    let scope = spec.guard.and_then(|_| cgroup::Scope::create());
    let shell = harness_command(spec, &out_path);
    let stderr_tail = run_group(
        Launch {
            shell,
            guard: spec.guard,
            scope,
            stdout: None,
        },
        &HARNESS_STEPS,
        (spec.command, spec.cwd),
        (start, spec.timeout),
        cancel,
    )?;
    let wall = start.elapsed();
    let report = read_results(out_path, &stderr_tail, spec.step_range)?;
    Ok(RepeatOutput {
        report,
        stderr_tail,
        wall,
    })
}

/// `sh -c COMMAND` in its own process group with the protocol variables set and the known
/// credential variables removed.
fn harness_command(spec: &RepeatSpec, out_path: &Path) -> Command {
    let mut command = shell_command(&Shell {
        command: spec.command,
        cwd: spec.cwd,
        env_passthrough: spec.env_passthrough,
        extra_env: spec.extra_env,
    });
    let case = spec.case;
    command
        .env(UTILGATE_PROTOCOL, PROTOCOL_VERSION)
        .env(UTILGATE_OUT, out_path)
        .env(UTILGATE_MODEL, &case.model)
        .env(UTILGATE_PRECISION, &case.precision)
        .env(UTILGATE_PHASE, case.phase.as_str())
        .env(UTILGATE_BATCH, case.batch.to_string())
        .env(UTILGATE_CONTEXT, case.context.to_string())
        .env(UTILGATE_TP, case.tp.to_string())
        .env(UTILGATE_EP, case.ep.to_string())
        .env(UTILGATE_WARMUP_STEPS, spec.warmup_steps.to_string())
        .env(UTILGATE_STEPS, spec.steps.to_string())
        .env(UTILGATE_REPEAT, spec.repeat.to_string());
    // The suite's free axes: `mode` arrives as `UTILGATE_MODE` (no axis takes a built-in name).
    for (name, value) in case.axes.iter() {
        command.env(crate::case::Axes::env_name(name), value);
    }
    command
}

/// What every process utilgate starts for a suite (a step harness or a load generator) shares.
struct Shell<'a> {
    command: &'a str,
    cwd: &'a Path,
    env_passthrough: &'a [String],
    extra_env: &'a [(String, String)],
}

/// `sh -c COMMAND` in its own process group, in its working directory, with the known
/// credential variables removed (but those the suite passes through) and the suite's extra
/// variables set. `run_group` starts it, under guard when there is one.
fn shell_command(spec: &Shell<'_>) -> Command {
    #[expect(
        clippy::disallowed_methods,
        reason = "the harness runner is the edge that starts processes"
    )]
    let mut command = Command::new("sh");
    command.arg("-c").arg(spec.command);
    command
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // The gate's tokens are for publishing results; benchmark code never needs them (a suite
    // lists in `env_passthrough` one its harness does need).
    for name in crate::redact::CREDENTIAL_VARS {
        if !spec.env_passthrough.iter().any(|p| p == name) {
            command.env_remove(name);
        }
    }
    // Nor any other variable whose value holds a token or a database password, by the
    // judgement `run` refuses to start an untrusted harness by (`Bearer ghp_...`, a JSON blob
    // with the job's token, `UTILGATE_DB=postgres://user:PASSWORD@...`, `host=db password=...`).
    for (name, value) in std::env::vars_os() {
        let (Some(name_text), Some(value)) = (name.to_str(), value.to_str()) else {
            continue;
        };
        let kept = spec.env_passthrough.iter().any(|p| p == name_text);
        if !kept && crate::trust::secret_in(name_text, value).is_some() {
            command.env_remove(name);
        }
    }
    for (name, value) in spec.extra_env {
        command.env(name, value);
    }
    command
}

/// How the wait for the harness ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Blocks until the harness exits, the deadline passes or `cancel` is set. A waiter thread
/// sleeps in `waitid(2)` until the child has exited (leaving it to be reaped here) and wakes this
/// one at once; `cancel` is looked at every `CANCEL_CHECK` meanwhile.
fn wait_for_exit(group: &mut Group, deadline: Instant, cancel: &AtomicBool) -> io::Result<Ended> {
    let exited = match group.leader {
        Leader::Local(_) => process::exit_notice(group.pgid),
        Leader::Remote(_) => None,
    };
    loop {
        if let Some(status) = group.leader.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if cancel.load(Ordering::Relaxed) {
            return Ok(Ended::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Ended::TimedOut);
        }
        let pause = CANCEL_CHECK.min(deadline - now);
        if let Leader::Remote(remote) = &mut group.leader {
            // The run's guard reports the repeat done on its socket: block there.
            remote.block(pause);
            continue;
        }
        match exited.as_ref().map(|notice| notice.recv_timeout(pause)) {
            Some(Ok(()) | Err(mpsc::RecvTimeoutError::Timeout)) => {}
            // No waiter (it could not start, or it ended without an exit to report): sleep
            // between looks instead.
            Some(Err(mpsc::RecvTimeoutError::Disconnected)) | None => thread::sleep(pause),
        }
    }
}

/// The 1-based `line` of a results file as a message can quote it: control characters shown
/// as `\u{..}` escapes, at most 200 characters (the rest elided), `(empty)` for an empty line.
fn excerpt(bytes: &[u8], line: usize) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(bytes);
    let Some(raw) = text.lines().nth(line.saturating_sub(1)) else {
        return "(past the end of the file)".to_owned();
    };
    if raw.is_empty() {
        return "(empty)".to_owned();
    }
    let mut shown = String::new();
    for ch in raw.chars().take(MAX) {
        if ch.is_control() {
            shown.extend(ch.escape_debug());
        } else {
            shown.push(ch);
        }
    }
    if raw.chars().count() > MAX {
        shown.push_str(" ...");
    }
    shown
}

/// Reads and parses the results file of a harness that exited successfully.
fn read_results(
    out_path: PathBuf,
    stderr_tail: &str,
    range: protocol::StepRange,
) -> Result<HarnessReport, HarnessError> {
    let bytes = match fs::read(&out_path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Err(HarnessError::NoSteps {
                path: out_path,
                file_missing: true,
                warmup_steps: 0,
                stderr_tail: stderr_tail.to_owned(),
            });
        }
        Err(source) => {
            return Err(HarnessError::Io {
                action: "failed to read the harness results",
                path: out_path,
                source,
            });
        }
    };
    let report = match protocol::parse_with(&String::from_utf8_lossy(&bytes), range) {
        Ok(report) => report,
        Err(source) => {
            return Err(HarnessError::Protocol {
                excerpt: excerpt(&bytes, source.line),
                source,
            });
        }
    };
    if report.steps_ms.is_empty() {
        return Err(HarnessError::NoSteps {
            path: out_path,
            file_missing: false,
            warmup_steps: report.warmup_ms.len(),
            stderr_tail: stderr_tail.to_owned(),
        });
    }
    Ok(report)
}

/// The reader threads of the harness's stdout (drained, discarded) and stderr (tail kept).
struct Pipes {
    stdout: Option<TailReader>,
    stderr: Option<TailReader>,
}

impl Pipes {
    fn start(stdout: Option<PipeOut>, stderr: Option<PipeOut>) -> io::Result<Self> {
        let stdout = stdout.map(|p| TailReader::spawn(p, 0)).transpose()?;
        let stderr = stderr
            .map(|p| TailReader::spawn(p, STDERR_TAIL_BYTES))
            .transpose()?;
        Ok(Pipes { stdout, stderr })
    }

    /// Waits for both pipes to close (bounded) and returns the sanitised stderr tail.
    fn finish(self) -> String {
        if let Some(stdout) = self.stdout {
            drop(stdout.finish(READER_WAIT));
        }
        self.stderr
            .map(|r| r.finish(READER_WAIT))
            .unwrap_or_default()
    }
}

fn check_cwd(cwd: &Path) -> Result<(), HarnessError> {
    let io_err = |source| HarnessError::Io {
        action: "cannot use the harness working directory",
        path: cwd.to_path_buf(),
        source,
    };
    let meta = fs::metadata(cwd).map_err(io_err)?;
    if meta.is_dir() {
        Ok(())
    } else {
        Err(io_err(io::Error::new(
            io::ErrorKind::NotADirectory,
            "not a directory",
        )))
    }
}

/// Maps the shell's exit status to an error. `sh` reports a command that died of signal N as
/// exit status 128 + N when it did not exec it directly, so those are treated as signals too.
fn check_status(
    status: ExitStatus,
    command: &str,
    stderr_tail: String,
) -> Result<(), HarnessError> {
    if let Some(signal) = status.signal() {
        return Err(HarnessError::Signalled {
            signal,
            stderr_tail,
        });
    }
    match status.code() {
        Some(0) => Ok(()),
        Some(127) => Err(HarnessError::NotFound {
            program: program_name(command),
            stderr_tail,
        }),
        Some(126) => Err(HarnessError::NotExecutable {
            program: program_name(command),
            stderr_tail,
        }),
        Some(code) if code > 128 && Signal::try_from(code - 128).is_ok() => {
            Err(HarnessError::Signalled {
                signal: code - 128,
                stderr_tail,
            })
        }
        Some(code) => Err(HarnessError::Exited { code, stderr_tail }),
        // Neither a code nor a signal cannot happen on Unix; report it as a failure.
        None => Err(HarnessError::Exited {
            code: -1,
            stderr_tail,
        }),
    }
}

#[cfg(test)]
mod tests;
