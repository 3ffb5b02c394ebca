//! Streaming reader of Kineto / Chrome-trace JSON (torch.profiler `export_chrome_trace`,
//! `tensorboard_trace_handler`) into the evidence model. Pure over any `Read`: the caller opens the
//! file (see `source.rs`).
//!
//! The file is read in large chunks (`chunks.rs`) and each element of `traceEvents` deserialised
//! from a slice of its chunk into a typed event with only the fields the model needs, handed to
//! a sink as a compact [`Record`] and dropped at once: [`stream`] holds one chunk and one event,
//! never the whole JSON (a whole-file `serde_json::Value` parses about 6x slower;
//! shared/CRATES.md);
//! [`read`] collects the records into a [`Trace`]. Accepted variations: `pid`/`tid`
//! as strings or integers, ids above `i64::MAX`, integer or fractional timestamps, a bare JSON
//! array instead of the `{"traceEvents": [...]}` object.

use std::fmt;
use std::io::Read;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, Visitor};

use super::chunks::{Chunks, Parsed, parse_one, parse_owned};
use super::kineto_error::TimeField;
use super::model::{CpuKind, CpuOp, GpuKind, GpuOp, Names, Trace};

pub use super::kineto_error::KinetoError;

/// One record of the evidence model, as the reader hands it to a sink.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Record {
    Gpu(GpuOp),
    Cpu(CpuOp),
}

/// What the reader learnt about the file besides its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Meta {
    /// Whether any timestamp was written with a fraction (see [`Trace::float_timestamps`]).
    pub float_timestamps: bool,
    /// `distributedInfo.rank`, when present.
    pub rank: Option<i64>,
    /// Events seen in `traceEvents`, including those the model does not keep.
    pub events_seen: u64,
}

/// Reads a whole trace from `input` (already decompressed) into memory.
pub fn read(input: impl Read) -> Result<Trace, KinetoError> {
    let mut trace = Trace::default();
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    let meta = stream(input, &mut trace.names, |_, record| match record {
        Record::Gpu(op) => gpu.push(op),
        Record::Cpu(op) => cpu.push(op),
    })?;
    trace.gpu = gpu;
    trace.cpu = cpu;
    trace.float_timestamps = meta.float_timestamps;
    trace.rank = meta.rank;
    trace.events_seen = meta.events_seen;
    Ok(trace)
}

/// Streams `input` (already decompressed): each complete event becomes a [`Record`] handed to
/// `sink` in file order and is not kept; names are interned into `names` (which the sink can
/// read). Memory: one chunk of the file (`chunks::CHUNK`), one event and the name table.
pub fn stream<F: FnMut(&Names, Record)>(
    input: impl Read,
    names: &mut Names,
    sink: F,
) -> Result<Meta, KinetoError> {
    let mut chunks = Chunks::new(input);
    let mut builder = Builder {
        names,
        sink,
        meta: Meta::default(),
        saw_events: false,
        threads: std::collections::HashMap::new(),
    };
    match chunks.peek()? {
        Some(b'[') => {
            builder.saw_events = true;
            events(&mut chunks, &mut builder)?;
        }
        Some(b'{') => top_object(&mut chunks, &mut builder)?,
        Some(_) => {
            return Err(chunks.malformed(
                "expected a trace object with traceEvents, or an array of trace events",
            ));
        }
        None => {
            // An empty file: as truncated as a file can be.
            chunks.value(parse_owned::<IgnoredAny>)?;
        }
    }
    if chunks.peek()?.is_some() {
        return Err(chunks.malformed("trailing characters after the trace"));
    }
    if !builder.saw_events {
        return Err(KinetoError::NoEvents);
    }
    Ok(builder.meta)
}

/// The top-level object: `traceEvents` (and `distributedInfo`); every other key is skipped.
fn top_object<R: Read, F: FnMut(&Names, Record)>(
    chunks: &mut Chunks<R>,
    builder: &mut Builder<'_, F>,
) -> Result<(), KinetoError> {
    chunks.take(b"{", "{")?;
    if chunks.peek()? == Some(b'}') {
        chunks.take(b"}", "}")?;
        return Ok(());
    }
    loop {
        if chunks.peek()? != Some(b'"') {
            chunks.take(b"\"", "a key in quotes")?;
        }
        let key: String = chunks.value(|slice, eof| {
            Ok(match parse_one::<std::borrow::Cow<'_, str>>(slice, eof)? {
                Parsed::Done(key, used) => Parsed::Done(key.into_owned(), used),
                Parsed::More => Parsed::More,
            })
        })?;
        chunks.take(b":", "`:` after a key")?;
        match key.as_str() {
            "traceEvents" => {
                builder.saw_events = true;
                if chunks.peek()? == Some(b'[') {
                    events(chunks, builder)?;
                } else {
                    // Not an array: serde_json's own words for what it is.
                    chunks.value(parse_owned::<Vec<IgnoredAny>>)?;
                }
            }
            "distributedInfo" => {
                let info: Option<DistributedInfo> = chunks.value(parse_owned)?;
                builder.meta.rank = info.and_then(|i| i.rank).and_then(Id::into_i64);
            }
            _ => {
                chunks.value(parse_owned::<IgnoredAny>)?;
            }
        }
        if chunks.take(b",}", "`,` or `}` after a value")? == b'}' {
            return Ok(());
        }
    }
}

/// The `traceEvents` array, each element parsed from a slice of the chunk and handed on.
fn events<R: Read, F: FnMut(&Names, Record)>(
    chunks: &mut Chunks<R>,
    builder: &mut Builder<'_, F>,
) -> Result<(), KinetoError> {
    chunks.take(b"[", "[")?;
    if chunks.peek()? == Some(b']') {
        chunks.take(b"]", "]")?;
        return Ok(());
    }
    loop {
        let pushed = chunks.value(|slice, eof| {
            Ok(match parse_one::<RawEvent<'_>>(slice, eof)? {
                Parsed::Done(ev, used) => Parsed::Done(builder.push(ev), used),
                Parsed::More => Parsed::More,
            })
        })?;
        if let Err(BadTime { field, value }) = pushed {
            let (line, column) = chunks.last_value_position();
            return Err(KinetoError::AbsurdTime {
                index: builder.meta.events_seen - 1,
                line,
                column,
                field,
                value,
            });
        }
        if chunks.take(b",]", "`,` or `]` after an event")? == b']' {
            return Ok(());
        }
    }
}

/// A time of an event that [`TimeField::accepts`] refuses.
struct BadTime {
    field: TimeField,
    value: f64,
}

struct Builder<'n, F> {
    names: &'n mut Names,
    sink: F,
    meta: Meta,
    saw_events: bool,
    /// Each host thread (`pid`, `tid`) seen, numbered in order of first appearance.
    threads: std::collections::HashMap<(ThreadPart<'static>, ThreadPart<'static>), u32>,
}

impl<F: FnMut(&Names, Record)> Builder<'_, F> {
    /// Hands a complete event to the sink; `Err` names a time no profiler writes, so that no
    /// figure is computed from it.
    fn push(&mut self, ev: RawEvent<'_>) -> Result<(), BadTime> {
        self.meta.events_seen += 1;
        let (Some(ts), Some(dur)) = (ev.ts, ev.dur) else {
            return Ok(());
        };
        // Only complete events carry a duration ("X"); a missing ph is read as complete too.
        if ev.ph.as_deref().is_some_and(|ph| ph != "X") {
            return Ok(());
        }
        let cat = ev.cat.as_deref().unwrap_or("");
        if cat == "Trace" {
            return Ok(()); // the profiler's own span
        }
        for (field, time) in [(TimeField::Ts, ts), (TimeField::Dur, dur)] {
            if !field.accepts(time.value) {
                return Err(BadTime {
                    field,
                    value: time.value,
                });
            }
        }
        if ts.float || dur.float {
            self.meta.float_timestamps = true;
        }
        let name = self.names.intern(ev.name.as_deref().unwrap_or(""));
        let args = ev.args.unwrap_or_default();
        let correlation = args.correlation.and_then(Id::into_i64).unwrap_or(-1);
        let record = if let Some(stream) = args.stream.and_then(Id::into_i64) {
            let kind = match cat {
                "kernel" | "Kernel" => GpuKind::Kernel,
                "gpu_memcpy" | "Memcpy" => GpuKind::Memcpy,
                "gpu_memset" | "Memset" => GpuKind::Memset,
                "cuda_sync" => GpuKind::Sync,
                _ => GpuKind::Other,
            };
            Record::Gpu(GpuOp {
                ts: ts.value,
                dur: dur.value,
                name,
                kind,
                stream,
                device: args.device.and_then(Id::into_i64).unwrap_or(-1),
                correlation,
                bytes: args.bytes.and_then(Id::into_u64),
            })
        } else {
            let kind = match cat {
                "cpu_op" | "Operator" => CpuKind::Operator,
                "user_annotation" => CpuKind::Annotation,
                "gpu_user_annotation" => CpuKind::GpuAnnotation,
                "cuda_runtime" | "Runtime" => CpuKind::Runtime,
                "cuda_driver" => CpuKind::Driver,
                "python_function" => CpuKind::Python,
                _ => CpuKind::Other,
            };
            let thread = self.thread(ev.pid, ev.tid);
            Record::Cpu(CpuOp {
                ts: ts.value,
                dur: dur.value,
                name,
                kind,
                correlation,
                thread,
            })
        };
        (self.sink)(self.names, record);
        Ok(())
    }

    /// The number of the thread `(pid, tid)`, given on its first event.
    fn thread(&mut self, pid: Option<ThreadPart<'_>>, tid: Option<ThreadPart<'_>>) -> u32 {
        let key = (
            pid.unwrap_or(ThreadPart::Other),
            tid.unwrap_or(ThreadPart::Other),
        );
        // The map keeps owned keys: a text id is copied on each host event (Kineto writes host
        // threads' ids as integers, which copy nothing).
        let key = (key.0.into_owned(), key.1.into_owned());
        let next = u32::try_from(self.threads.len()).unwrap_or(u32::MAX);
        *self.threads.entry(key).or_insert(next)
    }
}

#[derive(Deserialize)]
struct DistributedInfo {
    #[serde(default)]
    rank: Option<Id>,
}

/// One trace event: only the fields the model reads; the rest are skipped unparsed.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(default, borrow)]
    ph: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    cat: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    ts: Option<Time>,
    #[serde(default)]
    dur: Option<Time>,
    #[serde(default)]
    args: Option<RawArgs>,
    #[serde(default, borrow)]
    pid: Option<ThreadPart<'a>>,
    #[serde(default, borrow)]
    tid: Option<ThreadPart<'a>>,
}

/// A `pid` or `tid` as written: an integer, a string (`"stream 7"`), or anything else.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ThreadPart<'a> {
    Int(i128),
    Text(std::borrow::Cow<'a, str>),
    Other,
}

impl ThreadPart<'_> {
    fn into_owned(self) -> ThreadPart<'static> {
        match self {
            ThreadPart::Int(v) => ThreadPart::Int(v),
            ThreadPart::Text(t) => ThreadPart::Text(std::borrow::Cow::Owned(t.into_owned())),
            ThreadPart::Other => ThreadPart::Other,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for ThreadPart<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ThreadPart<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a process or thread id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(ThreadPart::Int(i128::from(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(ThreadPart::Int(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ThreadPart::Other)
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ThreadPart::Text(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ThreadPart::Text(std::borrow::Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ThreadPart::Other)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ThreadPart::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[derive(Deserialize, Default)]
struct RawArgs {
    #[serde(default)]
    stream: Option<Id>,
    #[serde(default)]
    correlation: Option<Id>,
    #[serde(default)]
    device: Option<Id>,
    #[serde(default)]
    bytes: Option<Id>,
}

/// A timestamp or duration in microseconds, integer or fractional (or a numeric string).
#[derive(Debug, Clone, Copy)]
struct Time {
    value: f64,
    float: bool,
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Time;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a time in microseconds")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Time, E> {
                Ok(Time {
                    value: v as f64,
                    float: false,
                })
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Time, E> {
                Ok(Time {
                    value: v as f64,
                    float: false,
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Time, E> {
                Ok(Time {
                    value: v,
                    float: true,
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Time, E> {
                let value: f64 = v
                    .trim()
                    .parse()
                    .map_err(|_| E::custom(format!("time {v:?} is not a number")))?;
                Ok(Time {
                    value,
                    float: v.contains(['.', 'e', 'E']),
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// An id (pid, tid, stream, correlation, rank): an integer of any size, a float, a string or null.
#[derive(Debug, Clone)]
enum Id {
    Int(i128),
    Text(String),
    Null,
}

impl Id {
    fn into_i64(self) -> Option<i64> {
        match self {
            Id::Int(v) => i64::try_from(v).ok(),
            Id::Text(s) => s.trim().parse().ok(),
            Id::Null => None,
        }
    }

    fn into_u64(self) -> Option<u64> {
        match self {
            Id::Int(v) => u64::try_from(v).ok(),
            Id::Text(s) => s.trim().parse().ok(),
            Id::Null => None,
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer or string id")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id, E> {
                Ok(Id::Int(i128::from(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id, E> {
                Ok(Id::Int(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Id, E> {
                // Python's int() truncates, as HTA does with a float stream number.
                #[expect(
                    clippy::cast_possible_truncation,
                    reason = "ids are integral; a fraction is dropped like int()"
                )]
                Ok(if v.is_finite() {
                    Id::Int(v.trunc() as i128)
                } else {
                    Id::Null
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Id, E> {
                Ok(Id::Text(v.to_owned()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Id, E> {
                Ok(Id::Null)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Id, E> {
                Ok(Id::Null)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Trace, KinetoError> {
        read(s.as_bytes())
    }

    #[test]
    fn reads_kernels_runtime_and_ids_of_any_shape() {
        let t = parse(
            r#"{"distributedInfo": {"rank": 3}, "traceEvents": [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": "stream 7", "ts": 10.5, "dur": 2,
             "args": {"stream": 7, "correlation": 18446744073709551615, "device": 0}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": "host", "tid": 1, "ts": 9, "dur": 1,
             "args": {"correlation": 5, "Comms Id": 18446744073709551615}},
            {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "x"}},
            {"ph": "f", "id": 5, "pid": 0, "tid": 7, "ts": 10, "cat": "ac2g", "name": "ac2g", "bp": "e"}
        ]}"#,
        )
        .expect("valid");
        assert_eq!(t.rank, Some(3));
        assert_eq!(t.events_seen, 4);
        assert_eq!(t.gpu.len(), 1);
        assert_eq!(t.gpu[0].stream, 7);
        assert_eq!(
            t.gpu[0].correlation, -1,
            "a u64 above i64::MAX is no usable correlation"
        );
        assert!(t.float_timestamps);
        assert_eq!(t.cpu.len(), 1);
        assert_eq!(t.cpu[0].kind, CpuKind::Runtime);
        assert_eq!(t.cpu[0].correlation, 5);
    }

    #[test]
    fn a_bare_array_is_a_trace() {
        let t = parse(r#"[{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 3}]"#)
            .expect("valid");
        assert_eq!(t.cpu.len(), 1);
        assert!(!t.float_timestamps);
    }

    #[test]
    fn unescaped_quotes_are_a_malformed_error_with_a_position() {
        let err = parse("{\"traceEvents\": [\n{\"ph\": \"X\", \"name\": \"at::\"foo\"\", \"ts\": 1, \"dur\": 1}]}")
            .expect_err("malformed");
        assert!(
            matches!(err, KinetoError::Malformed { line: 2, .. }),
            "{err:?}"
        );
        assert!(err.hint().is_some());
    }

    /// A trace of `n` kernels, one event per line, each `ts` its index.
    fn kernels(n: usize) -> String {
        use std::fmt::Write as _;
        let mut text = String::from("{\"schemaVersion\": 1,\n \"traceEvents\": [\n");
        for i in 0..n {
            if i > 0 {
                text.push_str(",\n");
            }
            write!(
                text,
                r#"{{"ph": "X", "cat": "kernel", "name": "k{}", "pid": 0, "tid": 7, "ts": {i}, "dur": 1.5, "args": {{"stream": 7, "correlation": {i}, "device": 0, "note": "a \"quoted\" \\ string"}}}}"#,
                i % 7
            )
            .expect("writes to a string");
        }
        text.push_str("\n], \"displayTimeUnit\": \"ms\"}");
        text
    }

    /// Hands out at most `step` bytes per read, as a slow pipe or a gzip stream might.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(out.len()).min(self.rest.len());
            out[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    #[test]
    fn events_across_chunk_boundaries_are_read_whole_and_in_order() {
        let text = kernels(30_000);
        assert!(
            text.len() > 3 * crate::evidence::chunks::CHUNK,
            "spans several chunks"
        );
        for trace in [
            read(text.as_bytes()).expect("valid"),
            read(Trickle {
                rest: text.as_bytes(),
                step: 4093,
            })
            .expect("valid in small reads"),
        ] {
            assert_eq!(trace.events_seen, 30_000);
            assert_eq!(trace.gpu.len(), 30_000);
            for (i, op) in trace.gpu.iter().enumerate() {
                assert_eq!(
                    (op.ts, op.correlation),
                    (i as f64, i64::try_from(i).expect("small")),
                    "event {i}"
                );
                assert_eq!(trace.names.get(op.name), format!("k{}", i % 7));
            }
            assert!(trace.float_timestamps);
        }
    }

    #[test]
    fn an_error_past_the_first_chunk_names_its_line_and_column() {
        let mut text = kernels(20_000);
        // Event 15,000 (line 15,003) loses the comma after its "ph".
        let bad = text
            .match_indices(r#""ts": 15000,"#)
            .next()
            .expect("the event")
            .0;
        let line_start = text[..bad].rfind('\n').expect("a line") + 1;
        let ph = line_start + text[line_start..].find(r#""X","#).expect("ph") + 3;
        text.remove(ph);
        let err = read(text.as_bytes()).expect_err("malformed");
        let KinetoError::Malformed { line, column, .. } = err else {
            panic!("{err:?}")
        };
        assert_eq!(line, 15_003);
        // Where serde_json puts the error in that line on its own.
        let bad_line = text[line_start..].lines().next().expect("the line");
        let alone = serde_json::from_str::<serde_json::Value>(bad_line).expect_err("bad");
        assert_eq!(column, alone.column());
        let err = read(&text.as_bytes()[..text.len() / 2]).expect_err("truncated");
        assert!(matches!(err, KinetoError::Truncated { .. }), "{err:?}");
    }

    /// Times no profiler writes would print as `inf µs`, `NaN%` or a wall of 31 digits: each
    /// is refused naming the event's place, its line and column, and the field.
    #[test]
    fn absurd_times_are_refused_with_the_events_position_and_field() {
        let ok = r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 3}"#;
        for (bad, field, shown) in [
            (r#""ts": 1, "dur": 1e308"#, "dur", "1e308"),
            (r#""ts": "inf", "dur": 1"#, "ts", "inf"),
            (r#""ts": "NaN", "dur": 1"#, "ts", "NaN"),
            (r#""ts": 1e31, "dur": 1"#, "ts", "1e31"),
            (r#""ts": 5, "dur": -1e31"#, "dur", "-1e31"),
            (r#""ts": 5, "dur": -0.5"#, "dur", "-0.5"),
        ] {
            let text = format!(
                "{{\"traceEvents\": [\n{ok},\n  {{\"ph\": \"X\", \"name\": \"ProfilerStep#1\", {bad}}}]}}"
            );
            let err = parse(&text).expect_err(bad);
            let KinetoError::AbsurdTime {
                index,
                line,
                column,
                field: f,
                value,
            } = &err
            else {
                panic!("{bad}: {err:?}")
            };
            assert_eq!((*index, *line, *column), (1, 3, 3), "{bad}");
            assert_eq!(f.to_string(), field, "{bad}");
            assert_eq!(format!("{value:?}"), shown, "{bad}");
            let message = err.to_string();
            assert!(
                message.starts_with(&format!(
                    "traceEvents[1] (line 3, column 3): `{field}` is {shown} µs, but a"
                )),
                "{message}"
            );
            assert!(
                err.hint()
                    .is_some_and(|h| h.contains("record the trace again"))
            );
        }
        // The edges are times: zero, 2^53 µs, a negative timestamp; a skipped event is not read.
        let edges = format!(
            "[{ok}, {{\"ph\": \"X\", \"ts\": -5, \"dur\": 0}}, {{\"ph\": \"X\", \"ts\": 9007199254740992, \"dur\": 9007199254740992}}, {{\"ph\": \"i\", \"ts\": \"inf\", \"dur\": -1}}]"
        );
        assert_eq!(parse(&edges).expect("valid").cpu.len(), 3);
    }

    #[test]
    fn truncation_and_empty_objects_are_typed() {
        let err = parse(r#"{"traceEvents": [{"ph": "X", "ts": 1"#).expect_err("truncated");
        assert!(matches!(err, KinetoError::Truncated { .. }), "{err:?}");
        let err = parse(r#"{"schemaVersion": 1}"#).expect_err("no events");
        assert!(matches!(err, KinetoError::NoEvents));
        let err = read(&b"{\"traceEvents\": [{\"name\": \"\xff\"}]}"[..]).expect_err("not utf-8");
        assert!(matches!(err, KinetoError::Malformed { .. }), "{err:?}");
    }
}
