//! The precision a Hugging Face checkpoint declares in its `config.json`
//! (`quantization_config`), so a real checkpoint's floor needs no hand-written precision. Pure.
//!
//! Read as the loaders of `transformers` and vLLM read them:
//! - `fp8` (`transformers` `FineGrainedFP8Config`, DeepSeek-V3 and Qwen3 FP8): `weight_block_size
//!   = [N, N]` is `fp8-bN` (one fp32 `weight_scale_inv` per N x N block), without it `fp8` (one
//!   scale per tensor); activations are fp8 (quantised per 1 x N group at run time).
//! - `mxfp4` (gpt-oss): the expert weights as MXFP4 blocks with E8M0 scales; activations stay
//!   bf16, so it is `mxfp4-wo` (the 16-bit peak), and `modules_to_not_convert` keeps the
//!   attention in bf16.
//! - `modelopt` (NVIDIA TensorRT Model Optimizer): `quant_algo` `NVFP4` (W4A4), `W4A16_NVFP4`,
//!   `FP8`, `MXFP8`; the cache from `kv_cache_quant_algo` or `kv_cache_scheme`.
//! - `compressed-tensors` (llm-compressor): the first `config_groups` entry's `weights`
//!   (`num_bits`, `type`, `strategy`, `group_size`, `block_structure`) and whether it has
//!   `input_activations` (W4A4 or W8A8 against weight-only); the cache from `kv_cache_scheme`.
//! - `gptq`, `awq`: `bits` and `group_size` (weight-only integers).
//!
//! The KV cache of a checkpoint is what it declares, else 16-bit (bf16): serving engines keep
//! the model dtype for the cache unless told otherwise. An ignore list (`ignore`,
//! `modules_to_not_convert`, `exclude_modules`) that names every layer's attention
//! (`model.layers.*.self_attn`) keeps the attention projections unquantised; embeddings,
//! `lm_head`, norms and routers are unquantised in every precision anyway.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::CatalogError;
use crate::catalog::precision::{Precision, QuantScope};

/// The `quant_method` values understood, for messages.
pub const SUPPORTED_METHODS: &str = "fp8, mxfp4, modelopt, compressed-tensors, gptq, awq";

/// What a checkpoint's `quantization_config` says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quantisation {
    /// `quant_method` as written.
    pub method: String,
    /// The precision it amounts to (weights, scales, cache, compute peak).
    pub precision: Precision,
    /// How it was read.
    pub notes: Vec<String>,
}

/// The `quantization_config` of a parsed `config.json`, if it has one.
pub(super) fn read_quantisation(
    config: &Map<String, Value>,
    origin: &str,
) -> Result<Option<Quantisation>, CatalogError> {
    let Some(q) = config.get("quantization_config").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let reader = Reader { origin };
    let q = reader.object(q, "quantization_config")?;
    // Legacy modelopt exports nest their fields under `quantization` and name no method.
    let nested = match q.get("quantization") {
        Some(v) => Some(reader.object(v, "quantization_config.quantization")?),
        None => None,
    };
    let method = match reader.string(q, "quant_method")? {
        Some(m) => m,
        None if nested.is_some() || q.contains_key("quant_algo") => "modelopt".to_string(),
        None => return Err(reader.missing("quant_method")),
    };
    let fields = nested.unwrap_or(q);
    let mut notes = Vec::new();
    let declared = match method.as_str() {
        "fp8" => fp8(&reader, fields)?,
        "mxfp4" => {
            notes.push(
                "mxfp4: weights in MXFP4 (E2M1, an E8M0 scale per 32), activations in bf16: \
                 the bf16 peak"
                    .to_string(),
            );
            Declared::weights("mxfp4-wo")
        }
        "modelopt" | "modelopt_fp4" => modelopt(&reader, fields)?,
        "compressed-tensors" => compressed_tensors(&reader, fields, &mut notes)?,
        "gptq" | "awq" => integer_groups(&reader, fields)?,
        other => {
            return Err(CatalogError::UnsupportedQuantisation {
                origin: origin.to_string(),
                method: other.to_string(),
                supported: SUPPORTED_METHODS.to_string(),
            });
        }
    };
    let kv = declared.kv.unwrap_or("bf16");
    let mut precision = Precision::parse(&declared.label, Some(kv))?;
    let ignored = ignore_list(&reader, fields)?;
    if ignored.iter().any(|m| names_every_attention(m)) {
        precision.scope = QuantScope::NotAttention;
        notes.push(format!(
            "{method}: attention projections unquantised (the ignore list names every layer's \
             self_attn)"
        ));
    }
    let unmodelled: Vec<&String> = ignored
        .iter()
        .filter(|m| !names_every_attention(m) && !always_unquantised(m))
        .collect();
    if !unmodelled.is_empty() {
        notes.push(format!(
            "{method}: {} other ignored module pattern(s) read as quantised ({})",
            unmodelled.len(),
            unmodelled
                .iter()
                .take(3)
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    notes.push(format!(
        "precision from quantization_config ({method}): {}, KV cache {}{}",
        precision.label,
        precision.kv,
        if declared.kv.is_some() {
            " (declared)"
        } else {
            " (none declared: 16-bit)"
        }
    ));
    Ok(Some(Quantisation {
        method,
        precision,
        notes,
    }))
}

/// A precision string and the cache a checkpoint declares.
struct Declared {
    label: String,
    kv: Option<&'static str>,
}

impl Declared {
    fn weights(label: &str) -> Declared {
        Declared {
            label: label.to_string(),
            kv: None,
        }
    }
}

fn fp8(reader: &Reader<'_>, q: &Map<String, Value>) -> Result<Declared, CatalogError> {
    let field = "weight_block_size";
    let Some(block) = reader.u64s(q, field)? else {
        return Ok(Declared::weights("fp8"));
    };
    match block.as_slice() {
        [n, m] if n == m && *n > 0 => Ok(Declared::weights(&format!("fp8-b{n}"))),
        _ => Err(reader.invalid(
            field,
            format!("{block:?}: only square blocks [N, N] with N >= 1 are understood"),
        )),
    }
}

fn modelopt(reader: &Reader<'_>, q: &Map<String, Value>) -> Result<Declared, CatalogError> {
    let algo = reader
        .string(q, "quant_algo")?
        .ok_or_else(|| reader.missing("quant_algo"))?;
    let label = match algo.to_ascii_uppercase().as_str() {
        "NVFP4" => "nvfp4",
        "W4A16_NVFP4" => "nvfp4-wo",
        "FP8" => "fp8",
        "MXFP8" => "mxfp8",
        _ => {
            return Err(reader.invalid(
                "quant_algo",
                format!("{algo:?} is not understood (NVFP4, W4A16_NVFP4, FP8, MXFP8 are)"),
            ));
        }
    };
    let kv = match reader.string(q, "kv_cache_quant_algo")? {
        Some(a) if a.eq_ignore_ascii_case("fp8") => Some("fp8"),
        Some(a) if a.eq_ignore_ascii_case("nvfp4") => Some("fp4"),
        Some(a) => {
            return Err(reader.invalid(
                "kv_cache_quant_algo",
                format!("{a:?} is not understood (FP8, NVFP4 are)"),
            ));
        }
        None => kv_scheme(reader, q)?,
    };
    Ok(Declared {
        label: label.to_string(),
        kv,
    })
}

fn compressed_tensors(
    reader: &Reader<'_>,
    q: &Map<String, Value>,
    notes: &mut Vec<String>,
) -> Result<Declared, CatalogError> {
    let groups = q
        .get("config_groups")
        .ok_or_else(|| reader.missing("config_groups"))?;
    let groups = reader.object(groups, "quantization_config.config_groups")?;
    let Some((name, group)) = groups.iter().next() else {
        return Err(reader.invalid("config_groups", "has no group".to_string()));
    };
    if groups.len() > 1 {
        notes.push(format!(
            "compressed-tensors: {} config groups; read as the first, {name}",
            groups.len()
        ));
    }
    let path = format!("config_groups.{name}");
    let group = reader.object(group, &format!("quantization_config.{path}"))?;
    let weights = group
        .get("weights")
        .ok_or_else(|| reader.missing(&format!("{path}.weights")))?;
    let weights = reader.object(weights, &format!("quantization_config.{path}.weights"))?;
    let wpath = format!("{path}.weights");
    let bits = reader
        .u64_at(weights, &wpath, "num_bits")?
        .ok_or_else(|| reader.missing(&format!("{wpath}.num_bits")))?;
    let kind = reader
        .string_at(weights, &wpath, "type")?
        .unwrap_or_else(|| "int".to_string());
    let strategy = reader
        .string_at(weights, &wpath, "strategy")?
        .unwrap_or_default();
    let group_size = reader.u64_at(weights, &wpath, "group_size")?;
    let activations = group.get("input_activations").is_some_and(|v| !v.is_null());
    let label = match (kind.as_str(), bits) {
        ("float", 4) => {
            let base = if group_size == Some(32) {
                "mxfp4"
            } else {
                "nvfp4"
            };
            if activations {
                base.to_string()
            } else {
                format!("{base}-wo")
            }
        }
        ("float", 8) if strategy == "block" => {
            let block = reader.u64s_at(weights, &wpath, "block_structure")?;
            match block.as_deref() {
                Some([n, m]) if n == m && *n > 0 => format!("fp8-b{n}"),
                _ => {
                    return Err(reader.invalid(
                        &format!("{wpath}.block_structure"),
                        "expected a square block [N, N]".to_string(),
                    ));
                }
            }
        }
        ("float", 8) if group_size == Some(32) && activations => "mxfp8".to_string(),
        ("float", 8) => (if activations { "fp8" } else { "fp8-wo" }).to_string(),
        ("int", 4 | 8) => {
            let base = match (bits, activations) {
                (8, true) => "int8",
                (8, false) => "int8-wo",
                _ => "int4",
            };
            match group_size.filter(|_| strategy == "group" || strategy.is_empty()) {
                Some(g) if g > 0 => format!("{base}-g{g}"),
                _ => base.to_string(),
            }
        }
        _ => {
            return Err(reader.invalid(
                &wpath,
                format!(
                    "{bits}-bit {kind} weights are not understood (4-bit float, 8-bit float, \
                     4- and 8-bit int are)"
                ),
            ));
        }
    };
    Ok(Declared {
        label,
        kv: kv_scheme(reader, q)?,
    })
}

fn integer_groups(reader: &Reader<'_>, q: &Map<String, Value>) -> Result<Declared, CatalogError> {
    let bits = reader
        .u64_at(q, "", "bits")?
        .ok_or_else(|| reader.missing("bits"))?;
    let base = match bits {
        4 => "int4",
        8 => "int8-wo",
        _ => {
            return Err(reader.invalid("bits", format!("{bits}: 4 and 8 are understood")));
        }
    };
    // group_size = -1 means one scale per output channel.
    let group = q.get("group_size").and_then(Value::as_i64).unwrap_or(-1);
    Ok(Declared::weights(&if group > 0 {
        format!("{base}-g{group}")
    } else {
        base.to_string()
    }))
}

/// `kv_cache_scheme` (compressed-tensors, newer modelopt): 8-bit float or int, 4-bit float.
fn kv_scheme(
    reader: &Reader<'_>,
    q: &Map<String, Value>,
) -> Result<Option<&'static str>, CatalogError> {
    let Some(scheme) = q.get("kv_cache_scheme").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let scheme = reader.object(scheme, "quantization_config.kv_cache_scheme")?;
    let bits = reader.u64_at(scheme, "kv_cache_scheme", "num_bits")?;
    let kind = reader
        .string_at(scheme, "kv_cache_scheme", "type")?
        .unwrap_or_else(|| "float".to_string());
    match (bits, kind.as_str()) {
        (Some(8), "float") => Ok(Some("fp8")),
        (Some(8), "int") => Ok(Some("int8")),
        (Some(4), "float") => Ok(Some("fp4")),
        _ => Err(reader.invalid(
            "kv_cache_scheme",
            format!("{bits:?}-bit {kind} is not understood (8-bit float or int, 4-bit float are)"),
        )),
    }
}

/// Every ignore list a method may carry.
fn ignore_list(reader: &Reader<'_>, q: &Map<String, Value>) -> Result<Vec<String>, CatalogError> {
    let mut out = Vec::new();
    for key in [
        "ignore",
        "modules_to_not_convert",
        "exclude_modules",
        "ignored_layers",
    ] {
        if let Some(list) = reader.strings(q, key)? {
            out.extend(list);
        }
    }
    Ok(out)
}

/// A pattern naming the attention of every layer: `model.layers.*.self_attn`,
/// `re:.*self_attn.*`, `*self_attn*`.
fn names_every_attention(pattern: &str) -> bool {
    let wild = pattern.contains('*') || pattern.starts_with("re:");
    wild && (pattern.contains("self_attn") || pattern.contains("attention"))
}

/// Modules no precision quantises here: embeddings, the output projection, routers, norms.
fn always_unquantised(pattern: &str) -> bool {
    [
        "lm_head",
        "embed",
        "router",
        "norm",
        "mlp.gate",
        "mlp.gate$",
    ]
    .iter()
    .any(|m| pattern.contains(m))
        && !pattern.contains("gate_proj")
        && !pattern.contains("gate_up")
}

/// Typed access to `quantization_config`'s fields, each error naming the field's path.
struct Reader<'a> {
    origin: &'a str,
}

impl Reader<'_> {
    fn path(field: &str) -> String {
        format!("quantization_config.{field}")
    }

    fn missing(&self, field: &str) -> CatalogError {
        CatalogError::MissingField {
            origin: self.origin.to_string(),
            field: Reader::path(field),
            context: String::new(),
        }
    }

    fn invalid(&self, field: &str, reason: String) -> CatalogError {
        CatalogError::InvalidField {
            origin: self.origin.to_string(),
            field: Reader::path(field),
            reason,
        }
    }

    fn wrong(&self, field: &str, expected: &'static str, found: &Value) -> CatalogError {
        CatalogError::FieldType {
            origin: self.origin.to_string(),
            field: field.to_string(),
            expected,
            found: found.to_string(),
        }
    }

    fn object<'v>(
        &self,
        v: &'v Value,
        field: &str,
    ) -> Result<&'v Map<String, Value>, CatalogError> {
        v.as_object()
            .ok_or_else(|| self.wrong(field, "a JSON object", v))
    }

    fn get<'v>(map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|v| !v.is_null())
    }

    fn joined(prefix: &str, key: &str) -> String {
        if prefix.is_empty() {
            Reader::path(key)
        } else {
            Reader::path(&format!("{prefix}.{key}"))
        }
    }

    fn string(&self, map: &Map<String, Value>, key: &str) -> Result<Option<String>, CatalogError> {
        self.string_at(map, "", key)
    }

    fn string_at(
        &self,
        map: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<String>, CatalogError> {
        Reader::get(map, key)
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.wrong(&Reader::joined(prefix, key), "a string", v))
            })
            .transpose()
    }

    fn u64_at(
        &self,
        map: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<u64>, CatalogError> {
        Reader::get(map, key)
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    self.wrong(&Reader::joined(prefix, key), "a non-negative integer", v)
                })
            })
            .transpose()
    }

    fn u64s(&self, map: &Map<String, Value>, key: &str) -> Result<Option<Vec<u64>>, CatalogError> {
        self.u64s_at(map, "", key)
    }

    fn u64s_at(
        &self,
        map: &Map<String, Value>,
        prefix: &str,
        key: &str,
    ) -> Result<Option<Vec<u64>>, CatalogError> {
        Reader::get(map, key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(Value::as_u64).collect())
                    .ok_or_else(|| {
                        self.wrong(
                            &Reader::joined(prefix, key),
                            "a list of non-negative integers",
                            v,
                        )
                    })
            })
            .transpose()
    }

    fn strings(
        &self,
        map: &Map<String, Value>,
        key: &str,
    ) -> Result<Option<Vec<String>>, CatalogError> {
        Reader::get(map, key)
            .map(|v| {
                v.as_array()
                    .and_then(|a| a.iter().map(|x| x.as_str().map(str::to_string)).collect())
                    .ok_or_else(|| self.wrong(&Reader::path(key), "a list of strings", v))
            })
            .transpose()
    }
}
