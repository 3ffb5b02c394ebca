//! Per-step analysis, diagnosis and diff on real traces from other sources than the HTA goldens
//! (`tests/fixtures/pytorch_profiler_gpu/`, `tests/fixtures/torch_traces_hta/`) and on small
//! hand-written traces. Reads fixture files.

#![expect(clippy::disallowed_methods, reason = "tests read their fixtures")]

use std::path::Path;

use super::analysis::{Options, analyse};
use super::classify::Category;
use super::diagnosis::{attention_growth, diagnose};
use super::diff::diff;
use super::kineto;

fn load(dir: &str, name: &str) -> super::model::Trace {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(dir)
        .join(name);
    super::source::load(&p).expect("fixture loads").1
}

#[test]
fn llm_inference_traces_from_three_gpus_analyse() {
    for (file, min_kernels) in [
        ("TraceLens__b200__eager_trace.json.gz", 700.0),
        (
            "TraceLens__h100__Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
            1000.0,
        ),
        (
            "TraceLens__inference__sglang_decode__sglang_Qwen3-8B_decode.json.gz",
            500.0,
        ),
    ] {
        let trace = load("pytorch_profiler_gpu", file);
        let a = analyse(&trace, &Options::default());
        assert!(a.has_gpu, "{file}");
        assert!(a.steps_used >= 1, "{file}");
        assert!(
            a.step.kernels >= min_kernels,
            "{file}: {} kernels",
            a.step.kernels
        );
        assert!(
            a.step.gpu_busy_us > 0.0
                && a.step.gpu_busy_us <= a.step.wall_us.max(a.step.gpu_busy_us)
        );
        assert!((0.0..=1.0).contains(&a.step.gpu_idle_share));
        let cat_total: f64 = a.categories.values().sum();
        let kernel_total: f64 = a.kernels.iter().map(|k| k.total_us).sum();
        assert!(
            (cat_total - kernel_total).abs() < 1e-6 * cat_total.max(1.0),
            "{file}"
        );
        assert!(
            a.categories.get(&Category::Gemm).copied().unwrap_or(0.0) > 0.0,
            "{file}: {:?}",
            a.categories
        );
        assert!(a.step.launches > 0.0, "{file}");
    }
}

#[test]
fn the_b200_vllm_step_is_found_by_its_annotation_and_shows_communication() {
    let trace = load(
        "pytorch_profiler_gpu",
        "TraceLens__b200__eager_trace.json.gz",
    );
    let a = analyse(&trace, &Options::default());
    // vLLM's TP=8 all-reduce runs as multimem kernels.
    assert!(
        a.categories
            .get(&Category::Communication)
            .copied()
            .unwrap_or(0.0)
            > 0.0,
        "{:?}",
        a.categories
    );
    assert!(
        a.categories
            .get(&Category::Normalisation)
            .copied()
            .unwrap_or(0.0)
            > 0.0
    );
}

#[test]
fn a_cpu_only_trace_gives_the_operator_breakdown() {
    let trace = load(
        "torch_traces_hta",
        "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    );
    let a = analyse(&trace, &Options::default());
    assert!(!a.has_gpu);
    assert!(!a.operators.is_empty());
    let d = diagnose(&a, None);
    assert_eq!(d.len(), 1, "{d:?}");
    // Two gloo all-reduces overlap on two threads: self times are summed over threads, and
    // the sentence gives the leader's share of them, never more than 100%.
    assert!(
        d[0].starts_with("no GPU activity recorded: the step (210109.2 µs) is host time; by self time (an operator's own code, without the operators inside it) gloo:all_reduce leads with 343681.0 µs per step, 100% of all host operators' self time"),
        "{d:?}"
    );
}

/// A CPU-only decode loop: three steps of 1000 µs on thread 1, in each `aten::linear` (600 µs)
/// holding `aten::matmul` (550 µs) holding `aten::mm` (500 µs), then `aten::relu` (100 µs);
/// on thread 2 `aten::copy_` (300 µs), which nests in nothing of thread 1. `mm_us` sets the
/// innermost GEMM's time (the step and its callers keep theirs).
pub(super) fn cpu_only_trace(mm_us: u32) -> String {
    let mut ev = Vec::new();
    for step in 0..3u32 {
        let t0 = 10_000 + step * 1000;
        let op = |name: &str, tid: u32, ts: u32, dur: u32| {
            format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"{name}","pid":7,"tid":{tid},"ts":{ts},"dur":{dur}}}"#
            )
        };
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":7,"tid":1,"ts":{t0},"dur":1000}}"#));
        ev.push(op("aten::linear", 1, t0 + 10, 600));
        ev.push(op("aten::matmul", 1, t0 + 20, 550));
        ev.push(op("aten::mm", 1, t0 + 30, mm_us));
        ev.push(op("aten::relu", 1, t0 + 700, 100));
        ev.push(op("aten::copy_", 2, t0 + 50, 300));
    }
    format!(r#"{{"traceEvents":[{}]}}"#, ev.join(",\n"))
}

#[test]
fn a_cpu_only_trace_gives_each_operators_self_time_on_its_thread() {
    let a = analyse(
        &kineto::read(cpu_only_trace(500).as_bytes()).expect("valid"),
        &Options::default(),
    );
    assert!(!a.has_gpu);
    assert_eq!(a.steps_used, 2);
    let rows: Vec<(&str, f64, f64, Option<f64>)> = a
        .operators
        .iter()
        .map(|o| (o.name.as_str(), o.count, o.total_us, o.self_us))
        .collect();
    // Most self time first; inclusive times kept beside.
    assert_eq!(
        rows,
        vec![
            ("aten::mm", 1.0, 500.0, Some(500.0)),
            ("aten::copy_", 1.0, 300.0, Some(300.0)),
            ("aten::relu", 1.0, 100.0, Some(100.0)),
            ("aten::linear", 1.0, 600.0, Some(50.0)),
            ("aten::matmul", 1.0, 550.0, Some(50.0)),
        ]
    );
    // Inclusive rows add up to 2050 µs of a 1000 µs step; self times to what the two threads
    // spent in operators (700 + 300 µs).
    let total: f64 = a.operators.iter().map(|o| o.total_us).sum();
    assert!((total - 2050.0).abs() < 1e-9);
    assert_eq!(a.operators_self_us(), Some(1000.0));
    let d = diagnose(&a, None);
    assert_eq!(
        d,
        vec![
            "no GPU activity recorded: the step (1000.0 µs) is host time; by self time (an operator's own code, without the operators inside it) aten::mm leads with 500.0 µs per step, 50% of all host operators' self time"
        ]
    );
}

#[test]
fn a_child_that_outlasts_its_parent_counts_only_inside_it() {
    let text = r#"{"traceEvents":[
        {"ph":"X","cat":"cpu_op","name":"outer","pid":1,"tid":1,"ts":0,"dur":100},
        {"ph":"X","cat":"cpu_op","name":"inner","pid":1,"tid":1,"ts":60,"dur":50},
        {"ph":"X","cat":"cpu_op","name":"other_thread","pid":1,"tid":"two","ts":10,"dur":20}]}"#;
    let a = analyse(
        &kineto::read(text.as_bytes()).expect("valid"),
        &Options::default(),
    );
    let own = |n: &str| {
        a.operators
            .iter()
            .find(|o| o.name == n)
            .and_then(|o| o.self_us)
            .expect(n)
    };
    assert!((own("outer") - 60.0).abs() < 1e-9, "{:?}", a.operators);
    assert!((own("inner") - 50.0).abs() < 1e-9);
    assert!((own("other_thread") - 20.0).abs() < 1e-9);
}

#[test]
fn the_diff_of_cpu_only_traces_compares_self_time_and_shows_no_gpu_figure() {
    let read = |mm| {
        analyse(
            &kineto::read(cpu_only_trace(mm).as_bytes()).expect("valid"),
            &Options::default(),
        )
    };
    let d = diff(&read(500), &read(540));
    assert_eq!((d.has_gpu_then, d.has_gpu_now), (false, false));
    // aten::mm grew by 40 µs of its own; its callers' self time shrank by as much.
    assert_eq!(d.operators[0].name, "aten::matmul");
    let lines = d.lines(5);
    assert_eq!(
        lines,
        vec![
            "aten::matmul -80% (50.0 -> 10.0 self µs per step; 1 -> 1 calls)",
            "aten::mm +8% (500.0 -> 540.0 self µs per step; 1 -> 1 calls)",
            "no GPU activity recorded in either trace",
        ],
        "{:?}",
        d.operators
    );
    assert!(lines.iter().all(|l| !l.contains("GPU idle")));
}

#[test]
fn ids_above_i64_max_and_amd_traces_read() {
    let trace = load(
        "torch_traces_hta",
        "large_integer_trace__rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz",
    );
    assert!(trace.events_seen > 0);
    let trace = load(
        "torch_traces_hta",
        "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    );
    let a = analyse(&trace, &Options::default());
    assert!(a.has_gpu && a.step.kernels > 0.0);
}

/// Two steps of a decode loop: three kernels launched back to back, the attention kernel slower in
/// the second trace, one more copy and a sync.
fn decode_trace(attn_us: u32, extra_sync: bool) -> String {
    let mut ev = Vec::new();
    let mut corr = 1;
    for step in 0..3u32 {
        let t0 = step * 1000;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,"ts":{t0},"dur":900}}"#));
        let mut gpu_t = t0 + 20;
        for (i, (name, dur)) in [
            ("ampere_bf16_gemm_128x64", 200),
            ("flash_fwd_splitkv_kernel<Traits<128>>", attn_us),
            ("rms_norm_kernel", 10),
        ]
        .iter()
        .enumerate()
        {
            let launch = t0 + 5 + 5 * u32::try_from(i).expect("small");
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{launch},"dur":3,"args":{{"correlation":{corr}}}}}"#));
            ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"{name}","pid":0,"tid":7,"ts":{gpu_t},"dur":{dur},"args":{{"stream":7,"correlation":{corr},"device":0}}}}"#));
            gpu_t += dur + 2;
            corr += 1;
        }
        ev.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":{},"dur":4}}"#,
            t0 + 4
        ));
        if extra_sync {
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":{},"dur":50}}"#, t0 + 600));
        }
    }
    format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","))
}

#[test]
fn warm_up_is_dropped_and_the_grown_kernel_leads_the_diff() {
    let then = analyse(
        &kineto::read(decode_trace(40, false).as_bytes()).expect("valid"),
        &Options::default(),
    );
    let now = analyse(
        &kineto::read(decode_trace(57, true).as_bytes()).expect("valid"),
        &Options::default(),
    );
    assert_eq!(then.steps_found, 3);
    assert_eq!(then.steps_used, 2, "the first step is warm-up");
    assert!((then.step.kernels - 3.0).abs() < 1e-9);
    assert!((then.step.launches - 3.0).abs() < 1e-9);
    assert!((then.categories[&Category::Attention] - 40.0).abs() < 1e-9);
    assert!((then.step.gpu_busy_us - 250.0).abs() < 1e-9);
    assert!((now.step.syncs - 1.0).abs() < 1e-9);
    let d = diff(&then, &now);
    assert_eq!(d.kernels.len(), 1, "{:?}", d.kernels);
    assert_eq!(d.kernels[0].name, "flash_fwd_splitkv_kernel");
    let lines = d.lines(5);
    assert!(
        lines[0]
            .starts_with("flash_fwd_splitkv_kernel +42% (40.0 -> 57.0 µs per step; 1 -> 1 calls)"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l == "host sync calls per step 0 -> 1"),
        "{lines:?}"
    );
    assert!(
        diagnose(&now, None)
            .iter()
            .any(|s| s.starts_with("synchronisation: 1.0 host sync calls"))
    );
    assert_eq!(
        attention_growth(&[(4096, &now), (512, &then)]),
        None,
        "x1.4 is under the threshold"
    );
    let long = analyse(
        &kineto::read(decode_trace(90, false).as_bytes()).expect("valid"),
        &Options::default(),
    );
    let growth = attention_growth(&[(4096, &long), (512, &then)]).expect("grows");
    assert_eq!(
        growth,
        "attention grows with context: 40.0 µs per step at context 512 -> 90.0 µs at 4096 (x2.2)"
    );
}

#[test]
fn a_trace_without_steps_is_one_step_and_annotations_count_as_steps() {
    let t = kineto::read(r#"{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":0,"dur":5,"args":{"stream":7}}]}"#.as_bytes()).expect("valid");
    let a = analyse(&t, &Options::default());
    assert_eq!(a.step_source, "whole trace");
    assert_eq!(a.steps_used, 1);
    let t = kineto::read(
        r#"{"traceEvents":[
        {"ph":"X","cat":"user_annotation","name":"decode_step","ts":0,"dur":10},
        {"ph":"X","cat":"user_annotation","name":"decode_step","ts":10,"dur":10}]}"#
            .as_bytes(),
    )
    .expect("valid");
    let a = analyse(&t, &Options::default());
    assert_eq!(a.step_source, "decode_step");
    assert_eq!(a.steps_used, 2, "two steps: nothing dropped as warm-up");
}

/// A decode loop of `steps` steps of 1000 µs, tiling time, with known idle figures. Graphed: the
/// host launches one graph at 600 µs into its step; the graph's ten 94 µs kernels, 2 µs apart,
/// start 5 µs later and run on into the next step, so every step window begins while the GPU
/// still runs the previous step's graph. Per step window exactly 940 µs of kernels run (553 µs
/// of the previous graph, 387 µs of its own): idle 6.0%, of which the host wait between the two
/// graphs is 42 µs and the nine 2 µs gaps 18 µs of kernel wait. Eager: ten launches 96 µs
/// apart, each 90 µs kernel 5 µs after its launch, all inside the step: idle 10.0%, all of it
/// host wait (each launch comes after the previous kernel ended): 46 µs before each step's
/// first kernel and nine 6 µs gaps.
fn decode_loop(steps: u32, graphed: bool) -> String {
    let mut ev = Vec::new();
    let mut corr = 1;
    for step in 0..steps {
        let t0 = step * 1000;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,"ts":{t0},"dur":1000}}"#));
        if graphed {
            ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaGraphLaunch","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{corr}}}}}"#, t0 + 600));
            for j in 0..10 {
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemv_kernel_{j}","pid":0,"tid":7,"ts":{},"dur":94,"args":{{"stream":7,"correlation":{corr},"device":0}}}}"#, t0 + 605 + j * 96));
            }
            corr += 1;
        } else {
            for j in 0..10 {
                let launch = t0 + 10 + j * 96;
                ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":{launch},"dur":3,"args":{{"correlation":{corr}}}}}"#));
                ev.push(format!(r#"{{"ph":"X","cat":"kernel","name":"gemv_kernel_{j}","pid":0,"tid":7,"ts":{},"dur":90,"args":{{"stream":7,"correlation":{corr},"device":0}}}}"#, launch + 5));
                corr += 1;
            }
        }
    }
    format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","))
}

#[test]
fn idle_on_a_graphed_trace_counts_the_previous_graph_as_busy_and_the_diff_runs_forwards() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut analysed = Vec::new();
    for graphed in [true, false] {
        let text = decode_loop(40, graphed);
        let trace = kineto::read(text.as_bytes()).expect("valid");
        let whole = analyse(&trace, &Options::default());
        let path = dir.path().join(format!("graphed-{graphed}.json"));
        std::fs::write(&path, &text).expect("write");
        let (_, streamed, _) =
            super::source::analyse_file(&path, &Options::default()).expect("analyses");
        for a in [&whole, &streamed] {
            let (idle, host, kernel) = if graphed {
                (0.06, 42.0, 18.0)
            } else {
                (0.10, 100.0, 0.0)
            };
            let s = &a.step;
            assert!(
                (s.gpu_idle_share - idle).abs() < 1e-9,
                "graphed {graphed}: {s:?}"
            );
            assert!(
                (s.gpu_busy_us - 1000.0 * (1.0 - idle)).abs() < 1e-6,
                "{s:?}"
            );
            assert!(
                (s.host_wait_us - host).abs() < 1e-9,
                "graphed {graphed}: {s:?}"
            );
            assert!(
                (s.kernel_wait_us - kernel).abs() < 1e-9,
                "graphed {graphed}: {s:?}"
            );
            assert!(s.other_idle_us.abs() < 1e-9, "{s:?}");
        }
        // HTA's temporal breakdown over the whole trace (edges included) agrees to 0.25 points.
        let hta = super::hta::Frame::new(&trace).temporal();
        assert!(
            (hta.idle_pct - 100.0 * whole.step.gpu_idle_share).abs() < 0.25,
            "HTA {}% vs {}",
            hta.idle_pct,
            whole.step.gpu_idle_share
        );
        // And its idle split, per step: the host wait between steps is counted.
        let split = super::hta::Frame::new(&trace).idle(super::hta::CONSECUTIVE_KERNEL_DELAY);
        let host_total: f64 = split
            .iter()
            .filter(|r| r.category == super::hta::IdleCategory::HostWait)
            .map(|r| r.idle_us)
            .sum();
        // HTA drops the last step (partial): 38 gaps between the 39 steps it keeps.
        let gaps = u32::try_from(whole.steps_found - 2).expect("small");
        let per_step = host_total / f64::from(gaps);
        assert!(
            (per_step - whole.step.host_wait_us).abs() < 0.05 * whole.step.host_wait_us,
            "HTA host wait {per_step} µs per step vs {}",
            whole.step.host_wait_us
        );
        analysed.push(whole);
    }
    let d = diff(&analysed[0], &analysed[1]);
    let lines = d.lines(30);
    assert!(
        lines.iter().any(|l| l == "GPU idle 6% -> 10% of the step"),
        "{lines:?}"
    );
}

#[test]
fn an_item_call_is_one_host_sync_and_its_copy_a_dtoh_copy() {
    // `.item()` as torch.profiler records it: an async device-to-host copy, then the stream
    // synchronize the host waits in; two steps, the first warm-up.
    let mut ev = Vec::new();
    for step in 0..3u32 {
        let t0 = step * 1000;
        let corr = step + 1;
        ev.push(format!(r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":1,"tid":1,"ts":{t0},"dur":900}}"#));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":{},"dur":5,"args":{{"correlation":{corr}}}}}"#, t0 + 100));
        ev.push(format!(r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoH (Device -> Pinned)","pid":0,"tid":7,"ts":{},"dur":3,"args":{{"stream":7,"correlation":{corr},"device":0}}}}"#, t0 + 110));
        ev.push(format!(r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":{},"dur":20,"args":{{"correlation":{}}}}}"#, t0 + 106, 100 + corr));
    }
    let text = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
    let a = analyse(
        &kineto::read(text.as_bytes()).expect("valid"),
        &Options::default(),
    );
    assert_eq!(a.steps_used, 2);
    assert!((a.step.syncs - 1.0).abs() < 1e-9, "{:?}", a.step);
    assert!((a.step.dtoh_copies - 1.0).abs() < 1e-9, "{:?}", a.step);
}
