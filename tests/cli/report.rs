//! `utilgate report` and `run --report-dir` on real runs: every format renders, the HTML and
//! `JUnit` are well-formed XML, snapshots with volatile fields redacted, user templates apply.

use crate::env::{TestEnv, stderr, stdout};

/// Parse `text` as XML, checking every element is closed in order; returns the element names.
fn well_formed(text: &str) -> Vec<String> {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(text);
    let mut stack: Vec<String> = Vec::new();
    let mut seen = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                for attr in e.attributes() {
                    attr.unwrap_or_else(|err| panic!("bad attribute in <{name}>: {err}"));
                }
                seen.push(name.clone());
                stack.push(name);
            }
            Ok(Event::Empty(e)) => {
                seen.push(String::from_utf8_lossy(e.name().as_ref()).into_owned());
            }
            Ok(Event::End(e)) => {
                let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(name.as_str()),
                    "mismatched </{name}>"
                );
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(err) => panic!(
                "not well-formed at byte {}: {err}",
                reader.buffer_position()
            ),
        }
    }
    assert!(stack.is_empty(), "unclosed: {stack:?}");
    seen
}

#[test]
fn every_format_renders_a_real_run() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env.run("feature", &[("STEP_MS", "11.5")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));

    let markdown = env.report("markdown");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<timestamp>");
    settings.add_filter(r"hostname=\x22[^\x22]*\x22", "hostname=\"<host>\"");
    settings.bind(|| {
        insta::assert_snapshot!("report_markdown", markdown);
        insta::assert_snapshot!("report_junit", env.report("junit"));
        // `runs show`, the terminal's report of the stored run, on a pipe and at 80 columns.
        for columns in [None, Some("80")] {
            let mut cmd = env.cmd();
            cmd.args(["runs", "show"]);
            if let Some(columns) = columns {
                cmd.env("COLUMNS", columns);
            }
            let out = cmd.output().expect("runs");
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            insta::assert_snapshot!(
                format!("runs_show_{}", columns.unwrap_or("pipe")),
                stdout(&out)
            );
        }
    });
    assert!(markdown.contains("🔴 regressed"));

    let html = env.report("html");
    let elements = well_formed(&html);
    assert_eq!(
        elements.iter().filter(|e| *e == "svg").count(),
        2,
        "one chart per case"
    );
    assert_eq!(
        elements.iter().filter(|e| *e == "circle").count(),
        4,
        "two runs per case"
    );
    well_formed(&env.report("junit"));
    let json: serde_json::Value = serde_json::from_str(&env.report("json")).expect("json");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(
        json["cases"][0]["trend"].as_array().expect("trend").len(),
        2
    );
}

#[test]
fn report_out_writes_a_file_and_report_dir_writes_every_format() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "run",
            "--branch",
            "main",
            "--git-sha",
            "0123456789abcdef",
            "--report-dir",
            "reports/nightly",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let dir = env.path().join("reports/nightly");
    for name in [
        "report.md",
        "summary.md",
        "report.html",
        "junit.xml",
        "report.json",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).expect(name);
        assert!(text.contains("seed-8b"), "{name}: {text}");
    }
    well_formed(&std::fs::read_to_string(dir.join("report.html")).expect("html"));

    let out = env
        .cmd()
        .args(["report", "1", "--format", "html", "--out", "one.html"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let html = std::fs::read_to_string(env.path().join("one.html")).expect("written");
    assert!(html.starts_with("<!DOCTYPE html>"));
}

#[test]
fn user_templates_replace_built_ins() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("");
    env.write_config(&format!("[report]\ntemplates = \"my-templates\"\n{config}"));
    env.write(
        "my-templates/summary.md.j2",
        "{% for c in cases %}{{ c.case }}={{ c.verdict }}\n{% endfor %}",
    );
    env.write("my-templates/sumary.md.j2", "typo");
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env
        .cmd()
        .args(["report", "--format", "summary"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "decode/seed-8b/bf16/decode/b1/c4096=new\ndecode/seed-8b/bf16/decode/b8/c4096=new\n"
    );
    assert!(
        stderr(&out).contains("sumary.md.j2: replaces no built-in template"),
        "{}",
        stderr(&out)
    );

    // A broken template fails `run --report-dir` before anything is measured.
    env.write("my-templates/report.html.j2", "{% if %}");
    let out = env
        .cmd()
        .args(["run", "--report-dir", "out"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("template report.html.j2"),
        "{}",
        stderr(&out)
    );
    let listed = env.json(&["runs", "list"]);
    assert_eq!(
        listed["runs"].as_array().expect("runs").len(),
        1,
        "nothing new stored"
    );
}
