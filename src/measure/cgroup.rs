//! A cgroup v2 scope per harness repeat, where the machine allows it: a directory
//! `utilgate.<pid>.<n>` under utilgate's own cgroup in the unified hierarchy. Every process the
//! harness starts lands in it, including one that double-forks and calls `setsid` to leave the
//! process group, so killing the scope (`cgroup.kill`) reaches them all. Where there is no
//! writable cgroup v2 hierarchy (no cgroup2 mount, an unprivileged user, a read-only cgroupfs)
//! [`Scope::create`] returns `None` and the harness runner relies on the process group and the
//! guard's child-subreaper sweep instead (docs/reliability.md). I/O: /proc and the cgroup
//! file system.

#![expect(
    clippy::disallowed_methods,
    reason = "a cgroup is driven through its files"
)]

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The prefix of every scope utilgate creates.
const SCOPE_PREFIX: &str = "utilgate.";

static NEXT_SCOPE: AtomicU32 = AtomicU32::new(0);

/// One repeat's cgroup. Removed (its processes killed first) on drop.
#[derive(Debug)]
pub struct Scope {
    dir: PathBuf,
}

impl Scope {
    /// Creates a fresh scope under this process's cgroup v2, or `None` where that is not
    /// possible here.
    #[must_use]
    pub fn create() -> Option<Scope> {
        let parent = own_cgroup_dir()?;
        let n = NEXT_SCOPE.fetch_add(1, Ordering::Relaxed);
        let dir = parent.join(format!("{SCOPE_PREFIX}{}.{n}", std::process::id()));
        fs::create_dir(&dir).ok()?;
        // A scope that cannot take processes is no scope: check it once, here.
        if !dir.join("cgroup.procs").exists() {
            let _ = fs::remove_dir(&dir);
            return None;
        }
        Some(Scope { dir })
    }

    /// The scope's directory (handed to the guard, which moves the harness into it).
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether any process is still in the scope.
    #[must_use]
    pub fn populated(&self) -> bool {
        populated(&self.dir)
    }

    /// SIGKILL to every process in the scope; waits (bounded) until it is empty.
    pub fn kill_all(&self, wait: Duration) {
        kill_scope(&self.dir, wait);
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        kill_scope(&self.dir, Duration::from_secs(2));
        let _ = fs::remove_dir(&self.dir);
    }
}

/// Moves process `pid` (0: the caller) into the cgroup at `dir`.
pub fn enter(dir: &Path, pid: u32) -> io::Result<()> {
    fs::write(dir.join("cgroup.procs"), pid.to_string())
}

/// The processes in the cgroup at `dir`.
#[must_use]
pub fn members(dir: &Path) -> Vec<Pid> {
    fs::read_to_string(dir.join("cgroup.procs"))
        .map(|text| {
            text.lines()
                .filter_map(|l| l.trim().parse().ok())
                .map(Pid::from_raw)
                .collect()
        })
        .unwrap_or_default()
}

fn populated(dir: &Path) -> bool {
    match fs::read_to_string(dir.join("cgroup.events")) {
        Ok(events) => events.lines().any(|l| l.trim() == "populated 1"),
        Err(_) => !members(dir).is_empty(),
    }
}

/// Kills everything in the cgroup at `dir`: `cgroup.kill` where the kernel has it (5.14+),
/// else SIGKILL to each member until none is left (members may fork meanwhile).
pub fn kill_scope(dir: &Path, wait: Duration) {
    if !dir.exists() {
        return;
    }
    let end = Instant::now() + wait;
    let has_kill = fs::write(dir.join("cgroup.kill"), "1").is_ok();
    loop {
        if !populated(dir) {
            return;
        }
        if !has_kill {
            for pid in members(dir) {
                let _ = kill(pid, Signal::SIGKILL);
            }
        }
        if Instant::now() >= end {
            return;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Removes the scopes of earlier utilgate processes that died (killed before they could clean
/// up), killing whatever still runs in them. Returns how many were swept.
pub fn sweep_stale() -> usize {
    let Some(parent) = own_cgroup_dir() else {
        return 0;
    };
    let Ok(entries) = fs::read_dir(&parent) else {
        return 0;
    };
    let mut swept = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name.to_str().and_then(scope_owner) else {
            continue;
        };
        if owner == std::process::id() || process_alive(owner) {
            continue;
        }
        let dir = entry.path();
        kill_scope(&dir, Duration::from_secs(2));
        if fs::remove_dir(&dir).is_ok() {
            swept += 1;
        }
    }
    swept
}

/// The pid of the utilgate that made a scope named `utilgate.<pid>.<n>`.
fn scope_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(SCOPE_PREFIX)?;
    let (pid, n) = rest.split_once('.')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Whether a process with this pid exists (zombies count: a zombie owner is being reaped).
#[must_use]
pub fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
}

/// This process's cgroup directory in the unified (v2) hierarchy, when it is mounted.
fn own_cgroup_dir() -> Option<PathBuf> {
    let cgroup = fs::read_to_string("/proc/self/cgroup").ok()?;
    let relative = unified_path(&cgroup)?;
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let (root, mount) = cgroup2_mount(&mountinfo)?;
    // The mount shows the hierarchy from `root` down (a container sees only its part).
    let inside = Path::new(relative).strip_prefix(&root).ok()?;
    let dir = mount.join(inside);
    dir.is_dir().then_some(dir)
}

/// The path of the `0::` line of /proc/self/cgroup (cgroup v2).
fn unified_path(cgroup: &str) -> Option<&str> {
    cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::trim)
}

/// The (root, mount point) of the first cgroup2 mount in /proc/self/mountinfo:
/// "id parent major:minor root mount-point options ... - fstype source super-options".
fn cgroup2_mount(mountinfo: &str) -> Option<(PathBuf, PathBuf)> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        if right.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mut fields = left.split_whitespace();
        let root = fields.nth(3)?;
        let mount = fields.next()?;
        if !left
            .split_whitespace()
            .nth(5)?
            .split(',')
            .any(|o| o == "rw")
        {
            return None;
        }
        Some((
            PathBuf::from(unescape(root)),
            PathBuf::from(unescape(mount)),
        ))
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape(field: &str) -> String {
    let mut out = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|d| u8::from_str_radix(d, 8).ok());
        if let Some(byte) = code {
            out.push(char::from(byte));
            rest = &rest[at + 4..];
        } else {
            out.push('\\');
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_and_cgroup_lines_parse() {
        let info = "30 25 0:26 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n\
                    38 25 0:34 / /sys/fs/cgroup/unified rw,relatime shared:17 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(info),
            Some((PathBuf::from("/"), PathBuf::from("/sys/fs/cgroup/unified")))
        );
        let ro = "38 25 0:34 /a /sys/fs/my\\040cg ro,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(cgroup2_mount(ro), None);
        let rw = ro.replace(" ro,", " rw,");
        assert_eq!(
            cgroup2_mount(&rw),
            Some((PathBuf::from("/a"), PathBuf::from("/sys/fs/my cg")))
        );
        assert_eq!(
            unified_path("1:cpu:/\n0::/user.slice/x\n"),
            Some("/user.slice/x")
        );
        assert_eq!(unified_path("1:cpu:/\n"), None);
    }

    #[test]
    fn scope_names_carry_their_owner() {
        assert_eq!(scope_owner("utilgate.1234.7"), Some(1234));
        assert_eq!(scope_owner("utilgate.1234"), None);
        assert_eq!(scope_owner("other.1234.7"), None);
    }

    #[test]
    fn a_scope_holds_and_kills_a_harness_or_the_machine_allows_none() {
        let Some(scope) = Scope::create() else {
            // The fallback is legitimate only where no writable cgroup v2 exists.
            let writable = own_cgroup_dir().is_some_and(|d| {
                let probe = d.join(format!("utilgate.probe.{}", std::process::id()));
                let made = fs::create_dir(&probe).is_ok();
                let _ = fs::remove_dir(&probe);
                made
            });
            assert!(
                !writable,
                "a writable cgroup v2 exists but no scope was made"
            );
            return;
        };
        let dir = scope.dir().to_path_buf();
        #[expect(clippy::disallowed_methods, reason = "test: a real child process")]
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .expect("sleep starts");
        enter(&dir, child.id()).expect("move into the scope");
        assert!(scope.populated());
        scope.kill_all(Duration::from_secs(5));
        let status = child.wait().expect("reaped");
        assert!(!status.success());
        drop(scope);
        assert!(!dir.exists());
    }
}
