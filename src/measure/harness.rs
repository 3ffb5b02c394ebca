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

use std::fs;
use std::io::{self, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use thiserror::Error;

use crate::case::CaseKey;
use crate::measure::cgroup;
use crate::measure::protocol::{self, HarnessReport, ProtocolError, sanitize};

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
/// The longest pause between two polls of the child.
const MAX_POLL: Duration = Duration::from_millis(20);

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
    #[error("harness results {}: {source}", .path.display())]
    Protocol {
        path: PathBuf,
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

/// Runs one repeat: starts the harness, waits for it within the timeout while watching
/// `cancel`, and parses its results file.
pub fn run_repeat(spec: &RepeatSpec, cancel: &AtomicBool) -> Result<RepeatOutput, HarnessError> {
    let out_path = spec.out_dir.join(format!("repeat-{}.jsonl", spec.repeat));
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
    let io_err = |action: &'static str| {
        move |source| HarnessError::Io {
            action,
            path: spec.cwd.to_path_buf(),
            source,
        }
    };

    if cancel.load(Ordering::Relaxed) {
        return Err(HarnessError::Cancelled);
    }
    let start = Instant::now();
    // A cgroup v2 scope holds every process of the repeat where the machine allows one.
    let scope = spec.guard.and_then(|_| cgroup::Scope::create());
    let child = harness_command(spec, &out_path, scope.as_ref())
        .spawn()
        .map_err(io_err("failed to start the harness (sh -c) in"))?;
    // From here on, `Group`'s drop kills the group on any early return.
    let mut group = Group::new(child);
    let pipes = Pipes::start(&mut group.child)
        .map_err(io_err("failed to start a reader thread for the harness in"))?;
    let ended = wait_for_exit(&mut group, start + spec.timeout, cancel)
        .map_err(io_err("failed to wait for the harness in"))?;
    let wall = start.elapsed();
    // Whatever the harness left running in its group (or its scope) goes too.
    group.terminate();
    drop(scope);
    let stderr_tail = pipes.finish();

    match ended {
        Ended::Exited(status) => check_status(status, spec.command, stderr_tail.clone())?,
        Ended::Cancelled => return Err(HarnessError::Cancelled),
        Ended::TimedOut => {
            return Err(HarnessError::TimedOut {
                timeout: spec.timeout,
                stderr_tail,
            });
        }
    }
    let report = read_results(out_path, &stderr_tail, spec.step_range)?;
    Ok(RepeatOutput {
        report,
        stderr_tail,
        wall,
    })
}

/// `sh -c COMMAND` (under guard when there is one) in its own process group with the protocol
/// variables set and the known credential variables removed.
fn harness_command(spec: &RepeatSpec, out_path: &Path, scope: Option<&cgroup::Scope>) -> Command {
    let mut command = match spec.guard {
        Some(utilgate) => {
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
            command.arg("--").arg(spec.command);
            command
        }
        None => {
            #[expect(
                clippy::disallowed_methods,
                reason = "the harness runner is the edge that starts processes"
            )]
            let mut command = Command::new("sh");
            command.arg("-c").arg(spec.command);
            command
        }
    };
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
    for (name, value) in spec.extra_env {
        command.env(name, value);
    }
    let case = spec.case;
    command
        .env(UTILGATE_PROTOCOL, PROTOCOL_VERSION)
        .env(UTILGATE_OUT, out_path)
        .env(UTILGATE_MODEL, &case.model)
        .env(UTILGATE_PRECISION, &case.precision)
        .env(UTILGATE_PHASE, case.phase.as_str())
        .env(UTILGATE_BATCH, case.batch.to_string())
        .env(UTILGATE_CONTEXT, case.context.to_string())
        .env(UTILGATE_WARMUP_STEPS, spec.warmup_steps.to_string())
        .env(UTILGATE_STEPS, spec.steps.to_string())
        .env(UTILGATE_REPEAT, spec.repeat.to_string());
    command
}

/// How the wait for the harness ended.
enum Ended {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// Polls the harness (1 ms, doubling up to 20 ms) until it exits, the deadline passes or
/// `cancel` is set.
fn wait_for_exit(group: &mut Group, deadline: Instant, cancel: &AtomicBool) -> io::Result<Ended> {
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = group.child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        if cancel.load(Ordering::Relaxed) {
            return Ok(Ended::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(Ended::TimedOut);
        }
        thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(MAX_POLL);
    }
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
                path: out_path,
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
    fn start(child: &mut Child) -> io::Result<Self> {
        let stdout = child
            .stdout
            .take()
            .map(|p| TailReader::spawn(p, 0))
            .transpose()?;
        let stderr = child
            .stderr
            .take()
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

/// The harness's process group. Dropping it without `terminate` kills the group, so no early
/// return leaves a harness running.
struct Group {
    child: Child,
    pgid: Pid,
    done: bool,
}

impl Group {
    fn new(child: Child) -> Self {
        // The child leads its own group (process_group(0)), so its pid is the group id.
        #[expect(
            clippy::cast_possible_wrap,
            reason = "pids are below pid_max (at most 2^22) and fit in i32"
        )]
        let pgid = Pid::from_raw(child.id() as i32);
        Group {
            child,
            pgid,
            done: false,
        }
    }

    /// SIGTERM to the group, up to `TERM_GRACE` for it to exit, then SIGKILL; reaps the leader.
    /// Does nothing but reap when the group is already gone.
    fn terminate(&mut self) {
        // Reap the leader first: an unreaped zombie leader keeps the group "alive" for kill(2).
        let _ = self.child.try_wait();
        if group_alive(self.pgid) {
            let _ = killpg(self.pgid, Signal::SIGTERM);
            if !self.wait_gone(TERM_GRACE) {
                let _ = killpg(self.pgid, Signal::SIGKILL);
                let _ = self.wait_gone(KILL_WAIT);
            }
        }
        // SIGKILL cannot be ignored; if the leader still runs (uninterruptible I/O), block.
        let _ = self.child.wait();
        self.done = true;
    }

    fn wait_gone(&mut self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            let _ = self.child.try_wait();
            if !group_alive(self.pgid) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            thread::sleep(MAX_POLL.min(end - now));
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.done {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = self.child.wait();
        }
    }
}

/// Whether any process of the group is still running. kill(2) counts zombies, and an orphaned
/// grandchild stays a zombie until init reaps it (never, under a container init that does not
/// reap), so on Linux the members are checked in /proc; elsewhere kill(2) decides.
fn group_alive(pgid: Pid) -> bool {
    match kill(Pid::from_raw(-pgid.as_raw()), None) {
        Err(Errno::ESRCH) => false,
        Err(_) => true,
        Ok(()) => live_member_in_proc(pgid).unwrap_or(true),
    }
}

/// `Some(true)` when /proc lists a process of the group that is not a zombie; `None` when /proc
/// cannot be read.
fn live_member_in_proc(pgid: Pid) -> Option<bool> {
    let entries = fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(member) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{member}/stat")) else {
            continue; // exited while we looked
        };
        if let Some((state, pgrp)) = parse_stat(&stat)
            && pgrp == pgid.as_raw()
            && state != 'Z'
            && state != 'X'
        {
            return Some(true);
        }
    }
    Some(false)
}

/// State and process group from `/proc/PID/stat`: "pid (comm) state ppid pgrp ...", where comm
/// may hold spaces and parentheses, so fields are counted after the last ')'.
fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Drains a pipe on its own thread, keeping the last `cap` bytes (none when `cap` is 0).
struct TailReader {
    tail: Arc<Mutex<Tail>>,
    done: Receiver<()>,
    handle: thread::JoinHandle<()>,
}

impl TailReader {
    fn spawn(mut pipe: impl Read + Send + 'static, cap: usize) -> io::Result<Self> {
        let tail = Arc::new(Mutex::new(Tail::new(cap)));
        let (sender, done) = mpsc::channel();
        let shared = Arc::clone(&tail);
        let handle = thread::Builder::new()
            .name("harness-pipe".to_owned())
            .spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match pipe.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => shared
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(&buf[..n]),
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
                let _ = sender.send(());
            })?;
        Ok(TailReader { tail, done, handle })
    }

    /// Waits up to `wait` for the pipe to close (a process that escaped the group may hold it
    /// open: then the thread is left to end with it), and returns the sanitised tail.
    fn finish(self, wait: Duration) -> String {
        if self.done.recv_timeout(wait).is_ok() {
            let _ = self.handle.join();
        }
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        tail.text()
    }
}

/// The last bytes of a stream, in bounded memory.
struct Tail {
    bytes: Vec<u8>,
    cap: usize,
    dropped: bool,
}

impl Tail {
    fn new(cap: usize) -> Self {
        Tail {
            bytes: Vec::new(),
            cap,
            dropped: false,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        if self.cap == 0 {
            return;
        }
        self.bytes.extend_from_slice(chunk);
        // Trim in batches (at twice the cap) so the copy is amortised.
        if self.bytes.len() > 2 * self.cap {
            let cut = self.bytes.len() - self.cap;
            self.bytes.drain(..cut);
            self.dropped = true;
        }
    }

    /// The last `STDERR_TAIL_LINES` lines of the last `cap` bytes, sanitised, without a partial
    /// first line when earlier output was dropped.
    fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(self.cap);
        let dropped = self.dropped || start > 0;
        let mut bytes = &self.bytes[start..];
        if dropped && let Some(newline) = bytes.iter().position(|&b| b == b'\n') {
            bytes = &bytes[newline + 1..];
        }
        let text = crate::redact::redact(&sanitize(&String::from_utf8_lossy(bytes)));
        let lines: Vec<&str> = text.trim_end().lines().collect();
        let keep = lines.len().saturating_sub(STDERR_TAIL_LINES);
        lines[keep..].join("\n")
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;
    use crate::case::Phase;

    fn case() -> CaseKey {
        CaseKey {
            suite: "decode".into(),
            model: "llama-3.1-8b".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch: 8,
            context: 4096,
        }
    }

    struct Env {
        dir: tempfile::TempDir,
        out: tempfile::TempDir,
        /// The guard binary; unit tests run without one (the binary's tests/cli cover it).
        guard: Option<PathBuf>,
    }

    impl Env {
        fn new() -> Self {
            Env {
                dir: tempfile::tempdir().expect("temp dir"),
                out: tempfile::tempdir().expect("temp dir"),
                guard: None,
            }
        }

        fn run_with(
            &self,
            command: &str,
            timeout: Duration,
            extra_env: &[(String, String)],
            cancel: &AtomicBool,
        ) -> Result<RepeatOutput, HarnessError> {
            let case = case();
            let spec = RepeatSpec {
                command,
                cwd: self.dir.path(),
                case: &case,
                warmup_steps: 2,
                steps: 5,
                repeat: 3,
                out_dir: self.out.path(),
                timeout,
                extra_env,
                env_passthrough: &[],
                guard: self.guard.as_deref(),
                step_range: protocol::StepRange::default(),
            };
            run_repeat(&spec, cancel)
        }

        fn run(&self, command: &str) -> Result<RepeatOutput, HarnessError> {
            self.run_with(
                command,
                Duration::from_secs(20),
                &[],
                &AtomicBool::new(false),
            )
        }

        fn read(&self, name: &str) -> String {
            fs::read_to_string(self.dir.path().join(name)).expect("file written by the child")
        }
    }

    /// Whether the process is gone or a zombie (dead, waiting for a reaper we do not control).
    fn dead(pid: i32) -> bool {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => matches!(parse_stat(&stat), Some(('Z' | 'X', _))),
            Err(_) => kill(Pid::from_raw(pid), None) == Err(Errno::ESRCH),
        }
    }

    #[test]
    fn success_separates_warmup_and_counted_steps() {
        let env = Env::new();
        let out = env
            .run(
                r#"printf '{"step_ms": 31.5, "warmup": true}\n{"step_ms": 6.02}\n' >> "$UTILGATE_OUT"
                   printf '{"steps_ms": [6.01, 6.03]}\n{"trace": "t.json"}' >> "$UTILGATE_OUT"
                   echo "loading model" >&2"#,
            )
            .expect("harness succeeds");
        assert_eq!(out.report.warmup_ms, vec![31.5]);
        assert_eq!(out.report.steps_ms, vec![6.02, 6.01, 6.03]);
        assert_eq!(out.report.traces, vec!["t.json".to_owned()]);
        assert_eq!(out.stderr_tail, "loading model");
        assert!(out.wall > Duration::ZERO && out.wall < Duration::from_secs(20));
    }

    #[test]
    fn protocol_variables_reach_the_child_and_win_over_extra_env() {
        let env = Env::new();
        let extra = vec![
            ("MY_FLAG".to_owned(), "on".to_owned()),
            (UTILGATE_REPEAT.to_owned(), "99".to_owned()),
        ];
        let command = r#"printf '{"env": {"protocol": "%s", "out": "%s", "model": "%s", "precision": "%s", "phase": "%s", "batch": "%s", "context": "%s", "warmup": "%s", "steps": "%s", "repeat": "%s", "flag": "%s", "cwd": "%s"}}\n{"step_ms": 1}\n' "$UTILGATE_PROTOCOL" "$UTILGATE_OUT" "$UTILGATE_MODEL" "$UTILGATE_PRECISION" "$UTILGATE_PHASE" "$UTILGATE_BATCH" "$UTILGATE_CONTEXT" "$UTILGATE_WARMUP_STEPS" "$UTILGATE_STEPS" "$UTILGATE_REPEAT" "$MY_FLAG" "$(pwd -P)" >> "$UTILGATE_OUT""#;
        let out = env
            .run_with(
                command,
                Duration::from_secs(20),
                &extra,
                &AtomicBool::new(false),
            )
            .expect("harness succeeds");
        let got = |k: &str| out.report.env.get(k).cloned().unwrap_or_default();
        let results = env.out.path().join("repeat-3.jsonl");
        assert_eq!(got("protocol"), "1");
        assert_eq!(got("out"), results.display().to_string());
        assert_eq!(got("model"), "llama-3.1-8b");
        assert_eq!(got("precision"), "bf16");
        assert_eq!(got("phase"), "decode");
        assert_eq!(got("batch"), "8");
        assert_eq!(got("context"), "4096");
        assert_eq!(got("warmup"), "2");
        assert_eq!(got("steps"), "5");
        assert_eq!(got("repeat"), "3");
        assert_eq!(got("flag"), "on");
        let cwd = env.dir.path().canonicalize().expect("canonical cwd");
        assert_eq!(got("cwd"), cwd.display().to_string());
    }

    #[test]
    fn leftover_results_file_is_not_counted() {
        let env = Env::new();
        fs::write(env.out.path().join("repeat-3.jsonl"), "{\"step_ms\": 99}\n")
            .expect("write leftover");
        let out = env
            .run(r#"printf '{"step_ms": 1}\n' >> "$UTILGATE_OUT""#)
            .expect("harness succeeds");
        assert_eq!(out.report.steps_ms, vec![1.0]);
    }

    #[test]
    fn nonzero_exit_keeps_the_stderr_tail() {
        let env = Env::new();
        let err = env
            .run("echo 'RuntimeError: CUDA out of memory' >&2; exit 3")
            .expect_err("exit 3");
        match &err {
            HarnessError::Exited { code, stderr_tail } => {
                assert_eq!(*code, 3);
                assert_eq!(stderr_tail, "RuntimeError: CUDA out of memory");
            }
            other => panic!("expected Exited, got {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "harness exited with status 3; its stderr ends with:\n  | RuntimeError: CUDA out of memory"
        );
        assert!(err.hint().is_some());
    }

    #[test]
    fn crash_by_signal_is_signalled() {
        let env = Env::new();
        let err = env
            .run("echo 'about to crash' >&2; kill -SEGV $$")
            .expect_err("segfault");
        match &err {
            HarnessError::Signalled {
                signal,
                stderr_tail,
            } => {
                assert_eq!(*signal, Signal::SIGSEGV as i32);
                assert_eq!(stderr_tail, "about to crash");
            }
            other => panic!("expected Signalled, got {other:?}"),
        }
        assert!(err.to_string().starts_with("harness was killed by SIGSEGV"));
    }

    #[test]
    fn signal_reported_by_an_inner_shell_is_signalled() {
        // The inner shell dies of SIGABRT; the outer one exits with 128 + 6.
        let env = Env::new();
        let err = env
            .run("sh -c 'kill -ABRT $$'; exit $?")
            .expect_err("abort");
        assert!(
            matches!(err, HarnessError::Signalled { signal, .. } if signal == Signal::SIGABRT as i32),
            "{err:?}"
        );
    }

    #[test]
    fn timeout_kills_the_whole_group_including_grandchildren() {
        let env = Env::new();
        let started = Instant::now();
        let err = env
            .run_with(
                "echo $$ > pgid; sleep 1000 & echo $! > grandchild; echo waiting >&2; wait",
                Duration::from_secs(1),
                &[],
                &AtomicBool::new(false),
            )
            .expect_err("times out");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        match &err {
            HarnessError::TimedOut {
                timeout,
                stderr_tail,
            } => {
                assert_eq!(*timeout, Duration::from_secs(1));
                assert_eq!(stderr_tail, "waiting");
            }
            other => panic!("expected TimedOut, got {other:?}"),
        }
        assert!(err.to_string().starts_with("harness timed out after 1 s;"));
        let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
        let grandchild: i32 = env.read("grandchild").trim().parse().expect("pid");
        assert!(dead(grandchild), "grandchild {grandchild} survived");
        assert!(!group_alive(Pid::from_raw(pgid)), "group {pgid} survived");
    }

    #[test]
    fn a_harness_ignoring_sigterm_is_killed_after_the_grace_period() {
        let env = Env::new();
        let started = Instant::now();
        let err = env
            .run_with(
                "trap '' TERM; echo $$ > pgid; while :; do sleep 0.05; done",
                Duration::from_millis(200),
                &[],
                &AtomicBool::new(false),
            )
            .expect_err("times out");
        assert!(matches!(err, HarnessError::TimedOut { .. }), "{err:?}");
        let took = started.elapsed();
        assert!(
            took >= TERM_GRACE && took < TERM_GRACE + Duration::from_secs(4),
            "{took:?}"
        );
        let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
        assert!(!group_alive(Pid::from_raw(pgid)));
    }

    #[test]
    fn stragglers_are_terminated_after_a_successful_exit() {
        let env = Env::new();
        let out = env
            .run(
                r#"sleep 1000 > /dev/null 2>&1 & echo $! > straggler; printf '{"step_ms": 2}\n' >> "$UTILGATE_OUT""#,
            )
            .expect("harness succeeds");
        assert_eq!(out.report.steps_ms, vec![2.0]);
        let pid: i32 = env.read("straggler").trim().parse().expect("pid");
        assert!(dead(pid), "straggler {pid} survived");
    }

    #[test]
    fn cancel_flag_stops_the_harness() {
        let env = Env::new();
        let cancel = Arc::new(AtomicBool::new(false));
        let setter = Arc::clone(&cancel);
        let pgid_file = env.dir.path().join("pgid");
        let flip = thread::spawn(move || {
            // Cancel once the harness is surely running (it has written its pgid).
            while fs::read_to_string(&pgid_file).map_or(true, |t| !t.ends_with('\n')) {
                thread::sleep(Duration::from_millis(10));
            }
            setter.store(true, Ordering::Relaxed);
        });
        let started = Instant::now();
        let err = env
            .run_with(
                "echo $$ > pgid; sleep 1000",
                Duration::from_secs(60),
                &[],
                &cancel,
            )
            .expect_err("cancelled");
        flip.join().expect("flag thread");
        assert!(matches!(err, HarnessError::Cancelled), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        let pgid: i32 = env.read("pgid").trim().parse().expect("pgid");
        assert!(!group_alive(Pid::from_raw(pgid)));
    }

    #[test]
    fn cancel_before_start_runs_nothing() {
        let env = Env::new();
        let err = env
            .run_with(
                "touch started",
                Duration::from_secs(5),
                &[],
                &AtomicBool::new(true),
            )
            .expect_err("cancelled");
        assert!(matches!(err, HarnessError::Cancelled), "{err:?}");
        assert!(!env.dir.path().join("started").exists());
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(seconds(Duration::from_secs(600)), "600 s");
        assert_eq!(seconds(Duration::from_millis(1500)), "1.5 s");
    }

    #[test]
    fn missing_program_is_named() {
        let env = Env::new();
        let err = env
            .run("CUDA_VISIBLE_DEVICES=0 utilgate-no-such-harness --model x")
            .expect_err("not found");
        match &err {
            HarnessError::NotFound {
                program,
                stderr_tail,
            } => {
                assert_eq!(program, "utilgate-no-such-harness");
                assert!(stderr_tail.contains("not found"), "{stderr_tail}");
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
        assert!(err.hint().expect("hint").contains("`command`"));
    }

    #[test]
    fn non_executable_program_is_named() {
        let env = Env::new();
        let script = env.dir.path().join("bench.sh");
        fs::write(&script, "#!/bin/sh\nexit 0\n").expect("write script");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o644)).expect("chmod");
        let err = env.run("./bench.sh --batch 8").expect_err("not executable");
        assert!(
            matches!(&err, HarnessError::NotExecutable { program, .. } if program == "./bench.sh"),
            "{err:?}"
        );
    }

    #[test]
    fn missing_working_directory_is_an_io_error_naming_it() {
        let env = Env::new();
        let case = case();
        let cwd = env.dir.path().join("nope");
        let spec = RepeatSpec {
            command: "true",
            cwd: &cwd,
            case: &case,
            warmup_steps: 0,
            steps: 1,
            repeat: 0,
            out_dir: env.out.path(),
            timeout: Duration::from_secs(5),
            extra_env: &[],
            env_passthrough: &[],
            guard: None,
            step_range: protocol::StepRange::default(),
        };
        let err = run_repeat(&spec, &AtomicBool::new(false)).expect_err("no cwd");
        assert!(
            matches!(&err, HarnessError::Io { path, .. } if *path == cwd),
            "{err:?}"
        );
    }

    #[test]
    fn huge_output_stays_bounded_and_does_not_block() {
        let env = Env::new();
        let out = env
            .run(
                r#"yes 'stdout chatter' | head -c 5000000
                   yes 'progress line on stderr' | head -n 800000 >&2
                   echo 'last words' >&2
                   printf '{"step_ms": 1.5}\n' >> "$UTILGATE_OUT""#,
            )
            .expect("harness succeeds");
        assert_eq!(out.report.steps_ms, vec![1.5]);
        assert!(out.stderr_tail.len() <= STDERR_TAIL_BYTES);
        let lines: Vec<&str> = out.stderr_tail.lines().collect();
        assert_eq!(lines.len(), STDERR_TAIL_LINES);
        assert_eq!(lines.last(), Some(&"last words"));
        assert!(
            lines[..lines.len() - 1]
                .iter()
                .all(|l| *l == "progress line on stderr")
        );
    }

    #[test]
    fn stderr_tail_is_sanitised() {
        let env = Env::new();
        let err = env
            .run(r"printf '\033[31mError\033[0m: \033]0;pwned\007bad\n' >&2; exit 1")
            .expect_err("exit 1");
        assert_eq!(err.stderr_tail(), Some("Error: bad"));
    }

    #[test]
    fn no_counted_steps_is_an_error() {
        let env = Env::new();
        let err = env.run("echo 'done' >&2").expect_err("no file");
        assert!(
            matches!(&err, HarnessError::NoSteps { file_missing: true, stderr_tail, .. } if stderr_tail == "done"),
            "{err:?}"
        );
        assert!(err.hint().expect("hint").contains("$UTILGATE_OUT"));

        let err = env
            .run(r#"printf '{"step_ms": 9, "warmup": true}\n{"env": {"torch": "2.5.1"}}\n' >> "$UTILGATE_OUT""#)
            .expect_err("only warm-up");
        assert!(
            matches!(
                &err,
                HarnessError::NoSteps {
                    file_missing: false,
                    warmup_steps: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.hint().expect("hint").contains("warmup"));
    }

    #[test]
    fn garbage_line_reports_its_line_number() {
        let env = Env::new();
        let err = env
            .run(r#"printf '{"step_ms": 1}\n\n{"step_ms": NaN}\n' >> "$UTILGATE_OUT""#)
            .expect_err("NaN");
        match &err {
            HarnessError::Protocol { path, source } => {
                assert_eq!(*path, env.out.path().join("repeat-3.jsonl"));
                assert_eq!(source.line, 3);
            }
            other => panic!("expected Protocol, got {other:?}"),
        }
        let message = err.to_string();
        assert!(message.contains("line 3: step_ms is NaN"), "{message}");
    }

    #[test]
    fn program_name_skips_assignments_and_quotes() {
        let cases = [
            ("python3 bench.py --x 1", "python3"),
            ("A=1 B_2=x ./run.sh", "./run.sh"),
            ("exec env 'my prog'", "my"),
            ("\"/opt/bench\" --y", "/opt/bench"),
            ("", ""),
        ];
        for (command, expected) in cases {
            assert_eq!(program_name(command), expected, "{command:?}");
        }
    }

    #[test]
    fn tail_keeps_the_end_in_bounded_memory() {
        let mut tail = Tail::new(64);
        for i in 0..10_000 {
            tail.push(format!("line {i}\n").as_bytes());
            assert!(tail.bytes.len() <= 2 * 64 + 16);
        }
        let text = tail.text();
        assert!(text.len() <= 64);
        assert!(text.ends_with("line 9999"));
        // The partial first line is dropped.
        assert!(text.lines().all(|l| l.starts_with("line ")), "{text}");

        let mut silent = Tail::new(0);
        silent.push(b"anything");
        assert_eq!(silent.text(), "");
    }

    #[test]
    fn stat_lines_with_odd_names_parse() {
        assert_eq!(
            parse_stat("123 (python3 (x) y) S 1 123 123 0 -1"),
            Some(('S', 123))
        );
        assert_eq!(parse_stat("garbage"), None);
    }
}
