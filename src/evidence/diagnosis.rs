//! Diagnosis in words (pure): the method's patterns, each with a documented threshold
//! (docs/traces.md), stated with the numbers that triggered it.

use super::analysis::Analysis;
use super::classify::Category;

/// GPU idle share of the step above which a step may be launch-bound.
pub const LAUNCH_BOUND_IDLE_SHARE: f64 = 0.30;
/// Mean kernel duration (µs) below which kernels count as short.
pub const SHORT_KERNEL_US: f64 = 20.0;
/// Host wait as a share of the idle split above which the CPU is the bottleneck.
pub const HOST_WAIT_SHARE: f64 = 0.5;
/// Host-device syncs per step at or above which synchronisation is reported.
pub const SYNCS_PER_STEP: f64 = 1.0;
/// Pageable host-to-device copies per step at or above which copies are reported.
pub const PAGEABLE_COPIES_PER_STEP: f64 = 1.0;
/// Share of GPU time in copies and memsets above which copies are reported.
pub const COPY_SHARE: f64 = 0.10;
/// GPU idle share below which kernels run back to back.
pub const BACK_TO_BACK_IDLE_SHARE: f64 = 0.10;
/// MBU from the floor at or above which a back-to-back step is memory-bandwidth-bound.
pub const MEMORY_BOUND_MBU: f64 = 0.60;
/// Share of GPU time in communication kernels above which communication is reported.
pub const COMMUNICATION_SHARE: f64 = 0.15;
/// Growth of attention time per step, smallest to largest context, reported above this factor.
pub const ATTENTION_GROWTH: f64 = 1.5;

fn share(a: &Analysis, cat: Category) -> f64 {
    let total: f64 = a.categories.values().sum();
    if total > 0.0 {
        a.categories.get(&cat).copied().unwrap_or(0.0) / total
    } else {
        0.0
    }
}

/// Sentences for one analysis. `mbu` is the case's MBU from the floor (0..1), when known.
#[must_use]
pub fn diagnose(a: &Analysis, mbu: Option<f64>) -> Vec<String> {
    let mut out = Vec::new();
    let s = &a.step;
    if !a.has_gpu {
        out.push(host_only(a));
        return out;
    }
    let kernel_us: f64 = a.kernels.iter().map(|k| k.total_us).sum();
    let mean_kernel = if s.kernels > 0.0 {
        kernel_us / s.kernels.max(1.0)
    } else {
        0.0
    };
    let split = s.host_wait_us + s.kernel_wait_us + s.other_idle_us;
    let host_share = if split > 0.0 {
        s.host_wait_us / split
    } else {
        0.0
    };
    if s.gpu_idle_share >= LAUNCH_BOUND_IDLE_SHARE
        && mean_kernel < SHORT_KERNEL_US
        && host_share >= HOST_WAIT_SHARE
    {
        let graphs = if s.graph_launches > 0.0 {
            format!(
                "; {:.0} of {:.0} launches per step are already graph launches",
                s.graph_launches, s.launches
            )
        } else {
            String::new()
        };
        out.push(format!(
            "launch-bound: GPU idle {:.0}% of the step while the host launches {:.0} kernels averaging {:.1} µs (host wait {:.0}% of idle){graphs}: use CUDA graphs or torch.compile(mode='reduce-overhead')",
            100.0 * s.gpu_idle_share,
            s.kernels,
            mean_kernel,
            100.0 * host_share
        ));
    }
    if s.syncs >= SYNCS_PER_STEP {
        out.push(format!(
            "synchronisation: {:.1} host sync calls per step ({}): keep values on the device (no .item()/.cpu() inside the step)",
            s.syncs,
            s.sync_kinds()
        ));
    }
    let copy_share = share(a, Category::Memory);
    if s.pageable_htod_copies >= PAGEABLE_COPIES_PER_STEP || copy_share > COPY_SHARE {
        out.push(format!(
            "copies: {:.1} pageable host-to-device copies per step, copies and memsets {:.0}% of GPU time: pin host memory or keep the tensors on the device",
            s.pageable_htod_copies,
            100.0 * copy_share
        ));
    }
    if let Some(mbu) = mbu
        && s.gpu_idle_share < BACK_TO_BACK_IDLE_SHARE
        && mbu >= MEMORY_BOUND_MBU
    {
        out.push(format!(
            "memory-bandwidth-bound: kernels run back to back (GPU idle {:.0}%) at {:.0}% MBU from the floor: read fewer bytes: quantise or batch",
            100.0 * s.gpu_idle_share,
            100.0 * mbu
        ));
    }
    let comm = share(a, Category::Communication);
    if comm > COMMUNICATION_SHARE {
        out.push(format!(
            "communication: collectives take {:.0}% of GPU time: check overlap with compute and the interconnect",
            100.0 * comm
        ));
    }
    out
}

/// The sentence for a trace without GPU work: the operator that spends the most of the step in
/// its own code (its self time), never an operator's inclusive time, which restates the step.
fn host_only(a: &Analysis) -> String {
    let all = a.operators_self_us().unwrap_or(0.0);
    if let Some(op) = a.operators.first()
        && let Some(own) = op.self_us
        && all > 0.0
    {
        return format!(
            "no GPU activity recorded: the step ({:.1} µs) is host time; by self time (an operator's own code, without the operators inside it) {} leads with {:.1} µs per step, {:.0}% of all host operators' self time",
            a.step.wall_us,
            op.name,
            own,
            100.0 * own / all
        );
    }
    format!(
        "no GPU activity recorded: the step ({:.1} µs) is host time",
        a.step.wall_us
    )
}

/// Attention time per step across a suite's contexts: a sentence when it grows by more than
/// [`ATTENTION_GROWTH`] from the smallest to the largest context. `points` are (context, analysis).
#[must_use]
pub fn attention_growth(points: &[(u64, &Analysis)]) -> Option<String> {
    let mut pts: Vec<(u64, f64)> = points
        .iter()
        .map(|(c, a)| {
            (
                *c,
                a.categories
                    .get(&Category::Attention)
                    .copied()
                    .unwrap_or(0.0),
            )
        })
        .collect();
    pts.sort_by_key(|p| p.0);
    let (first, last) = (pts.first()?, pts.last()?);
    if first.0 == last.0 || first.1 <= 0.0 {
        return None;
    }
    let factor = last.1 / first.1;
    (factor > ATTENTION_GROWTH).then(|| {
        format!(
            "attention grows with context: {:.1} µs per step at context {} -> {:.1} µs at {} (x{:.1})",
            first.1, first.0, last.1, last.0, factor
        )
    })
}
