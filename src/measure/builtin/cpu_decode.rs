//! `utilgate harness cpu-decode`: the example harness. It speaks protocol v1 like any user's
//! harness (environment in, JSON lines out to `$UTILGATE_OUT`) and does real, measurable,
//! memory-bound work shaped like one decode step: every step streams the bytes the floor says a
//! decode step must move — the weights once, each sequence's KV cache at the current context —
//! and writes each sequence's new K/V. Nothing about the step time is assumed or hard-coded:
//! it is the wall time of that work on this host. Does I/O (environment, clock, one file).

#![expect(
    clippy::disallowed_methods,
    reason = "the CPU harness writes its results file"
)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::io::Write as _;
use std::time::Instant;

use super::protocol_env::ProtocolInputs;
use crate::case::Phase;
use crate::catalog::{ComputeDtype, GpuSpec, Precision};
use crate::cli::CpuDecodeArgs;
use crate::error::Error;
use crate::measure::host::{filled_buffer, stream_read};

pub fn cpu_decode(args: &CpuDecodeArgs) -> Result<(), Error> {
    let loaded = crate::config::load(&args.config)?;
    let inputs = ProtocolInputs::from_env("cpu-decode")?;
    if inputs.phase != Phase::Decode {
        return Err(Error::CpuDecodePhase);
    }
    let model = inputs.model_spec(&loaded)?;
    let (model_name, phase, batch, context) =
        (&inputs.model, inputs.phase, inputs.batch, inputs.context);
    let (warmup, steps, out_path) = (inputs.warmup, inputs.steps, inputs.out.clone());
    let kv_dtype = loaded
        .config
        .suites
        .iter()
        .find(|s| s.models.contains(model_name))
        .and_then(|s| s.kv_dtype.clone());
    let precision = Precision::parse(&inputs.precision, kv_dtype.as_deref())?;
    // The bytes a step moves do not depend on the device; any spec will do for the breakdown.
    let every_peak = ComputeDtype::ALL
        .iter()
        .map(|d| (d.as_str().to_owned(), 1.0))
        .collect();
    let unit = GpuSpec::declared("host", 1.0, &every_peak, None)?;
    let floor = crate::floor::floor(model, &unit, &precision, phase, batch, context)?;

    let weight_bytes = floor.bytes.weights + floor.bytes.embedding + floor.bytes.lm_head;
    let kv_read_per_seq = floor.bytes.kv_read / batch as f64;
    let kv_write_per_seq = floor.bytes.kv_write / batch as f64;
    let to_u64 = |x: f64| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "byte counts are finite, non-negative and far below 2^53"
        )]
        let n = x.round() as u64;
        n
    };
    let weights = filled_buffer(to_u64(weight_bytes), 1);
    let mut kv: Vec<Vec<u64>> = (0..batch)
        .map(|seq| filled_buffer(to_u64(kv_read_per_seq), seq + 2))
        .collect();
    let new_kv_words = usize::try_from(to_u64(kv_write_per_seq).div_ceil(8)).unwrap_or(0);
    // An injected slowdown re-reads part of the weights: more real work, never a fake time.
    let extra_words = if args.slowdown > 1.0 {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a fraction of the buffer length"
        )]
        let n = ((args.slowdown - 1.0) * weights.len() as f64) as usize;
        n.min(weights.len())
    } else {
        0
    };

    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&out_path)
        .map_err(|source| Error::Io {
            path: out_path.clone().into(),
            source,
        })?;
    let mut lines = String::new();
    let _ = writeln!(
        lines,
        "{{\"env\": {{\"utilgate\": \"{}\", \"harness\": \"cpu-decode\", \"weight_bytes\": \"{}\"}}}}",
        env!("CARGO_PKG_VERSION"),
        to_u64(weight_bytes)
    );
    let mut position = 0usize;
    for step in 0..warmup + steps {
        let start = Instant::now();
        let mut acc = stream_read(black_box(&weights));
        acc = acc.wrapping_add(stream_read(black_box(&weights[..extra_words])));
        for cache in &mut kv {
            acc = acc.wrapping_add(stream_read(black_box(cache)));
            // Write this step's K/V for the sequence (the cache is a ring of the context).
            utilgate_stream::ring_add(cache, position, new_kv_words, acc | 1);
        }
        black_box(acc);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        position = position.wrapping_add(new_kv_words);
        if step < warmup {
            let _ = writeln!(lines, "{{\"step_ms\": {ms}, \"warmup\": true}}");
        } else {
            let _ = writeln!(lines, "{{\"step_ms\": {ms}}}");
        }
    }
    out.write_all(lines.as_bytes())
        .map_err(|source| Error::Io {
            path: out_path.into(),
            source,
        })?;
    Ok(())
}
