//! Terminal output: results on stdout, progress, warnings and errors on stderr, the colour
//! choice, and quiet handling of a closed pipe. Does I/O (stdout and stderr only).

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU8, Ordering};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Error;
use crate::cli::ColorChoice;

static COLOR: AtomicU8 = AtomicU8::new(0);

/// Record `--color` for the rest of the process.
pub fn set_color(choice: ColorChoice) {
    let v = match choice {
        ColorChoice::Auto => 0,
        ColorChoice::Always => 1,
        ColorChoice::Never => 2,
    };
    COLOR.store(v, Ordering::Relaxed);
}

/// Whether stdout gets colour: `--color`, else a terminal without `NO_COLOR` or `TERM=dumb`.
#[must_use]
pub fn color_stdout() -> bool {
    match COLOR.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let env = crate::commands::env_lookup();
            std::io::stdout().is_terminal()
                && env("NO_COLOR").is_none_or(|v| v.is_empty())
                && env("TERM").as_deref() != Some("dumb")
        }
    }
}

/// The width tables on stdout fit: `COLUMNS` when set, else the terminal's; `None` when stdout
/// is not a terminal (a pipe or a file gets unwrapped rows).
#[must_use]
pub fn stdout_width() -> Option<u16> {
    let env = crate::commands::env_lookup();
    if let Some(columns) = env("COLUMNS").and_then(|c| c.trim().parse::<u16>().ok())
        && columns > 0
    {
        return Some(columns);
    }
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    terminal_size::terminal_size_of(stdout).map(|(w, _)| w.0)
}

/// Write a result to stdout. A closed pipe (`utilgate runs list | head`) is not an error.
pub fn emit(text: &str) -> Result<(), Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Io {
            path: "<stdout>".into(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// A warning on stderr.
#[expect(clippy::print_stderr, reason = "warnings go to stderr by design")]
pub fn warn(text: &str) {
    eprintln!("warning: {text}");
}

/// Print an error and its hint to stderr and return exit code 2.
#[expect(clippy::print_stderr, reason = "errors go to stderr by design")]
#[must_use]
pub fn report_error(err: &Error) -> ExitCode {
    let message = err.to_string();
    eprintln!("error: {message}");
    // Causes not already in the message (e.g. the SQLite error behind a store error).
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            eprintln!("  caused by: {text}");
        }
        source = cause.source();
    }
    if let Some(hint) = err.hint() {
        eprintln!("hint: {hint}");
    }
    crate::error::Exit::Error.into()
}

/// Progress of a run on stderr: a bar in a terminal, one plain line per case otherwise
/// (GitHub Actions logs, files).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    #[must_use]
    pub fn new(cases: u64, in_ci: bool) -> Progress {
        let interactive = std::io::stderr().is_terminal() && !in_ci;
        let bar = interactive.then(|| {
            let bar = ProgressBar::with_draw_target(Some(cases), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{bar:30} {pos}/{len} cases  {elapsed}  {msg}")
            {
                bar.set_style(style);
            }
            bar
        });
        Progress { bar }
    }

    pub fn start_case(&self, case: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(case.to_owned());
        }
    }

    #[expect(clippy::print_stderr, reason = "progress goes to stderr by design")]
    pub fn finish_case(&self, case: &str, error: Option<&str>) {
        match &self.bar {
            Some(bar) => {
                if let Some(err) = error {
                    bar.println(format!("error: {case}: {err}"));
                }
                bar.inc(1);
            }
            None => match error {
                Some(err) => eprintln!("case {case}: error: {err}"),
                None => eprintln!("case {case}: measured"),
            },
        }
    }

    pub fn warn(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("warning: {text}")),
            None => warn(text),
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
