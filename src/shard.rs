//! Sharding a grid over a CI matrix: `--shard K/N` picks every N-th case of the grid's sorted
//! order, starting at the K-th, so the N shards partition the grid exactly. Pure.

use std::fmt;
use std::str::FromStr;

use crate::case::CaseKey;

/// One shard of N: `index` counts from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// Why a `--shard` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("`{0}` is not K/N; write the shard as two whole numbers, e.g. --shard 1/4")]
    Syntax(String),
    #[error(
        "shard count 0 in `{0}`: N is how many shards the grid is split into, at least 1 (e.g. --shard 1/4)"
    )]
    NoShards(String),
    #[error(
        "shard `{value}` is out of range: K counts from 1 to N, so use --shard 1/{count} to {count}/{count}"
    )]
    OutOfRange { value: String, count: u32 },
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let syntax = || ShardError::Syntax(s.to_owned());
        let (k, n) = s.trim().split_once('/').ok_or_else(syntax)?;
        let index: u32 = k.trim().parse().map_err(|_| syntax())?;
        let count: u32 = n.trim().parse().map_err(|_| syntax())?;
        if count == 0 {
            return Err(ShardError::NoShards(s.to_owned()));
        }
        if index == 0 || index > count {
            return Err(ShardError::OutOfRange {
                value: s.to_owned(),
                count,
            });
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    /// Whether this shard runs `key` of `grid` (every key of the grid, in any order). The
    /// grid's sorted order is the stable order: the same grid splits the same way on every
    /// runner, whatever order the config lists it in. A key not in the grid is in no shard.
    #[must_use]
    pub fn owns(self, grid: &[&CaseKey], key: &CaseKey) -> bool {
        let mut sorted: Vec<&CaseKey> = grid.to_vec();
        sorted.sort();
        sorted.dedup();
        sorted
            .binary_search(&key)
            .is_ok_and(|pos| pos % self.count as usize == (self.index - 1) as usize)
    }

    /// The positions in `grid` this shard runs, in the grid's own order.
    #[must_use]
    pub fn select(self, grid: &[&CaseKey]) -> Vec<usize> {
        let mut sorted: Vec<&CaseKey> = grid.to_vec();
        sorted.sort();
        sorted.dedup();
        let step = self.count as usize;
        let first = (self.index - 1) as usize;
        grid.iter()
            .enumerate()
            .filter(|(_, key)| {
                sorted
                    .binary_search(*key)
                    .is_ok_and(|pos| pos % step == first)
            })
            .map(|(i, _)| i)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;
    use crate::case::Phase;

    fn key(suite: u8, batch: u64, context: u64) -> CaseKey {
        CaseKey {
            suite: format!("s{suite}"),
            model: "m".into(),
            precision: "bf16".into(),
            phase: if batch.is_multiple_of(2) {
                Phase::Decode
            } else {
                Phase::Prefill
            },
            batch,
            context,
            axes: crate::case::Axes::default(),
            tp: 1,
            ep: 1,
        }
    }

    #[test]
    fn bad_values_are_refused_naming_the_fix() {
        for (value, needle) in [
            ("0/4", "1/4 to 4/4"),
            ("5/4", "1/4 to 4/4"),
            ("a/b", "two whole numbers"),
            ("3", "two whole numbers"),
            ("1/0", "at least 1"),
            ("-1/4", "two whole numbers"),
        ] {
            let err = value.parse::<Shard>().expect_err(value).to_string();
            assert!(err.contains(needle), "{value}: {err}");
        }
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!(
            " 1 / 1 ".parse::<Shard>().map(|s| s.to_string()),
            Ok("1/1".into())
        );
    }

    proptest! {
        /// Over random grids in random order: the shards' union is the grid, they are
        /// pairwise disjoint, and their sizes differ by at most one.
        #[test]
        fn shards_partition_the_grid(
            raw in proptest::collection::btree_set((0u8..4, 1u64..64, 1u64..8), 0..80),
            count in 1u32..9,
            seed in any::<u64>(),
        ) {
            let mut grid: Vec<CaseKey> = raw.iter().map(|(s, b, c)| key(*s, *b, *c * 512)).collect();
            // Any listing order of the same grid: rotate it by the seed.
            let turn = if grid.is_empty() { 0 } else { usize::try_from(seed).unwrap_or(usize::MAX) % grid.len() };
            grid.rotate_left(turn);
            let refs: Vec<&CaseKey> = grid.iter().collect();
            let mut seen: BTreeSet<usize> = BTreeSet::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let picked = shard.select(&refs);
                sizes.push(picked.len());
                for i in picked {
                    prop_assert!(seen.insert(i), "case {i} in two shards");
                    prop_assert!(shard.owns(&refs, &grid[i]));
                }
            }
            prop_assert_eq!(seen.len(), grid.len());
            let (lo, hi) = (sizes.iter().min().copied().unwrap_or(0), sizes.iter().max().copied().unwrap_or(0));
            prop_assert!(hi - lo <= 1, "{sizes:?}");
        }

        /// The split does not depend on the order the grid is listed in.
        #[test]
        fn the_split_is_stable_under_reordering(
            raw in proptest::collection::btree_set((0u8..3, 1u64..32, 1u64..4), 1..40),
            count in 1u32..6,
        ) {
            let grid: Vec<CaseKey> = raw.iter().map(|(s, b, c)| key(*s, *b, *c)).collect();
            let mut reversed = grid.clone();
            reversed.reverse();
            let a: Vec<&CaseKey> = grid.iter().collect();
            let b: Vec<&CaseKey> = reversed.iter().collect();
            for index in 1..=count {
                let shard = Shard { index, count };
                let picked_a: BTreeSet<&CaseKey> = shard.select(&a).into_iter().map(|i| a[i]).collect();
                let picked_b: BTreeSet<&CaseKey> = shard.select(&b).into_iter().map(|i| b[i]).collect();
                prop_assert_eq!(picked_a, picked_b);
            }
        }
    }
}
