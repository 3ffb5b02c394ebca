//! Trace-analysis benchmark: writes a Kineto-format trace of a decode loop (ProfilerStep#N
//! annotations, `cpu_op`, `cudaLaunchKernel` with correlations, kernels on a stream, flow events),
//! then analyses it the way `utilgate run` and `utilgate trace show` do (`analyse_file`: two
//! streaming passes) and prints MB/s, events/s, what the analysis held at most and the process's
//! peak resident memory. Writes a temporary file; prints on stdout.
//!
//! `cargo bench --bench trace` writes 1,000,000+ events. `cargo bench --bench trace -- EVENTS`
//! changes the size; `UTILGATE_BENCH_TRACE=PATH` keeps the generated file there (to run
//! `scripts/bench-hta.py` on the same trace). `-- EVENTS --hta` then also loads the whole trace
//! and prints the HTA-equivalent breakdowns (`evidence::hta`) to compare with HTA's, timed
//! separately and after the streaming figures (it holds the trace, so its memory is not bounded).
#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark reads its settings from the environment"
)]
#![expect(clippy::print_stdout, reason = "a benchmark prints its results")]
#![expect(clippy::cast_precision_loss, reason = "benchmark arithmetic on counts")]

use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use utilgate::evidence::hta::{CONSECUTIVE_KERNEL_DELAY, Frame};
use utilgate::evidence::{Options, analyse_file};

const KERNELS: [(&str, u64); 6] = [
    (
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
        3,
    ),
    (
        "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn",
        40,
    ),
    (
        "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(Flash_fwd_params)",
        25,
    ),
    (
        "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)",
        4,
    ),
    (
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*, float const*, int)",
        6,
    ),
    ("Memcpy DtoD (Device -> Device)", 2),
];

/// Kernels (each with its `cpu_op`, launch and flow event) per step.
const KERNELS_PER_STEP: u64 = 200;

/// Writes `events` (rounded up to whole steps) and returns the number written.
fn write_trace(path: &PathBuf, events: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    write!(
        w,
        r#"{{"schemaVersion": 1, "distributedInfo": {{"rank": 0}}, "traceEvents": ["#
    )?;
    let per_step = 4 * KERNELS_PER_STEP + 1;
    let steps = events.div_ceil(per_step);
    let mut n = 0u64;
    let mut corr = 1u64;
    let mut first = true;
    let mut sep = |w: &mut BufWriter<std::fs::File>| -> std::io::Result<()> {
        if !first {
            w.write_all(b",\n")?;
        }
        first = false;
        Ok(())
    };
    for step in 0..steps {
        let t0 = 1_700_000_000_000_000 + step * 20_000;
        sep(&mut w)?;
        write!(
            w,
            r#"{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": 100, "tid": 100, "ts": {t0}, "dur": 19000, "args": {{"External id": {step}}}}}"#
        )?;
        n += 1;
        let mut gpu_t = t0 + 50;
        for i in 0..KERNELS_PER_STEP {
            let (name, dur) = KERNELS[(i % 6) as usize];
            let host = t0 + 10 + i * 90;
            let cat = if name.starts_with("Memcpy") {
                "gpu_memcpy"
            } else {
                "kernel"
            };
            sep(&mut w)?;
            write!(
                w,
                r#"{{"ph": "X", "cat": "cpu_op", "name": "aten::op{}", "pid": 100, "tid": 100, "ts": {host}, "dur": 60, "args": {{"External id": {corr}, "Input Dims": [[8, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}}"#,
                i % 6
            )?;
            sep(&mut w)?;
            write!(
                w,
                r#"{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": 100, "ts": {}, "dur": 8, "args": {{"External id": {corr}, "cbid": 211, "correlation": {corr}}}}}"#,
                host + 20
            )?;
            gpu_t = gpu_t.max(host + 30);
            sep(&mut w)?;
            write!(
                w,
                r#"{{"ph": "X", "cat": "{cat}", "name": "{name}", "pid": 0, "tid": 7, "ts": {gpu_t}, "dur": {dur}, "args": {{"External id": {corr}, "device": 0, "stream": 7, "correlation": {corr}, "grid": [128, 1, 1], "block": [256, 1, 1]}}}}"#
            )?;
            sep(&mut w)?;
            write!(
                w,
                r#"{{"ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {gpu_t}, "cat": "ac2g", "name": "ac2g", "bp": "e"}}"#
            )?;
            gpu_t += dur + 1;
            corr += 1;
            n += 4;
        }
    }
    write!(w, "]}}")?;
    w.flush()?;
    Ok(n)
}

/// Peak resident set of this process, from /proc (Linux), in MiB.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let events: u64 = args
        .iter()
        .find_map(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let hta = args.iter().any(|a| a == "--hta");
    let dir = tempfile::tempdir()?;
    let path = std::env::var("UTILGATE_BENCH_TRACE")
        .map_or_else(|_| dir.path().join("bench.pt.trace.json"), PathBuf::from);
    let written = write_trace(&path, events)?;
    let bytes = std::fs::metadata(&path)?.len();
    let rss_before = peak_rss_mib();

    let start = Instant::now();
    let (_, a, stats) = analyse_file(&path, &Options::default()).map_err(std::io::Error::other)?;
    let analyse_s = start.elapsed().as_secs_f64();
    let rss_after = peak_rss_mib();
    let mb = bytes as f64 / 1e6;
    println!(
        "trace: {written} events, {mb:.1} MB, {} steps",
        a.steps_found
    );
    println!(
        "analysis throughput: {:.0} MB/s, {:.2} M events/s ({analyse_s:.2} s, {} passes over the file, window {:?})",
        mb / analyse_s,
        written as f64 / analyse_s / 1e6,
        stats.passes,
        stats.window,
    );
    println!(
        "held at most {} GPU-work and launch records (one step is {} events)",
        stats.retained.high_water,
        4 * KERNELS_PER_STEP + 1
    );
    println!(
        "peak RSS: {:.0} MiB before analysing, {:.0} MiB after (file {mb:.0} MB)",
        rss_before.unwrap_or(f64::NAN),
        rss_after.unwrap_or(f64::NAN)
    );
    println!(
        "per step: {:.1} kernels, GPU busy {:.1} us, idle {:.1}%, host wait {:.1} us",
        a.step.kernels,
        a.step.gpu_busy_us,
        100.0 * a.step.gpu_idle_share,
        a.step.host_wait_us
    );
    if hta {
        let start = Instant::now();
        let (_, trace) = utilgate::evidence::load(&path).map_err(std::io::Error::other)?;
        let frame = Frame::new(&trace);
        let t = frame.temporal();
        let kinds = frame.kernel_types();
        let idle = frame.idle(CONSECUTIVE_KERNEL_DELAY);
        let hta_s = start.elapsed().as_secs_f64();
        println!(
            "HTA-equivalent breakdowns (whole trace in memory): {hta_s:.2} s, {:.0} MB/s, peak RSS {:.0} MiB",
            mb / hta_s,
            peak_rss_mib().unwrap_or(f64::NAN)
        );
        println!(
            "temporal breakdown: idle {:.0} us, compute {:.0} us, non-compute {:.0} us, kernel time {:.0} us ({:.2}% idle, {:.2}% compute, {:.2}% non-compute)",
            t.idle_us,
            t.compute_us,
            t.non_compute_us,
            t.kernel_time_us,
            t.idle_pct,
            t.compute_pct,
            t.non_compute_pct
        );
        for k in kinds {
            println!(
                "kernel type {}: {:.0} us, {:.1}%",
                k.kernel_type, k.sum_us, k.percentage
            );
        }
        for r in idle {
            println!(
                "idle stream {} {}: {:.2} us, ratio {:?}",
                r.stream,
                r.category.label(),
                r.idle_us,
                r.ratio
            );
        }
    }
    Ok(())
}
