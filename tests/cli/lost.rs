//! Nothing measured is lost (issue #11): the store is checked before the first case, a run the
//! store cannot take goes to a rescue file that `import run` stores later, finished cases of an
//! interrupted run are journalled for `run --resume`, an empty store file is refused, and a
//! large grid says how large before it starts.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, stderr, stdout};

/// Cases started, one line each, as the harness logs them.
fn started(env: &TestEnv) -> Vec<String> {
    std::fs::read_to_string(env.path().join("started.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The standard config with a harness that logs each repeat it starts.
fn logging_config(extra: &str) -> String {
    TestEnv::config_with(extra).replace(
        "command = \"sh harness.sh\"",
        "command = \"echo b$UTILGATE_BATCH-r$UTILGATE_REPEAT >> started.log; sh harness.sh\"",
    )
}

#[test]
fn a_corrupt_store_fails_before_the_first_case() {
    let env = TestEnv::new();
    env.write_config(&logging_config(""));
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    // Damage every page after the header: the file still opens, writing cannot work.
    let db = env.db();
    let mut bytes = std::fs::read(&db).expect("store");
    for b in bytes.iter_mut().skip(100) {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).expect("corrupt");
    let _ = std::fs::remove_file(db.with_extension("db-wal"));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        started(&env).is_empty(),
        "measured before failing: {:?}",
        started(&env)
    );
    let err = stderr(&out);
    assert!(err.contains("corrupt"), "{err}");
    assert_eq!(
        std::fs::read(&db).expect("store"),
        bytes,
        "left exactly as it was"
    );
}

#[test]
fn an_empty_store_file_is_refused_unless_init() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    std::fs::write(env.db(), "").expect("empty store");
    // An old empty file (one created this instant may be another run's store in the making).
    let touched = Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(env.db())
        .status()
        .expect("touch");
    assert!(touched.success());
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("store is empty but exists") && err.contains("restore it or delete it"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(env.db()).expect("kept").len(), 0);
    // Readers say the same, not "run utilgate run to upgrade".
    let out = env.cmd().args(["runs", "list"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("store is empty but exists"),
        "{}",
        stderr(&out)
    );

    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--init"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        env.json(&["runs", "list"])["runs"].as_array().map(Vec::len),
        Some(1)
    );
}

/// #28 item 9: a just-`touch`ed empty store with no journal or WAL beside it (nobody creating
/// it) is refused at once; it used to be refused only after the 10 s busy timeout.
#[test]
fn a_fresh_empty_store_nobody_is_creating_is_refused_without_the_busy_wait() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    std::fs::write(env.db(), "").expect("empty store");
    let started = std::time::Instant::now();
    let out = env.cmd().args(["runs", "list"]).output().expect("runs");
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("store is empty but exists"),
        "{}",
        stderr(&out)
    );
    // The busy timeout is 10 s; the grace for a creator to show itself is 0.25 s.
    assert!(
        took < std::time::Duration::from_secs(5),
        "refused after {took:?}"
    );
    assert_eq!(std::fs::metadata(env.db()).expect("kept").len(), 0);
}

/// Starts `utilgate run` in the background with `envs`.
fn spawn_run(env: &TestEnv, args: &[&str], envs: &[(&str, &str)]) -> Child {
    let mut cmd = env.std_cmd();
    cmd.args(["run", "--branch", "main", "--git-sha", "0123456789abcdef"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.spawn().expect("starts")
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_run_the_store_cannot_take_is_rescued_imported_later_and_never_stored_twice() {
    let env = TestEnv::new();
    env.write_config(
        &logging_config("").replace("[gate]", "[store]\nbusy_timeout_s = 0.5\n\n[gate]"),
    );
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    let child = spawn_run(&env, &[], &[]);
    // Once the first case is measuring, another writer locks the store for the rest of the run.
    wait_for("the first repeat", Duration::from_secs(30), || {
        started(&env).len() > 1
    });
    let locker = rusqlite::Connection::open(env.db()).expect("open");
    locker.execute_batch("BEGIN EXCLUSIVE").expect("lock");
    let out = child.wait_with_output().expect("finishes");
    drop(locker);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("locked"), "{err}");
    let rescue = rescue_path(&err).unwrap_or_else(|| panic!("no rescue file named: {err}"));
    // Named relative to utilgate's working directory, like the store.
    let rescue = env.path().join(rescue);
    assert!(rescue.exists(), "{}", rescue.display());
    assert_eq!(
        rescue.parent().and_then(|p| p.canonicalize().ok()),
        env.db().parent().and_then(|p| p.canonicalize().ok()),
        "beside the store"
    );

    let out = env
        .cmd()
        .args(["import", "run"])
        .arg(&rescue)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let runs = env.json(&["runs", "list"]);
    let list = runs["runs"].as_array().expect("runs");
    assert_eq!(list.len(), 2, "{runs}");
    assert_eq!(list[0]["n_results"], 2);
    let first = list[0]["id"].as_i64().expect("id");

    // Replays are refused naming the first: the same rescue file again, and `run --resume` of
    // the rescued run's journal (#28 item 7).
    let again = env
        .cmd()
        .args(["import", "run"])
        .arg(&rescue)
        .output()
        .expect("runs");
    assert_eq!(again.status.code(), Some(2), "{}", stderr(&again));
    let said = format!("as run #{first}: not stored again");
    assert!(
        stderr(&again).contains("is stored already") && stderr(&again).contains(&said),
        "{}",
        stderr(&again)
    );
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    let resumed = env
        .cmd()
        .args(["run", "--branch", "main", "--resume"])
        .output()
        .expect("runs");
    assert_eq!(resumed.status.code(), Some(2), "{}", stderr(&resumed));
    assert!(stderr(&resumed).contains(&said), "{}", stderr(&resumed));
    assert!(started(&env).is_empty(), "measured a stored run again");
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "{runs}");
    assert!(
        journals(&env).is_empty(),
        "the stored run's journal is removed"
    );
}

/// The path printed after "rescue file" on stderr.
fn rescue_path(stderr: &str) -> Option<PathBuf> {
    stderr.lines().find_map(|l| {
        let at = l.find("rescue-")?;
        let start = l[..at]
            .rfind(|c: char| c.is_whitespace())
            .map_or(0, |s| s + 1);
        let end = l[at..].find(".json")? + at + 5;
        Some(PathBuf::from(&l[start..end]))
    })
}

/// Starts a run whose b8 case hangs and SIGKILLs utilgate while it measures b8, after b1 is
/// done (and journalled).
fn kill_while_measuring_b8(env: &TestEnv) {
    let _ = std::fs::remove_file(env.path().join("started.log"));
    env.write_config(&logging_config(""));
    let mut child = spawn_run(env, &[], &[("FAIL_MODE", "slowcase")]);
    wait_for("the b8 case", Duration::from_secs(60), || {
        started(env).iter().any(|l| l.starts_with("b8"))
    });
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}

#[test]
fn an_interrupted_run_resumes_measuring_only_the_missing_cases() {
    let env = TestEnv::new();
    kill_while_measuring_b8(&env);
    assert_eq!(
        env.json(&["runs", "list"])["runs"].as_array().map(Vec::len),
        Some(0),
        "an interrupted run is never stored half-done"
    );
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");

    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--resume"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = started(&env);
    assert!(
        log.iter().all(|l| l.starts_with("b8")),
        "re-measured b1: {log:?}"
    );
    assert!(stderr(&out).contains("resum"), "{}", stderr(&out));
    let show = env.json(&["runs", "show"]);
    let cases = show["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    assert!(cases.iter().all(|c| c["n"] == 60), "{show}");
    assert!(
        journals(&env).is_empty(),
        "a stored run removes its journal"
    );
}

/// The run journals beside the store (one per run: `utilgate.db.cases-<run id>.jsonl`).
fn journals(env: &TestEnv) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(env.db().parent().expect("dir"))
        .expect("store dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("utilgate.db.cases"))
                && p.extension().is_some_and(|e| e == "jsonl")
        })
        .collect();
    found.sort();
    found
}

#[test]
fn a_journal_without_resume_is_kept_with_a_note() {
    let env = TestEnv::new();
    kill_while_measuring_b8(&env);
    let before = journals(&env);
    assert_eq!(before.len(), 1, "{before:?}");
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("kept the journal of an interrupted run") && err.contains("--resume"),
        "{err}"
    );
    assert_eq!(started(&env).len(), 6, "every case measured afresh");
    assert_eq!(
        journals(&env),
        before,
        "the interrupted run's journal is kept"
    );
}

/// The run ids in journal file names, `utilgate.db.cases-<id>.jsonl`.
fn journal_ids(env: &TestEnv) -> Vec<String> {
    journals(env)
        .iter()
        .filter_map(|p| {
            let n = p.file_name()?.to_str()?;
            Some(
                n.strip_prefix("utilgate.db.cases-")?
                    .strip_suffix(".jsonl")?
                    .to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_run_beside_a_live_run_keeps_its_journal_and_resume_recovers_its_finished_case() {
    let env = TestEnv::new();
    env.write_config(&logging_config(""));
    // Run A: b1 finishes (journalled), b8 hangs.
    let mut a = spawn_run(&env, &[], &[("FAIL_MODE", "slowcase")]);
    wait_for("A's b8 case", Duration::from_secs(60), || {
        started(&env).iter().any(|l| l.starts_with("b8"))
    });
    // Run B on the same store, start to end, while A is live.
    let b = env
        .std_cmd()
        .args(["run", "--branch", "main", "--git-sha", "0123456789abcdef"])
        .output()
        .expect("B runs");
    assert_eq!(
        b.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&b.stderr)
    );
    let err = String::from_utf8_lossy(&b.stderr);
    assert!(!err.contains("discard"), "B touched A's journal: {err}");
    assert!(
        !err.contains("kept the journal"),
        "A is live, not interrupted: {err}"
    );
    assert_eq!(journals(&env).len(), 1, "A's journal is there");
    a.kill().expect("SIGKILL A");
    let _ = a.wait();
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");

    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--resume"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let log = started(&env);
    assert!(
        !log.is_empty() && log.iter().all(|l| l.starts_with("b8")),
        "A's finished b1 was measured again: {log:?}"
    );
    let runs = env.json(&["runs", "list"]);
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(2), "{runs}");
    let show = env.json(&["runs", "show"]);
    assert!(
        show["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .all(|c| c["n"] == 60),
        "{show}"
    );
    assert!(journals(&env).is_empty());
}

#[test]
fn resume_with_two_interrupted_runs_lists_them_and_takes_the_one_named() {
    let env = TestEnv::new();
    kill_while_measuring_b8(&env);
    kill_while_measuring_b8(&env);
    let ids = journal_ids(&env);
    assert_eq!(ids.len(), 2, "{ids:?}");
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--resume"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("2 interrupted runs of this plan")
            && ids.iter().all(|id| err.contains(id.as_str())),
        "{err}"
    );
    assert!(err.contains("--resume=RUN_ID"), "{err}");
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    let out = env
        .cmd()
        .args(["run", "--branch", "main"])
        .arg(format!("--resume={}", &ids[1][..8]))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started(&env).iter().all(|l| l.starts_with("b8")),
        "{:?}",
        started(&env)
    );
    assert_eq!(journal_ids(&env), vec![ids[0].clone()], "the other is kept");
}

#[test]
fn a_large_grid_says_its_size_and_asks_for_yes_outside_ci() {
    let env = TestEnv::new();
    let contexts: Vec<String> = (1..=700).map(|c| (c * 16).to_string()).collect();
    env.write_config(&logging_config("").replace(
        "contexts = [4096]",
        &format!("contexts = [{}]", contexts.join(", ")),
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("1400 cases"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert!(err.contains("steps"), "an estimate in steps: {err}");
    assert!(started(&env).is_empty(), "nothing runs before the answer");

    // A config that declares the size it expects needs no --yes.
    env.write_config(&logging_config("").replace("[gate]", "[limits]\nmax_cases = 1\n\n[gate]"));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("2 cases") && stderr(&out).contains("max_cases"));
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--yes"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("2 cases"), "the count is always said");
}

#[test]
fn the_estimate_comes_from_the_suites_history() {
    let env = TestEnv::new();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains("2 cases") && err.contains("from the last run of suite decode"),
        "{err}"
    );
    // The confirm step is counted: each suspect may take 12 more processes beside its 3, at the
    // last run's cost per process, so the most is five times the plain estimate.
    // A figure in seconds and half its printed precision (`12 ms`, `0.8 s`, `4 min 05 s`).
    let seconds = |after: &str| -> (f64, f64) {
        let at = err
            .find(after)
            .unwrap_or_else(|| panic!("{after:?} in {err}"))
            + after.len();
        let text = &err[at..];
        let (num, rest) = text.split_once(' ').expect("a figure");
        let figure: f64 = num.parse().unwrap_or_else(|_| panic!("a number in {text}"));
        if rest.starts_with("min") {
            let secs: f64 = rest[4..].split(' ').next().expect("s").parse().expect("s");
            (figure * 60.0 + secs, 0.5)
        } else if rest.starts_with("ms") {
            (figure / 1000.0, 0.0005)
        } else {
            (figure, 0.05)
        }
    };
    assert!(
        err.contains("if every case needs the confirm step (12 more processes each)"),
        "{err}"
    );
    let ((about, a), (most, m)) = (seconds("(about "), seconds("; up to "));
    // Before: a fast suite's estimate read "about 0.0 s".
    assert!(!err.contains("about 0.0 s"), "{err}");
    assert!(
        about > 0.0 && most >= 5.0 * (about - a) - m && most <= 5.0 * (about + a) + m,
        "about {about} s, up to {most} s: {err}"
    );

    // Under a budget the first line names the budget, and the plan (printed next) its length.
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--budget", "2m"])
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert!(
        err.contains("2 cases to measure within the budget of 2 min 00 s (its plan follows)"),
        "{err}"
    );
    assert!(
        !err.contains("(about "),
        "one figure for the night's length: {err}"
    );
}

#[test]
fn a_read_only_store_fails_before_the_first_case() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.write_config(&logging_config(""));
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    std::fs::remove_file(env.path().join("started.log")).expect("reset log");
    // The harness's directory is writable; the store and its directory are not.
    let mode = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    mode(env.path(), 0o777);
    let dir = env.db().parent().expect("dir").to_path_buf();
    for entry in std::fs::read_dir(&dir).expect("dir").flatten() {
        mode(&entry.path(), 0o644);
    }
    mode(&dir, 0o755);
    let out = crate::measurements::as_nobody(&env, &["run", "--branch", "main"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(
        started(&env).is_empty(),
        "measured before failing: {:?}",
        started(&env)
    );
    let err = stderr(&out);
    assert!(
        err.contains("read-only") || err.contains("cannot be written"),
        "{err}"
    );
}
