//! Store tests of cases with free axes (`axes = { mode = [...] }`), on both backends: cases that
//! differ only by an axis value are rows of their own, with their own history and baselines.

use super::*;
use crate::case::Axes;

on_both_backends!(cases_differing_only_by_an_axis_keep_their_own_history_and_baselines);

fn with_mode(mode: &str) -> CaseKey {
    let mut k = key("decode", 1);
    k.axes = Axes::new([("mode", mode)]).expect("valid");
    k
}

fn cases_differing_only_by_an_axis_keep_their_own_history_and_baselines(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let plain = key("decode", 1);
    for (second, factor) in [(0, 1.0), (100, 1.1)] {
        store
            .insert_run(&run(
                "main",
                second,
                vec![
                    result(plain.clone(), 6.0 * factor, second == 0),
                    result(with_mode("eager"), 9.0 * factor, second == 0),
                    result(with_mode("graphs"), 7.0 * factor, second == 0),
                ],
            ))
            .expect("inserts");
    }
    for (k, median) in [
        (&plain, 6.0),
        (&with_mode("eager"), 9.0),
        (&with_mode("graphs"), 7.0),
    ] {
        let base = store
            .baseline_for(k, "h100-sxm")
            .expect("reads")
            .expect("a baseline");
        assert_eq!(&base.key, k);
        assert!(
            (base.median_ms.expect("median") - median).abs() < 1e-9,
            "{k}"
        );
        let history = store.case_history(k, "h100-sxm", 10).expect("history");
        assert_eq!(history.len(), 2, "{k}");
        assert!(history.iter().all(|r| &r.key == k));
    }
    let keys: Vec<String> = store
        .series()
        .expect("series")
        .into_iter()
        .map(|(k, _)| k.to_string())
        .collect();
    assert_eq!(
        keys,
        [
            "decode/llama-3.1-8b/bf16/decode/b1/c4096",
            "decode/llama-3.1-8b/bf16/decode/b1/c4096/mode=eager",
            "decode/llama-3.1-8b/bf16/decode/b1/c4096/mode=graphs",
        ]
    );
    let listed: Vec<CaseKey> = store
        .baselines(None)
        .expect("baselines")
        .into_iter()
        .map(|e| e.key)
        .collect();
    assert_eq!(listed, [plain, with_mode("eager"), with_mode("graphs")]);
}
