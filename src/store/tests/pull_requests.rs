//! Store tests of #28 item 3, on both backends: a run measured for a pull request (its number,
//! or a `pull_request*` trigger) never enters a branch's reference, nights, trend, site points
//! or the budget's history, and a promotion onto it never counts as a baseline, even when its
//! branch is the baseline branch's name (a fork's `main`) and its store promoted it.

use super::*;

on_both_backends!(a_pull_requests_run_named_main_is_in_no_history_of_main,);

fn a_pull_requests_run_named_main_is_in_no_history_of_main(b: Backend) {
    let (_dir, _path, mut store) = temp_store(b);
    let k = key("decode", 1);
    let mut main = Vec::new();
    for night in 0..3 {
        main.push(
            store
                .insert_run(&run(
                    "main",
                    night * 100,
                    vec![result(k.clone(), 6.0, true)],
                ))
                .expect("inserts"),
        );
    }
    // A fork's branch `main`, its check promoted in its own store, then copied in; and a run
    // that only carries a pull request's number (`--pr 9` with `--trigger nightly`).
    let mut fork = run("main", 300, vec![result(k.clone(), 4.0, true)]);
    (fork.trigger, fork.pr_number) = (Some("pull_request".into()), Some(7));
    let fork = store.insert_run(&fork).expect("inserts");
    let mut numbered = run("main", 400, vec![result(k.clone(), 4.0, true)]);
    numbered.pr_number = Some(9);
    let numbered = store.insert_run(&numbered).expect("inserts");
    let mut target = run("main", 500, vec![result(k.clone(), 4.0, true)]);
    target.trigger = Some("pull_request_target".into());
    let target = store.insert_run(&target).expect("inserts");
    let pr_runs = [fork, numbered, target];
    let none_of_them = |runs: &[RunId], what: &str| {
        assert!(
            runs.iter().all(|r| !pr_runs.contains(r)),
            "{what} holds a pull request's run: {runs:?}"
        );
    };

    let window = BranchWindow {
        branch: "main",
        from: at(0),
        before: None,
    };
    let pooled = store
        .branch_history(&k, "h100-sxm", &window, Take::Newest(10))
        .expect("reads");
    let runs: Vec<RunId> = pooled.iter().map(|r| r.run_id).collect();
    assert_eq!(runs, [main[2], main[1], main[0]], "the reference's window");
    let budget: Vec<RunId> = store
        .case_history(&k, "h100-sxm", 10)
        .expect("reads")
        .iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(budget.len(), 3, "{budget:?}");
    none_of_them(&budget, "the budget's history");
    let nights: Vec<RunId> = store
        .case_nights(&k, "h100-sxm", "main", 10)
        .expect("reads")
        .iter()
        .map(|n| n.run_id)
        .collect();
    assert_eq!(nights, [main[2], main[1], main[0]], "history and changes");
    let site: Vec<RunId> = store
        .site_points(&k, "h100-sxm", "main", None, None)
        .expect("reads")
        .iter()
        .map(|p| p.run_id)
        .collect();
    assert_eq!(site, [main[0], main[1], main[2]], "the site");
    // A pull request's own report still shows its run, over main's nights.
    let trend: Vec<RunId> = store
        .case_trend(&k, "h100-sxm", (fork, Some(at(300))), Some("main"), 10)
        .expect("reads")
        .iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(trend, [fork, main[2], main[1], main[0]]);
    let later = store
        .insert_run(&run("main", 600, vec![result(k.clone(), 6.0, false)]))
        .expect("inserts");
    let trend: Vec<RunId> = store
        .case_trend(&k, "h100-sxm", (later, Some(at(600))), Some("main"), 10)
        .expect("reads")
        .iter()
        .map(|r| r.run_id)
        .collect();
    assert_eq!(trend, [later, main[2], main[1], main[0]], "main's trend");

    // The baseline is main's third night in every reading of it.
    let main_baseline = store.run(main[2]).expect("reads").expect("exists").results[0].id;
    let current = store.baseline_for(&k, "h100-sxm").expect("reads");
    assert_eq!(current.map(|r| r.id), Some(main_baseline));
    let listed = store.baselines(None).expect("lists");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].result_id, main_baseline);
    let moved = store.baseline_move(&k, "h100-sxm", None).expect("reads");
    assert_eq!(moved.map(|e| e.result_id), Some(main_baseline));
    // A person may still accept a pull request's result, with a reason.
    let fork_result = store.run(fork).expect("reads").expect("exists").results[0].id;
    store
        .move_baselines(&[BaselineMove {
            result_id: fork_result,
            kind: BaselineMoveKind::Accept,
            reason: "measured on the release candidate in #7".into(),
            moved_at: at(700),
        }])
        .expect("moves");
    let current = store.baseline_for(&k, "h100-sxm").expect("reads");
    assert_eq!(current.map(|r| r.id), Some(fork_result));
}
