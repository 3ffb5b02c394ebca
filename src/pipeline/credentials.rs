//! The edge of [`crate::trust::credentials`]: read the environments of utilgate and of every
//! process that started it, the store locations it was given and the checkout's git config,
//! and refuse to go on while a GitHub token, a database password or a `PostgreSQL` store is
//! there. A harness can read `/proc/<pid>/environ` of every process of its user, its command
//! line, the config file and `.git/config`, so keeping a secret out of the harness's own
//! environment is not enough (DESIGN.md §13). Does I/O (environment, `/proc`, git).

#![expect(
    clippy::disallowed_methods,
    reason = "the environments of utilgate's parents are files under /proc"
)]

use std::path::Path;

use crate::config::LoadedConfig;
use crate::error::Error;
use crate::github::GithubError;
use crate::trust::{self, Holder, ProcessEnv, StoreOrigin, StoreSetting};

/// How far up the chain of parents to look: far more than any wrapper nests, and a bound should
/// `/proc` ever describe a loop.
const MAX_GENERATIONS: usize = 64;

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

/// The `NAME=value` entries of a `/proc/<pid>/environ` (NUL-separated).
fn parse_environ(bytes: &[u8]) -> Vec<(String, String)> {
    bytes
        .split(|&b| b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (name, value) = entry.split_once('=')?;
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the parenthesised name, which
/// may itself hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, fields) = stat.rsplit_once(')')?;
    fields.split_whitespace().nth(1)?.parse().ok()
}

/// The kernel's name of `pid` (`/proc/<pid>/comm`), printable ASCII only: a process may name
/// itself anything.
fn name_of(pid: u32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let name: String = comm
        .trim_end()
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .collect();
    if name.is_empty() {
        "unknown".to_owned()
    } else {
        name
    }
}

/// utilgate's environment (as it is now, and as it started: `/proc/self/environ` keeps what a
/// later `unsetenv` dropped), then the environment of each process that started it, up to
/// `init`, that this user may read: the same ones its harness could read. A process of
/// another user is skipped (its environment is unreadable to the harness too). Outside Linux
/// only utilgate's own.
fn environments() -> Vec<ProcessEnv> {
    let mut own: Vec<(String, String)> = std::env::vars_os()
        .map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if let Ok(bytes) = std::fs::read("/proc/self/environ") {
        own.extend(parse_environ(&bytes));
    }
    let mut envs = vec![ProcessEnv {
        holder: Holder::Utilgate,
        vars: own,
    }];
    let mut pid = std::os::unix::process::parent_id();
    for generation in 1..=MAX_GENERATIONS {
        if pid == 0 {
            break;
        }
        if let Ok(bytes) = std::fs::read(format!("/proc/{pid}/environ")) {
            envs.push(ProcessEnv {
                holder: Holder::Ancestor {
                    pid,
                    name: name_of(pid),
                    generation,
                },
                vars: parse_environ(&bytes),
            });
        }
        match parent_of(pid) {
            Some(parent) if parent != pid => pid = parent,
            _ => break,
        }
    }
    envs
}

/// The store locations this command was given: the one it opens (`db`, else the config's URL
/// or file), and the config's `[store] url` when `db` points elsewhere (a harness can read the
/// config file as well as utilgate can).
fn store_settings<'a>(
    loaded: &'a LoadedConfig,
    db: Option<&'a str>,
    config_path: &str,
) -> Vec<StoreSetting<'a>> {
    let config_url = loaded.config.store.url.as_deref();
    let mut stores = Vec::new();
    if let Some(db) = db {
        stores.push(StoreSetting {
            origin: StoreOrigin::Flag,
            location: db,
            opened: true,
        });
    }
    if let Some(url) = config_url {
        stores.push(StoreSetting {
            origin: StoreOrigin::Config(config_path.to_owned()),
            location: url,
            opened: db.is_none(),
        });
    }
    stores
}

/// Refuse to start a harness of `loaded`'s checkout while utilgate, or a process that started
/// it, holds a GitHub credential or a database password in its environment, a store location
/// it was given (`db` or the config's `[store] url`) carries a password, the store it opens is
/// `PostgreSQL`, or the checkout kept a token. Names what it found and where, never a value.
pub(crate) fn refuse_near_harness(loaded: &LoadedConfig, db: Option<&Path>) -> Result<(), Error> {
    let db = db.map(|p| p.to_string_lossy().into_owned());
    let config_path = loaded.path.display().to_string();
    let found = trust::credentials(
        &environments(),
        &store_settings(loaded, db.as_deref(), &config_path),
        &git_extraheaders(&loaded.dir),
    );
    if found.is_empty() {
        return Ok(());
    }
    Err(GithubError::CredentialNearHarness {
        token: !found.iter().all(trust::Credential::is_database),
        database: found.iter().any(trust::Credential::is_database),
        inherited: found.iter().any(trust::Credential::is_inherited),
        found: found.iter().map(ToString::to_string).collect(),
    }
    .into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environ_entries_split_at_nul_and_the_first_equals_sign() {
        let parsed = parse_environ(b"A=1\0URL=postgres://u:p=w@h/d\0NOEQUALS\0\0EMPTY=\0");
        assert_eq!(
            parsed,
            vec![
                ("A".to_owned(), "1".to_owned()),
                ("URL".to_owned(), "postgres://u:p=w@h/d".to_owned()),
                ("EMPTY".to_owned(), String::new()),
            ]
        );
    }

    /// The chain this test process sits in: its own parent is the first ancestor, read from
    /// the same `/proc` files the check reads.
    #[test]
    #[cfg(target_os = "linux")]
    fn the_chain_of_parents_starts_at_this_process_parent() {
        let me = std::process::id();
        assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
        let envs = environments();
        assert_eq!(envs[0].holder, Holder::Utilgate);
        if let Some(first) = envs.get(1) {
            assert!(
                matches!(first.holder, Holder::Ancestor { generation, .. } if generation >= 1),
                "{:?}",
                first.holder
            );
        }
        assert!(!name_of(me).is_empty());
    }
}
