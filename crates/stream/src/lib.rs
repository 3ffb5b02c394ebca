//! The streaming read kernel that utilgate's host bandwidth probe and its CPU example harness
//! share. It is a crate of its own so that it is compiled with full optimisation in every
//! profile (the root Cargo.toml sets `opt-level = 3` for it): at the debug profile's
//! `opt-level = 1` the loop did not vectorise and was bound by the CPU, not by memory, and its
//! speed then moved with whatever else ran on the core (4.1 or 7.4 GB/s from one probe to the
//! next on a 2-core VM, against 11-13 GB/s memory-bound). A probe and a harness bound by the CPU
//! measure the core, not the memory the floor is about. Pure.

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

/// Add `value` to `len` words of `buf` starting at `position`, wrapping around its end: the
/// write half of a decode step (the new token's K/V appended to a ring of the context).
pub fn ring_add(buf: &mut [u64], position: usize, len: usize, value: u64) {
    let n = buf.len();
    if n == 0 {
        return;
    }
    for i in 0..len {
        let at = (position + i) % n;
        buf[at] = buf[at].wrapping_add(value);
    }
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
    fn ring_add_wraps_around_the_end() {
        let mut buf = vec![0u64; 4];
        ring_add(&mut buf, 3, 3, 5);
        assert_eq!(buf, [5, 5, 0, 5]);
        ring_add(&mut [], 0, 3, 1);
    }
}
