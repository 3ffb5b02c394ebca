//! What may run next to what (DESIGN.md §13): the checks that keep a write token away from
//! pull-request code and a stored run away from the wrong pull request. Pure: the environments,
//! git's config and the stored run's facts arrive as values; nothing here reads or posts.
//!
//! - [`credentials`]: the credentials a process started now could use: a GitHub token or a
//!   database password in utilgate's own environment or in that of a process that started it
//!   (a harness can read `/proc/<pid>/environ` of every process of its user, so removing a
//!   token from the harness's environment, or from utilgate's with a wrapper's `env -u`, is not
//!   enough), one that `actions/checkout` persisted in the checkout's git config, the password
//!   in the store's location (`--db`, or the config file's `[store] url` even when `--db` points
//!   elsewhere), or the `PostgreSQL` store itself: however utilgate logs in to it (a password,
//!   `trust` or `peer` authentication over its socket, `~/.pgpass`), a process of the same user
//!   logs in as that role too. With the store a pull request's harness could rewrite the shared
//!   history and its baselines. `utilgate run` refuses to start a harness while any is found,
//!   unless told the job is trusted. What a value holds is judged in [`secrets`].
//! - [`check_target`]: a stored run is published only for the pull request and head commit it
//!   was measured for.
//! - [`CheckConclusion`]: what the conclusion of a pull-request check lets the publishing
//!   workflow post (only success and failure carry verdicts).

mod secrets;

use std::collections::BTreeSet;
use std::fmt;

pub use secrets::url_password;
pub(crate) use secrets::{Secret, db_password, is_postgres_url, secret_in};

/// Variables that hold a GitHub credential by name (the GitHub CLI's, Actions' own, and the
/// Enterprise forms). Empty values do not count.
pub const TOKEN_VARIABLES: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
];

/// Variables that hold a database password by name (libpq's, which the `PostgreSQL` store reads).
pub const PASSWORD_VARIABLES: &[&str] = &["PGPASSWORD"];

/// Whose environment a variable was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Holder {
    /// utilgate's own.
    Utilgate,
    /// A process that started utilgate, `generation` steps up (1: its parent). Its name is
    /// the kernel's (`/proc/<pid>/comm`), printable ASCII only.
    Ancestor {
        pid: u32,
        name: String,
        generation: usize,
    },
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Utilgate => write!(f, "utilgate's environment"),
            Holder::Ancestor {
                pid,
                name,
                generation,
            } => {
                let who = match generation {
                    1 => "utilgate's parent".to_owned(),
                    2 => "utilgate's grandparent".to_owned(),
                    n => format!("the process {n} levels above utilgate"),
                };
                write!(f, "the environment of {who} (pid {pid}, {name})")
            }
        }
    }
}

/// One process's environment: who holds it and its variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcessEnv {
    pub(crate) holder: Holder,
    pub(crate) vars: Vec<(String, String)>,
}

/// Where a store location came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StoreOrigin {
    /// `--db`, or `UTILGATE_DB` standing in for it.
    Flag,
    /// The config file (its path, as given) `[store] url`.
    Config(String),
}

impl fmt::Display for StoreOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreOrigin::Flag => write!(f, "--db (or $UTILGATE_DB)"),
            StoreOrigin::Config(path) => write!(f, "[store] url in {path}"),
        }
    }
}

/// A store location this command was given, and whether it is the one it opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoreSetting<'a> {
    pub(crate) origin: StoreOrigin,
    pub(crate) location: &'a str,
    pub(crate) opened: bool,
}

/// One credential found, by where it is; never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Credential {
    /// A variable named like a credential.
    Variable { name: String, holder: Holder },
    /// A variable whose value holds a GitHub token ([`Secret::GithubToken`] or
    /// [`Secret::ClassicToken`]).
    Token {
        name: String,
        holder: Holder,
        kind: Secret,
    },
    /// A variable whose value holds a database password (a `postgres://` URL, libpq keywords).
    DbPassword { name: String, holder: Holder },
    /// A git config key that sends an `Authorization` header (what `actions/checkout` leaves
    /// unless `persist-credentials: false`).
    GitConfig(String),
    /// A store location this command was given carries a password.
    StorePassword(StoreOrigin),
    /// The store this command opens is `PostgreSQL`: whatever logs utilgate in logs in a harness
    /// of the same user too (#28: `trust` or `peer` authentication over a Unix socket needs no
    /// password at all).
    PostgresStore(StoreOrigin),
}

impl Credential {
    /// A database credential rather than a GitHub one.
    #[must_use]
    pub(crate) fn is_database(&self) -> bool {
        match self {
            Credential::DbPassword { .. }
            | Credential::StorePassword(_)
            | Credential::PostgresStore(_) => true,
            Credential::Variable { name, .. } => PASSWORD_VARIABLES.contains(&name.as_str()),
            Credential::Token { .. } | Credential::GitConfig(_) => false,
        }
    }

    /// Found in the environment of a process that started utilgate, not in utilgate's own.
    #[must_use]
    pub(crate) fn is_inherited(&self) -> bool {
        matches!(
            self,
            Credential::Variable { holder, .. }
                | Credential::Token { holder, .. }
                | Credential::DbPassword { holder, .. }
                if *holder != Holder::Utilgate
        )
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Variable { name, holder } => write!(f, "${name} in {holder}"),
            Credential::Token {
                name,
                holder,
                kind: Secret::ClassicToken,
            } => write!(
                f,
                "${name} in {holder} holds a classic GitHub token (40 hex digits beside a token-like name or word)"
            ),
            Credential::Token { name, holder, .. } => {
                write!(f, "${name} in {holder} holds a GitHub token")
            }
            Credential::DbPassword { name, holder } => write!(
                f,
                "${name} in {holder} holds a database password (a postgres:// URL or libpq's password= keyword)"
            ),
            Credential::GitConfig(key) => {
                write!(f, "git config {key} sends the checkout's token")
            }
            Credential::StorePassword(origin) => {
                write!(f, "the store location in {origin} carries its password")
            }
            Credential::PostgresStore(origin) => write!(
                f,
                "the store in {origin} is a PostgreSQL database: however utilgate logs in (a password, trust or peer authentication over its socket, ~/.pgpass), a harness of the same user logs in as the same role"
            ),
        }
    }
}

/// What one variable is, by its name and then by its value, if a credential.
fn judge_variable(name: &str, value: &str, holder: &Holder) -> Option<Credential> {
    if value.trim().is_empty() {
        return None;
    }
    let by_name = TOKEN_VARIABLES.contains(&name) || PASSWORD_VARIABLES.contains(&name);
    let secret = if by_name {
        None
    } else {
        Some(secret_in(name, value)?)
    };
    let (name, holder) = (name.to_owned(), holder.clone());
    Some(match secret {
        None => Credential::Variable { name, holder },
        Some(Secret::DbPassword) => Credential::DbPassword { name, holder },
        Some(kind) => Credential::Token { name, holder, kind },
    })
}

/// The credentials in the environments of utilgate and the processes that started it (nearest
/// first: a variable found nearer is named there only), in the store locations this command was
/// given, and in the output of `git config --get-regexp '^http\..*\.extraheader$'` (one
/// `key value` per line).
#[must_use]
pub(crate) fn credentials(
    envs: &[ProcessEnv],
    stores: &[StoreSetting<'_>],
    git_extraheaders: &str,
) -> Vec<Credential> {
    let mut found = Vec::new();
    let mut named = BTreeSet::new();
    for env in envs {
        for (name, value) in &env.vars {
            if named.contains(name.as_str()) {
                continue;
            }
            if let Some(credential) = judge_variable(name, value, &env.holder) {
                named.insert(name.as_str());
                found.push(credential);
            }
        }
    }
    for store in stores {
        if db_password(store.location) {
            found.push(Credential::StorePassword(store.origin.clone()));
        } else if store.opened && is_postgres_url(store.location) {
            found.push(Credential::PostgresStore(store.origin.clone()));
        }
    }
    for line in git_extraheaders.lines() {
        let (key, value) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        if value.to_ascii_lowercase().contains("authorization") {
            found.push(Credential::GitConfig(key.to_owned()));
        }
    }
    found.sort_by_key(ToString::to_string);
    found.dedup();
    found
}

/// Where a stored run says it was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunFacts<'a> {
    pub id: i64,
    pub pr_number: Option<u64>,
    /// The pull request's head commit when measured for one, else the measured commit.
    pub head_sha: Option<&'a str>,
    pub branch: Option<&'a str>,
}

/// Where publishing is about to post.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Target<'a> {
    pub pr_number: Option<u64>,
    pub sha: Option<&'a str>,
}

/// A stored run that does not belong where it was about to be posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub run: String,
    pub target: String,
    /// What differs: "pull request" or "head commit".
    pub what: &'static str,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the {} differs: {}, but this publish is for {}",
            self.what, self.run, self.target
        )
    }
}

fn describe_run(run: &RunFacts<'_>) -> String {
    let pr = run.pr_number.map_or_else(
        || {
            format!(
                "no pull request (branch {})",
                run.branch.unwrap_or("unknown")
            )
        },
        |pr| format!("pull request #{pr}"),
    );
    let at = run
        .head_sha
        .map_or_else(|| "an unrecorded commit".to_owned(), short);
    format!("run {} was measured for {pr} at {at}", run.id)
}

fn describe_target(target: &Target<'_>) -> String {
    let pr = target.pr_number.map_or_else(
        || "no pull request".to_owned(),
        |pr| format!("pull request #{pr}"),
    );
    match target.sha {
        Some(sha) => format!("{pr} at {}", short(sha)),
        None => pr,
    }
}

/// The first 12 characters of a commit id (char-safe: ids come from files and flags).
fn short(sha: &str) -> String {
    sha.chars().take(12).collect()
}

/// Two commit ids name the same commit: equal, or one an abbreviation (7+ hex digits) of the
/// other, case-insensitively.
fn same_commit(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim().to_ascii_lowercase(), b.trim().to_ascii_lowercase());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= 7 && long.starts_with(&short)
}

/// Whether a stored run may be posted to `target`: a target pull request must be the run's
/// own, and a target commit the run's head commit. A run for a pull request is never posted
/// without one (it would land on a branch's commit as if measured there).
pub fn check_target(run: &RunFacts<'_>, target: &Target<'_>) -> Result<(), Mismatch> {
    let mismatch = |what| Mismatch {
        run: describe_run(run),
        target: describe_target(target),
        what,
    };
    if target.pr_number != run.pr_number && (target.pr_number.is_some() || target.sha.is_some()) {
        return Err(mismatch("pull request"));
    }
    if let Some(sha) = target.sha {
        match run.head_sha {
            Some(head) if same_commit(head, sha) => {}
            _ => return Err(mismatch("head commit")),
        }
    }
    Ok(())
}

/// The conclusion of the pull-request check a `workflow_run` event reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckConclusion {
    /// `success` or `failure`: the check ran to its end, its store holds verdicts.
    Finished,
    /// Anything else (`cancelled`, `timed_out`, `skipped`, `action_required`, `stale`,
    /// `neutral`, `startup_failure`, none): nothing was measured to the end.
    NotMeasured(String),
}

impl CheckConclusion {
    #[must_use]
    pub fn from_event(conclusion: Option<&str>) -> CheckConclusion {
        match conclusion {
            Some("success" | "failure") => CheckConclusion::Finished,
            Some(other) => CheckConclusion::NotMeasured(other.to_owned()),
            None => CheckConclusion::NotMeasured("not finished".to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";

    /// utilgate's own environment of `vars`.
    fn own(vars: &[(&str, &str)]) -> ProcessEnv {
        ProcessEnv {
            holder: Holder::Utilgate,
            vars: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        }
    }

    fn var(name: &str) -> Credential {
        Credential::Variable {
            name: name.into(),
            holder: Holder::Utilgate,
        }
    }

    fn flag(location: &str) -> StoreSetting<'_> {
        StoreSetting {
            origin: StoreOrigin::Flag,
            location,
            opened: true,
        }
    }

    #[test]
    fn tokens_are_found_by_name_and_by_shape_never_shown() {
        let env = own(&[
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghs_abcdef"),
            ("GH_TOKEN", "   "),
            ("MY_PAT", "github_pat_11AAAA"),
            ("HF_TOKEN", "hf_model_hub_read"),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "eyJ0eXAi"),
            (
                "AUTH_HEADER",
                "Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            ),
            ("GH_PAT", "0123456789abcdef0123456789abcdef01234567"),
            ("GITHUB_SHA", "0123456789abcdef0123456789abcdef01234567"),
        ]);
        let found = credentials(&[env], &[], "");
        let token = |name: &str, kind| Credential::Token {
            name: name.into(),
            holder: Holder::Utilgate,
            kind,
        };
        assert_eq!(
            found,
            vec![
                var("ACTIONS_ID_TOKEN_REQUEST_TOKEN"),
                token("AUTH_HEADER", Secret::GithubToken),
                token("GH_PAT", Secret::ClassicToken),
                var("GITHUB_TOKEN"),
                token("MY_PAT", Secret::GithubToken),
            ]
        );
        for f in &found {
            let text = f.to_string();
            for secret in ["ghs_abcdef", "github_pat_", "ghp_", "0123456789abcdef"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
        assert!(credentials(&[own(&[("HOME", "/root")])], &[], "").is_empty());
    }

    /// #28: a wrapper that unsets the token before starting utilgate (`env -u GITHUB_TOKEN`)
    /// still holds it, and a harness can read the wrapper's environment.
    #[test]
    fn a_token_in_a_process_that_started_utilgate_counts_named_where_it_is() {
        let parent = ProcessEnv {
            holder: Holder::Ancestor {
                pid: 4242,
                name: "sh".into(),
                generation: 1,
            },
            vars: vec![
                ("GITHUB_TOKEN".into(), "ghs_fromtheparentshell0123".into()),
                ("PGPASSWORD".into(), "hunter2-long".into()),
            ],
        };
        // The same variable nearer (utilgate's own) is named there only.
        let found = credentials(&[own(&[("PGPASSWORD", "hunter2-long")]), parent], &[], "");
        assert_eq!(found.len(), 2, "{found:?}");
        let text: Vec<String> = found.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "$GITHUB_TOKEN in the environment of utilgate's parent (pid 4242, sh)",
                "$PGPASSWORD in utilgate's environment",
            ]
        );
        assert!(found[0].is_inherited() && !found[1].is_inherited());
        assert!(!found[0].is_database() && found[1].is_database());
    }

    #[test]
    fn a_persisted_checkout_header_counts() {
        let git = "http.https://github.com/.extraheader AUTHORIZATION: basic eC1hY2Nlc3M=\n\
                   http.https://example.com/.extraheader X-Trace: 1\n";
        assert_eq!(
            credentials(&[], &[], git),
            vec![Credential::GitConfig(
                "http.https://github.com/.extraheader".into()
            )]
        );
        assert!(credentials(&[], &[], "").is_empty());
    }

    #[test]
    fn a_database_password_counts_by_name_in_a_url_or_in_libpq_keywords() {
        let env = own(&[
            ("PGPASSWORD", "hunter2-long"),
            (
                "UTILGATE_DB",
                "postgres://gate:s3cret-pw@db.internal:5432/perf",
            ),
            (
                "DATABASE_URL",
                "postgresql://gate@db/perf?sslmode=require&password=qwerty12",
            ),
            (
                "PG_DSN",
                "host=db.internal user=gate password=libpq-pw9 dbname=perf",
            ),
            ("PGHOST", "db.internal"),
            ("OTHER_DB", "postgres://gate@db.internal/perf"),
        ]);
        let found = credentials(&[env], &[], "");
        let db = |name: &str| Credential::DbPassword {
            name: name.into(),
            holder: Holder::Utilgate,
        };
        assert_eq!(
            found,
            vec![
                db("DATABASE_URL"),
                var("PGPASSWORD"),
                db("PG_DSN"),
                db("UTILGATE_DB"),
            ]
        );
        for f in &found {
            assert!(f.is_database());
            let text = f.to_string();
            for secret in ["hunter2", "s3cret", "qwerty12", "libpq-pw9"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
    }

    /// #28: the store's location holds a password wherever it is given (the config file's even
    /// when `--db` points elsewhere), and a `PostgreSQL` store that utilgate opens counts with
    /// no password at all (a Unix socket with `trust` or `peer` authentication).
    #[test]
    fn the_stores_given_count_by_password_and_an_opened_postgres_store_by_itself() {
        let config = |location, opened| StoreSetting {
            origin: StoreOrigin::Config("ci/utilgate.toml".into()),
            location,
            opened,
        };
        assert_eq!(
            credentials(&[], &[flag("postgres://u:pw@localhost/db")], ""),
            vec![Credential::StorePassword(StoreOrigin::Flag)]
        );
        // --db points at a file; the config's URL still carries a password a harness can read.
        let found = credentials(
            &[],
            &[
                flag("pr.db"),
                config("postgres://gate:s3cret@db/perf", false),
            ],
            "",
        );
        assert_eq!(
            found,
            vec![Credential::StorePassword(StoreOrigin::Config(
                "ci/utilgate.toml".into()
            ))]
        );
        assert_eq!(
            found[0].to_string(),
            "the store location in [store] url in ci/utilgate.toml carries its password"
        );
        // No password, but opened: trust or peer authentication lets the harness in too.
        for url in [
            "postgres://utilgate@localhost/perf?host=/var/run/postgresql",
            "postgresql:///perf",
            "postgres://gate@db.internal/perf",
        ] {
            assert_eq!(
                credentials(&[], &[flag(url)], ""),
                vec![Credential::PostgresStore(StoreOrigin::Flag)],
                "{url}"
            );
            assert_eq!(
                credentials(&[], &[config(url, true)], "")[0],
                Credential::PostgresStore(StoreOrigin::Config("ci/utilgate.toml".into()))
            );
            // One utilgate does not open (a pull request's run on its own file) holds nothing
            // a harness could not find on its own.
            assert!(credentials(&[], &[flag("pr.db"), config(url, false)], "").is_empty());
        }
        // A store file path holds none; a keyword string with a password given as --db does.
        for store in ["/var/lib/utilgate/store.db", "perf.db"] {
            assert!(credentials(&[], &[flag(store)], "").is_empty(), "{store}");
        }
        assert_eq!(
            credentials(&[], &[flag("host=db password=x9")], ""),
            vec![Credential::StorePassword(StoreOrigin::Flag)]
        );
    }

    fn pr_run(pr: Option<u64>, head: Option<&str>) -> RunFacts<'_> {
        RunFacts {
            id: 5,
            pr_number: pr,
            head_sha: head,
            branch: Some("main"),
        }
    }

    #[test]
    fn runs_post_only_where_they_were_measured() {
        let target = Target {
            pr_number: Some(7),
            sha: Some(SHA),
        };
        assert_eq!(check_target(&pr_run(Some(7), Some(SHA)), &target), Ok(()));
        // Abbreviated and upper-case ids name the same commit; too short an id names none.
        assert_eq!(
            check_target(&pr_run(Some(7), Some("EC26C3E5")), &target),
            Ok(())
        );
        assert!(check_target(&pr_run(Some(7), Some("ec26")), &target).is_err());

        // The false green of issue #12: main's nightly posted to a pull request.
        let err = check_target(&pr_run(None, Some("0123456789abcdef")), &target)
            .expect_err("a nightly is not the pull request's run");
        assert_eq!(err.what, "pull request");
        assert_eq!(
            err.to_string(),
            "the pull request differs: run 5 was measured for no pull request (branch main) at \
             0123456789ab, but this publish is for pull request #7 at ec26c3e57ca3"
        );
        let err = check_target(&pr_run(Some(8), Some(SHA)), &target).expect_err("other PR");
        assert_eq!(err.what, "pull request");
        let err = check_target(&pr_run(Some(7), Some("aaaaaaaaaaaa")), &target)
            .expect_err("an older push of the same pull request");
        assert_eq!(err.what, "head commit");
        let err = check_target(&pr_run(Some(7), None), &target).expect_err("no commit stored");
        assert!(err.to_string().contains("an unrecorded commit"), "{err}");

        // A nightly publishing for its own commit, with no pull request.
        let nightly = Target {
            pr_number: None,
            sha: Some("0123456789abcdef"),
        };
        assert_eq!(
            check_target(&pr_run(None, Some("0123456789abcdef")), &nightly),
            Ok(())
        );
        // A pull request's run never lands on a branch commit as if measured there.
        assert!(check_target(&pr_run(Some(7), Some("0123456789abcdef")), &nightly).is_err());
        // No target at all (files only) checks nothing.
        assert_eq!(
            check_target(&pr_run(Some(7), None), &Target::default()),
            Ok(())
        );
    }

    #[test]
    fn only_success_and_failure_carry_verdicts() {
        assert_eq!(
            CheckConclusion::from_event(Some("success")),
            CheckConclusion::Finished
        );
        assert_eq!(
            CheckConclusion::from_event(Some("failure")),
            CheckConclusion::Finished
        );
        for other in [
            "cancelled",
            "timed_out",
            "skipped",
            "neutral",
            "action_required",
            "stale",
            "startup_failure",
        ] {
            assert_eq!(
                CheckConclusion::from_event(Some(other)),
                CheckConclusion::NotMeasured(other.into())
            );
        }
        assert!(matches!(
            CheckConclusion::from_event(None),
            CheckConclusion::NotMeasured(_)
        ));
    }
}
