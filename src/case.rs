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
            other => Err(format!(
                "unknown phase {other:?}: expected \"decode\" or \"prefill\""
            )),
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
                format!(
                    "unknown verdict {s:?}: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// The values a suite's `command` template can use. Every name is always defined, so a typo
/// in the template (`{{ modle }}`) is an error rather than an empty string.
#[derive(Debug, Clone, Serialize)]
pub struct CommandVars<'a> {
    pub suite: &'a str,
    pub model: &'a str,
    pub precision: &'a str,
    pub kv_dtype: &'a str,
    pub phase: Phase,
    pub batch: u64,
    pub context: u64,
    pub warmup_steps: u64,
    pub steps: u64,
    pub repeat: u32,
    /// Absolute path of the running utilgate binary (for its built-in example harness).
    pub utilgate: &'a str,
    /// Directory of the config file.
    pub config_dir: &'a str,
}

fn template_env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env
}

/// Render a suite's command template for one case and repeat. Pure.
pub fn render_command(template: &str, vars: &CommandVars<'_>) -> Result<String, minijinja::Error> {
    template_env().render_str(template, minijinja::value::Serde(vars))
}

/// Check that a command template compiles and uses only known variables.
pub fn check_command_template(template: &str) -> Result<(), minijinja::Error> {
    let vars = CommandVars {
        suite: "suite",
        model: "model",
        precision: "bf16",
        kv_dtype: "bf16",
        phase: Phase::Decode,
        batch: 1,
        context: 1,
        warmup_steps: 1,
        steps: 1,
        repeat: 0,
        utilgate: "utilgate",
        config_dir: ".",
    };
    render_command(template, &vars).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_templates_render_and_reject_typos() {
        let vars = CommandVars {
            suite: "s",
            model: "m",
            precision: "bf16",
            kv_dtype: "bf16",
            phase: Phase::Prefill,
            batch: 8,
            context: 2048,
            warmup_steps: 3,
            steps: 10,
            repeat: 2,
            utilgate: "/bin/utilgate",
            config_dir: "/cfg",
        };
        let out = render_command(
            "run --model {{ model }} --phase {{ phase }} -b {{ batch }} -r {{ repeat }}",
            &vars,
        )
        .expect("renders");
        assert_eq!(out, "run --model m --phase prefill -b 8 -r 2");
        assert!(check_command_template("x {{ modle }}").is_err());
        assert!(check_command_template("x {{ model ").is_err());
        assert!(check_command_template("x {{ model }} {{ utilgate }}").is_ok());
    }

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
