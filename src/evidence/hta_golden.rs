//! Tests against `HolisticTraceAnalysis` 0.5.0's golden outputs on its own test traces
//! (`tests/fixtures/torch_traces_hta/`, MIT, see its README). Reads fixture files.

#![expect(clippy::disallowed_methods, reason = "tests read HTA's golden outputs")]

use std::path::{Path, PathBuf};

use super::hta::{CONSECUTIVE_KERNEL_DELAY, Frame, IdleCategory};
use super::model::Trace;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/torch_traces_hta")
        .join(name)
}

fn load(name: &str) -> Trace {
    super::source::load(&fixture(name))
        .expect("fixture loads")
        .1
}

fn golden() -> serde_json::Value {
    let text = std::fs::read_to_string(fixture("HTA-0.5.0_temporal_and_kernel_type.json"))
        .expect("golden");
    serde_json::from_str(&text).expect("golden json")
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// Temporal and kernel-type breakdowns equal HTA's for every trace in the golden JSON: times to
/// the microsecond (HTA's rounded timestamps reproduced), percentages to HTA's own rounding.
#[test]
fn temporal_and_kernel_type_equal_hta() {
    let golden = golden();
    let files = golden.as_object().expect("object");
    assert_eq!(files.len(), 5);
    for (file, want) in files {
        let trace = load(file);
        let frame = Frame::new(&trace);
        let t = frame.temporal();
        let w = &want["temporal"][0];
        let got = [
            ("idle_time(us)", t.idle_us),
            ("compute_time(us)", t.compute_us),
            ("non_compute_time(us)", t.non_compute_us),
            ("kernel_time(us)", t.kernel_time_us),
            ("idle_time_pctg", t.idle_pct),
            ("compute_time_pctg", t.compute_pct),
            ("non_compute_time_pctg", t.non_compute_pct),
        ];
        for (key, value) in got {
            let expected = w[key].as_f64().expect("number");
            assert!(
                close(value, expected, 1e-6),
                "{file}: {key} = {value}, HTA {expected}"
            );
        }
        let kinds = frame.kernel_types();
        let want_kinds = want["kernel_type"].as_array().expect("array");
        assert_eq!(kinds.len(), want_kinds.len(), "{file}: {kinds:?}");
        for w in want_kinds {
            let label = w["kernel_type"].as_str().expect("label");
            let row = kinds
                .iter()
                .find(|r| r.kernel_type == label)
                .unwrap_or_else(|| panic!("{file}: no {label}"));
            let sum = w["sum"].as_f64().expect("sum");
            let pct = w["percentage"].as_f64().expect("pct");
            assert!(
                close(row.sum_us, sum, 1e-6),
                "{file}: {label} sum {} vs HTA {sum}",
                row.sum_us
            );
            assert!(
                close(row.percentage, pct, 1e-9),
                "{file}: {label} {}% vs HTA {pct}%",
                row.percentage
            );
        }
    }
}

/// The idle-time breakdown equals HTA's (rank 0 traces; the control trace is rank 3, which HTA's
/// default rank 0 call could not analyse).
#[test]
fn idle_time_breakdown_equals_hta() {
    use IdleCategory::{HostWait as H, KernelWait as K, Other as O};
    type Row = (i64, IdleCategory, f64, Option<f64>);
    let cases: [(&str, &[Row]); 4] = [
        (
            "critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz",
            &[
                (7, H, 15_976_739.0, Some(1.0)),
                (7, K, 91.0, Some(0.0)),
                (7, O, 0.0, Some(0.0)),
                (20, H, 13_582_776.0, Some(1.0)),
                (20, K, 8.0, Some(0.0)),
                (20, O, 0.0, Some(0.0)),
            ],
        ),
        (
            "trace_filter__sampled_rank-0.json.gz",
            &[
                (23, H, 596_037.0, Some(1.0)),
                (23, K, 70.0, Some(0.0)),
                (23, O, 34.0, Some(0.0)),
                (84, H, 148_934.0, Some(1.0)),
                (84, K, 6.0, Some(0.0)),
                (84, O, 0.0, Some(0.0)),
                (25, K, 9.0, Some(0.0)),
                (25, O, 47_865.0, Some(1.0)),
                (7, H, 213_825.0, Some(0.45)),
                (7, K, 1985.0, Some(0.0)),
                (7, O, 261_740.0, Some(0.55)),
                (203, O, 0.0, None),
            ],
        ),
        (
            "with_gpu_user_annotation__step_based_trace_2543932.json.gz",
            &[(7, H, 7446.0, Some(1.0)), (7, O, 0.0, Some(0.0))],
        ),
        (
            "triton_example__triton_example.json.gz",
            &[(7, O, 0.0, None)],
        ),
    ];
    for (file, want) in cases {
        let trace = load(file);
        let got = Frame::new(&trace).idle(CONSECUTIVE_KERNEL_DELAY);
        let got: Vec<_> = got
            .iter()
            .map(|r| (r.stream, r.category, r.idle_us, r.ratio))
            .collect();
        let mut want = want.to_vec();
        let mut got_sorted = got.clone();
        want.sort_by_key(|w| (w.0, w.1));
        got_sorted.sort_by_key(|g| (g.0, g.1));
        assert_eq!(got_sorted, want, "{file}");
    }
}

/// `TraceDiff.compare_traces` with short names on `trace_compare` base/test: every op unchanged.
#[test]
fn ops_diff_of_identical_steps_is_all_unchanged() {
    let base = load("trace_compare__base__base.json.gz");
    let test = load("trace_compare__test__test.json.gz");
    let a = Frame::new(&base).ops_summary(None, true);
    let b = Frame::new(&test).ops_summary(None, true);
    let want: [(&str, u64, f64); 7] = [
        ("ProfilerStep#1009", 1, 100_298.0),
        ("at::native::vectorized_elementwise_kernel", 1, 4.0),
        ("aten::as_strided", 1, 0.0),
        ("aten::empty", 1, 2.0),
        ("cudaEventQuery", 1, 10.0),
        ("cudaLaunchKernel", 1, 4.0),
        ("nccl:all_reduce", 1, 66.0),
    ];
    assert_eq!(a.len(), want.len(), "{a:?}");
    for (name, count, total) in want {
        assert_eq!(a.get(name), Some(&(count, total)), "base {name}");
        assert_eq!(b.get(name), Some(&(count, total)), "test {name}");
    }
}

/// `compare_traces` on `trace_diff` control (rank 3) vs test (rank 1), short names, first iteration:
/// HTA's top 15 rows by `|diff_duration|`.
#[test]
fn ops_diff_of_trace_diff_equals_hta_top_rows() {
    let control = load("trace_diff__control__control.json.gz");
    let test = load("trace_diff__test__test.json.gz");
    let c = Frame::new(&control);
    let t = Frame::new(&test);
    assert_eq!(c.iterations(), vec![1009, 1010, 1011, 1012, 1013]);
    assert_eq!(t.iterations(), vec![1009, 1010, 1011, 1012, 1013]);
    let a = c.ops_summary(None, true);
    let b = t.ops_summary(None, true);
    let want: [(&str, u64, f64, u64, f64); 15] = [
        ("cudaMemcpyAsync", 38, 10190.0, 802, 40994.0),
        ("aten::_local_scalar_dense", 5, 4819.0, 5, 32448.0),
        ("aten::item", 5, 4826.0, 5, 32455.0),
        ("## sparse_data_dist ##", 1, 10246.0, 1, 36898.0),
        ("ProfilerStep#1009", 1, 75473.0, 1, 100_298.0),
        ("Memcpy DtoD (Device -> Device)", 3, 455.0, 768, 15355.0),
        ("## all2all_tw_data:init ##", 1, 8230.0, 1, 21729.0),
        ("CompiledFunction", 0, 0.0, 1, 11168.0),
        (
            "autograd::engine::evaluate_function: CompiledFunctionBackward",
            0,
            0.0,
            1,
            11080.0,
        ),
        ("CompiledFunctionBackward", 0, 0.0, 1, 10952.0),
        ("cutlass::Kernel", 273, 10788.0, 0, 0.0),
        (
            "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t",
            7,
            12817.0,
            7,
            23126.0,
        ),
        (
            "ncclKernel_AllReduce_RING_LL_Sum_float",
            3,
            3439.0,
            3,
            13269.0,
        ),
        ("fbgemm::permute_sparse_features", 3, 550.0, 3, 10099.0),
        ("## permute_id_list_features ##", 1, 315.0, 1, 9852.0),
    ];
    for (name, cc, cd, tc, td) in want {
        let got_c = a.get(name).copied().unwrap_or((0, 0.0));
        let got_t = b.get(name).copied().unwrap_or((0, 0.0));
        assert_eq!(got_c, (cc, cd), "control {name}");
        assert_eq!(got_t, (tc, td), "test {name}");
    }
    // And these are the 15 largest changes, in HTA's order.
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut diffs: Vec<(f64, &String)> = names
        .into_iter()
        .map(|n| {
            (
                b.get(n).map_or(0.0, |x| x.1) - a.get(n).map_or(0.0, |x| x.1),
                n,
            )
        })
        .collect();
    diffs.sort_by(|x, y| y.0.abs().total_cmp(&x.0.abs()));
    let top: Vec<&str> = diffs.iter().take(15).map(|d| d.1.as_str()).collect();
    let want_names: Vec<&str> = want.iter().map(|w| w.0).collect();
    assert_eq!(top, want_names);
}
