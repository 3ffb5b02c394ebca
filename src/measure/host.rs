//! The host CPU as a stand-in device for the examples: a streaming read kernel, the memory
//! bandwidth probe that uses it, and the probe's cache file. Does I/O (the clock, one file).
//!
//! The example harness (`utilgate harness cpu-decode`) reads the floor's bytes with the same
//! kernel on one thread, so its utilisation against this probe says how close a plain
//! single-threaded decode step gets to the host's measured read bandwidth.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Bytes the probe streams per pass: large enough to defeat every CPU cache.
const PROBE_BYTES: usize = 512 << 20;
/// Passes of the probe; the fastest counts (the achievable figure).
const PROBE_PASSES: usize = 7;

/// Read every word of `buf` and fold them so the compiler cannot skip the loads. Eight
/// independent accumulators let the loop vectorise and keep many loads in flight.
#[must_use]
pub fn stream_read(buf: &[u64]) -> u64 {
    let mut acc = [0u64; 8];
    let chunks = buf.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, w) in acc.iter_mut().zip(chunk) {
            *a = a.wrapping_add(*w);
        }
    }
    let mut sum = tail.iter().fold(0u64, |s, w| s.wrapping_add(*w));
    for a in acc {
        sum = sum.wrapping_add(a);
    }
    sum
}

/// A buffer of `bytes` (rounded up to whole words) filled with non-zero data, so that no
/// page stays shared with the zero page and every read reaches memory.
#[must_use]
pub fn filled_buffer(bytes: u64, seed: u64) -> Vec<u64> {
    let words = usize::try_from(bytes.div_ceil(8)).unwrap_or(usize::MAX);
    let mut x = seed | 1;
    (0..words)
        .map(|_| {
            // xorshift64: cheap, non-constant fill.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// A measured host read bandwidth.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HostBandwidth {
    pub host: String,
    pub bytes_per_s: f64,
    pub probe_bytes: u64,
    pub passes: usize,
    pub measured_at: String,
}

/// Measure the single-thread streaming read bandwidth: the fastest of several passes over a
/// buffer far larger than the caches.
#[must_use]
pub fn measure_read_bandwidth() -> (f64, u64, usize) {
    let buf = filled_buffer(PROBE_BYTES as u64, 0x9e37_79b9_7f4a_7c15);
    let mut best = f64::INFINITY;
    for _ in 0..PROBE_PASSES {
        let start = Instant::now();
        black_box(stream_read(black_box(&buf)));
        best = best.min(start.elapsed().as_secs_f64());
    }
    (PROBE_BYTES as f64 / best, PROBE_BYTES as u64, PROBE_PASSES)
}

/// The cached figure for `host` in `cache`, or a fresh measurement written there.
/// A cache for another host, or an unreadable one, is measured anew.
pub fn cached_or_measure(
    cache: &Path,
    host: &str,
    now: &str,
) -> Result<HostBandwidth, std::io::Error> {
    if let Ok(text) = std::fs::read_to_string(cache)
        && let Ok(found) = serde_json::from_str::<HostBandwidth>(&text)
        && found.host == host
        && found.bytes_per_s.is_finite()
        && found.bytes_per_s > 0.0
    {
        return Ok(found);
    }
    let (bytes_per_s, probe_bytes, passes) = measure_read_bandwidth();
    let found = HostBandwidth {
        host: host.to_owned(),
        bytes_per_s,
        probe_bytes,
        passes,
        measured_at: now.to_owned(),
    };
    if let Some(dir) = cache.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&found).map_err(std::io::Error::other)?;
    std::fs::write(cache, text)?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_read_sums_every_word() {
        let buf: Vec<u64> = (1..=21).collect();
        assert_eq!(stream_read(&buf), 231);
        assert_eq!(stream_read(&[]), 0);
    }

    #[test]
    fn filled_buffer_has_no_zero_words_and_the_right_size() {
        let buf = filled_buffer(1001, 7);
        assert_eq!(buf.len(), 126);
        assert!(buf.iter().all(|w| *w != 0));
    }

    #[test]
    fn cache_is_reused_for_the_same_host_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = dir.path().join("host.json");
        let planted = HostBandwidth {
            host: "a".into(),
            bytes_per_s: 1.0e10,
            probe_bytes: 1,
            passes: 1,
            measured_at: "then".into(),
        };
        std::fs::write(&cache, serde_json::to_string(&planted).expect("json")).expect("write");
        let found = cached_or_measure(&cache, "a", "now").expect("cached");
        assert_eq!(found, planted);
    }
}
