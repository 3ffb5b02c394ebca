//! Cases and their keys: one point of a suite's grid (model x precision x phase x batch x
//! context), and the verdict vocabulary of DESIGN.md §2. Pure.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Which part of inference a case times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// One new token per sequence per step; `context` is the KV length.
    Decode,
    /// The whole prompt in one pass; `context` is the prompt length.
    Prefill,
}

impl Phase {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Decode => "decode",
            Phase::Prefill => "prefill",
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Phase {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "decode" => Ok(Phase::Decode),
            "prefill" => Ok(Phase::Prefill),
            other => Err(format!("unknown phase {other:?}: expected \"decode\" or \"prefill\"")),
        }
    }
}

/// The identity of a case across runs. Results are only ever compared within one GPU SKU, which
/// is stored beside the key rather than in it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CaseKey {
    pub suite: String,
    pub model: String,
    pub precision: String,
    pub phase: Phase,
    pub batch: u64,
    pub context: u64,
}

impl fmt::Display for CaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}/b{}/c{}",
            self.suite, self.model, self.precision, self.phase, self.batch, self.context
        )
    }
}

/// The decision for one case (DESIGN.md §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Regressed,
    Improved,
    Inconclusive,
    New,
    Missing,
    Invalid,
    Error,
}

impl Verdict {
    pub const ALL: [Verdict; 8] = [
        Verdict::Pass,
        Verdict::Regressed,
        Verdict::Improved,
        Verdict::Inconclusive,
        Verdict::New,
        Verdict::Missing,
        Verdict::Invalid,
        Verdict::Error,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Inconclusive => "inconclusive",
            Verdict::New => "new",
            Verdict::Missing => "missing",
            Verdict::Invalid => "invalid",
            Verdict::Error => "error",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Verdict {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Verdict::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
                format!("unknown verdict {s:?}: expected one of {}", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_names_round_trip() {
        for v in Verdict::ALL {
            assert_eq!(v.as_str().parse::<Verdict>(), Ok(v));
        }
        assert!("passed".parse::<Verdict>().is_err());
    }

    #[test]
    fn case_key_display_is_stable() {
        let key = CaseKey {
            suite: "decode".into(),
            model: "llama-3.1-8b".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch: 8,
            context: 4096,
        };
        assert_eq!(key.to_string(), "decode/llama-3.1-8b/bf16/decode/b8/c4096");
    }
}
