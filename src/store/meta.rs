//! Run metadata: which commit, branch, trigger and pull request a run measured, from flags,
//! then GitHub Actions' variables, then git. Pure: the environment and git arrive as lookup
//! functions, asked only for what the flags and the environment leave open.

/// What the command line gave explicitly (`--git-sha`, `--branch`, `--trigger`, `--pr`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFlags {
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub trigger: Option<String>,
    pub pr_number: Option<u64>,
}

/// What a run is measuring, from flags, the CI environment, or git.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunMeta {
    pub git_sha: Option<String>,
    pub branch: Option<String>,
    pub trigger: String,
    pub pr_number: Option<u64>,
    /// The pull request's head commit, from the `pull_request` event (`git_sha` is then the
    /// merge commit Actions checks out); publish checks it. Set by the caller from the event.
    pub head_sha: Option<String>,
}

/// Whether a run with this trigger and pull-request number was measured for a pull request:
/// it carries a pull request's number, or a `pull_request*` event started it. Such a run is
/// advice to its pull request: it never moves a baseline and never enters a branch's reference
/// or history, whatever its branch is called (a fork may name its branch `main`). The store's
/// queries say the same in SQL (`store::pull_requests`).
#[must_use]
pub fn is_pull_request_run(trigger: Option<&str>, pr_number: Option<u64>) -> bool {
    pr_number.is_some() || trigger.is_some_and(|t| t.starts_with(PULL_REQUEST_TRIGGER))
}

/// The prefix of the triggers of a pull request's runs (`pull_request`, `pull_request_target`):
/// GitHub's event names.
pub const PULL_REQUEST_TRIGGER: &str = "pull_request";

impl RunMeta {
    /// Whether this run is measured for a pull request ([`is_pull_request_run`]).
    #[must_use]
    pub fn for_pull_request(&self) -> bool {
        is_pull_request_run(Some(&self.trigger), self.pr_number)
    }
}

/// Resolve run metadata: flags first, then GitHub Actions' variables, then git. Pure: the
/// environment and git's two answers arrive as lookup functions; git is asked only for what
/// the flags and the environment leave open.
pub fn resolve_meta(
    flags: &MetaFlags,
    env: &dyn Fn(&str) -> Option<String>,
    git_sha: &dyn Fn() -> Option<String>,
    git_branch: &dyn Fn() -> Option<String>,
) -> RunMeta {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty());
    let pr_from_ref = non_empty("GITHUB_REF").and_then(|r| {
        r.strip_prefix("refs/pull/")
            .and_then(|rest| rest.split('/').next())
            .and_then(|n| n.parse().ok())
    });
    RunMeta {
        git_sha: flags
            .git_sha
            .clone()
            .or_else(|| non_empty("GITHUB_SHA"))
            .or_else(git_sha),
        branch: flags
            .branch
            .clone()
            .or_else(|| non_empty("GITHUB_HEAD_REF"))
            .or_else(|| non_empty("GITHUB_REF_NAME"))
            .or_else(git_branch),
        trigger: flags
            .trigger
            .clone()
            .or_else(|| non_empty("GITHUB_EVENT_NAME"))
            .unwrap_or_else(|| "manual".to_owned()),
        pr_number: flags.pr_number.or(pr_from_ref),
        head_sha: None,
    }
}
