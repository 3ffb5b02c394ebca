//! The compact encoding of raw step samples (one blob per result: a list of repeats, each a list
//! of step times in ms). Pure: bytes in, bytes out.
//!
//! # Precision
//! The encoding is **lossless**: every `f64` comes back bit for bit (NaN payloads and `-0.0`
//! included). Per repeat, the encoder uses the first of these exact representations that fits,
//! verifying the round trip before choosing it, and falls back to *raw* when the varints would
//! not be smaller:
//! - *decimal*: every value is `n / 10^k` for integers `n` and one `k` in 0..=9 (how times
//!   written as JSON decimals such as `6.0213` parse; `n / 10^k` is correctly rounded, so it
//!   reproduces the parsed `f64` exactly);
//! - *binary*: every value is `n / 2^e` for one `e` in 0..=62 (times that were `f32`, as CUDA
//!   events report them, widened to `f64`);
//! - *raw*: eight little-endian bytes per value (anything else).
//!
//! The integers of the first two are delta-coded from the previous sample, zig-zag mapped and
//! written as LEB128 varints: steady-state steps differ by microseconds, so a sample takes about
//! two or three bytes instead of eight.
//!
//! # Layout (version 1)
//! ```text
//! blob   := 0x01 varint(repeats) repeat*
//! repeat := varint(n) mode param payload
//!   mode 0 decimal: param = k, payload = n varints
//!   mode 1 binary:  param = e, payload = n varints
//!   mode 2 raw:     param = 0, payload = n * 8 bytes
//! ```
//! A blob that is truncated, too long, or names an unknown version or mode is an error, never a
//! panic.

use thiserror::Error;

const VERSION: u8 = 1;
const MODE_DECIMAL: u8 = 0;
const MODE_BINARY: u8 = 1;
const MODE_RAW: u8 = 2;
const MAX_DECIMAL_DIGITS: u8 = 9;
const MAX_BINARY_BITS: u8 = 62;
/// Integers are kept below 2^62 so that deltas between two of them never overflow an `i64`.
const MAX_MAGNITUDE: f64 = 4_611_686_018_427_387_904.0;

/// Why a stored sample blob could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SampleError {
    #[error("sample blob is empty")]
    Empty,
    #[error("sample blob has unknown format version {0}")]
    Version(u8),
    #[error("sample blob ends early at byte {0}")]
    Truncated(usize),
    #[error("sample blob has a varint longer than 64 bits at byte {0}")]
    VarintOverflow(usize),
    #[error("sample blob has unknown mode {mode} (parameter {param}) at byte {at}")]
    Mode { mode: u8, param: u8, at: usize },
    #[error("sample blob claims {count} items at byte {at} but only {left} bytes remain")]
    Count { count: u64, at: usize, left: usize },
    #[error("sample blob has {0} trailing bytes")]
    Trailing(usize),
}

/// Encodes repeats of samples (ms) into the compact blob. Never fails: values that fit no
/// integer scale are stored raw.
#[must_use]
pub fn encode(repeats: &[Vec<f64>]) -> Vec<u8> {
    let samples: usize = repeats.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(2 + repeats.len() * 3 + samples * 3);
    out.push(VERSION);
    put_varint(&mut out, repeats.len() as u64);
    for repeat in repeats {
        encode_repeat(&mut out, repeat);
    }
    out
}

/// The number of repeats a blob written by [`encode`] holds, read from its header alone.
pub fn repeat_count(blob: &[u8]) -> Result<usize, SampleError> {
    let mut r = Reader { blob, at: 0 };
    let version = r.byte()?;
    if version != VERSION {
        return Err(SampleError::Version(version));
    }
    r.count(3)
}

/// Decodes a blob written by [`encode`].
pub fn decode(blob: &[u8]) -> Result<Vec<Vec<f64>>, SampleError> {
    let mut r = Reader { blob, at: 0 };
    let version = r.byte()?;
    if version != VERSION {
        return Err(SampleError::Version(version));
    }
    // Each repeat takes at least three bytes (count, mode, parameter).
    let count = r.count(3)?;
    let mut repeats = Vec::with_capacity(count);
    for _ in 0..count {
        repeats.push(decode_repeat(&mut r)?);
    }
    if r.at != blob.len() {
        return Err(SampleError::Trailing(blob.len() - r.at));
    }
    Ok(repeats)
}

fn encode_repeat(out: &mut Vec<u8>, values: &[f64]) {
    put_varint(out, values.len() as u64);
    if let Some((mode, param, ints)) = decimal_ints(values).or_else(|| binary_ints(values)) {
        let mut payload = Vec::with_capacity(values.len() * 3);
        let mut previous = 0_i64;
        for n in ints {
            put_varint(&mut payload, zigzag(n.wrapping_sub(previous)));
            previous = n;
        }
        // Values with many significant digits can cost more as varints than raw.
        if payload.len() < values.len() * 8 {
            out.push(mode);
            out.push(param);
            out.extend_from_slice(&payload);
            return;
        }
    }
    out.push(MODE_RAW);
    out.push(0);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
}

fn decode_repeat(r: &mut Reader<'_>) -> Result<Vec<f64>, SampleError> {
    let at = r.at;
    let len = r.count(1)?;
    let mode = r.byte()?;
    let param = r.byte()?;
    let scale = match (mode, param) {
        (MODE_DECIMAL, k) if k <= MAX_DECIMAL_DIGITS => Some(Scale::Decimal(pow10(k))),
        (MODE_BINARY, e) if e <= MAX_BINARY_BITS => Some(Scale::Binary(pow2_neg(e))),
        (MODE_RAW, 0) => None,
        _ => return Err(SampleError::Mode { mode, param, at }),
    };
    let mut values = Vec::with_capacity(len);
    let Some(scale) = scale else {
        if len.saturating_mul(8) > r.left() {
            return Err(SampleError::Count {
                count: len as u64,
                at,
                left: r.left(),
            });
        }
        for _ in 0..len {
            values.push(f64::from_le_bytes(r.array()?));
        }
        return Ok(values);
    };
    let mut previous = 0_i64;
    for _ in 0..len {
        let n = previous.wrapping_add(unzigzag(r.varint()?));
        previous = n;
        values.push(scale.apply(n));
    }
    Ok(values)
}

#[derive(Clone, Copy)]
enum Scale {
    Decimal(f64),
    Binary(f64),
}

impl Scale {
    #[expect(
        clippy::cast_precision_loss,
        reason = "the encoder only picks a scale whose integers convert exactly"
    )]
    fn apply(self, n: i64) -> f64 {
        match self {
            Scale::Decimal(ten_to_k) => n as f64 / ten_to_k,
            Scale::Binary(two_to_minus_e) => n as f64 * two_to_minus_e,
        }
    }
}

/// The smallest `k` such that every value is exactly `n / 10^k`, with the integers.
fn decimal_ints(values: &[f64]) -> Option<(u8, u8, Vec<i64>)> {
    if !values.iter().all(|v| v.is_finite()) {
        return None;
    }
    (0..=MAX_DECIMAL_DIGITS).find_map(|k| {
        let scale = Scale::Decimal(pow10(k));
        let ints = exact_ints(values, |v| v * pow10(k), scale)?;
        Some((MODE_DECIMAL, k, ints))
    })
}

/// The smallest `e` such that every value is exactly `n / 2^e`, with the integers.
fn binary_ints(values: &[f64]) -> Option<(u8, u8, Vec<i64>)> {
    let mut bits = 0_u8;
    for &v in values {
        bits = bits.max(fraction_bits(v)?);
    }
    if bits > MAX_BINARY_BITS {
        return None;
    }
    let factor = pow2_neg(bits).recip();
    let ints = exact_ints(values, |v| v * factor, Scale::Binary(pow2_neg(bits)))?;
    Some((MODE_BINARY, bits, ints))
}

/// Scales each value to an integer and keeps the result only if decoding gives the same bits.
#[expect(
    clippy::cast_possible_truncation,
    reason = "the value is rounded and checked to be below 2^62 first"
)]
fn exact_ints(values: &[f64], to_int: impl Fn(f64) -> f64, scale: Scale) -> Option<Vec<i64>> {
    values
        .iter()
        .map(|&v| {
            let x = to_int(v).round();
            if x.is_nan() || x.abs() >= MAX_MAGNITUDE {
                return None;
            }
            let n = x as i64;
            (scale.apply(n).to_bits() == v.to_bits()).then_some(n)
        })
        .collect()
}

/// How many binary digits after the point a finite value needs; `None` for NaN or infinities,
/// and more than [`MAX_BINARY_BITS`] for tiny values.
fn fraction_bits(v: f64) -> Option<u8> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        return Some(0);
    }
    let bits = v.to_bits();
    let biased = i64::try_from((bits >> 52) & 0x7ff).ok()?;
    let mantissa = bits & ((1_u64 << 52) - 1);
    // v = m * 2^(exp) with m an integer of 53 bits (normal) or 52 (subnormal).
    let (m, exp) = if biased == 0 {
        (mantissa, -1074)
    } else {
        (mantissa | (1_u64 << 52), biased - 1075)
    };
    let exp = exp + i64::from(m.trailing_zeros());
    Some(u8::try_from((-exp).clamp(0, 255)).unwrap_or(u8::MAX))
}

fn pow10(k: u8) -> f64 {
    10_f64.powi(i32::from(k))
}

/// 2^-e built from its bits, so it is exact for every e the format allows.
fn pow2_neg(e: u8) -> f64 {
    f64::from_bits((1023 - u64::from(e)) << 52)
}

fn zigzag(n: i64) -> u64 {
    #[expect(
        clippy::cast_sign_loss,
        reason = "zig-zag reinterprets the bits by design"
    )]
    let z = ((n << 1) ^ (n >> 63)) as u64;
    z
}

fn unzigzag(z: u64) -> i64 {
    #[expect(
        clippy::cast_possible_wrap,
        reason = "zig-zag reinterprets the bits by design"
    )]
    let n = ((z >> 1) as i64) ^ -((z & 1) as i64);
    n
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        #[expect(clippy::cast_possible_truncation, reason = "masked to seven bits")]
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    #[expect(clippy::cast_possible_truncation, reason = "below 0x80 here")]
    out.push(v as u8);
}

struct Reader<'a> {
    blob: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn left(&self) -> usize {
        self.blob.len() - self.at
    }

    fn byte(&mut self) -> Result<u8, SampleError> {
        let b = *self.blob.get(self.at).ok_or(if self.blob.is_empty() {
            SampleError::Empty
        } else {
            SampleError::Truncated(self.at)
        })?;
        self.at += 1;
        Ok(b)
    }

    fn array(&mut self) -> Result<[u8; 8], SampleError> {
        let bytes = self
            .blob
            .get(self.at..self.at + 8)
            .ok_or(SampleError::Truncated(self.at))?;
        self.at += 8;
        let mut out = [0; 8];
        out.copy_from_slice(bytes);
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64, SampleError> {
        let start = self.at;
        let mut v = 0_u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let part = u64::from(b & 0x7f);
            if shift == 63 && part > 1 {
                return Err(SampleError::VarintOverflow(start));
            }
            v |= part << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(SampleError::VarintOverflow(start))
    }

    /// A count of items that each take at least `min_bytes`, checked against what remains so
    /// that a corrupt count cannot ask for a huge allocation.
    fn count(&mut self, min_bytes: usize) -> Result<usize, SampleError> {
        let at = self.at;
        let count = self.varint()?;
        match usize::try_from(count) {
            Ok(n) if n.saturating_mul(min_bytes) <= self.left() => Ok(n),
            _ => Err(SampleError::Count {
                count,
                at,
                left: self.left(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bits(repeats: &[Vec<f64>]) -> Vec<Vec<u64>> {
        repeats
            .iter()
            .map(|r| r.iter().map(|v| v.to_bits()).collect())
            .collect()
    }

    fn round_trips(repeats: &[Vec<f64>]) {
        let blob = encode(repeats);
        let back = decode(&blob).expect("decodes");
        assert_eq!(bits(&back), bits(repeats));
    }

    #[test]
    fn table_of_round_trips_and_modes() {
        // (values, expected mode of the single repeat)
        let cases: Vec<(Vec<f64>, u8)> = vec![
            (vec![], MODE_RAW),
            (vec![6.0213, 6.0198, 6.0301], MODE_DECIMAL),
            (vec![31.0, 6.0, 1e6], MODE_DECIMAL),
            (vec![-0.5, 0.25, 12.125], MODE_DECIMAL),
            (
                vec![f64::from(6.021_248_f32), f64::from(6.018_1_f32)],
                MODE_BINARY,
            ),
            (vec![-0.0], MODE_RAW),
            (vec![f64::NAN, 1.0], MODE_RAW),
            (vec![f64::INFINITY], MODE_RAW),
            (vec![std::f64::consts::PI], MODE_RAW),
            (vec![1e300], MODE_RAW),
            (vec![f64::MIN_POSITIVE], MODE_RAW),
        ];
        for (values, mode) in cases {
            let blob = encode(std::slice::from_ref(&values));
            // version, repeat count 1, sample count (one byte here), then the mode.
            assert_eq!(blob[3], mode, "mode for {values:?}");
            round_trips(&[values]);
        }
    }

    #[test]
    fn typical_samples_take_about_three_bytes() {
        let values: Vec<f64> = (0..100)
            .map(|i| f64::from(6.0_f32 + (i % 7) as f32 * 0.0013))
            .collect();
        let blob = encode(&[values.clone(), values.clone(), values]);
        assert!(blob.len() <= 300 * 3 + 16, "{} bytes", blob.len());
    }

    #[test]
    fn corrupt_blobs_are_errors() {
        let good = encode(&[vec![6.02, 6.01], vec![f64::NAN]]);
        let cases: Vec<(Vec<u8>, SampleError)> = vec![
            (vec![], SampleError::Empty),
            (vec![9], SampleError::Version(9)),
            (vec![1], SampleError::Truncated(1)),
            (
                vec![1, 100, 1],
                SampleError::Count {
                    count: 100,
                    at: 1,
                    left: 1,
                },
            ),
            (
                vec![1, 1, 0, 7, 0],
                SampleError::Mode {
                    mode: 7,
                    param: 0,
                    at: 2,
                },
            ),
            (
                vec![1, 1, 0, MODE_DECIMAL, 10],
                SampleError::Mode {
                    mode: 0,
                    param: 10,
                    at: 2,
                },
            ),
            (vec![1, 0, 5], SampleError::Trailing(1)),
            (
                vec![
                    1,
                    1,
                    1,
                    MODE_DECIMAL,
                    0,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0xff,
                    0x7f,
                ],
                SampleError::VarintOverflow(5),
            ),
            (
                good[..good.len() - 1].to_vec(),
                SampleError::Count {
                    count: 1,
                    at: 8,
                    left: 7,
                },
            ),
            (vec![1, 1, 2, 0, 2, 180], SampleError::Truncated(6)),
        ];
        for (blob, want) in cases {
            assert_eq!(decode(&blob), Err(want), "blob {blob:?}");
        }
    }

    proptest! {
        #[test]
        fn any_f64_round_trips(repeats in prop::collection::vec(
            prop::collection::vec(any::<f64>(), 0..40), 0..5)) {
            round_trips(&repeats);
        }

        #[test]
        fn decimal_times_round_trip(repeats in prop::collection::vec(
            prop::collection::vec((1_u64..100_000_000, 0_u32..7), 0..40), 0..5)) {
            let repeats: Vec<Vec<f64>> = repeats.iter()
                .map(|r| r.iter().map(|&(n, k)| format!("{n}e-{k}").parse().expect("number")).collect())
                .collect();
            round_trips(&repeats);
        }

        #[test]
        fn f32_times_round_trip(repeats in prop::collection::vec(
            prop::collection::vec(0.001_f32..10_000.0, 0..40), 0..5)) {
            let repeats: Vec<Vec<f64>> = repeats.iter()
                .map(|r| r.iter().map(|&v| f64::from(v)).collect())
                .collect();
            round_trips(&repeats);
        }

        #[test]
        fn arbitrary_bytes_never_panic(blob in prop::collection::vec(any::<u8>(), 0..64)) {
            // Whatever decodes must re-encode to the same values.
            if let Ok(repeats) = decode(&blob) {
                round_trips(&repeats);
            }
        }
    }
}
