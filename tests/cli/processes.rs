//! Processes and faults (issue #11): no harness process outlives a killed utilgate or escapes a
//! timeout by double-forking into a session of its own; temporary results directories of
//! killed runs are swept at the next start; and the fault campaign that found these (SIGKILL at
//! random moments, concurrent writers) is kept, bounded, so a later change cannot lose a
//! committed run or the store's integrity without a test failing.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::env::{TestEnv, stderr};

/// A harness that starts a grandchild in a session of its own (double fork + setsid) and a
/// plain background child, records their pids, then hangs.
const ESCAPING: &str = "command = \"echo $$ > shell.pid; setsid sh -c 'echo $$ > escaped.pid; exec sleep 1000' & sleep 1000 & echo $! > child.pid; wait\"";

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // A zombie is dead: it waits only for a reaper.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn pid_in(env: &TestEnv, name: &str) -> Option<i32> {
    std::fs::read_to_string(env.path().join(name))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_run(env: &TestEnv, tmp: &Path) -> Child {
    env.std_cmd()
        .args(["run", "--branch", "main"])
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

fn harness_pids(env: &TestEnv) -> Vec<i32> {
    ["shell.pid", "child.pid", "escaped.pid"]
        .iter()
        .filter_map(|n| pid_in(env, n))
        .collect()
}

#[test]
fn a_killed_utilgate_leaves_no_harness_process_behind() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("command = \"sh harness.sh\"", ESCAPING));
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let mut child = spawn_run(&env, &tmp);
    wait_for("the harness processes", Duration::from_secs(30), || {
        harness_pids(&env).len() == 3
    });
    let pids = harness_pids(&env);
    assert!(pids.iter().all(|p| alive(*p)));
    child.kill().expect("SIGKILL utilgate");
    let _ = child.wait();
    wait_for(
        "every harness process to die",
        Duration::from_secs(10),
        || pids.iter().all(|p| !alive(*p)),
    );

    // The killed run's temporary results directory is swept at the next start.
    let leftovers = |tmp: &Path| -> Vec<String> {
        std::fs::read_dir(tmp)
            .expect("tmp")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("utilgate-"))
            .collect()
    };
    assert_eq!(leftovers(&tmp).len(), 1, "{:?}", leftovers(&tmp));
    let out = env
        .std_cmd()
        .args(["config", "check"])
        .env("TMPDIR", &tmp)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = env
        .std_cmd()
        .args(["run", "--branch", "main", "--suite", "nope"])
        .env("TMPDIR", &tmp)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(leftovers(&tmp).is_empty(), "{:?}", leftovers(&tmp));
}

#[test]
fn a_timeout_reaches_a_process_that_left_the_group() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", ESCAPING)
            .replace("timeout_s = 20", "timeout_s = 1")
            .replace("batches = [1, 8]", "batches = [1]")
            .replace("repeats = 3", "repeats = 1"),
    );
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("timed out"), "{}", stderr(&out));
    let pids = harness_pids(&env);
    assert_eq!(pids.len(), 3);
    wait_for(
        "every harness process to die",
        Duration::from_secs(5),
        || pids.iter().all(|p| !alive(*p)),
    );
}

/// Integrity of the store and the runs it lists: (run count, each run's result count).
fn check_store(env: &TestEnv) -> Vec<i64> {
    let conn = rusqlite::Connection::open(env.db()).expect("opens");
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(ok, "ok");
    let runs = env.json(&["runs", "list", "--limit", "1000"]);
    runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["n_results"].as_i64().expect("n_results"))
        .collect()
}

#[test]
fn sigkill_at_random_moments_never_loses_a_committed_run_or_half_writes_one() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("repeats = 3", "repeats = 1"));
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    // How long one run takes here, so the kills land across the whole of it.
    let start = Instant::now();
    assert_eq!(env.run("main", &[]).status.code(), Some(0));
    let span = start.elapsed().as_millis().max(50);
    let mut committed = check_store(&env).len();
    // Deterministic spread of kill times: 8 trials from 0% to ~120% of a run.
    for trial in 0..8u64 {
        let delay = Duration::from_millis(u64::try_from(span).unwrap_or(1000) * trial * 3 / 20);
        let mut child = spawn_run(&env, &tmp);
        std::thread::sleep(delay);
        let _ = child.kill();
        let _ = child.wait();
        let runs = check_store(&env);
        assert!(
            runs.len() == committed || runs.len() == committed + 1,
            "trial {trial}: {committed} -> {runs:?}"
        );
        assert!(
            runs.iter().all(|n| *n == 2),
            "trial {trial}: a half-written run: {runs:?}"
        );
        committed = runs.len();
    }
}

#[test]
fn concurrent_writers_each_store_a_whole_run_or_fail_clearly() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("repeats = 3", "repeats = 1"));
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let children: Vec<Child> = (0..3).map(|_| spawn_run(&env, &tmp)).collect();
    let mut stored = 0;
    for child in children {
        let out = child.wait_with_output().expect("finishes");
        match out.status.code() {
            Some(0) => stored += 1,
            other => {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("locked"), "{other:?}: {err}");
            }
        }
    }
    let runs = check_store(&env);
    assert_eq!(runs.len(), stored);
    assert!(runs.iter().all(|n| *n == 2), "{runs:?}");
}

/// The guard itself killed by SIGKILL (with utilgate, as when a CI runner kills the whole job): the
/// shell it started dies with it (its own parent-death signal) instead of running on as an
/// orphan that keeps the GPU busy. Here the test plays utilgate, so only the guard dies.
#[test]
fn a_killed_guard_takes_its_harness_shell_with_it() {
    let env = TestEnv::new();
    let mut guard = env
        .std_cmd()
        .args(["harness", "guard", "--parent"])
        .arg(std::process::id().to_string())
        .args(["--", "echo $$ > shell.pid; exec sleep 1000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    wait_for("the shell's pid", Duration::from_secs(10), || {
        pid_in(&env, "shell.pid").is_some()
    });
    let shell = pid_in(&env, "shell.pid").expect("pid");
    assert!(alive(shell));
    guard.kill().expect("SIGKILL");
    guard.wait().expect("reaped");
    wait_for(
        "the shell to die with its guard",
        Duration::from_secs(5),
        || !alive(shell),
    );
}

/// One guard serves the whole run (docs/reliability.md, "What the runner costs per harness
/// process"): every repeat's shell is a child of the same guard process, not of a fresh
/// `utilgate harness guard` per repeat, and that guard is gone when the run ends.
#[test]
fn one_guard_starts_every_repeat_of_a_run() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "command = \"echo $PPID >> parents; sh harness.sh\"",
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let parents: Vec<i32> = std::fs::read_to_string(env.path().join("parents"))
        .expect("parents")
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    // Two cases of three repeats each.
    assert_eq!(parents.len(), 6, "{parents:?}");
    assert!(parents.iter().all(|p| *p == parents[0]), "{parents:?}");
    wait_for("the run's guard to exit", Duration::from_secs(5), || {
        !alive(parents[0])
    });
}

/// The run's guard killed outright in the middle of a repeat: the harness dies with it (the
/// shell by its parent-death signal, the rest with the repeat's group and scope), the case is
/// an error at once (not at its timeout), and the next case's repeats are started by a new
/// guard.
#[test]
fn a_killed_run_guard_takes_its_shell_with_it_and_the_run_goes_on() {
    let env = TestEnv::new();
    env.write(
        "hang-once.sh",
        "if [ ! -e shell.pid ]; then\n\
         echo $GUARD > guard.pid; echo $$ > shell.pid; exec sleep 1000\n\
         fi\n\
         echo $GUARD >> parents\n\
         sh harness.sh\n",
    );
    env.write_config(&TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "command = \"GUARD=$PPID sh hang-once.sh\"",
    ));
    let tmp = env.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("tmp");
    let start = Instant::now();
    let child = spawn_run(&env, &tmp);
    wait_for("the hanging repeat", Duration::from_secs(30), || {
        pid_in(&env, "shell.pid").is_some() && pid_in(&env, "guard.pid").is_some()
    });
    let (guard, shell) = (
        pid_in(&env, "guard.pid").expect("guard"),
        pid_in(&env, "shell.pid").expect("shell"),
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(guard),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("SIGKILL the guard");
    wait_for(
        "the harness to die with the guard",
        Duration::from_secs(5),
        || !alive(shell),
    );
    let out = child.wait_with_output().expect("finishes");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("SIGKILL"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(15), "{err}");
    // The second case's three repeats ran, under one new guard.
    let parents: Vec<i32> = std::fs::read_to_string(env.path().join("parents"))
        .expect("parents")
        .lines()
        .map(|l| l.trim().parse().expect("a pid"))
        .collect();
    assert_eq!(parents.len(), 3, "{parents:?}");
    assert!(
        parents.iter().all(|p| *p != guard && *p == parents[0]),
        "{parents:?}"
    );
}
