//! Runs one repeat of a service case: the suite's command (the user's load generator, often
//! with the server's start, readiness wait and shutdown around it) in its own process group,
//! with the service variables set, and returns the path of the result file it wrote. I/O: child
//! processes, pipes and signals, through the same machinery as a step-time repeat (timeout and
//! cancellation reach the whole group; stdout is drained; a bounded stderr tail is kept).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt;

use super::{Ended, Group, HarnessError, Pipes, check_cwd, check_status, wait_for_exit};

/// The result file the load generator writes (`--save-result --result-filename`, `SGLang`'s
/// `--output-file`).
pub const UTILGATE_RESULT_FILE: &str = "UTILGATE_RESULT_FILE";
pub const UTILGATE_REQUEST_RATE: &str = "UTILGATE_REQUEST_RATE";
pub const UTILGATE_MAX_CONCURRENCY: &str = "UTILGATE_MAX_CONCURRENCY";
pub const UTILGATE_INPUT_LEN: &str = "UTILGATE_INPUT_LEN";
pub const UTILGATE_OUTPUT_LEN: &str = "UTILGATE_OUTPUT_LEN";
pub const UTILGATE_NUM_PROMPTS: &str = "UTILGATE_NUM_PROMPTS";
pub const UTILGATE_SEED: &str = "UTILGATE_SEED";

/// One service repeat to run.
#[derive(Debug, Clone)]
pub struct ServeRepeatSpec<'a> {
    /// The rendered command.
    pub command: &'a str,
    pub cwd: &'a Path,
    /// The service variables (name, value), set after `extra_env` so they win.
    pub vars: Vec<(&'static str, String)>,
    pub repeat: u32,
    pub model: &'a str,
    pub result_file: &'a Path,
    pub timeout: Duration,
    pub extra_env: &'a [(String, String)],
}

/// What a successful service repeat left behind.
#[derive(Debug, Clone)]
pub struct ServeRepeatOutput {
    pub result_file: PathBuf,
    pub stderr_tail: String,
}

/// Runs the command and waits for it (bounded by the timeout); a missing result file is an
/// error with the stderr tail.
pub fn run_serve_repeat(
    spec: &ServeRepeatSpec<'_>,
    cancel: &AtomicBool,
) -> Result<ServeRepeatOutput, HarnessError> {
    check_cwd(spec.cwd)?;
    if cancel.load(Ordering::Relaxed) {
        return Err(HarnessError::Cancelled);
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the harness runner is the edge that starts processes"
    )]
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(spec.command)
        .current_dir(spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .env_remove("GITHUB_TOKEN");
    for (name, value) in spec.extra_env {
        command.env(name, value);
    }
    for (name, value) in &spec.vars {
        command.env(name, value);
    }
    command
        .env(UTILGATE_RESULT_FILE, spec.result_file)
        .env(super::UTILGATE_MODEL, spec.model)
        .env(super::UTILGATE_REPEAT, spec.repeat.to_string());
    let io_err = |action: &'static str| {
        move |source| HarnessError::Io {
            action,
            path: spec.cwd.to_path_buf(),
            source,
        }
    };
    let start = Instant::now();
    let child = command
        .spawn()
        .map_err(io_err("failed to start the load generator (sh -c) in"))?;
    let mut group = Group::new(child);
    let pipes = Pipes::start(&mut group.child).map_err(io_err(
        "failed to start a reader thread for the load generator in",
    ))?;
    let ended = wait_for_exit(&mut group, start + spec.timeout, cancel)
        .map_err(io_err("failed to wait for the load generator in"))?;
    group.terminate();
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
    if !spec.result_file.is_file() {
        return Err(HarnessError::Io {
            action: "the load generator exited without writing its result file",
            path: spec.result_file.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!(
                    "pass --save-result --result-filename \"${UTILGATE_RESULT_FILE}\" (vLLM) or \
                     --output-file \"${UTILGATE_RESULT_FILE}\" (SGLang); stderr tail:\n{stderr_tail}"
                ),
            ),
        });
    }
    Ok(ServeRepeatOutput {
        result_file: spec.result_file.to_path_buf(),
        stderr_tail,
    })
}
