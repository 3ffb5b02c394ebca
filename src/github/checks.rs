//! Check runs: a suite's result in the pull request's Checks tab, with the report as its
//! output. Network I/O through octocrab's generic `post`/`patch` (the request bodies are ours,
//! so every documented field is sent as GitHub names it); decides nothing: what to post
//! arrives as [`CheckRunStart`] and [`CheckRunPost`].
//!
//! A check run is created `in_progress` when `run --github` starts and completed (PATCH) at
//! the end; `publish` of a stored run creates it completed. GitHub takes at most 50
//! annotations per request, so further ones follow in extra updates of the same run.

use octocrab::Octocrab;
use serde::{Deserialize, Serialize};

use super::{GithubError, GithubTarget, Token, api_error};

/// GitHub accepts at most this many annotations in one create or update request.
pub const ANNOTATIONS_PER_REQUEST: usize = 50;
/// GitHub's limit on a check run's `output.summary` and `output.text`, in characters.
pub const CHECK_OUTPUT_LIMIT: usize = 65_535;
/// A check run's `output.title` is kept under this many characters.
pub const CHECK_TITLE_LIMIT: usize = 255;

/// How a suite's outcome is shown beside a pull request (`[github] checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChecksMode {
    /// A commit status per suite (the default; works with any token that has `statuses: write`).
    #[default]
    Status,
    /// A check run per suite, with the report in the Checks tab (`checks: write`).
    CheckRun,
    /// Both.
    Both,
}

impl ChecksMode {
    #[must_use]
    pub fn statuses(self) -> bool {
        matches!(self, ChecksMode::Status | ChecksMode::Both)
    }

    #[must_use]
    pub fn check_runs(self) -> bool {
        matches!(self, ChecksMode::CheckRun | ChecksMode::Both)
    }
}

/// A completed check run's conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    Success,
    Failure,
    Neutral,
    /// The run stopped (an error, Ctrl-C) before it stored a result: never green.
    Cancelled,
}

/// An annotation's level, as GitHub names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AnnotationLevel {
    Warning,
    Failure,
}

/// One annotation: a line of a file in the repository, with a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckAnnotation {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub annotation_level: AnnotationLevel,
    pub title: String,
    pub message: String,
}

/// A check run's output, already within GitHub's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutput {
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<CheckAnnotation>,
}

/// A check run to create `in_progress` at the start of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunStart {
    pub name: String,
    pub head_sha: String,
    pub details_url: Option<String>,
}

/// A check run to complete: the one started earlier (`id`), or a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRunPost {
    pub name: String,
    pub head_sha: String,
    pub details_url: Option<String>,
    pub conclusion: CheckConclusion,
    pub output: CheckOutput,
    /// The check run created `in_progress` when the run started, if there is one.
    pub id: Option<u64>,
}

#[derive(Serialize)]
struct OutputBody<'a> {
    title: &'a str,
    summary: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    annotations: &'a [CheckAnnotation],
}

#[derive(Serialize)]
struct CheckBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    head_sha: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details_url: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    conclusion: Option<CheckConclusion>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output: Option<OutputBody<'a>>,
}

/// The part of GitHub's check-run object this code reads.
#[derive(Deserialize)]
struct CheckRunReply {
    id: u64,
}

fn checks_route(target: &GithubTarget) -> String {
    format!("/repos/{}/{}/check-runs", target.owner, target.repo)
}

/// Create one `in_progress` check run per start; their ids, in order.
pub(super) async fn start(
    octo: &Octocrab,
    target: &GithubTarget,
    starts: &[CheckRunStart],
) -> Result<Vec<u64>, GithubError> {
    let mut ids = Vec::with_capacity(starts.len());
    for start in starts {
        let body = CheckBody {
            name: Some(&start.name),
            head_sha: Some(&start.head_sha),
            details_url: start.details_url.as_deref(),
            status: Some("in_progress"),
            conclusion: None,
            output: None,
        };
        let action = format!(
            "create the check run {:?} on {}",
            start.name, start.head_sha
        );
        let reply: CheckRunReply = octo
            .post(checks_route(target), Some(&body))
            .await
            .map_err(|e| checks_error(&action, &e, &target.token))?;
        ids.push(reply.id);
    }
    Ok(ids)
}

/// Complete (or create completed) each check run, then send the annotations that did not fit
/// in the first request. The number of check runs written.
pub(super) async fn complete(
    octo: &Octocrab,
    target: &GithubTarget,
    posts: &[CheckRunPost],
) -> Result<usize, GithubError> {
    for post in posts {
        let out = &post.output;
        let mut batches = out.annotations.chunks(ANNOTATIONS_PER_REQUEST);
        let first = batches.next().unwrap_or_default();
        let output = OutputBody {
            title: &out.title,
            summary: &out.summary,
            text: out.text.as_deref(),
            annotations: first,
        };
        let body = CheckBody {
            name: Some(&post.name),
            head_sha: post.id.is_none().then_some(post.head_sha.as_str()),
            details_url: post.details_url.as_deref(),
            status: Some("completed"),
            conclusion: Some(post.conclusion),
            output: Some(output),
        };
        let id = if let Some(id) = post.id {
            let action = format!("complete the check run {:?} ({id})", post.name);
            let _: CheckRunReply = octo
                .patch(format!("{}/{id}", checks_route(target)), Some(&body))
                .await
                .map_err(|e| checks_error(&action, &e, &target.token))?;
            id
        } else {
            let action = format!("create the check run {:?} on {}", post.name, post.head_sha);
            let reply: CheckRunReply = octo
                .post(checks_route(target), Some(&body))
                .await
                .map_err(|e| checks_error(&action, &e, &target.token))?;
            reply.id
        };
        for batch in batches {
            let body = CheckBody {
                name: None,
                head_sha: None,
                details_url: None,
                status: None,
                conclusion: None,
                output: Some(OutputBody {
                    title: &out.title,
                    summary: &out.summary,
                    text: None,
                    annotations: batch,
                }),
            };
            let action = format!("add annotations to the check run {:?} ({id})", post.name);
            let _: CheckRunReply = octo
                .patch(format!("{}/{id}", checks_route(target)), Some(&body))
                .await
                .map_err(|e| checks_error(&action, &e, &target.token))?;
        }
    }
    Ok(posts.len())
}

/// A check-run error: a 403 names `checks: write` rather than the comment permissions.
fn checks_error(action: &str, err: &octocrab::Error, token: &Token) -> GithubError {
    match api_error(action, err, token) {
        GithubError::Forbidden { action, message } => {
            GithubError::ChecksForbidden { action, message }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_select_statuses_and_check_runs() {
        assert!(ChecksMode::default().statuses() && !ChecksMode::default().check_runs());
        assert!(!ChecksMode::CheckRun.statuses() && ChecksMode::CheckRun.check_runs());
        assert!(ChecksMode::Both.statuses() && ChecksMode::Both.check_runs());
        let parsed: ChecksMode = serde_json::from_str("\"check-run\"").expect("kebab-case");
        assert_eq!(parsed, ChecksMode::CheckRun);
    }

    #[test]
    fn bodies_use_githubs_field_names() {
        let annotation = CheckAnnotation {
            path: "utilgate.toml".into(),
            start_line: 1,
            end_line: 1,
            annotation_level: AnnotationLevel::Failure,
            title: "t".into(),
            message: "m".into(),
        };
        let body = CheckBody {
            name: Some("utilgate/decode (h100-sxm)"),
            head_sha: None,
            details_url: None,
            status: Some("completed"),
            conclusion: Some(CheckConclusion::Neutral),
            output: Some(OutputBody {
                title: "t",
                summary: "s",
                text: None,
                annotations: std::slice::from_ref(&annotation),
            }),
        };
        let value = serde_json::to_value(&body).expect("serialises");
        assert_eq!(value["conclusion"], "neutral");
        assert_eq!(
            value["output"]["annotations"][0]["annotation_level"],
            "failure"
        );
        assert!(value.get("head_sha").is_none());
    }
}
