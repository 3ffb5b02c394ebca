//! Opening a trace on disk (I/O: reads files and lists directories): a `.json` file, a `.json.gz`
//! (or any gzip, recognised by its magic bytes), or a `tensorboard_trace_handler` directory, from
//! which the newest `*.pt.trace.json[.gz]` is taken. Decompression streams through flate2.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::kineto::{self, KinetoError};
use super::model::Trace;

/// Why a trace path could not be turned into a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    #[error("failed to open trace {}: {source}", path.display())]
    Open {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("trace directory {} holds no *.pt.trace.json or *.pt.trace.json.gz file", path.display())]
    EmptyDir { path: PathBuf },
    #[error("trace {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: KinetoError,
    },
}

impl TraceFileError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            TraceFileError::Open { .. } => {
                Some("the harness reports the trace with {\"trace\": \"path\"}; check that it wrote the file".into())
            }
            TraceFileError::EmptyDir { .. } => Some(
                "torch.profiler.tensorboard_trace_handler writes <worker>.<ns>.pt.trace.json files there".into(),
            ),
            TraceFileError::Read { source, .. } => source.hint(),
        }
    }
}

/// The file a path stands for: itself, or the newest trace in a directory.
pub fn resolve(path: &Path) -> Result<PathBuf, TraceFileError> {
    let meta = std::fs::metadata(path).map_err(|source| TraceFileError::Open {
        path: path.to_owned(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(path.to_owned());
    }
    let entries = std::fs::read_dir(path).map_err(|source| TraceFileError::Open {
        path: path.to_owned(),
        source,
    })?;
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for entry in entries.flatten() {
        let p = entry.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.ends_with(".pt.trace.json") || name.ends_with(".pt.trace.json.gz")) {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        // Newest by modification time; ties broken by name (the handler embeds a ns timestamp).
        if best.as_ref().is_none_or(|(t, b)| (modified, &p) > (*t, b)) {
            best = Some((modified, p));
        }
    }
    best.map(|(_, p)| p)
        .ok_or_else(|| TraceFileError::EmptyDir {
            path: path.to_owned(),
        })
}

/// An open, decompressing reader over the trace at `path` (a file, not a directory).
pub fn open(path: &Path) -> Result<Box<dyn Read>, TraceFileError> {
    let file = File::open(path).map_err(|source| TraceFileError::Open {
        path: path.to_owned(),
        source,
    })?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let gz = {
        use std::io::BufRead;
        let head = reader.fill_buf().map_err(|source| TraceFileError::Open {
            path: path.to_owned(),
            source,
        })?;
        head.starts_with(&[0x1f, 0x8b])
    };
    Ok(if gz {
        Box::new(flate2::bufread::MultiGzDecoder::new(reader))
    } else {
        Box::new(reader)
    })
}

/// Reads the trace at `path` (file or tensorboard directory) and the file actually read.
pub fn load(path: &Path) -> Result<(PathBuf, Trace), TraceFileError> {
    let file = resolve(path)?;
    let reader = open(&file)?;
    let trace = kineto::read(reader).map_err(|source| TraceFileError::Read {
        path: file.clone(),
        source,
    })?;
    Ok((file, trace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_directory_yields_its_newest_trace_and_gzip_is_sniffed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let old = dir.path().join("w.100.pt.trace.json");
        std::fs::write(&old, r#"{"traceEvents": []}"#).expect("write");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let new = dir.path().join("w.200.pt.trace.json.gz");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(
            br#"{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "ts": 1, "dur": 1}]}"#,
        )
        .expect("gz");
        std::fs::write(&new, gz.finish().expect("gz")).expect("write");
        std::fs::write(dir.path().join("notes.txt"), "x").expect("write");
        let (file, trace) = load(dir.path()).expect("loads");
        assert_eq!(file, new);
        assert_eq!(trace.cpu.len(), 1);
    }

    #[test]
    fn missing_and_empty_inputs_name_the_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = load(&dir.path().join("nope.json")).expect_err("missing");
        assert!(err.to_string().contains("nope.json"), "{err}");
        let err = load(dir.path()).expect_err("empty dir");
        assert!(matches!(err, TraceFileError::EmptyDir { .. }));
        let bad = dir.path().join("t.json");
        std::fs::write(&bad, r#"{"traceEvents": [{"ph": "X""#).expect("write");
        let err = load(&bad).expect_err("truncated");
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}
