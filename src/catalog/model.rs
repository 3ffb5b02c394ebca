//! Model specs: the architecture of a decoder-only transformer read from a Hugging Face
//! `config.json` (or the same fields inline in TOML), its weight inventory and exact parameter
//! counts, or the bare form (`params`, `kv_bytes_per_token`, optional `flops_per_token`) for a
//! model the parser does not know. Also the built-in model catalogue. Pure: config text is
//! passed in with an origin label for messages.
//!
//! Families and what each adds to the Llama layout (embedding, per layer q/k/v/o projections,
//! gated MLP of gate/up/down, two `RMSNorm`s; final `RMSNorm`; output projection), following the
//! Hugging Face `transformers` modelling code of each family:
//! - `llama`: `attention_bias` puts biases on q, k, v and o; `mlp_bias` on gate, up, down.
//! - `mistral`: `sliding_window` on every layer.
//! - `mixtral`: each layer's MLP is `num_local_experts` experts (w1, w2, w3) behind a router
//!   (hidden x experts, no bias), `num_experts_per_tok` active; `sliding_window` on every layer.
//! - `qwen2`: biases on q, k and v (not o), always; `sliding_window` only with
//!   `use_sliding_window`, on layers at index >= `max_window_layers`.
//! - `qwen3`: no biases; `RMSNorm` of width `head_dim` on q and k per layer; default `head_dim` 128.
//! - `qwen3_moe`: `qwen3` plus `num_experts` experts of `moe_intermediate_size` on every
//!   `decoder_sparse_step`-th layer not in `mlp_only_layers`.
//! - `gemma2`: four `RMSNorm`s per layer; `head_dim` default 256 (not hidden / heads); embeddings
//!   tied unless `tie_word_embeddings` is false; `sliding_window` (default 4096) on the even
//!   layers (0, 2, 4, ...).
//! - `phi3`: fused `qkv_proj` and `gate_up_proj` (same parameter count as split);
//!   `sliding_window` on every layer.
//!
//! An explicit `layer_types` list (`"sliding_attention"` / `"full_attention"`) overrides the
//! family's window rule. Any other `model_type` is read as a Llama-style decoder, with a note
//! saying so; a field it then lacks is named in the error.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::CatalogError;
use super::precision::{Precision, StorageDtype};

/// A model spec: an exactly described transformer or the bare form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case")]
pub enum ModelSpec {
    Transformer(TransformerSpec),
    Bare(BareSpec),
}

/// The bare form: figures declared directly, for a model the parser does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BareSpec {
    /// All parameters, counted as read once per step.
    pub params: f64,
    /// KV-cache bytes per token over all layers, taken as given (not rescaled by the KV dtype).
    pub kv_bytes_per_token: f64,
    /// FLOPs per token; absent means 2 x params (no attention term).
    pub flops_per_token: Option<f64>,
}

/// The transformer families the parser knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Family {
    Llama,
    Mistral,
    Mixtral,
    Qwen2,
    Qwen3,
    Qwen3Moe,
    Gemma2,
    Phi3,
    /// An unknown `model_type` read as a Llama-style decoder.
    LlamaStyle,
}

impl Family {
    /// The known `model_type` values.
    pub const KNOWN: [(&'static str, Family); 8] = [
        ("llama", Family::Llama),
        ("mistral", Family::Mistral),
        ("mixtral", Family::Mixtral),
        ("qwen2", Family::Qwen2),
        ("qwen3", Family::Qwen3),
        ("qwen3_moe", Family::Qwen3Moe),
        ("gemma2", Family::Gemma2),
        ("phi3", Family::Phi3),
    ];

    fn from_model_type(model_type: &str) -> Option<Family> {
        Family::KNOWN
            .iter()
            .find(|(name, _)| *name == model_type)
            .map(|(_, f)| *f)
    }

    /// The family of a `transformers` architecture class name, e.g. `LlamaForCausalLM`.
    fn from_architecture(class: &str) -> Option<Family> {
        let prefix = class.strip_suffix("ForCausalLM")?.to_ascii_lowercase();
        let model_type = match prefix.as_str() {
            "qwen3moe" => "qwen3_moe",
            other => other,
        };
        Family::from_model_type(model_type)
    }
}

/// Mixture-of-experts layers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MoeSpec {
    pub num_experts: u64,
    pub experts_per_token: u64,
    pub expert_intermediate_size: u64,
    /// How many of the layers are mixture-of-experts layers (the rest have a dense MLP).
    pub moe_layers: u64,
}

/// An exactly described decoder-only transformer.
#[expect(
    clippy::struct_excessive_bools,
    reason = "each flag mirrors one architecture switch of a config.json"
)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransformerSpec {
    pub model_type: String,
    pub family: Family,
    pub hidden_size: u64,
    /// Dense MLP width (unused when every layer is a mixture-of-experts layer).
    pub intermediate_size: u64,
    pub num_hidden_layers: u64,
    pub num_attention_heads: u64,
    pub num_key_value_heads: u64,
    pub head_dim: u64,
    pub vocab_size: u64,
    pub tie_word_embeddings: bool,
    pub qkv_bias: bool,
    pub o_bias: bool,
    pub mlp_bias: bool,
    /// `RMSNorm` on q and k (width `head_dim`), as in Qwen3.
    pub qk_norm: bool,
    pub norms_per_layer: u64,
    pub fused_qkv: bool,
    pub fused_gate_up: bool,
    pub moe: Option<MoeSpec>,
    pub sliding_window: Option<u64>,
    /// How many layers use the sliding window (0 when there is none).
    pub sliding_window_layers: u64,
    /// Assumptions made while reading the config.
    pub notes: Vec<String>,
}

/// Which part of the model a weight tensor belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// q/k/v/o projections, their biases and q/k norms.
    Attention,
    /// Dense MLP projections and biases.
    Mlp,
    /// Expert projections of mixture-of-experts layers.
    Experts,
    /// Router of mixture-of-experts layers.
    Router,
    /// Layer and final norms.
    Norm,
    /// Input embedding table.
    Embedding,
    /// Output projection (absent when tied to the embedding).
    LmHead,
}

/// One kind of weight tensor: `count` matrices of `rows` (output) x `cols` (input); vectors
/// have `cols` = 1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tensor {
    pub name: &'static str,
    pub part: Part,
    pub rows: u64,
    pub cols: u64,
    pub count: u64,
    /// Whether a quantised precision stores it quantised (linear projections only).
    pub quantisable: bool,
}

impl Tensor {
    #[must_use]
    pub fn params(&self) -> u64 {
        self.rows * self.cols * self.count
    }

    /// Stored bytes at a precision, scales included.
    #[must_use]
    pub fn bytes(&self, precision: &Precision) -> f64 {
        if self.quantisable && precision.is_quantised() {
            precision.matrix_bytes(self.rows, self.cols, self.count)
        } else {
            self.params() as f64 * precision.unquantised.bytes()
        }
    }
}

fn tensor(
    name: &'static str,
    part: Part,
    rows: u64,
    cols: u64,
    count: u64,
    quantisable: bool,
) -> Tensor {
    Tensor {
        name,
        part,
        rows,
        cols,
        count,
        quantisable,
    }
}

impl TransformerSpec {
    /// The weight inventory, from which every count and byte figure is derived.
    #[must_use]
    pub fn tensors(&self) -> Vec<Tensor> {
        let h = self.hidden_size;
        let mut out = vec![tensor(
            "embed_tokens",
            Part::Embedding,
            self.vocab_size,
            h,
            1,
            false,
        )];
        self.attention_tensors(&mut out);
        self.mlp_tensors(&mut out);
        let norms = self.norms_per_layer * self.num_hidden_layers;
        out.push(tensor("layer_norms", Part::Norm, h, 1, norms, false));
        out.push(tensor("final_norm", Part::Norm, h, 1, 1, false));
        if !self.tie_word_embeddings {
            out.push(tensor(
                "lm_head",
                Part::LmHead,
                self.vocab_size,
                h,
                1,
                false,
            ));
        }
        out
    }

    /// q/k/v/o projections (q/k/v fused in Phi-3), their biases and q/k norms, per layer.
    fn attention_tensors(&self, out: &mut Vec<Tensor>) {
        let layers = self.num_hidden_layers;
        let h = self.hidden_size;
        let q_width = self.num_attention_heads * self.head_dim;
        let kv_width = self.num_key_value_heads * self.head_dim;
        let qkv = q_width + 2 * kv_width;
        if self.fused_qkv {
            out.push(tensor("qkv_proj", Part::Attention, qkv, h, layers, true));
        } else {
            out.push(tensor("q_proj", Part::Attention, q_width, h, layers, true));
            out.push(tensor("k_proj", Part::Attention, kv_width, h, layers, true));
            out.push(tensor("v_proj", Part::Attention, kv_width, h, layers, true));
        }
        out.push(tensor("o_proj", Part::Attention, h, q_width, layers, true));
        if self.qkv_bias {
            out.push(tensor("qkv_bias", Part::Attention, qkv, 1, layers, false));
        }
        if self.o_bias {
            out.push(tensor("o_bias", Part::Attention, h, 1, layers, false));
        }
        if self.qk_norm {
            let width = 2 * self.head_dim;
            out.push(tensor("qk_norm", Part::Attention, width, 1, layers, false));
        }
    }

    /// Dense MLPs (gate/up fused in Phi-3) and mixture-of-experts layers.
    fn mlp_tensors(&self, out: &mut Vec<Tensor>) {
        let h = self.hidden_size;
        let moe_layers = self.moe.as_ref().map_or(0, |m| m.moe_layers);
        let dense = self.num_hidden_layers - moe_layers;
        if dense > 0 {
            let width = self.intermediate_size;
            if self.fused_gate_up {
                out.push(tensor("gate_up_proj", Part::Mlp, 2 * width, h, dense, true));
            } else {
                out.push(tensor("gate_proj", Part::Mlp, width, h, dense, true));
                out.push(tensor("up_proj", Part::Mlp, width, h, dense, true));
            }
            out.push(tensor("down_proj", Part::Mlp, h, width, dense, true));
            if self.mlp_bias {
                out.push(tensor(
                    "mlp_bias",
                    Part::Mlp,
                    2 * width + h,
                    1,
                    dense,
                    false,
                ));
            }
        }
        if let Some(m) = self.moe.as_ref().filter(|_| moe_layers > 0) {
            let width = m.expert_intermediate_size;
            let n = moe_layers * m.num_experts;
            out.push(tensor(
                "router",
                Part::Router,
                m.num_experts,
                h,
                moe_layers,
                false,
            ));
            out.push(tensor("expert_gate_proj", Part::Experts, width, h, n, true));
            out.push(tensor("expert_up_proj", Part::Experts, width, h, n, true));
            out.push(tensor("expert_down_proj", Part::Experts, h, width, n, true));
        }
    }

    /// Parameters of the tensors of one part.
    #[must_use]
    pub fn part_params(&self, part: Part) -> u64 {
        self.tensors()
            .iter()
            .filter(|t| t.part == part)
            .map(Tensor::params)
            .sum()
    }

    /// All parameters (tied embeddings counted once).
    #[must_use]
    pub fn total_params(&self) -> u64 {
        self.tensors().iter().map(Tensor::params).sum()
    }

    /// Parameters a token uses: all but the experts it is not routed to. Includes the
    /// embedding and output projection, as published "active" counts do.
    #[must_use]
    pub fn active_params(&self) -> u64 {
        let total = self.total_params();
        match &self.moe {
            Some(m) => {
                let experts = self.part_params(Part::Experts);
                total - experts / m.num_experts * (m.num_experts - m.experts_per_token)
            }
            None => total,
        }
    }

    /// K and V bytes one token adds to one layer's cache: 2 x `kv_heads` x `head_dim` x dtype.
    #[must_use]
    pub fn kv_bytes_per_token_per_layer(&self, kv: StorageDtype) -> f64 {
        2.0 * (self.num_key_value_heads * self.head_dim) as f64 * kv.bytes()
    }
}

impl ModelSpec {
    /// Parse a Hugging Face `config.json`. `origin` names it in messages (a path, or
    /// "built-in model llama-3.1-8b").
    pub fn from_hf_config(json_text: &str, origin: &str) -> Result<ModelSpec, CatalogError> {
        let value: Value =
            serde_json::from_str(json_text).map_err(|source| CatalogError::Json {
                origin: origin.to_string(),
                source,
            })?;
        let Value::Object(map) = value else {
            return Err(CatalogError::InvalidField {
                origin: origin.to_string(),
                field: "(top level)".to_string(),
                reason: "expected a JSON object".to_string(),
            });
        };
        let arch = Architecture::from_json_map(&map, origin)?;
        ModelSpec::from_architecture(&arch, origin)
    }

    /// Build a spec from architecture fields (parsed from JSON or TOML).
    pub fn from_architecture(arch: &Architecture, origin: &str) -> Result<ModelSpec, CatalogError> {
        resolve(arch, origin).map(ModelSpec::Transformer)
    }

    /// The bare form. `flops_per_token` absent means 2 x params per token.
    pub fn bare(
        params: f64,
        kv_bytes_per_token: f64,
        flops_per_token: Option<f64>,
    ) -> Result<ModelSpec, CatalogError> {
        let check = |what: &str, v: f64, zero_ok: bool| {
            if v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0)) {
                Ok(v)
            } else {
                Err(CatalogError::InvalidFigure {
                    what: what.to_string(),
                    value: v,
                })
            }
        };
        Ok(ModelSpec::Bare(BareSpec {
            params: check("params", params, false)?,
            kv_bytes_per_token: check("kv_bytes_per_token", kv_bytes_per_token, true)?,
            flops_per_token: flops_per_token
                .map(|f| check("flops_per_token", f, false))
                .transpose()?,
        }))
    }

    /// All parameters.
    #[must_use]
    pub fn total_params(&self) -> f64 {
        match self {
            ModelSpec::Transformer(t) => t.total_params() as f64,
            ModelSpec::Bare(b) => b.params,
        }
    }

    /// Parameters one token uses (= total for dense models and the bare form).
    #[must_use]
    pub fn active_params(&self) -> f64 {
        match self {
            ModelSpec::Transformer(t) => t.active_params() as f64,
            ModelSpec::Bare(b) => b.params,
        }
    }

    /// KV-cache bytes one token adds over all layers (no window applied). The bare form's
    /// declared figure is returned as given, whatever `kv`.
    #[must_use]
    pub fn kv_bytes_per_token(&self, kv: StorageDtype) -> f64 {
        match self {
            ModelSpec::Transformer(t) => {
                t.num_hidden_layers as f64 * t.kv_bytes_per_token_per_layer(kv)
            }
            ModelSpec::Bare(b) => b.kv_bytes_per_token,
        }
    }

    /// Bytes to hold every weight at a precision (all experts, scales included).
    #[must_use]
    pub fn weight_bytes(&self, precision: &Precision) -> f64 {
        match self {
            ModelSpec::Transformer(t) => t.tensors().iter().map(|x| x.bytes(precision)).sum(),
            ModelSpec::Bare(b) => b.params * precision.bytes_per_param_unshaped(),
        }
    }
}

/// Architecture fields, named as in a Hugging Face `config.json`; every one optional here so
/// that the family's defaults and the missing-field errors live in one place. Deserialisable
/// from TOML for inline model declarations (unknown keys are errors there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Architecture {
    pub model_type: Option<String>,
    pub architectures: Option<Vec<String>>,
    pub hidden_size: Option<u64>,
    pub intermediate_size: Option<u64>,
    pub num_hidden_layers: Option<u64>,
    pub num_attention_heads: Option<u64>,
    pub num_key_value_heads: Option<u64>,
    pub head_dim: Option<u64>,
    pub vocab_size: Option<u64>,
    pub tie_word_embeddings: Option<bool>,
    pub attention_bias: Option<bool>,
    pub mlp_bias: Option<bool>,
    pub num_local_experts: Option<u64>,
    pub num_experts: Option<u64>,
    pub num_experts_per_tok: Option<u64>,
    pub moe_intermediate_size: Option<u64>,
    pub decoder_sparse_step: Option<u64>,
    pub mlp_only_layers: Option<Vec<u64>>,
    pub sliding_window: Option<u64>,
    pub use_sliding_window: Option<bool>,
    pub max_window_layers: Option<u64>,
    pub layer_types: Option<Vec<String>>,
}

impl Architecture {
    /// Read the known fields of a `config.json` object; other keys are ignored, `null` reads
    /// as absent, and a field of the wrong type is an error naming it.
    fn from_json_map(map: &Map<String, Value>, origin: &str) -> Result<Architecture, CatalogError> {
        let f = JsonFields { map, origin };
        Ok(Architecture {
            model_type: f.string("model_type")?,
            architectures: f.strings("architectures")?,
            hidden_size: f.u64("hidden_size")?,
            intermediate_size: f.u64("intermediate_size")?,
            num_hidden_layers: f.u64("num_hidden_layers")?,
            num_attention_heads: f.u64("num_attention_heads")?,
            num_key_value_heads: f.u64("num_key_value_heads")?,
            head_dim: f.u64("head_dim")?,
            vocab_size: f.u64("vocab_size")?,
            tie_word_embeddings: f.bool("tie_word_embeddings")?,
            attention_bias: f.bool("attention_bias")?,
            mlp_bias: f.bool("mlp_bias")?,
            num_local_experts: f.u64("num_local_experts")?,
            num_experts: f.u64("num_experts")?,
            num_experts_per_tok: f.u64("num_experts_per_tok")?,
            moe_intermediate_size: f.u64("moe_intermediate_size")?,
            decoder_sparse_step: f.u64("decoder_sparse_step")?,
            mlp_only_layers: f.u64s("mlp_only_layers")?,
            sliding_window: f.u64("sliding_window")?,
            use_sliding_window: f.bool("use_sliding_window")?,
            max_window_layers: f.u64("max_window_layers")?,
            layer_types: f.strings("layer_types")?,
        })
    }
}

struct JsonFields<'a> {
    map: &'a Map<String, Value>,
    origin: &'a str,
}

impl JsonFields<'_> {
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    fn wrong(&self, key: &str, expected: &'static str, found: &Value) -> CatalogError {
        CatalogError::FieldType {
            origin: self.origin.to_string(),
            field: key.to_string(),
            expected,
            found: found.to_string(),
        }
    }

    fn u64(&self, key: &str) -> Result<Option<u64>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.wrong(key, "a non-negative integer", v))
            })
            .transpose()
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.wrong(key, "true or false", v))
            })
            .transpose()
    }

    fn string(&self, key: &str) -> Result<Option<String>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.wrong(key, "a string", v))
            })
            .transpose()
    }

    fn strings(&self, key: &str) -> Result<Option<Vec<String>>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
                    .ok_or_else(|| self.wrong(key, "a list of strings", v))
            })
            .transpose()
    }

    fn u64s(&self, key: &str) -> Result<Option<Vec<u64>>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(Value::as_u64).collect())
                    .ok_or_else(|| self.wrong(key, "a list of non-negative integers", v))
            })
            .transpose()
    }
}

/// Builds the errors of one config: its origin, and how it was read (for unknown families).
struct Checker<'a> {
    origin: &'a str,
    context: String,
}

impl Checker<'_> {
    fn missing(&self, field: &str) -> CatalogError {
        CatalogError::MissingField {
            origin: self.origin.to_string(),
            field: field.to_string(),
            context: self.context.clone(),
        }
    }

    fn invalid(&self, field: &str, reason: String) -> CatalogError {
        CatalogError::InvalidField {
            origin: self.origin.to_string(),
            field: field.to_string(),
            reason,
        }
    }

    /// A count that must be present and at least 1.
    fn required(&self, field: &str, value: Option<u64>) -> Result<u64, CatalogError> {
        match value {
            None => Err(self.missing(field)),
            Some(0) => Err(self.invalid(field, "must be at least 1".to_string())),
            Some(v) => Ok(v),
        }
    }
}

/// The family of a config, from `model_type` or else `architectures`; an unknown one is read
/// Llama-style, with a note and an error context saying so.
fn identify_family(a: &Architecture) -> (Family, String, Vec<String>) {
    let known = a
        .model_type
        .as_deref()
        .and_then(Family::from_model_type)
        .or_else(|| {
            a.architectures
                .as_ref()
                .and_then(|list| list.iter().find_map(|c| Family::from_architecture(c)))
        });
    if let Some(family) = known {
        return (family, String::new(), Vec::new());
    }
    let declared = a.model_type.clone().or_else(|| {
        a.architectures
            .as_ref()
            .and_then(|list| list.first())
            .cloned()
    });
    let described = match &declared {
        Some(t) => format!("model_type {t:?} is not a known family"),
        None => "no model_type".to_string(),
    };
    let families: Vec<&str> = Family::KNOWN.iter().map(|(n, _)| *n).collect();
    let note = format!(
        "{described} (known: {}); read as a Llama-style decoder (gated MLP, two RMSNorms per \
         layer, no biases unless attention_bias/mlp_bias)",
        families.join(", ")
    );
    let context = format!("{described}; read as a Llama-style decoder it lacks a required field: ");
    (Family::LlamaStyle, context, vec![note])
}

/// Apply the family's defaults and check the fields.
fn resolve(a: &Architecture, origin: &str) -> Result<TransformerSpec, CatalogError> {
    let (family, context, notes) = identify_family(a);
    let check = Checker { origin, context };
    let model_type = a.model_type.clone().unwrap_or_else(|| {
        Family::KNOWN
            .iter()
            .find(|(_, f)| *f == family)
            .map_or_else(|| "unknown".to_string(), |(n, _)| (*n).to_string())
    });

    let hidden_size = check.required("hidden_size", a.hidden_size)?;
    let layers = check.required("num_hidden_layers", a.num_hidden_layers)?;
    let heads = check.required("num_attention_heads", a.num_attention_heads)?;
    let vocab_size = check.required("vocab_size", a.vocab_size)?;
    let kv_heads = match a.num_key_value_heads {
        // transformers: num_key_value_heads defaults to num_attention_heads (no GQA).
        None => heads,
        Some(kv) => check.required("num_key_value_heads", Some(kv))?,
    };
    if kv_heads > heads || heads % kv_heads != 0 {
        return Err(check.invalid(
            "num_key_value_heads",
            format!("{kv_heads} does not divide num_attention_heads = {heads}"),
        ));
    }
    let head_dim = match (a.head_dim, family) {
        (Some(d), _) => check.required("head_dim", Some(d))?,
        // Gemma2Config and Qwen3Config default head_dim to 256 and 128.
        (None, Family::Gemma2) => 256,
        (None, Family::Qwen3 | Family::Qwen3Moe) => 128,
        (None, _) if hidden_size % heads == 0 => hidden_size / heads,
        (None, _) => return Err(check.missing("head_dim")),
    };
    let moe = resolve_moe(a, family, layers, &check)?;
    let dense_layers = layers - moe.as_ref().map_or(0, |m| m.moe_layers);
    let intermediate_size = if dense_layers > 0 || moe.is_none() {
        check.required("intermediate_size", a.intermediate_size)?
    } else {
        a.intermediate_size.unwrap_or(0)
    };

    let bias = a.attention_bias.unwrap_or(false);
    let (qkv_bias, o_bias) = match family {
        Family::Qwen2 => (true, false),
        Family::Mixtral | Family::Phi3 => (false, false),
        _ => (bias, bias),
    };
    let (sliding_window, sliding_window_layers) = resolve_window(a, family, layers, &check)?;

    Ok(TransformerSpec {
        model_type,
        family,
        hidden_size,
        intermediate_size,
        num_hidden_layers: layers,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        head_dim,
        vocab_size,
        tie_word_embeddings: a.tie_word_embeddings.unwrap_or(family == Family::Gemma2),
        qkv_bias,
        o_bias,
        mlp_bias: matches!(family, Family::Llama | Family::LlamaStyle) && a.mlp_bias == Some(true),
        qk_norm: matches!(family, Family::Qwen3 | Family::Qwen3Moe),
        norms_per_layer: if family == Family::Gemma2 { 4 } else { 2 },
        fused_qkv: family == Family::Phi3,
        fused_gate_up: family == Family::Phi3,
        moe,
        sliding_window,
        sliding_window_layers,
        notes,
    })
}

/// Mixture-of-experts layers: Mixtral names the expert count `num_local_experts`, Qwen3-MoE
/// `num_experts`; dense families ignore both.
fn resolve_moe(
    a: &Architecture,
    family: Family,
    layers: u64,
    check: &Checker<'_>,
) -> Result<Option<MoeSpec>, CatalogError> {
    let num_experts = match family {
        Family::Mixtral | Family::Qwen3Moe | Family::LlamaStyle => {
            a.num_local_experts.or(a.num_experts).filter(|e| *e > 0)
        }
        _ => None,
    };
    let Some(experts) = num_experts else {
        return match family {
            Family::Mixtral => Err(check.missing("num_local_experts")),
            Family::Qwen3Moe => Err(check.missing("num_experts")),
            _ => Ok(None),
        };
    };
    let k = check.required("num_experts_per_tok", a.num_experts_per_tok)?;
    if k > experts {
        return Err(check.invalid(
            "num_experts_per_tok",
            format!("{k} exceeds the {experts} experts"),
        ));
    }
    let step = a.decoder_sparse_step.unwrap_or(1).max(1);
    let dense_only = a.mlp_only_layers.clone().unwrap_or_default();
    if let Some(bad) = dense_only.iter().find(|i| **i >= layers) {
        return Err(check.invalid(
            "mlp_only_layers",
            format!("layer {bad} is past num_hidden_layers = {layers}"),
        ));
    }
    // transformers (Qwen3-MoE): layer i is sparse unless listed in mlp_only_layers, when
    // (i + 1) is a multiple of decoder_sparse_step.
    let moe_layers = (0..layers)
        .filter(|i| !dense_only.contains(i) && (i + 1) % step == 0)
        .count() as u64;
    let expert_intermediate_size = match (family, a.moe_intermediate_size) {
        (Family::Mixtral, _) | (_, None) => {
            check.required("intermediate_size", a.intermediate_size)?
        }
        (_, Some(width)) => check.required("moe_intermediate_size", Some(width))?,
    };
    Ok(Some(MoeSpec {
        num_experts: experts,
        experts_per_token: k,
        expert_intermediate_size,
        moe_layers,
    }))
}

/// The sliding window and how many layers use it: `(None, 0)` when there is none.
fn resolve_window(
    a: &Architecture,
    family: Family,
    layers: u64,
    check: &Checker<'_>,
) -> Result<(Option<u64>, u64), CatalogError> {
    let window = match family {
        Family::Llama => None,
        Family::Gemma2 => Some(a.sliding_window.unwrap_or(4096)),
        Family::Qwen2 | Family::Qwen3 | Family::Qwen3Moe => a
            .sliding_window
            .filter(|_| a.use_sliding_window == Some(true)),
        _ => a.sliding_window,
    };
    if window == Some(0) {
        return Err(check.invalid("sliding_window", "must be at least 1".to_string()));
    }
    let windowed_layers = if let Some(types) = &a.layer_types {
        if types.len() as u64 != layers {
            return Err(check.invalid(
                "layer_types",
                format!("{} entries for {layers} layers", types.len()),
            ));
        }
        types.iter().filter(|t| *t == "sliding_attention").count() as u64
    } else {
        match family {
            // transformers Gemma2: layers 0, 2, 4, ... slide.
            Family::Gemma2 => layers.div_ceil(2),
            // transformers Qwen2/Qwen3: layer i slides when i >= max_window_layers (default 28).
            Family::Qwen2 | Family::Qwen3 | Family::Qwen3Moe => {
                layers - a.max_window_layers.unwrap_or(28).min(layers)
            }
            _ => layers,
        }
    };
    Ok(match window {
        Some(w) if windowed_layers > 0 => (Some(w), windowed_layers),
        _ => (None, 0),
    })
}

/// A built-in model: a real `config.json` embedded in the binary.
struct BuiltIn {
    name: &'static str,
    /// The Hugging Face repository the config comes from.
    hf_repo: &'static str,
    config: &'static str,
}

const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "llama-3.1-8b",
        hf_repo: "meta-llama/Llama-3.1-8B",
        config: include_str!("models/llama-3.1-8b.json"),
    },
    BuiltIn {
        name: "llama-3.1-70b",
        hf_repo: "meta-llama/Llama-3.1-70B",
        config: include_str!("models/llama-3.1-70b.json"),
    },
    BuiltIn {
        name: "mistral-7b-v0.1",
        hf_repo: "mistralai/Mistral-7B-v0.1",
        config: include_str!("models/mistral-7b-v0.1.json"),
    },
    BuiltIn {
        name: "mistral-7b-v0.3",
        hf_repo: "mistralai/Mistral-7B-v0.3",
        config: include_str!("models/mistral-7b-v0.3.json"),
    },
    BuiltIn {
        name: "mixtral-8x7b",
        hf_repo: "mistralai/Mixtral-8x7B-v0.1",
        config: include_str!("models/mixtral-8x7b.json"),
    },
    BuiltIn {
        name: "qwen2-7b",
        hf_repo: "Qwen/Qwen2-7B",
        config: include_str!("models/qwen2-7b.json"),
    },
    BuiltIn {
        name: "qwen2-72b",
        hf_repo: "Qwen/Qwen2-72B",
        config: include_str!("models/qwen2-72b.json"),
    },
    BuiltIn {
        name: "qwen3-8b",
        hf_repo: "Qwen/Qwen3-8B",
        config: include_str!("models/qwen3-8b.json"),
    },
    BuiltIn {
        name: "qwen3-30b-a3b",
        hf_repo: "Qwen/Qwen3-30B-A3B",
        config: include_str!("models/qwen3-30b-a3b.json"),
    },
    BuiltIn {
        name: "gemma-2-2b",
        hf_repo: "google/gemma-2-2b",
        config: include_str!("models/gemma-2-2b.json"),
    },
    BuiltIn {
        name: "gemma-2-9b",
        hf_repo: "google/gemma-2-9b",
        config: include_str!("models/gemma-2-9b.json"),
    },
    BuiltIn {
        name: "phi-3-mini-4k",
        hf_repo: "microsoft/Phi-3-mini-4k-instruct",
        config: include_str!("models/phi-3-mini-4k.json"),
    },
];

/// A built-in model by name (case-insensitive).
#[must_use]
pub fn model_by_name(name: &str) -> Option<ModelSpec> {
    let wanted = name.trim().to_ascii_lowercase();
    BUILT_IN.iter().find(|b| b.name == wanted).and_then(|b| {
        // Invariant: every built-in config parses (tested below); `ok()` keeps this total.
        ModelSpec::from_hf_config(b.config, &format!("built-in model {}", b.name)).ok()
    })
}

/// Like [`model_by_name`], with an error that lists the built-in models.
pub fn resolve_model(name: &str) -> Result<ModelSpec, CatalogError> {
    model_by_name(name).ok_or_else(|| CatalogError::UnknownModel {
        name: name.to_string(),
        known: known_models().join(", "),
    })
}

/// The Hugging Face repository a built-in model's config comes from.
#[must_use]
pub fn built_in_source(name: &str) -> Option<&'static str> {
    BUILT_IN.iter().find(|b| b.name == name).map(|b| b.hf_repo)
}

/// The built-in models' names, in catalogue order.
#[must_use]
pub fn known_models() -> Vec<&'static str> {
    BUILT_IN.iter().map(|b| b.name).collect()
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> &'static str {
        match name {
            "llama-3.1-8b" => include_str!("../../tests/fixtures/hf_configs/llama-3.1-8b.json"),
            "llama-3.1-70b" => include_str!("../../tests/fixtures/hf_configs/llama-3.1-70b.json"),
            "mistral-7b-v0.1" => {
                include_str!("../../tests/fixtures/hf_configs/mistral-7b-v0.1.json")
            }
            "mistral-7b-v0.3" => {
                include_str!("../../tests/fixtures/hf_configs/mistral-7b-v0.3.json")
            }
            "mixtral-8x7b" => include_str!("../../tests/fixtures/hf_configs/mixtral-8x7b.json"),
            "qwen2-7b" => include_str!("../../tests/fixtures/hf_configs/qwen2-7b.json"),
            "qwen2-72b" => include_str!("../../tests/fixtures/hf_configs/qwen2-72b.json"),
            "qwen3-8b" => include_str!("../../tests/fixtures/hf_configs/qwen3-8b.json"),
            "qwen3-30b-a3b" => include_str!("../../tests/fixtures/hf_configs/qwen3-30b-a3b.json"),
            "gemma-2-2b" => include_str!("../../tests/fixtures/hf_configs/gemma-2-2b.json"),
            "gemma-2-9b" => include_str!("../../tests/fixtures/hf_configs/gemma-2-9b.json"),
            "phi-3-mini-4k" => include_str!("../../tests/fixtures/hf_configs/phi-3-mini-4k.json"),
            other => panic!("no fixture {other}"),
        }
    }

    fn parse(name: &str) -> TransformerSpec {
        match ModelSpec::from_hf_config(fixture(name), name).expect("should succeed") {
            ModelSpec::Transformer(t) => t,
            ModelSpec::Bare(_) => unreachable!(),
        }
    }

    /// Published parameter counts (the safetensors totals on each model's Hugging Face page;
    /// active counts of mixture-of-experts models from the model cards), matched exactly.
    #[test]
    fn parameter_counts_equal_published_totals() {
        let cases: [(&str, u64, u64); 12] = [
            ("llama-3.1-8b", 8_030_261_248, 8_030_261_248),
            ("llama-3.1-70b", 70_553_706_496, 70_553_706_496),
            ("mistral-7b-v0.1", 7_241_732_096, 7_241_732_096),
            ("mistral-7b-v0.3", 7_248_023_552, 7_248_023_552),
            ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),
            ("qwen2-7b", 7_615_616_512, 7_615_616_512),
            ("qwen2-72b", 72_706_203_648, 72_706_203_648),
            ("qwen3-8b", 8_190_735_360, 8_190_735_360),
            ("qwen3-30b-a3b", 30_532_122_624, 3_353_032_704),
            ("gemma-2-2b", 2_614_341_888, 2_614_341_888),
            ("gemma-2-9b", 9_241_705_984, 9_241_705_984),
            ("phi-3-mini-4k", 3_821_079_552, 3_821_079_552),
        ];
        for (name, total, active) in cases {
            let spec = parse(name);
            assert_eq!(spec.total_params(), total, "{name} total");
            assert_eq!(spec.active_params(), active, "{name} active");
        }
    }

    #[test]
    fn built_in_catalogue_is_the_fixtures() {
        for name in known_models() {
            let built_in = BUILT_IN
                .iter()
                .find(|b| b.name == name)
                .expect("should succeed");
            assert_eq!(built_in.config, fixture(name), "{name}");
            assert!(model_by_name(name).is_some(), "{name} parses");
            assert!(built_in_source(name).expect("should succeed").contains('/'));
        }
        assert!(model_by_name("LLAMA-3.1-8B").is_some());
        let err = resolve_model("llama-9").expect_err("should fail");
        assert!(err.to_string().contains("llama-3.1-8b"));
        assert!(err.hint().expect("should succeed").contains("config.json"));
    }

    #[test]
    fn gemma2_head_dim_ties_and_windows() {
        let g = parse("gemma-2-9b");
        // 256 from the config, not hidden / heads = 3584 / 16 = 224.
        assert_eq!(g.head_dim, 256);
        assert!(
            g.tie_word_embeddings,
            "absent tie_word_embeddings means tied for gemma2"
        );
        assert_eq!(g.norms_per_layer, 4);
        assert_eq!(g.sliding_window, Some(4096));
        assert_eq!(g.sliding_window_layers, 21);
        assert!(!g.tensors().iter().any(|t| t.part == Part::LmHead));
        // Without head_dim, the family default (256) still applies.
        let text = fixture("gemma-2-9b").replace("\"head_dim\": 256,", "");
        let ModelSpec::Transformer(g) =
            ModelSpec::from_hf_config(&text, "x").expect("should succeed")
        else {
            unreachable!()
        };
        assert_eq!(g.head_dim, 256);
    }

    #[test]
    fn qwen2_has_qkv_biases_only() {
        let q = parse("qwen2-7b");
        assert!(q.qkv_bias && !q.o_bias);
        // q (3584) + k (512) + v (512) biases per layer, 28 layers.
        assert_eq!(
            q.tensors()
                .iter()
                .find(|t| t.name == "qkv_bias")
                .expect("should succeed")
                .params(),
            (3584 + 512 + 512) * 28
        );
        assert_eq!(q.sliding_window, None, "use_sliding_window is false");
    }

    #[test]
    fn fused_projections_count_as_split() {
        let p = parse("phi-3-mini-4k");
        assert!(p.fused_qkv && p.fused_gate_up);
        let qkv = p
            .tensors()
            .into_iter()
            .find(|t| t.name == "qkv_proj")
            .expect("should succeed");
        assert_eq!(qkv.rows, 3 * 3072);
        assert_eq!(p.sliding_window, Some(2047));
    }

    #[test]
    fn mistral_windows_every_layer_and_v03_none() {
        let m = parse("mistral-7b-v0.1");
        assert_eq!(
            (m.sliding_window, m.sliding_window_layers),
            (Some(4096), 32)
        );
        let m = parse("mistral-7b-v0.3");
        assert_eq!((m.sliding_window, m.sliding_window_layers), (None, 0));
    }

    #[test]
    fn moe_fields() {
        let m = parse("mixtral-8x7b");
        let moe = m.moe.clone().expect("should succeed");
        assert_eq!(
            (moe.num_experts, moe.experts_per_token, moe.moe_layers),
            (8, 2, 32)
        );
        assert_eq!(moe.expert_intermediate_size, 14336);
        let q = parse("qwen3-30b-a3b");
        let moe = q.moe.clone().expect("should succeed");
        assert_eq!((moe.num_experts, moe.experts_per_token), (128, 8));
        assert_eq!(moe.expert_intermediate_size, 768);
        // decoder_sparse_step 2 halves the MoE layers; the rest get a dense MLP.
        let text = fixture("qwen3-30b-a3b")
            .replace("\"decoder_sparse_step\": 1", "\"decoder_sparse_step\": 2");
        let ModelSpec::Transformer(q2) =
            ModelSpec::from_hf_config(&text, "x").expect("should succeed")
        else {
            unreachable!()
        };
        assert_eq!(q2.moe.as_ref().expect("should succeed").moe_layers, 24);
        assert!(
            q2.tensors()
                .iter()
                .any(|t| t.name == "down_proj" && t.count == 24)
        );
    }

    #[test]
    fn kv_bytes_per_token() {
        let llama = ModelSpec::Transformer(parse("llama-3.1-8b"));
        // 32 layers x 2 x 8 heads x 128 x 2 bytes.
        assert_eq!(llama.kv_bytes_per_token(StorageDtype::Bf16), 131_072.0);
        assert_eq!(llama.kv_bytes_per_token(StorageDtype::Fp8), 65_536.0);
        let bare = ModelSpec::bare(8e9, 131_072.0, None).expect("should succeed");
        assert_eq!(bare.kv_bytes_per_token(StorageDtype::Fp8), 131_072.0);
    }

    #[test]
    fn unknown_family_names_the_missing_field() {
        let text = r#"{"model_type": "gpt_neox", "hidden_size": 2048, "num_hidden_layers": 16,
            "num_attention_heads": 16, "vocab_size": 50304}"#;
        let err = ModelSpec::from_hf_config(text, "cfg.json").expect_err("should fail");
        let msg = err.to_string();
        assert!(msg.contains("cfg.json"), "{msg}");
        assert!(msg.contains("`intermediate_size`"), "{msg}");
        assert!(msg.contains("gpt_neox"), "{msg}");
        assert!(
            err.hint()
                .expect("should succeed")
                .contains("kv_bytes_per_token")
        );

        // A known family names its missing field too.
        let text = r#"{"model_type": "llama", "hidden_size": 2048}"#;
        let msg = ModelSpec::from_hf_config(text, "c.json")
            .expect_err("should fail")
            .to_string();
        assert!(msg.contains("`num_hidden_layers`"), "{msg}");
        let text = r#"{"model_type": "mixtral", "hidden_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 8}"#;
        let msg = ModelSpec::from_hf_config(text, "c.json")
            .expect_err("should fail")
            .to_string();
        assert!(msg.contains("`num_local_experts`"), "{msg}");

        // A complete unknown family is read Llama-style, with a note.
        let text = r#"{"model_type": "yi", "hidden_size": 64, "intermediate_size": 128,
            "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10}"#;
        let ModelSpec::Transformer(t) =
            ModelSpec::from_hf_config(text, "c.json").expect("should succeed")
        else {
            unreachable!()
        };
        assert_eq!(t.family, Family::LlamaStyle);
        assert!(t.notes[0].contains("Llama-style"));
        // 10*64*2 (embed, head) + 2 * (4*64*64 + 3*64*128 + 2*64) + 64
        assert_eq!(t.total_params(), 1280 + 2 * (16384 + 24576 + 128) + 64);
    }

    #[test]
    fn field_errors_name_the_field() {
        let msg = ModelSpec::from_hf_config(r#"{"hidden_size": "big"}"#, "c.json")
            .expect_err("should fail")
            .to_string();
        assert!(
            msg.contains("`hidden_size`") && msg.contains("\"big\""),
            "{msg}"
        );
        let msg = ModelSpec::from_hf_config("{not json", "c.json")
            .expect_err("should fail")
            .to_string();
        assert!(msg.contains("c.json"), "{msg}");
        let text = fixture("llama-3.1-8b")
            .replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5");
        let msg = ModelSpec::from_hf_config(&text, "c.json")
            .expect_err("should fail")
            .to_string();
        assert!(msg.contains("num_key_value_heads"), "{msg}");
    }

    #[test]
    fn architecture_from_toml() {
        let text = r#"
            model_type = "llama"
            hidden_size = 4096
            intermediate_size = 14336
            num_hidden_layers = 32
            num_attention_heads = 32
            num_key_value_heads = 8
            vocab_size = 128256
        "#;
        let arch: Architecture = toml::from_str(text).expect("should succeed");
        let spec = ModelSpec::from_architecture(&arch, "utilgate.toml").expect("should succeed");
        assert_eq!(spec.total_params(), 8_030_261_248.0);
        assert!(toml::from_str::<Architecture>("hiden_size = 3").is_err());
    }

    #[test]
    fn bare_form_validates() {
        assert!(ModelSpec::bare(0.0, 1.0, None).is_err());
        assert!(ModelSpec::bare(1.0, -1.0, None).is_err());
        assert!(ModelSpec::bare(1.0, 0.0, Some(f64::INFINITY)).is_err());
        let b = ModelSpec::bare(8e9, 131_072.0, Some(1.7e10)).expect("should succeed");
        assert_eq!(b.total_params(), 8e9);
        assert_eq!(b.active_params(), 8e9);
    }

    #[test]
    fn quantised_weight_bytes_keep_embeddings_16_bit() {
        let spec = ModelSpec::Transformer(parse("llama-3.1-8b"));
        let int4 = Precision::parse("int4-g128", None).expect("should succeed");
        let ModelSpec::Transformer(t) = &spec else {
            unreachable!()
        };
        let embed = t.part_params(Part::Embedding) as f64;
        let head = t.part_params(Part::LmHead) as f64;
        let norms = t.part_params(Part::Norm) as f64;
        let linear = t.total_params() as f64 - embed - head - norms;
        let expected = (embed + head + norms) * 2.0 + linear * (0.5 + 2.0 / 128.0);
        assert!((spec.weight_bytes(&int4) - expected).abs() < 1.0);
        let bf16 = Precision::parse("bf16", None).expect("should succeed");
        assert_eq!(spec.weight_bytes(&bf16), 2.0 * 8_030_261_248.0);
    }
}
