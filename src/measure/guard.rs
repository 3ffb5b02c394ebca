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
//! - It blocks until the shell exits or it is told to stop (a reaper thread waits in
//!   `waitpid(2)`, the signal handler sends on the same channel): it never polls.
//! - When the shell exits, the guard terminates what it left behind (SIGTERM, a grace period,
//!   SIGKILL) and exits with the shell's status (a signal N as 128 + N, as `sh` reports it).
//!   Where a scope holds the harness, what is left is what the scope holds; only without one
//!   does the guard look through /proc for its adopted orphans and its process group.
//!
//! `run` guards one repeat (the guard of a repeat the run's guard cannot serve); `server` is the
//! guard of a whole run, which starts every repeat's shell on request (`wire`).

#![expect(
    clippy::disallowed_methods,
    reason = "the guard reads /proc and its cgroup to find leftovers"
)]

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getpgrp, getpid, getppid};

use crate::measure::cgroup;

pub(crate) mod server;
pub(crate) mod wire;

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
    let (events, next) = mpsc::channel();
    {
        let events = events.clone();
        // SIGTERM (from the runner's timeout or the parent-death signal), SIGINT and SIGHUP.
        let _ = ctrlc::set_handler(move || {
            let _ = events.send(Event::Stop);
        });
    }
    let shell = match start_shell(scope, command) {
        Ok(pid) => pid,
        Err(err) => {
            sanitized_note(&format!("utilgate guard: failed to start sh: {err}"));
            return 126;
        }
    };
    let status = wait_shell(shell, events, &next);
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
    #[expect(
        clippy::disallowed_methods,
        reason = "the guard is the edge that starts the harness shell"
    )]
    let mut shell = Command::new("sh");
    shell.arg("-c").arg(command).stdin(Stdio::null());
    spawn_in_scope(scope, shell)
}

/// Starts `shell` born inside `scope` when there is one (enter, fork, leave: before it can
/// fork), with SIGKILL as its parent-death signal; returns its pid. The guard of one repeat
/// and the guard of a run ([`server`]) both start their shells here.
fn spawn_in_scope(scope: Option<&Path>, mut shell: Command) -> std::io::Result<Pid> {
    if let Some(dir) = scope {
        cgroup::enter(dir, 0)?;
    }
    die_with_parent(&mut shell);
    let spawned = shell.spawn();
    if let Some(parent) = scope.and_then(Path::parent) {
        let _ = cgroup::enter(parent, 0);
    }
    let child = spawned?;
    // Reaped with waitpid(-1): a guard reaps every orphan it adopts, the shell too.
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

/// What the guard waits for.
enum Event {
    /// The shell exited with this status.
    Shell(i32),
    /// SIGTERM, SIGINT or SIGHUP: stop now.
    Stop,
    /// No child is left to wait for (the shell's status is unknown).
    Lost,
}

/// Blocks until the shell exits (its status) or the guard is told to stop (`None`). A reaper
/// thread waits in `waitpid(-1)`, reaping every orphan the guard adopts meanwhile, and sends the
/// shell's status on the channel the signal handler sends `Stop` on.
fn wait_shell(shell: Pid, events: Sender<Event>, next: &Receiver<Event>) -> Option<i32> {
    let reaper = thread::Builder::new()
        .name("guard-reaper".to_owned())
        .spawn(move || {
            let _ = events.send(reap_until(shell));
        });
    if reaper.is_err() {
        // No thread to block in: reap without blocking between waits for a stop.
        loop {
            if let Some(status) = reap(Some(shell)) {
                return Some(status);
            }
            match next.recv_timeout(Duration::from_millis(5)) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(_) | Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
    match next.recv() {
        Ok(Event::Shell(status)) => Some(status),
        Ok(Event::Stop | Event::Lost) | Err(_) => None,
    }
}

/// Blocks in `waitpid(-1)`, reaping every child, until the shell is among them.
fn reap_until(shell: Pid) -> Event {
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == shell => return Event::Shell(code),
            Ok(WaitStatus::Signaled(pid, signal, _)) if pid == shell => {
                return Event::Shell(128 + signal as i32);
            }
            Ok(_) | Err(Errno::EINTR) => {}
            Err(_) => return Event::Lost,
        }
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
    terminate_leftovers_of(scope, getpgrp());
}

/// [`terminate_leftovers`] for a harness whose process group is `group` (the guard of a whole
/// run starts each shell in a group of its own).
fn terminate_leftovers_of(scope: Option<&Path>, group: Pid) {
    let end = Instant::now() + GUARD_GRACE;
    let mut signal = Signal::SIGTERM;
    loop {
        let _ = reap(None);
        let left = leftovers_in_group(scope, Path::new("/proc"), group);
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

/// The live processes the guard is responsible for, without itself, with /proc at `proc`. A
/// scope holds every process the shell started, whatever it did (`setsid`, a double fork), so
/// its `cgroup.procs` is the whole answer; only without one are the guard's adopted orphans and
/// its process group looked for in `proc`.
#[cfg(test)]
fn leftovers_in(scope: Option<&Path>, proc: &Path) -> Vec<Pid> {
    leftovers_in_group(scope, proc, getpgrp())
}

/// The live processes the guard is responsible for, without itself: [`leftovers_in`] for a
/// harness whose process group is `group`.
fn leftovers_in_group(scope: Option<&Path>, proc: &Path, group: Pid) -> Vec<Pid> {
    let me = getpid();
    let mut pids = match scope {
        Some(dir) => cgroup::members(dir),
        None => ours_in_proc(proc, me, group),
    };
    pids.retain(|p| *p != me && !matches!(kill(*p, None), Err(Errno::ESRCH)));
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// The live processes in `proc` whose parent is `me` or whose process group is `group`.
fn ours_in_proc(proc: &Path, me: Pid, group: Pid) -> Vec<Pid> {
    let mut pids = Vec::new();
    let Ok(entries) = fs::read_dir(proc) else {
        return pids;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
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

    /// A live child process, killed and reaped on drop.
    struct Sleeper(std::process::Child);

    impl Sleeper {
        fn start() -> Self {
            #[expect(clippy::disallowed_methods, reason = "test: a real child process")]
            let child = Command::new("sleep")
                .arg("1000")
                .spawn()
                .expect("sleep starts");
            Sleeper(child)
        }

        fn pid(&self) -> Pid {
            Pid::from_raw(i32::try_from(self.0.id()).expect("pid fits"))
        }
    }

    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_scope_is_the_whole_answer_and_proc_is_read_only_without_one() {
        let (in_scope, in_proc) = (Sleeper::start(), Sleeper::start());
        // A scope that holds one live process, and a /proc that lists another as the guard's
        // adopted child.
        let scope = tempfile::tempdir().expect("scope");
        fs::write(
            scope.path().join("cgroup.procs"),
            format!("{}\n", in_scope.pid()),
        )
        .expect("cgroup.procs");
        let proc = tempfile::tempdir().expect("proc");
        let entry = proc.path().join(in_proc.pid().to_string());
        fs::create_dir(&entry).expect("proc entry");
        fs::write(
            entry.join("stat"),
            format!(
                "{} (sleep) S {} {} 0 -1",
                in_proc.pid(),
                getpid(),
                in_proc.pid()
            ),
        )
        .expect("stat");
        assert_eq!(
            leftovers_in(Some(scope.path()), proc.path()),
            vec![in_scope.pid()]
        );
        assert_eq!(leftovers_in(None, proc.path()), vec![in_proc.pid()]);
    }
}
