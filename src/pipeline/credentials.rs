//! The edge of [`crate::trust::credentials`]: read utilgate's own environment, the store it
//! was given and the checkout's git config, and refuse to go on while a GitHub token or the
//! store's password is there. A harness can read `/proc/<utilgate>/environ`, its command line
//! and `.git/config`, so keeping a secret out of the harness's own environment is not enough
//! (DESIGN.md §13). Does I/O (environment, git).

use std::path::Path;

use crate::config::LoadedConfig;
use crate::error::Error;
use crate::github::GithubError;
use crate::trust;

/// `git config --get-regexp` for the headers `actions/checkout` persists (includes followed,
/// so `persist-credentials` in its own file counts too); empty when git or the repo is absent.
fn git_extraheaders(checkout: &Path) -> String {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: asking git whether the checkout kept a credential"
    )]
    let out = std::process::Command::new("git")
        .args(["config", "--get-regexp", r"^http\..*\.extraheader$"])
        .current_dir(checkout)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    out.ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Refuse to start a harness of `loaded`'s checkout while utilgate holds a GitHub credential
/// or a database password in its environment, the store it was given (`db`, else the
/// config's) carries a password, or the checkout kept a token. Names what it found, never a
/// value.
pub fn refuse_near_harness(loaded: &LoadedConfig, db: Option<&Path>) -> Result<(), Error> {
    let store = loaded.store_path(db);
    // Every variable a harness could read from utilgate's environment.
    let vars: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let found = trust::credentials(
        vars.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        Some(&store.to_string_lossy()),
        &git_extraheaders(&loaded.dir),
    );
    if found.is_empty() {
        return Ok(());
    }
    Err(GithubError::CredentialNearHarness {
        database: found.iter().any(trust::Credential::is_database),
        found: found.iter().map(ToString::to_string).collect(),
    }
    .into())
}
