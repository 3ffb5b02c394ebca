//! A pull request's gate comes from its base branch: the pull request's tree supplies the suites
//! and the harness, but `[gate]` (`fail_on`, thresholds, `baseline_branch`, ...), the status's
//! name (`[report] status_context`), each suite's
//! thresholds and the committed baselines a `run --baselines` judges against are read from the
//! base commit (`git show BASE:path`), so a pull request cannot grade itself (`fail_on = []`, a
//! looser threshold, an edited `baselines/` file). What the pull request changed is named; where
//! the base cannot be read the run says that its gate settings were not verified. Runs `git`.

#![expect(
    clippy::disallowed_methods,
    reason = "the base branch's baselines are files"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::config::{Config, GateConfig, LoadedConfig, SuiteConfig};
use crate::github::EventInfo;
use crate::output;

/// What a pull request's run took from its base branch.
#[derive(Debug, Default)]
pub(crate) struct BaseGate {
    /// One line per setting the pull request changed (the base's was used), or the warning that
    /// the settings were not verified.
    pub(crate) notes: Vec<String>,
    /// The base's copy of the `--baselines` files, to judge against instead of the head's.
    pub(crate) baselines: Option<BaseBaselines>,
}

/// The base branch's baseline files, written to a temporary directory for the run.
#[derive(Debug)]
pub(crate) struct BaseBaselines {
    _dir: tempfile::TempDir,
    pub(crate) path: PathBuf,
}

/// Run `git` in `dir`: its stdout, or why it failed (its stderr's first line).
fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: reading the base branch's config from the checkout"
    )]
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("git could not start: {e}"))?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err.lines().next().unwrap_or("git failed").trim().to_owned())
    }
}

/// For a pull request's run, replace the head's gate settings in `loaded` with the base
/// commit's, and read the base's copy of `baselines`. Nothing for a run that is not for a pull
/// request. Where the base cannot be read, the head's settings stay, with a warning.
pub(crate) fn apply(
    loaded: &mut LoadedConfig,
    baselines: Option<&Path>,
    event: Option<&EventInfo>,
) -> BaseGate {
    let Some(event) = event else {
        return BaseGate::default();
    };
    let mut out = BaseGate::default();
    match read_base(loaded, event) {
        Ok((base_sha, base)) => {
            out.notes = take_gate(&mut loaded.config, &base, &base_sha);
            if let Some(files) = baselines {
                match base_baselines(files, &base_sha) {
                    Ok((copy, changed)) => {
                        out.notes.extend(changed);
                        out.baselines = Some(copy);
                    }
                    Err(why) => out.notes.push(unverified(&format!(
                        "the base branch's {} could not be read ({why}); the pull request's own baselines were used",
                        files.display()
                    ))),
                }
            }
        }
        Err(why) => out.notes.push(unverified(&why)),
    }
    for note in &out.notes {
        output::warn(note);
    }
    out
}

fn is_json(name: &str) -> bool {
    Path::new(name)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"))
}

fn unverified(why: &str) -> String {
    format!(
        "the gate settings were not verified against the base branch: {why}; this run uses the pull request's own [gate], thresholds and baselines, which the pull request can edit"
    )
}

/// The base commit's config: the commit, and the config parsed.
fn read_base(loaded: &LoadedConfig, event: &EventInfo) -> Result<(String, Config), String> {
    let base = event
        .base_sha
        .as_deref()
        .filter(|s| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or("the pull request event names no base commit (pull_request.base.sha)")?;
    let dir = &loaded.dir;
    git(dir, &["rev-parse", "--git-dir"])
        .map_err(|why| format!("{} is not in a git checkout ({why})", loaded.path.display()))?;
    let object = format!("{base}^{{commit}}");
    git(dir, &["cat-file", "-e", &object]).map_err(|_| {
        format!(
            "the base commit {} is not in this checkout (check out with fetch-depth: 0, or `git fetch origin {base}`)",
            short(base)
        )
    })?;
    let name = loaded
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let spec = format!("{base}:./{name}");
    let text = git(dir, &["show", &spec]).map_err(|why| {
        format!(
            "the base commit {} has no {name} beside this one ({why})",
            short(base)
        )
    })?;
    let text =
        String::from_utf8(text).map_err(|_| format!("the base commit's {name} is not UTF-8"))?;
    let origin = PathBuf::from(format!("{}:{name}", short(base)));
    let config = crate::config::parse(&text, &origin)
        .map_err(|e| format!("the base commit's {name} does not parse ({e})"))?;
    Ok((base.to_owned(), config))
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// A value as a note shows it: compact JSON.
fn shown<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Each top-level key of two serialised tables that differs: (key, head, base).
fn differences<T: serde::Serialize>(head: &T, base: &T) -> Vec<(String, String, String)> {
    let as_map = |v: &T| -> BTreeMap<String, serde_json::Value> {
        serde_json::to_value(v)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    };
    let (head, base) = (as_map(head), as_map(base));
    let keys: std::collections::BTreeSet<&String> = head.keys().chain(base.keys()).collect();
    keys.into_iter()
        .filter(|k| head.get(*k) != base.get(*k))
        .map(|k| {
            let show = |v: Option<&serde_json::Value>| v.map_or("(unset)".to_owned(), shown);
            (k.clone(), show(head.get(k)), show(base.get(k)))
        })
        .collect()
}

/// The per-suite settings that decide a verdict, as one table.
#[derive(serde::Serialize)]
struct SuiteGate<'a> {
    max_drop_pct: &'a Option<f64>,
    gate_on: &'a Option<Vec<crate::compare::GateStat>>,
    case: &'a Vec<crate::config::CaseOverride>,
    max_change_pct: &'a Option<f64>,
    gated: &'a Option<Vec<String>>,
}

fn suite_gate(s: &SuiteConfig) -> SuiteGate<'_> {
    SuiteGate {
        max_drop_pct: &s.max_drop_pct,
        gate_on: &s.gate_on,
        case: &s.cases,
        max_change_pct: &s.max_change_pct,
        gated: &s.gated,
    }
}

/// Put the base's `[gate]` and each suite's thresholds into `head`; one note per difference.
fn take_gate(head: &mut Config, base: &Config, base_sha: &str) -> Vec<String> {
    let used = format!("the base branch's settings ({}) were used", short(base_sha));
    let mut notes = Vec::new();
    for (key, from, to) in differences::<GateConfig>(&head.gate, &base.gate) {
        notes.push(format!(
            "this pull request changes [gate] {key}: {to} -> {from}; {used}"
        ));
    }
    head.gate = base.gate.clone();
    // The status's name is the base's too: a pull request must not post its result under
    // another required check's name.
    if head.report.status_context != base.report.status_context {
        notes.push(format!(
            "this pull request changes [report] status_context: {} -> {}; {used}",
            shown(&base.report.status_context),
            shown(&head.report.status_context)
        ));
        head.report
            .status_context
            .clone_from(&base.report.status_context);
    }
    for suite in &mut head.suites {
        let Some(theirs) = base.suites.iter().find(|b| b.name == suite.name) else {
            notes.push(format!(
                "suite {:?} is not in the base branch's config: its thresholds are the pull request's (its cases have no baseline there)",
                suite.name
            ));
            continue;
        };
        for (key, from, to) in differences(&suite_gate(suite), &suite_gate(theirs)) {
            notes.push(format!(
                "this pull request changes [[suite]] {:?} {key}: {to} -> {from}; {used}",
                suite.name
            ));
        }
        suite.max_drop_pct = theirs.max_drop_pct;
        suite.gate_on.clone_from(&theirs.gate_on);
        suite.cases.clone_from(&theirs.cases);
        suite.max_change_pct = theirs.max_change_pct;
        suite.gated.clone_from(&theirs.gated);
    }
    notes
}

/// The base commit's copy of the baseline files at `files` (a file or a directory, relative
/// to the working directory, as `--baselines` names it), and a note per file the pull request
/// changed, added or removed.
fn base_baselines(files: &Path, base: &str) -> Result<(BaseBaselines, Vec<String>), String> {
    let rel = files.to_string_lossy().replace('\\', "/");
    if files.is_absolute() || rel.split('/').any(|p| p == "..") {
        return Err(format!(
            "{} is not a path inside the checkout",
            files.display()
        ));
    }
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let rel = rel.trim_start_matches("./").trim_end_matches('/');
    let spec = format!("{base}:./{rel}");
    let kind = git(&cwd, &["cat-file", "-t", &spec])
        .map(|k| String::from_utf8_lossy(&k).trim().to_owned());
    let dir = tempfile::Builder::new()
        .prefix("utilgate-base-baselines-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let mut names: Vec<String> = match kind.as_deref() {
        Ok("tree") => {
            let listed = git(&cwd, &["ls-tree", "--name-only", &spec])?;
            String::from_utf8_lossy(&listed)
                .lines()
                .filter(|n| is_json(n))
                .map(str::to_owned)
                .collect()
        }
        _ => Vec::new(),
    };
    names.sort();
    let mut notes = Vec::new();
    if kind.is_err() {
        // The base has none: the pull request's own are not judged against.
        notes.push(format!(
            "the base branch ({}) has no {}: this run judges against no baselines, not the pull request's",
            short(base),
            files.display()
        ));
    }
    let used = format!("the base branch's baselines ({}) were used", short(base));
    let write = |name: &str, blob: &str| -> Result<Vec<u8>, String> {
        let bytes = git(&cwd, &["show", &format!("{base}:./{blob}")])?;
        std::fs::write(dir.path().join(name), &bytes).map_err(|e| e.to_string())?;
        Ok(bytes)
    };
    let path = if kind.as_deref() == Ok("blob") {
        let name = files.file_name().map_or("baselines.json".to_owned(), |n| {
            n.to_string_lossy().into_owned()
        });
        let bytes = write(&name, rel)?;
        if std::fs::read(files).ok().as_deref() != Some(bytes.as_slice()) {
            notes.push(format!(
                "this pull request changes {}; {used}",
                files.display()
            ));
        }
        dir.path().join(name)
    } else {
        for name in &names {
            let bytes = write(name, &format!("{rel}/{name}"))?;
            let head = files.join(name);
            if std::fs::read(&head).ok().as_deref() != Some(bytes.as_slice()) {
                notes.push(format!(
                    "this pull request changes {}; {used}",
                    head.display()
                ));
            }
        }
        if files.is_dir()
            && let Ok(entries) = std::fs::read_dir(files)
        {
            let mut added: Vec<String> = entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| is_json(n) && !names.contains(n))
                .collect();
            added.sort();
            for name in added {
                notes.push(format!(
                    "this pull request adds {}; the base branch has no such baselines, so it is not judged against",
                    files.join(name).display()
                ));
            }
        }
        dir.path().to_path_buf()
    };
    Ok((BaseBaselines { _dir: dir, path }, notes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_gate_replaces_the_heads_and_each_change_is_named() {
        let text = |gate: &str, drop: &str| {
            format!(
                "[gate]\n{gate}\n[[suite]]\nname = \"decode\"\ncommand = \"x\"\nmodels = [\"m\"]\n{drop}\n"
            )
        };
        let origin = Path::new("utilgate.toml");
        let mut head = crate::config::parse(&text("fail_on = []", "max_drop_pct = 50.0"), origin)
            .expect("parses");
        let base = crate::config::parse(&text("", ""), origin).expect("parses");
        let notes = take_gate(&mut head, &base, "0123456789abcdef0123");
        assert_eq!(head.gate.fail_on, base.gate.fail_on);
        assert_eq!(head.suites[0].max_drop_pct, None);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(
            notes[0],
            "this pull request changes [gate] fail_on: [\"regressed\",\"invalid\"] -> []; the base branch's settings (0123456789ab) were used"
        );
        assert!(
            notes[1].contains("\"decode\" max_drop_pct: null -> 50.0"),
            "{notes:?}"
        );
    }
}
