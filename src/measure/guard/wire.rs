//! What utilgate and its run's guard (`utilgate harness guard --serve`) say to each other: one
//! message per datagram of a `SOCK_SEQPACKET` Unix socket pair, the shell's stdout and stderr
//! passed beside a start request as descriptors (`SCM_RIGHTS`). The encoding is pure; `send`
//! and `recv` do the socket I/O.
//!
//! A field is a little-endian `u32` length and its bytes; a message is a tag byte and its fields.

use std::ffi::OsString;
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::PathBuf;

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

/// The largest message either side reads (a start request carries the harness's environment).
pub(crate) const MAX_MESSAGE: usize = 1 << 20;

/// Start `sh -c command` for one repeat, with `env` as its whole environment, in `cwd`, inside
/// the cgroup scope at `scope` when there is one. Two descriptors travel with it: the shell's
/// stdout and stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Start {
    pub scope: Option<PathBuf>,
    pub cwd: PathBuf,
    pub command: OsString,
    pub env: Vec<(OsString, OsString)>,
}

/// utilgate to the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Start(Start),
    /// Terminate the repeat now (a timeout or a cancel): its shell, its process group, its
    /// scope or adopted orphans; then say `Done`.
    Stop,
}

/// The guard to utilgate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The shell runs with this pid (it leads its own process group).
    Started(i32),
    /// The shell could not be started, and why.
    Failed(String),
    /// The repeat is over and nothing it started is left: the shell's status, as `sh`
    /// reports one (an exit code, or 128 + N for a signal N).
    Done(i32),
}

const START: u8 = 1;
const STOP: u8 = 2;
const STARTED: u8 = 11;
const FAILED: u8 = 12;
const DONE: u8 = 13;

fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads fields off the front of a message.
struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    fn bytes(&mut self) -> Option<&'a [u8]> {
        let (len, rest) = self.0.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
        let (value, rest) = (rest.get(..len)?, rest.get(len..)?);
        self.0 = rest;
        Some(value)
    }

    fn os(&mut self) -> Option<OsString> {
        self.bytes().map(|b| OsString::from_vec(b.to_vec()))
    }

    fn number(&mut self) -> Option<u32> {
        let (n, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*n))
    }
}

impl Request {
    #[must_use]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Request::Start(start) => {
                out.push(START);
                match &start.scope {
                    Some(dir) => {
                        out.push(1);
                        field(&mut out, dir.as_os_str().as_bytes());
                    }
                    None => out.push(0),
                }
                field(&mut out, start.cwd.as_os_str().as_bytes());
                field(&mut out, start.command.as_bytes());
                let count = u32::try_from(start.env.len()).unwrap_or(u32::MAX);
                out.extend_from_slice(&count.to_le_bytes());
                for (name, value) in &start.env {
                    field(&mut out, name.as_bytes());
                    field(&mut out, value.as_bytes());
                }
            }
            Request::Stop => out.push(STOP),
        }
        out
    }

    /// `None` for a message that is not a whole request.
    #[must_use]
    pub(crate) fn decode(message: &[u8]) -> Option<Request> {
        let (&tag, rest) = message.split_first()?;
        match tag {
            STOP if rest.is_empty() => Some(Request::Stop),
            START => {
                let (&has_scope, rest) = rest.split_first()?;
                let mut fields = Fields(rest);
                let scope = match has_scope {
                    0 => None,
                    1 => Some(PathBuf::from(fields.os()?)),
                    _ => return None,
                };
                let cwd = PathBuf::from(fields.os()?);
                let command = fields.os()?;
                let count = fields.number()?;
                let mut env = Vec::new();
                for _ in 0..count {
                    env.push((fields.os()?, fields.os()?));
                }
                fields.0.is_empty().then_some(Request::Start(Start {
                    scope,
                    cwd,
                    command,
                    env,
                }))
            }
            _ => None,
        }
    }
}

impl Reply {
    #[must_use]
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Reply::Started(pid) => {
                out.push(STARTED);
                out.extend_from_slice(&pid.to_le_bytes());
            }
            Reply::Failed(why) => {
                out.push(FAILED);
                field(&mut out, why.as_bytes());
            }
            Reply::Done(status) => {
                out.push(DONE);
                out.extend_from_slice(&status.to_le_bytes());
            }
        }
        out
    }

    #[must_use]
    pub(crate) fn decode(message: &[u8]) -> Option<Reply> {
        let (&tag, rest) = message.split_first()?;
        let number = || rest.try_into().ok().map(i32::from_le_bytes);
        match tag {
            STARTED => number().map(Reply::Started),
            DONE => number().map(Reply::Done),
            FAILED => {
                let mut fields = Fields(rest);
                let why = fields.bytes()?;
                fields
                    .0
                    .is_empty()
                    .then(|| Reply::Failed(String::from_utf8_lossy(why).into_owned()))
            }
            _ => None,
        }
    }
}

/// Sends one message with `fds` beside it. Never raises SIGPIPE: a gone peer is an error.
pub(crate) fn send(
    socket: BorrowedFd<'_>,
    message: &[u8],
    fds: &[BorrowedFd<'_>],
) -> io::Result<()> {
    let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
    let rights = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage] = if raw.is_empty() { &[] } else { &rights };
    let sent = sendmsg::<()>(
        socket.as_raw_fd(),
        &[IoSlice::new(message)],
        cmsgs,
        MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    if sent == message.len() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::WriteZero,
            "a message was cut short",
        ))
    }
}

/// Receives one message into `buf` (its length, 0 when the peer is gone) and the descriptors
/// that came with it (at most two; close-on-exec).
pub(crate) fn recv(socket: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; 2]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<()>(
            socket.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        ) {
            Err(nix::errno::Errno::EINTR) => {}
            other => break other?,
        }
    };
    let mut fds = Vec::new();
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(raw) = cmsg {
            for fd in raw {
                #[expect(
                    unsafe_code,
                    reason = "a descriptor received with SCM_RIGHTS is new to this process and \
                              owned by nobody else; OwnedFd closes it"
                )]
                // SAFETY: the kernel installed `fd` in this process for this message alone;
                // nothing else holds it, so owning (and closing) it here is sound.
                fds.push(unsafe { OwnedFd::from_raw_fd(fd) });
            }
        }
    }
    let truncated = msg
        .flags
        .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
    let len = msg.bytes;
    if truncated {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message was truncated",
        ));
    }
    Ok((len, fds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_replies_survive_the_wire() {
        let start = Request::Start(Start {
            scope: Some(PathBuf::from("/sys/fs/cgroup/utilgate.1.0")),
            cwd: PathBuf::from("/tmp/a b"),
            command: OsString::from("echo 'x' > \"$UTILGATE_OUT\""),
            env: vec![
                (
                    OsString::from("UTILGATE_OUT"),
                    OsString::from("/tmp/o.jsonl"),
                ),
                (OsString::from("EMPTY"), OsString::new()),
                (OsString::from("RAW"), OsString::from_vec(vec![0xff, 0xfe])),
            ],
        });
        for request in [start.clone(), Request::Stop] {
            assert_eq!(Request::decode(&request.encode()), Some(request));
        }
        let none = Request::Start(Start {
            scope: None,
            cwd: PathBuf::from("."),
            command: OsString::from("true"),
            env: Vec::new(),
        });
        assert_eq!(Request::decode(&none.encode()), Some(none));
        for reply in [
            Reply::Started(4242),
            Reply::Failed("no sh".to_owned()),
            Reply::Done(143),
        ] {
            assert_eq!(Reply::decode(&reply.encode()), Some(reply));
        }
        // A message cut short or with bytes after it is refused, never half read.
        let bytes = start.encode();
        for len in 0..bytes.len() {
            assert_eq!(Request::decode(&bytes[..len]), None, "cut at {len}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(Request::decode(&longer), None);
        assert_eq!(Reply::decode(&[DONE, 1, 2]), None);
        assert_eq!(Reply::decode(&[99]), None);
    }

    #[test]
    fn descriptors_travel_beside_a_message() {
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
        use std::io::{Read as _, Write as _};
        use std::os::fd::AsFd as _;
        let (a, b) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .expect("socketpair");
        let (mut reader, writer) = std::io::pipe().expect("pipe");
        send(a.as_fd(), &Reply::Done(7).encode(), &[writer.as_fd()]).expect("send");
        drop(writer);
        let mut buf = vec![0; 64];
        let (len, fds) = recv(b.as_fd(), &mut buf).expect("recv");
        assert_eq!(Reply::decode(&buf[..len]), Some(Reply::Done(7)));
        assert_eq!(fds.len(), 1);
        let mut received = std::fs::File::from(fds.into_iter().next().expect("fd"));
        received.write_all(b"through").expect("write");
        drop(received);
        let mut text = String::new();
        reader.read_to_string(&mut text).expect("read");
        assert_eq!(text, "through");
        // The peer gone: a zero-length read, not an error.
        drop(a);
        assert_eq!(recv(b.as_fd(), &mut buf).expect("eof").0, 0);
    }
}
