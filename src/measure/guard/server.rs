//! The guard of a whole run (`utilgate harness guard --serve`, hidden): one process per
//! `utilgate run` that starts every repeat's shell on request, so that a repeat costs a fork of
//! this small process instead of an exec of the utilgate binary (docs/reliability.md, "What the
//! runner costs per harness process"). I/O: processes, signals, /proc, the cgroup file system
//! and the socket on its stdin.
//!
//! It keeps every promise of the guard of one repeat (`guard::run`): SIGTERM when utilgate dies
//! (`PR_SET_PDEATHSIG`; its socket closing says the same), SIGKILL to each shell when it dies
//! itself, a child subreaper for what double-forks, each shell born in its repeat's cgroup scope
//! where there is one, and what a repeat left behind terminated before the repeat is reported
//! done. It serves one repeat at a time: a start request while one runs is refused (utilgate
//! then runs that repeat under a guard of its own).

use std::io;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;

use nix::errno::Errno;
use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{Pid, getppid};

use super::wire::{self, Reply, Request, Start};
use super::{ORPHANED_STATUS, STOPPED_STATUS, spawn_in_scope, terminate_leftovers_of};

/// What the server waits for.
enum Event {
    /// A message from utilgate (`None`: not a request), with the descriptors beside it.
    Request(Option<Request>, Vec<OwnedFd>),
    /// utilgate closed the socket (it exited or died).
    Gone,
    /// A child exited with this status (128 + N for a signal N).
    Exited(Pid, i32),
    /// SIGTERM (the parent-death signal), SIGINT or SIGHUP.
    Stop,
}

/// The repeat being served.
struct Repeat {
    shell: Pid,
    scope: Option<std::path::PathBuf>,
}

/// Serves start requests on stdin (a `SOCK_SEQPACKET` socket) until utilgate is gone; returns
/// the status to exit with.
#[must_use]
pub fn serve(parent: u32) -> i32 {
    // Ask first, then check: utilgate may have died between fork and this call.
    let _ = prctl::set_pdeathsig(Signal::SIGTERM);
    if u32::try_from(getppid().as_raw()).ok() != Some(parent) {
        return ORPHANED_STATUS;
    }
    let _ = prctl::set_child_subreaper(true);
    let Ok(socket) = io::stdin().as_fd().try_clone_to_owned() else {
        return 126;
    };
    let (events, next) = mpsc::channel();
    {
        let events = events.clone();
        let _ = ctrlc::set_handler(move || {
            let _ = events.send(Event::Stop);
        });
    }
    let Ok(reading) = socket.try_clone() else {
        return 126;
    };
    let listener = {
        let events = events.clone();
        thread::Builder::new()
            .name("guard-requests".to_owned())
            .spawn(move || listen(&reading, &events))
    };
    let (arm, armed) = mpsc::channel();
    let reaper = thread::Builder::new()
        .name("guard-reaper".to_owned())
        .spawn(move || reap_armed(&armed, &events));
    if listener.is_err() || reaper.is_err() {
        return 126;
    }
    let answer = |reply: Reply| wire::send(socket.as_fd(), &reply.encode(), &[]);
    let mut current: Option<Repeat> = None;
    loop {
        let event = next.recv().unwrap_or(Event::Stop);
        let sent = match event {
            Event::Request(Some(Request::Start(start)), fds) => {
                let reply = if current.is_some() {
                    Reply::Failed("the guard is serving another repeat".to_owned())
                } else {
                    match start_shell(&start, fds) {
                        Ok(shell) => {
                            current = Some(Repeat {
                                shell,
                                scope: start.scope,
                            });
                            let _ = arm.send(());
                            Reply::Started(shell.as_raw())
                        }
                        Err(err) => Reply::Failed(format!("failed to start sh: {err}")),
                    }
                };
                answer(reply)
            }
            // One `Done` per started shell: a stop that comes after the shell's exit was
            // answered already (by the exit's `Done`), so it gets no second one.
            Event::Request(Some(Request::Stop), _) => match current.take() {
                Some(repeat) => {
                    end(&repeat);
                    answer(Reply::Done(STOPPED_STATUS))
                }
                None => Ok(()),
            },
            Event::Request(None, _) => answer(Reply::Failed("an unreadable request".to_owned())),
            Event::Exited(pid, status) => match current.take() {
                Some(repeat) if repeat.shell == pid => {
                    end(&repeat);
                    answer(Reply::Done(status))
                }
                other => {
                    current = other;
                    Ok(())
                }
            },
            Event::Gone | Event::Stop => {
                if let Some(repeat) = current.take() {
                    end(&repeat);
                }
                return STOPPED_STATUS;
            }
        };
        if sent.is_err() {
            // utilgate is gone: nothing of its repeat may outlive it.
            if let Some(repeat) = current.take() {
                end(&repeat);
            }
            return STOPPED_STATUS;
        }
    }
}

/// Reads requests off the socket until utilgate closes it.
fn listen(socket: &OwnedFd, events: &Sender<Event>) {
    let mut buf = vec![0; wire::MAX_MESSAGE];
    loop {
        let event = match wire::recv(socket.as_fd(), &mut buf) {
            Ok((0, _)) | Err(_) => Event::Gone,
            Ok((len, fds)) => Event::Request(Request::decode(&buf[..len]), fds),
        };
        let gone = matches!(event, Event::Gone);
        if events.send(event).is_err() || gone {
            return;
        }
    }
}

/// Reaps every child, blocking in `waitpid(-1)`, from each arming (a shell started) until no
/// child is left; reports each exit.
fn reap_armed(armed: &Receiver<()>, events: &Sender<Event>) {
    while armed.recv().is_ok() {
        loop {
            let exited = match waitpid(None::<Pid>, None) {
                Ok(WaitStatus::Exited(pid, code)) => Event::Exited(pid, code),
                Ok(WaitStatus::Signaled(pid, signal, _)) => Event::Exited(pid, 128 + signal as i32),
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => break,
            };
            if events.send(exited).is_err() {
                return;
            }
        }
    }
}

/// Starts the repeat's `sh -c`, leading a process group of its own, born inside the scope when
/// there is one, with SIGKILL as its parent-death signal; its stdout and stderr are the two
/// descriptors that came with the request.
fn start_shell(start: &Start, fds: Vec<OwnedFd>) -> io::Result<Pid> {
    let [stdout, stderr]: [OwnedFd; 2] = fds
        .try_into()
        .map_err(|_| io::Error::other("a start request needs two descriptors"))?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the guard is the edge that starts the harness shell"
    )]
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(&start.command)
        .env_clear()
        .envs(start.env.iter().map(|(name, value)| (name, value)))
        .current_dir(&start.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    spawn_in_scope(start.scope.as_deref(), shell)
}

/// Terminates what is left of a repeat: its shell if it still runs, its process group, its
/// scope or (without one) the orphans the guard adopted.
fn end(repeat: &Repeat) {
    terminate_leftovers_of(repeat.scope.as_deref(), repeat.shell);
}
