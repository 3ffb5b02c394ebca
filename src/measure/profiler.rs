//! The profilers of an extra repeat (Nsight Systems, Nsight Compute): their command lines, where
//! they are on PATH, and the files they write read back (`nsys export`, `ncu --import`). I/O:
//! runs the profilers' helper commands and reads files; the readers (`evidence::nsys_sqlite`,
//! `evidence::ncu`) and the summary (`evidence::nsight`) are the pure side.

#![expect(
    clippy::disallowed_methods,
    reason = "a profiler writes its report as a file"
)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::evidence::{Options, ncu, nsys, nsys_sqlite, nsys_steps};

/// Set in a profiled repeat's environment to the profiler it runs under (`nsys` or `ncu`), so
/// that a harness can bracket its steps with `cudaProfilerStart`/`Stop` and NVTX ranges.
pub const PROFILER_ENV: &str = "UTILGATE_PROFILER";

/// The profiler of an extra repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Profiler {
    Nsys,
    Ncu { kernel_regex: String, count: u32 },
}

impl Profiler {
    #[must_use]
    pub fn program(&self) -> &'static str {
        match self {
            Profiler::Nsys => "nsys",
            Profiler::Ncu { .. } => "ncu",
        }
    }

    /// What to install when the program is not on PATH.
    #[must_use]
    pub fn install_hint(&self) -> &'static str {
        match self {
            Profiler::Nsys => {
                "install Nsight Systems (the CUDA toolkit's nsight-systems package, or NVIDIA's installer) and put its bin directory, with `nsys`, on PATH"
            }
            Profiler::Ncu { .. } => {
                "install Nsight Compute (the CUDA toolkit's nsight-compute package) and put `ncu` on PATH; reading counters needs an admin or NVreg_RestrictProfilingToAdminUsers=0"
            }
        }
    }

    /// The file the profiler writes for output base `out` (`-o out`).
    #[must_use]
    pub fn report_file(&self, out: &Path) -> PathBuf {
        let mut name = out.as_os_str().to_owned();
        name.push(match self {
            Profiler::Nsys => ".nsys-rep",
            Profiler::Ncu { .. } => ".ncu-rep",
        });
        PathBuf::from(name)
    }

    /// The harness command run under the profiler: `sh -c` keeps the command's own shell
    /// syntax; the profiler follows the processes it starts.
    #[must_use]
    pub fn wrap(&self, program: &Path, out: &Path, command: &str) -> String {
        let (p, o, c) = (
            quote(&program.to_string_lossy()),
            quote(&out.to_string_lossy()),
            quote(command),
        );
        match self {
            Profiler::Nsys => format!(
                "{p} profile -t cuda,nvtx,osrt --capture-range=cudaProfilerApi --capture-range-end=stop --force-overwrite true -o {o} sh -c {c}"
            ),
            Profiler::Ncu {
                kernel_regex,
                count,
            } => format!(
                "{p} --set full -k {} -c {count} --target-processes all --force-overwrite -o {o} sh -c {c}",
                quote(&format!("regex:{kernel_regex}"))
            ),
        }
    }
}

/// `text` as one shell word: the one shell quoter (shlex), shared with the command template.
/// A NUL byte, which no shell word can carry, is dropped (the command template refuses a value
/// holding one before it gets here; a path cannot hold one).
#[must_use]
pub fn quote(text: &str) -> String {
    shlex::try_quote(&text.replace('\0', ""))
        .expect("shlex quotes any text without a NUL byte")
        .into_owned()
}

/// The executable `program` on `path` (a PATH value), if any.
#[must_use]
pub fn find_on(program: &str, path: Option<&OsString>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path?)
        .map(|dir| dir.join(program))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The executable `program` on this process's PATH.
#[must_use]
pub fn find(program: &str) -> Option<PathBuf> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: looking for a profiler on PATH"
    )]
    let path = std::env::var_os("PATH");
    find_on(program, path.as_ref())
}

/// Why an Nsight file could not be read (a warning on a case; an error of `trace show`).
#[derive(Debug, thiserror::Error)]
pub enum NsightFileError {
    #[error("{} is an Nsight Systems report and nsys is not on PATH to export it", path.display())]
    NoNsys { path: PathBuf },
    #[error("{} is an Nsight Compute report and ncu is not on PATH to read it", path.display())]
    NoNcu { path: PathBuf },
    #[error("`{command}` failed: {message}")]
    Tool { command: String, message: String },
    #[error("failed to read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Nsys(#[from] nsys_sqlite::NsysError),
    #[error("Nsight Compute file {}: {source}", path.display())]
    Ncu {
        path: PathBuf,
        #[source]
        source: ncu::NcuError,
    },
}

impl NsightFileError {
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        match self {
            NsightFileError::NoNsys { path } => Some(format!(
                "run `{}` and give utilgate the .sqlite file",
                export_command("nsys", path, &sqlite_beside(path))
            )),
            NsightFileError::NoNcu { path } => Some(format!(
                "run `ncu --import {} --csv --page raw > {}` and give utilgate the .csv file",
                quote(&path.to_string_lossy()),
                quote(&path.with_extension("csv").to_string_lossy())
            )),
            NsightFileError::Tool { .. } => Some(
                "run the command by hand to see why; the profiler's version must be able to read the report".into(),
            ),
            NsightFileError::Io { .. } => {
                Some("check the path the harness reported (relative to its working directory)".into())
            }
            NsightFileError::Nsys(e) => e.hint(),
            NsightFileError::Ncu { source, .. } => source.hint(),
        }
    }

    /// The error and its fix on one line, for a case's warning.
    #[must_use]
    pub fn warning(&self) -> String {
        match self.hint() {
            Some(h) => format!("{self} (fix: {h})"),
            None => self.to_string(),
        }
    }
}

fn sqlite_beside(rep: &Path) -> PathBuf {
    rep.with_extension("sqlite")
}

fn export_command(program: &str, rep: &Path, out: &Path) -> String {
    format!(
        "{program} export --type sqlite --force-overwrite true --output {} {}",
        quote(&out.to_string_lossy()),
        quote(&rep.to_string_lossy())
    )
}

/// How long a profiler's helper command (`nsys export`, `ncu --import`) may take, and how much
/// it may print: it reads a report the harness wrote, checked to be a regular file moments
/// before, and a report swapped meanwhile for a FIFO or `/dev/zero` must end in an error, never
/// a run that waits forever or reads until memory runs out.
const TOOL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);
const TOOL_MAX_STDOUT: u64 = 1 << 30;

/// Runs a profiler's helper command and returns its stdout.
fn tool(program: &Path, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>, NsightFileError> {
    tool_within(program, args, TOOL_TIMEOUT, TOOL_MAX_STDOUT)
}

/// [`tool`] with its limits: killed past `timeout`, its stdout refused past `max_stdout` bytes.
fn tool_within(
    program: &Path,
    args: &[&std::ffi::OsStr],
    timeout: std::time::Duration,
    max_stdout: u64,
) -> Result<Vec<u8>, NsightFileError> {
    use std::io::Read as _;
    let command = std::iter::once(program.as_os_str())
        .chain(args.iter().copied())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let failed = |message: String| NsightFileError::Tool {
        command: command.clone(),
        message,
    };
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: nsys export / ncu --import on a report the harness wrote"
    )]
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed(e.to_string()))?;
    // Both pipes drain on their own threads (a full pipe would stall the tool); stdout stops
    // one byte past its cap.
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let out = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut stdout).take(max_stdout + 1).read_to_end(&mut bytes);
        bytes
    });
    let err = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut bytes);
        bytes
    });
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| failed(e.to_string()))? {
            break status;
        }
        if started.elapsed() >= timeout {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!(
                "still running after {}: stopped (the report it reads may not be a report)",
                crate::report::format::duration(timeout.as_secs_f64())
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    if stdout.len() as u64 > max_stdout {
        return Err(failed(format!(
            "printed more than {max_stdout} bytes: not read"
        )));
    }
    if !status.success() {
        let stderr = crate::measure::protocol::sanitize(&String::from_utf8_lossy(&stderr));
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(failed(format!("{status}: {}", tail.join(" / "))));
    }
    Ok(stdout)
}

/// Whether `path` is an nsys report (`.nsys-rep`, the older `.qdrep`) rather than an export.
#[must_use]
pub fn is_nsys_report(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("nsys-rep" | "qdrep")
    )
}

/// Whether `path` is an ncu report (`.ncu-rep`, the older `.nsight-cuprof-report`).
#[must_use]
pub fn is_ncu_report(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("ncu-rep" | "nsight-cuprof-report")
    )
}

/// The `SQLite` export of `path`: itself when it is one; for a `.nsys-rep`, the `.sqlite`
/// beside it when newer, else what `nsys export` writes to `out` (beside it when `None`).
pub fn nsys_sqlite(
    path: &Path,
    nsys: Option<&Path>,
    out: Option<&Path>,
) -> Result<PathBuf, NsightFileError> {
    if !is_nsys_report(path) {
        return Ok(path.to_owned());
    }
    let beside = sqlite_beside(path);
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    if out.is_none()
        && let (Some(s), Some(r)) = (modified(&beside), modified(path))
        && s >= r
    {
        return Ok(beside);
    }
    readable(path)?;
    let nsys = nsys.ok_or_else(|| NsightFileError::NoNsys {
        path: path.to_owned(),
    })?;
    let target = out.map_or(beside, Path::to_path_buf);
    tool(
        nsys,
        &[
            "export".as_ref(),
            "--type".as_ref(),
            "sqlite".as_ref(),
            "--force-overwrite".as_ref(),
            "true".as_ref(),
            "--output".as_ref(),
            target.as_os_str(),
            path.as_os_str(),
        ],
    )?;
    Ok(target)
}

/// That `path` is a regular file that can be read, before a profiler is asked to read it (a
/// FIFO would block the profiler): else the I/O error naming it.
fn readable(path: &Path) -> Result<(), NsightFileError> {
    crate::evidence::file::check_regular(path).map_err(|source| NsightFileError::Io {
        path: path.to_owned(),
        source,
    })
}

/// The `ncu --csv` text of `path`: itself, or for a `.ncu-rep` what `ncu --import --csv --page
/// raw` prints. A CSV is read only when a regular file of at most `cap` bytes.
pub fn ncu_text(path: &Path, ncu_bin: Option<&Path>, cap: u64) -> Result<String, NsightFileError> {
    let bytes = if is_ncu_report(path) {
        readable(path)?;
        let bin = ncu_bin.ok_or_else(|| NsightFileError::NoNcu {
            path: path.to_owned(),
        })?;
        tool(
            bin,
            &[
                "--import".as_ref(),
                path.as_os_str(),
                "--csv".as_ref(),
                "--page".as_ref(),
                "raw".as_ref(),
            ],
        )?
    } else {
        crate::evidence::file::read_capped(path, cap).map_err(|source| NsightFileError::Io {
            path: path.to_owned(),
            source,
        })?
    };
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// An export read and summarised: its `nsys stats` tables and the per-NVTX-step analysis.
pub fn summarise_nsys(
    sqlite: &Path,
    options: &Options,
) -> Result<(nsys::Summary, nsys_steps::NsysSteps), NsightFileError> {
    let export = nsys_sqlite::read(sqlite)?;
    let steps = nsys_steps::analyse_export(&export, options);
    Ok((nsys::summarise(&export), steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_helper_command_that_never_ends_is_stopped_and_one_that_floods_is_refused() {
        // A profiler reading a FIFO swapped in for its report would block for ever.
        let started = std::time::Instant::now();
        let err = tool_within(
            Path::new("sleep"),
            &["30".as_ref()],
            std::time::Duration::from_millis(200),
            1024,
        )
        .expect_err("stopped");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        assert!(
            err.to_string().contains("still running after 0.2 s"),
            "{err}"
        );
        // One reading /dev/zero would print until memory ran out.
        let err = tool_within(
            Path::new("head"),
            &["-c".as_ref(), "1000000".as_ref(), "/dev/zero".as_ref()],
            std::time::Duration::from_secs(10),
            1000,
        )
        .expect_err("refused");
        assert!(err.to_string().contains("printed more than"), "{err}");
        // A well-behaved one is read whole.
        let out = tool_within(
            Path::new("printf"),
            &["a,b\\n1,2".as_ref()],
            std::time::Duration::from_secs(10),
            1000,
        )
        .expect("runs");
        assert_eq!(out, b"a,b\n1,2");
    }

    #[test]
    fn the_profiled_command_keeps_the_harness_command_as_one_word() {
        let cmd = "cd bench && python3 run.py --name 'a b'";
        let nsys = Profiler::Nsys.wrap(Path::new("/opt/nsys"), Path::new("/tmp/d/case"), cmd);
        // The shell splits it back into the profiler's words, the command one word of them.
        let words = shlex::split(&nsys).expect("one shell line");
        assert_eq!(words.first().map(String::as_str), Some("/opt/nsys"));
        assert_eq!(&words[words.len() - 3..], ["sh", "-c", cmd]);
        assert!(
            words.windows(2).any(|w| w == ["-o", "/tmp/d/case"]),
            "{nsys}"
        );
        let ncu = Profiler::Ncu {
            kernel_regex: "gemm|gemv".into(),
            count: 5,
        }
        .wrap(Path::new("ncu"), Path::new("/tmp/o"), "sh h.sh");
        assert!(
            ncu.starts_with("ncu --set full -k 'regex:gemm|gemv' -c 5 --target-processes all"),
            "{ncu}"
        );
        let words = shlex::split(&ncu).expect("one shell line");
        assert_eq!(&words[words.len() - 3..], ["sh", "-c", "sh h.sh"]);
        assert_eq!(
            Profiler::Nsys.report_file(Path::new("/tmp/d/case")),
            PathBuf::from("/tmp/d/case.nsys-rep")
        );
    }

    #[test]
    fn a_report_without_its_tool_names_the_command_to_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rep = dir.path().join("run.nsys-rep");
        std::fs::write(&rep, b"not sqlite").expect("write");
        let err = nsys_sqlite(&rep, None, None).expect_err("no nsys");
        let w = err.warning();
        assert!(w.contains("nsys is not on PATH"), "{w}");
        assert!(
            w.contains("nsys export --type sqlite --force-overwrite true --output"),
            "{w}"
        );
        assert!(w.contains("run.sqlite"), "{w}");
        let rep = dir.path().join("k.ncu-rep");
        std::fs::write(&rep, b"x").expect("write");
        let w = ncu_text(&rep, None, crate::evidence::file::DEFAULT_CAP_BYTES)
            .expect_err("no ncu")
            .warning();
        assert!(w.contains("ncu --import"), "{w}");
        assert!(find_on("surely-not-a-program", Some(&OsString::from("/bin"))).is_none());
        assert!(find_on("sh", Some(&OsString::from("/nonexistent:/bin:/usr/bin"))).is_some());
    }
}
