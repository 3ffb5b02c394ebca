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
use serde_json::Value;

use super::CatalogError;
use super::precision::{Precision, StorageDtype};

mod hf;
mod quant;
pub use hf::Architecture;
use hf::resolve;
pub use quant::Quantisation;

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
    /// The checkpoint's own precision (`quantization_config`), when it declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantisation: Option<Box<Quantisation>>,
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

    /// Stored bytes at a precision without the quantisation scales.
    #[must_use]
    pub fn bytes_unscaled(&self, precision: &Precision) -> f64 {
        let in_scope = self.part != Part::Attention || precision.quantises_attention();
        let dtype = if self.quantisable && precision.is_quantised() && in_scope {
            precision.weights
        } else {
            precision.unquantised
        };
        self.params() as f64 * dtype.bytes()
    }

    /// Stored bytes at a precision, scales included.
    #[must_use]
    pub fn bytes(&self, precision: &Precision) -> f64 {
        let in_scope = self.part != Part::Attention || precision.quantises_attention();
        if self.quantisable && precision.is_quantised() && in_scope {
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

    /// K and V bytes one token adds to one layer's cache: 2 x `kv_heads` x `head_dim` x the
    /// dtype's bytes per cached element (scales included: `StorageDtype::cache_bytes`).
    #[must_use]
    pub fn kv_bytes_per_token_per_layer(&self, kv: StorageDtype) -> f64 {
        2.0 * (self.num_key_value_heads * self.head_dim) as f64 * kv.cache_bytes()
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
        let mut spec = resolve(&arch, origin)?;
        spec.quantisation = quant::read_quantisation(&map, origin)?.map(Box::new);
        Ok(ModelSpec::Transformer(spec))
    }

    /// The precision the checkpoint declares in its `quantization_config`, if any.
    #[must_use]
    pub fn checkpoint_precision(&self) -> Option<&Quantisation> {
        match self {
            ModelSpec::Transformer(t) => t.quantisation.as_deref(),
            ModelSpec::Bare(_) => None,
        }
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

/// A built-in model: a real `config.json` embedded in the binary.
struct BuiltIn {
    name: &'static str,
    /// The Hugging Face repository the config comes from: its provenance, checked by the
    /// catalogue's test.
    #[cfg_attr(
        not(test),
        expect(
            dead_code,
            reason = "provenance of the embedded config, read by its test"
        )
    )]
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
        // The usual draft model of Llama 3.1 8B and 70B in speculative decoding.
        name: "llama-3.2-1b",
        hf_repo: "meta-llama/Llama-3.2-1B",
        config: include_str!("models/llama-3.2-1b.json"),
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

/// The Hugging Face repository a built-in model's config comes from.
#[cfg(test)]
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
mod tests;
