//! The trace file in large chunks, each JSON value parsed from a slice of the chunk
//! (`serde_json`'s slice reader, with borrowed strings) rather than pulled through `io::Read` a
//! byte at a time. A value cut by the chunk's end is parsed again once the next chunk is read
//! after it; the buffer holds one chunk plus the longest value, never the file. Positions in
//! errors are the file's line and column. Pure over any `Read`.

use std::io::Read;

use serde::de::Error as _;

use super::kineto_error::KinetoError;

/// Bytes read at a time (and the buffer's size unless one value is longer).
pub(super) const CHUNK: usize = 1 << 20;

/// What a parse of the value at the front of the unread bytes gave.
pub(super) enum Parsed<U> {
    /// The value and how many bytes it took.
    Done(U, usize),
    /// The value may go on past the bytes read so far.
    More,
}

pub(super) struct Chunks<R> {
    input: R,
    buf: Vec<u8>,
    /// The next unread byte.
    pos: usize,
    /// The bytes read into `buf`.
    end: usize,
    eof: bool,
    /// Newlines in the bytes already dropped from the front of `buf`.
    dropped_lines: usize,
    /// Bytes after the last dropped newline (the column of `buf[0]`, from 0).
    dropped_col: usize,
    /// Where in `buf` the value [`Chunks::value`] returned last began (valid until the next
    /// read: only an error about that value asks for it).
    last_start: usize,
}

impl<R: Read> Chunks<R> {
    pub(super) fn new(input: R) -> Self {
        Chunks {
            input,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            eof: false,
            dropped_lines: 0,
            dropped_col: 0,
            last_start: 0,
        }
    }

    /// The next byte that is not JSON whitespace, left unread; `None` at the end of the file.
    pub(super) fn peek(&mut self) -> Result<Option<u8>, KinetoError> {
        loop {
            while self.pos < self.end {
                let b = self.buf[self.pos];
                if !matches!(b, b' ' | b'\n' | b'\r' | b'\t') {
                    return Ok(Some(b));
                }
                self.pos += 1;
            }
            if self.eof {
                return Ok(None);
            }
            self.refill()?;
        }
    }

    /// Takes the next non-whitespace byte if it is one of `wanted`; else a malformed (or
    /// truncated) error that says what was `expected`.
    pub(super) fn take(&mut self, wanted: &[u8], expected: &str) -> Result<u8, KinetoError> {
        match self.peek()? {
            Some(b) if wanted.contains(&b) => {
                self.pos += 1;
                Ok(b)
            }
            Some(_) => Err(self.malformed(&format!("expected {expected}"))),
            None => Err(self.truncated()),
        }
    }

    /// Parses the value at the next non-whitespace byte with `parse`, which gets the unread
    /// bytes and whether they run to the end of the file, and says how many bytes the value
    /// took. A parse that runs out of bytes (an end-of-input error, or [`Parsed::More`]) is
    /// tried again with more of the file.
    pub(super) fn value<U>(
        &mut self,
        mut parse: impl FnMut(&[u8], bool) -> Result<Parsed<U>, serde_json::Error>,
    ) -> Result<U, KinetoError> {
        if self.peek()?.is_none() {
            return Err(self.truncated());
        }
        loop {
            match parse(&self.buf[self.pos..self.end], self.eof) {
                Ok(Parsed::Done(u, used)) => {
                    self.last_start = self.pos;
                    self.pos += used;
                    return Ok(u);
                }
                Ok(Parsed::More) if !self.eof => {}
                Err(e) if e.is_eof() && !self.eof => {}
                Ok(Parsed::More) => return Err(self.truncated()),
                Err(e) => return Err(self.error_in_value(&e)),
            }
            self.refill()?;
        }
    }

    /// Drops the bytes already parsed and reads the next chunk behind the unread ones (the
    /// buffer grows only while one value is longer than a chunk).
    fn refill(&mut self) -> Result<(), KinetoError> {
        if self.pos > 0 {
            let dropped = &self.buf[..self.pos];
            let lines = newlines(dropped);
            self.dropped_col = match dropped.iter().rposition(|&b| b == b'\n') {
                Some(at) => self.pos - at - 1,
                None => self.dropped_col + self.pos,
            };
            self.dropped_lines += lines;
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.buf.len() - self.end < CHUNK / 2 {
            self.buf.resize(self.end + CHUNK, 0);
        }
        while self.end < self.buf.len() {
            match self.input.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(KinetoError::Io(e)),
            }
        }
        Ok(())
    }

    /// The file's line (from 1) and column (from 0) of `buf[at]`.
    fn position(&self, at: usize) -> (usize, usize) {
        let before = &self.buf[..at.min(self.end)];
        let lines = newlines(before);
        let col = match before.iter().rposition(|&b| b == b'\n') {
            Some(nl) => before.len() - nl - 1,
            None => self.dropped_col + before.len(),
        };
        (1 + self.dropped_lines + lines, col)
    }

    /// An error `serde_json` reported inside the value that starts at the next unread byte, at
    /// its place in the file.
    fn error_in_value(&self, e: &serde_json::Error) -> KinetoError {
        let (line0, col0) = self.position(self.pos);
        let (line, column) = if e.line() <= 1 {
            (line0, col0 + e.column())
        } else {
            (line0 + e.line() - 1, e.column())
        };
        if e.is_eof() {
            return KinetoError::Truncated { line, column };
        }
        KinetoError::Malformed {
            line,
            column,
            source: serde_json::Error::custom(strip_position(&e.to_string())),
        }
    }

    /// The file's line (from 1) and column (from 1) where the value [`Chunks::value`] returned
    /// last began, for an error about its content.
    pub(super) fn last_value_position(&self) -> (usize, usize) {
        let (line, col) = self.position(self.last_start);
        (line, col + 1)
    }

    /// A malformed-trace error at the next unread byte.
    pub(super) fn malformed(&self, problem: &str) -> KinetoError {
        let (line, col) = self.position(self.pos);
        KinetoError::Malformed {
            line,
            column: col + 1,
            source: serde_json::Error::custom(problem),
        }
    }

    fn truncated(&self) -> KinetoError {
        let (line, col) = self.position(self.end);
        KinetoError::Truncated {
            line,
            column: col + 1,
        }
    }
}

/// Newlines in `bytes` (SIMD search: a trace has one per event, and every byte is counted).
fn newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// `serde_json`'s message without its " at line L column C" (which is the slice's, not the
/// file's; the error carries the file's).
fn strip_position(message: &str) -> String {
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
        .to_owned()
}

/// One JSON value of type `T` from the front of `slice`, as [`Chunks::value`] wants it: a
/// number that runs to the end of the bytes read so far may go on.
pub(super) fn parse_one<'a, T: serde::Deserialize<'a>>(
    slice: &'a [u8],
    eof: bool,
) -> Result<Parsed<T>, serde_json::Error> {
    let mut values = serde_json::Deserializer::from_slice(slice).into_iter::<T>();
    match values.next() {
        Some(Ok(value)) => {
            let used = values.byte_offset();
            let closed = matches!(slice.first(), Some(b'{' | b'[' | b'"'));
            Ok(if closed || used < slice.len() || eof {
                Parsed::Done(value, used)
            } else {
                Parsed::More
            })
        }
        Some(Err(e)) => Err(e),
        None => Ok(Parsed::More),
    }
}

/// [`parse_one`] of a value that borrows nothing from the slice.
pub(super) fn parse_owned<T: serde::de::DeserializeOwned>(
    slice: &[u8],
    eof: bool,
) -> Result<Parsed<T>, serde_json::Error> {
    parse_one(slice, eof)
}
