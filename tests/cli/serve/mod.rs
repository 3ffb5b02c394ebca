//! Service cases end to end (DESIGN.md §12), through the real binary and a real store:
//! `import` (real load-generator files and the stand-in's), `suite` (suites of `kind = "serve"`
//! in `utilgate run`, the documented vLLM suite), `report` (service cases in every report
//! surface, a mixed config as one run). The shared setup is here: the load-generator stand-in
//! (`tests/serve/vllm_bench_stub.py`, vLLM's current schema from given distributions), the
//! fixtures, a service suite's config.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::env::{TestEnv, stderr};

mod import;
mod loadgen;
mod plausible;
mod report;
mod suite;
mod sweep;

pub(crate) const STUB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/serve/vllm_bench_stub.py"
);
pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A directory without a config: `import serve` needs none.
pub(crate) fn bare() -> TestEnv {
    TestEnv {
        dir: tempfile::tempdir().expect("tempdir"),
    }
}

/// Three repeats of the stand-in with `args`, as files `name-0.json` .. `name-2.json`.
pub(crate) fn stub_run(env: &TestEnv, name: &str, args: &[&str]) -> Vec<PathBuf> {
    (0..3)
        .map(|repeat| {
            let path = env.path().join(format!("{name}-{repeat}.json"));
            let status = std::process::Command::new("python3")
                .arg(STUB)
                .args(["--result-filename", path.to_str().expect("utf-8 path")])
                .args(["--request-rate", "4", "--num-prompts", "400", "--seed", "7"])
                .args(args)
                .env("UTILGATE_REPEAT", repeat.to_string())
                .status()
                .expect("python3 runs the stand-in");
            assert!(status.success(), "stand-in failed");
            path
        })
        .collect()
}

pub(crate) fn import(env: &TestEnv, files: &[PathBuf], extra: &[&str]) -> Output {
    env.cmd()
        .args(["import", "serve"])
        .args(files)
        .args([
            "--db",
            "serve.db",
            "--branch",
            "main",
            "--git-sha",
            "abc123",
        ])
        .args(extra)
        .output()
        .expect("runs")
}

pub(crate) fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("JSON on stdout ({e}): {}", stderr(out)))
}

pub(crate) fn real(name: &str) -> PathBuf {
    Path::new(FIXTURES).join(name)
}

/// A config whose service suite runs the stand-in with `extra` appended to its command (the
/// stand-in takes the last of a repeated option, so `extra` can override the grid's values).
pub(crate) fn suite_config(seed: u64, extra: &str) -> String {
    format!(
        r#"
[gate]
baseline_branch = "main"

[[suite]]
name = "serve"
kind = "serve"
models = ["stub-model"]
request_rates = [4.0]
input_lens = [256]
output_lens = [32]
num_prompts = 400
seed = {seed}
timeout_s = 120
command = "env > seen-env.txt; python3 {STUB} --model {{{{ model }}}} --request-rate {{{{ request_rate }}}} --random-input-len {{{{ input_len }}}} --random-output-len {{{{ output_len }}}} --num-prompts {{{{ num_prompts }}}} --seed {{{{ seed }}}} --result-filename {{{{ result_file }}}} {extra}"
"#
    )
}

pub(crate) fn suite_run(env: &TestEnv) -> Output {
    env.cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--git-sha",
            "abc",
            "--format",
            "json",
        ])
        .output()
        .expect("runs")
}

/// Stand-ins for `vllm` and `curl`: `vllm serve` is a server that becomes ready a moment after
/// it starts (the file `ready`) and notes its start and stop in `server.events`; `vllm bench
/// serve` refuses to run before the server is ready, then runs the stand-in load generator.
pub(crate) fn fake_vllm(env: &TestEnv) -> PathBuf {
    let bin = env.path().join("bin");
    env.write(
        "bin/vllm",
        &format!(
            r#"#!/bin/sh
case "$1" in
serve)
  trap 'rm -f ready; echo stopped >> server.events; exit 0' TERM
  echo "started $2" >> server.events
  (sleep 0.3; touch ready) &
  while :; do sleep 0.1; done ;;
bench)
  shift 2
  [ -e ready ] || {{ echo "bench before the server was ready" >&2; exit 9; }}
  exec python3 {STUB} "$@" ;;
esac
"#
        ),
    );
    env.write("bin/curl", "#!/bin/sh\n[ -e ready ]\n");
    for name in ["vllm", "curl"] {
        let path = bin.join(name);
        let mut perms = std::fs::metadata(&path).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).expect("chmod");
    }
    bin
}
