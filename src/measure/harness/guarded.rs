//! The runner's side of the guard of a whole run (`measure::guard::server`): starts it once per
//! utilgate process, from a thread that lives as long as utilgate (a parent-death signal follows
//! the thread that forked, not the process), and asks it for each repeat's shell, passing the
//! shell's stdout and stderr as descriptors. Where it cannot serve (it could not start, it died,
//! another repeat holds it) the caller runs the repeat under a guard of its own, as before.
//! I/O: a process, a socket and pipes.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, PipeReader};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::Signal;
use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
use nix::unistd::Pid;

use crate::measure::guard::wire::{self, Reply, Request, Start};

/// The run's guard, started on the first guarded repeat.
static SERVER: Mutex<Option<Server>> = Mutex::new(None);

/// How long the guard may take to say it started a shell.
const START_WAIT: Duration = Duration::from_secs(10);
/// How long the guard may take to finish a repeat it was told to stop (its own grace period
/// and kill, with a margin).
const STOP_WAIT: Duration = Duration::from_secs(8);

/// How long the guard may take to exit once its socket is closed with no repeat running.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// A running guard of a whole run.
struct Server {
    exe: PathBuf,
    /// `None` once closed.
    socket: Option<OwnedFd>,
    child: Child,
}

impl Drop for Server {
    /// A guard dropped is one that failed, or one closed that did not exit in time: SIGKILL (its
    /// shells die with it, by their parent-death signal; each repeat's scope is the caller's to
    /// remove) and reap.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Closes the run's guard, if one was started: its socket closes, it exits (no repeat runs
/// now), and it is reaped here (bounded; then killed).
pub fn close() {
    let mut server = SERVER.lock().unwrap_or_else(PoisonError::into_inner);
    let Some(mut server) = server.take() else {
        return;
    };
    server.socket = None;
    let end = Instant::now() + CLOSE_WAIT;
    while Instant::now() < end {
        match server.child.try_wait() {
            Ok(None) => thread::sleep(Duration::from_millis(1)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
}

/// Starts `exe harness guard --serve` with one end of a socket pair as its stdin.
fn spawn(exe: &Path) -> io::Result<Server> {
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the harness runner is the edge that starts processes"
    )]
    let mut command = Command::new(exe);
    command
        .args(["harness", "guard", "--parent"])
        .arg(std::process::id().to_string())
        .arg("--serve")
        // The guard needs no variable of its own (each shell gets its repeat's environment in
        // the request), and a harness can read its parent's: it holds none of utilgate's.
        .env_clear()
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        // Out of the terminal's process group: Ctrl-C reaches utilgate, which cancels.
        .process_group(0);
    // The guard's parent-death signal fires when the thread that forked it ends, so it is
    // forked by a thread that never ends.
    let (sender, spawned) = mpsc::channel();
    thread::Builder::new()
        .name("guard-keeper".to_owned())
        .spawn(move || {
            let child = command.spawn();
            let started = child.is_ok();
            let _ = sender.send(child);
            drop(command);
            if started {
                loop {
                    thread::park();
                }
            }
        })?;
    let child = spawned
        .recv()
        .map_err(|_| io::Error::other("the guard's keeper thread ended"))??;
    Ok(Server {
        exe: exe.to_path_buf(),
        socket: Some(ours),
        child,
    })
}

/// A repeat's shell, started by the run's guard. The runner holds the guard for as long as the
/// repeat lives.
pub(super) struct Remote {
    server: MutexGuard<'static, Option<Server>>,
    pid: Pid,
    status: Option<ExitStatus>,
    pub(super) stdout: Option<PipeReader>,
    pub(super) stderr: Option<PipeReader>,
}

/// Asks the run's guard (started here on first use) to start `command` (a `sh -c` command with
/// its working directory and environment set) inside `scope`, with `stdout` as its stdout when
/// given (else a pipe, like its stderr). `None` when the guard cannot serve: the caller runs
/// the repeat under a guard of its own.
pub(super) fn start(
    exe: &Path,
    command: &Command,
    scope: Option<&Path>,
    stdout: Option<&File>,
) -> Option<io::Result<Remote>> {
    let mut server = match SERVER.try_lock() {
        Ok(server) => server,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    if server.as_ref().is_some_and(|s| s.exe != exe) {
        *server = None;
    }
    if server.is_none() {
        *server = Some(spawn(exe).ok()?);
    }
    let request = Request::Start(request_for(command, scope)?);
    let (out_reader, out_writer) = match stdout {
        Some(file) => match file.try_clone() {
            Ok(file) => (None, OwnedFd::from(file)),
            Err(err) => return Some(Err(err)),
        },
        None => match io::pipe() {
            Ok((reader, writer)) => (Some(reader), OwnedFd::from(writer)),
            Err(err) => return Some(Err(err)),
        },
    };
    let (err_reader, err_writer) = match io::pipe() {
        Ok(pipe) => pipe,
        Err(err) => return Some(Err(err)),
    };
    let sent = server
        .as_ref()
        .and_then(|s| s.socket.as_ref())
        .map(|socket| {
            wire::send(
                socket.as_fd(),
                &request.encode(),
                &[out_writer.as_fd(), err_writer.as_fd()],
            )
        });
    // The shell holds the write ends now: the pipes close when it and its children are done.
    drop((out_writer, err_writer));
    if !matches!(sent, Some(Ok(()))) {
        *server = None;
        return None;
    }
    match receive(server.as_ref(), START_WAIT) {
        Ok(Some(Reply::Started(pid))) => Some(Ok(Remote {
            server,
            pid: Pid::from_raw(pid),
            status: None,
            stdout: out_reader,
            stderr: Some(err_reader),
        })),
        Ok(Some(Reply::Failed(why))) => Some(Err(io::Error::other(why))),
        // No answer, a wrong one, or the guard is gone: a guard of the repeat's own.
        Ok(_) | Err(_) => {
            *server = None;
            None
        }
    }
}

/// The start request for a `sh -c` command: its working directory, its command line and its
/// whole environment (this process's with the command's changes applied, as a spawn would).
fn request_for(command: &Command, scope: Option<&Path>) -> Option<Start> {
    let cwd = command.get_current_dir()?.to_path_buf();
    let line = command.get_args().last()?.to_os_string();
    // The harness inherits this process's environment, as a spawn gives it.
    let mut env: BTreeMap<OsString, OsString> = std::env::vars_os().collect();
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => env.insert(name.to_os_string(), value.to_os_string()),
            None => env.remove(name),
        };
    }
    Some(Start {
        scope: scope.map(Path::to_path_buf),
        cwd,
        command: line,
        env: env.into_iter().collect(),
    })
}

/// Waits up to `wait` for the guard's next message; `Ok(None)` when none came in time.
fn receive(server: Option<&Server>, wait: Duration) -> io::Result<Option<Reply>> {
    let Some(socket) = server.and_then(|s| s.socket.as_ref()) else {
        return Err(io::Error::other("the guard is gone"));
    };
    let mut fds = [PollFd::new(socket.as_fd(), PollFlags::POLLIN)];
    let timeout = PollTimeout::try_from(wait).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, timeout) {
        Ok(0) | Err(nix::errno::Errno::EINTR) => return Ok(None),
        Ok(_) => {}
        Err(err) => return Err(err.into()),
    }
    let mut buf = [0u8; 4096];
    let (len, _) = wire::recv(socket.as_fd(), &mut buf)?;
    if len == 0 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the guard is gone",
        ));
    }
    Ok(Reply::decode(&buf[..len]))
}

impl Remote {
    /// The shell's pid (it leads its own process group).
    pub(super) fn pid(&self) -> Pid {
        self.pid
    }

    /// The shell's status once the guard reported the repeat done (the shell exited and what
    /// it left behind is gone), without blocking.
    pub(super) fn try_wait(&mut self) -> Option<ExitStatus> {
        self.block(Duration::ZERO);
        self.status
    }

    /// Blocks up to `limit` for the guard to report the repeat done.
    pub(super) fn block(&mut self, limit: Duration) {
        if self.status.is_some() {
            return;
        }
        match receive(self.server.as_ref(), limit) {
            Ok(Some(Reply::Done(code))) => {
                // As the guard of one repeat exits with it: 0..=255, a signal as 128 + N.
                self.status = Some(ExitStatus::from_raw((code & 0xff) << 8));
            }
            Ok(_) => {}
            Err(_) => self.lost(),
        }
    }

    /// Tells the guard to terminate the repeat now (its status comes as `Done`).
    pub(super) fn stop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let sent = self
            .server
            .as_ref()
            .and_then(|s| s.socket.as_ref())
            .map(|socket| wire::send(socket.as_fd(), &Request::Stop.encode(), &[]));
        if !matches!(sent, Some(Ok(()))) {
            self.lost();
        }
    }

    /// Blocks (bounded) until the guard reports the repeat done; a guard that does not is
    /// killed, and its shell with it.
    pub(super) fn wait(&mut self) {
        let end = Instant::now() + STOP_WAIT;
        while self.status.is_none() {
            let now = Instant::now();
            if now >= end {
                self.lost();
                break;
            }
            self.block(end - now);
        }
    }

    /// The guard died or stopped answering: it is dropped (killed), and the shell, killed with
    /// it by its parent-death signal, reads as killed by SIGKILL, as under a guard of its own.
    fn lost(&mut self) {
        *self.server = None;
        if self.status.is_none() {
            self.status = Some(ExitStatus::from_raw(Signal::SIGKILL as i32));
        }
    }
}
