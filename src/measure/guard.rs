//! The harness guard: a small process (`utilgate harness guard`, hidden) that utilgate starts in
//! place of `sh -c COMMAND`, so that no harness process outlives its repeat or utilgate itself.
//! I/O: processes, signals, /proc and the cgroup file system.
//!
//! - It asks the kernel for SIGTERM when utilgate dies (`PR_SET_PDEATHSIG`), even by SIGKILL,
//!   and then kills the harness; a guard whose utilgate is already gone exits at once. The shell
//!   it starts asks for SIGKILL when the guard dies, so a guard killed outright (with utilgate,
//!   as a CI runner kills a cancelled job) does not leave the shell running as an orphan.
//! - It is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so a harness process that double-forks
//!   and calls `setsid` to leave the process group is re-parented to the guard, not to init,
//!   and is still found and killed.
//! - Where utilgate made a cgroup v2 scope for the repeat, the guard starts the shell inside it
//!   (and steps back out itself), so the scope holds every harness process whatever it does.
//! - When the shell exits, the guard terminates what it left behind (SIGTERM, a grace period,
//!   SIGKILL) and exits with the shell's status (a signal N as 128 + N, as `sh` reports it).

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use crate::measure::cgroup;

/// How long what the harness left behind has to exit after SIGTERM. Shorter than the runner's
/// own grace period, so the guard finishes its sweep before the runner escalates.
const GUARD_GRACE: Duration = Duration::from_millis(1500);
/// The exit status when the guard was stopped before the shell exited (128 + SIGTERM).
const STOPPED_STATUS: i32 = 128 + 15;
/// The exit status when utilgate was gone before the guard could start the harness.
pub const ORPHANED_STATUS: i32 = 125;

/// Runs `sh -c command` under guard and returns the status to exit with.
#[must_use]
pub fn run(parent: u32, scope: Option<&Path>, command: &str) -> i32 {
    // Ask first, then check: utilgate may have died between fork and this call.
    let _ = prctl::set_pdeathsig(Signal::SIGTERM);
    if u32::try_from(getppid().as_raw()).ok() != Some(parent) {
        return ORPHANED_STATUS;
    }
    let _ = prctl::set_child_subreaper(true);
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        // SIGTERM (from the runner's timeout or the parent-death signal), SIGINT and SIGHUP.
        let _ = ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst));
    }
    let shell = match start_shell(scope, command) {
        Ok(pid) => pid,
        Err(err) => {
            sanitized_note(&format!("utilgate guard: failed to start sh: {err}"));
            return 126;
        }
    };
    let status = wait_shell(shell, &stop);
    terminate_leftovers(scope);
    status.unwrap_or(STOPPED_STATUS)
}

#[expect(
    clippy::print_stderr,
    reason = "the guard's only way to say why it failed"
)]
fn sanitized_note(text: &str) {
    eprintln!("{}", crate::redact::redact(text));
}

/// Starts the shell, inside the scope when there is one; returns its pid.
fn start_shell(scope: Option<&Path>, command: &str) -> std::io::Result<Pid> {
    if let Some(dir) = scope {
        // Enter, fork, leave: the shell is born inside the scope, before it can fork.
        cgroup::enter(dir, 0)?;
    }
    #[expect(
        clippy::disallowed_methods,
        reason = "the guard is the edge that starts the harness shell"
    )]
    let mut shell = Command::new("sh");
    shell.arg("-c").arg(command).stdin(Stdio::null());
    die_with_parent(&mut shell);
    let spawned = shell.spawn();
    if let Some(parent) = scope.and_then(Path::parent) {
        let _ = cgroup::enter(parent, 0);
    }
    let child = spawned?;
    // Reaped below with waitpid(-1): the guard reaps every orphan it adopts, the shell too.
    #[expect(
        clippy::cast_possible_wrap,
        reason = "pids are below pid_max (at most 2^22) and fit in i32"
    )]
    Ok(Pid::from_raw(child.id() as i32))
}

/// The child gets SIGKILL when the guard dies (`PR_SET_PDEATHSIG`, kept across `exec`).
fn die_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    let guard = getpid();
    #[expect(
        unsafe_code,
        reason = "pre_exec runs between fork and exec; prctl and getppid are async-signal-safe \
                  and the closure allocates nothing"
    )]
    // SAFETY: the closure only calls prctl(2) and getppid(2), both async-signal-safe, and
    // touches no lock or allocation of the parent.
    unsafe {
        command.pre_exec(move || {
            prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            // The guard may have died before the request: then nothing would ever signal us.
            if getppid() != guard {
                return Err(std::io::Error::other("the guard is gone"));
            }
            Ok(())
        });
    }
}

/// Reaps children until the shell exits (its status) or the guard is told to stop (`None`).
fn wait_shell(shell: Pid, stop: &AtomicBool) -> Option<i32> {
    loop {
        if let Some(status) = reap(Some(shell)) {
            return Some(status);
        }
        if stop.load(Ordering::SeqCst) {
            return None;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps every exited child without blocking; returns the status of `shell` if it was among
/// them.
fn reap(shell: Option<Pid>) -> Option<i32> {
    let mut found = None;
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => {
                if Some(pid) == shell {
                    found = Some(code);
                }
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) => {
                if Some(pid) == shell {
                    found = Some(128 + signal as i32);
                }
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return found,
            Ok(_) => {}
        }
    }
}

/// SIGTERM to everything the harness left (the scope, the process group, adopted orphans),
/// up to `GUARD_GRACE` for it to exit, then SIGKILL.
fn terminate_leftovers(scope: Option<&Path>) {
    let end = Instant::now() + GUARD_GRACE;
    let mut signal = Signal::SIGTERM;
    loop {
        let _ = reap(None);
        let left = leftovers(scope);
        if left.is_empty() {
            return;
        }
        for pid in &left {
            let _ = kill(*pid, signal);
        }
        if signal == Signal::SIGKILL {
            if let Some(dir) = scope {
                cgroup::kill_scope(dir, Duration::from_millis(500));
            }
            if Instant::now() >= end + GUARD_GRACE {
                return;
            }
        } else if Instant::now() >= end {
            signal = Signal::SIGKILL;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The live processes the guard is responsible for, without itself.
fn leftovers(scope: Option<&Path>) -> Vec<Pid> {
    let me = getpid();
    let group = getpgrp();
    let mut pids: Vec<Pid> = scope.map(cgroup::members).unwrap_or_default();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let Some((state, ppid, pgrp)) = stat_fields(&stat)
                && state != 'Z'
                && state != 'X'
                && (ppid == me.as_raw() || pgrp == group.as_raw())
            {
                pids.push(Pid::from_raw(pid));
            }
        }
    }
    pids.retain(|p| *p != me && !matches!(kill(*p, None), Err(Errno::ESRCH)));
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// State, parent and process group from `/proc/PID/stat` ("pid (comm) state ppid pgrp ...";
/// comm may hold spaces and parentheses, so fields are counted after the last ')').
fn stat_fields(stat: &str) -> Option<(char, i32, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_parse_odd_names() {
        assert_eq!(
            stat_fields("123 (py (x) y) S 77 123 123 0 -1"),
            Some(('S', 77, 123))
        );
        assert_eq!(stat_fields("garbage"), None);
    }
}
