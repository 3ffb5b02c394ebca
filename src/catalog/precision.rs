//! Precision: the storage dtype of the weights (with the scale overhead of quantised formats),
//! the KV-cache dtype, and the compute dtype whose peak FLOP/s applies. Pure.
//!
//! # Grammar of a precision string (case-insensitive)
//!
//! ```text
//! precision := float | quantised [ "-g" N ] | "fp8-b" N | microscaled
//! float     := "fp32" | "tf32" | "bf16" | "fp16"
//! quantised := "fp8"                 fp8 weights and activations (W8A8): fp8 peak
//!            | "int8" | "w8a8"       int8 weights and activations (W8A8): int8 peak
//!            | "fp8-wo"              fp8 weights, 16-bit activations: 16-bit peak
//!            | "int8-wo" | "w8a16"   int8 weights, 16-bit activations: 16-bit peak
//!            | "int4" | "w4a16"      int4 weights, 16-bit activations: 16-bit peak
//! microscaled := "nvfp4"             E2M1 weights and activations: fp4 peak
//!            | "mxfp4"               E2M1 weights and activations: fp4 peak
//!            | "nvfp4-wo" | "mxfp4-wo"  E2M1 weights, 16-bit activations: 16-bit peak
//!            | "mxfp8"               E4M3 weights and activations: fp8 peak
//! ```
//!
//! `-gN` stores one scale per N consecutive weights along a matrix's input dimension (GPTQ/AWQ
//! style groups); without it integer formats carry one scale per output channel and fp8 one
//! per tensor. `fp8-bN` stores one fp32 scale per N x N block of each matrix (DeepSeek-V3's
//! `weight_block_size = [128, 128]`: `fp8-b128`). The microscaled formats fix their blocks:
//! - NVFP4 (NVIDIA, "Introducing NVFP4", 2025; the Blackwell PTX ISA's `block_scale`): 4-bit
//!   E2M1 values, one FP8 E4M3 scale per 16 consecutive values along the input dimension, and
//!   one FP32 scale per tensor: `0.5 + 1/16` bytes per weight plus 4 bytes per matrix.
//! - MXFP4 and MXFP8 (OCP Microscaling Formats (MX) Specification v1.0, 2023, §5): E2M1 or
//!   E4M3 values with one E8M0 (8-bit exponent) scale per block of 32: `0.5 + 1/32` and
//!   `1 + 1/32` bytes per weight.
//!
//! Which peak each runs at: a format whose activations are quantised too (W8A8, W4A4) runs its
//! matrix products on the tensor cores of that width (fp8 for `fp8`, `fp8-bN` and `mxfp8`,
//! fp4 for `nvfp4` and `mxfp4`, which Blackwell and CDNA 4 run natively); a weight-only form
//! (`-wo`, `w4a16`) dequantises into 16-bit arithmetic and keeps the 16-bit peak. Scales are fp16 (2 bytes) for integer formats and fp32 (4 bytes) for fp8, as in
//! the GPTQ/AWQ and vLLM fp8 checkpoint layouts. Zero points of asymmetric schemes are not
//! counted. `tf32` stores fp32 weights and computes on TF32 tensor cores; `fp32` uses the plain
//! FP32 peak. Quantisation applies to the decoder's linear projections only: embeddings, the
//! output projection, norms, biases and expert routers stay in the 16-bit activation dtype (bf16),
//! which is how GPTQ, AWQ and vLLM's fp8 checkpoints are laid out.
//!
//! The KV-cache dtype is separate (`fp32`, `bf16`, `fp16`, `fp8`, `int8`, `fp4`); its default is
//! the activation dtype: fp8 for `fp8`, `fp8-bN` and `mxfp8`, bf16 for weight-only formats and
//! for int8 W8A8 (whose attention runs in 16 bits; pass `int8` explicitly for an int8 cache),
//! fp8 for the W4A4 formats `nvfp4` and `mxfp4` (their 4-bit activations exist only as GEMM
//! inputs; the cache is the 8-bit float a serving stack pairs them with), and the float dtype
//! itself otherwise. An `fp8` cache stores one byte per element (its per-tensor scales, two
//! fp32 per layer, are not counted); an `fp4` cache is NVFP4 (E2M1 with one E4M3 scale per 16
//! elements, as TensorRT-LLM stores an FP4 KV cache): `0.5 + 1/16` bytes per element.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::CatalogError;

/// A compute dtype: selects which dense peak FLOP/s of the GPU applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ComputeDtype {
    Fp32,
    Tf32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    /// 4-bit float (E2M1) tensor cores: NVFP4 and MXFP4 on Blackwell, MXFP4 on CDNA 4.
    Fp4,
}

impl ComputeDtype {
    pub const ALL: [ComputeDtype; 7] = [
        ComputeDtype::Fp32,
        ComputeDtype::Tf32,
        ComputeDtype::Bf16,
        ComputeDtype::Fp16,
        ComputeDtype::Fp8,
        ComputeDtype::Int8,
        ComputeDtype::Fp4,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ComputeDtype::Fp32 => "fp32",
            ComputeDtype::Tf32 => "tf32",
            ComputeDtype::Bf16 => "bf16",
            ComputeDtype::Fp16 => "fp16",
            ComputeDtype::Fp8 => "fp8",
            ComputeDtype::Int8 => "int8",
            ComputeDtype::Fp4 => "fp4",
        }
    }
}

impl fmt::Display for ComputeDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ComputeDtype {
    type Err = CatalogError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        ComputeDtype::ALL
            .into_iter()
            .find(|d| d.as_str() == lower)
            .ok_or_else(|| CatalogError::UnknownComputeDtype {
                given: s.to_string(),
                accepted: ComputeDtype::ALL.map(ComputeDtype::as_str).join(", "),
            })
    }
}

/// How a tensor is stored in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageDtype {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
    /// 4-bit float, E2M1 (the element type of NVFP4 and MXFP4).
    Fp4,
}

impl StorageDtype {
    /// Bits per element.
    #[must_use]
    pub fn bits(self) -> u32 {
        match self {
            StorageDtype::Fp32 => 32,
            StorageDtype::Bf16 | StorageDtype::Fp16 => 16,
            StorageDtype::Fp8 | StorageDtype::Int8 => 8,
            StorageDtype::Int4 | StorageDtype::Fp4 => 4,
        }
    }

    /// Bytes per element (0.5 for int4 and fp4), scales not included.
    #[must_use]
    pub fn bytes(self) -> f64 {
        f64::from(self.bits()) / 8.0
    }

    /// Bytes per element of a KV cache stored in this dtype, scales included: an fp4 cache is
    /// NVFP4, one E4M3 (1-byte) scale per 16 elements, `0.5 + 1/16`; the per-tensor scales of
    /// an fp8 or int8 cache (a few per layer) are not counted.
    #[must_use]
    pub fn cache_bytes(self) -> f64 {
        match self {
            StorageDtype::Fp4 => self.bytes() + 1.0 / 16.0,
            _ => self.bytes(),
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            StorageDtype::Fp32 => "fp32",
            StorageDtype::Bf16 => "bf16",
            StorageDtype::Fp16 => "fp16",
            StorageDtype::Fp8 => "fp8",
            StorageDtype::Int8 => "int8",
            StorageDtype::Int4 => "int4",
            StorageDtype::Fp4 => "fp4",
        }
    }
}

impl fmt::Display for StorageDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The KV-cache dtypes accepted by `--kv-dtype`.
pub const KV_DTYPES: &str =
    "fp32, bf16, fp16, fp8, int8, fp4 (= nvfp4) (or \"auto\" for the default)";

/// The precision forms accepted by `--precision`, for error messages.
pub const PRECISION_FORMS: &str = "fp32, tf32, bf16, fp16, fp8, int8 (= w8a8), fp8-wo, \
     int8-wo (= w8a16), int4 (= w4a16), nvfp4, nvfp4-wo, mxfp4, mxfp4-wo, mxfp8, fp8-bN \
     (N x N block scales, e.g. fp8-b128); fp8, int8 and int4 forms take an optional group \
     suffix -gN, e.g. int4-g128";

/// The granularity of a quantised format's scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "size")]
pub enum Scales {
    /// Not quantised: no scales.
    None,
    /// One scale per tensor.
    PerTensor,
    /// One scale per output channel (row) of each matrix.
    PerChannel,
    /// One scale per N consecutive weights along a matrix's input dimension.
    Group(u64),
    /// One scale per N x N block of a matrix (DeepSeek-V3's `weight_block_size`).
    Block(u64),
}

/// Which linear projections a quantised checkpoint stores quantised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuantScope {
    /// Every decoder-layer linear projection (the default of every precision string).
    AllLinear,
    /// All but the attention projections (gpt-oss's MXFP4 checkpoints keep `self_attn` in
    /// bf16: `modules_to_not_convert`).
    NotAttention,
}

/// The parsed precision of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Precision {
    /// The canonical precision string, e.g. `"int4-g128"`.
    pub label: String,
    /// Storage dtype of the quantisable weights (the decoder's linear projections).
    pub weights: StorageDtype,
    /// Scale granularity of quantised weights.
    pub scales: Scales,
    /// Bytes per scale (0 when not quantised).
    pub scale_bytes: f64,
    /// Bytes of a second-level scale per matrix (NVFP4's per-tensor FP32 scale); 0 otherwise.
    pub tensor_scale_bytes: f64,
    /// Which projections are stored quantised.
    pub scope: QuantScope,
    /// Storage dtype of everything not quantised (embeddings, `lm_head`, norms, biases, routers).
    pub unquantised: StorageDtype,
    /// Storage dtype of the KV cache.
    pub kv: StorageDtype,
    /// The dtype whose dense peak FLOP/s bounds the step.
    pub compute: ComputeDtype,
    /// True when only the weights are quantised (activations and compute stay 16-bit).
    pub weight_only: bool,
}

impl Precision {
    /// Parse a precision string and an optional KV-cache dtype (see the module docs).
    pub fn parse(weights: &str, kv_dtype: Option<&str>) -> Result<Precision, CatalogError> {
        let unknown = || CatalogError::UnknownPrecision {
            given: weights.to_string(),
            accepted: PRECISION_FORMS.to_string(),
        };
        let text = weights.trim().to_ascii_lowercase();
        let (base, group) = split_group(&text).ok_or_else(unknown)?;
        let mut precision = match group {
            None => float_form(base)
                .or_else(|| microscaled_form(base))
                .or_else(|| block_form(base))
                .or_else(|| quantised_form(base, None)),
            Some(g) => quantised_form(base, Some(g)),
        }
        .ok_or_else(unknown)?;
        if let Some(kv) = kv_dtype {
            precision.kv = parse_kv_dtype(kv)?.unwrap_or(precision.kv);
        }
        Ok(precision)
    }

    /// Whether the weights carry quantisation scales.
    #[must_use]
    pub fn is_quantised(&self) -> bool {
        self.scales != Scales::None
    }

    /// Whether the attention projections are stored quantised (see [`QuantScope`]).
    #[must_use]
    pub fn quantises_attention(&self) -> bool {
        self.is_quantised() && self.scope == QuantScope::AllLinear
    }

    /// Stored bytes of one quantisable matrix with `rows` output and `cols` input features,
    /// `count` times over: elements at the weight dtype plus the scales (`-gN` groups run along
    /// the input dimension, so a row of `cols` weights carries `ceil(cols / N)` scales; an
    /// `N x N` block grid has `ceil(rows / N) x ceil(cols / N)`), plus a second-level scale per
    /// matrix where the format has one (NVFP4).
    #[must_use]
    pub fn matrix_bytes(&self, rows: u64, cols: u64, count: u64) -> f64 {
        let elements = (rows * cols * count) as f64;
        let scales = match self.scales {
            Scales::None => 0,
            Scales::PerTensor => count,
            Scales::PerChannel => rows * count,
            Scales::Group(g) => rows * cols.div_ceil(g) * count,
            Scales::Block(b) => rows.div_ceil(b) * cols.div_ceil(b) * count,
        };
        elements * self.weights.bytes()
            + scales as f64 * self.scale_bytes
            + count as f64 * self.tensor_scale_bytes
    }

    /// Bytes per parameter when the shape is unknown (the bare form): group scales are spread
    /// over their group; per-channel and per-tensor scales cannot be counted without shapes
    /// and are left out (they are under 0.1% of the bytes for any real matrix).
    #[must_use]
    pub fn bytes_per_param_unshaped(&self) -> f64 {
        match self.scales {
            Scales::Group(g) => self.weights.bytes() + self.scale_bytes / g as f64,
            Scales::Block(b) => self.weights.bytes() + self.scale_bytes / (b * b) as f64,
            _ => self.weights.bytes(),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}

/// An unquantised float precision: one dtype for weights, KV cache and compute.
fn float_form(base: &str) -> Option<Precision> {
    let (storage, compute, label) = match base {
        "fp32" | "float32" | "float" => (StorageDtype::Fp32, ComputeDtype::Fp32, "fp32"),
        "tf32" => (StorageDtype::Fp32, ComputeDtype::Tf32, "tf32"),
        "bf16" | "bfloat16" => (StorageDtype::Bf16, ComputeDtype::Bf16, "bf16"),
        "fp16" | "float16" | "half" => (StorageDtype::Fp16, ComputeDtype::Fp16, "fp16"),
        _ => return None,
    };
    Some(Precision {
        label: label.to_string(),
        weights: storage,
        scales: Scales::None,
        scale_bytes: 0.0,
        tensor_scale_bytes: 0.0,
        scope: QuantScope::AllLinear,
        unquantised: storage,
        kv: storage,
        compute,
        weight_only: false,
    })
}

/// A quantised precision, with `-gN` groups when given.
fn quantised_form(base: &str, group: Option<u64>) -> Option<Precision> {
    use ComputeDtype as C;
    use StorageDtype as S;
    // (storage, compute, weight-only, default KV dtype, bytes per scale, canonical name)
    let (storage, compute, weight_only, kv, scale_bytes, name) = match base {
        "fp8" | "w8a8-fp8" => (S::Fp8, C::Fp8, false, S::Fp8, 4.0, "fp8"),
        "int8" | "w8a8" => (S::Int8, C::Int8, false, S::Bf16, 2.0, "int8"),
        "fp8-wo" => (S::Fp8, C::Bf16, true, S::Bf16, 4.0, "fp8-wo"),
        "int8-wo" | "w8a16" => (S::Int8, C::Bf16, true, S::Bf16, 2.0, "int8-wo"),
        "int4" | "w4a16" | "int4-wo" => (S::Int4, C::Bf16, true, S::Bf16, 2.0, "int4"),
        _ => return None,
    };
    let scales = match (group, storage) {
        (Some(g), _) => Scales::Group(g),
        (None, S::Fp8) => Scales::PerTensor,
        (None, _) => Scales::PerChannel,
    };
    Some(Precision {
        label: group.map_or_else(|| name.to_string(), |g| format!("{name}-g{g}")),
        weights: storage,
        scales,
        scale_bytes,
        tensor_scale_bytes: 0.0,
        scope: QuantScope::AllLinear,
        unquantised: S::Bf16,
        kv,
        compute,
        weight_only,
    })
}

/// A microscaled format (NVFP4, MXFP4, MXFP8: see the module docs); its block is fixed.
fn microscaled_form(base: &str) -> Option<Precision> {
    use ComputeDtype as C;
    use StorageDtype as S;
    // (storage, compute, weight-only, default KV, block, bytes per block scale, per-tensor
    // scale bytes)
    let (storage, compute, weight_only, kv, block, scale_bytes, tensor_scale_bytes) = match base {
        // E4M3 scale per 16 + FP32 per tensor.
        "nvfp4" => (S::Fp4, C::Fp4, false, S::Fp8, 16, 1.0, 4.0),
        "nvfp4-wo" => (S::Fp4, C::Bf16, true, S::Bf16, 16, 1.0, 4.0),
        // E8M0 scale per 32.
        "mxfp4" => (S::Fp4, C::Fp4, false, S::Fp8, 32, 1.0, 0.0),
        "mxfp4-wo" => (S::Fp4, C::Bf16, true, S::Bf16, 32, 1.0, 0.0),
        "mxfp8" => (S::Fp8, C::Fp8, false, S::Fp8, 32, 1.0, 0.0),
        _ => return None,
    };
    Some(Precision {
        label: base.to_string(),
        weights: storage,
        scales: Scales::Group(block),
        scale_bytes,
        tensor_scale_bytes,
        scope: QuantScope::AllLinear,
        unquantised: S::Bf16,
        kv,
        compute,
        weight_only,
    })
}

/// `fp8-bN`: fp8 weights with one fp32 scale per N x N block, fp8 activations (DeepSeek-V3's
/// layout, activations scaled per 1 x N group at run time).
fn block_form(base: &str) -> Option<Precision> {
    let n: u64 = base.strip_prefix("fp8-b")?.parse().ok()?;
    (n > 0).then(|| Precision {
        label: format!("fp8-b{n}"),
        weights: StorageDtype::Fp8,
        scales: Scales::Block(n),
        scale_bytes: 4.0,
        tensor_scale_bytes: 0.0,
        scope: QuantScope::AllLinear,
        unquantised: StorageDtype::Bf16,
        kv: StorageDtype::Fp8,
        compute: ComputeDtype::Fp8,
        weight_only: false,
    })
}

/// Split a `-gN` suffix. `None` when the suffix is malformed or N is zero.
fn split_group(text: &str) -> Option<(&str, Option<u64>)> {
    match text.rfind("-g") {
        Some(at) if text[at + 2..].chars().all(|c| c.is_ascii_digit()) && at + 2 < text.len() => {
            let group: u64 = text[at + 2..].parse().ok()?;
            (group > 0).then_some((&text[..at], Some(group)))
        }
        _ => Some((text, None)),
    }
}

/// Parse a KV-cache dtype; `Ok(None)` for `"auto"` (keep the precision's default).
pub fn parse_kv_dtype(text: &str) -> Result<Option<StorageDtype>, CatalogError> {
    let lower = text.trim().to_ascii_lowercase();
    let dtype = match lower.as_str() {
        "auto" => return Ok(None),
        "fp32" | "float32" => StorageDtype::Fp32,
        "bf16" | "bfloat16" => StorageDtype::Bf16,
        "fp16" | "float16" | "half" => StorageDtype::Fp16,
        "fp8" | "fp8_e4m3" | "fp8_e5m2" | "fp8-e4m3" | "fp8-e5m2" => StorageDtype::Fp8,
        "int8" => StorageDtype::Int8,
        "fp4" | "nvfp4" => StorageDtype::Fp4,
        _ => {
            return Err(CatalogError::UnknownKvDtype {
                given: text.to_string(),
                accepted: KV_DTYPES.to_string(),
            });
        }
    };
    Ok(Some(dtype))
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests {
    use super::*;

    #[test]
    fn float_forms_keep_one_dtype_throughout() {
        let cases = [
            ("bf16", StorageDtype::Bf16, ComputeDtype::Bf16),
            ("BF16", StorageDtype::Bf16, ComputeDtype::Bf16),
            ("fp16", StorageDtype::Fp16, ComputeDtype::Fp16),
            ("fp32", StorageDtype::Fp32, ComputeDtype::Fp32),
            ("tf32", StorageDtype::Fp32, ComputeDtype::Tf32),
        ];
        for (text, storage, compute) in cases {
            let p = Precision::parse(text, None).expect("should succeed");
            assert_eq!(p.weights, storage, "{text}");
            assert_eq!(p.kv, storage, "{text}");
            assert_eq!(p.unquantised, storage, "{text}");
            assert_eq!(p.compute, compute, "{text}");
            assert!(!p.is_quantised());
        }
    }

    #[test]
    fn compute_peak_follows_the_activation_dtype() {
        // fp8 x fp8 uses the fp8 peak; weight-only quantisation keeps the 16-bit peak.
        let cases = [
            ("fp8", ComputeDtype::Fp8, StorageDtype::Fp8, false),
            ("int8", ComputeDtype::Int8, StorageDtype::Bf16, false),
            ("w8a8", ComputeDtype::Int8, StorageDtype::Bf16, false),
            ("w8a16", ComputeDtype::Bf16, StorageDtype::Bf16, true),
            ("int8-wo", ComputeDtype::Bf16, StorageDtype::Bf16, true),
            ("int4-g128", ComputeDtype::Bf16, StorageDtype::Bf16, true),
            ("w4a16-g128", ComputeDtype::Bf16, StorageDtype::Bf16, true),
            ("fp8-wo", ComputeDtype::Bf16, StorageDtype::Bf16, true),
        ];
        for (text, compute, kv, weight_only) in cases {
            let p = Precision::parse(text, None).expect("should succeed");
            assert_eq!(p.compute, compute, "{text}");
            assert_eq!(p.kv, kv, "{text}: default KV dtype");
            assert_eq!(p.weight_only, weight_only, "{text}");
            assert_eq!(p.unquantised, StorageDtype::Bf16, "{text}");
        }
    }

    #[test]
    fn group_suffix_sets_scales_and_canonical_label() {
        let p = Precision::parse("w4a16-g128", None).expect("should succeed");
        assert_eq!(p.label, "int4-g128");
        assert_eq!(p.scales, Scales::Group(128));
        assert_eq!(p.weights, StorageDtype::Int4);
        assert_eq!(
            Precision::parse("int4", None)
                .expect("should succeed")
                .scales,
            Scales::PerChannel
        );
        assert_eq!(
            Precision::parse("fp8", None)
                .expect("should succeed")
                .scales,
            Scales::PerTensor
        );
        assert_eq!(
            Precision::parse("int8-g64", None)
                .expect("should succeed")
                .scales,
            Scales::Group(64)
        );
    }

    #[test]
    fn quantised_matrix_bytes_include_scales() {
        // int4 with fp16 scales per 128 weights: 0.5 + 2/128 bytes per weight.
        let p = Precision::parse("int4-g128", None).expect("should succeed");
        assert_eq!(
            p.matrix_bytes(4096, 4096, 1),
            4096.0 * 4096.0 * (0.5 + 2.0 / 128.0)
        );
        assert_eq!(p.bytes_per_param_unshaped(), 0.5 + 2.0 / 128.0);
        // Per-channel int8: one fp16 scale per output row.
        let p = Precision::parse("w8a16", None).expect("should succeed");
        assert_eq!(
            p.matrix_bytes(1024, 4096, 2),
            2.0 * (1024.0 * 4096.0 + 1024.0 * 2.0)
        );
        // Per-tensor fp8: one fp32 scale per matrix.
        let p = Precision::parse("fp8", None).expect("should succeed");
        assert_eq!(p.matrix_bytes(10, 10, 3), 300.0 + 12.0);
        // A partial last group still carries a scale.
        let p = Precision::parse("int4-g128", None).expect("should succeed");
        assert_eq!(p.matrix_bytes(1, 129, 1), 129.0 * 0.5 + 2.0 * 2.0);
    }

    #[test]
    fn kv_dtype_is_separate() {
        let p = Precision::parse("bf16", Some("fp8")).expect("should succeed");
        assert_eq!(p.weights, StorageDtype::Bf16);
        assert_eq!(p.kv, StorageDtype::Fp8);
        let p = Precision::parse("fp8", Some("auto")).expect("should succeed");
        assert_eq!(p.kv, StorageDtype::Fp8);
        let p = Precision::parse("fp8", Some("bf16")).expect("should succeed");
        assert_eq!(p.kv, StorageDtype::Bf16);
    }

    #[test]
    fn errors_list_the_accepted_forms() {
        for bad in ["int3", "bf16-g128", "int4-g0", "int4-gx", "", "fp8-g"] {
            let err = Precision::parse(bad, None)
                .expect_err("should fail")
                .to_string();
            assert!(err.contains("int4-g128"), "{bad}: {err}");
            assert!(err.contains(&format!("{bad:?}")), "{bad}: {err}");
        }
        let err = Precision::parse("bf16", Some("e4m3"))
            .expect_err("should fail")
            .to_string();
        assert!(err.contains("fp8") && err.contains("e4m3"), "{err}");
        let err = "fp64"
            .parse::<ComputeDtype>()
            .expect_err("should fail")
            .to_string();
        assert!(err.contains("tf32"), "{err}");
    }
}
