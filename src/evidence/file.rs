//! Opening a file a harness reported (I/O: opens and reads files). A harness names its evidence
//! (`{"trace": path}`, `{"nsys": path}`, `{"ncu": path}`), so the path is the harness's to choose:
//! a FIFO would block `open` forever and a device such as `/dev/zero` never ends. Every reader
//! of a reported file goes through [`open_regular`]: opened with `O_NONBLOCK` (a FIFO's open
//! returns at once), then refused unless it is a regular file; what is read into memory is
//! capped ([`read_capped`]).

#![expect(
    clippy::disallowed_methods,
    reason = "evidence files are opened here, safely"
)]

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The evidence cap's default, `[evidence] max_trace_mb = 64`, in bytes: what a reader that has
/// no configuration (`utilgate trace show`) holds in memory at most.
pub const DEFAULT_CAP_BYTES: u64 = 64_000_000;

/// What kind of file `meta` is, in words, when it is not a regular file.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

/// The refusal of a file that is not regular, as an I/O error its reader wraps with the path.
fn refused(what: &str) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!("{what}, not a regular file: utilgate reads only regular files a harness reports"),
    )
}

/// `path` opened for reading without blocking (a FIFO with no writer opens at once) and kept
/// only when it is a regular file (checked on the open file, so a path swapped after the check
/// cannot slip a FIFO in).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if let Some(what) = not_regular(&meta) {
        return Err(refused(what));
    }
    Ok(file)
}

/// That `path` is a regular file (following links), before a profiler is asked to read it.
pub fn check_regular(path: &Path) -> std::io::Result<()> {
    open_regular(path).map(drop)
}

/// The refusal of a file over `cap` bytes.
fn over_cap(size: u64, cap: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!(
            "the file is {:.1} MB, over the evidence cap of {:.1} MB ([evidence] max_trace_mb): not read",
            size as f64 / 1e6,
            cap as f64 / 1e6
        ),
    )
}

/// The bytes of the regular file at `path`, refused when over `cap` bytes (by its size, and
/// by what was read should it grow meanwhile).
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let size = file.metadata()?.len();
    if size > cap {
        return Err(over_cap(size, cap));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(over_cap(bytes.len() as u64, cap));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_oversized_files_are_refused_regular_files_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = open_regular(Path::new("/dev/zero")).expect_err("device");
        assert!(e.to_string().contains("a character device"), "{e}");
        let e = open_regular(dir.path()).expect_err("directory");
        assert!(e.to_string().contains("a directory"), "{e}");
        let small = dir.path().join("small");
        std::fs::write(&small, b"abc").expect("write");
        assert_eq!(read_capped(&small, 3).expect("read"), b"abc");
        let e = read_capped(&small, 2).expect_err("over");
        assert!(e.to_string().contains("over the evidence cap"), "{e}");
    }
}
