//! The examples and exit codes at the end of every subcommand's `--help` (and its man page).
//! Pure data. Every example is a command line that works as written against the example
//! config (examples/cpu-decode/utilgate.toml) or names its placeholder in CAPITALS.

/// Exit codes of a command that gates: it judges cases and can fail.
macro_rules! gating {
    ($examples:literal) => {
        concat!(
            "Examples:\n",
            $examples,
            "\n\nExit codes:\n",
            "  0  the gate passed\n",
            "  1  the gate failed: a case got a verdict listed in [gate] fail_on (default: regressed, invalid)\n",
            "  2  error: usage, config, store, harness or driver, or a case could not be measured",
        )
    };
}

/// Exit codes of a command that reads, writes or prints but judges nothing.
macro_rules! plain {
    ($examples:literal) => {
        concat!(
            "Examples:\n",
            $examples,
            "\n\nExit codes:\n",
            "  0  done\n",
            "  2  error: usage, config or store (the message says which, and the fix)",
        )
    };
}

pub const MAIN: &str = gating!(
    "  utilgate run --config examples/cpu-decode/utilgate.toml
  utilgate floor --model llama-3.1-8b --gpu h100-sxm --phase decode --batch 8 --context 4096
  utilgate runs list"
);

pub const RUN: &str = gating!(
    "  utilgate run --config examples/cpu-decode/utilgate.toml
  utilgate run --suite decode --report-dir reports/ --format json
  utilgate run --shard 2/4 --run-group nightly-42 --no-promote
  utilgate run --baselines baselines/ --report-dir reports/   # no store: judge against the files"
);

pub const FLOOR: &str = plain!(
    "  utilgate floor --model llama-3.1-8b --gpu h100-sxm --phase decode --batch 8 --context 4096
  utilgate floor --model llama-3.1-8b --gpu h100-sxm --phase decode --batch 8 --context 4096 --step-ms 6.1
  utilgate floor --config utilgate.toml --model seed-8b --phase prefill --context 2048"
);

pub const COMPARE: &str = gating!(
    "  utilgate compare               # the latest run against the baselines
  utilgate compare 42 --against 40 --format json"
);

pub const BASELINE: &str = plain!(
    "  utilgate baseline list decode/llama
  utilgate baseline accept decode/ --run 42 --reason \"paged attention v2 reads the KV twice\""
);

pub const BASELINE_LIST: &str = plain!(
    "  utilgate baseline list
  utilgate baseline list b8 --gpu h100-sxm --format json"
);

pub const BASELINE_SHOW: &str =
    plain!("  utilgate baseline show decode/llama-3.1-8b/bf16/decode/b8/c4096 --gpu h100-sxm");

pub const BASELINE_HISTORY: &str = plain!(
    "  utilgate baseline history decode/llama-3.1-8b
  utilgate baseline history --format json"
);

pub const BASELINE_ACCEPT: &str = plain!(
    "  utilgate baseline accept decode/llama-3.1-8b --run 42 --reason \"fp8 KV cache\"
  utilgate baseline accept \"\" --run 42 --reason \"new driver 580, all cases\""
);

pub const BASELINE_EXPORT: &str = plain!(
    "  utilgate baseline export                      # baselines/<gpu>.json beside the config
  utilgate baseline export --out baselines/      # one file per GPU (docs/baselines.md)
  utilgate baseline export --gpu h100-sxm --out h100.json"
);

pub const BASELINE_IMPORT: &str = plain!(
    "  utilgate baseline import baselines/h100-sxm.json
  utilgate baseline import baselines/            # every *.json inside"
);

/// `baseline diff` exits 1 only with `--exit-code`, when something moved.
pub const BASELINE_DIFF: &str = concat!(
    "Examples:\n",
    "  utilgate baseline diff baselines/ exported/    # two exports (files or directories)\n",
    "  utilgate baseline diff baselines/h100-sxm.json # an export against the store\n",
    "  utilgate baseline diff baselines/ exported/ --format markdown > pr-body.md",
    "\n\nExit codes:\n",
    "  0  done (with --exit-code: no case moved)\n",
    "  1  with --exit-code: a case moved, was added or was removed\n",
    "  2  error: usage, config, store or a baselines file (the message names the file, field and fix)",
);

pub const STORE: &str = plain!(
    "  utilgate store copy --from .utilgate/utilgate.db --to postgres://ci@db.example:5432/gate"
);

pub const STORE_COPY: &str = plain!(
    "  utilgate store copy --from .utilgate/utilgate.db --to postgres://ci@db.example:5432/gate
  utilgate store copy --from \"$UTILGATE_DB\" --to backup.db --format json"
);

pub const RUNS: &str = plain!(
    "  utilgate runs list --limit 5
  utilgate runs show 42"
);

pub const RUNS_LIST: &str = plain!(
    "  utilgate runs list
  utilgate runs list --branch main --gpu h100-sxm --limit 50 --format json"
);

pub const RUNS_SHOW: &str = plain!(
    "  utilgate runs show           # the latest run
  utilgate runs show 42 --format json"
);

pub const CONFIG: &str = plain!(
    "  utilgate config check --config utilgate.toml
  utilgate config default > utilgate.toml"
);

pub const CONFIG_CHECK: &str = plain!(
    "  utilgate config check
  utilgate config check --config examples/cpu-decode/utilgate.toml --format json"
);

pub const CONFIG_DEFAULT: &str = plain!("  utilgate config default > utilgate.toml");

pub const REPORT: &str = plain!(
    "  utilgate report                              # the latest run, as the PR comment's Markdown
  utilgate report 42 --format html --out report.html
  utilgate report --group nightly-42 --format junit --out junit.xml"
);

pub const PUBLISH: &str = gating!(
    "  utilgate publish                             # in Actions: the latest run, to its pull request
  utilgate publish --workflow-run --db artifact/utilgate.db
  utilgate publish 42 --pr 17 --sha 0123abc --report-dir reports/"
);

pub const AB: &str = gating!(
    "  git worktree add ../base origin/main
  utilgate ab --base ../base --suite decode
  utilgate ab --base ../base --pairs 20 --format json"
);

pub const IMPORT: &str = plain!(
    "  utilgate import serve results/rate4-r*.json --suite nightly-serve
  utilgate import run .utilgate/utilgate.db.rescue-20260101T020000Z.json"
);

pub const IMPORT_SERVE: &str = gating!(
    "  utilgate import serve results/rate4-r*.json --suite nightly-serve
  utilgate import serve sglang.jsonl --model llama-3.1-8b --gpu h100-sxm --no-promote"
);

pub const IMPORT_RUN: &str = plain!(
    "  utilgate import run .utilgate/utilgate.db.rescue-20260101T020000Z.json
  utilgate import run rescue.json --promote"
);

pub const IMPORT_HISTORY: &str = plain!(
    "  utilgate import history nightly.csv --gpu h100-sxm
  utilgate import history gh-pages/dev/bench/data.js --gpu h100-sxm --case-map cases.toml
  utilgate import history bmf/2026-11-01_abc1234.json bmf/2026-11-02_def5678.json --suite decode
  utilgate store copy --from old.db --to .utilgate/utilgate.db   # another utilgate store"
);

pub const PROBE: &str = plain!(
    "  utilgate probe                               # needs an NVIDIA GPU
  utilgate probe --gpu h100-sxm --no-store --format json"
);

pub const GPUS: &str = plain!(
    "  utilgate gpus
  utilgate gpus --format json"
);

pub const COMPLETIONS: &str = plain!(
    "  utilgate completions bash > ~/.local/share/bash-completion/completions/utilgate
  utilgate completions zsh > ~/.zfunc/_utilgate"
);

pub const MAN: &str = plain!(
    "  utilgate man > utilgate.1 && man ./utilgate.1
  utilgate man --out-dir target/man"
);

pub const HISTORY: &str = plain!(
    "  utilgate history decode/llama-3.1-8b/bf16/decode/b8/c4096
  utilgate history b8/c4096 --nights 60 --format json"
);

pub const CHANGES: &str = plain!(
    "  utilgate changes --since 2026-11-01
  utilgate changes --suite decode --max-pvalue 0.001 --format json"
);

pub const SITE: &str = plain!(
    "  utilgate site --out site
  utilgate site --out site --since 2026-06-01 --branch main --spark-nights 60

  Open site/index.html in a browser, or publish the directory to GitHub Pages
  (docs/site.md). Run it again after each night: only changed pages are rewritten."
);

pub const BISECT: &str = plain!(
    "  utilgate bisect --good 41 --bad 42
  utilgate bisect --good 41 --bad 42 --case decode/llama-3.1-8b/bf16/decode/b8/c4096 --format json
  git bisect start <bad-sha> <good-sha>
  git bisect run utilgate bisect --good 41 --bad 42 --case decode/llama-3.1-8b/bf16/decode/b8/c4096 --run

  --run exits 0 (good), 1 (bad), 125 (cannot be tested: skip) or 128 (abort)."
);

pub const TRACE: &str = plain!(
    "  utilgate trace show traces/worker0.1733000000.pt.trace.json.gz
  utilgate trace diff then.json.gz now.json.gz
  utilgate trace show report.nsys-rep        # nsys export --type sqlite runs first
  utilgate trace diff then.ncu.csv now.ncu.csv"
);

pub const TRACE_SHOW: &str = plain!(
    "  utilgate trace show traces/worker0.1733000000.pt.trace.json.gz --top 20
  utilgate trace show 42 --case decode/llama-3.1-8b/bf16/decode/b8/c4096 --format json"
);

pub const TRACE_DIFF: &str = plain!(
    "  utilgate trace diff baseline.json.gz now.json.gz --format json
  utilgate trace diff 40 42 --case decode/llama-3.1-8b/bf16/decode/b8/c4096"
);

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every visible subcommand, at every depth, ends its help with examples and its exit
    /// codes, and every argument says what it is for.
    #[test]
    fn every_subcommand_has_examples_exit_codes_and_argument_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let after = cmd
                .get_after_help()
                .map(ToString::to_string)
                .unwrap_or_default();
            if !after.contains("Examples:\n  ") || !after.contains("Exit codes:") {
                missing.push(format!("{path}: no examples or exit codes"));
            }
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") || arg.is_hide_set() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}: no help text"));
                }
            }
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&crate::cli::Cli::command(), "utilgate", &mut missing);
        assert!(missing.is_empty(), "{}", missing.join("\n"));
    }

    /// The examples name only subcommands that exist.
    #[test]
    fn examples_name_real_subcommands() {
        let cli = crate::cli::Cli::command();
        let names: Vec<&str> = cli.get_subcommands().map(clap::Command::get_name).collect();
        for text in [
            super::MAIN,
            super::RUN,
            super::AB,
            super::TRACE,
            super::IMPORT,
        ] {
            for line in text
                .lines()
                .filter(|l| l.trim_start().starts_with("utilgate "))
            {
                let sub = line.split_whitespace().nth(1).unwrap_or_default();
                assert!(names.contains(&sub), "{line}");
            }
        }
    }
}
