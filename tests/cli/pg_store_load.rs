//! The store under concurrent writers (issue #18): 16 writers at once against one `PostgreSQL`
//! database, and 4 on one `SQLite` file, each storing 50 runs whose results promote baselines
//! of cases they all share. Then: every run is there, each run's baseline moves are one
//! unbroken block (two promotions never interleave) with no move twice, and the final baselines
//! equal a serial replay of the same runs in the order they were stored. Writers are threads,
//! each with its own connection through the library's store API (bounded: a few seconds).
//! The runs/s printed are these machines' figures, quoted in docs/postgres.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::json;
use utilgate::case::{CaseKey, Phase, Verdict};
use utilgate::store::{NewResult, NewRun, RunFilter, Store};

use crate::pg_cluster;

const RUNS_PER_WRITER: u32 = 50;
const TIMEOUT: Duration = Duration::from_secs(120);

fn key(batch: u64) -> CaseKey {
    CaseKey {
        suite: "decode".into(),
        model: "llama-3.1-8b".into(),
        precision: "bf16".into(),
        phase: Phase::Decode,
        batch,
        context: 4096,
        axes: utilgate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

/// Run `i` of writer `w`: three shared cases, each promoted or not by a rule of its own, so
/// that the final pointer of each case depends on the order the runs were stored in.
fn new_run(w: u32, i: u32) -> NewRun {
    let results = [1_u64, 8, 32]
        .iter()
        .map(|&batch| {
            let ms = 6.0 + f64::from(w) / 10.0 + f64::from(i) / 1000.0;
            NewResult {
                key: key(batch),
                verdict: Some(Verdict::Pass),
                error: None,
                floor_ms: Some(4.5),
                floor_json: None,
                median_ms: Some(ms),
                utilisation: Some(4.5 / ms),
                mbu: None,
                mfu: None,
                summary_json: None,
                decision_json: None,
                repeats_ms: vec![vec![ms; 20]; 3],
                warmup_ms: vec![],
                env: BTreeMap::new(),
                gpu_state_json: None,
                stderr_tail: None,
                promote: !(u64::from(w + i) + batch).is_multiple_of(3),
                budget: None,
                costs: Vec::new(),
                quality: std::collections::BTreeMap::new(),
                speculative: None,
                energy: Vec::new(),
            }
        })
        .collect();
    let t = Timestamp::from_second(1_700_000_000 + i64::from(w * 1000 + i)).expect("in range");
    NewRun {
        started_at: t,
        finished_at: t,
        git_sha: Some(format!("w{w}-r{i}")),
        branch: Some("main".into()),
        trigger: Some("schedule".into()),
        pr_number: None,
        gpu_sku: "h100-sxm".into(),
        gpu_json: Some(json!({"writer": w})),
        host: Some(format!("runner-{w}")),
        utilgate_version: "0.1.0".into(),
        config_json: None,
        promote_reason: "passed the gate on main".into(),
        canary_json: None,
        uid: None,
        budget_night: None,
        group: None,
        results,
    }
}

/// `writers` threads storing their runs at once into `location`; the runs per second.
fn store_concurrently(location: &Path, writers: u32) -> f64 {
    // Created (and migrated) once before the race, as the first `utilgate run` would.
    drop(Store::open(location, TIMEOUT).expect("opens"));
    let start = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            s.spawn(move || {
                let mut store = Store::open(location, TIMEOUT).expect("opens");
                for i in 0..RUNS_PER_WRITER {
                    store.insert_run(&new_run(w, i)).expect("stores");
                }
            });
        }
    });
    f64::from(writers * RUNS_PER_WRITER) / start.elapsed().as_secs_f64()
}

/// Each stored run's writer and index, in the order the runs were stored (by id).
fn stored_order(store: &Store) -> Vec<(u32, u32)> {
    let mut runs = store
        .list_runs(&RunFilter {
            limit: 100_000,
            branch: None,
            gpu_sku: None,
        })
        .expect("lists");
    runs.sort_by_key(|r| r.id.0);
    runs.iter()
        .map(|r| {
            let sha = r.git_sha.as_deref().expect("sha");
            let (w, i) = sha
                .strip_prefix('w')
                .and_then(|s| s.split_once("-r"))
                .expect("w-r");
            (w.parse().expect("w"), i.parse().expect("i"))
        })
        .collect()
}

/// The current baseline of each case, as the run (`w`, `i`) it points into.
fn final_baselines(store: &Store) -> BTreeMap<u64, String> {
    store
        .baselines(None)
        .expect("baselines")
        .into_iter()
        .map(|b| {
            let run = store.run(b.run_id).expect("reads").expect("run");
            (b.key.batch, run.summary.git_sha.expect("sha"))
        })
        .collect()
}

/// Every baseline move as (move id, run id) in move order.
fn moves(location: &Path) -> Vec<(i64, i64)> {
    const Q: &str = "SELECT m.id, r.run_id FROM baseline_moves m \
                     JOIN results r ON r.id = m.result_id ORDER BY m.id";
    let text = location.to_string_lossy();
    if text.starts_with("postgres://") {
        let mut c = postgres::Client::connect(&text, postgres::NoTls).expect("connect");
        c.query(Q, &[])
            .expect("moves")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    } else {
        let c = rusqlite::Connection::open(location).expect("open");
        let mut stmt = c.prepare(Q).expect("prepare");
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("moves")
            .collect::<Result<_, _>>()
            .expect("rows")
    }
}

/// The checks of the module's comment; the runs/s of the concurrent writers.
fn check(location: &Path, replay: &Path, writers: u32) -> f64 {
    let rate = store_concurrently(location, writers);
    let store = Store::open_existing_read_only(location, TIMEOUT).expect("opens");
    let order = stored_order(&store);
    let want: BTreeSet<(u32, u32)> = (0..writers)
        .flat_map(|w| (0..RUNS_PER_WRITER).map(move |i| (w, i)))
        .collect();
    let got: BTreeSet<(u32, u32)> = order.iter().copied().collect();
    assert_eq!(order.len(), want.len(), "a run was stored twice or lost");
    assert_eq!(got, want, "0 runs lost");

    // Each run's moves form one block, and a run's moves are as many as it flagged.
    let moves = moves(location);
    let mut seen = BTreeSet::new();
    let mut last = None;
    for &(_, run) in &moves {
        if last != Some(run) {
            assert!(
                seen.insert(run),
                "the moves of run {run} are interleaved with another's"
            );
            last = Some(run);
        }
    }
    let flagged: usize = order
        .iter()
        .map(|&(w, i)| new_run(w, i).results.iter().filter(|r| r.promote).count())
        .sum();
    assert_eq!(
        moves.len(),
        flagged,
        "a baseline move is missing or duplicated"
    );

    // The same runs stored one after another, in the stored order, end at the same baselines.
    let mut serial = Store::open(replay, TIMEOUT).expect("opens");
    for &(w, i) in &order {
        serial.insert_run(&new_run(w, i)).expect("stores");
    }
    assert_eq!(final_baselines(&store), final_baselines(&serial));
    assert_eq!(final_baselines(&store).len(), 3);
    rate
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
#[expect(
    clippy::print_stderr,
    reason = "the measured rate is the test's report"
)]
fn pg_store_load_sixteen_writers_on_one_postgres() {
    let cluster = pg_cluster::shared();
    let location = PathBuf::from(cluster.url(&cluster.new_database()));
    let replay = PathBuf::from(cluster.url(&cluster.new_database()));
    let rate = check(&location, &replay, 16);
    eprintln!("PostgreSQL, 16 writers x {RUNS_PER_WRITER} runs: {rate:.0} runs/s");
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "the measured rate is the test's report"
)]
fn pg_store_load_four_writers_on_one_sqlite_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rate = check(
        &dir.path().join("load.db"),
        &dir.path().join("replay.db"),
        4,
    );
    eprintln!("SQLite, 4 writers x {RUNS_PER_WRITER} runs: {rate:.0} runs/s");
}
