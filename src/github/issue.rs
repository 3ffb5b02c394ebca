//! The nightly's GitHub issue: a failed nightly on the baseline branch has no pull request to
//! comment on, so `publish` keeps one issue per suite and GPU open while its cases regress,
//! found again by a hidden marker opening its body and by its author (utilgate's own identity,
//! like the sticky comment's), updated each failing
//! night, and closed with a comment when the suite passes again. Network I/O through
//! octocrab's generic `get`/`post`/`patch`; decides nothing: what to do arrives as an
//! [`IssuePost`].

use octocrab::Octocrab;
use serde::Deserialize;

use super::{GithubError, GithubTarget, Planted, api_error, client, identity, own_item, runtime};

/// The `permissions:` block the posting job needs for the nightly issue.
pub const ISSUES_PERMISSIONS_BLOCK: &str =
    "permissions:\n  contents: read\n  issues: write\n  statuses: write";

/// What to do with one suite's issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueState {
    /// The suite failed tonight: open the issue with this title, or update the open one's body
    /// (its title, which names the night the regression began, is kept).
    Failing { title: String },
    /// The suite passed: close the open issue (if any) with this comment.
    Passing { comment: String },
}

/// One suite's nightly issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssuePost {
    /// The hidden marker that finds the issue again; the body starts with it.
    pub marker: String,
    pub body: String,
    pub state: IssueState,
}

/// What happened to one issue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IssueAction {
    Opened {
        number: u64,
        url: String,
    },
    Updated {
        number: u64,
        url: String,
    },
    Closed {
        number: u64,
        url: String,
    },
    /// Passing, and no issue was open: nothing to do.
    NoneOpen,
}

#[derive(Debug, Deserialize)]
struct IssueReply {
    number: u64,
    html_url: String,
    #[serde(default)]
    body: Option<String>,
    /// Who opened it: only an issue utilgate opened is ever edited.
    #[serde(default)]
    user: Option<IssueUser>,
    /// Present when the "issue" is a pull request (the issues list returns both).
    #[serde(default)]
    pull_request: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct IssueUser {
    login: String,
}

/// What the issues' sync did: each post's action, and the issues that held a marker but that
/// utilgate did not open (left alone).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IssuesSynced {
    pub actions: Vec<IssueAction>,
    pub planted: Vec<Planted>,
}

/// Open, update or close each suite's issue. Only an issue that utilgate's identity opened,
/// its body starting with the marker, is ever updated or closed.
pub fn sync_issues(
    target: &GithubTarget,
    posts: &[IssuePost],
) -> Result<IssuesSynced, GithubError> {
    runtime()?.block_on(async {
        let octo = client(target)?;
        let open = open_issues(&octo, target).await?;
        let mut done = IssuesSynced::default();
        let mut me: Option<String> = None;
        for post in posts {
            let marked =
                |i: &IssueReply| i.body.as_deref().is_some_and(|b| b.contains(&post.marker));
            if me.is_none() && open.iter().any(marked) {
                me = Some(identity(&octo, target).await?);
            }
            let (found, others) = match &me {
                Some(me) => own_item(
                    open.iter().map(|i| {
                        (
                            i.number,
                            i.user.as_ref().map(|u| u.login.as_str()),
                            i.body.as_deref(),
                        )
                    }),
                    &post.marker,
                    me,
                ),
                None => (None, Vec::new()),
            };
            if !others.is_empty() {
                done.planted.push(Planted {
                    place: "the repository's open issues".to_owned(),
                    identity: super::shown_login(me.as_deref().unwrap_or_default()),
                    authors: others,
                });
            }
            let found = found.and_then(|n| open.iter().find(|i| i.number == n));
            done.actions
                .push(sync_one(&octo, target, found, post).await?);
        }
        Ok(done)
    })
}

fn route(target: &GithubTarget) -> String {
    format!("/repos/{}/{}/issues", target.owner, target.repo)
}

/// A 403 on an issue names `issues: write`.
fn issue_error(action: &str, err: &octocrab::Error, target: &GithubTarget) -> GithubError {
    match api_error(action, err, &target.token) {
        GithubError::Forbidden { action, message } => {
            GithubError::IssuesForbidden { action, message }
        }
        other => other,
    }
}

/// Every open issue of the repository (pull requests left out), all pages.
async fn open_issues(
    octo: &Octocrab,
    target: &GithubTarget,
) -> Result<Vec<IssueReply>, GithubError> {
    let action = "list the repository's open issues";
    let mut out = Vec::new();
    for page in 1u32.. {
        let url = format!("{}?state=open&per_page=100&page={page}", route(target));
        let batch: Vec<IssueReply> = octo
            .get(url, None::<&()>)
            .await
            .map_err(|e| issue_error(action, &e, target))?;
        let last = batch.len() < 100;
        out.extend(batch.into_iter().filter(|i| i.pull_request.is_none()));
        if last || page >= 50 {
            break;
        }
    }
    Ok(out)
}

async fn sync_one(
    octo: &Octocrab,
    target: &GithubTarget,
    found: Option<&IssueReply>,
    post: &IssuePost,
) -> Result<IssueAction, GithubError> {
    // `found`: the oldest open issue utilgate opened with the marker (a duplicate opened by
    // hand, or a planted one, is left be).
    match (&post.state, found) {
        (IssueState::Failing { .. }, Some(issue)) => {
            let action = format!("update issue #{}", issue.number);
            let reply: IssueReply = octo
                .patch(
                    format!("{}/{}", route(target), issue.number),
                    Some(&serde_json::json!({ "body": post.body })),
                )
                .await
                .map_err(|e| issue_error(&action, &e, target))?;
            Ok(IssueAction::Updated {
                number: reply.number,
                url: reply.html_url,
            })
        }
        (IssueState::Failing { title }, None) => {
            let reply: IssueReply = octo
                .post(
                    route(target),
                    Some(&serde_json::json!({ "title": title, "body": post.body })),
                )
                .await
                .map_err(|e| issue_error("open an issue", &e, target))?;
            Ok(IssueAction::Opened {
                number: reply.number,
                url: reply.html_url,
            })
        }
        (IssueState::Passing { comment }, Some(issue)) => {
            let action = format!("comment on issue #{}", issue.number);
            let _: serde_json::Value = octo
                .post(
                    format!("{}/{}/comments", route(target), issue.number),
                    Some(&serde_json::json!({ "body": comment })),
                )
                .await
                .map_err(|e| issue_error(&action, &e, target))?;
            let action = format!("close issue #{}", issue.number);
            let reply: IssueReply = octo
                .patch(
                    format!("{}/{}", route(target), issue.number),
                    Some(&serde_json::json!({ "state": "closed", "state_reason": "completed" })),
                )
                .await
                .map_err(|e| issue_error(&action, &e, target))?;
            Ok(IssueAction::Closed {
                number: reply.number,
                url: reply.html_url,
            })
        }
        (IssueState::Passing { .. }, None) => Ok(IssueAction::NoneOpen),
    }
}
