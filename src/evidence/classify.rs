//! The kernel-name classifier (pure): one documented list of case-insensitive regexes, first
//! match wins, that config can extend (user rules are tried first). docs/traces.md lists the rules.

use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use super::model::GpuKind;

/// Where a GPU operation's time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Gemm,
    Attention,
    Normalisation,
    Elementwise,
    /// Reductions, softmax, sampling (top-k, argmax, sort).
    Reduction,
    /// Copies and memsets.
    Memory,
    Communication,
    Other,
}

impl Category {
    pub const ALL: [Category; 8] = [
        Category::Gemm,
        Category::Attention,
        Category::Normalisation,
        Category::Elementwise,
        Category::Reduction,
        Category::Memory,
        Category::Communication,
        Category::Other,
    ];

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Category::Gemm => "gemm",
            Category::Attention => "attention",
            Category::Normalisation => "normalisation",
            Category::Elementwise => "elementwise",
            Category::Reduction => "reduction",
            Category::Memory => "memory",
            Category::Communication => "communication",
            Category::Other => "other",
        }
    }

    /// Parses a label as written in config.
    #[must_use]
    pub fn from_label(s: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.label() == s)
    }
}

/// The built-in rules, in order. Communication comes before GEMM and attention so that fused
/// all-reduce kernels count as communication; attention before GEMM because flash kernels often
/// carry "gemm" in their template names.
pub const BUILTIN_RULES: [(&str, Category); 7] = [
    (r"^(memcpy|memset|dma)", Category::Memory),
    (
        r"nccl|rccl|all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|alltoall|cross_device_reduce|multimem|custom_?ar|sendrecv",
        Category::Communication,
    ),
    (
        r"flash|fmha|attention|attn|sdpa|splitkv|paged|mha_|xformers|decode_attention|fwd_kernel_splitkv|unified_attention",
        Category::Attention,
    ),
    (
        r"gemm|gemv|matmul|cutlass|cublas|xmma|nvjet|wgmma|hgemm|sgemm|cijk_|_mm_|bmm|linear|dot_kernel|scaled_mm|marlin|gptq|awq",
        Category::Gemm,
    ),
    (
        r"rms_?norm|layer_?norm|batch_?norm|group_?norm|norm_kernel|_norm_",
        Category::Normalisation,
    ),
    (
        r"softmax|reduce|sum_kernel|argmax|argmin|topk|top_k|sort|scan|cumsum|sampling|sampler|max_kernel|mean_kernel",
        Category::Reduction,
    ),
    (
        r"elementwise|vectorized|unrolled|fill|copy|rotary|rope|act_and_mul|silu|gelu|relu|activation|triton_poi|cat_|index|gather|scatter|quant|cast|embedding|where|mul_|add_",
        Category::Elementwise,
    ),
];

/// A configured rule that could not be compiled.
#[derive(Debug, thiserror::Error)]
#[error("evidence.classify[{index}].pattern {pattern:?} is not a valid regex: {source}")]
pub struct RuleError {
    pub index: usize,
    pub pattern: String,
    #[source]
    pub source: regex::Error,
}

/// Compiled rules: the user's first, then the built-ins.
#[derive(Debug, Clone)]
pub struct Classifier {
    rules: Vec<(Regex, Category)>,
}

fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).case_insensitive(true).build()
}

impl Default for Classifier {
    fn default() -> Self {
        Classifier::new(&[]).unwrap_or_else(|_| Classifier { rules: Vec::new() })
    }
}

impl Classifier {
    /// The built-in rules preceded by `extra` (pattern, category) pairs.
    pub fn new(extra: &[(String, Category)]) -> Result<Self, RuleError> {
        let mut rules = Vec::with_capacity(extra.len() + BUILTIN_RULES.len());
        for (index, (pattern, cat)) in extra.iter().enumerate() {
            let re = compile(pattern).map_err(|source| RuleError {
                index,
                pattern: pattern.clone(),
                source,
            })?;
            rules.push((re, *cat));
        }
        for (pattern, cat) in BUILTIN_RULES {
            // The built-in patterns are constants tested below; a failure would be a bug here.
            if let Ok(re) = compile(pattern) {
                rules.push((re, cat));
            }
        }
        Ok(Classifier { rules })
    }

    /// The category of a GPU operation: copies and memsets by kind, kernels by name.
    #[must_use]
    pub fn classify(&self, kind: GpuKind, name: &str) -> Category {
        if matches!(kind, GpuKind::Memcpy | GpuKind::Memset) {
            return Category::Memory;
        }
        self.rules
            .iter()
            .find(|(re, _)| re.is_match(name))
            .map_or(Category::Other, |(_, c)| *c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_rules_compile_and_classify_real_kernel_names() {
        let c = Classifier::default();
        assert_eq!(c.rules.len(), BUILTIN_RULES.len());
        let k = |n: &str| c.classify(GpuKind::Kernel, n);
        assert_eq!(k("ampere_sgemm_32x32_sliced1x4_tn"), Category::Gemm);
        assert_eq!(
            k("nvjet_tst_128x64_64x6_1x2_h_bz_coopB_TNT"),
            Category::Gemm
        );
        assert_eq!(k("Cijk_Alik_Bljk_BBS_BH_MT128x128x64"), Category::Gemm);
        assert_eq!(
            k("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64>>"),
            Category::Attention
        );
        assert_eq!(
            k("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)"),
            Category::Normalisation
        );
        assert_eq!(
            k("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"),
            Category::Reduction
        );
        assert_eq!(
            k("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"),
            Category::Elementwise
        );
        assert_eq!(
            k("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"),
            Category::Communication
        );
        assert_eq!(k("Memset (Device)"), Category::Memory);
        assert_eq!(c.classify(GpuKind::Memcpy, "whatever"), Category::Memory);
        assert_eq!(k("mystery_kernel"), Category::Other);
    }

    #[test]
    fn user_rules_come_first_and_bad_ones_name_their_index() {
        let c = Classifier::new(&[("^mystery".into(), Category::Attention)]).expect("valid");
        assert_eq!(
            c.classify(GpuKind::Kernel, "mystery_kernel"),
            Category::Attention
        );
        let err = Classifier::new(&[("ok".into(), Category::Gemm), ("(".into(), Category::Gemm)])
            .expect_err("bad");
        assert_eq!(err.index, 1);
        assert!(err.to_string().contains("evidence.classify[1]"));
        assert_eq!(Category::from_label("gemm"), Some(Category::Gemm));
    }
}
