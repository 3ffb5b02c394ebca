//! The harness's process group and its stderr tail reader: starting, watching and ending a
//! harness process and everything it spawned. I/O.

#![expect(
    clippy::disallowed_methods,
    reason = "a child's state is read from /proc"
)]

use super::KILL_WAIT;
use super::MAX_POLL;
use super::STDERR_TAIL_LINES;
use super::TERM_GRACE;
use super::guarded::Remote;
use crate::measure::protocol::sanitize;
use nix::errno::Errno;
use nix::sys::signal::Signal;
use nix::sys::signal::kill;
use nix::sys::signal::killpg;
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use std::fs;
use std::io;
use std::io::Read;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::mpsc;
use std::sync::mpsc::Receiver;
use std::thread;
use std::time::Duration;
use std::time::Instant;

/// The leader of the harness's process group: a child of utilgate (`sh -c`, or a guard of its
/// own around it), or a shell the run's guard started (`guarded`).
pub(super) enum Leader {
    Local(Child),
    Remote(Remote),
}

impl Leader {
    /// Its status once it has exited (for a remote shell: once the guard reported its repeat
    /// done), without blocking.
    pub(super) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Leader::Local(child) => child.try_wait(),
            Leader::Remote(remote) => Ok(remote.try_wait()),
        }
    }

    /// Blocks until it has exited and been reaped (bounded for a remote shell).
    fn wait(&mut self) {
        match self {
            Leader::Local(child) => {
                let _ = child.wait();
            }
            Leader::Remote(remote) => remote.wait(),
        }
    }

    /// Asks the run's guard to end a remote shell's repeat (nothing for a local child: its
    /// group is signalled).
    fn stop(&mut self) {
        if let Leader::Remote(remote) = self {
            remote.stop();
        }
    }

    /// Its stdout and stderr pipes, for the reader threads.
    pub(super) fn take_pipes(&mut self) -> (Option<PipeOut>, Option<PipeOut>) {
        match self {
            Leader::Local(child) => (
                child.stdout.take().map(|p| Box::new(p) as PipeOut),
                child.stderr.take().map(|p| Box::new(p) as PipeOut),
            ),
            Leader::Remote(remote) => (
                remote.stdout.take().map(|p| Box::new(p) as PipeOut),
                remote.stderr.take().map(|p| Box::new(p) as PipeOut),
            ),
        }
    }
}

/// The reading end of one of the harness's output pipes.
pub(super) type PipeOut = Box<dyn Read + Send>;

/// The harness's process group. Dropping it without `terminate` kills the group, so no early
/// return leaves a harness running.
pub(super) struct Group {
    pub(super) leader: Leader,
    pub(super) pgid: Pid,
    pub(super) done: bool,
}

impl Group {
    pub(super) fn new(leader: Leader) -> Self {
        // The leader leads its own group (process_group(0)), so its pid is the group id.
        #[expect(
            clippy::cast_possible_wrap,
            reason = "pids are below pid_max (at most 2^22) and fit in i32"
        )]
        let pgid = match &leader {
            Leader::Local(child) => Pid::from_raw(child.id() as i32),
            Leader::Remote(remote) => remote.pid(),
        };
        Group {
            leader,
            pgid,
            done: false,
        }
    }

    /// SIGTERM to the group, up to `TERM_GRACE` for it to exit, then SIGKILL; reaps the leader.
    /// Does nothing but reap when the group is already gone. A remote shell's guard is told to
    /// stop the repeat too (its scope, or the orphans it adopted, beside the group).
    pub(super) fn terminate(&mut self) {
        // Reap the leader first: an unreaped zombie leader keeps the group "alive" for kill(2).
        let _ = self.leader.try_wait();
        self.leader.stop();
        if group_alive(self.pgid) {
            let _ = killpg(self.pgid, Signal::SIGTERM);
            if !self.wait_gone(TERM_GRACE) {
                let _ = killpg(self.pgid, Signal::SIGKILL);
                let _ = self.wait_gone(KILL_WAIT);
            }
        }
        // SIGKILL cannot be ignored; if the leader still runs (uninterruptible I/O), block.
        self.leader.wait();
        self.done = true;
    }

    pub(super) fn wait_gone(&mut self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        loop {
            let _ = self.leader.try_wait();
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

/// A receiver that gets `()` once the child `pid` has exited, from a thread blocked in
/// `waitid(WEXITED | WNOWAIT)`: the child is left unreaped for `Child::try_wait`, so its
/// status and pid stay the caller's. `None` when no thread could be started.
pub(super) fn exit_notice(pid: Pid) -> Option<Receiver<()>> {
    let (sender, notice) = mpsc::channel();
    thread::Builder::new()
        .name("harness-wait".to_owned())
        .spawn(move || {
            loop {
                match waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT) {
                    Err(Errno::EINTR) => {}
                    Ok(_) => {
                        let _ = sender.send(());
                        return;
                    }
                    // Reaped already (ECHILD): the caller's next `try_wait` says so.
                    Err(_) => return,
                }
            }
        })
        .ok()?;
    Some(notice)
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.done {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            self.leader.stop();
            self.leader.wait();
        }
    }
}

/// Whether any process of the group is still running. kill(2) counts zombies, and an orphaned
/// grandchild stays a zombie until init reaps it (never, under a container init that does not
/// reap), so on Linux the members are checked in /proc; elsewhere kill(2) decides.
pub(super) fn group_alive(pgid: Pid) -> bool {
    match kill(Pid::from_raw(-pgid.as_raw()), None) {
        Err(Errno::ESRCH) => false,
        Err(_) => true,
        Ok(()) => live_member_in_proc(pgid).unwrap_or(true),
    }
}

/// `Some(true)` when /proc lists a process of the group that is not a zombie; `None` when /proc
/// cannot be read.
pub(super) fn live_member_in_proc(pgid: Pid) -> Option<bool> {
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
pub(super) fn parse_stat(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Drains a pipe on its own thread, keeping the last `cap` bytes (none when `cap` is 0).
pub(super) struct TailReader {
    pub(super) tail: Arc<Mutex<Tail>>,
    pub(super) done: Receiver<()>,
    pub(super) handle: thread::JoinHandle<()>,
}

impl TailReader {
    pub(super) fn spawn(mut pipe: impl Read + Send + 'static, cap: usize) -> io::Result<Self> {
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
    pub(super) fn finish(self, wait: Duration) -> String {
        if self.done.recv_timeout(wait).is_ok() {
            let _ = self.handle.join();
        }
        let tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        tail.text()
    }
}

/// The last bytes of a stream, in bounded memory.
pub(super) struct Tail {
    pub(super) bytes: Vec<u8>,
    pub(super) cap: usize,
    pub(super) dropped: bool,
}

impl Tail {
    pub(super) fn new(cap: usize) -> Self {
        Tail {
            bytes: Vec::new(),
            cap,
            dropped: false,
        }
    }

    pub(super) fn push(&mut self, chunk: &[u8]) {
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
    pub(super) fn text(&self) -> String {
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
