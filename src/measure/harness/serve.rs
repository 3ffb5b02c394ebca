//! Runs one repeat of a service case: the suite's command (the user's load generator, often
//! with the server's start, readiness wait and shutdown around it) in its own process group,
//! with the service variables set, and returns the path of the result file it wrote. I/O: child
//! processes, pipes and signals, through the same machinery as a step-time repeat (timeout and
//! cancellation reach the whole group; stdout is drained; a bounded stderr tail is kept).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{GroupSteps, HarnessError, Launch, Shell, check_cwd, run_group, shell_command};
use crate::measure::cgroup;

const LOAD_GENERATOR_STEPS: GroupSteps = GroupSteps {
    start: "failed to start the load generator (sh -c) in",
    pipes: "failed to start a reader thread for the load generator in",
    wait: "failed to wait for the load generator in",
};

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
    /// Credential variables the load generator keeps; every other one of
    /// `redact::CREDENTIAL_VARS` is removed from its environment, as for a step harness.
    pub env_passthrough: &'a [String],
    /// The utilgate binary, started as `utilgate harness guard` around the shell, so that no
    /// process of the command (a server it started included) outlives the repeat or utilgate.
    pub guard: Option<&'a Path>,
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
    // A cgroup v2 scope holds every process of the repeat where the machine allows one.
    let scope = spec.guard.and_then(|_| cgroup::Scope::create());
    let mut command = shell_command(&Shell {
        command: spec.command,
        cwd: spec.cwd,
        env_passthrough: spec.env_passthrough,
        extra_env: spec.extra_env,
    });
    for (name, value) in &spec.vars {
        command.env(name, value);
    }
    command
        .env(UTILGATE_RESULT_FILE, spec.result_file)
        .env(super::UTILGATE_MODEL, spec.model)
        .env(super::UTILGATE_REPEAT, spec.repeat.to_string());
    let start = Instant::now();
    let stderr_tail = run_group(
        Launch {
            shell: command,
            guard: spec.guard,
            scope,
            stdout: None,
        },
        &LOAD_GENERATOR_STEPS,
        (spec.command, spec.cwd),
        (start, spec.timeout),
        cancel,
    )?;
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
