//! How a terminal renderer draws: colour or not, and the width its tables fit. Resolved once
//! from `--color` and the terminal by the command that prints (`output::stdout_terminal`) and
//! handed to every human renderer. Pure.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{ContentArrangement, Table};

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
}
