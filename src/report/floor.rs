//! `utilgate floor`: builds the floor report of one case (inputs, parameter counts, floor with
//! its bytes and FLOPs broken down, memory fit, utilisation of a given step time) and renders
//! it for the terminal. Pure: the caller resolves the model, GPU and precision, prints, and
//! serialises the report for `--format json`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::case::{Phase, Speculation};
use crate::catalog::gpu::GpuSpec;
use crate::catalog::model::ModelSpec;
use crate::catalog::precision::Precision;
use crate::floor::{
    Floor, FloorError, Parallelism, Utilisation, floor_on, footprint_on, round_floor,
};
use crate::report::format::{grouped, si, sig4};

/// The JSON schema version of [`FloorReport`].
pub const SCHEMA_VERSION: u32 = 1;

/// What the floor was computed for.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloorInputs {
    pub model: String,
    /// `transformer` (exact, from a config) or `bare`.
    pub model_form: &'static str,
    pub gpu: String,
    pub gpu_display_name: String,
    pub gpu_source: String,
    pub precision: String,
    pub weight_dtype: String,
    pub kv_dtype: String,
    pub compute_dtype: String,
    pub phase: Phase,
    pub batch: u64,
    pub context: u64,
    /// Tensor- and expert-parallel degrees (1 and 1 on one GPU).
    pub tp: u64,
    pub ep: u64,
    /// A speculative round's draft (a model, or `ngram`) and draft length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draft_k: Option<u64>,
    pub step_ms: Option<f64>,
}

/// Parameter counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ParamCounts {
    pub total: f64,
    pub active: f64,
}

/// Whether the weights and the KV cache fit the GPU's memory (the busiest GPU's share over
/// several GPUs).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MemoryFit {
    /// Every weight at the precision, all experts and scales included.
    pub weights_bytes: f64,
    /// The KV cache after the step.
    pub kv_bytes: f64,
    pub total_bytes: f64,
    pub gpu_memory_bytes: Option<f64>,
    /// `None` when the GPU's memory size is unknown.
    pub fits: Option<bool>,
}

/// The result of `utilgate floor`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FloorReport {
    pub schema_version: u32,
    pub inputs: FloorInputs,
    pub params: ParamCounts,
    pub floor: Floor,
    /// Time the bytes take at peak bandwidth.
    pub memory_ms: f64,
    /// Time the FLOPs take at peak FLOP/s.
    pub compute_ms: f64,
    /// Time the collectives take at the link's bandwidth (0 on one GPU).
    pub comms_ms: f64,
    pub memory: MemoryFit,
    /// MBU, MFU and utilisation of `step_ms`, when given.
    pub utilisation: Option<Utilisation>,
    /// Lines for stderr: memory does not fit, utilisation above 100%.
    pub warnings: Vec<String>,
}

/// Compute the report of one case.
#[expect(
    clippy::too_many_arguments,
    reason = "one argument per CLI flag of `utilgate floor`"
)]
pub fn build_report(
    model_name: &str,
    model: &ModelSpec,
    gpu: &GpuSpec,
    precision: &Precision,
    phase: Phase,
    batch: u64,
    context: u64,
    par: Parallelism,
    speculation: Option<(&Speculation, Option<&ModelSpec>)>,
    step_ms: Option<f64>,
) -> Result<FloorReport, FloorError> {
    if let Some(t) = step_ms.filter(|t| !(t.is_finite() && *t > 0.0)) {
        return Err(FloorError::InvalidStepTime(t));
    }
    let floor = match speculation {
        Some((spec, draft)) if phase == Phase::Decode => {
            round_floor(model, draft, gpu, precision, batch, context, par, spec)?
        }
        Some(_) => {
            return Err(FloorError::InvalidSpeculation {
                reason: "speculative decoding drafts decode steps; a prefill case has none"
                    .to_owned(),
            });
        }
        None => floor_on(model, gpu, precision, phase, batch, context, par)?,
    };
    let mut fp = footprint_on(model, precision, phase, batch, context, par);
    // The draft model lives beside the target, its cache as long as the target's.
    if let Some((spec, Some(draft))) = speculation {
        let d = footprint_on(
            draft,
            precision,
            phase,
            par.sequences(batch),
            context + spec.k,
            Parallelism { tp: par.tp, ep: 1 },
        );
        fp.weights_bytes += d.weights_bytes;
        fp.kv_bytes += d.kv_bytes;
    }
    let total_bytes = fp.weights_bytes + fp.kv_bytes;
    let fits = gpu.memory_bytes.map(|m| total_bytes <= m);
    let mut warnings = Vec::new();
    if let (Some(false), Some(mem)) = (fits, gpu.memory_bytes) {
        warnings.push(format!(
            "weights ({}) plus KV cache ({}) need {}, more than the {} of {}",
            si(fp.weights_bytes, "B"),
            si(fp.kv_bytes, "B"),
            si(total_bytes, "B"),
            si(mem, "B"),
            gpu.display_name
        ));
    }
    let utilisation = step_ms.map(|t| floor.utilisation(t));
    if let (Some(u), Some(t)) = (utilisation.filter(|u| u.utilisation > 1.0), step_ms) {
        warnings.push(format!(
            "a {} ms step is below the {} ms floor ({:.1}% utilisation): physically \
             impossible; check that the timing synchronises the GPU and that the model spec \
             is right",
            sig4(t),
            sig4(floor.floor_ms),
            u.utilisation * 100.0
        ));
    }

    let (model_form, weight_dtype) = match model {
        ModelSpec::Transformer(_) => ("transformer", precision.weights.to_string()),
        ModelSpec::Bare(_) => ("bare", precision.weights.to_string()),
    };
    Ok(FloorReport {
        schema_version: SCHEMA_VERSION,
        inputs: FloorInputs {
            model: model_name.to_string(),
            model_form,
            gpu: gpu.name.clone(),
            gpu_display_name: gpu.display_name.clone(),
            gpu_source: gpu.source.clone(),
            precision: precision.label.clone(),
            weight_dtype,
            kv_dtype: precision.kv.to_string(),
            compute_dtype: precision.compute.to_string(),
            phase,
            batch,
            context,
            tp: par.tp,
            ep: par.ep,
            draft: speculation.map(|(s, _)| s.draft.clone()),
            draft_k: speculation.map(|(s, _)| s.k),
            step_ms,
        },
        params: ParamCounts {
            total: model.total_params(),
            active: model.active_params(),
        },
        memory_ms: floor.memory_ms(),
        compute_ms: floor.compute_ms(),
        comms_ms: floor.comms_ms(),
        floor,
        memory: MemoryFit {
            weights_bytes: fp.weights_bytes,
            kv_bytes: fp.kv_bytes,
            total_bytes,
            gpu_memory_bytes: gpu.memory_bytes,
            fits,
        },
        utilisation,
        warnings,
    })
}

/// The case's inputs: model, GPU, precision, point, dtypes, parallelism and the figures' source.
fn render_inputs(out: &mut String, report: &FloorReport) {
    let i = &report.inputs;
    let f = &report.floor;
    let _ = writeln!(
        out,
        "{} on {} ({}), {} {}, batch {}, context {}",
        i.model, i.gpu_display_name, i.gpu, i.precision, i.phase, i.batch, i.context
    );
    let _ = writeln!(
        out,
        "  weights {}, KV cache {}, compute peak {}",
        i.weight_dtype, i.kv_dtype, i.compute_dtype
    );
    if let Some(p) = &f.parallel {
        let _ = writeln!(
            out,
            "  {} GPUs: tp {}, ep {}, {} attention group(s); per GPU, the busiest",
            p.gpus, p.tp, p.ep, p.dp
        );
    }
    // Where the peaks came from: a datasheet, a declaration, or a measurement pinned in a file.
    let _ = writeln!(out, "  figures: {}", i.gpu_source);
}

/// The floor and its resources: memory, compute, a speculative round, collectives.
fn render_roofline(out: &mut String, report: &FloorReport) {
    let i = &report.inputs;
    let f = &report.floor;
    let _ = writeln!(
        out,
        "floor     {} ms  {}-bound",
        sig4(f.floor_ms),
        f.bound.as_str()
    );
    let _ = writeln!(
        out,
        "  memory  {} ms  {} at {}",
        sig4(report.memory_ms),
        si(f.total_bytes(), "B"),
        si(f.peak_bandwidth_bytes_per_s, "B/s")
    );
    let _ = writeln!(
        out,
        "  compute {} ms  {} at {} ({} dense)",
        sig4(report.compute_ms),
        si(f.total_flops(), "FLOP"),
        si(f.peak_flops_per_s, "FLOP/s"),
        i.compute_dtype
    );
    if let Some(s) = &f.speculative {
        let _ = writeln!(
            out,
            "  round   {} ms  draft {} (k = {}) {} ms, then verification of {} tokens per \
             sequence {} ms",
            sig4(f.floor_ms),
            s.draft,
            s.k,
            sig4(s.draft_ms),
            s.k + 1,
            sig4(s.verify_ms)
        );
        let _ = writeln!(
            out,
            "  plain   {} ms  per token without speculation: the round beats it when it emits \
             more than {:.2} tokens per sequence",
            sig4(s.plain_decode_ms),
            f.floor_ms / s.plain_decode_ms
        );
    }
    if let Some(p) = &f.parallel {
        let _ = writeln!(
            out,
            "  comms   {} ms  {} sent at {} ({})",
            sig4(report.comms_ms),
            si(p.comms.total_bytes(), "B"),
            si(p.comms.link_bytes_per_s, "B/s"),
            p.comms.link
        );
    }
}

/// The report as multi-line text for the terminal (warnings included at the end; the caller
/// may print `report.warnings` to stderr instead).
#[must_use]
pub fn render_human(report: &FloorReport) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail; the results are ignored on that invariant.
    render_inputs(&mut out, report);
    let _ = writeln!(out);
    render_roofline(&mut out, report);
    let _ = writeln!(out);
    render_breakdown(&mut out, report);
    let (i, f) = (&report.inputs, &report.floor);
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "parameters  {} total, {} active",
        grouped(report.params.total),
        grouped(report.params.active)
    );
    let m = &report.memory;
    let capacity = m
        .gpu_memory_bytes
        .map_or_else(|| "unknown".to_string(), |c| si(c, "B"));
    let _ = writeln!(
        out,
        "memory      {} of {} (weights {}, KV cache {})",
        si(m.total_bytes, "B"),
        capacity,
        si(m.weights_bytes, "B"),
        si(m.kv_bytes, "B")
    );
    if let (Some(u), Some(t)) = (report.utilisation, i.step_ms) {
        let _ = writeln!(
            out,
            "measured    {} ms step: utilisation {:.1}% (MBU {:.1}%, MFU {:.1}%)",
            sig4(t),
            u.utilisation * 100.0,
            u.mbu * 100.0,
            u.mfu * 100.0
        );
    }
    if !f.notes.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "notes");
        for note in &f.notes {
            let _ = writeln!(out, "  - {note}");
        }
    }
    if !report.warnings.is_empty() {
        let _ = writeln!(out);
        for w in &report.warnings {
            let _ = writeln!(out, "warning: {w}");
        }
    }
    out
}

/// The bytes and FLOPs tables.
fn render_breakdown(out: &mut String, report: &FloorReport) {
    let f = &report.floor;
    let _ = writeln!(out, "bytes per step");
    let weights_label = if report.inputs.model_form == "bare" {
        "weights (all parameters)"
    } else {
        "weights (decoder layers)"
    };
    let b = &f.bytes;
    for (label, v) in [
        (weights_label, b.weights),
        ("embedding rows gathered", b.embedding),
        ("lm_head", b.lm_head),
        ("KV cache read", b.kv_read),
        ("KV cache written", b.kv_write),
        ("draft steps", b.draft),
        ("total", b.total()),
    ] {
        if label == "draft steps" && f.speculative.is_none() {
            continue;
        }
        let _ = writeln!(out, "  {label:<26}{:>12}", si(v, "B"));
    }
    if b.scales > 0.0 {
        let _ = writeln!(
            out,
            "  {:<26}{:>12}",
            "of the weights, scales",
            si(b.scales, "B")
        );
    }
    if let Some(p) = &f.parallel {
        let c = &p.comms;
        let _ = writeln!(out, "collectives per step (bytes each GPU sends)");
        let _ = writeln!(
            out,
            "  {:<26}{:>12}",
            format!("{} all-reduce(s)", c.all_reduces),
            si(c.all_reduce_bytes, "B")
        );
        let _ = writeln!(
            out,
            "  {:<26}{:>12}",
            format!("{} all-to-all layer(s)", c.all_to_all_layers),
            si(c.all_to_all_bytes, "B")
        );
    }
    let _ = writeln!(out, "FLOPs per step");
    let fl = &f.flops;
    for (label, v) in [
        ("linear layers", fl.linear),
        ("attention", fl.attention),
        ("lm_head", fl.lm_head),
        ("draft steps", fl.draft),
        ("total", fl.total()),
    ] {
        if label == "draft steps" && f.speculative.is_none() {
            continue;
        }
        let _ = writeln!(out, "  {label:<26}{:>12}", si(v, "FLOP"));
    }
}

#[cfg(test)]
#[expect(
    clippy::float_cmp,
    reason = "exact equality is intended: these figures are exact in f64"
)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::catalog::gpu::gpu_by_name;
    use crate::catalog::model::model_by_name;

    fn h100() -> GpuSpec {
        gpu_by_name("h100-sxm").expect("should succeed")
    }

    #[test]
    fn report_of_the_worked_example() {
        let model = ModelSpec::bare(8.0e9, 131_072.0, None).expect("should succeed");
        let mut t = BTreeMap::new();
        t.insert("bf16".to_string(), 989.0);
        let gpu = GpuSpec::declared("h100", 3350.0, &t, Some(80.0)).expect("should succeed");
        let p = Precision::parse("bf16", None).expect("should succeed");
        let r = build_report(
            "seed-8b",
            &model,
            &gpu,
            &p,
            Phase::Decode,
            1,
            4096,
            Parallelism::SINGLE,
            None,
            Some(9.8),
        )
        .expect("should succeed");
        let u = r.utilisation.expect("should succeed");
        assert_eq!((u.mbu * 100.0).round(), 50.0);
        assert!(r.warnings.is_empty());
        assert_eq!(r.memory.fits, Some(true));
        let text = render_human(&r);
        assert!(text.contains("4.936 ms  memory-bound"), "{text}");
        assert!(text.contains("MBU 50.4%"), "{text}");
        assert!(text.contains("weights (all parameters)"), "{text}");
        let json = serde_json::to_value(&r).expect("should succeed");
        assert_eq!(json["schema_version"], 1);
        assert_eq!(json["floor"]["bound"], "memory");
        assert_eq!(json["inputs"]["phase"], "decode");
        assert_eq!(json["inputs"]["model_form"], "bare");
    }

    #[test]
    fn exact_model_report_names_its_parts() {
        let model = model_by_name("llama-3.1-8b").expect("should succeed");
        let p = Precision::parse("bf16", None).expect("should succeed");
        let r = build_report(
            "llama-3.1-8b",
            &model,
            &h100(),
            &p,
            Phase::Decode,
            8,
            4096,
            Parallelism::SINGLE,
            None,
            None,
        )
        .expect("should succeed");
        assert!(r.utilisation.is_none());
        let text = render_human(&r);
        // The whole report's shape, kept by a snapshot: every line a reader compares.
        insta::assert_snapshot!("floor_llama_3_1_8b_h100_decode_b8_c4096", text);
        for part in [
            "lm_head",
            "KV cache read",
            "attention",
            "8,030,261,248 total",
            "gathered",
        ] {
            assert!(text.contains(part), "{part} missing in\n{text}");
        }
    }

    #[test]
    fn warns_when_memory_does_not_fit_or_step_beats_the_floor() {
        let model = model_by_name("llama-3.1-70b").expect("should succeed");
        let p = Precision::parse("bf16", None).expect("should succeed");
        let r = build_report(
            "llama-3.1-70b",
            &model,
            &h100(),
            &p,
            Phase::Decode,
            1,
            1024,
            Parallelism::SINGLE,
            None,
            Some(1.0),
        )
        .expect("should succeed");
        assert_eq!(r.memory.fits, Some(false));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("more than the 80.00 GB")),
            "{:?}",
            r.warnings
        );
        assert!(
            r.warnings.iter().any(|w| w.contains("physically")),
            "{:?}",
            r.warnings
        );
        let err = build_report(
            "m",
            &model,
            &h100(),
            &p,
            Phase::Decode,
            1,
            1,
            Parallelism::SINGLE,
            None,
            Some(0.0),
        );
        assert_eq!(
            err.expect_err("should fail"),
            FloorError::InvalidStepTime(0.0)
        );
    }

    /// The breakdown over GPUs: the busiest GPU's bytes, the collectives, the comms time.
    #[test]
    fn parallel_report_shows_the_collectives() {
        let model = model_by_name("mixtral-8x7b").expect("built-in model");
        let p = Precision::parse("fp8-b128", None).expect("valid");
        let h200 = gpu_by_name("h200").expect("catalogue entry");
        let r = build_report(
            "mixtral-8x7b",
            &model,
            &h200,
            &p,
            Phase::Decode,
            8,
            4096,
            Parallelism { tp: 2, ep: 8 },
            None,
            None,
        )
        .expect("floor");
        let text = render_human(&r);
        insta::assert_snapshot!("floor_mixtral_8x7b_h200_fp8_b128_tp2_ep8", text);
        for part in [
            "8 GPUs: tp 2, ep 8, 4 attention group(s)",
            "comms",
            "NVLink 4",
            "all-to-all layer(s)",
            "of the weights, scales",
        ] {
            assert!(text.contains(part), "{part} missing in\n{text}");
        }
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["inputs"]["tp"], 2);
        assert_eq!(json["floor"]["parallel"]["comms"]["all_to_all_layers"], 32);
    }

    #[test]
    fn number_formatting() {
        assert_eq!(sig4(4.936_42), "4.936");
        assert_eq!(sig4(33.133), "33.13");
        assert_eq!(sig4(0.016_29), "0.01629");
        assert_eq!(sig4(1234.5), "1234");
        assert_eq!(si(16.537e9, "B"), "16.54 GB");
        assert_eq!(si(3.35e12, "B/s"), "3.350 TB/s");
        assert_eq!(si(512.0, "B"), "512.0 B");
        assert_eq!(grouped(8_030_261_248.0), "8,030,261,248");
        assert_eq!(grouped(999.0), "999");
    }
}
