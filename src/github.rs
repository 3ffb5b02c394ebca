//! GitHub: the sticky pull-request comment and the commit statuses, through octocrab. The only
//! async code in the crate: `publish` builds a current-thread tokio runtime and blocks on it.
//! Does network I/O; decides nothing (what to post arrives as a [`Publication`]). The Actions
//! event payload is read in `event.rs` (text in, facts out), check runs are in `checks.rs`.
//!
//! The token lives in [`Token`], whose `Debug` prints `***`; octocrab errors are turned into
//! messages with `Display` (their `Debug` carries a backtrace), and never include the token.

use std::fmt;
use std::time::Duration;

use octocrab::Octocrab;
use octocrab::models::StatusState;
use thiserror::Error;

mod checks;
mod event;
mod issue;

pub use issue::{ISSUES_PERMISSIONS_BLOCK, IssueAction, IssuePost, IssueState, sync_issues};

pub use event::{EventInfo, WorkflowRunInfo, parse_event, parse_workflow_run};

pub use checks::{
    AnnotationLevel, CHECK_OUTPUT_LIMIT, CHECK_TITLE_LIMIT, CheckAnnotation, CheckConclusion,
    CheckOutput, CheckRunPost, CheckRunStart, ChecksMode,
};

/// The `permissions:` block a workflow needs for `utilgate publish`.
pub const PERMISSIONS_BLOCK: &str =
    "permissions:\n  contents: read\n  pull-requests: write\n  statuses: write";

/// The `permissions:` block a workflow needs when `[github] checks` posts check runs.
pub const CHECKS_PERMISSIONS_BLOCK: &str =
    "permissions:\n  contents: read\n  pull-requests: write\n  statuses: write\n  checks: write";

/// A GitHub token. Never printed: `Debug` shows `***` and there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// A token from a non-empty value.
    #[must_use]
    pub fn new(value: &str) -> Option<Token> {
        let value = value.trim().to_owned();
        (!value.is_empty()).then_some(Token(value))
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where and as whom to publish.
#[derive(Debug, Clone)]
pub struct GithubTarget {
    /// The REST API root: `https://api.github.com`, a GitHub Enterprise `/api/v3`, or a test
    /// server.
    pub api_url: String,
    pub owner: String,
    pub repo: String,
    pub token: Token,
    /// The login utilgate posts as, when the environment names it
    /// (`UTILGATE_GITHUB_LOGIN`); otherwise asked of GitHub ([`identity`]).
    pub login: Option<String>,
}

impl GithubTarget {
    /// Split `owner/name` (`GITHUB_REPOSITORY`).
    pub fn new(api_url: &str, repository: &str, token: Token) -> Result<GithubTarget, GithubError> {
        match repository.split_once('/') {
            Some((owner, repo)) if !owner.is_empty() && !repo.is_empty() && !repo.contains('/') => {
                Ok(GithubTarget {
                    api_url: api_url.trim_end_matches('/').to_owned(),
                    owner: owner.to_owned(),
                    repo: repo.to_owned(),
                    token,
                    login: None,
                })
            }
            _ => Err(GithubError::Repository(repository.to_owned())),
        }
    }
}

/// The login utilgate posts as when the token cannot say who it is: `GET /user` refuses an
/// installation token (the workflow's `GITHUB_TOKEN`), whose comments GitHub shows as this user.
pub const ACTIONS_BOT_LOGIN: &str = "github-actions[bot]";

/// Comments or issues that held utilgate's hidden marker but that utilgate did not write (or
/// whose body does not start with the marker): never edited, only counted and named.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planted {
    /// Where they were: "pull request #2", "the open issues".
    pub place: String,
    /// The login utilgate posts as, which did not write them.
    pub identity: String,
    /// Who wrote each one (logins, filtered to the characters a login can hold).
    pub authors: Vec<String>,
}

impl Planted {
    /// One warning line: how many, who wrote them; never their text.
    #[must_use]
    pub fn warning(&self) -> String {
        let mut authors: Vec<&str> = self.authors.iter().map(String::as_str).collect();
        authors.sort_unstable();
        authors.dedup();
        format!(
            "ignored {} item(s) in {} that hold utilgate's hidden marker but were not written by {} (utilgate's identity) with the marker first: written by {}; utilgate never edits them (a planted marker)",
            self.authors.len(),
            self.place,
            self.identity,
            authors.join(", ")
        )
    }
}

/// A login as printed: only the characters GitHub allows in one (and the `[bot]` suffix), so a
/// crafted answer cannot put a line or a workflow command into the log.
fn shown_login(login: &str) -> String {
    let kept: String = login
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '[' | ']'))
        .take(64)
        .collect();
    if kept.is_empty() {
        "(unnamed)".to_owned()
    } else {
        kept
    }
}

/// Which of the items holding `marker` utilgate may edit: the oldest one that `identity`
/// wrote and whose body starts with the marker. The others that hold the marker are returned
/// by author. Pure: `items` are (id, author login, body).
pub(crate) fn own_item<'a>(
    items: impl Iterator<Item = (u64, Option<&'a str>, Option<&'a str>)>,
    marker: &str,
    identity: &str,
) -> (Option<u64>, Vec<String>) {
    let mut own: Option<u64> = None;
    let mut others = Vec::new();
    for (id, author, body) in items {
        let Some(body) = body.filter(|b| b.contains(marker)) else {
            continue;
        };
        let by_us = author.is_some_and(|a| a.eq_ignore_ascii_case(identity));
        if by_us && body.starts_with(marker) {
            own = Some(own.map_or(id, |o| o.min(id)));
        } else {
            others.push(shown_login(author.unwrap_or_default()));
        }
    }
    (own, others)
}

/// The login utilgate posts as: `UTILGATE_GITHUB_LOGIN` when set, else `GET /user` (a
/// personal or OAuth token), else, when GitHub refuses that (401, 403: an installation token
/// such as `GITHUB_TOKEN`; 404), [`ACTIONS_BOT_LOGIN`].
pub(crate) async fn identity(
    octo: &Octocrab,
    target: &GithubTarget,
) -> Result<String, GithubError> {
    if let Some(login) = &target.login {
        return Ok(login.clone());
    }
    let action = "read the token's user (GET /user)";
    match octo.get::<serde_json::Value, _, ()>("/user", None).await {
        Ok(value) => value["login"]
            .as_str()
            .filter(|l| !l.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| GithubError::Request {
                action: action.to_owned(),
                message: "the answer names no login".to_owned(),
            }),
        Err(octocrab::Error::GitHub { source, .. })
            if matches!(source.status_code.as_u16(), 401 | 403 | 404) =>
        {
            Ok(ACTIONS_BOT_LOGIN.to_owned())
        }
        Err(err) => Err(api_error(action, &err, &target.token)),
    }
}

/// A commit status's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitState {
    Success,
    Failure,
    Error,
    Pending,
}

/// A sticky comment: the hidden marker that finds it again, and its whole body (which starts
/// with the marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentPost {
    pub marker: String,
    pub body: String,
}

/// A commit status on one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusPost {
    pub sha: String,
    pub state: CommitState,
    pub context: String,
    /// At most 140 characters (GitHub's limit).
    pub description: String,
    pub target_url: Option<String>,
}

/// Everything one publish posts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Publication {
    /// The pull request the comments go to; `None` posts statuses only.
    pub pr_number: Option<u64>,
    pub comments: Vec<CommentPost>,
    pub statuses: Vec<StatusPost>,
    /// Check runs to complete (or create completed), one per suite (`[github] checks`).
    pub check_runs: Vec<CheckRunPost>,
}

/// What happened to one comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommentAction {
    Created { id: u64, url: String },
    Updated { id: u64, url: String },
}

/// What a publish did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    pub comments: Vec<CommentAction>,
    /// Comments holding a marker that utilgate did not write: left alone.
    pub planted: Vec<Planted>,
    pub statuses: usize,
    pub check_runs: usize,
}

#[derive(Debug, Error)]
pub enum GithubError {
    #[error("GITHUB_TOKEN is not set, so nothing can be posted to GitHub")]
    NoToken,
    #[error("GITHUB_REPOSITORY is {0:?}; expected owner/name")]
    Repository(String),
    #[error("failed to start the GitHub client: {0}")]
    Runtime(#[source] std::io::Error),
    /// octocrab's errors carry a backtrace in `Debug`, so only their `Display` text is kept.
    #[error("failed to set up the GitHub client for {api_url}: {message}")]
    Client { api_url: String, message: String },
    #[error("GitHub refused to {action} (403 Forbidden): {message}")]
    Forbidden { action: String, message: String },
    /// A 403 on a check run: the token lacks `checks: write` (or is not an app token).
    #[error("GitHub refused to {action} (403 Forbidden): {message}")]
    ChecksForbidden { action: String, message: String },
    /// A 403 on the nightly issue: the token lacks `issues: write`.
    #[error("GitHub refused to {action} (403 Forbidden): {message}")]
    IssuesForbidden { action: String, message: String },
    #[error("GitHub could not find where to {action} (404 Not Found): {message}")]
    NotFound { action: String, message: String },
    #[error("GitHub rejected the token while trying to {action} (401): {message}")]
    Unauthorized { action: String, message: String },
    #[error("GitHub answered {status} when trying to {action}: {message}")]
    Api {
        action: String,
        status: u16,
        message: String,
    },
    #[error("failed to {action}: {message}")]
    Request { action: String, message: String },
    #[error("failed to read the GitHub event payload {path}: {message}")]
    Event { path: String, message: String },
    /// A credential a harness could read (DESIGN.md §13); names only, never values.
    #[error("refusing to start a harness while utilgate holds a credential: {}", found.join("; "))]
    /// `token`: one of them is a GitHub credential; `database`: one is a database credential
    /// (the hint then says where a pull request's run keeps its history instead); `inherited`:
    /// one is in the environment of a process that started utilgate (the hint then says where
    /// to take it out).
    CredentialNearHarness {
        found: Vec<String>,
        token: bool,
        database: bool,
        inherited: bool,
    },
    /// A stored run that was measured for another pull request or commit.
    #[error("refusing to publish run {run}: {reason}")]
    RunMismatch { run: i64, reason: String },
}

impl GithubError {
    /// The user's next step.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            GithubError::Forbidden { .. } => Some(format!(
                "give the workflow's GITHUB_TOKEN write access to comments and statuses; add to the job:\n{PERMISSIONS_BLOCK}\n(a pull request from a fork never gets a write token: post from a workflow_run workflow, docs/github.md \"The one pattern\" and examples/workflows/pr-publish.yml)"
            )),
            GithubError::ChecksForbidden { .. } => Some(format!(
                "check runs need `checks: write`; add to the job:\n{CHECKS_PERMISSIONS_BLOCK}\n(only the workflow's GITHUB_TOKEN or a GitHub App token can write check runs, a personal access token cannot; or set [github] checks = \"status\")"
            )),
            GithubError::IssuesForbidden { .. } => Some(format!(
                "a failed nightly opens an issue, which needs `issues: write` in the posting job (only there: the job that runs the harness holds no write token); add to the job:\n{ISSUES_PERMISSIONS_BLOCK}"
            )),
            GithubError::NotFound { .. } => Some(
                "check GITHUB_REPOSITORY and the pull-request number; a token without access to the repository also gets 404".to_owned(),
            ),
            GithubError::Unauthorized { .. } => Some(
                "pass the job's token: env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}".to_owned(),
            ),
            GithubError::Repository(_) => {
                Some("GitHub Actions sets GITHUB_REPOSITORY; elsewhere set it to owner/name".to_owned())
            }
            GithubError::Event { .. } => Some(
                "GitHub Actions sets GITHUB_EVENT_PATH; `utilgate publish --event FILE` reads a saved pull_request payload".to_owned(),
            ),
            GithubError::Client { .. } | GithubError::Request { .. } | GithubError::Api { .. } => {
                Some("the run is stored; retry with `utilgate publish <run>`".to_owned())
            }
            GithubError::NoToken => Some(format!(
                "pass the job's token to the step: env: GITHUB_TOKEN: ${{{{ secrets.GITHUB_TOKEN }}}}, and give the job\n{PERMISSIONS_BLOCK}"
            )),
            GithubError::CredentialNearHarness {
                token,
                database,
                inherited,
                ..
            } => {
                let mut parts = Vec::new();
                if *token {
                    parts.push("the job that runs pull-request code must hold no token: take GITHUB_TOKEN out of the step's env:, check out with persist-credentials: false, and post from a separate job with `utilgate publish` (docs/github.md)");
                }
                if *inherited {
                    parts.push("a process that started utilgate keeps its own copy of a variable it removed for utilgate (`env -u`, `unset` in a script): leave it out of the step's env: altogether");
                }
                if *database {
                    parts.push("a shared store (its password, or a PostgreSQL login of any kind) belongs to jobs that run no pull-request code: measure a pull request into the job's own SQLite store, judged against the reviewed baselines/ (`utilgate run --baselines baselines/`, docs/postgres.md)");
                }
                parts.push("pass --trusted only when every harness this run starts is code you trust");
                Some(parts.join("; "))
            }
            GithubError::RunMismatch { .. } => Some(
                "nothing was posted for it; publish the run measured for this pull request and commit (`utilgate runs list`), or measure that commit".to_owned(),
            ),
            GithubError::Runtime(_) => None,
        }
    }
}

/// One line from an octocrab error and its causes, by `Display`, without backtraces, with
/// token-shaped strings masked.
/// The message of an octocrab error, with `token` and every token-shaped string masked: an
/// error body may echo the request's Authorization header, so no message ever holds the token
/// from the moment it is made.
fn describe(err: &octocrab::Error, token: &Token) -> String {
    clean(&describe_raw(err), token)
}

fn clean(text: &str, token: &Token) -> String {
    crate::redact::redact(&crate::redact::redact_with(text, &[token.0.as_str()]))
}

fn describe_raw(err: &octocrab::Error) -> String {
    if let octocrab::Error::GitHub { source, .. } = err {
        return source.message.clone();
    }
    let mut parts: Vec<String> = Vec::new();
    let mut current: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = current {
        let text = e.to_string();
        let text = text
            .split("\n\nFound at")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}

pub(crate) fn api_error(action: &str, err: &octocrab::Error, token: &Token) -> GithubError {
    let message = describe(err, token);
    let action = action.to_owned();
    match err {
        octocrab::Error::GitHub { source, .. } => match source.status_code.as_u16() {
            401 => GithubError::Unauthorized { action, message },
            403 => GithubError::Forbidden { action, message },
            404 => GithubError::NotFound { action, message },
            status => GithubError::Api {
                action,
                status,
                message,
            },
        },
        _ => GithubError::Request { action, message },
    }
}

/// Post the comments (create once, then update the comment utilgate wrote that starts with the
/// marker; one anyone else wrote is never edited) and the statuses. Stops at the first failure, which names what it was doing.
pub fn publish(target: &GithubTarget, publication: &Publication) -> Result<Published, GithubError> {
    runtime()?.block_on(publish_async(target, publication))
}

/// The octocrab client for a target, with the token and timeouts.
fn client(target: &GithubTarget) -> Result<Octocrab, GithubError> {
    let client_error = |err: &octocrab::Error| GithubError::Client {
        api_url: clean(&target.api_url, &target.token),
        message: describe(err, &target.token),
    };
    Octocrab::builder()
        .base_uri(target.api_url.as_str())
        .map_err(|e| client_error(&e))?
        .personal_token(target.token.0.clone())
        .set_connect_timeout(Some(Duration::from_secs(10)))
        .set_read_timeout(Some(Duration::from_secs(30)))
        .build()
        .map_err(|e| client_error(&e))
}

fn runtime() -> Result<tokio::runtime::Runtime, GithubError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(GithubError::Runtime)
}

/// Complete check runs without a result (their run stopped before it was stored).
pub fn complete_check_runs(
    target: &GithubTarget,
    posts: &[CheckRunPost],
) -> Result<usize, GithubError> {
    runtime()?.block_on(async {
        let octo = client(target)?;
        checks::complete(&octo, target, posts).await
    })
}

/// Create the `in_progress` check runs a run shows while it measures; their ids, in order.
pub fn start_check_runs(
    target: &GithubTarget,
    starts: &[CheckRunStart],
) -> Result<Vec<u64>, GithubError> {
    runtime()?.block_on(async {
        let octo = client(target)?;
        checks::start(&octo, target, starts).await
    })
}

/// The oldest comment utilgate (`me`) wrote with the marker first is the sticky one; one by
/// anyone else is never edited (a planted marker), only noted in `done`.
fn own_comment(
    existing: &[octocrab::models::issues::Comment],
    comment: &CommentPost,
    me: Option<&str>,
    pr: u64,
    done: &mut Published,
) -> Option<u64> {
    let me = me?;
    let items = existing
        .iter()
        .map(|c| (c.id.0, Some(c.user.login.as_str()), c.body.as_deref()));
    let (found, others) = own_item(items, &comment.marker, me);
    if !others.is_empty() {
        done.planted.push(Planted {
            place: format!("pull request #{pr}'s comments"),
            identity: shown_login(me),
            authors: others,
        });
    }
    found
}

async fn publish_async(
    target: &GithubTarget,
    publication: &Publication,
) -> Result<Published, GithubError> {
    let octo = client(target)?;
    let mut done = Published::default();
    if let Some(pr) = publication.pr_number {
        let issues = octo.issues(&target.owner, &target.repo);
        let mut existing = Vec::new();
        if !publication.comments.is_empty() {
            let action = format!("list the comments of pull request #{pr}");
            let first = issues
                .list_comments(pr)
                .per_page(100)
                .send()
                .await
                .map_err(|e| api_error(&action, &e, &target.token))?;
            existing = octo
                .all_pages(first)
                .await
                .map_err(|e| api_error(&action, &e, &target.token))?;
        }
        // Who utilgate posts as, asked only when some comment holds a marker.
        let mut me: Option<String> = None;
        for comment in &publication.comments {
            if me.is_none()
                && existing.iter().any(|c| {
                    c.body
                        .as_deref()
                        .is_some_and(|b| b.contains(&comment.marker))
                })
            {
                me = Some(identity(&octo, target).await?);
            }
            let found = own_comment(&existing, comment, me.as_deref(), pr, &mut done);
            let action = if let Some(old) = found {
                let what = format!("update comment {old} on pull request #{pr}");
                // GitHub documents PATCH for this endpoint; octocrab's `update_comment`
                // sends POST, which a server implementing only the documented verb refuses.
                let route = format!(
                    "/repos/{}/{}/issues/comments/{old}",
                    target.owner, target.repo
                );
                let new: octocrab::models::issues::Comment = octo
                    .patch(route, Some(&serde_json::json!({ "body": comment.body })))
                    .await
                    .map_err(|e| api_error(&what, &e, &target.token))?;
                CommentAction::Updated {
                    id: new.id.0,
                    url: new.html_url.to_string(),
                }
            } else {
                let what = format!("comment on pull request #{pr}");
                let new = issues
                    .create_comment(pr, &comment.body)
                    .await
                    .map_err(|e| api_error(&what, &e, &target.token))?;
                CommentAction::Created {
                    id: new.id.0,
                    url: new.html_url.to_string(),
                }
            };
            done.comments.push(action);
        }
    }
    let repos = octo.repos(&target.owner, &target.repo);
    for status in &publication.statuses {
        let state = match status.state {
            CommitState::Success => StatusState::Success,
            CommitState::Failure => StatusState::Failure,
            CommitState::Error => StatusState::Error,
            CommitState::Pending => StatusState::Pending,
        };
        let what = format!(
            "set the commit status {:?} on {}",
            status.context, status.sha
        );
        let mut request = repos
            .create_status(status.sha.clone(), state)
            .context(status.context.clone())
            .description(status.description.clone());
        if let Some(url) = &status.target_url {
            request = request.target(url.clone());
        }
        request
            .send()
            .await
            .map_err(|e| api_error(&what, &e, &target.token))?;
        done.statuses += 1;
    }
    done.check_runs = checks::complete(&octo, target, &publication.check_runs).await?;
    Ok(done)
}

/// A pull request as GitHub has it now: its head commit and its base repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullHead {
    pub sha: String,
    /// `owner/name` of the repository the pull request merges into.
    pub base_repository: Option<String>,
}

/// One GET of a JSON document, on a current-thread runtime.
fn get_json(
    target: &GithubTarget,
    route: &str,
    action: &str,
) -> Result<serde_json::Value, GithubError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(GithubError::Runtime)?;
    runtime.block_on(async {
        let octo = client(target)?;
        octo.get::<serde_json::Value, _, ()>(route, None)
            .await
            .map_err(|e| api_error(action, &e, &target.token))
    })
}

/// The head commit of pull request `pr` (to confirm a number read from an artifact).
pub fn pull_head(target: &GithubTarget, pr: u64) -> Result<PullHead, GithubError> {
    let action = format!("read pull request #{pr}");
    let route = format!("/repos/{}/{}/pulls/{pr}", target.owner, target.repo);
    let value = get_json(target, &route, &action)?;
    let sha = value["head"]["sha"]
        .as_str()
        .ok_or_else(|| GithubError::Request {
            action: action.clone(),
            message: "the answer names no head commit".to_owned(),
        })?
        .to_owned();
    Ok(PullHead {
        sha,
        base_repository: value["base"]["repo"]["full_name"]
            .as_str()
            .map(str::to_owned),
    })
}

/// The current state of each status context on a commit (GitHub's combined status: the
/// latest status per context).
pub fn commit_statuses(
    target: &GithubTarget,
    sha: &str,
) -> Result<Vec<(String, String)>, GithubError> {
    let action = format!("read the commit statuses of {sha}");
    let route = format!(
        "/repos/{}/{}/commits/{sha}/status?per_page=100",
        target.owner, target.repo
    );
    let value = get_json(target, &route, &action)?;
    Ok(value["statuses"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|s| {
                    Some((
                        s["context"].as_str()?.to_owned(),
                        s["state"].as_str()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_never_debug_print() {
        let token = Token::new("ghp_secret_value").expect("non-empty");
        assert_eq!(format!("{token:?}"), "***");
        let target = GithubTarget::new("https://api.github.com/", "o/r", token).expect("valid");
        let shown = format!("{target:?}");
        assert!(!shown.contains("ghp_secret_value"), "{shown}");
        assert_eq!(target.api_url, "https://api.github.com");
        assert_eq!(Token::new("  "), None);
    }

    #[test]
    fn repositories_are_owner_slash_name() {
        let token = || Token::new("t").expect("non-empty");
        for bad in ["", "owner", "/repo", "owner/", "a/b/c"] {
            assert!(
                GithubTarget::new("http://x", bad, token()).is_err(),
                "{bad:?}"
            );
        }
        let t = GithubTarget::new("http://x", "octo/hello", token()).expect("valid");
        assert_eq!((t.owner.as_str(), t.repo.as_str()), ("octo", "hello"));
    }

    #[test]
    fn only_an_item_utilgate_wrote_with_the_marker_first_is_its_own() {
        let m = "<!-- utilgate:comment suite=a gpu=b -->";
        let planted = format!("{m}\nhi");
        let quoted = format!("> {m}");
        let ours = format!("{m}\nreport");
        let items = [
            (3, Some("mallory"), Some(planted.as_str())),
            (4, Some("github-actions[bot]"), Some(quoted.as_str())),
            (9, Some("GitHub-Actions[bot]"), Some(ours.as_str())),
            (7, Some("github-actions[bot]"), Some(ours.as_str())),
            (2, Some("x\n::error::y"), Some(planted.as_str())),
            (1, None, Some("no marker")),
        ];
        let (own, others) = own_item(items.iter().copied(), m, "github-actions[bot]");
        assert_eq!(own, Some(7), "the oldest of its own");
        assert_eq!(others, ["mallory", "github-actions[bot]", "xerrory"]);
        let (own, _) = own_item(items.iter().copied(), m, "someone-else");
        assert_eq!(own, None);
    }

    #[test]
    fn forbidden_names_the_permissions_block() {
        let err = GithubError::Forbidden {
            action: "comment on pull request #2".into(),
            message: "Resource not accessible by integration".into(),
        };
        let hint = err.hint().expect("hint");
        assert!(
            hint.contains(
                "permissions:\n  contents: read\n  pull-requests: write\n  statuses: write"
            )
        );
    }
}
