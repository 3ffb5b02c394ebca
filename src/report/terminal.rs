//! How a terminal renderer draws: colour or not, and the width its tables fit. Resolved once
//! from `--color` and the terminal by the command that prints (`output::stdout_terminal`) and
//! handed to every human renderer. Pure.

use std::fmt::Write as _;

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{Cell, CellAlignment, Color, ContentArrangement, Table};
use unicode_width::UnicodeWidthStr;

/// The terminal a human report is drawn for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Terminal {
    /// Verdicts and errors in colour.
    pub color: bool,
    /// The width tables fit, wrapping their widest cells (the case names); `None` (a pipe or a
    /// file) draws each row on one line.
    pub width: Option<u16>,
}

impl Terminal {
    /// An empty table in the house style, arranged for this terminal.
    #[must_use]
    pub fn table(self) -> Table {
        let mut table = Table::new();
        table.load_style(UTF8_BORDERS_ONLY);
        if self.color {
            table.enforce_styling();
        } else {
            table.force_no_tty();
        }
        match self.width {
            Some(width) => {
                table
                    .set_content_arrangement(ContentArrangement::Dynamic)
                    .set_width(width);
            }
            None => {
                table.set_content_arrangement(ContentArrangement::Disabled);
            }
        }
        table
    }
}

/// One cell of a [`Grid`]: its text, which side it keeps to, and its colour on a colour
/// terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridCell {
    text: String,
    right: bool,
    color: Option<Color>,
}

impl GridCell {
    /// Text kept to the left (names, words).
    #[must_use]
    pub fn left(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            right: false,
            color: None,
        }
    }

    /// Text kept to the right (figures, so their digits line up).
    #[must_use]
    pub fn right(text: impl Into<String>) -> Self {
        Self {
            right: true,
            ..Self::left(text)
        }
    }

    /// The cell in `color` on a colour terminal.
    #[must_use]
    pub fn colored(self, color: Color) -> Self {
        Self {
            color: Some(color),
            ..self
        }
    }
}

/// The least width a shortened case key keeps in a table before the table gives way to one
/// block per row.
const KEY_MIN: usize = 14;

/// A table that fits any width without breaking a figure. On a pipe (no width) every row is
/// one line with its whole key. On a terminal a figure, a verdict or a word is never wrapped:
/// headers wrap between their words; where the table is still too wide, the key column (case
/// keys, `/`-separated) first drops the segments every row shares (said once above the
/// table), then is elided in its middle; below [`KEY_MIN`] characters for it, each row
/// becomes a block of `header value` pairs.
#[derive(Debug, Clone)]
pub struct Grid {
    terminal: Terminal,
    header: Vec<String>,
    key: Option<usize>,
    beside_key: Option<usize>,
    rows: Vec<Vec<GridCell>>,
}

impl Grid {
    /// An empty grid with these column headers.
    #[must_use]
    pub fn new<S: Into<String>>(terminal: Terminal, header: impl IntoIterator<Item = S>) -> Self {
        Self {
            terminal,
            header: header.into_iter().map(Into::into).collect(),
            key: None,
            beside_key: None,
            rows: Vec::new(),
        }
    }

    /// Column `index` holds `/`-separated keys, shortened first when the width is short.
    #[must_use]
    pub fn key_column(self, index: usize) -> Self {
        Self {
            key: Some(index),
            ..self
        }
    }

    /// Column `index` (a verdict) is written on the key's line when rows become blocks.
    #[must_use]
    pub fn beside_key(self, index: usize) -> Self {
        Self {
            beside_key: Some(index),
            ..self
        }
    }

    /// Appends a row (as many cells as headers).
    pub fn row(&mut self, cells: Vec<GridCell>) {
        debug_assert_eq!(cells.len(), self.header.len(), "a row of every column");
        self.rows.push(cells);
    }

    /// The grid drawn for its terminal, with no trailing newline.
    #[must_use]
    pub fn render(&self) -> String {
        let keys: Vec<String> = self.keys().map(str::to_owned).collect();
        let Some(width) = self.terminal.width else {
            return self.table(&self.header, &keys);
        };
        let width = usize::from(width);
        // Two borders, a space each side of every column, one between columns.
        let overhead = 3 * self.header.len() + 1;
        let whole: usize = (0..self.header.len())
            .map(|i| self.column_width(i, false))
            .sum();
        if overhead + whole <= width {
            return self.table(&self.header, &keys);
        }
        // Too wide with whole headers: they wrap between their words, and the key gives way.
        let others: usize = (0..self.header.len())
            .filter(|&i| Some(i) != self.key)
            .map(|i| self.column_width(i, true))
            .sum();
        let Some(k) = self.key else {
            return if overhead + others > width {
                self.blocks(&keys, width)
            } else {
                self.table(&self.wrapped_header(|i| self.column_width(i, true)), &keys)
            };
        };
        let key_room = width.saturating_sub(overhead + others);
        let key_width = |keys: &[String]| {
            keys.iter()
                .map(|t| t.width())
                .chain(words(&self.header[k]).map(UnicodeWidthStr::width))
                .max()
                .unwrap_or(0)
        };
        let mut keys = keys;
        let mut preface = String::new();
        if key_width(&keys) > key_room
            && let Some((shared, rest)) = drop_shared(&keys)
        {
            preface = shared_line(&shared, width);
            keys = rest;
        }
        if key_width(&keys) > key_room {
            if key_room < KEY_MIN {
                return preface + &self.blocks(&keys, width);
            }
            keys = keys.iter().map(|t| elide_middle(t, key_room)).collect();
        }
        let key_column = key_width(&keys);
        let header = self.wrapped_header(|i| {
            if i == k {
                key_column
            } else {
                self.column_width(i, true)
            }
        });
        preface + &self.table(&header, &keys)
    }

    /// The headers wrapped between their words to the widths `column` gives.
    fn wrapped_header(&self, column: impl Fn(usize) -> usize) -> Vec<String> {
        (0..self.header.len())
            .map(|i| wrap_words(&self.header[i], column(i)))
            .collect()
    }

    /// The key column's texts, one per row (none without a key column).
    fn keys(&self) -> impl Iterator<Item = &str> {
        self.rows
            .iter()
            .filter_map(|r| self.key.map(|k| r[k].text.as_str()))
    }

    /// Column `i`'s width: its widest cell, and its header whole or (`wrapped`) its longest
    /// word.
    fn column_width(&self, i: usize, wrapped: bool) -> usize {
        let header = if wrapped {
            words(&self.header[i])
                .map(UnicodeWidthStr::width)
                .max()
                .unwrap_or(0)
        } else {
            self.header[i].width()
        };
        self.rows
            .iter()
            .map(|r| r[i].text.width())
            .chain([header])
            .max()
            .unwrap_or(0)
    }

    /// The comfy table with these headers and key texts, every row on its line.
    fn table(&self, header: &[String], keys: &[String]) -> String {
        let mut table = Terminal {
            width: None,
            ..self.terminal
        }
        .table();
        table.set_header(header.to_vec());
        for (n, row) in self.rows.iter().enumerate() {
            table.add_row(row.iter().enumerate().map(|(i, cell)| {
                let text = if Some(i) == self.key {
                    keys[n].as_str()
                } else {
                    cell.text.as_str()
                };
                self.cell(cell, text)
            }));
        }
        table.to_string()
    }

    fn cell(&self, cell: &GridCell, text: &str) -> Cell {
        let mut out = Cell::new(text);
        if cell.right {
            out = out.set_alignment(CellAlignment::Right);
        }
        match cell.color {
            Some(color) if self.terminal.color => out.fg(color),
            _ => out,
        }
    }

    /// One block per row: its key (elided to the width), then `header value` pairs, as many
    /// to a line as fit, indented; a pair wider than a line wraps between its words.
    fn blocks(&self, keys: &[String], width: usize) -> String {
        const INDENT: &str = "  ";
        let room = width.saturating_sub(INDENT.len()).max(1);
        let mut out = String::new();
        for (n, row) in self.rows.iter().enumerate() {
            if n > 0 {
                out.push('\n');
            }
            let beside = self.beside_key.map(|i| &row[i]);
            if let Some(key) = keys.get(n) {
                let room = beside.map_or(width, |c| width.saturating_sub(c.text.width() + 2));
                let _ = write!(out, "{}", elide_middle(key, room));
                if let Some(cell) = beside {
                    let _ = write!(out, "  {}", self.colored(cell));
                }
                out.push('\n');
            }
            let mut line = String::new();
            let mut line_width = 0;
            for (i, cell) in row.iter().enumerate() {
                if Some(i) == self.key || (Some(i) == self.beside_key && !keys.is_empty()) {
                    continue;
                }
                let pair = format!("{} {}", self.header[i], cell.text);
                let pair_width = pair.width();
                if line_width > 0 && line_width + 2 + pair_width > room {
                    let _ = writeln!(out, "{INDENT}{line}");
                    line.clear();
                    line_width = 0;
                }
                if pair_width > room {
                    // Alone on its lines, wrapped between words, without colour.
                    for part in wrap_words(&pair, room).lines() {
                        let _ = writeln!(out, "{INDENT}{part}");
                    }
                    continue;
                }
                if line_width > 0 {
                    line.push_str("  ");
                    line_width += 2;
                }
                let _ = write!(line, "{} {}", self.header[i], self.colored(cell));
                line_width += pair_width;
            }
            if line_width > 0 {
                let _ = write!(out, "{INDENT}{line}");
            } else if out.ends_with('\n') {
                out.pop();
            }
        }
        out
    }
}

impl Grid {
    /// A cell's text in its colour on a colour terminal.
    fn colored(&self, cell: &GridCell) -> String {
        match cell.color.and_then(ansi).filter(|_| self.terminal.color) {
            Some(color) => {
                let style = anstyle::Style::new().fg_color(Some(color.into()));
                format!("{style}{}{style:#}", cell.text)
            }
            None => cell.text.clone(),
        }
    }
}

/// The terminal colour of a cell's colour (the few the reports use).
fn ansi(color: Color) -> Option<anstyle::AnsiColor> {
    match color {
        Color::Red => Some(anstyle::AnsiColor::Red),
        Color::Yellow => Some(anstyle::AnsiColor::Yellow),
        Color::Green => Some(anstyle::AnsiColor::Green),
        _ => None,
    }
}

/// The whitespace-separated words of a header.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_whitespace()
}

/// `text` wrapped between its words to lines of at most `width` (a word longer than the width
/// keeps its own line).
fn wrap_words(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line_width = 0;
    for word in words(text) {
        let w = word.width();
        if line_width > 0 && line_width + 1 + w > width {
            out.push('\n');
            line_width = 0;
        } else if line_width > 0 {
            out.push(' ');
            line_width += 1;
        }
        out.push_str(word);
        line_width += w;
    }
    out
}

/// The line said once above a table whose keys dropped their shared coordinates: on one line
/// where it fits, else the pattern on lines of its own, broken after a `/`.
fn shared_line(shared: &str, width: usize) -> String {
    const LEAD: &str = "cases (each row shows its *):";
    if LEAD.len() + 1 + shared.width() <= width {
        format!("{LEAD} {shared}\n")
    } else {
        format!("{LEAD}\n  {}\n", wrap_path(shared, width.saturating_sub(2)))
    }
}

/// A `/`-separated path broken after a `/` into lines of at most `width` (a segment longer
/// than the width keeps its own line); continuation lines are indented by two.
fn wrap_path(text: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line_width = 0;
    for (i, segment) in text.split('/').enumerate() {
        let piece = if i == 0 {
            segment.to_owned()
        } else {
            format!("/{segment}")
        };
        let w = piece.width();
        if line_width > 0 && line_width + w > width {
            out.push_str("\n  ");
            line_width = 2;
        }
        out.push_str(&piece);
        line_width += w;
    }
    out
}

/// The segments every key shares, replaced by `*` where they differ (`suite/model/*/*`), and
/// each key without them; `None` when the keys have different shapes, fewer than two keys, or
/// nothing in common.
fn drop_shared(keys: &[String]) -> Option<(String, Vec<String>)> {
    let split: Vec<Vec<&str>> = keys.iter().map(|k| k.split('/').collect()).collect();
    let first = split.first()?;
    if split.len() < 2 || split.iter().any(|s| s.len() != first.len()) {
        return None;
    }
    let shared: Vec<bool> = (0..first.len())
        .map(|i| split.iter().all(|s| s[i] == first[i]))
        .collect();
    if !shared.iter().any(|&s| s) || shared.iter().all(|&s| s) {
        return None;
    }
    let pattern: Vec<&str> = first
        .iter()
        .zip(&shared)
        .map(|(seg, &s)| if s { *seg } else { "*" })
        .collect();
    let rest = split
        .iter()
        .map(|s| {
            s.iter()
                .zip(&shared)
                .filter(|&(_, &sh)| !sh)
                .map(|(seg, _)| *seg)
                .collect::<Vec<_>>()
                .join("/")
        })
        .collect();
    Some((pattern.join("/"), rest))
}

/// `text` in at most `width` columns, its middle replaced by `…` when it is longer (the start
/// and the end of a key tell cases apart).
fn elide_middle(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let keep = width.saturating_sub(1);
    let take = |chars: &mut dyn Iterator<Item = char>, budget: usize| {
        let mut used = 0;
        let mut kept = Vec::new();
        for c in chars {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if used + w > budget {
                break;
            }
            used += w;
            kept.push(c);
        }
        kept
    };
    let head = take(&mut text.chars(), keep / 2);
    let mut tail = take(&mut text.chars().rev(), keep - keep / 2);
    tail.reverse();
    let mut out: String = head.into_iter().collect();
    if width > 0 {
        out.push('…');
    }
    out.extend(tail);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widest_line(text: &str) -> usize {
        text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
    }

    #[test]
    fn a_table_fits_the_width_by_wrapping_its_widest_cell() {
        let case = "decode/llama-3.1-8b/bf16/decode/b64/ctx32768/mode=graphs";
        let draw = |terminal: Terminal| {
            let mut table = terminal.table();
            table.set_header(vec!["case", "median ms", "verdict"]);
            table.add_row(vec![case, "12.345", "regressed"]);
            table.to_string()
        };
        let unwrapped = draw(Terminal::default());
        assert!(
            unwrapped.contains(case),
            "a pipe keeps the row whole:\n{unwrapped}"
        );
        assert!(widest_line(&unwrapped) > 60);
        let fitted = draw(Terminal {
            color: false,
            width: Some(60),
        });
        assert!(widest_line(&fitted) <= 60, "wider than 60:\n{fitted}");
        assert!(!fitted.contains(case), "the case name wraps:\n{fitted}");
        assert!(fitted.contains("regressed") && fitted.contains("12.345"));
    }

    fn figures_grid(terminal: Terminal, keys: &[&str]) -> Grid {
        let mut grid = Grid::new(
            terminal,
            [
                "case",
                "floor ms",
                "median ms",
                "repeat spread",
                "util",
                "drop",
                "verdict",
            ],
        )
        .key_column(0)
        .beside_key(6);
        for (i, key) in keys.iter().enumerate() {
            grid.row(vec![
                GridCell::left(*key),
                GridCell::right(format!("{}.912", 15 + i)),
                GridCell::right(format!("{}.806", 110 + i)),
                GridCell::right("0.4%"),
                GridCell::right("14.4%"),
                GridCell::right("+23.0% stall"),
                GridCell::left("inconclusive").colored(Color::Yellow),
            ]);
        }
        grid
    }

    const KEYS: [&str; 3] = [
        "decode/llama-3.1-70b-instruct/bf16/decode/b64/ctx32768",
        "decode/llama-3.1-70b-instruct/bf16/decode/b8/ctx32768",
        "decode/llama-3.1-70b-instruct/bf16/decode/b1/ctx131072",
    ];

    /// Every figure of the grid, each of which must appear whole on one line.
    fn assert_figures_whole(text: &str) {
        for i in 0..KEYS.len() {
            for figure in [format!("{}.912", 15 + i), format!("{}.806", 110 + i)] {
                assert!(
                    text.lines().any(|l| l.contains(&figure)),
                    "{figure} is split:\n{text}"
                );
            }
        }
        for word in ["+23.0% stall", "inconclusive", "14.4%"] {
            assert!(
                text.lines().any(|l| l.contains(word)),
                "{word} is split:\n{text}"
            );
        }
    }

    #[test]
    fn a_pipe_keeps_every_row_on_one_line_with_its_whole_key() {
        let text = figures_grid(Terminal::default(), &KEYS).render();
        for key in KEYS {
            assert!(text.contains(key), "{key} is not whole:\n{text}");
        }
        // Top border, header, separator, three rows, bottom border.
        assert_eq!(text.lines().count(), 7, "{text}");
        assert_figures_whole(&text);
    }

    #[test]
    fn at_any_width_the_grid_fits_and_never_breaks_a_figure() {
        for width in [200_u16, 120, 100, 80, 72, 60, 40, 30] {
            let text = figures_grid(
                Terminal {
                    color: false,
                    width: Some(width),
                },
                &KEYS,
            )
            .render();
            assert!(
                widest_line(&text) <= usize::from(width),
                "wider than {width}:\n{text}"
            );
            assert_figures_whole(&text);
        }
    }

    #[test]
    fn a_short_width_drops_the_shared_coordinates_once_above_the_table() {
        let text = figures_grid(
            Terminal {
                color: false,
                width: Some(100),
            },
            &KEYS,
        )
        .render();
        let first = text.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            "cases (each row shows its *): decode/llama-3.1-70b-instruct/bf16/decode/*/*"
        );
        for rest in ["b64/ctx32768", "b8/ctx32768", "b1/ctx131072"] {
            assert!(
                text.lines().any(|l| l.starts_with(&format!("│ {rest} "))),
                "{rest} is not its row's key:\n{text}"
            );
        }
    }

    #[test]
    fn a_key_too_long_for_its_room_is_elided_in_the_middle() {
        assert_eq!(elide_middle("abcdefghij", 10), "abcdefghij");
        assert_eq!(elide_middle("abcdefghijkl", 7), "abc…jkl");
        assert_eq!(elide_middle("abcdefghijkl", 6), "ab…jkl");
        assert_eq!(elide_middle("日本語テキスト", 5), "日…ト");
        // Keys of one shape with nothing in common, or all in common, drop nothing.
        assert_eq!(drop_shared(&["a/b".into(), "c/d".into()]), None);
        assert_eq!(drop_shared(&["a/b".into(), "a/b".into()]), None);
        assert_eq!(drop_shared(&["a/b".into(), "a/b/c".into()]), None);
        assert_eq!(
            drop_shared(&["s/m/1".into(), "s/n/1".into()]),
            Some(("s/*/1".to_owned(), vec!["m".to_owned(), "n".to_owned()]))
        );
    }

    #[test]
    fn below_the_least_key_room_each_row_is_a_block_of_named_figures() {
        let text = figures_grid(
            Terminal {
                color: false,
                width: Some(40),
            },
            &KEYS,
        )
        .render();
        assert!(!text.contains('│'), "no table at 40 columns:\n{text}");
        assert!(
            text.lines().any(|l| l == "b64/ctx32768  inconclusive"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l.contains("median ms 110.806")),
            "a figure beside its name:\n{text}"
        );
    }

    #[test]
    fn colour_reaches_the_cell_and_the_block_only_on_a_colour_terminal() {
        for width in [None, Some(40)] {
            let plain = figures_grid(
                Terminal {
                    color: false,
                    width,
                },
                &KEYS,
            )
            .render();
            let coloured = figures_grid(Terminal { color: true, width }, &KEYS).render();
            assert!(!plain.contains('\u{1b}'), "{plain}");
            assert!(coloured.contains('\u{1b}'), "{coloured}");
        }
    }
}
