//! Cases and their keys: one point of a suite's grid (model x precision x phase x batch x
//! context x the suite's free axes), and the verdict vocabulary of DESIGN.md §2. Pure.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod axes;
pub use axes::{
    Axes, AxisError, MAX_AXIS_LEN, RESERVED_AXIS_NAMES, axis_points, check_axis_name,
    check_axis_value,
};

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

/// How a case's step is spread over GPUs: tensor-parallel (`tp`) and expert-parallel (`ep`)
/// degrees, coordinates of the case (1 and 1 on one GPU; see `floor::parallel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parallelism {
    /// Tensor-parallel degree.
    pub tp: u64,
    /// Expert-parallel degree (1 for a dense model).
    pub ep: u64,
}

impl Default for Parallelism {
    fn default() -> Self {
        Parallelism::SINGLE
    }
}

impl Parallelism {
    /// One GPU.
    pub const SINGLE: Parallelism = Parallelism { tp: 1, ep: 1 };

    /// GPUs the step runs on.
    #[must_use]
    pub fn gpus(self) -> u64 {
        self.tp.max(self.ep)
    }

    /// Data-parallel attention groups.
    #[must_use]
    pub fn dp(self) -> u64 {
        self.gpus() / self.tp.max(1)
    }

    #[must_use]
    pub fn is_single(self) -> bool {
        self.gpus() == 1
    }

    /// Sequences on the busiest GPU.
    #[must_use]
    pub fn sequences(self, batch: u64) -> u64 {
        batch.div_ceil(self.dp())
    }

    /// The share of the KV heads one GPU holds: `ceil(kv_heads / tp) / kv_heads`.
    #[must_use]
    pub fn kv_head_share(self, kv_heads: u64) -> f64 {
        kv_heads.div_ceil(self.tp) as f64 / kv_heads as f64
    }
}

/// A speculative-decoding case's draft and draft length, read from its key's reserved axes
/// `draft` and `draft_k` (a suite's `[suite.speculative]` sets them; docs/floor.md). A step is
/// then one round: the draft proposes `k` tokens per sequence, the target verifies `k + 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Speculation {
    /// A model name (catalogue or `[models]`), or [`Speculation::NGRAM`]: prompt lookup, no
    /// draft model on the GPU.
    pub draft: String,
    /// Tokens drafted per sequence per round.
    pub k: u64,
}

impl Speculation {
    /// The draft that looks tokens up in the prompt (n-gram matching) instead of running a model.
    pub const NGRAM: &'static str = "ngram";
    /// The axis naming the draft.
    pub const DRAFT_AXIS: &'static str = "draft";
    /// The axis giving the draft length.
    pub const K_AXIS: &'static str = "draft_k";

    /// The draft model's name; `None` for n-gram drafting.
    #[must_use]
    pub fn draft_model(&self) -> Option<&str> {
        (self.draft != Self::NGRAM).then_some(self.draft.as_str())
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
    /// Tensor-parallel GPUs; 1 (left out of the serialised key, so keys read as before) on
    /// one GPU.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub tp: u64,
    /// Expert-parallel GPUs; 1 (left out) unless the suite spreads the experts.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ep: u64,
    /// The suite's free axes at this case (`mode=graphs`); empty without axes, and then left
    /// out of the serialised key, so keys, files and reports read as before axes existed.
    #[serde(default, skip_serializing_if = "Axes::is_empty")]
    pub axes: Axes,
}

fn one() -> u64 {
    1
}

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if passes a reference"
)]
fn is_one(n: &u64) -> bool {
    *n == 1
}

impl CaseKey {
    /// The key's point in the built-in grid, without suite and axes:
    /// `model/precision/phase/bB/cC`, then `/tpN` and `/epN` where above 1 (report tables show
    /// the axes as columns beside it).
    #[must_use]
    pub fn point(&self) -> String {
        let tp = if self.tp == 1 {
            String::new()
        } else {
            format!("/tp{}", self.tp)
        };
        let ep = if self.ep == 1 {
            String::new()
        } else {
            format!("/ep{}", self.ep)
        };
        format!(
            "{}/{}/{}/b{}/c{}{tp}{ep}",
            self.model, self.precision, self.phase, self.batch, self.context
        )
    }

    /// How the case's step is spread over GPUs.
    #[must_use]
    pub fn parallelism(&self) -> Parallelism {
        Parallelism {
            tp: self.tp,
            ep: self.ep,
        }
    }

    /// The key's speculative decoding, when its axes carry a draft and a whole draft length.
    #[must_use]
    pub fn speculation(&self) -> Option<Speculation> {
        let draft = self.axes.get(Speculation::DRAFT_AXIS)?;
        let k = self.axes.get(Speculation::K_AXIS)?.parse().ok()?;
        Some(Speculation {
            draft: draft.to_owned(),
            k,
        })
    }
}

/// `suite/model/precision/phase/bB/cC[/tpN][/epN]`, then `/name=value` per axis in name order.
impl fmt::Display for CaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.suite, self.point())?;
        for (name, value) in self.axes.iter() {
            write!(f, "/{name}={value}")?;
        }
        Ok(())
    }
}

/// Reads the [`fmt::Display`] form back. A model name may hold `/` (the segments between the
/// suite and the precision); axes are the trailing `name=value` segments.
impl FromStr for CaseKey {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| {
            format!(
                "{s:?} is not a case key ({why}): write SUITE/MODEL/PRECISION/PHASE/bB/cC[/tpN][/epN][/AXIS=VALUE...]"
            )
        };
        let mut parts: Vec<&str> = s.split('/').collect();
        let mut axes = Vec::new();
        while let Some(last) = parts.last()
            && let Some((name, value)) = last.split_once('=')
        {
            axes.push((name, value));
            parts.pop();
        }
        // Trailing `epN`, then `tpN` (written only when above 1).
        let degree = |parts: &mut Vec<&str>, prefix: &str| -> Result<u64, String> {
            match parts.last().and_then(|last| last.strip_prefix(prefix)) {
                Some(n) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => {
                    let value =
                        n.parse::<u64>().ok().filter(|v| *v >= 1).ok_or_else(|| {
                            bad(&format!("{prefix}{n} is not a degree of 1 or more"))
                        })?;
                    parts.pop();
                    Ok(value)
                }
                _ => Ok(1),
            }
        };
        let ep = degree(&mut parts, "ep")?;
        let tp = degree(&mut parts, "tp")?;
        if parts.len() < 6 {
            return Err(bad("too few parts"));
        }
        let number = |part: &str, prefix: char| {
            part.strip_prefix(prefix)
                .and_then(|n| n.parse::<u64>().ok())
                .ok_or_else(|| bad(&format!("{part:?} is not {prefix}N")))
        };
        let n = parts.len();
        let context = number(parts[n - 1], 'c')?;
        let batch = number(parts[n - 2], 'b')?;
        let phase: Phase = parts[n - 3].parse().map_err(|e: String| bad(&e))?;
        let axes = Axes::new(axes).map_err(|e| bad(&e.to_string()))?;
        Ok(CaseKey {
            suite: parts[0].to_owned(),
            model: parts[1..n - 4].join("/"),
            precision: parts[n - 4].to_owned(),
            phase,
            batch,
            context,
            tp,
            ep,
            axes,
        })
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
    /// Tensor- and expert-parallel degrees.
    pub tp: u64,
    pub ep: u64,
    pub warmup_steps: u64,
    pub steps: u64,
    pub repeat: u32,
    /// Absolute path of the running utilgate binary (for its built-in example harness).
    pub utilgate: &'a str,
    /// Directory of the config file.
    pub config_dir: &'a str,
    /// The suite's free axes at this case: each a variable of its own (`{{ mode }}`).
    #[serde(flatten)]
    pub axes: &'a Axes,
}

/// The names a command template may use: the fields of [`CommandVars`].
pub const COMMAND_VARIABLES: [&str; 14] = [
    "model",
    "precision",
    "kv_dtype",
    "phase",
    "batch",
    "context",
    "tp",
    "ep",
    "suite",
    "steps",
    "warmup_steps",
    "repeat",
    "utilgate",
    "config_dir",
];

/// Why a command template cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("{0}")]
    Syntax(#[source] minijinja::Error),
    #[error("unknown variable `{name}`{}", .suggestion.as_ref().map_or_else(String::new, |s| format!(" (did you mean `{s}`?)")))]
    UnknownVariable {
        name: String,
        suggestion: Option<String>,
        /// The suite's axes, variables beside the built-in ones.
        axes: Vec<String>,
    },
    #[error(
        "`{expr}` is inside the command's own {quote} quotes, but every value is shell-quoted already"
    )]
    InsideQuotes { expr: String, quote: &'static str },
}

impl TemplateError {
    /// The fix.
    #[must_use]
    pub fn hint(&self) -> String {
        let axes = match self {
            TemplateError::UnknownVariable { axes, .. } => axes.as_slice(),
            _ => &[],
        };
        match self {
            TemplateError::Syntax(_) | TemplateError::UnknownVariable { .. } => format!(
                "use {}{}",
                COMMAND_VARIABLES
                    .map(|v| format!("{{{{ {v} }}}}"))
                    .join(", "),
                if axes.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", or an axis of the suite: {}",
                        axes.iter()
                            .map(|v| format!("{{{{ {v} }}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            ),
            TemplateError::InsideQuotes { expr, .. } => format!(
                "remove the quotes around `{expr}` (values arrive as one shell word each), or write `{{{{ ... | raw }}}}` to insert a value unquoted"
            ),
        }
    }
}

fn template_env() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    // Every value becomes one shell word: a model named `x; rm -rf ~` is an argument, never a
    // command. `raw` (or minijinja's `safe`) marks a value to insert as it is.
    env.set_formatter(|out, _state, value| {
        let text = value.to_string();
        if value.is_safe() {
            out.write_str(&text)
        } else {
            let quoted = shlex::try_quote(&text).map_err(|_| {
                minijinja::Error::new(
                    minijinja::ErrorKind::BadSerialization,
                    "a value holds a NUL byte, which no shell argument can carry",
                )
            })?;
            out.write_str(&quoted)
        }
        .map_err(|_| minijinja::Error::new(minijinja::ErrorKind::WriteFailure, "write failed"))
    });
    env.add_filter("raw", |value: minijinja::Value| {
        minijinja::Value::from_safe_string(value.to_string())
    });
    env
}

/// Render a suite's command template for one case and repeat, every value shell-quoted; the
/// case's axes are variables beside the built-in ones. Pure.
pub fn render_command(template: &str, vars: &CommandVars<'_>) -> Result<String, TemplateError> {
    let mut names: Vec<&str> = COMMAND_VARIABLES.to_vec();
    names.extend(vars.axes.names());
    render_shell_template(template, vars, &names).map_err(|err| match err {
        TemplateError::UnknownVariable {
            name, suggestion, ..
        } => TemplateError::UnknownVariable {
            name,
            suggestion,
            axes: vars.axes.names().map(str::to_owned).collect(),
        },
        other => other,
    })
}

/// Render a command template over `vars`, whose field names are `names`, every value
/// shell-quoted; a name outside `names` or a value inside the template's own quotes is an
/// error. The step harness's and the load generator's commands both render through it. Pure.
pub fn render_shell_template<T: serde::Serialize>(
    template: &str,
    vars: &T,
    names: &[&str],
) -> Result<String, TemplateError> {
    check_placement(template)?;
    let env = template_env();
    let compiled = env
        .template_from_str(template)
        .map_err(TemplateError::Syntax)?;
    check_variables(&compiled, names)?;
    compiled
        .render(minijinja::value::Serde(vars))
        .map_err(TemplateError::Syntax)
}

/// Check that a command template compiles, uses only known variables, and places none inside
/// its own quotes.
pub fn check_command_template(template: &str) -> Result<(), TemplateError> {
    check_suite_command(template, &Axes::default())
}

/// [`check_command_template`] for a suite with axes: `axes` is one point of them, so each
/// axis name is a known variable.
pub fn check_suite_command(template: &str, axes: &Axes) -> Result<(), TemplateError> {
    let vars = CommandVars {
        suite: "suite",
        model: "model",
        precision: "bf16",
        kv_dtype: "bf16",
        phase: Phase::Decode,
        batch: 1,
        context: 1,
        tp: 1,
        ep: 1,
        warmup_steps: 1,
        steps: 1,
        repeat: 0,
        utilgate: "utilgate",
        config_dir: ".",
        axes,
    };
    render_command(template, &vars).map(drop)
}

fn check_variables(
    compiled: &minijinja::Template<'_, '_>,
    names: &[&str],
) -> Result<(), TemplateError> {
    let mut unknown: Vec<String> = compiled
        .undeclared_variables(false)
        .into_iter()
        .filter(|name| !names.contains(&name.as_str()))
        .collect();
    unknown.sort();
    match unknown.into_iter().next() {
        None => Ok(()),
        Some(name) => {
            let suggestion = names
                .iter()
                .map(|known| (strsim::levenshtein(&name, known), *known))
                .filter(|(distance, _)| *distance <= 2)
                .min()
                .map(|(_, known)| known.to_owned());
            Err(TemplateError::UnknownVariable {
                name,
                suggestion,
                axes: Vec::new(),
            })
        }
    }
}

/// Refuses a `{{ ... }}` placed inside the template's own single or double quotes (unless it
/// ends in `| raw` or `| safe`): quoting a quoted value breaks it apart again. The shell's
/// quoting is followed through the literal text: `'...'`, `"..."` and backslash escapes.
fn check_placement(template: &str) -> Result<(), TemplateError> {
    let mut quote: Option<char> = None;
    let mut chars = template.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let rest = &template[at..];
        if rest.starts_with("{{") || rest.starts_with("{%") || rest.starts_with("{#") {
            let close = match &rest[..2] {
                "{{" => "}}",
                "{%" => "%}",
                _ => "#}",
            };
            let end = rest.find(close).map_or(rest.len(), |e| e + 2);
            let expr = &rest[..end];
            if let Some(q) = quote
                && expr.starts_with("{{")
                && !is_raw(expr)
            {
                return Err(TemplateError::InsideQuotes {
                    expr: expr.to_owned(),
                    quote: if q == '\'' { "single" } else { "double" },
                });
            }
            // Skip the tag: its text is the template language's, not the shell's.
            while chars.peek().is_some_and(|(i, _)| *i < at + end) {
                chars.next();
            }
            continue;
        }
        match (quote, c) {
            (None | Some('"'), '\\') => {
                chars.next();
            }
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            _ => {}
        }
    }
    Ok(())
}

fn is_raw(expr: &str) -> bool {
    let inner = expr
        .trim_start_matches("{{")
        .trim_end_matches("}}")
        .trim_matches(['-', '+', ' ']);
    inner
        .rsplit_once('|')
        .is_some_and(|(_, filter)| matches!(filter.trim(), "raw" | "safe"))
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
            tp: 1,
            ep: 1,
            warmup_steps: 3,
            steps: 10,
            repeat: 2,
            utilgate: "/bin/utilgate",
            config_dir: "/cfg",
            axes: &Axes::default(),
        };
        let out = render_command(
            "run --model {{ model }} --phase {{ phase }} -b {{ batch }} -r {{ repeat }}",
            &vars,
        )
        .expect("renders");
        assert_eq!(out, "run --model m --phase prefill -b 8 -r 2");
        assert!(matches!(
            check_command_template("x {{ modle }}"),
            Err(TemplateError::UnknownVariable { ref name, suggestion: Some(ref s), .. }) if name == "modle" && s == "model"
        ));
        assert!(check_command_template("x {{ model ").is_err());
        assert!(check_command_template("x {{ model }} {{ utilgate }}").is_ok());
    }

    #[test]
    fn values_are_shell_quoted_unless_raw() {
        let vars = CommandVars {
            suite: "s",
            model: "x; touch pwned $(id) `id` 'q'",
            precision: "bf16",
            kv_dtype: "bf16",
            phase: Phase::Decode,
            batch: 8,
            context: 2048,
            tp: 1,
            ep: 1,
            warmup_steps: 3,
            steps: 10,
            repeat: 2,
            utilgate: "/bin/utilgate",
            config_dir: "/my configs",
            axes: &Axes::default(),
        };
        let out = render_command(
            "run --model {{ model }} --cfg {{ config_dir }}/u.toml -b {{ batch }} {{ suite | raw }}",
            &vars,
        )
        .expect("renders");
        let words = shlex::split(&out).expect("a valid shell line");
        assert_eq!(
            words,
            [
                "run",
                "--model",
                "x; touch pwned $(id) `id` 'q'",
                "--cfg",
                "/my configs/u.toml",
                "-b",
                "8",
                "s"
            ]
        );
    }

    #[test]
    fn placement_inside_the_templates_own_quotes_is_refused() {
        let refused = [
            "run --model '{{ model }}'",
            "run --model \"{{ model }}\"",
            "run --cfg '{{ config_dir }}/u.toml'",
            "sh -c \"echo {{ model }}\"",
        ];
        for t in refused {
            assert!(
                matches!(
                    check_command_template(t),
                    Err(TemplateError::InsideQuotes { .. })
                ),
                "{t}"
            );
        }
        let accepted = [
            "run --model {{ model }}",
            "run '--flag' {{ model }} \"x\"",
            "run --model '{{ model | raw }}'",
            "echo it\\'s {{ model }}",
            "run {% if batch > 1 %}--big{% endif %} {{ model }}",
        ];
        for t in accepted {
            assert!(
                check_command_template(t).is_ok(),
                "{t}: {:?}",
                check_command_template(t)
            );
        }
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
            axes: Axes::default(),
            tp: 1,
            ep: 1,
        };
        assert_eq!(key.to_string(), "decode/llama-3.1-8b/bf16/decode/b8/c4096");
        assert_eq!(key.to_string().parse::<CaseKey>(), Ok(key.clone()));
        // A key without axes serialises exactly as before axes existed.
        assert_eq!(
            serde_json::to_string(&key).expect("json"),
            r#"{"suite":"decode","model":"llama-3.1-8b","precision":"bf16","phase":"decode","batch":8,"context":4096}"#
        );
    }

    /// tp and ep are coordinates: written after the context when above 1, read back, left
    /// out of the JSON at 1 (stored keys keep their form).
    #[test]
    fn tp_and_ep_extend_the_key_and_round_trip() {
        let mut key = CaseKey {
            suite: "decode".into(),
            model: "org/mixtral".into(),
            precision: "fp8-b128".into(),
            phase: Phase::Decode,
            batch: 64,
            context: 4096,
            axes: Axes::new([("mode", "graphs")]).expect("valid"),
            tp: 2,
            ep: 8,
        };
        let text = key.to_string();
        assert_eq!(
            text,
            "decode/org/mixtral/fp8-b128/decode/b64/c4096/tp2/ep8/mode=graphs"
        );
        assert_eq!(text.parse::<CaseKey>(), Ok(key.clone()));
        let json = serde_json::to_string(&key).expect("json");
        assert!(json.contains(r#""tp":2,"ep":8"#), "{json}");
        assert_eq!(serde_json::from_str::<CaseKey>(&json).expect("reads"), key);
        key.ep = 1;
        assert_eq!(key.point(), "org/mixtral/fp8-b128/decode/b64/c4096/tp2");
        assert_eq!(key.to_string().parse::<CaseKey>(), Ok(key.clone()));
        key.tp = 1;
        let json = serde_json::to_string(&key).expect("json");
        assert!(!json.contains("tp") && !json.contains("ep\""), "{json}");
        assert!(
            "decode/m/bf16/decode/b1/c64/tp0"
                .parse::<CaseKey>()
                .is_err()
        );
    }

    #[test]
    fn axes_extend_the_key_in_name_order_and_round_trip() {
        let key = CaseKey {
            suite: "decode".into(),
            model: "org/llama=3".into(),
            precision: "bf16".into(),
            phase: Phase::Decode,
            batch: 1,
            context: 64,
            axes: Axes::new([("mode", "graphs"), ("attn", "flash")]).expect("valid"),
            tp: 1,
            ep: 1,
        };
        let text = key.to_string();
        assert_eq!(
            text,
            "decode/org/llama=3/bf16/decode/b1/c64/attn=flash/mode=graphs"
        );
        assert_eq!(text.parse::<CaseKey>(), Ok(key.clone()));
        assert_eq!(key.point(), "org/llama=3/bf16/decode/b1/c64");
        let json = serde_json::to_string(&key).expect("json");
        assert!(
            json.ends_with(r#""axes":{"attn":"flash","mode":"graphs"}}"#),
            "{json}"
        );
        assert_eq!(serde_json::from_str::<CaseKey>(&json).expect("reads"), key);
        for bad in [
            "decode/m/bf16/decode/b1",
            "decode/m/bf16/decode/b1/c64/mode=a/b",
            "decode/m/bf16/decode/b1/c64/batch=2",
            "decode/m/bf16/sideways/b1/c64",
        ] {
            assert!(bad.parse::<CaseKey>().is_err(), "{bad}");
        }
    }

    #[test]
    fn axes_are_template_variables() {
        let axes = Axes::new([("mode", "graphs")]).expect("valid");
        let vars = CommandVars {
            suite: "s",
            model: "m",
            precision: "bf16",
            kv_dtype: "bf16",
            phase: Phase::Decode,
            batch: 1,
            context: 64,
            tp: 1,
            ep: 1,
            warmup_steps: 1,
            steps: 2,
            repeat: 0,
            utilgate: "/bin/utilgate",
            config_dir: "/cfg",
            axes: &axes,
        };
        assert_eq!(
            render_command("bench --mode {{ mode }} -b {{ batch }}", &vars).expect("renders"),
            "bench --mode graphs -b 1"
        );
        assert!(check_suite_command("bench --mode {{ mode }}", &axes).is_ok());
        let err = check_command_template("bench --mode {{ mode }}").expect_err("no axis");
        assert!(matches!(err, TemplateError::UnknownVariable { ref name, .. } if name == "mode"));
        let err = check_suite_command("bench --mode {{ mdoe }}", &axes).expect_err("typo");
        assert!(err.to_string().contains("did you mean `mode`"), "{err}");
        assert!(
            err.hint().contains("an axis of the suite: {{ mode }}"),
            "{}",
            err.hint()
        );
    }
}
