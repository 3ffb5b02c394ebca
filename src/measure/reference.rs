//! The plan of the built-in `reference` workload (pure): which GEMMs, KV-cache traffic and
//! attention products one synthetic decode or prefill step runs for a model, derived from the
//! same model spec the floor uses, and the bytes and FLOPs that plan moves. `measure::cuda`
//! executes it; the tests here check that its bytes equal the floor's.
//!
//! The step, per decoder layer (Llama layout, as `catalog::model` describes it):
//! * `qkv`: `[T, hidden] x [q + 2 kv, hidden]ᵀ` (q, k and v fused: the same bytes as three);
//! * attention: decode reads each sequence's K and V cache for the layer (an NVRTC kernel) and
//!   appends the new token's K and V; prefill writes the prompt's K and V into the cache and
//!   runs `QKᵀ` and `PV` as two strided-batched GEMMs per layer over the full square (twice
//!   the causal FLOPs the floor counts, no softmax: the reference is a bandwidth and GEMM
//!   canary, not an attention kernel);
//! * `o`: `[T, q] x [hidden, q]ᵀ`; `gate_up`: `[T, hidden] x [2 inter, hidden]ᵀ` (fused);
//!   `down`: `[T, inter] x [hidden, inter]ᵀ`;
//!
//! before the layers, the embedding gather (one table row per token, when the embedding is not
//! tied), and after them `lm_head`: `[B, hidden] x [vocab, hidden]ᵀ` (the last token of each
//! sequence). `T` is the batch for decode and batch x context for prefill.
//!
//! Left out, and why the bytes still match the floor within [`BYTES_TOLERANCE`]: norms,
//! biases and q/k norms (kilobytes against gigabytes of weights), and
//! activations (the floor counts none). Mixture-of-experts models and quantised precisions are
//! not supported: their kernels are what a plain cuBLAS step cannot stand in for.

use serde::Serialize;

use crate::case::Phase;
use crate::catalog::model::{ModelSpec, TransformerSpec};
use crate::catalog::{Precision, StorageDtype};
use crate::gpu::GpuError;

/// The plan's bytes equal the floor's within this fraction (see the module docs).
pub const BYTES_TOLERANCE: f64 = 0.005;

/// One weight GEMM of every layer (or of the model, for `lm_head`): `rows` activations of
/// width `k` times a weight of `n` x `k`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GemmShape {
    pub name: &'static str,
    /// Output features (weight rows).
    pub n: u64,
    /// Input features (weight columns).
    pub k: u64,
    /// Activation rows (tokens).
    pub rows: u64,
}

impl GemmShape {
    #[must_use]
    pub fn weight_elems(&self) -> u64 {
        self.n * self.k
    }
    #[must_use]
    pub fn flops(&self) -> f64 {
        2.0 * (self.rows * self.n * self.k) as f64
    }
}

/// Everything `measure::cuda` needs to run one step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReferencePlan {
    pub phase: Phase,
    pub batch: u64,
    pub context: u64,
    /// Weight, activation and KV element type (bf16 or fp16).
    pub dtype: StorageDtype,
    pub layers: u64,
    pub hidden: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Rows through the layer GEMMs.
    pub tokens: u64,
    /// Per-layer GEMMs, in order: qkv, o, `gate_up`, down.
    pub layer_gemms: Vec<GemmShape>,
    pub lm_head: GemmShape,
    pub vocab: u64,
    /// Embedding rows gathered per step (0 when tied: `lm_head` reads that table).
    pub embedding_rows: u64,
    /// Per layer: cached tokens each sequence's attention reads (decode) or the prompt tokens
    /// whose K and V are written (prefill); a sliding window caps it at W - 1.
    pub layer_tokens: Vec<u64>,
}

const ELEM_BYTES: u64 = 2;

impl ReferencePlan {
    /// The plan for a case, or why the reference cannot run it.
    pub fn new(
        model_name: &str,
        model: &ModelSpec,
        precision: &Precision,
        phase: Phase,
        batch: u64,
        context: u64,
    ) -> Result<ReferencePlan, GpuError> {
        let unsupported = |reason: String| GpuError::Unsupported {
            model: model_name.to_owned(),
            reason,
        };
        let ModelSpec::Transformer(t) = model else {
            return Err(unsupported(
                "the bare form (params, kv_bytes_per_token) has no layer shapes".into(),
            ));
        };
        if t.moe.is_some() {
            return Err(unsupported("mixture-of-experts layers".into()));
        }
        let dtype = precision.weights;
        if !matches!(dtype, StorageDtype::Bf16 | StorageDtype::Fp16)
            || precision.unquantised != dtype
            || precision.kv != dtype
            || precision.is_quantised()
        {
            return Err(unsupported(format!(
                "precision {} (weights, KV cache and activations must all be bf16 or all fp16)",
                precision.label
            )));
        }
        if batch == 0 || context == 0 {
            return Err(unsupported("batch and context must be at least 1".into()));
        }
        let tokens = match phase {
            Phase::Decode => batch,
            Phase::Prefill => batch * context,
        };
        Ok(ReferencePlan {
            phase,
            batch,
            context,
            dtype,
            layers: t.num_hidden_layers,
            hidden: t.hidden_size,
            heads: t.num_attention_heads,
            kv_heads: t.num_key_value_heads,
            head_dim: t.head_dim,
            tokens,
            layer_gemms: layer_gemms(t, tokens),
            lm_head: GemmShape {
                name: "lm_head",
                n: t.vocab_size,
                k: t.hidden_size,
                rows: batch,
            },
            layer_tokens: layer_tokens(t, context),
            vocab: t.vocab_size,
            embedding_rows: if t.tie_word_embeddings {
                0
            } else {
                tokens.min(t.vocab_size)
            },
        })
    }

    #[must_use]
    pub fn q_width(&self) -> u64 {
        self.heads * self.head_dim
    }

    #[must_use]
    pub fn kv_width(&self) -> u64 {
        self.kv_heads * self.head_dim
    }

    /// Weight bytes read per step: every layer's GEMM weights and `lm_head`.
    #[must_use]
    pub fn weight_bytes(&self) -> f64 {
        let per_layer: u64 = self.layer_gemms.iter().map(GemmShape::weight_elems).sum();
        ((per_layer * self.layers + self.lm_head.weight_elems()) * ELEM_BYTES) as f64
    }

    /// Embedding-table bytes gathered per step.
    #[must_use]
    pub fn embedding_bytes(&self) -> f64 {
        (self.embedding_rows * self.hidden * ELEM_BYTES) as f64
    }

    /// KV-cache bytes read per step (decode only).
    #[must_use]
    pub fn kv_read_bytes(&self) -> f64 {
        match self.phase {
            Phase::Decode => self.kv_bytes(self.layer_tokens.iter().sum()),
            Phase::Prefill => 0.0,
        }
    }

    /// KV-cache bytes written per step.
    #[must_use]
    pub fn kv_write_bytes(&self) -> f64 {
        match self.phase {
            Phase::Decode => self.kv_bytes(self.layers),
            Phase::Prefill => self.kv_bytes(self.layer_tokens.iter().sum()),
        }
    }

    /// K and V bytes of `layer_tokens` token-layers for every sequence.
    fn kv_bytes(&self, layer_tokens: u64) -> f64 {
        (self.batch * layer_tokens * 2 * self.kv_width() * ELEM_BYTES) as f64
    }

    /// Bytes the step must move, counted as the floor counts them.
    #[must_use]
    pub fn total_bytes(&self) -> f64 {
        self.weight_bytes() + self.embedding_bytes() + self.kv_read_bytes() + self.kv_write_bytes()
    }

    /// FLOPs the step does: the GEMMs, plus attention (decode: 4 per cached element pair per
    /// query head; prefill: the two full-square batched GEMMs).
    #[must_use]
    pub fn flops(&self) -> f64 {
        let gemms: f64 = self.layer_gemms.iter().map(GemmShape::flops).sum::<f64>()
            * self.layers as f64
            + self.lm_head.flops();
        let per_key = 4.0 * (self.batch * self.q_width()) as f64;
        let attention: f64 = self
            .layer_tokens
            .iter()
            .map(|&keys| match self.phase {
                Phase::Decode => per_key * keys as f64,
                Phase::Prefill => per_key * (keys * self.context) as f64,
            })
            .sum();
        gemms + attention
    }

    /// Device memory the plan allocates (weights, caches, activations, attention scratch), so
    /// that a case too large for the GPU fails before allocating.
    #[must_use]
    pub fn device_bytes(&self) -> f64 {
        let widest = self
            .layer_gemms
            .iter()
            .map(|g| g.n.max(g.k))
            .max()
            .unwrap_or(self.hidden)
            .max(self.lm_head.n);
        let activations = (2 * self.tokens * widest * ELEM_BYTES) as f64;
        let cache_tokens: u64 = match self.phase {
            Phase::Decode => self.layer_tokens.iter().map(|t| t + 1).sum(),
            Phase::Prefill => self.layer_tokens.iter().sum(),
        };
        let cache = self.kv_bytes(cache_tokens);
        let scores = match self.phase {
            Phase::Decode => 0.0,
            Phase::Prefill => {
                (self.batch * self.heads * self.context * self.context * ELEM_BYTES) as f64
            }
        };
        let table = if self.embedding_rows > 0 {
            (self.vocab * self.hidden * ELEM_BYTES) as f64
        } else {
            0.0
        };
        self.weight_bytes() + table + cache + activations + scores
    }
}

fn layer_gemms(t: &TransformerSpec, tokens: u64) -> Vec<GemmShape> {
    let h = t.hidden_size;
    let q = t.num_attention_heads * t.head_dim;
    let kv = t.num_key_value_heads * t.head_dim;
    let inter = t.intermediate_size;
    vec![
        GemmShape {
            name: "qkv",
            n: q + 2 * kv,
            k: h,
            rows: tokens,
        },
        GemmShape {
            name: "o",
            n: h,
            k: q,
            rows: tokens,
        },
        GemmShape {
            name: "gate_up",
            n: 2 * inter,
            k: h,
            rows: tokens,
        },
        GemmShape {
            name: "down",
            n: h,
            k: inter,
            rows: tokens,
        },
    ]
}

/// Cached (decode) or written (prefill) tokens per layer, windowed layers first.
fn layer_tokens(t: &TransformerSpec, context: u64) -> Vec<u64> {
    (0..t.num_hidden_layers)
        .map(|layer| match t.sliding_window {
            Some(w) if layer < t.sliding_window_layers => context.min(w.saturating_sub(1)),
            _ => context,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{ComputeDtype, GpuSpec, model_by_name};

    fn unit_gpu() -> GpuSpec {
        let peaks = ComputeDtype::ALL
            .iter()
            .map(|d| (d.as_str().to_owned(), 1.0))
            .collect();
        GpuSpec::declared("unit", 1.0, &peaks, None).expect("spec")
    }

    #[test]
    #[expect(clippy::float_cmp, reason = "a byte count far below 2^53 is exact")]
    fn llama_3_8b_decode_shapes() {
        let model = model_by_name("llama-3.1-8b").expect("catalogue");
        let p = Precision::parse("bf16", None).expect("bf16");
        let plan =
            ReferencePlan::new("llama-3.1-8b", &model, &p, Phase::Decode, 8, 4096).expect("plan");
        let shapes: Vec<(&str, u64, u64, u64)> = plan
            .layer_gemms
            .iter()
            .map(|g| (g.name, g.n, g.k, g.rows))
            .collect();
        assert_eq!(
            shapes,
            [
                ("qkv", 6144, 4096, 8),
                ("o", 4096, 4096, 8),
                ("gate_up", 28672, 4096, 8),
                ("down", 4096, 14336, 8)
            ]
        );
        assert_eq!(
            (plan.lm_head.n, plan.lm_head.k, plan.lm_head.rows),
            (128_256, 4096, 8)
        );
        assert_eq!(plan.layer_tokens, vec![4096; 32]);
        // 8 sequences x 32 layers x 4096 tokens x K and V x 8 heads x 128 x 2 bytes.
        assert_eq!(
            plan.kv_read_bytes(),
            (8_u64 * 32 * 4096 * 2 * 1024 * 2) as f64
        );
    }

    /// The reference moves the floor's bytes (within the tolerance the module documents), for
    /// every dense catalogue model, both phases, and batches and contexts of the gpu-check grid.
    #[test]
    fn plan_bytes_equal_the_floor_bytes() {
        let gpu = unit_gpu();
        let p = Precision::parse("bf16", None).expect("bf16");
        for name in crate::catalog::known_models() {
            let model = model_by_name(name).expect("catalogue");
            for (phase, batch, context) in [
                (Phase::Decode, 1, 4096),
                (Phase::Decode, 8, 4096),
                (Phase::Decode, 64, 512),
                (Phase::Prefill, 1, 2048),
                (Phase::Prefill, 4, 8192),
            ] {
                let plan = match ReferencePlan::new(name, &model, &p, phase, batch, context) {
                    Ok(plan) => plan,
                    Err(GpuError::Unsupported { reason, .. }) => {
                        assert!(reason.contains("mixture-of-experts"), "{name}: {reason}");
                        continue;
                    }
                    Err(e) => panic!("{name}: {e}"),
                };
                let floor =
                    crate::floor::floor(&model, &gpu, &p, phase, batch, context).expect("floor");
                let ours = plan.total_bytes();
                let theirs = floor.total_bytes();
                let off = (ours - theirs).abs() / theirs;
                assert!(
                    off <= BYTES_TOLERANCE,
                    "{name} {phase:?} b{batch} c{context}: plan {ours:.4e} vs floor {theirs:.4e} ({:.3}%)",
                    off * 100.0
                );
                assert!(
                    ours <= theirs,
                    "the plan never moves more than the floor counts"
                );
                assert!(plan.flops() > 0.0);
                assert!(plan.device_bytes() > ours - plan.kv_read_bytes());
            }
        }
    }

    #[test]
    fn unsupported_cases_say_why() {
        let p = Precision::parse("bf16", None).expect("bf16");
        let bare = ModelSpec::bare(8e9, 131_072.0, None).expect("bare");
        let moe = model_by_name("mixtral-8x7b").expect("catalogue");
        let dense = model_by_name("llama-3.1-8b").expect("catalogue");
        let int4 = Precision::parse("int4-g128", None).expect("int4");
        for (model, precision, words) in [
            (&bare, &p, "bare form"),
            (&moe, &p, "mixture-of-experts"),
            (&dense, &int4, "precision int4-g128"),
        ] {
            let err = ReferencePlan::new("m", model, precision, Phase::Decode, 1, 128)
                .expect_err("unsupported");
            assert!(err.to_string().contains(words), "{err}");
        }
    }

    #[test]
    fn sliding_windows_cap_the_cached_tokens() {
        let model = model_by_name("mistral-7b-v0.1").expect("catalogue");
        let ModelSpec::Transformer(t) = &model else {
            panic!("transformer")
        };
        let p = Precision::parse("bf16", None).expect("bf16");
        let plan = ReferencePlan::new("m", &model, &p, Phase::Decode, 1, 8192).expect("plan");
        let w = t.sliding_window.expect("mistral v0.1 has a window");
        assert!(plan.layer_tokens.iter().all(|&n| n == 8191.min(w - 1)));
    }
}
