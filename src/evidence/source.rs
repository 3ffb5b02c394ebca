//! Opening a trace on disk (I/O: reads files and lists directories): a `.json` file, a `.json.gz`
//! (or any gzip, recognised by its magic bytes), or a `tensorboard_trace_handler` directory, from
//! which the newest `*.pt.trace.json[.gz]` is taken. Decompression streams through flate2.
//! [`analyse_file`] analyses a trace in two streaming passes without holding it (see its doc).

#![expect(
    clippy::disallowed_methods,
    reason = "a trace reader opens the trace it reads"
)]

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use super::analysis::{Analyser, Analysis, Options, Overflow, Retained, StepFinder, Window};
use super::kineto::{self, KinetoError};
use super::model::{Names, Trace};

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
    let file = super::file::open_regular(path).map_err(|source| TraceFileError::Open {
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

/// The windows (in steps) pass 2 tries before holding everything, narrowest first.
const NARROW_WINDOWS: [usize; 2] = [1, 8];

/// How a streaming analysis went: its passes over the file and what it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamStats {
    /// Passes over the file: 1 for the steps, then one per window tried.
    pub passes: u32,
    /// The window that succeeded.
    pub window: Window,
    /// What that pass held at most.
    pub retained: Retained,
    /// Why each narrower window was given up.
    pub overflows: Vec<Overflow>,
    /// Events in the file's `traceEvents`.
    pub events: u64,
}

/// Analyses the trace at `path` (file or tensorboard directory) without holding it: pass 1 streams
/// the file for the step spans; pass 2 streams it again, counting host events into their step and
/// holding GPU work and launch records only until their step is complete, one step at a time.
/// That bound needs each step's GPU work to arrive before the next-but-one step's (torch.profiler
/// writes its GPU activity in time order); a file that breaks it is read again with a window of 8
/// steps, then with everything held, so the numbers are always those of [`analyse`] on the whole
/// trace (`super::analysis::analyse`). Returns the file read, the analysis and how it went.
pub fn analyse_file(
    path: &Path,
    opts: &Options,
) -> Result<(PathBuf, Analysis, StreamStats), TraceFileError> {
    let file = resolve(path)?;
    let read_err = |source| TraceFileError::Read {
        path: file.clone(),
        source,
    };
    let mut names = Names::default();
    let mut finder = StepFinder::default();
    let meta = kineto::stream(open(&file)?, &mut names, |names, r| {
        finder.record(names, &r, opts);
    })
    .map_err(read_err)?;
    let plan = finder.plan(opts);
    let mut stats = StreamStats {
        passes: 1,
        window: Window::All,
        retained: Retained::default(),
        overflows: Vec::new(),
        events: meta.events_seen,
    };
    // A window as wide as the trace is the unwindowed pass: skip it.
    let windows = NARROW_WINDOWS
        .into_iter()
        .filter(|&n| n < plan.len())
        .map(Window::Steps)
        .chain([Window::All]);
    for window in windows {
        let mut analyser = Analyser::new(opts, plan.clone(), window);
        kineto::stream(open(&file)?, &mut names, |names, r| {
            analyser.record(names, &r);
        })
        .map_err(read_err)?;
        stats.passes += 1;
        match analyser.finish(&names) {
            Ok((analysis, retained)) => {
                stats.window = window;
                stats.retained = retained;
                return Ok((file, analysis, stats));
            }
            Err(overflow) => stats.overflows.push(overflow),
        }
    }
    // Invariant: the windows end with `Window::All`, which holds everything and never overflows.
    unreachable!("the unwindowed pass always finishes")
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

    use crate::evidence::analysis::{Options, Window, analyse};

    /// Events of one step of a decode loop, as (ts, json): the step annotation, then per kernel a
    /// `cpu_op`, its `cudaLaunchKernel`, the kernel and its flow event. The GPU runs behind the
    /// host, so the step's last kernels run while the next step launches.
    fn step_events(step: u64, corr: &mut u64) -> Vec<(u64, String)> {
        let t0 = 1000 + step * 2000;
        let mut ev = vec![(
            t0,
            format!(
                r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,"ts":{t0},"dur":1900}}"#
            ),
        )];
        // The GPU starts late and ends after the next step has begun (without falling further
        // behind from step to step).
        let mut gpu_t = t0 + 700;
        for i in 0..20u64 {
            let host = t0 + 10 + i * 60;
            let (name, dur) = [
                ("ampere_sgemm_128x64", 95),
                ("flash_fwd_kernel", 80),
                ("rms_norm_kernel", 20),
            ][usize::try_from(i % 3).expect("small")];
            // Two streams: every fourth kernel goes to a side stream.
            let stream = if i % 4 == 3 { 9 } else { 7 };
            let c = *corr;
            *corr += 1;
            ev.push((host, format!(r#"{{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":1,"tid":1,"ts":{host},"dur":40}}"#, i % 3)));
            ev.push((host + 20, format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{},"dur":6,"args":{{"correlation":{c}}}}}"#, host + 20)));
            gpu_t = gpu_t.max(host + 30);
            ev.push((gpu_t, format!(r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":{stream},"ts":{gpu_t},"dur":{dur},"args":{{"stream":{stream},"correlation":{c},"device":0}}}}"#)));
            ev.push((gpu_t, format!(r#"{{"ph":"f","id":{c},"pid":0,"tid":{stream},"ts":{gpu_t},"cat":"ac2g","name":"ac2g","bp":"e"}}"#)));
            gpu_t += dur + 2;
        }
        ev
    }

    /// Writes `steps` steps to a file; `order` arranges the events.
    fn many_steps(
        dir: &Path,
        steps: u64,
        order: impl FnOnce(&mut Vec<(u64, String)>),
    ) -> (PathBuf, usize) {
        let mut corr = 1;
        let mut all = Vec::new();
        let mut per_step = 0;
        for step in 0..steps {
            let ev = step_events(step, &mut corr);
            per_step = ev.len();
            all.extend(ev);
        }
        order(&mut all);
        let text: Vec<String> = all.into_iter().map(|(_, e)| e).collect();
        let path = dir.join(format!("t{steps}.{}.pt.trace.json", text.len()));
        std::fs::write(
            &path,
            format!(r#"{{"traceEvents":[{}]}}"#, text.join(",\n")),
        )
        .expect("write");
        (path, per_step)
    }

    fn streamed_equals_in_memory(path: &Path) -> StreamStats {
        let opts = Options::default();
        let (_, streamed, stats) = analyse_file(path, &opts).expect("analyses");
        let (_, trace) = load(path).expect("loads");
        assert_eq!(streamed, analyse(&trace, &opts), "{}", path.display());
        stats
    }

    /// The memory bound, structurally: on a 300-step trace in time order (as torch.profiler
    /// writes its GPU activity), and in Kineto's layout (host operators first, then the runtime
    /// calls and kernels in time order), pass 2 holds at most one step's events at a time.
    #[test]
    fn streaming_holds_at_most_one_step_of_a_many_step_trace() {
        let dir = tempfile::tempdir().expect("tempdir");
        let time_order = |ev: &mut Vec<(u64, String)>| ev.sort_by_key(|e| e.0);
        let kineto_layout = |ev: &mut Vec<(u64, String)>| {
            ev.sort_by_key(|e| {
                (
                    e.1.contains("cuda_runtime") || e.1.contains("\"stream\""),
                    e.0,
                )
            });
        };
        let (a, per_step) = many_steps(dir.path(), 300, time_order);
        let (b, _) = many_steps(dir.path(), 301, kineto_layout);
        for path in [a, b] {
            let stats = streamed_equals_in_memory(&path);
            assert_eq!(stats.window, Window::Steps(1), "{:?}", stats.overflows);
            assert_eq!(stats.passes, 2);
            assert!(stats.events >= 300 * per_step as u64);
            assert!(
                stats.retained.high_water <= per_step,
                "held {} records, one step is {per_step} events",
                stats.retained.high_water
            );
        }
    }

    /// A file whose GPU work does not come in step order (here reversed) is read again with a
    /// wider window, then with everything held: the numbers never change.
    #[test]
    fn a_disordered_trace_falls_back_to_the_same_numbers() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, per_step) = many_steps(dir.path(), 40, |ev| ev.reverse());
        let stats = streamed_equals_in_memory(&path);
        assert_eq!(stats.window, Window::All);
        assert_eq!(stats.passes, 4, "{:?}", stats.overflows);
        assert_eq!(stats.overflows.len(), 2);
        assert!(stats.retained.high_water > 10 * per_step);
        // GPU work and launches shuffled within a few steps: the 8-step window suffices. (The
        // host operators keep their order: self time needs each thread's in order of start,
        // and a file that breaks that is read whole, as the next test shows.)
        let (path, _) = many_steps(dir.path(), 41, |ev| {
            ev.sort_by_key(|e| {
                let host = e.1.contains("\"cpu_op\"") || e.1.contains("\"user_annotation\"");
                (e.0 / 6000, host, if host { e.0 } else { u64::MAX - e.0 })
            });
        });
        let stats = streamed_equals_in_memory(&path);
        assert_eq!(stats.window, Window::Steps(8), "{:?}", stats.overflows);
    }

    /// Self time needs each thread's operators in order of start: a file in that order streams
    /// in a one-step window; one out of order (here reversed) falls back to the in-memory pass,
    /// with the same numbers.
    #[test]
    fn self_times_stream_in_order_and_fall_back_when_a_thread_is_out_of_order() {
        let dir = tempfile::tempdir().expect("tempdir");
        let text = crate::evidence::analysis_tests::cpu_only_trace(500);
        let sorted = dir.path().join("sorted.json");
        std::fs::write(&sorted, &text).expect("write");
        let stats = streamed_equals_in_memory(&sorted);
        assert_eq!(stats.window, Window::Steps(1), "{:?}", stats.overflows);
        let body = text
            .strip_prefix(r#"{"traceEvents":["#)
            .and_then(|t| t.strip_suffix("]}"))
            .expect("the generator's shape");
        let mut events: Vec<&str> = body.split(",\n").collect();
        events.reverse();
        let reversed = dir.path().join("reversed.json");
        std::fs::write(
            &reversed,
            format!(r#"{{"traceEvents":[{}]}}"#, events.join(",\n")),
        )
        .expect("write");
        let stats = streamed_equals_in_memory(&reversed);
        assert_eq!(stats.window, Window::All);
        assert!(
            stats
                .overflows
                .iter()
                .all(|o| o.0 == "host operators out of order on a thread"),
            "{:?}",
            stats.overflows
        );
        let (_, a, _) = analyse_file(&reversed, &Options::default()).expect("analyses");
        assert_eq!(a.operators[0].self_us, Some(500.0), "{:?}", a.operators);
    }

    /// Every real trace in the fixtures streams to the numbers of the in-memory analysis.
    #[test]
    #[expect(
        clippy::print_stderr,
        reason = "shows which window each real layout needed (with --nocapture)"
    )]
    fn every_fixture_streams_to_the_in_memory_numbers() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut seen = 0;
        for dir in ["torch_traces_hta", "pytorch_profiler_gpu"] {
            for entry in std::fs::read_dir(root.join(dir)).expect("fixtures") {
                let path = entry.expect("entry").path();
                if path.to_string_lossy().ends_with(".json.gz")
                    && !path.to_string_lossy().contains("HTA-")
                {
                    let stats = streamed_equals_in_memory(&path);
                    // Which window each real layout needed (shown with --nocapture).
                    eprintln!(
                        "{}: {:?}, held {} of {} records",
                        path.display(),
                        stats.window,
                        stats.retained.high_water,
                        stats.retained.records
                    );
                    seen += 1;
                }
            }
        }
        assert!(seen >= 14, "{seen} fixtures");
    }
}
