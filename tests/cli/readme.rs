//! The README's tour, kept true: the CPU example's first night run through the binary exactly as
//! the README's console block shows it, and the block checked against that output. The figures
//! that depend on the host (floors, step times, spread, utilisation) are compared by their form;
//! what does not (the run line, the columns, the case keys, `n`, the verdicts, the `gate:` line)
//! word for word; and the README's floors against the bandwidth it says they came from.

use crate::env::{TestEnv, stderr, stdout};

const README: &str = include_str!("../../README.md");
const PROMPT: &str = "$ utilgate run --config examples/cpu-decode/utilgate.toml";

/// The tour's console block of `utilgate run`: its command's arguments and its output lines.
fn shown_run() -> (Vec<&'static str>, Vec<&'static str>) {
    let start = README
        .find(PROMPT)
        .unwrap_or_else(|| panic!("the README's tour shows {PROMPT:?}"));
    let mut lines = README[start..].lines();
    let command = lines.next().expect("the prompt line");
    let args = command
        .trim_start_matches("$ utilgate ")
        .split_whitespace()
        .collect();
    let output = lines.take_while(|l| !l.starts_with("```")).collect();
    (args, output)
}

/// The bandwidth (bytes/s) the tour says its floors came from: the `N GB/s` of its prose.
fn shown_bandwidth() -> f64 {
    let tour = &README[README.find("## A five-minute tour").expect("the tour")..];
    let prose = &tour[..tour.find("```console").expect("the tour's first block")];
    let before = &prose[..prose
        .find(" GB/s")
        .unwrap_or_else(|| panic!("the tour names the host bandwidth: {prose}"))];
    let figure = before
        .rsplit(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .unwrap_or_default();
    figure
        .parse::<f64>()
        .unwrap_or_else(|e| panic!("{figure:?} GB/s: {e}"))
        * 1e9
}

/// A table row's cells: the text between the frame's bars, split where two spaces part them.
fn cells(line: &str) -> Vec<String> {
    line.trim_matches(|c: char| c == '│' || c.is_whitespace())
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The form of a cell: an integer part is `N`, each decimal `d`, the rest as written.
fn form(cell: &str) -> String {
    let mut out = String::new();
    let mut after_point = false;
    for c in cell.chars() {
        match c {
            '0'..='9' if after_point => out.push('d'),
            '0'..='9' => {
                if !out.ends_with('N') {
                    out.push('N');
                }
            }
            '.' => {
                after_point = true;
                out.push('.');
            }
            _ => {
                after_point = false;
                out.push(c);
            }
        }
    }
    out
}

/// What kind of line it is: a frame line, a table row, or text (the run line without its
/// commit, which is the checkout's).
fn kind(line: &str) -> String {
    if line.starts_with(['┌', '╞', '└', '├']) {
        "frame".to_owned()
    } else if line.starts_with('│') {
        "row".to_owned()
    } else if let (Some(at), Some(close)) = (line.find(" @ "), line.rfind(')')) {
        format!("{}{}", &line[..at], &line[close..])
    } else {
        line.to_owned()
    }
}

/// The row whose first cell is `key`.
fn row_of<'a>(lines: &[&'a str], key: &str) -> Option<&'a str> {
    lines
        .iter()
        .copied()
        .find(|l| l.starts_with('│') && cells(l).first().is_some_and(|c| c == key))
}

#[test]
fn the_readme_tour_shows_what_the_example_prints() {
    let (args, shown) = shown_run();
    let env = TestEnv::new();
    let config = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/cpu-decode/utilgate.toml"
    ))
    .expect("the example's config");
    env.write("examples/cpu-decode/utilgate.toml", &config);
    let out = env.cmd().args(&args).output().expect("runs");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let real: Vec<&str> = text.lines().collect();

    // Line by line, the same kinds: the run line, the frame, the rows, the gate line.
    let kinds = |lines: &[&str]| lines.iter().map(|l| kind(l)).collect::<Vec<_>>();
    assert_eq!(
        kinds(&shown),
        kinds(&real),
        "README:\n{}\nreal:\n{text}",
        shown.join("\n")
    );

    let rows = |lines: &[&str]| -> Vec<Vec<String>> {
        lines
            .iter()
            .filter(|l| l.starts_with('│'))
            .map(|l| cells(l))
            .collect()
    };
    let (shown_rows, real_rows) = (rows(&shown), rows(&real));
    // The header word for word; each case's key, `n` and verdict word for word, the figures by
    // their form.
    assert_eq!(shown_rows[0], real_rows[0], "the columns");
    let n = shown_rows[0]
        .iter()
        .position(|c| c == "n")
        .expect("an n column");
    for (s, r) in shown_rows[1..].iter().zip(&real_rows[1..]) {
        assert_eq!(s.len(), r.len(), "{s:?} against {r:?}");
        for (i, (a, b)) in s.iter().zip(r).enumerate() {
            if i == 0 || i == n || i + 1 == s.len() {
                assert_eq!(a, b, "column {:?}", shown_rows[0][i]);
            } else {
                assert_eq!(
                    form(a),
                    form(b),
                    "column {:?}: {a} against {b}",
                    shown_rows[0][i]
                );
            }
        }
    }

    // The floors shown are this example's bytes over the bandwidth the README names: the bytes
    // of a step do not depend on the host, so they must match the real run's.
    let pinned: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.path().join(".cache/utilgate/host-bandwidth.json"))
            .expect("the example pins the host's bandwidth"),
    )
    .expect("json");
    let real_bandwidth = pinned["bytes_per_s"].as_f64().expect("bytes_per_s");
    let floor = shown_rows[0]
        .iter()
        .position(|c| c == "floor ms")
        .expect("a floor column");
    for shown_row in &shown_rows[1..] {
        let key = &shown_row[0];
        let real_row = cells(row_of(&real, key).unwrap_or_else(|| panic!("{key} ran")));
        let ms = |row: &[String]| -> f64 { row[floor].parse().expect("a floor in ms") };
        let (shown_bytes, real_bytes) = (
            ms(shown_row) * shown_bandwidth(),
            ms(&real_row) * real_bandwidth,
        );
        assert!(
            (shown_bytes / real_bytes - 1.0).abs() < 1e-3,
            "{key}: the README's floor {} ms at its {:.4} GB/s is {shown_bytes:.4e} bytes a step \
             per ms; the example's is {real_bytes:.4e}",
            ms(shown_row),
            shown_bandwidth() / 1e9,
        );
    }
}
