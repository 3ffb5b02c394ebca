//! `utilgate site` with service cases, over two nights of real vLLM results imported with
//! `import serve` (the second with its p99 TTFT and output throughput scaled): the index row
//! of each service case with its figures and latest verdict, its page with the TTFT, ITL and
//! throughput charts (or a sweep's frontier), every figure equal to the store's, and the run
//! pages linking it.

use std::path::{Path, PathBuf};

use crate::env::{TestEnv, stderr, stdout};
use crate::serve::{bare, import, real};
use crate::site::assert_self_contained;

const QPS4: &str = "vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_04.json";

/// `file` with some figures scaled, written as `name.json` (every other field as in the file).
fn scaled(env: &TestEnv, file: &Path, name: &str, factors: &[(&str, f64)]) -> PathBuf {
    let text = std::fs::read_to_string(file).expect("fixture");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("json");
    for (key, factor) in factors {
        let x = v[*key].as_f64().expect("figure");
        v[*key] = serde_json::json!(x * factor);
    }
    let path = env.path().join(format!("{name}.json"));
    std::fs::write(&path, v.to_string()).expect("write");
    path
}

fn site(env: &TestEnv) -> String {
    let out = env
        .cmd()
        .args([
            "site", "--out", "site", "--db", "serve.db", "--branch", "main",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The figure as the site writes it (`report::site::serve::fig`).
fn fig(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The one case page of the site.
fn only_page(site: &Path) -> PathBuf {
    let pages: Vec<_> = std::fs::read_dir(site.join("cases"))
        .expect("cases/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    assert_eq!(pages.len(), 1, "{pages:?}");
    pages[0].clone()
}

/// The mean over repeats of `metric` of each stored night, oldest first, and its verdict.
fn stored(env: &TestEnv, metric: &str) -> Vec<(i64, f64, String)> {
    let conn = rusqlite::Connection::open(env.path().join("serve.db")).expect("store");
    let mut stmt = conn
        .prepare(
            "SELECT r.run_id, avg(m.value), r.verdict FROM serve_results r
             JOIN serve_metrics m ON m.result_id = r.id
             WHERE m.metric = ?1 GROUP BY r.id ORDER BY r.id",
        )
        .expect("query");
    stmt.query_map([metric], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows")
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "one site read end to end: the index row, the charts, every figure against the store"
)]
fn a_service_case_has_an_index_row_and_a_page_of_ttft_itl_and_throughput_equal_to_the_store() {
    let env = bare();
    let night1 = real(QPS4);
    let night2 = scaled(
        &env,
        &night1,
        "slower",
        &[("p99_ttft_ms", 1.3), ("output_throughput", 0.9)],
    );
    for file in [night1, night2] {
        let out = import(&env, &[file], &["--gpu", "a100-40gb"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
    let text = site(&env);
    assert!(
        text.starts_with("site: 1 case page (1 rewritten), 2 run pages (2 rewritten)"),
        "{text}"
    );
    let root = env.path().join("site");
    let index = read(&root.join("index.html"));
    let page_path = only_page(&root);
    let page = read(&page_path);
    let name = "serve/meta-llama/Llama-3.3-70B-Instruct/rate=4";
    let href = format!(
        "cases/{}",
        page_path.file_name().expect("name").to_string_lossy()
    );

    // The index: one service row, its filters' data, its sparkline and the latest figures.
    assert!(index.contains("<h1>1 case</h1>"), "{index}");
    assert!(index.contains(": service cases</h2>"), "{index}");
    assert!(index.contains(r#"data-phase="serve""#), "{index}");
    // The templates write `/` as `&#x2f;` in text and attributes.
    let esc = |s: &str| s.replace('/', "&#x2f;");
    assert!(
        index.contains(&format!(r#"<a href="{}">"#, esc(&href))),
        "{index}"
    );
    assert!(
        index.contains(&format!(r#"data-name="{}""#, esc(name))),
        "{index}"
    );
    assert!(index.contains("p99 TTFT over the last 2 nights"), "{index}");
    let ttft99 = stored(&env, "p99_ttft_ms");
    let ttft50 = stored(&env, "median_ttft_ms");
    let itl50 = stored(&env, "median_itl_ms");
    let itl99 = stored(&env, "p99_itl_ms");
    let output = stored(&env, "output_throughput");
    assert_eq!(ttft99.len(), 2);
    assert!(
        (ttft99[1].1 / ttft99[0].1 - 1.3).abs() < 1e-9,
        "night 2 is the scaled file: {ttft99:?}"
    );
    let latest = &ttft99[1].2;
    assert!(
        index.contains(&format!(r#"data-verdict="{latest}""#)),
        "{index}"
    );
    for row in [
        format!("{} / {}", fig(ttft50[1].1), fig(ttft99[1].1)),
        format!("{} / {}", fig(itl50[1].1), fig(itl99[1].1)),
        format!("<td>{}</td>", fig(output[1].1)),
    ] {
        assert!(index.contains(&row), "{row} in {index}");
    }

    // The page: three charts with accessible names, one mark per night on each, linked.
    for what in [
        "time to first token (TTFT), p50 and p99 of ",
        "inter-token latency (ITL), p50 and p99 of ",
        "output throughput of ",
    ] {
        assert!(
            page.contains(&format!(
                r#"role="img" aria-label="{what}{name} on a100-40gb over 2 nights"#
            )),
            "{what}: {page}"
        );
    }
    assert_eq!(page.matches(r#"<a class="mark "#).count(), 6, "{page}");
    for run in [1, 2] {
        assert_eq!(
            page.matches(&format!(r#"href="../runs/{run}.html" data-run="{run}""#))
                .count(),
            3,
            "run {run}"
        );
        assert!(root.join(format!("runs/{run}.html")).is_file());
    }
    // Every figure of every night is the store's mean over repeats, in the table and the
    // charts' accessible names.
    for (series, col) in [
        (&ttft50, "p50"),
        (&ttft99, "p99"),
        (&itl50, "p50"),
        (&itl99, "p99"),
        (&output, "output"),
    ] {
        for (_, v, _) in series {
            assert!(
                page.contains(&format!(r#"<td class="num">{}</td>"#, fig(*v))),
                "{col} {v} in {page}"
            );
        }
        assert!(
            page.contains(&format!(
                "{col} from {} to {}",
                fig(series[0].1),
                fig(series[1].1)
            )),
            "{col}: {page}"
        );
    }
    for (run, _, verdict) in &ttft99 {
        assert!(
            page.contains(&format!(r#"data-run="{run}" data-night="#))
                && page.contains(&format!(r#"data-verdict="{verdict}""#)),
            "run {run} {verdict}"
        );
    }
    // The first night was promoted (new on main); the second, not a pass, was not.
    assert!(
        page.contains(&format!(
            r#"Pinned: <a href="{}">run 1</a>"#,
            esc("../runs/1.html")
        )) && page.contains(&format!(
            "TTFT p50 {} ms p99 {} ms",
            fig(ttft50[0].1),
            fig(ttft99[0].1)
        )),
        "{page}"
    );
    assert_self_contained(&index);
    assert_self_contained(&page);

    // The run's page links the case's history.
    let run2 = read(&root.join("runs/2.html"));
    assert!(
        run2.contains(&format!(
            r#"<a class="history" href="{}">history</a>"#,
            esc(&format!("../{href}"))
        )),
        "{run2}"
    );
}

#[test]
fn a_service_case_page_is_rewritten_only_when_a_night_is_added() {
    let env = bare();
    let night = || {
        let out = import(&env, &[real(QPS4)], &["--gpu", "a100-40gb"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    };
    night();
    night();
    site(&env);
    let page_path = only_page(&env.path().join("site"));
    // Nothing changed: nothing rewritten; a third night rewrites the case's page.
    let again = site(&env);
    assert!(
        again.starts_with("site: 1 case page (0 rewritten), 2 run pages (0 rewritten)"),
        "{again}"
    );
    night();
    let third = site(&env);
    assert!(
        third.starts_with("site: 1 case page (1 rewritten), 3 run pages (2 rewritten)"),
        "{third}"
    );
    assert_eq!(
        read(&page_path).matches(r#"<a class="mark "#).count(),
        9,
        "three nights"
    );
}

#[test]
fn a_sweep_shows_its_frontiers_peak_and_levels_over_the_nights() {
    let env = bare();
    let files: Vec<PathBuf> = ["04", "16", "inf"]
        .iter()
        .map(|q| {
            real(&format!(
                "vllm_bench/llm-k8s__llama33-70b_tp8_pp1__serving_sharegpt_qps_{q}.json"
            ))
        })
        .collect();
    for _ in 0..2 {
        let out = import(&env, &files, &["--sweep", "rate", "--gpus", "8"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
    site(&env);
    let root = env.path().join("site");
    let index = read(&root.join("index.html"));
    let page = read(&only_page(&root));
    assert!(index.contains(": service sweeps</h2>"), "{index}");
    let conn = rusqlite::Connection::open(env.path().join("serve.db")).expect("store");
    let peaks: Vec<f64> = conn
        .prepare(
            "SELECT max(throughput_tok_s_gpu) FROM serve_sweep_points
             GROUP BY result_id ORDER BY result_id",
        )
        .expect("query")
        .query_map([], |r| r.get(0))
        .expect("rows")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(peaks.len(), 2);
    // The highest throughput of a sweep is always on its frontier.
    assert!(
        index.contains(&format!("<td>{}</td>", fig(peaks[1]))),
        "{} in {index}",
        fig(peaks[1])
    );
    assert!(
        page.contains(
            "output throughput per GPU on the frontier of \
             serve/meta-llama/Llama-3.3-70B-Instruct/sweep=rate"
        ),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "peak from {} to {} tok/s/GPU",
            fig(peaks[0]),
            fig(peaks[1])
        )),
        "{page}"
    );
    assert!(
        page.contains("tok/s/GPU at "),
        "a column per judged level: {page}"
    );
    assert_eq!(page.matches(r#"<a class="mark "#).count(), 2, "{page}");
}

/// The service case as a reader meets it, in a real Chromium driven by
/// `tests/site/serve_driver.mjs` (as `site::in_a_real_browser_...`: `.ci/run` installs
/// Chromium, Node and playwright-core under `target/site-driver`).
#[test]
#[ignore = "needs chromium, node and playwright-core in target/site-driver (.ci/run installs them)"]
fn in_a_real_browser_a_service_case_is_filtered_charted_and_linked() {
    let env = bare();
    for _ in 0..2 {
        let out = import(&env, &[real(QPS4)], &["--gpu", "a100-40gb"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
    site(&env);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("target/site-driver/serve_driver.mjs");
    std::fs::copy(root.join("tests/site/serve_driver.mjs"), &driver).expect("copy the driver");
    let out = std::process::Command::new("node")
        .arg(&driver)
        .arg(env.path().join("site"))
        .arg("2")
        .output()
        .expect("node starts");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("json");
    assert_eq!(report["failures"], serde_json::json!([]), "{report}");
    assert!(
        report["checks"].as_array().expect("checks").len() >= 14,
        "{report}"
    );
}

#[test]
fn a_service_cases_shift_is_a_change_point_on_its_page_and_the_changes_page() {
    // Six nights of the real file, then six whose p99 TTFT is 1.5x: one change point, in p99
    // TTFT only, at the seventh night, worse; its ITL and throughput never moved.
    let env = bare();
    let slower = scaled(&env, &real(QPS4), "slower", &[("p99_ttft_ms", 1.5)]);
    let mut runs = Vec::new();
    for night in 0..12 {
        let file = if night < 6 {
            real(QPS4)
        } else {
            slower.clone()
        };
        let out = import(&env, &[file], &["--gpu", "a100-40gb", "--format", "json"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
        runs.push(
            crate::serve::json(&out)["run"]["id"]
                .as_i64()
                .expect("run id"),
        );
    }
    let text = site(&env);
    assert!(text.contains("1 change on branch main"), "{text}");
    let root = env.path().join("site");
    let page = read(&only_page(&root));
    let changes = read(&root.join("changes.html"));
    let ttft99 = stored(&env, "p99_ttft_ms");
    let (before, after) = (ttft99[0].1, ttft99[11].1);
    assert!((after / before - 1.5).abs() < 1e-9, "{before} {after}");
    let line = format!(
        "worse p99 TTFT: {} ms -&gt; {} ms (+50.0%; 95% interval",
        fig(before),
        fig(after)
    );
    for (name, html) in [("page", &page), ("changes", &changes)] {
        assert_eq!(
            html.matches(r#"<section class="change regression">"#)
                .count(),
            1,
            "{name}: {html}"
        );
        assert!(html.contains(&line), "{name} lacks {line}: {html}");
        assert!(
            html.contains(&format!("6 nights before and 6 from run {}", runs[6])),
            "{name}: {html}"
        );
        assert!(!html.contains("ITL: "), "{name}: {html}");
        assert!(!html.contains("output throughput: "), "{name}: {html}");
    }
    assert!(
        page.contains(&format!(
            r#"<a href="../runs&#x2f;{}.html">run {}</a>"#,
            runs[6], runs[6]
        )),
        "{page}"
    );
    assert!(changes.contains("across 1 case,"), "{changes}");
    // The TTFT chart marks it at that night; the ITL and throughput charts mark nothing.
    let charts: Vec<&str> = page.split("<figure class=\"serve\">").skip(1).collect();
    assert_eq!(charts.len(), 3);
    assert_eq!(
        charts[0]
            .matches(&format!(
                r#"<g class="changepoint" data-run="{}" data-change="+50.0">"#,
                runs[6]
            ))
            .count(),
        1,
        "{}",
        charts[0]
    );
    assert!(!charts[1].contains("changepoint") && !charts[2].contains("changepoint"));
    // A case whose nights never moved says which series were searched.
    let flat = bare();
    for _ in 0..4 {
        let out = import(&flat, &[real(QPS4)], &["--gpu", "a100-40gb"]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    }
    site(&flat);
    let page = read(&only_page(&flat.path().join("site")));
    assert!(
        page.contains("in p99 TTFT, p99 ITL or output throughput.</p>")
            && page.contains("None found by"),
        "{page}"
    );
}
