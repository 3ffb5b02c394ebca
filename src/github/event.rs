//! The Actions event payload (`GITHUB_EVENT_PATH`): which pull request, which head commit, and
//! whether it comes from a fork, for `pull_request` and `workflow_run` events. Pure: text in,
//! facts out.

use serde::Deserialize;

use super::GithubError;

/// The facts of an Actions event payload that publishing needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventInfo {
    pub pr_number: Option<u64>,
    /// The pull request's head commit (for `pull_request` events `GITHUB_SHA` is a merge commit).
    pub head_sha: Option<String>,
    /// The head comes from another repository than the base (a fork).
    pub from_fork: bool,
    /// The base branch's commit (`pull_request.base.sha`): the gate's settings and baselines of
    /// a pull request's run are read there, not from the pull request's tree.
    pub base_sha: Option<String>,
    /// The base branch's name (`pull_request.base.ref`).
    pub base_ref: Option<String>,
}

#[derive(Deserialize)]
struct RawEvent {
    pull_request: Option<RawPull>,
    workflow_run: Option<RawWorkflowRun>,
}

#[derive(Deserialize)]
struct RawPull {
    number: u64,
    head: RawRef,
    base: RawRef,
}

#[derive(Deserialize)]
struct RawRef {
    sha: Option<String>,
    #[serde(rename = "ref")]
    name: Option<String>,
    repo: Option<RawRepo>,
}

#[derive(Deserialize)]
struct RawRepo {
    full_name: Option<String>,
    fork: Option<bool>,
}

#[derive(Deserialize)]
struct RawWorkflowRun {
    head_sha: Option<String>,
    #[serde(default)]
    pull_requests: Vec<RawWorkflowPull>,
    head_repository: Option<RawRepo>,
    repository: Option<RawRepo>,
}

#[derive(Deserialize)]
struct RawWorkflowPull {
    number: u64,
}

/// What a `workflow_run` event says about the run it reports (the pull-request check).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowRunInfo {
    /// `success`, `failure`, `cancelled`, `timed_out`, `skipped`, ...; `None` before it ends.
    pub conclusion: Option<String>,
    /// The event that started the reported run (`pull_request`).
    pub event: Option<String>,
    /// The commit the reported run was for (a pull request's head commit).
    pub head_sha: Option<String>,
    /// The pull request, when GitHub names it (never for a fork's pull request).
    pub pr_number: Option<u64>,
    /// The reported run's page, where its logs are.
    pub html_url: Option<String>,
}

#[derive(Deserialize)]
struct RawWorkflowRunEvent {
    workflow_run: Option<RawWorkflowRunFull>,
}

#[derive(Deserialize)]
struct RawWorkflowRunFull {
    conclusion: Option<String>,
    event: Option<String>,
    head_sha: Option<String>,
    html_url: Option<String>,
    #[serde(default)]
    pull_requests: Vec<RawWorkflowPull>,
}

/// Read a `workflow_run` event payload. Pure: `origin` names the file in errors.
pub fn parse_workflow_run(text: &str, origin: &str) -> Result<WorkflowRunInfo, GithubError> {
    let event = |message: String| GithubError::Event {
        path: origin.to_owned(),
        message,
    };
    let raw: RawWorkflowRunEvent = serde_json::from_str(text).map_err(|e| event(e.to_string()))?;
    let run = raw
        .workflow_run
        .ok_or_else(|| event("not a workflow_run event (no `workflow_run` object)".to_owned()))?;
    Ok(WorkflowRunInfo {
        conclusion: run.conclusion,
        event: run.event,
        head_sha: run.head_sha,
        pr_number: run.pull_requests.first().map(|p| p.number),
        html_url: run.html_url,
    })
}

/// Read an event payload: `pull_request` (and `pull_request_target`) events, and
/// `workflow_run` events (whose `pull_requests` list is empty for forks). Other events give
/// no pull request. Pure: `origin` names the file in errors.
pub fn parse_event(text: &str, origin: &str) -> Result<EventInfo, GithubError> {
    let raw: RawEvent = serde_json::from_str(text).map_err(|e| GithubError::Event {
        path: origin.to_owned(),
        message: e.to_string(),
    })?;
    if let Some(pr) = raw.pull_request {
        let head_repo = pr.head.repo.as_ref();
        let base_repo = pr.base.repo.as_ref().and_then(|r| r.full_name.as_deref());
        let from_fork = head_repo.is_none()
            || head_repo.and_then(|r| r.fork).unwrap_or(false)
            || head_repo.and_then(|r| r.full_name.as_deref()) != base_repo;
        return Ok(EventInfo {
            pr_number: Some(pr.number),
            head_sha: pr.head.sha,
            from_fork,
            base_sha: pr.base.sha,
            base_ref: pr.base.name,
        });
    }
    if let Some(run) = raw.workflow_run {
        let head = run.head_repository.and_then(|r| r.full_name);
        let base = run.repository.and_then(|r| r.full_name);
        return Ok(EventInfo {
            pr_number: run.pull_requests.first().map(|p| p.number),
            head_sha: run.head_sha,
            from_fork: head.is_some() && head != base,
            ..EventInfo::default()
        });
    }
    Ok(EventInfo::default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPENED: &str =
        include_str!("../../tests/fixtures/github/pull_request__opened.payload.json");

    #[test]
    fn pull_request_events_give_the_head_not_the_merge_commit() {
        let info = parse_event(OPENED, "event.json").expect("parses");
        assert_eq!(info.pr_number, Some(2));
        assert_eq!(
            info.head_sha.as_deref(),
            Some("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
        );
        assert!(!info.from_fork);
        assert_eq!(info.base_ref.as_deref(), Some("master"));
        assert!(info.base_sha.is_some());
    }

    #[test]
    fn forks_are_recognised() {
        let mut event: serde_json::Value = serde_json::from_str(OPENED).expect("json");
        event["pull_request"]["head"]["repo"]["fork"] = true.into();
        event["pull_request"]["head"]["repo"]["full_name"] = "someone/Hello-World".into();
        let info = parse_event(&event.to_string(), "e").expect("parses");
        assert!(info.from_fork);
        // A deleted fork has no head repository: treat it as a fork.
        event["pull_request"]["head"]["repo"] = serde_json::Value::Null;
        assert!(
            parse_event(&event.to_string(), "e")
                .expect("parses")
                .from_fork
        );
    }

    #[test]
    fn workflow_run_events_and_others() {
        let run = r#"{"workflow_run": {"head_sha": "abc", "pull_requests": [{"number": 9}],
            "head_repository": {"full_name": "o/r"}, "repository": {"full_name": "o/r"}}}"#;
        assert_eq!(
            parse_event(run, "e").expect("parses"),
            EventInfo {
                pr_number: Some(9),
                head_sha: Some("abc".into()),
                from_fork: false,
                ..EventInfo::default()
            }
        );
        assert_eq!(
            parse_event(r#"{"schedule": "0 3 * * *"}"#, "e").expect("parses"),
            EventInfo::default()
        );
        let err = parse_event("{", "/tmp/event.json").expect_err("bad json");
        assert!(err.to_string().contains("/tmp/event.json"), "{err}");
    }
}
