//! `utilgate store copy` through the binary (issue #18): a store of 100 runs touching every table
//! (results with raw samples, promotions and an accept, probes, traces and their index, service
//! results, canaries, run groups) copied `SQLite` -> `PostgreSQL` -> `SQLite`, compared row for row,
//! bit for bit; a rerun copies nothing; a destination with another history is refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;
use sha2::Digest as _;
use utilgate::case::{CaseKey, Phase, Verdict};
use utilgate::compare::budget::{CaseRecord, NightRecord, PlanNote, RepeatCost, Stop};
use utilgate::serve::{SWEPT_RATE, ServeKey, SweepAxis, SweepPoint};
use utilgate::store::{
    BaselineMove, BaselineMoveKind, NewEvidence, NewProbe, NewResult, NewRun, NewServeCase,
    NewServeRepeat, RunGroup, Store,
};

use crate::env::{TestEnv, stderr, stdout};
use crate::pg_cluster;

const TIMEOUT: Duration = Duration::from_secs(10);

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

fn result(batch: u64, i: u32) -> NewResult {
    // Figures whose last bits matter: a copy that rounds through text would change them.
    let ms = 6.0 + f64::from(i) / 7.0 + f64::from(u32::try_from(batch).unwrap_or(0)) * 1e-9;
    NewResult {
        key: key(batch),
        verdict: Some(if i % 13 == 5 {
            Verdict::Regressed
        } else {
            Verdict::Pass
        }),
        error: None,
        floor_ms: Some(4.5 + 1.0 / 3.0),
        floor_json: Some(json!({"bytes": 16.1e9, "flops": 1.6e10, "binding": "memory"})),
        median_ms: Some(ms),
        utilisation: Some(4.5 / ms),
        mbu: Some(4.5 / ms),
        mfu: Some(0.1 / 3.0),
        summary_json: Some(json!({"p95_ms": ms * 1.01, "n": 6})),
        decision_json: Some(json!({"drop_pct": 0.1 * f64::from(i)})),
        repeats_ms: vec![vec![ms, ms + 0.01, ms - 0.01], vec![ms + 1e-12, ms]],
        warmup_ms: vec![vec![31.0, 7.5]],
        env: BTreeMap::from([("torch".to_owned(), format!("2.5.{}", i % 3))]),
        gpu_state_json: Some(json!({"sm_clock_mhz": 1980 - i})),
        stderr_tail: i.is_multiple_of(17).then(|| "warning: slow\n".to_owned()),
        promote: i % 13 != 5,
        // A budgeted night's records on every fourth run.
        budget: i.is_multiple_of(4).then(|| CaseRecord {
            note: PlanNote::Resolved,
            planned_repeats: 4,
            steps: 20,
            first_repeats: 2,
            confirm_repeats: i % 3,
            time_s: 1.0 / 3.0 + f64::from(i),
            stop: Stop::Decisive,
            needed_repeats: i.is_multiple_of(8).then_some(3),
            needed_s: i.is_multiple_of(8).then_some(0.1 / 3.0),
        }),
        costs: (0..if i.is_multiple_of(4) { 2 } else { 0 })
            .map(|r| RepeatCost {
                wall_s: 0.5 + f64::from(r) / 3.0,
                steps_s: 0.2 + 1e-12,
                steps: 20,
                warmup_s: 0.08,
                warmup_steps: 2,
            })
            .collect(),
        // Every third result scored its answers: the accuracy guard's table is copied too.
        quality: if i.is_multiple_of(3) {
            utilgate::compare::quality::QualityCounts::from([(
                "gsm8k".to_owned(),
                utilgate::compare::quality::QualityCount {
                    correct: 400 + u64::from(i),
                    total: 500,
                },
            )])
        } else {
            std::collections::BTreeMap::new()
        },
        // Every fourth drafted its tokens: the speculation table is copied too.
        speculative: i
            .is_multiple_of(4)
            .then_some(utilgate::compare::speculation::DraftCounts {
                drafted: 1600,
                accepted: 1000 + u64::from(i),
            }),
        // Every fourth measured its energy (one repeat refused): `result_energy` is copied too.
        energy: if i.is_multiple_of(4) {
            use utilgate::compare::energy::{EnergySource, EnergyWindow, RepeatEnergy};
            vec![
                RepeatEnergy {
                    repeat: 0,
                    measured: Ok(EnergyWindow {
                        joules: 132.5 + f64::from(i),
                        steps: 40,
                        window_ms: 200.0,
                        source: EnergySource::Integral,
                        power_limit_w: Some(700.0),
                    }),
                },
                RepeatEnergy {
                    repeat: 1,
                    measured: Err("too sparse".to_owned()),
                },
            ]
        } else {
            Vec::new()
        },
    }
}

fn serve_case(i: u32) -> NewServeCase {
    // Every fifth run also holds a rate sweep (its files placed in `serve_sweep_points`).
    let sweep = i.is_multiple_of(5);
    NewServeCase {
        key: ServeKey {
            suite: "serve".into(),
            model: "llama-3.1-8b".into(),
            request_rate: if sweep { SWEPT_RATE } else { "4" }.into(),
            max_concurrency: Some(16),
            input_len: Some(1024),
            output_len: None,
            sweep: sweep.then_some(SweepAxis::RequestRate),
        },
        verdict: Some(Verdict::Pass),
        error: None,
        settings_json: Some(json!({"seed": 0})),
        decision_json: None,
        estimate_json: None,
        stderr_tail: None,
        repeats: (0..2)
            .map(|r| NewServeRepeat {
                source: format!("bench-{i}-{r}.json"),
                schema: "vllm".into(),
                raw_json: json!({"median_ttft_ms": 20.0 + f64::from(i) / 3.0}).to_string(),
                metrics: BTreeMap::from([
                    ("ttft_p50_ms".to_owned(), 20.0 + f64::from(i) / 3.0),
                    ("tpot_p99_ms".to_owned(), 9.0 + f64::from(r) / 7.0),
                ]),
                sweep_point: sweep.then(|| SweepPoint {
                    point: if r == 0 { "4" } else { "inf" }.to_owned(),
                    sweep_repeat: 0,
                    gpus: 8,
                    interactivity_tok_s_user: Some(30.0 + f64::from(i) / 7.0),
                    throughput_tok_s_gpu: Some(150.0 - f64::from(r)),
                }),
            })
            .collect(),
        promote: i.is_multiple_of(2),
    }
}

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + s).expect("in range")
}

/// A store of 100 runs with a row in every table.
fn build_store(path: &Path) {
    let mut store = Store::open(path, TIMEOUT).expect("opens");
    for i in 0..100_u32 {
        let s = i64::from(i) * 3600;
        let run = NewRun {
            started_at: at(s),
            finished_at: at(s + 60),
            git_sha: Some(format!("{i:040x}")),
            branch: Some(if i % 4 == 3 { "feature" } else { "main" }.into()),
            trigger: Some("schedule".into()),
            pr_number: (i % 4 == 3).then_some(u64::from(i)),
            gpu_sku: if i.is_multiple_of(2) {
                "h100-sxm"
            } else {
                "h200"
            }
            .into(),
            gpu_json: Some(json!({"driver": "580.65", "uuid": format!("GPU-{i}")})),
            host: Some("ci-1".into()),
            utilgate_version: "0.1.0".into(),
            config_json: Some(json!({"gate": {"max_drop_pct": 3.0}})),
            promote_reason: "passed the gate on main".into(),
            canary_json: i
                .is_multiple_of(3)
                .then(|| json!({"stream_gb_s": 20.0 + f64::from(i) / 9.0})),
            uid: None,
            budget_night: i.is_multiple_of(4).then(|| NightRecord {
                budget_s: 600.0,
                grace_s: 3.0,
                planned_s: 1.0 / 7.0,
                reserve_s: 90.0,
                budget_to_resolve_all_s: (i % 8 == 4).then_some(700.0 + 1.0 / 3.0),
                not_started: (0..i % 3).map(|k| format!("case-{k}")).collect(),
                used_s: 100.0 / 3.0,
                stopped: i % 3 != 0,
            }),
            group: i.is_multiple_of(5).then(|| RunGroup {
                id: format!("g{}", i / 10),
                shard: Some((1 + i % 2, 2)),
            }),
            results: vec![result(1, i), result(8, i)],
        };
        let serve = if i.is_multiple_of(10) {
            vec![serve_case(i)]
        } else {
            vec![]
        };
        let id = store
            .insert_run_with_serve(&run, None, &serve)
            .expect("inserts");
        if i % 25 == 1 {
            let data = format!("trace of run {i}").into_bytes();
            let sha = format!("{:x}", sha2::Sha256::digest(&data));
            store
                .add_evidence(
                    id,
                    &[NewEvidence {
                        key: key(1),
                        kind: "trace".into(),
                        name: "trace.json".into(),
                        blob: Some((sha, data)),
                        analysis: Some(json!({"busy_pct": 91.5})),
                        warning: None,
                    }],
                    50,
                )
                .expect("evidence");
        }
        if i % 20 == 7 {
            store
                .insert_probe(&NewProbe {
                    gpu_sku: "h100-sxm".into(),
                    measured_at: at(s + 30),
                    kind: "copy_bytes_per_s".into(),
                    value: 3.0e12 + f64::from(i) / 3.0,
                    json: Some(json!({"repeats": 5})),
                })
                .expect("probe");
        }
    }
    let accepted = store.run(utilgate::store::RunId(42)).expect("reads");
    let result_id = accepted.expect("run 42").results[0].id;
    store
        .move_baselines(&[BaselineMove {
            result_id,
            kind: BaselineMoveKind::Accept,
            reason: "accepted: new driver".into(),
            moved_at: at(999_999),
        }])
        .expect("accept");
}

/// Every table's rows as `SQLite` holds them, in key order: storage class and bits.
fn dump(path: &Path) -> BTreeMap<String, Vec<Vec<String>>> {
    let conn = rusqlite::Connection::open(path).expect("open");
    let mut tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    tables.retain(|t| !t.starts_with("sqlite_"));
    let mut out = BTreeMap::new();
    for t in tables {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM \"{t}\" ORDER BY 1, 2"))
            .expect("prepare");
        let n = stmt.column_count();
        let rows: Vec<Vec<String>> = stmt
            .query_map([], |r| {
                (0..n)
                    .map(|i| {
                        Ok(match r.get::<_, rusqlite::types::Value>(i)? {
                            rusqlite::types::Value::Real(f) => format!("real {:#x}", f.to_bits()),
                            other => format!("{other:?}"),
                        })
                    })
                    .collect()
            })
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        out.insert(t, rows);
    }
    out
}

fn copy(env: &TestEnv, from: &str, to: &str) -> std::process::Output {
    env.cmd()
        .args(["store", "copy", "--from", from, "--to", to])
        .output()
        .expect("runs")
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn store_copy_round_trips_sqlite_postgres_sqlite_bit_for_bit() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = TestEnv::new();
    let first = env.path().join("first.db");
    let last = env.path().join("last.db");
    build_store(&first);
    let original = dump(&first);
    assert_eq!(original["runs"].len(), 100);
    for (table, rows) in &original {
        assert!(!rows.is_empty(), "the fixture leaves {table} empty");
    }

    let out = copy(&env, &first.to_string_lossy(), &url);
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{}\n{text}", stderr(&out));
    assert!(
        text.contains("every table's count and checksum verified"),
        "{text}"
    );
    assert!(!text.contains(pg_cluster::PASSWORD) && !stderr(&out).contains(pg_cluster::PASSWORD));
    let out = copy(&env, &url, &last.to_string_lossy());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        dump(&last),
        original,
        "SQLite -> PostgreSQL -> SQLite changed a stored figure"
    );

    // The checksums printed for each hop are the same table by table.
    let json = |from: &str, to: &str| -> serde_json::Value {
        let out = env
            .cmd()
            .args([
                "store", "copy", "--from", from, "--to", to, "--format", "json",
            ])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let hop1 = json(&first.to_string_lossy(), &url);
    let hop2 = json(&url, &last.to_string_lossy());
    assert_eq!(hop1["copied_rows"], 0, "a rerun copies nothing: {hop1}");
    assert_eq!(hop2["copied_rows"], 0, "{hop2}");
    assert_eq!(
        hop1["tables"].as_array().expect("tables").len(),
        original.len()
    );
    for (a, b) in hop1["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .zip(hop2["tables"].as_array().expect("tables"))
    {
        assert_eq!(a["sha256"], b["sha256"], "{a} {b}");
        assert_eq!(a["rows"], b["rows"], "{a} {b}");
    }
    let rerun = copy(&env, &first.to_string_lossy(), &url);
    assert!(
        stdout(&rerun).contains("nothing to copy"),
        "{}",
        stdout(&rerun)
    );

    // The copy in PostgreSQL is a working store: a run appended there gets a fresh id.
    let runs = env
        .cmd()
        .args([
            "runs", "list", "--limit", "1", "--format", "json", "--db", &url,
        ])
        .output()
        .expect("lists");
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).expect("json");
    assert_eq!(listed["runs"][0]["id"], 100, "{listed}");
    let out = env.run_trusted("main", &[("UTILGATE_DB", &url)]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let runs = env
        .cmd()
        .args([
            "runs", "list", "--limit", "1", "--format", "json", "--db", &url,
        ])
        .output()
        .expect("lists");
    let listed: serde_json::Value = serde_json::from_slice(&runs.stdout).expect("json");
    assert_eq!(listed["runs"][0]["id"], 101, "{listed}");
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn store_copy_refuses_a_destination_with_another_history_and_writes_nothing() {
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = TestEnv::new();
    // Two unrelated histories: one run each through the binary, at different times.
    let a = env.path().join("a.db");
    let b = env.path().join("b.db");
    for db in [&a, &b] {
        let out = env.run("main", &[("UTILGATE_DB", &db.to_string_lossy())]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let out = copy(&env, &a.to_string_lossy(), &url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let before = dump(&b);
    for (from, to) in [
        (b.to_string_lossy().to_string(), url.clone()),
        (url.clone(), b.to_string_lossy().to_string()),
    ] {
        let out = copy(&env, &from, &to);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("holds a different history"), "{err}");
        assert!(err.contains("nothing was copied"), "{err}");
        assert!(!err.contains(pg_cluster::PASSWORD), "{err}");
    }
    assert_eq!(dump(&b), before, "the refused destination is untouched");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let n: i64 = client
        .query_one("SELECT count(*) FROM runs", &[])
        .expect("count")
        .get(0);
    assert_eq!(n, 1, "the refused PostgreSQL destination is untouched");
}

#[test]
fn store_copy_between_sqlite_files_keeps_every_row_and_a_rerun_copies_nothing() {
    let env = TestEnv::new();
    let first = env.path().join("first.db");
    let second = env.path().join("nested/second.db");
    build_store(&first);
    let out = copy(&env, &first.to_string_lossy(), &second.to_string_lossy());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    for table in [
        "runs",
        "results",
        "baseline_moves",
        "evidence_blobs",
        "serve_metrics",
    ] {
        assert!(
            text.contains(table),
            "every table's count and checksum: {text}"
        );
    }
    assert_eq!(dump(&second), dump(&first));
    let rerun = copy(&env, &first.to_string_lossy(), &second.to_string_lossy());
    assert_eq!(rerun.status.code(), Some(0), "{}", stderr(&rerun));
    assert!(
        stdout(&rerun).contains("nothing to copy"),
        "{}",
        stdout(&rerun)
    );
    // A missing source is a clear error, and creates nothing.
    let out = copy(
        &env,
        "absent.db",
        &env.path().join("x.db").to_string_lossy(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no store at"), "{}", stderr(&out));
    assert!(!env.path().join("x.db").exists());
}

/// Every file under `dir` by its path relative to `dir`, with its bytes.
fn files_under(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("read dir") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).expect("under").to_string_lossy();
                out.insert(rel.into_owned(), std::fs::read(&path).expect("read"));
            }
        }
    }
    out
}

#[test]
#[ignore = "needs the PostgreSQL server binaries (Debian's postgresql); .ci/run runs them: cargo test -- --ignored pg_store"]
fn pg_store_the_site_of_a_postgres_history_is_the_site_of_its_sqlite_original() {
    // The site's queries (kernel cases, service cases and sweeps, runs, moves) on the second
    // backend: the same history gives the same pages, byte for byte.
    let cluster = pg_cluster::shared();
    let url = cluster.url(&cluster.new_database());
    let env = TestEnv::new();
    let first = env.path().join("first.db");
    build_store(&first);
    let out = copy(&env, &first.to_string_lossy(), &url);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let site = |db: &str, dir: &str| {
        let out = env
            .cmd()
            .args(["site", "--out", dir, "--db", db, "--branch", "main"])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };
    let said_sqlite = site(&first.to_string_lossy(), "site-sqlite");
    let said_pg = site(&url, "site-pg");
    assert_eq!(said_sqlite.replace("site-sqlite", "site-pg"), said_pg);
    let sqlite = files_under(&env.path().join("site-sqlite"));
    let pg = files_under(&env.path().join("site-pg"));
    assert_eq!(
        sqlite.keys().collect::<Vec<_>>(),
        pg.keys().collect::<Vec<_>>()
    );
    assert!(
        sqlite.keys().any(|k| k.starts_with("cases/"))
            && sqlite.keys().any(|k| k.starts_with("runs/")),
        "{:?}",
        sqlite.keys().collect::<Vec<_>>()
    );
    let index = String::from_utf8_lossy(&sqlite["index.html"]).into_owned();
    assert!(
        index.contains(r#"data-phase="serve""#),
        "no service case in the index"
    );
    // Every page but its build stamp (the second each build ran in, which two builds may not
    // share).
    let unstamped = |bytes: &[u8]| -> String {
        String::from_utf8_lossy(bytes)
            .lines()
            .filter(|l| !l.contains(r#"<span class="facts">"#))
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (name, bytes) in &sqlite {
        if name == "manifest.json" {
            continue;
        }
        assert!(
            unstamped(bytes) == unstamped(&pg[name]),
            "{name} differs between the SQLite and PostgreSQL sites"
        );
    }
}
