//! `TestEnv`: a temporary directory with a config, a scripted harness and a store path, and
//! helpers to run the real `utilgate` binary in it.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// A harness script that speaks protocol v1. Its step times come from `STEP_MS` (default 10.0)
/// times a per-repeat factor, plus a small deterministic per-step ripple, so that tests control
/// exactly what the gate sees. `FAIL_MODE` makes it misbehave in the ways a real harness can.
pub const SCRIPT_HARNESS: &str = r#"#!/bin/sh
set -eu
: "${STEP_MS:=10.0}"
out="$UTILGATE_OUT"
echo "harness starting for $UTILGATE_MODEL b$UTILGATE_BATCH c$UTILGATE_CONTEXT repeat $UTILGATE_REPEAT" >&2
case "${FAIL_MODE:-}" in
  crash) echo "Segmentation fault in fake kernel" >&2; kill -SEGV $$ ;;
  exit3) echo "RuntimeError: CUDA out of memory" >&2; exit 3 ;;
  leak) printf '{"step_ms": 1.0}\n401 for token ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n' >> "$out"; exit 0 ;;
  garbage) printf '{"step_ms": 1.0}\nthis is not json\n' >> "$out"; exit 0 ;;
  nan) printf '{"step_ms": NaN}\n' >> "$out"; exit 0 ;;
  negative) printf '{"step_ms": -2.5}\n' >> "$out"; exit 0 ;;
  zero) printf '{"step_ms": 0}\n' >> "$out"; exit 0 ;;
  nosteps) printf '{"step_ms": 9.0, "warmup": true}\n' >> "$out"; exit 0 ;;
  hang) sleep 30 & wait ;;
  slowcase) if [ "$UTILGATE_BATCH" = "8" ]; then sleep 30; fi ;;
esac
printf '{"env": {"torch": "%s", "flash_attn": "2.6.3"}}\n' "${TORCH_VERSION:-2.5.1}" >> "$out"
i=0
while [ "$i" -lt "$UTILGATE_WARMUP_STEPS" ]; do
  printf '{"step_ms": 40.0, "warmup": true}\n' >> "$out"; i=$((i+1))
done
awk -v base="$STEP_MS" -v n="$UTILGATE_STEPS" -v rep="$UTILGATE_REPEAT" -v scale="${REPEAT_SCALE:-0}" \
  'BEGIN { for (i = 0; i < n; i++) { r = (i * 7 + rep * 3) % 5; printf "{\"step_ms\": %.6f}\n", base * (1 + r * 0.002 + rep * scale) } }' >> "$out"
"#;

/// Variables removed from every command's environment: no CI variables leak in from the
/// machine.
pub const CLEAN_VARS: [&str; 17] = [
    // Under CI utilgate skips the large-grid question; tests choose their own CI.
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_SHA",
    "GITHUB_REF",
    "GITHUB_REF_NAME",
    "GITHUB_HEAD_REF",
    "GITHUB_EVENT_NAME",
    "GITHUB_EVENT_PATH",
    // Under Actions a shard's run group defaults to it.
    "GITHUB_RUN_ID",
    // A credential in utilgate's environment stops `run` (tests that want one set it).
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "UTILGATE_CONFIG",
    "UTILGATE_DB",
    "NO_COLOR",
    // Tables fit COLUMNS when it is set; a test that wants a width sets it.
    "COLUMNS",
];

pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    /// A directory with the script harness and a config whose suite has the given grid.
    pub fn new() -> TestEnv {
        let dir = tempfile::tempdir().expect("tempdir");
        let env = TestEnv { dir };
        env.write("harness.sh", SCRIPT_HARNESS);
        env.write_config(&Self::config_with(""));
        env
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let path = self.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&path, text).expect("write");
        path
    }

    pub fn write_config(&self, text: &str) {
        self.write("utilgate.toml", text);
    }

    pub fn db(&self) -> PathBuf {
        self.path().join(".utilgate/utilgate.db")
    }

    /// The standard test config; `suite_extra` is appended to the suite table.
    pub fn config_with(suite_extra: &str) -> String {
        format!(
            r#"
[gate]
baseline_branch = "main"
max_drop_pct = 3.0

[gpu]
name = "h100-sxm"

# The scripted harness's steps do not depend on this host, so neither may its verdicts: the
# machine canary is tested on its own (tests/cli/canary.rs).
[canary]
enabled = false

[models.seed-8b]
params = 8.0e9
kv_bytes_per_token = 131072

[[suite]]
name = "decode"
command = "sh harness.sh"
models = ["seed-8b"]
precisions = ["bf16"]
phases = ["decode"]
batches = [1, 8]
contexts = [4096]
warmup_steps = 2
steps = 20
repeats = 3
timeout_s = 20
{suite_extra}
"#
        )
    }

    /// The binary with a clean environment: no CI variables leak in from the machine.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::cargo_bin("utilgate").expect("binary");
        cmd.current_dir(self.path());
        for var in CLEAN_VARS {
            cmd.env_remove(var);
        }
        cmd.env("NO_COLOR", "1");
        // The host's pinned bandwidth lives in the user's cache: this test's own.
        cmd.env("XDG_CACHE_HOME", self.path().join(".cache"));
        cmd
    }

    /// The same as [`TestEnv::cmd`] as a `std::process::Command`, for runs started in the
    /// background (to be killed, or to race each other).
    pub fn std_cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("utilgate"));
        cmd.current_dir(self.path());
        for var in CLEAN_VARS {
            cmd.env_remove(var);
        }
        cmd.env("NO_COLOR", "1");
        // The host's pinned bandwidth lives in the user's cache: this test's own.
        cmd.env("XDG_CACHE_HOME", self.path().join(".cache"));
        cmd
    }

    /// `utilgate run` on a branch with the given harness environment.
    pub fn run(&self, branch: &str, envs: &[(&str, &str)]) -> Output {
        self.run_with(&[], branch, envs)
    }

    /// [`TestEnv::run`] with `--trusted`: for a store URL that holds its password, beside
    /// which `run` refuses to start an untrusted harness.
    pub fn run_trusted(&self, branch: &str, envs: &[(&str, &str)]) -> Output {
        self.run_with(&["--trusted"], branch, envs)
    }

    fn run_with(&self, flags: &[&str], branch: &str, envs: &[(&str, &str)]) -> Output {
        let mut cmd = self.cmd();
        cmd.arg("run").args(flags);
        cmd.args(["--branch", branch, "--git-sha", "0123456789abcdef"]);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        cmd.output().expect("runs")
    }

    /// `utilgate report --format <format>` of the last run: its stdout, the command asserted
    /// to have succeeded.
    pub fn report(&self, format: &str) -> String {
        let out = self
            .cmd()
            .args(["report", "--format", format])
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "report --format {format}: {}",
            stderr(&out)
        );
        stdout(&out)
    }

    /// `utilgate <args> --format json` parsed.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self
            .cmd()
            .args(args)
            .args(["--format", "json"])
            .output()
            .expect("runs");
        assert!(
            out.status.success() || out.status.code() == Some(1),
            "{args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("valid JSON on stdout")
    }
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The case named `case` in a run report.
pub fn case_of<'a>(report: &'a serde_json::Value, case: &str) -> &'a serde_json::Value {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["case"] == case)
        .unwrap_or_else(|| panic!("no case {case} in {report}"))
}

/// The verdict of `case` in a run report.
pub fn verdict_of(report: &serde_json::Value, case: &str) -> String {
    case_of(report, case)["verdict"]
        .as_str()
        .expect("verdict")
        .to_owned()
}

/// `git ARGS` in `dir` with a fixed author, asserted to succeed: its trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
