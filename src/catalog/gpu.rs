//! The built-in GPU catalogue: datasheet peak memory bandwidth, dense peak FLOP/s per compute
//! dtype and memory size of each part, matched by the device name NVML reports, and the
//! constructors that declare or override a GPU from config. Pure.
//!
//! Figures are always dense: NVIDIA datasheets print tensor-core figures "with sparsity"
//! (2:4 structured sparsity doubles them), so each sparse datasheet figure is halved here, and
//! the whitepaper's dense figure is used where one is published. Bandwidth and memory use
//! decimal units as the datasheets do (1 GB/s = 1e9 bytes/s, 1 GB = 1e9 bytes).
//!
//! # Matching an NVML device name
//! Both the name and each entry's patterns are lower-cased and their runs of whitespace
//! collapsed. A pattern matches when it occurs in the name at word boundaries (the characters
//! either side, if any, are not ASCII letters or digits), so "NVIDIA L4" does not match
//! "NVIDIA L40S" and "NVIDIA A10" does not match "NVIDIA A100-SXM4-80GB". Of the matching
//! patterns the longest wins (the most specific: "NVIDIA H200 NVL" beats "NVIDIA H200"); a tie
//! goes to the entry listed first in the catalogue.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::CatalogError;
use super::precision::ComputeDtype;

/// Dense peak FLOP/s (or OP/s for int8) of one GPU per compute dtype; `None` where the part
/// has no such path (e.g. fp8 on A100).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct DenseFlops {
    pub fp32: Option<f64>,
    pub tf32: Option<f64>,
    pub bf16: Option<f64>,
    pub fp16: Option<f64>,
    pub fp8: Option<f64>,
    pub int8: Option<f64>,
}

impl DenseFlops {
    #[must_use]
    pub fn get(&self, dtype: ComputeDtype) -> Option<f64> {
        match dtype {
            ComputeDtype::Fp32 => self.fp32,
            ComputeDtype::Tf32 => self.tf32,
            ComputeDtype::Bf16 => self.bf16,
            ComputeDtype::Fp16 => self.fp16,
            ComputeDtype::Fp8 => self.fp8,
            ComputeDtype::Int8 => self.int8,
        }
    }

    fn set(&mut self, dtype: ComputeDtype, value: f64) {
        let slot = match dtype {
            ComputeDtype::Fp32 => &mut self.fp32,
            ComputeDtype::Tf32 => &mut self.tf32,
            ComputeDtype::Bf16 => &mut self.bf16,
            ComputeDtype::Fp16 => &mut self.fp16,
            ComputeDtype::Fp8 => &mut self.fp8,
            ComputeDtype::Int8 => &mut self.int8,
        };
        *slot = Some(value);
    }

    /// The compute dtypes with a peak, in `ComputeDtype::ALL` order.
    #[must_use]
    pub fn available(&self) -> Vec<ComputeDtype> {
        ComputeDtype::ALL
            .into_iter()
            .filter(|d| self.get(*d).is_some())
            .collect()
    }
}

/// One GPU's peaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    /// Catalogue slug, e.g. `h100-sxm`, or the declared name.
    pub name: String,
    pub display_name: String,
    /// Datasheet peak memory bandwidth.
    pub mem_bandwidth_bytes_per_s: f64,
    /// Memory size, where known.
    pub memory_bytes: Option<f64>,
    /// Dense peak FLOP/s per compute dtype.
    pub dense_flops: DenseFlops,
    /// NVML device-name patterns that select this entry.
    pub nvml_patterns: Vec<String>,
    /// Where the figures come from.
    pub source: String,
}

impl GpuSpec {
    /// The dense peak FLOP/s for a compute dtype, if the part has one.
    #[must_use]
    pub fn peak_flops(&self, compute: ComputeDtype) -> Option<f64> {
        self.dense_flops.get(compute)
    }

    /// Override figures of this entry (catalogue or declared). `dense_tflops` keys are compute
    /// dtypes (`fp32`, `tf32`, `bf16`, `fp16`, `fp8`, `int8`), values in TFLOP/s (dense);
    /// bandwidth in GB/s and memory in GB, decimal.
    pub fn with_overrides(
        mut self,
        mem_bandwidth_gb_s: Option<f64>,
        dense_tflops: &BTreeMap<String, f64>,
        memory_gb: Option<f64>,
    ) -> Result<GpuSpec, CatalogError> {
        let mut changed = Vec::new();
        if let Some(bw) = mem_bandwidth_gb_s {
            self.mem_bandwidth_bytes_per_s = positive("mem_bandwidth_gb_s", bw)? * 1e9;
            changed.push("mem_bandwidth_gb_s");
        }
        for (key, value) in dense_tflops {
            let dtype: ComputeDtype = key.parse()?;
            let tflops = positive(&format!("dense_tflops.{key}"), *value)?;
            self.dense_flops.set(dtype, tflops * 1e12);
        }
        if !dense_tflops.is_empty() {
            changed.push("dense_tflops");
        }
        if let Some(mem) = memory_gb {
            self.memory_bytes = Some(positive("memory_gb", mem)? * 1e9);
            changed.push("memory_gb");
        }
        if !changed.is_empty() {
            self.source = format!(
                "{}; overridden in config: {}",
                self.source,
                changed.join(", ")
            );
        }
        Ok(self)
    }

    /// Declare a GPU that is not in the catalogue.
    pub fn declared(
        name: &str,
        mem_bandwidth_gb_s: f64,
        dense_tflops: &BTreeMap<String, f64>,
        memory_gb: Option<f64>,
    ) -> Result<GpuSpec, CatalogError> {
        let base = GpuSpec {
            name: name.to_string(),
            display_name: name.to_string(),
            mem_bandwidth_bytes_per_s: 0.0,
            memory_bytes: None,
            dense_flops: DenseFlops::default(),
            nvml_patterns: Vec::new(),
            source: "declared in config".to_string(),
        };
        let mut spec = base.with_overrides(Some(mem_bandwidth_gb_s), dense_tflops, memory_gb)?;
        spec.source = "declared in config".to_string();
        Ok(spec)
    }
}

fn positive(what: &str, value: f64) -> Result<f64, CatalogError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(CatalogError::InvalidFigure {
            what: what.to_string(),
            value,
        })
    }
}

/// One catalogue row; figures in datasheet units (GB/s, GB, dense TFLOP/s or TOP/s).
struct Entry {
    slug: &'static str,
    display: &'static str,
    nvml: &'static [&'static str],
    bandwidth_gb_s: f64,
    memory_gb: f64,
    /// fp32 (non-tensor), tf32, bf16, fp16, fp8, int8; 0 = no such path.
    tflops: [f64; 6],
    source: &'static str,
}

/// The catalogue. Every figure's source is named in its entry.
const CATALOGUE: &[Entry] = &[
    // NVIDIA H100 Tensor Core GPU Architecture whitepaper (v1.04), table "NVIDIA H100 SXM5":
    // dense FP32 66.9, TF32 494.7, BF16/FP16 989.4, FP8 1978.9 TFLOPS, INT8 1978.9 TOPS;
    // NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s.
    Entry {
        slug: "h100-sxm",
        display: "NVIDIA H100 SXM5 80GB",
        nvml: &[
            "NVIDIA H100 80GB HBM3",
            "NVIDIA H100 SXM5 80GB",
            "NVIDIA H100 SXM",
        ],
        bandwidth_gb_s: 3350.0,
        memory_gb: 80.0,
        tflops: [66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9],
        source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (SXM5 dense peaks); NVIDIA H100 datasheet (80 GB, 3.35 TB/s)",
    },
    // Whitepaper table "NVIDIA H100 PCIe": dense FP32 51.2, TF32 378, BF16/FP16 756,
    // FP8 1513 TFLOPS, INT8 1513 TOPS; datasheet: 80 GB HBM2e, 2 TB/s.
    Entry {
        slug: "h100-pcie",
        display: "NVIDIA H100 PCIe 80GB",
        nvml: &["NVIDIA H100 PCIe"],
        bandwidth_gb_s: 2000.0,
        memory_gb: 80.0,
        tflops: [51.2, 378.0, 756.0, 756.0, 1513.0, 1513.0],
        source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (PCIe dense peaks); NVIDIA H100 datasheet (80 GB, 2 TB/s)",
    },
    // NVIDIA H100 datasheet, H100 NVL column: FP32 60, TF32 835*, BF16/FP16 1671*,
    // FP8/INT8 3341* (*with sparsity, halved here); 94 GB HBM3, 3.9 TB/s.
    Entry {
        slug: "h100-nvl",
        display: "NVIDIA H100 NVL 94GB",
        nvml: &["NVIDIA H100 NVL"],
        bandwidth_gb_s: 3900.0,
        memory_gb: 94.0,
        tflops: [60.0, 417.5, 835.5, 835.5, 1670.5, 1670.5],
        source: "NVIDIA H100 datasheet, H100 NVL column (sparse tensor figures halved)",
    },
    // NVIDIA H200 datasheet, H200 SXM column: 141 GB HBM3e, 4.8 TB/s; tensor figures equal the
    // H100 SXM's (TF32 989*, BF16/FP16 1979*, FP8/INT8 3958*, *sparse), so the whitepaper's
    // dense H100 SXM figures apply.
    Entry {
        slug: "h200",
        display: "NVIDIA H200 SXM 141GB",
        nvml: &["NVIDIA H200"],
        bandwidth_gb_s: 4800.0,
        memory_gb: 141.0,
        tflops: [66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9],
        source: "NVIDIA H200 datasheet, H200 SXM column (141 GB, 4.8 TB/s; sparse tensor figures halved, = H100 SXM whitepaper dense peaks)",
    },
    // NVIDIA H200 datasheet, H200 NVL column: FP32 60, TF32 835*, BF16/FP16 1671*,
    // FP8/INT8 3341* (*sparse, halved); 141 GB, 4.8 TB/s.
    Entry {
        slug: "h200-nvl",
        display: "NVIDIA H200 NVL 141GB",
        nvml: &["NVIDIA H200 NVL"],
        bandwidth_gb_s: 4800.0,
        memory_gb: 141.0,
        tflops: [60.0, 417.5, 835.5, 835.5, 1670.5, 1670.5],
        source: "NVIDIA H200 datasheet, H200 NVL column (sparse tensor figures halved)",
    },
    // NVIDIA A100 Tensor Core GPU datasheet: FP32 19.5, TF32 156 (312*), BF16/FP16 312 (624*),
    // INT8 624 TOPS (1248*); no FP8. 40 GB HBM2: 1,555 GB/s (SXM4 and PCIe).
    Entry {
        slug: "a100-40gb",
        display: "NVIDIA A100 40GB",
        nvml: &[
            "NVIDIA A100-SXM4-40GB",
            "NVIDIA A100-PCIE-40GB",
            "NVIDIA A100 40GB PCIe",
        ],
        bandwidth_gb_s: 1555.0,
        memory_gb: 40.0,
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0],
        source: "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB, dense figures)",
    },
    // Same datasheet, A100 80GB SXM column: 80 GB HBM2e, 2,039 GB/s.
    Entry {
        slug: "a100-80gb",
        display: "NVIDIA A100 80GB SXM4",
        nvml: &["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"],
        bandwidth_gb_s: 2039.0,
        memory_gb: 80.0,
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0],
        source: "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM, dense figures)",
    },
    // Same datasheet, A100 80GB PCIe column: 1,935 GB/s.
    Entry {
        slug: "a100-80gb-pcie",
        display: "NVIDIA A100 80GB PCIe",
        nvml: &["NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"],
        bandwidth_gb_s: 1935.0,
        memory_gb: 80.0,
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0],
        source: "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB PCIe, dense figures)",
    },
    // NVIDIA A10 Tensor Core GPU datasheet: FP32 31.2, TF32 62.5 (125*), BF16/FP16 125
    // (250*), INT8 250 TOPS (500*); 24 GB GDDR6, 600 GB/s.
    Entry {
        slug: "a10",
        display: "NVIDIA A10",
        nvml: &["NVIDIA A10"],
        bandwidth_gb_s: 600.0,
        memory_gb: 24.0,
        tflops: [31.2, 62.5, 125.0, 125.0, 0.0, 250.0],
        source: "NVIDIA A10 Tensor Core GPU datasheet (dense figures)",
    },
    // NVIDIA L4 Tensor Core GPU datasheet: FP32 30.3, TF32 120*, BF16/FP16 242*, FP8 485*,
    // INT8 485* (*sparse, halved); 24 GB GDDR6, 300 GB/s.
    Entry {
        slug: "l4",
        display: "NVIDIA L4",
        nvml: &["NVIDIA L4"],
        bandwidth_gb_s: 300.0,
        memory_gb: 24.0,
        tflops: [30.3, 60.0, 121.0, 121.0, 242.5, 242.5],
        source: "NVIDIA L4 Tensor Core GPU datasheet (sparse tensor figures halved)",
    },
    // NVIDIA L40S datasheet: FP32 91.6, TF32 183 (366*), BF16/FP16 362.05 (733*), FP8 733
    // (1466*), INT8 733 TOPS (1466*); 48 GB GDDR6, 864 GB/s.
    Entry {
        slug: "l40s",
        display: "NVIDIA L40S",
        nvml: &["NVIDIA L40S"],
        bandwidth_gb_s: 864.0,
        memory_gb: 48.0,
        tflops: [91.6, 183.0, 362.05, 362.05, 733.0, 733.0],
        source: "NVIDIA L40S datasheet (dense figures)",
    },
    // NVIDIA HGX B200 datasheet, per GPU: FP32 75, TF32 2.2 PF*, BF16/FP16 4.5 PF*,
    // FP8 9 PF*, INT8 9 POPS* (*sparse, halved); 180 GB HBM3e, 7.7 TB/s (1,000 W).
    Entry {
        slug: "b200",
        display: "NVIDIA B200 (HGX, 1000 W)",
        nvml: &["NVIDIA B200"],
        bandwidth_gb_s: 7700.0,
        memory_gb: 180.0,
        tflops: [75.0, 1100.0, 2250.0, 2250.0, 4500.0, 4500.0],
        source: "NVIDIA HGX B200 datasheet, per-GPU figures (sparse tensor figures halved)",
    },
    // NVIDIA GB200 NVL72 datasheet, per Blackwell GPU: FP32 80, TF32 2.5 PF*, BF16/FP16
    // 5 PF*, FP8 10 PF*, INT8 10 POPS* (*sparse, halved); 186 GB HBM3e, 8 TB/s (1,200 W).
    Entry {
        slug: "gb200",
        display: "NVIDIA GB200 (Blackwell GPU, NVL72, 1200 W)",
        nvml: &["NVIDIA GB200"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 186.0,
        tflops: [80.0, 1250.0, 2500.0, 2500.0, 5000.0, 5000.0],
        source: "NVIDIA GB200 NVL72 datasheet, per-GPU figures (sparse tensor figures halved)",
    },
    // AMD Instinct MI300X accelerator data sheet: FP32 163.4, TF32 653.7, BF16/FP16 1307.4,
    // FP8 2614.9 TFLOPS, INT8 2614.9 TOPS (dense; sparse doubles); 192 GB HBM3, 5.3 TB/s.
    Entry {
        slug: "mi300x",
        display: "AMD Instinct MI300X",
        nvml: &["AMD Instinct MI300X", "MI300X"],
        bandwidth_gb_s: 5300.0,
        memory_gb: 192.0,
        tflops: [163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9],
        source: "AMD Instinct MI300X accelerator data sheet (dense figures)",
    },
    // AMD Instinct MI325X accelerator data sheet: compute as MI300X; 256 GB HBM3e, 6 TB/s.
    Entry {
        slug: "mi325x",
        display: "AMD Instinct MI325X",
        nvml: &["AMD Instinct MI325X", "MI325X"],
        bandwidth_gb_s: 6000.0,
        memory_gb: 256.0,
        tflops: [163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9],
        source: "AMD Instinct MI325X accelerator data sheet (dense figures)",
    },
    // NVIDIA Ada Lovelace GPU Architecture whitepaper, appendix table for the RTX 4090:
    // FP32 82.6; TF32 82.6; BF16/FP16 tensor with FP32 accumulate 165.2 (the accumulate
    // inference frameworks use; FP16 accumulate runs at 330.3); FP8 with FP32 accumulate
    // 330.3; INT8 660.6 TOPS (dense); 24 GB GDDR6X, 1,008 GB/s.
    Entry {
        slug: "rtx-4090",
        display: "NVIDIA GeForce RTX 4090",
        nvml: &["NVIDIA GeForce RTX 4090"],
        bandwidth_gb_s: 1008.0,
        memory_gb: 24.0,
        tflops: [82.6, 82.6, 165.2, 165.2, 330.3, 660.6],
        source: "NVIDIA Ada Lovelace GPU Architecture whitepaper (RTX 4090, dense, FP32 accumulate)",
    },
];

fn spec_of(entry: &Entry) -> GpuSpec {
    let t = |v: f64| (v > 0.0).then_some(v * 1e12);
    GpuSpec {
        name: entry.slug.to_string(),
        display_name: entry.display.to_string(),
        mem_bandwidth_bytes_per_s: entry.bandwidth_gb_s * 1e9,
        memory_bytes: Some(entry.memory_gb * 1e9),
        dense_flops: DenseFlops {
            fp32: t(entry.tflops[0]),
            tf32: t(entry.tflops[1]),
            bf16: t(entry.tflops[2]),
            fp16: t(entry.tflops[3]),
            fp8: t(entry.tflops[4]),
            int8: t(entry.tflops[5]),
        },
        nvml_patterns: entry.nvml.iter().map(|p| (*p).to_string()).collect(),
        source: entry.source.to_string(),
    }
}

/// A catalogue entry by slug (case-insensitive, `_` read as `-`), else by NVML device name.
#[must_use]
pub fn gpu_by_name(slug: &str) -> Option<GpuSpec> {
    let wanted = slug.trim().to_ascii_lowercase().replace('_', "-");
    CATALOGUE
        .iter()
        .find(|e| e.slug == wanted)
        .map(spec_of)
        .or_else(|| gpu_from_nvml_name(slug))
}

/// Like [`gpu_by_name`], with an error that lists the known GPUs.
pub fn resolve_gpu(name: &str) -> Result<GpuSpec, CatalogError> {
    gpu_by_name(name).ok_or_else(|| CatalogError::UnknownGpu {
        name: name.to_string(),
        known: known_gpus().join(", "),
    })
}

/// The entry whose NVML pattern matches the device name (see the module docs for the rule).
#[must_use]
pub fn gpu_from_nvml_name(nvml_name: &str) -> Option<GpuSpec> {
    let name = normalise(nvml_name);
    let mut best: Option<(usize, &Entry)> = None;
    for entry in CATALOGUE {
        for pattern in entry.nvml {
            let pattern = normalise(pattern);
            if contains_at_word_boundary(&name, &pattern)
                && best.is_none_or(|(len, _)| pattern.len() > len)
            {
                best = Some((pattern.len(), entry));
            }
        }
    }
    best.map(|(_, entry)| spec_of(entry))
}

/// The catalogue's slugs, in catalogue order.
#[must_use]
pub fn known_gpus() -> Vec<&'static str> {
    CATALOGUE.iter().map(|e| e.slug).collect()
}

fn normalise(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

fn contains_at_word_boundary(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    haystack.match_indices(needle).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_alphanumeric())
            && !after.is_some_and(|c| c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests;
