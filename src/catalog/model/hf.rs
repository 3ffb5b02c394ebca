//! Reading a Hugging Face `config.json` into a [`TransformerSpec`]: the architecture fields, the
//! family's defaults, mixture-of-experts and sliding-window layers, each missing field named.
//! Pure.

use super::CatalogError;
use super::Family;
use super::MoeSpec;
use super::TransformerSpec;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Map;
use serde_json::Value;

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
    pub(super) fn from_json_map(
        map: &Map<String, Value>,
        origin: &str,
    ) -> Result<Architecture, CatalogError> {
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

pub(super) struct JsonFields<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) origin: &'a str,
}

impl JsonFields<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    pub(super) fn wrong(&self, key: &str, expected: &'static str, found: &Value) -> CatalogError {
        CatalogError::FieldType {
            origin: self.origin.to_string(),
            field: key.to_string(),
            expected,
            found: found.to_string(),
        }
    }

    pub(super) fn u64(&self, key: &str) -> Result<Option<u64>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_u64()
                    .ok_or_else(|| self.wrong(key, "a non-negative integer", v))
            })
            .transpose()
    }

    pub(super) fn bool(&self, key: &str) -> Result<Option<bool>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.wrong(key, "true or false", v))
            })
            .transpose()
    }

    pub(super) fn string(&self, key: &str) -> Result<Option<String>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.wrong(key, "a string", v))
            })
            .transpose()
    }

    pub(super) fn strings(&self, key: &str) -> Result<Option<Vec<String>>, CatalogError> {
        self.get(key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
                    .ok_or_else(|| self.wrong(key, "a list of strings", v))
            })
            .transpose()
    }

    pub(super) fn u64s(&self, key: &str) -> Result<Option<Vec<u64>>, CatalogError> {
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
pub(super) struct Checker<'a> {
    pub(super) origin: &'a str,
    pub(super) context: String,
}

impl Checker<'_> {
    pub(super) fn missing(&self, field: &str) -> CatalogError {
        CatalogError::MissingField {
            origin: self.origin.to_string(),
            field: field.to_string(),
            context: self.context.clone(),
        }
    }

    pub(super) fn invalid(&self, field: &str, reason: String) -> CatalogError {
        CatalogError::InvalidField {
            origin: self.origin.to_string(),
            field: field.to_string(),
            reason,
        }
    }

    /// A count that must be present and at least 1.
    pub(super) fn required(&self, field: &str, value: Option<u64>) -> Result<u64, CatalogError> {
        match value {
            None => Err(self.missing(field)),
            Some(0) => Err(self.invalid(field, "must be at least 1".to_string())),
            Some(v) => Ok(v),
        }
    }
}

/// The family of a config, from `model_type` or else `architectures`; an unknown one is read
/// Llama-style, with a note and an error context saying so.
pub(super) fn identify_family(a: &Architecture) -> (Family, String, Vec<String>) {
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
pub(super) fn resolve(a: &Architecture, origin: &str) -> Result<TransformerSpec, CatalogError> {
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
        quantisation: None,
    })
}

/// Mixture-of-experts layers: Mixtral names the expert count `num_local_experts`, Qwen3-MoE
/// `num_experts`; dense families ignore both.
pub(super) fn resolve_moe(
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
pub(super) fn resolve_window(
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
