//! One escaping function per output format for every string that came from outside utilgate (a
//! harness's env values and stderr, kernel and operator names from a trace, file names, result
//! files, git's subjects and branch names). Pure.
//!
//! - [`markdown`]: text in Markdown prose (the PR comment, the step summary, report.md): HTML
//!   and Markdown syntax escaped, `@name` and `#123` neutralised (they would notify people and
//!   link issues), newlines as `<br>`.
//! - [`markdown_code`]: text inside a code span (a table cell).
//! - [`markdown_fenced`]: one line inside a fenced code block.
//! - [`terminal`]: text on a terminal or a CI log: controls and escape sequences stripped,
//!   newlines written `\n`, so no harness text starts a line (a fake `gate: passed` line, or a
//!   GitHub workflow command such as `::add-mask::` or `::error::`).
//!
//! All of them break `<!--` (another suite's hidden marker, or the end of ours) and every
//! line-initial `::`. HTML is escaped by the templates' auto-escaping (minijinja's HTML mode for
//! `.html` and `.xml` templates) and, in the SVG utilgate draws, by [`svg`].

/// A zero-width space: inserted after `@` and `#` (as dependabot does), it keeps the text
/// readable while GitHub no longer sees a mention or an issue reference.
const ZWSP: char = '\u{200b}';

/// The characters every format drops: controls (but tab), and the bidirectional overrides that
/// make text read otherwise than it is.
fn dropped(c: char) -> bool {
    (c.is_control() && c != '\t' && c != '\n')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with terminal escape sequences (ESC or C1 CSI/OSC and what they introduce) and dropped
/// characters removed, `\r\n` and `\r` as `\n`.
fn plain(s: &str) -> String {
    let unified = s.replace("\r\n", "\n").replace('\r', "\n");
    let mut out = String::with_capacity(unified.len());
    let mut chars = unified.chars().peekable();
    while let Some(c) = chars.next() {
        let introducer = match c {
            '\u{1b}' => chars.next(),
            '\u{9b}' => Some('['),
            '\u{9d}' => Some(']'),
            c if dropped(c) => continue,
            c => {
                out.push(c);
                continue;
            }
        };
        match introducer {
            // CSI: parameters up to a final byte in @..~.
            Some('[') => {
                for n in chars.by_ref() {
                    if ('@'..='~').contains(&n) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(n) = chars.next() {
                    if n == '\u{7}' || n == '\u{9c}' {
                        break;
                    }
                    if n == '\u{1b}' {
                        chars.next_if_eq(&'\\');
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Text for Markdown prose: `& < > | [ ] \` and the backtick escaped (no tag, comment, link,
/// image or code span), `@` and `#` before a name or number neutralised, newlines as `<br>`.
/// Emphasis (`*`, `_`) is left alone: it can change how text looks, never what it does, and
/// kernel and setting names are full of underscores.
#[must_use]
pub fn markdown(s: &str) -> String {
    let text = plain(s);
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '|' => out.push_str("\\|"),
            '[' => out.push_str("\\["),
            ']' => out.push_str("\\]"),
            '`' => out.push_str("\\`"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("<br>"),
            '@' | '#' => {
                out.push(c);
                if chars
                    .peek()
                    .is_some_and(|n| n.is_alphanumeric() || *n == '-' || *n == '_')
                {
                    out.push(ZWSP);
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Text inside a Markdown code span (a table cell): the backtick replaced, pipes escaped,
/// newlines as spaces, `<!--` broken (GitHub keeps a code span's text in the comment's body,
/// where a marker search would find it).
#[must_use]
pub fn markdown_code(s: &str) -> String {
    plain(s)
        .replace('`', "'")
        .replace('|', "\\|")
        .replace('\n', " ")
        .replace("<!--", "<!\u{200b}--")
}

/// One line inside a fenced code block: a run of backticks cannot close the fence early, and
/// `<!--` is broken.
#[must_use]
pub fn markdown_fenced(s: &str) -> String {
    plain(s)
        .replace('\n', " ")
        .replace("```", "`\u{200b}``")
        .replace("<!--", "<!\u{200b}--")
}

/// Text for a terminal or a CI log: escape sequences and controls stripped, a newline written
/// as `\n` (and a backslash as `\\`, so the two read apart), so harness text never begins a
/// line of its own.
#[must_use]
pub fn terminal(s: &str) -> String {
    let text = plain(s);
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out
}

/// Entity-escaped text for an SVG (XML) attribute or text node, in every chart utilgate
/// draws (the report's, the service charts', the site's): markup and both quotes escaped,
/// controls as spaces.
#[must_use]
pub fn svg(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| !matches!(c, '&' | '<' | '>' | '"' | '\'') && !c.is_control();
    if s.chars().all(plain) {
        // Most text a chart writes (dates, figures, hashes) has nothing to escape.
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ISSUE_ENV: &str =
        "torch 2.5\n<img src=x onerror=alert(1)> @some-org/team <!-- utilgate:other-suite -->";

    #[test]
    fn the_issues_env_value_is_inert_in_every_format() {
        let md = markdown(ISSUE_ENV);
        assert_eq!(
            md,
            "torch 2.5<br>&lt;img src=x onerror=alert(1)&gt; @\u{200b}some-org/team &lt;!-- utilgate:other-suite --&gt;"
        );
        assert!(!markdown_code(ISSUE_ENV).contains("<!--"));
        assert!(!markdown_fenced(ISSUE_ENV).contains("<!--"));
        assert_eq!(
            terminal("a\n::error::x\u{1b}[31m\r\n::add-mask::y"),
            "a\\n::error::x\\n::add-mask::y"
        );
        assert_eq!(markdown("see #123, C# and #"), "see #\u{200b}123, C# and #");
    }

    /// Whether `text` holds a Markdown/HTML tag, a mention, an issue reference or a marker.
    fn active_markdown(text: &str) -> Option<&'static str> {
        let chars: Vec<char> = text.chars().collect();
        for w in chars.windows(2) {
            match w {
                ['<', n] if n.is_ascii_alphabetic() || *n == '/' || *n == '!' => {
                    return Some("a tag or comment");
                }
                ['@', n] if n.is_alphanumeric() || *n == '-' || *n == '_' => {
                    return Some("a mention");
                }
                ['#', n] if n.is_ascii_digit() => return Some("an issue reference"),
                _ => {}
            }
        }
        None
    }

    proptest! {
        #[test]
        fn no_string_becomes_markup_a_mention_a_marker_or_a_line_of_its_own(
            s in "(.|\n|\r|<!--|@[a-z]|#[0-9]|::|<img>|\u{1b}\\[|`)*",
        ) {
            let md = markdown(&s);
            // `<br>` is the only tag markdown() writes: everything else is text.
            let found = active_markdown(&md.replace("<br>", " "));
            prop_assert!(found.is_none(), "{:?}: {:?} -> {:?}", found, s, md);
            prop_assert!(!md.contains('\n'));
            for out in [markdown_code(&s), markdown_fenced(&s)] {
                prop_assert!(!out.contains("<!--") && !out.contains('\n'), "{:?} -> {:?}", s, out);
            }
            let t = terminal(&s);
            prop_assert!(!t.contains('\n') && !t.contains('\r') && !t.contains('\u{1b}'), "{:?}", t);
        }
    }
}
