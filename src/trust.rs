//! What may run next to what (DESIGN.md §13): the checks that keep a write token away from
//! pull-request code and a stored run away from the wrong pull request. Pure: the environment,
//! git's config and the stored run's facts arrive as values; nothing here reads or posts.
//!
//! - [`credentials`]: the credentials a process started now could read: a GitHub token in
//!   utilgate's own environment (a harness can read `/proc/<utilgate>/environ`, so removing it
//!   from the harness's environment is not enough), one that `actions/checkout` persisted in
//!   the checkout's git config, or the password of a `PostgreSQL` store (`PGPASSWORD`, or a
//!   `postgres://` URL that carries one, in the environment or on the command line). With the
//!   store's password a pull request's harness could rewrite the shared history and its
//!   baselines. `utilgate run` refuses to start a harness while any is found, unless told the
//!   job is trusted.
//! - [`check_target`]: a stored run is published only for the pull request and head commit it
//!   was measured for.
//! - [`CheckConclusion`]: what the conclusion of a pull-request check lets the publishing
//!   workflow post (only success and failure carry verdicts).

use std::fmt;

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

/// The prefixes GitHub gives its tokens (personal, OAuth, user-to-server, installation,
/// refresh, fine-grained): a value shaped like one counts whatever the variable is called.
pub const TOKEN_PREFIXES: &[&str] = &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"];

/// One credential found, by where it is; never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// A variable named like a token.
    Variable(String),
    /// A variable whose value looks like a GitHub token.
    TokenShaped(String),
    /// A git config key that sends an `Authorization` header (what `actions/checkout` leaves
    /// unless `persist-credentials: false`).
    GitConfig(String),
    /// A variable whose value is a `postgres://` URL with a password in it.
    PasswordUrl(String),
    /// The store this command was given (`--db` or the config's `[store] url`) is a
    /// `postgres://` URL with a password in it.
    StorePassword,
}

impl Credential {
    /// A database password rather than a GitHub credential.
    #[must_use]
    pub fn is_database(&self) -> bool {
        match self {
            Credential::PasswordUrl(_) | Credential::StorePassword => true,
            Credential::Variable(name) => PASSWORD_VARIABLES.contains(&name.as_str()),
            Credential::TokenShaped(_) | Credential::GitConfig(_) => false,
        }
    }
}

impl fmt::Display for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::Variable(name) => write!(f, "${name} in utilgate's environment"),
            Credential::TokenShaped(name) => {
                write!(f, "${name} in utilgate's environment holds a GitHub token")
            }
            Credential::GitConfig(key) => {
                write!(f, "git config {key} sends the checkout's token")
            }
            Credential::PasswordUrl(name) => {
                write!(
                    f,
                    "${name} in utilgate's environment holds a database URL with its password"
                )
            }
            Credential::StorePassword => {
                write!(
                    f,
                    "the store's URL (--db or [store] url) carries its password"
                )
            }
        }
    }
}

/// The credentials in an environment (name, value pairs), in the store location this command
/// was given (a path or a URL, `None` when it names none), and in the output of
/// `git config --get-regexp '^http\..*\.extraheader$'` (one `key value` per line).
#[must_use]
pub fn credentials<'a>(
    env: impl IntoIterator<Item = (&'a str, &'a str)>,
    store: Option<&str>,
    git_extraheaders: &str,
) -> Vec<Credential> {
    let mut found = Vec::new();
    for (name, value) in env {
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        if TOKEN_VARIABLES.contains(&name) || PASSWORD_VARIABLES.contains(&name) {
            found.push(Credential::Variable(name.to_owned()));
        } else if TOKEN_PREFIXES.iter().any(|p| value.starts_with(p)) {
            found.push(Credential::TokenShaped(name.to_owned()));
        } else if url_password(value).is_some() {
            found.push(Credential::PasswordUrl(name.to_owned()));
        }
    }
    if store.and_then(url_password).is_some() {
        found.push(Credential::StorePassword);
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

/// The password a `postgres://` (or `postgresql://`) URL carries, in its user information
/// (`USER:PASSWORD@`) or as a `password=` query parameter; `None` for any other text or a URL
/// without one. Pure; the value is returned only to be masked, never shown.
#[must_use]
pub fn url_password(value: &str) -> Option<&str> {
    let rest = value
        .strip_prefix("postgres://")
        .or_else(|| value.strip_prefix("postgresql://"))?;
    let (authority, query) = match rest.find(['/', '?', '#']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let from_userinfo = authority
        .rsplit_once('@')
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password)
        .filter(|p| !p.is_empty());
    let from_query = || {
        let query = query.split_once('?')?.1;
        let query = query.split('#').next().unwrap_or(query);
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("password="))
            .filter(|p| !p.is_empty())
    };
    from_userinfo.or_else(from_query)
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

    #[test]
    fn tokens_are_found_by_name_and_by_shape_never_shown() {
        let env = [
            ("PATH", "/usr/bin"),
            ("GITHUB_TOKEN", "ghs_abcdef"),
            ("GH_TOKEN", "   "),
            ("MY_PAT", "github_pat_11AAAA"),
            ("HF_TOKEN", "hf_model_hub_read"),
            ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "eyJ0eXAi"),
        ];
        let found = credentials(env, None, "");
        assert_eq!(
            found,
            vec![
                Credential::Variable("ACTIONS_ID_TOKEN_REQUEST_TOKEN".into()),
                Credential::Variable("GITHUB_TOKEN".into()),
                Credential::TokenShaped("MY_PAT".into()),
            ]
        );
        for f in &found {
            let text = f.to_string();
            assert!(
                !text.contains("ghs_abcdef") && !text.contains("github_pat_"),
                "{text}"
            );
        }
        assert!(credentials([("HOME", "/root")], None, "").is_empty());
    }

    #[test]
    fn a_persisted_checkout_header_counts() {
        let git = "http.https://github.com/.extraheader AUTHORIZATION: basic eC1hY2Nlc3M=\n\
                   http.https://example.com/.extraheader X-Trace: 1\n";
        assert_eq!(
            credentials([], None, git),
            vec![Credential::GitConfig(
                "http.https://github.com/.extraheader".into()
            )]
        );
        assert!(credentials([], None, "").is_empty());
    }

    #[test]
    fn a_database_password_counts_by_name_in_a_url_or_in_the_store_given() {
        let env = [
            ("PGPASSWORD", "hunter2-long"),
            (
                "UTILGATE_DB",
                "postgres://gate:s3cret-pw@db.internal:5432/perf",
            ),
            (
                "DATABASE_URL",
                "postgresql://gate@db/perf?sslmode=require&password=qwerty12",
            ),
            ("PGHOST", "db.internal"),
            ("OTHER_DB", "postgres://gate@db.internal/perf"),
        ];
        let found = credentials(env, Some("postgres://u:pw@localhost/db"), "");
        assert_eq!(
            found,
            vec![
                Credential::PasswordUrl("DATABASE_URL".into()),
                Credential::Variable("PGPASSWORD".into()),
                Credential::PasswordUrl("UTILGATE_DB".into()),
                Credential::StorePassword,
            ]
        );
        for f in &found {
            let text = f.to_string();
            for secret in ["hunter2", "s3cret", "qwerty12", ":pw@"] {
                assert!(!text.contains(secret), "{text}");
            }
        }
        // A store without a password, a file path, or a password-less URL holds none.
        for store in [
            "postgres://gate@db/perf",
            "/var/lib/utilgate/store.db",
            "perf.db",
        ] {
            assert!(credentials([], Some(store), "").is_empty(), "{store}");
        }
    }

    #[test]
    fn url_password_reads_userinfo_and_query_only_of_postgres_urls() {
        assert_eq!(url_password("postgres://u:p%40ss@h/db"), Some("p%40ss"));
        assert_eq!(url_password("postgresql://u:pw@h:5432"), Some("pw"));
        assert_eq!(
            url_password("postgres://u@h/db?password=x1&sslmode=require"),
            Some("x1")
        );
        // An `@` in the path is not user information.
        assert_eq!(url_password("postgres://h/db@x:y"), None);
        assert_eq!(url_password("postgres://u:@h/db"), None);
        assert_eq!(url_password("https://u:pw@proxy:3128"), None);
        assert_eq!(url_password("store.db"), None);
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
