//! The temporary directory a run's harness results files live in: `utilgate-<pid>-<random>`
//! under the system's temporary directory, removed when the run ends. A utilgate killed by
//! SIGKILL cannot remove its own, so every `utilgate run` first sweeps the directories of
//! utilgate processes that no longer exist (and their leftover cgroup scopes). I/O: the file
//! system.

#![expect(
    clippy::disallowed_methods,
    reason = "each repeat gets a working directory of its own"
)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::measure::cgroup;

const PREFIX: &str = "utilgate-";

/// The run's results directory; removed on drop.
#[derive(Debug)]
pub struct RunDir {
    dir: tempfile::TempDir,
    next: u32,
}

impl RunDir {
    /// Creates the directory under `tmp`.
    pub fn create(tmp: &Path) -> io::Result<RunDir> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .tempdir_in(tmp)?;
        Ok(RunDir { dir, next: 0 })
    }

    /// A fresh, empty directory for one repeat's results file.
    pub fn repeat_dir(&mut self) -> io::Result<PathBuf> {
        let path = self.dir.path().join(format!("r{}", self.next));
        self.next += 1;
        fs::create_dir(&path)?;
        Ok(path)
    }

    #[must_use]
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes the results directories under `tmp` and the cgroup scopes left by utilgate
/// processes that are gone. Returns how many directories were removed.
pub fn sweep_stale(tmp: &Path) -> usize {
    cgroup::sweep_stale();
    let Ok(entries) = fs::read_dir(tmp) else {
        return 0;
    };
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(owner_pid) else {
            continue;
        };
        if owner == std::process::id() || cgroup::process_alive(owner) {
            continue;
        }
        // Only directories this user owns and can remove; anything else is not ours to touch.
        if entry.file_type().is_ok_and(|t| t.is_dir()) && fs::remove_dir_all(entry.path()).is_ok() {
            swept += 1;
        }
    }
    swept
}

/// The pid in a name `utilgate-<pid>-<random>`.
fn owner_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, random) = rest.split_once('-')?;
    (!random.is_empty()).then_some(())?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_owner() {
        assert_eq!(owner_pid("utilgate-123-abC9"), Some(123));
        assert_eq!(owner_pid("utilgate-123-"), None);
        assert_eq!(owner_pid("utilgate-x-abc"), None);
        assert_eq!(owner_pid("other-123-abc"), None);
    }

    #[test]
    fn dead_owners_are_swept_and_live_ones_kept() {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut mine = RunDir::create(tmp.path()).expect("run dir");
        let repeat = mine.repeat_dir().expect("repeat dir");
        fs::write(repeat.join("repeat-0.jsonl"), "{}").expect("write");
        // pid_max is at most 2^22: this pid never exists.
        let dead = tmp.path().join("utilgate-4294967-abcdef");
        fs::create_dir_all(dead.join("r0")).expect("mkdir");
        let unrelated = tmp.path().join("utilgate-notes");
        fs::create_dir_all(&unrelated).expect("mkdir");
        assert_eq!(sweep_stale(tmp.path()), 1);
        assert!(!dead.exists());
        assert!(mine.path().exists() && unrelated.exists());
        let path = mine.path().to_path_buf();
        drop(mine);
        assert!(!path.exists());
    }
}
