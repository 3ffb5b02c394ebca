//! Terminal output: results on stdout, progress, warnings and errors on stderr, the colour
//! choice, and quiet handling of a closed pipe. Does I/O (stdout and stderr only).
//!
//! `--color` is resolved once, at the start of a command ([`set_color`]), through anstream's
//! process-wide choice, the mechanism cargo uses: stdout's renderers ask [`color_stdout`], and
//! stderr's prefixes (`error:` red, `warning:` yellow, `hint:` cyan) are written through
//! anstream, which strips the styling when stderr is not a terminal, under `NO_COLOR`, or with
//! `--color never`.

use std::fmt::Display;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Instant;

use anstream::ColorChoice as Choice;
use anstyle::{AnsiColor, Style};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::Error;
use crate::cli::ColorChoice;

const ERROR: Style = AnsiColor::Red.on_default().bold();
const WARNING: Style = AnsiColor::Yellow.on_default().bold();
const HINT: Style = AnsiColor::Cyan.on_default().bold();

/// Record `--color` for the rest of the process (stdout and stderr alike).
pub fn set_color(choice: ColorChoice) {
    Choice::write_global(match choice {
        ColorChoice::Auto => Choice::Auto,
        ColorChoice::Always => Choice::Always,
        ColorChoice::Never => Choice::Never,
    });
}

/// Whether stdout gets colour: `--color`, else a terminal without `NO_COLOR` (or `TERM=dumb`,
/// or `CLICOLOR=0`; `CLICOLOR_FORCE` forces it).
#[must_use]
pub fn color_stdout() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != Choice::Never
}

/// `label` in `style` when stderr takes colour (anstream strips it otherwise).
fn styled(style: Style, label: &str) -> impl Display + '_ {
    struct Styled<'a>(Style, &'a str);
    impl Display for Styled<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}{}{}", self.0.render(), self.1, self.0.render_reset())
        }
    }
    Styled(style, label)
}

/// One line on stderr, its styling kept or stripped by anstream.
fn stderr_line(line: &str) {
    let mut err = anstream::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// How human reports on stdout are drawn: `--color` (resolved once at start) and the width.
#[must_use]
pub fn stdout_terminal() -> crate::report::Terminal {
    crate::report::Terminal {
        color: color_stdout(),
        width: stdout_width(),
    }
}

/// The width tables on stdout fit: `COLUMNS` when set, else the terminal's; `None` when stdout
/// is not a terminal (a pipe or a file gets unwrapped rows).
#[must_use]
pub fn stdout_width() -> Option<u16> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the terminal's width is read where the terminal is written"
    )]
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
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
    let text = crate::redact::redact(text);
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
pub fn warn(text: &str) {
    stderr_line(&warning_line(text));
}

fn warning_line(text: &str) -> String {
    format!(
        "{} {}",
        styled(WARNING, "warning:"),
        crate::redact::redact(text)
    )
}

/// A note on stderr: what the run is about to do, what it kept or discarded.
#[expect(clippy::print_stderr, reason = "notes go to stderr by design")]
pub fn note(text: &str) {
    eprintln!("{}", crate::redact::redact(text));
}

/// Print an error and its hint to stderr and return exit code 2.
#[must_use]
pub fn report_error(err: &Error) -> ExitCode {
    let message = crate::redact::redact(&err.to_string());
    stderr_line(&format!("{} {message}", styled(ERROR, "error:")));
    // Causes not already in the message (e.g. the SQLite error behind a store error).
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        let text = crate::redact::redact(&cause.to_string());
        if !message.contains(&text) {
            stderr_line(&format!("  caused by: {text}"));
        }
        source = cause.source();
    }
    if let Some(hint) = err.hint() {
        stderr_line(&format!(
            "{} {}",
            styled(HINT, "hint:"),
            crate::redact::redact(&hint)
        ));
    }
    crate::error::Exit::Error.into()
}

/// Progress of a run on stderr: a bar in a terminal; otherwise (GitHub Actions logs, files) one
/// plain line when a case starts and one when it ends, with its time.
pub struct Progress {
    bar: Option<ProgressBar>,
    cases: u64,
    /// The case being measured: its ordinal and when it started.
    current: std::cell::Cell<(u64, Option<Instant>)>,
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
        Progress {
            bar,
            cases,
            current: std::cell::Cell::new((0, None)),
        }
    }

    pub fn start_case(&self, case: &str) {
        let ordinal = self.current.get().0 + 1;
        self.current.set((ordinal, Some(Instant::now())));
        match &self.bar {
            Some(bar) => bar.set_message(case.to_owned()),
            None => stderr_line(&format!("case {case}: started ({ordinal}/{})", self.cases)),
        }
    }

    pub fn finish_case(&self, case: &str, error: Option<&str>) {
        let error = error.map(crate::redact::redact);
        let error = error.as_deref();
        let took = self
            .current
            .get()
            .1
            .map_or_else(String::new, |t| format!(" in {}", seconds(t.elapsed())));
        match &self.bar {
            Some(bar) => {
                if let Some(err) = error {
                    bar.println(format!("{} {case}: {err}", styled(ERROR, "error:")));
                }
                bar.inc(1);
            }
            None => match error {
                Some(err) => {
                    stderr_line(&format!(
                        "case {case}: {} {err}{took}",
                        styled(ERROR, "error:")
                    ));
                }
                None => stderr_line(&format!("case {case}: measured{took}")),
            },
        }
    }

    pub fn warn(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(warning_line(text)),
            None => warn(text),
        }
    }

    /// A plain line beside the bar (the budget's time left): the bar's message in a terminal,
    /// a line of the log otherwise.
    pub fn note(&self, text: &str) {
        match &self.bar {
            Some(bar) => bar.println(crate::redact::redact(text)),
            None => stderr_line(text),
        }
    }

    pub fn clear(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A duration as a person reads it in a log: the one formatter of the reports.
fn seconds(d: std::time::Duration) -> String {
    crate::report::format::duration(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_read_as_seconds_then_minutes() {
        assert_eq!(seconds(Duration::from_millis(800)), "0.8 s");
        assert_eq!(seconds(Duration::from_millis(59_940)), "59.9 s");
        assert_eq!(seconds(Duration::from_secs(245)), "4 min 05 s");
    }

    #[test]
    fn styled_labels_carry_ansi_codes_that_anstream_can_strip() {
        let text = format!("{} x", styled(ERROR, "error:"));
        assert!(text.contains("\u{1b}["), "{text:?}");
        let mut plain = Vec::new();
        let mut strip = anstream::StripStream::new(&mut plain);
        strip.write_all(text.as_bytes()).expect("write");
        assert_eq!(String::from_utf8(plain).expect("utf-8"), "error: x");
    }
}
