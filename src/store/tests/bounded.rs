//! Store tests of the reads bounded in SQL by what they show (#29 item 2), on both backends: one
//! baseline move as of a time, where a lineage began, a case's nights on one branch and its
//! trend up to one run, none of them crowded out by other branches' results.

use super::*;

on_both_backends!(
    the_baseline_as_of_a_time_and_where_its_lineage_began,
    nights_and_trends_are_the_branchs_whatever_else_is_stored,
    every_baseline_as_of_a_time_is_each_cases_own,
    a_cases_recent_moves_are_the_newest_of_its_history_with_their_count,
);

fn the_baseline_as_of_a_time_and_where_its_lineage_began(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let k = key("decode", 1);
    let mut results = Vec::new();
    for second in [0, 100, 200] {
        let id = store
            .insert_run(&run("main", second, vec![result(k.clone(), 6.0, true)]))
            .expect("inserts");
        results.push(store.run(id).expect("reads").expect("exists").results[0].id);
    }
    let moved = |store: &Store, before: Option<Timestamp>| {
        store
            .baseline_move(&k, "h100-sxm", before)
            .expect("reads")
            .map(|e| e.result_id)
    };
    let began = |store: &Store, before: Option<Timestamp>| {
        store
            .lineage_start(&k, "h100-sxm", before)
            .expect("reads")
            .map(|e| (e.result_id, e.kind))
    };
    // Each run's promotion lands when it finishes (60 s after it starts).
    assert_eq!(moved(&store, None), Some(results[2]));
    assert_eq!(moved(&store, Some(at(170))), Some(results[1]));
    assert_eq!(moved(&store, Some(at(150))), Some(results[0]));
    assert_eq!(
        moved(&store, Some(at(60))),
        None,
        "nothing had moved before the first finished"
    );
    assert_eq!(
        began(&store, None),
        Some((results[0], BaselineMoveKind::Promote)),
        "promotions only: the lineage began with the first"
    );
    store
        .move_baselines(&[BaselineMove {
            result_id: results[1],
            kind: BaselineMoveKind::Accept,
            reason: "accepted in #7".into(),
            moved_at: at(500),
        }])
        .expect("moves");
    let id = store
        .insert_run(&run("main", 600, vec![result(k.clone(), 6.1, true)]))
        .expect("inserts");
    let newest = store.run(id).expect("reads").expect("exists").results[0].id;
    assert_eq!(moved(&store, None), Some(newest));
    assert_eq!(
        began(&store, None),
        Some((results[1], BaselineMoveKind::Accept))
    );
    assert_eq!(
        began(&store, Some(at(400))),
        Some((results[0], BaselineMoveKind::Promote)),
        "as of before the accept, the lineage began with the first"
    );
    assert_eq!(
        moved(&store, Some(at(600))),
        Some(results[1]),
        "the accept, as of then"
    );
    assert_eq!(
        store
            .baseline_move(&key("decode", 2), "h100-sxm", None)
            .expect("reads"),
        None
    );
}

fn nights_and_trends_are_the_branchs_whatever_else_is_stored(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let k = key("decode", 1);
    let mut ids = Vec::new();
    for night in 0..4 {
        ids.push(
            store
                .insert_run(&run(
                    "main",
                    night * 100,
                    vec![result(k.clone(), 6.0 + 0.1 * night as f64, true)],
                ))
                .expect("inserts"),
        );
    }
    // A night that failed is no night of history.
    let mut failed = result(k.clone(), 6.0, false);
    (failed.verdict, failed.utilisation, failed.median_ms) = (Some(Verdict::Error), None, None);
    store
        .insert_run(&run("main", 450, vec![failed]))
        .expect("inserts");
    for pr in 0..10 {
        store
            .insert_run(&run("pr-7", 500 + pr, vec![result(k.clone(), 9.0, false)]))
            .expect("inserts");
    }
    let nights = store.case_nights(&k, "h100-sxm", "main", 3).expect("reads");
    let runs: Vec<RunId> = nights.iter().map(|n| n.run_id).collect();
    assert_eq!(runs, [ids[3], ids[2], ids[1]], "newest first, main only");
    assert_eq!(nights[0].median_ms, Some(6.0 + 0.1 * 3.0));
    assert_eq!(nights[0].env["torch"], "2.5.1");
    assert_eq!(
        nights[0].gpu_state_json,
        Some(json!({"sm_clock_mhz": 1980}))
    );

    let trend = |run: RunId, started: i64, branch: Option<&str>, limit| -> Vec<RunId> {
        store
            .case_trend(&k, "h100-sxm", (run, Some(at(started))), branch, limit)
            .expect("reads")
            .iter()
            .map(|r| r.run_id)
            .collect()
    };
    assert_eq!(
        trend(ids[2], 200, Some("main"), 10),
        [ids[2], ids[1], ids[0]],
        "an old run's trend: itself and the nights before it"
    );
    assert_eq!(trend(ids[3], 300, Some("main"), 2), [ids[3], ids[2]]);
    let last_pr = RunId(ids[3].0 + 11);
    assert_eq!(
        trend(last_pr, 509, Some("main"), 3),
        [last_pr, ids[3], ids[2]],
        "a pull request's run and the nightlies before it"
    );
    assert_eq!(trend(last_pr, 509, None, 2).len(), 2, "any branch");
}

fn every_baseline_as_of_a_time_is_each_cases_own(b: Backend) {
    // Three cases whose baselines move at different nights (one promotion missed, one
    // accept, one case added late), a pull request's run that promotes nothing, and another
    // GPU: the whole run's pointers as of each time are each case's own, one query for all.
    let (_dir, _path, mut store) = temp_store(b);
    let keys = [key("decode", 1), key("decode", 2), key("decode", 4)];
    for night in 0..6_i64 {
        let results = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| !(*i == 2 && night < 3))
            .map(|(i, k)| result(k.clone(), 6.0 + 0.1 * night as f64, !(i == 1 && night == 4)))
            .collect();
        store
            .insert_run(&run("main", night * 100, results))
            .expect("inserts");
        if night == 2 {
            let id = store
                .insert_run(&run(
                    "pr-9",
                    night * 100 + 10,
                    vec![result(keys[0].clone(), 9.0, false)],
                ))
                .expect("inserts");
            let pr_result = store.run(id).expect("reads").expect("exists").results[0].id;
            store
                .move_baselines(&[BaselineMove {
                    result_id: pr_result,
                    kind: BaselineMoveKind::Accept,
                    reason: "accepted in #9".into(),
                    moved_at: at(night * 100 + 80),
                }])
                .expect("moves");
        }
    }
    let mut other = run("main", 50, vec![result(keys[0].clone(), 5.0, true)]);
    other.gpu_sku = "a100-80gb".into();
    store.insert_run(&other).expect("inserts");
    for t in (0..=700).step_by(25) {
        let all = store.baselines_as_of("h100-sxm", at(t)).expect("reads");
        let mut one_by_one = Vec::new();
        for k in &keys {
            if let Some(m) = store
                .baseline_move(k, "h100-sxm", Some(at(t)))
                .expect("reads")
            {
                one_by_one.push((k.clone(), m.result_id, m.kind));
            }
        }
        let mut together: Vec<_> = all
            .into_iter()
            .map(|e| {
                assert_eq!(e.gpu_sku, "h100-sxm");
                (e.key, e.result_id, e.kind)
            })
            .collect();
        together.sort_by(|a, b| a.0.cmp(&b.0));
        one_by_one.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(together, one_by_one, "as of second {t}");
    }
    assert_eq!(
        store
            .baselines_as_of("h100-sxm", at(700))
            .expect("reads")
            .len(),
        3
    );
    assert!(
        store
            .baselines_as_of("h100-sxm", at(30))
            .expect("reads")
            .is_empty()
    );
}

fn a_cases_recent_moves_are_the_newest_of_its_history_with_their_count(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let (k, other) = (key("decode", 1), key("decode", 2));
    for night in 0..25 {
        store
            .insert_run(&run(
                "main",
                night * 100,
                vec![
                    result(k.clone(), 6.0, true),
                    result(other.clone(), 6.0, night % 2 == 0),
                ],
            ))
            .expect("inserts");
    }
    let all = store
        .baseline_history(&CaseFilter::Key(k.clone()), Some("h100-sxm"))
        .expect("reads");
    assert_eq!(all.len(), 25);
    let (recent, total) = store
        .recent_baseline_moves(&k, "h100-sxm", 20)
        .expect("reads");
    assert_eq!(total, 25);
    assert_eq!(recent, all[..20], "the newest 20, newest first");
    let (recent, total) = store
        .recent_baseline_moves(&other, "h100-sxm", 20)
        .expect("reads");
    assert_eq!((recent.len(), total), (13, 13), "the other case's own");
    assert_eq!(
        store
            .recent_baseline_moves(&k, "a100-80gb", 20)
            .expect("reads"),
        (Vec::new(), 0)
    );
}
