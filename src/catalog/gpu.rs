//! The built-in GPU catalogue: datasheet peak memory bandwidth, dense peak FLOP/s per compute
//! dtype and memory size of each part, matched by the device name NVML reports, and the
//! constructors that declare or override a GPU from config. Pure.
//!
//! Figures are always dense: NVIDIA datasheets print tensor-core figures "with sparsity"
//! (2:4 structured sparsity doubles them), so each sparse datasheet figure is halved here, and
//! the whitepaper's dense figure is used where one is published. Bandwidth and memory use
//! decimal units as the datasheets do (1 GB/s = 1e9 bytes/s, 1 GB = 1e9 bytes).
//!
//! Each entry also names its scale-up interconnect and the bandwidth one GPU can send over it
//! in one direction while receiving the same (NVLink: half the datasheet's bidirectional
//! figure; PCIe: the x16 link's per-direction rate; AMD Infinity Fabric: the sum of the
//! GPU's peer links, one direction), which bounds the collectives of a tensor- or
//! expert-parallel step (`floor::Comms`).
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
    /// 4-bit float (E2M1, NVFP4 or MXFP4) tensor cores; `None` before Blackwell and CDNA 4.
    #[serde(default)]
    pub fp4: Option<f64>,
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
            ComputeDtype::Fp4 => self.fp4,
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
            ComputeDtype::Fp4 => &mut self.fp4,
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

/// A GPU's scale-up link to its peers: what one GPU sends per second in one direction while
/// receiving as much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interconnect {
    /// e.g. `NVLink 4`, `PCIe 5.0 x16`, `Infinity Fabric`, or `declared`.
    pub name: String,
    pub bytes_per_s: f64,
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
    /// The link a tensor- or expert-parallel step's collectives cross, where known.
    #[serde(default)]
    pub interconnect: Option<Interconnect>,
    /// Where the figures come from.
    pub source: String,
}

impl GpuSpec {
    /// The dense peak FLOP/s for a compute dtype, if the part has one.
    #[must_use]
    pub fn peak_flops(&self, compute: ComputeDtype) -> Option<f64> {
        self.dense_flops.get(compute)
    }

    /// Declare (or override) the interconnect's per-direction bandwidth, in GB/s (decimal).
    pub fn with_interconnect(mut self, gb_s: f64) -> Result<GpuSpec, CatalogError> {
        let bytes_per_s = positive("interconnect_gb_s", gb_s)? * 1e9;
        self.interconnect = Some(Interconnect {
            name: "declared".to_string(),
            bytes_per_s,
        });
        self.source = format!("{}; interconnect declared: {gb_s} GB/s", self.source);
        Ok(self)
    }

    /// Override figures of this entry (catalogue or declared). `dense_tflops` keys are compute
    /// dtypes (`fp32`, `tf32`, `bf16`, `fp16`, `fp8`, `int8`, `fp4`), values in TFLOP/s (dense);
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
            interconnect: None,
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
    /// fp32 (non-tensor), tf32, bf16, fp16, fp8, int8, fp4; 0 = no such path, or no figure
    /// that could be verified (said in the entry's comment).
    tflops: [f64; 7],
    /// The scale-up link and its per-direction bandwidth per GPU, GB/s.
    link: (&'static str, f64),
    source: &'static str,
}

/// NVLink 4 (Hopper): 18 links, 900 GB/s bidirectional per GPU (H100 datasheet), 450 each way.
const NVLINK4: (&str, f64) = ("NVLink 4", 450.0);
/// NVLink 5 (Blackwell): 1.8 TB/s bidirectional per GPU (HGX B200 datasheet), 900 each way.
const NVLINK5: (&str, f64) = ("NVLink 5", 900.0);
/// PCIe 4.0 x16: 16 GT/s x 16 lanes, 128b/130b: 31.5 GB/s each way (~32 as datasheets round).
const PCIE4: (&str, f64) = ("PCIe 4.0 x16", 32.0);
/// PCIe 5.0 x16: twice PCIe 4.0, 64 GB/s each way.
const PCIE5: (&str, f64) = ("PCIe 5.0 x16", 64.0);

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
        tflops: [66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9, 0.0],
        link: NVLINK4,
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
        tflops: [51.2, 378.0, 756.0, 756.0, 1513.0, 1513.0, 0.0],
        link: PCIE5,
        source: "NVIDIA H100 Tensor Core GPU Architecture whitepaper (PCIe dense peaks); NVIDIA H100 datasheet (80 GB, 2 TB/s)",
    },
    // NVIDIA H100 datasheet, H100 NVL column: FP32 60, TF32 835*, BF16/FP16 1671*,
    // FP8/INT8 3341* (*with sparsity, halved here); 94 GB HBM3, 3.9 TB/s; NVLink bridge
    // 600 GB/s (bidirectional, between a pair), PCIe 5.0 otherwise.
    Entry {
        slug: "h100-nvl",
        display: "NVIDIA H100 NVL 94GB",
        nvml: &["NVIDIA H100 NVL"],
        bandwidth_gb_s: 3900.0,
        memory_gb: 94.0,
        tflops: [60.0, 417.5, 835.5, 835.5, 1670.5, 1670.5, 0.0],
        link: ("NVLink bridge", 300.0),
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
        tflops: [66.9, 494.7, 989.4, 989.4, 1978.9, 1978.9, 0.0],
        link: NVLINK4,
        source: "NVIDIA H200 datasheet, H200 SXM column (141 GB, 4.8 TB/s; sparse tensor figures halved, = H100 SXM whitepaper dense peaks)",
    },
    // NVIDIA H200 datasheet, H200 NVL column: FP32 60, TF32 835*, BF16/FP16 1671*,
    // FP8/INT8 3341* (*sparse, halved); 141 GB, 4.8 TB/s; 2- or 4-way NVLink bridge, 900 GB/s
    // bidirectional.
    Entry {
        slug: "h200-nvl",
        display: "NVIDIA H200 NVL 141GB",
        nvml: &["NVIDIA H200 NVL"],
        bandwidth_gb_s: 4800.0,
        memory_gb: 141.0,
        tflops: [60.0, 417.5, 835.5, 835.5, 1670.5, 1670.5, 0.0],
        link: ("NVLink bridge", 450.0),
        source: "NVIDIA H200 datasheet, H200 NVL column (sparse tensor figures halved)",
    },
    // NVIDIA H20 (Hopper, export part for China). NVIDIA publishes no public datasheet; the
    // figures are those its partners and the trade press report (could not be verified
    // against an NVIDIA document): 96 GB HBM3, 4.0 TB/s, FP32 44, TF32 74, BF16/FP16 148,
    // FP8 296 TFLOPS, INT8 296 TOPS, read as dense (148 is ~15% of the H100 SXM's dense 989);
    // NVLink 4, 900 GB/s bidirectional.
    Entry {
        slug: "h20",
        display: "NVIDIA H20 96GB",
        nvml: &["NVIDIA H20"],
        bandwidth_gb_s: 4000.0,
        memory_gb: 96.0,
        tflops: [44.0, 74.0, 148.0, 148.0, 296.0, 296.0, 0.0],
        link: NVLINK4,
        source: "NVIDIA H20 figures as reported by partners (no public NVIDIA datasheet; read as dense)",
    },
    // NVIDIA A100 Tensor Core GPU datasheet: FP32 19.5, TF32 156 (312*), BF16/FP16 312 (624*),
    // INT8 624 TOPS (1248*); no FP8. 40 GB HBM2: 1,555 GB/s (SXM4 and PCIe). NVLink 3:
    // 600 GB/s bidirectional (SXM4); the 40 GB PCIe card is taken at the same link here.
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
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0, 0.0],
        link: ("NVLink 3", 300.0),
        source: "NVIDIA A100 Tensor Core GPU datasheet (A100 40GB, dense figures)",
    },
    // Same datasheet, A100 80GB SXM column: 80 GB HBM2e, 2,039 GB/s.
    Entry {
        slug: "a100-80gb",
        display: "NVIDIA A100 80GB SXM4",
        nvml: &["NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"],
        bandwidth_gb_s: 2039.0,
        memory_gb: 80.0,
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0, 0.0],
        link: ("NVLink 3", 300.0),
        source: "NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM, dense figures)",
    },
    // Same datasheet, A100 80GB PCIe column: 1,935 GB/s.
    Entry {
        slug: "a100-80gb-pcie",
        display: "NVIDIA A100 80GB PCIe",
        nvml: &["NVIDIA A100 80GB PCIe", "NVIDIA A100-PCIE-80GB"],
        bandwidth_gb_s: 1935.0,
        memory_gb: 80.0,
        tflops: [19.5, 156.0, 312.0, 312.0, 0.0, 624.0, 0.0],
        link: PCIE4,
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
        tflops: [31.2, 62.5, 125.0, 125.0, 0.0, 250.0, 0.0],
        link: PCIE4,
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
        tflops: [30.3, 60.0, 121.0, 121.0, 242.5, 242.5, 0.0],
        link: PCIE4,
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
        tflops: [91.6, 183.0, 362.05, 362.05, 733.0, 733.0, 0.0],
        link: PCIE4,
        source: "NVIDIA L40S datasheet (dense figures)",
    },
    // NVIDIA HGX B200 datasheet, per GPU: FP32 75, TF32 2.2 PF*, BF16/FP16 4.5 PF*,
    // FP8 9 PF*, INT8 9 POPS*, FP4 18 PF* (*sparse, halved: FP4 9 PF dense); 180 GB HBM3e,
    // 7.7 TB/s (1,000 W); NVLink 5, 1.8 TB/s per GPU.
    Entry {
        slug: "b200",
        display: "NVIDIA B200 (HGX, 1000 W)",
        nvml: &["NVIDIA B200"],
        bandwidth_gb_s: 7700.0,
        memory_gb: 180.0,
        tflops: [75.0, 1100.0, 2250.0, 2250.0, 4500.0, 4500.0, 9000.0],
        link: NVLINK5,
        source: "NVIDIA HGX B200 datasheet, per-GPU figures (sparse tensor figures halved)",
    },
    // NVIDIA GB200 NVL72 datasheet, per Blackwell GPU: FP32 80, TF32 2.5 PF*, BF16/FP16
    // 5 PF*, FP8 10 PF*, INT8 10 POPS*, FP4 20 PF* (*sparse, halved: FP4 10 PF dense; the
    // rack's 1,440 PF FP4* / 72); 186 GB HBM3e, 8 TB/s (1,200 W); NVLink 5, 1.8 TB/s per GPU.
    Entry {
        slug: "gb200",
        display: "NVIDIA GB200 (Blackwell GPU, NVL72, 1200 W)",
        nvml: &["NVIDIA GB200"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 186.0,
        tflops: [80.0, 1250.0, 2500.0, 2500.0, 5000.0, 5000.0, 10000.0],
        link: NVLINK5,
        source: "NVIDIA GB200 NVL72 datasheet, per-GPU figures (sparse tensor figures halved)",
    },
    // NVIDIA HGX B300 datasheet (Blackwell Ultra), per GPU (the 8-GPU board's figures / 8):
    // FP4 18 PF* / 13.125 PF dense (the datasheet prints both: 144 PF* and 105 PF for eight),
    // FP8 9 PF*, BF16/FP16 4.5 PF*, TF32 2.25 PF* (*sparse, halved), FP32 75; 288 GB HBM3e,
    // 8 TB/s, NVLink 5 (1.8 TB/s). INT8 is cut on Blackwell Ultra and no per-GPU figure could
    // be verified: left out.
    Entry {
        slug: "b300",
        display: "NVIDIA B300 (HGX, Blackwell Ultra)",
        nvml: &["NVIDIA B300"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 288.0,
        tflops: [75.0, 1125.0, 2250.0, 2250.0, 4500.0, 0.0, 13125.0],
        link: NVLINK5,
        source: "NVIDIA HGX B300 datasheet, per-GPU figures (sparse tensor figures halved; FP4 dense as printed)",
    },
    // NVIDIA GB300 NVL72 datasheet, rack figures / 72 GPUs: FP4 1,440 PF* / 1,080 PF dense
    // (15 PF per GPU), FP8 720 PF* (5 PF dense), BF16/FP16 360 PF* (2.5 PF dense), TF32
    // 180 PF* (1.25 PF dense); 20 TB HBM3e at 576 TB/s (up to 288 GB, 8 TB/s per GPU);
    // NVLink 5, 1.8 TB/s per GPU. FP32 and INT8 per-GPU figures could not be verified: left
    // out (an fp32 or int8 precision on this entry is an error naming the missing peak).
    Entry {
        slug: "gb300",
        display: "NVIDIA GB300 (Blackwell Ultra GPU, NVL72)",
        nvml: &["NVIDIA GB300"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 288.0,
        tflops: [0.0, 1250.0, 2500.0, 2500.0, 5000.0, 0.0, 15000.0],
        link: NVLINK5,
        source: "NVIDIA GB300 NVL72 datasheet, rack figures per GPU (sparse tensor figures halved; FP4 dense as printed)",
    },
    // AMD Instinct MI300X accelerator data sheet: FP32 163.4, TF32 653.7, BF16/FP16 1307.4,
    // FP8 2614.9 TFLOPS, INT8 2614.9 TOPS (dense; sparse doubles); 192 GB HBM3, 5.3 TB/s;
    // seven Infinity Fabric links of 128 GB/s bidirectional to its peers (896 GB/s, 448 each way).
    Entry {
        slug: "mi300x",
        display: "AMD Instinct MI300X",
        nvml: &["AMD Instinct MI300X", "MI300X"],
        bandwidth_gb_s: 5300.0,
        memory_gb: 192.0,
        tflops: [163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, 0.0],
        link: ("Infinity Fabric", 448.0),
        source: "AMD Instinct MI300X accelerator data sheet (dense figures)",
    },
    // AMD Instinct MI325X accelerator data sheet: compute as MI300X; 256 GB HBM3e, 6 TB/s.
    Entry {
        slug: "mi325x",
        display: "AMD Instinct MI325X",
        nvml: &["AMD Instinct MI325X", "MI325X"],
        bandwidth_gb_s: 6000.0,
        memory_gb: 256.0,
        tflops: [163.4, 653.7, 1307.4, 1307.4, 2614.9, 2614.9, 0.0],
        link: ("Infinity Fabric", 448.0),
        source: "AMD Instinct MI325X accelerator data sheet (dense figures)",
    },
    // AMD Instinct MI350X data sheet (2025): dense FP32 144.2, BF16/FP16 2306.9 (2.3 PF),
    // FP8 4613.7, INT8 4613.7 TOPS, MXFP4 9227.5 TFLOPS (MXFP6 the same); 288 GB HBM3E,
    // 8 TB/s, 1,000 W. No TF32 matrix figure is published for CDNA 4 (left out). Infinity
    // Fabric: seven links of 153.6 GB/s bidirectional (1,075 GB/s, 537.6 each way), as
    // AMD's CDNA 4 whitepaper gives; the MXFP4 and the link figures were read from secondary
    // summaries of the data sheet and not from AMD's PDF itself.
    Entry {
        slug: "mi350x",
        display: "AMD Instinct MI350X",
        nvml: &["AMD Instinct MI350X", "MI350X"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 288.0,
        tflops: [144.2, 0.0, 2306.9, 2306.9, 4613.7, 4613.7, 9227.5],
        link: ("Infinity Fabric", 537.6),
        source: "AMD Instinct MI350X data sheet (dense figures; MXFP4 as fp4)",
    },
    // AMD Instinct MI355X data sheet (2025): dense FP32 157.3, BF16/FP16 2516.6 (2.5 PF),
    // FP8 5033.2, INT8 5033.2 TOPS, MXFP4 10066.4 TFLOPS (10 PF; MXFP6 the same); 288 GB
    // HBM3E, 8 TB/s, 1,400 W (liquid cooled). No TF32 matrix figure (left out). Same links as
    // MI350X; the same caveat on sources.
    Entry {
        slug: "mi355x",
        display: "AMD Instinct MI355X",
        nvml: &["AMD Instinct MI355X", "MI355X"],
        bandwidth_gb_s: 8000.0,
        memory_gb: 288.0,
        tflops: [157.3, 0.0, 2516.6, 2516.6, 5033.2, 5033.2, 10066.4],
        link: ("Infinity Fabric", 537.6),
        source: "AMD Instinct MI355X data sheet (dense figures; MXFP4 as fp4)",
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
        tflops: [82.6, 82.6, 165.2, 165.2, 330.3, 660.6, 0.0],
        link: PCIE4,
        source: "NVIDIA Ada Lovelace GPU Architecture whitepaper (RTX 4090, dense, FP32 accumulate)",
    },
    // NVIDIA RTX PRO 6000 Blackwell Workstation Edition (600 W): 96 GB GDDR7, 1,792 GB/s, FP32
    // 125 TFLOPS and 4,000 "AI TOPS" (FP4 with sparsity) per NVIDIA's product page; FP4 dense
    // is half, 2,000. The BF16 (500) and FP8 (1,000) dense tensor figures are the FP4 figure at
    // Blackwell's 1:2:4 ratio of 16-, 8- and 4-bit tensor rates (professional parts run FP32
    // accumulate at full rate), as the RTX Blackwell GPU architecture whitepaper tabulates; they
    // were not read from that PDF here, so treat them as derived. INT8 left out (unverified).
    // PCIe 5.0 x16, no NVLink.
    Entry {
        slug: "rtx-pro-6000",
        display: "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
        nvml: &["NVIDIA RTX PRO 6000 Blackwell"],
        bandwidth_gb_s: 1792.0,
        memory_gb: 96.0,
        tflops: [125.0, 250.0, 500.0, 500.0, 1000.0, 0.0, 2000.0],
        link: PCIE5,
        source: "NVIDIA RTX PRO 6000 Blackwell product page (FP32, FP4 sparse halved); BF16/FP8 derived at 1:2:4",
    },
    // NVIDIA GeForce RTX 5090: 32 GB GDDR7, 1,792 GB/s, FP32 104.8 TFLOPS, 3,352 "AI TOPS"
    // (FP4 with sparsity; 1,676 dense) per NVIDIA's product page. GeForce parts run FP16/BF16
    // and FP8 tensor math with FP32 accumulate at half rate (as the RTX 4090 entry): BF16
    // 209.5, FP8 419 dense, from the RTX Blackwell whitepaper's table as quoted by secondary
    // sources (not read from the PDF here); INT8 838 TOPS dense likewise. PCIe 5.0 x16.
    Entry {
        slug: "rtx-5090",
        display: "NVIDIA GeForce RTX 5090",
        nvml: &["NVIDIA GeForce RTX 5090"],
        bandwidth_gb_s: 1792.0,
        memory_gb: 32.0,
        tflops: [104.8, 104.8, 209.5, 209.5, 419.0, 838.0, 1676.0],
        link: PCIE5,
        source: "NVIDIA GeForce RTX 5090 product page (FP4 sparse halved); RTX Blackwell whitepaper figures as quoted (FP32 accumulate)",
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
            fp4: t(entry.tflops[6]),
        },
        nvml_patterns: entry.nvml.iter().map(|p| (*p).to_string()).collect(),
        interconnect: Some(Interconnect {
            name: entry.link.0.to_string(),
            bytes_per_s: entry.link.1 * 1e9,
        }),
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
        suggestion: crate::suggest::did_you_mean(name, known_gpus()).map(str::to_owned),
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

/// Every catalogue entry as a spec, in catalogue order (`utilgate gpus`).
#[must_use]
pub fn catalogue() -> Vec<GpuSpec> {
    CATALOGUE.iter().map(spec_of).collect()
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
