//! `utilgate site` over nightlies stored by real runs of the scripted harness: every night a
//! mark on its case's chart, linked to its run's page; the torch upgrade's change point on its
//! night; a second build rewrites nothing, a new night rewrites only what it touched; harness
//! text is escaped on every page; no page asks another host for anything.

use std::path::Path;

use crate::env::{TestEnv, stderr, stdout};

/// 8 nights at 10 ms, then 5 at 10.9 ms under a new torch whose version string is hostile.
fn nightlies(env: &TestEnv, torch_new: &str) {
    env.write_config(
        &TestEnv::config_with("")
            .replace("batches = [1, 8]", "batches = [1]")
            .replace("repeats = 3", "repeats = 2"),
    );
    let steps = [
        "10.00", "10.02", "9.98", "10.01", "9.99", "10.02", "9.98", "10.00", "10.90", "10.92",
        "10.88", "10.91", "10.89",
    ];
    for (night, step) in steps.iter().enumerate() {
        night_run(
            env,
            night,
            step,
            if night < 8 { "2.5.1" } else { torch_new },
        );
    }
}

fn night_run(env: &TestEnv, night: usize, step: &str, torch: &str) {
    let out = env
        .cmd()
        .args(["run", "--branch", "main", "--trigger", "schedule"])
        .args(["--git-sha", &format!("{night:02}aaaaaaaaaaaaaaaa")])
        .env("STEP_MS", step)
        .env("TORCH_VERSION", torch)
        .output()
        .expect("runs");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
}

fn build(env: &TestEnv) -> String {
    let out = env
        .cmd()
        .args(["site", "--out", "site"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    stdout(&out)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The one case page of the site.
fn case_page(site: &Path) -> std::path::PathBuf {
    let pages: Vec<_> = std::fs::read_dir(site.join("cases"))
        .expect("cases/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "html"))
        .collect();
    assert_eq!(pages.len(), 1, "{pages:?}");
    pages[0].clone()
}

/// Every `src=` and `href=` of a page stays inside the site.
pub(crate) fn assert_self_contained(page: &str) {
    for attr in ["src=\"", "href=\""] {
        for (at, _) in page.match_indices(attr) {
            let value = &page[at + attr.len()..];
            let value = &value[..value.find('"').expect("closed")];
            assert!(
                !value.contains("//") && !value.starts_with("data:") && !value.contains(':'),
                "{attr}{value} leaves the site"
            );
        }
    }
}

#[test]
fn every_night_is_a_mark_linked_to_its_run_and_the_change_is_on_its_night() {
    let env = TestEnv::new();
    nightlies(&env, "2.6.0");
    let text = build(&env);
    assert!(
        text.starts_with(
            "site: 1 case page (1 rewritten), 13 run pages (13 rewritten), 1 change on branch main (built whole)"
        ),
        "{text}"
    );
    let site = env.path().join("site");
    let index = read(&site.join("index.html"));
    assert!(index.contains("seed-8b bf16 decode b1 c4096"), "{index}");
    assert!(index.contains(r#"class="spark""#), "{index}");
    assert!(index.contains(r#"data-verdict="regressed""#), "{index}");
    let case = read(&case_page(&site));
    // 13 nights, each one mark on the utilisation chart (which draws both scales).
    assert_eq!(case.matches(r#"<a class="mark "#).count(), 13, "{case}");
    for run in 1..=13 {
        assert!(
            case.contains(&format!(r#"href="../runs/{run}.html""#)),
            "run {run}"
        );
        assert!(site.join(format!("runs/{run}.html")).is_file(), "run {run}");
    }
    assert!(
        case.contains(r#"<g class="changepoint" data-run="9""#),
        "the change is marked on run 9: {case}"
    );
    assert!(case.contains("floor 100%"), "{case}");
    assert!(case.contains("torch 2.5.1 -&gt; 2.6.0") || case.contains("torch 2.5.1 -> 2.6.0"));
    let run9 = read(&site.join("runs/9.html"));
    assert!(run9.contains(r#"rel="prev" href="8.html""#), "{run9}");
    assert!(run9.contains(r#"rel="next" href="10.html""#), "{run9}");
    assert!(run9.contains("utilgate run 9 on h100-sxm"), "{run9}");
    let changes = read(&site.join("changes.html"));
    assert!(
        changes.contains("run 9:") && changes.contains("REGRESSION"),
        "{changes}"
    );
    for page in [&index, &case, &run9, &changes] {
        assert_self_contained(page);
    }
    assert!(site.join("site.css").is_file() && site.join("site.js").is_file());
}

#[test]
fn a_second_build_rewrites_only_what_a_new_night_touched() {
    let env = TestEnv::new();
    nightlies(&env, "2.6.0");
    build(&env);
    let site = env.path().join("site");
    let page = case_page(&site);
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .expect("mtime")
    };
    let (case_then, run1_then) = (mtime(&page), mtime(&site.join("runs/1.html")));
    let again = build(&env);
    assert!(
        again.starts_with("site: 1 case page (0 rewritten), 13 run pages (0 rewritten)"),
        "{again}"
    );
    assert_eq!(mtime(&page), case_then);
    night_run(&env, 13, "10.90", "2.6.0");
    let after = build(&env);
    // The case's page, the new night's run page and the one before it (its "next" link).
    assert!(
        after.starts_with("site: 1 case page (1 rewritten), 14 run pages (2 rewritten)"),
        "{after}"
    );
    assert_eq!(mtime(&site.join("runs/1.html")), run1_then);
    assert!(read(&site.join("runs/13.html")).contains(r#"rel="next" href="14.html""#));
    assert_eq!(read(&page).matches(r#"<a class="mark "#).count(), 14);

    // A damaged manifest loses nothing: the next build is whole again.
    std::fs::write(site.join("site.json"), "{ torn").expect("write");
    let out = env
        .cmd()
        .args(["site", "--out", "site"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("site.json: not a site manifest"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("(1 rewritten), 14 run pages (14 rewritten)"));
}

/// A page's text without the build's own time stamp.
fn unstamped(page: &str) -> String {
    page.lines()
        .filter(|l| !l.contains(r#"<span class="facts">"#))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_new_night_is_read_after_the_kept_nights_and_its_page_is_the_whole_builds() {
    let env = TestEnv::new();
    nightlies(&env, "2.6.0");
    build(&env);
    let site = env.path().join("site");
    let page = case_page(&site);
    let csv = page.with_extension("csv");
    let kept = read(&csv);
    let mut lines = kept.lines();
    assert_eq!(
        lines.next(),
        Some(
            "night,run,result,branch,commit,verdict,untrusted,utilisation,median_step_ms,noise_pct"
        )
    );
    assert_eq!(lines.count(), 13, "{kept}");
    let case = read(&page);
    assert!(
        case.contains("Every night, newest first; also as CSV"),
        "{case}"
    );
    let file = csv.file_name().and_then(|n| n.to_str()).expect("a name");
    assert!(
        case.contains(&format!(r#"<a href="{file}" download>"#)),
        "{case}"
    );

    night_run(&env, 13, "10.90", "2.6.0");
    let after = build(&env);
    assert!(after.contains("1 case page (1 rewritten)"), "{after}");
    let whole = env
        .cmd()
        .args(["site", "--out", "whole"])
        .output()
        .expect("runs");
    assert_eq!(whole.status.code(), Some(0), "{}", stderr(&whole));
    let whole = env.path().join("whole");
    let whole_page = case_page(&whole);
    assert_eq!(read(&csv).lines().count(), 15);
    assert_eq!(read(&csv), read(&whole_page.with_extension("csv")));
    assert_eq!(unstamped(&read(&page)), unstamped(&read(&whole_page)));

    // Kept nights that are not what a build wrote are not trusted: the case is read whole.
    std::fs::write(&csv, "night,run\n2020-01-01T00:00:00Z,99\n").expect("write");
    night_run(&env, 14, "10.90", "2.6.0");
    build(&env);
    env.cmd()
        .args(["site", "--out", "whole"])
        .output()
        .expect("runs");
    assert_eq!(read(&csv).lines().count(), 16);
    assert_eq!(read(&csv), read(&whole_page.with_extension("csv")));
    assert_eq!(unstamped(&read(&page)), unstamped(&read(&whole_page)));
}

#[test]
fn a_store_with_no_night_on_the_branch_has_no_case_page() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("batches = [1, 8]", "batches = [1]"));
    let out = env
        .cmd()
        .args(["run", "--branch", "feature", "--trigger", "schedule"])
        .output()
        .expect("runs");
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let text = build(&env);
    // Before: "0 case pages (1 rewritten)", and a page the index did not list.
    assert!(
        text.starts_with("site: 0 case pages (0 rewritten), 0 run pages (0 rewritten)"),
        "{text}"
    );
    let pages = std::fs::read_dir(env.path().join("site/cases"))
        .expect("cases/")
        .count();
    assert_eq!(pages, 0);
}

#[test]
fn harness_text_is_escaped_on_every_page() {
    let env = TestEnv::new();
    let hostile = "2.6.0<img src=x onerror=alert(1)>";
    nightlies(&env, hostile);
    build(&env);
    let site = env.path().join("site");
    let mut pages = vec![
        case_page(&site),
        site.join("index.html"),
        site.join("changes.html"),
    ];
    pages.push(site.join("runs/9.html"));
    let mut seen = false;
    for page in pages {
        let text = read(&page);
        assert!(!text.contains("<img"), "{}: {text}", page.display());
        seen |= text.contains("&lt;img");
    }
    assert!(seen, "the hostile version is shown, escaped");
}

#[test]
fn a_bad_since_names_the_fix() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["site", "--out", "site", "--since", "yesterday"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--since 2026-11-01"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_out_that_is_a_file_names_the_fix_and_leaves_the_file() {
    let env = TestEnv::new();
    env.write("notes.txt", "mine");
    let out = env
        .cmd()
        .args(["site", "--out", "notes.txt"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    // Before: "failed to access notes.txt: File exists (os error 17)".
    assert!(
        stderr(&out).contains("notes.txt is a file, not a directory")
            && stderr(&out).contains("--out site"),
        "{}",
        stderr(&out)
    );
    assert_eq!(read(&env.path().join("notes.txt")), "mine");
}

/// The site as a reader meets it, in a real Chromium driven by `tests/site/driver.mjs`
/// (playwright-core; `.ci/run` installs Chromium, Node and the driver's package under
/// `target/site-driver`, where the driver is copied to run).
#[test]
#[ignore = "needs chromium, node and playwright-core in target/site-driver (.ci/run installs them)"]
fn in_a_real_browser_every_night_is_drawn_linked_and_the_filters_survive_a_reload() {
    let env = TestEnv::new();
    nightlies(&env, "2.6.0");
    build(&env);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let driver = root.join("target/site-driver/driver.mjs");
    std::fs::copy(root.join("tests/site/driver.mjs"), &driver).expect("copy the driver");
    let out = std::process::Command::new("node")
        .arg(&driver)
        .arg(env.path().join("site"))
        .args(["13", "9"])
        .output()
        .expect("node starts");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_str(stdout(&out).trim()).expect("json");
    assert_eq!(report["failures"], serde_json::json!([]), "{report}");
    assert!(
        report["checks"].as_array().expect("checks").len() >= 18,
        "{report}"
    );
}

#[test]
fn only_the_newest_nights_get_run_pages_and_older_marks_keep_their_figures() {
    let env = TestEnv::new();
    nightlies(&env, "2.6.0");
    let out = env
        .cmd()
        .args(["site", "--out", "site", "--run-pages", "5"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("5 run pages (5 rewritten)"),
        "{}",
        stdout(&out)
    );
    let site = env.path().join("site");
    let case = read(&case_page(&site));
    assert_eq!(
        case.matches(r#"<a class="mark "#).count(),
        13,
        "every night is still drawn"
    );
    for run in 1..=13 {
        let linked = case.contains(&format!(r#"href="../runs/{run}.html""#));
        assert_eq!(linked, run > 8, "run {run}");
        assert_eq!(
            site.join(format!("runs/{run}.html")).is_file(),
            run > 8,
            "run {run}"
        );
    }
    assert!(
        case.contains(r#"tabindex="0" data-run="1""#),
        "an old mark stays focusable"
    );
    assert!(!read(&site.join("runs/9.html")).contains(r#"rel="prev""#));
    // A new night: run 9 falls out of the newest five, and its page goes (nothing links it).
    night_run(&env, 13, "10.90", "2.6.0");
    let out = env
        .cmd()
        .args(["site", "--out", "site", "--run-pages", "5"])
        .output()
        .expect("runs");
    // The new night, the one before it (its "next") and run 10 (no "prev" any more).
    assert!(
        stdout(&out).contains("5 run pages (3 rewritten)"),
        "{}",
        stdout(&out)
    );
    assert!(!site.join("runs/9.html").exists());
    assert!(!read(&case_page(&site)).contains(r#"href="../runs/9.html""#));
    assert!(!read(&site.join("runs/10.html")).contains(r#"rel="prev""#));
}

/// One case of a large run: decode of `seed-8b` at batch `batch`.
fn large_key(batch: u64) -> utilgate::case::CaseKey {
    utilgate::case::CaseKey {
        suite: "decode".into(),
        model: "seed-8b".into(),
        precision: "bf16".into(),
        phase: utilgate::case::Phase::Decode,
        batch,
        context: 4096,
        axes: utilgate::case::Axes::default(),
        tp: 1,
        ep: 1,
    }
}

/// A nightly on main of `cases` cases, each judged as `verdict_of(batch)` says, stored through
/// the library's store API (500 cases through `run` would take minutes), as the store bench
/// stores them: 3 repeats of 100 samples, a stored decision.
fn large_night(
    night: i64,
    cases: u64,
    verdict_of: impl Fn(u64) -> utilgate::case::Verdict,
) -> utilgate::store::NewRun {
    use utilgate::store::{NewResult, NewRun};
    let t = jiff::Timestamp::from_second(1_700_000_000 + night * 86_400).expect("in range");
    let results = (1..=cases)
        .map(|batch| {
            let verdict = verdict_of(batch);
            let median = 10.0 + batch as f64 / 100.0;
            let (drop, reason) = if verdict == utilgate::case::Verdict::Regressed {
                (4.0, "4.0% slower, beyond the 3.0% threshold.")
            } else {
                (0.4, "Within the noise: 0.4% slower, the threshold is 3.0%.")
            };
            let then = 1.0 - drop / 100.0;
            let decision = serde_json::json!({
                "verdict": verdict, "util_now": 4.5 / median * then, "util_then": 4.5 / median,
                "step_now_ms": median / then, "step_then_ms": median, "drop_pct": drop,
                "interval_pct": [drop - 1.0, drop + 1.0], "p_value": 0.21, "n_now": 300,
                "n_then": 300, "repeats_now": 3, "repeats_then": 12, "floor_changed": false,
                "noise_pct": 0.5, "resolution_pct": 1.1, "reasons": [reason]
            });
            NewResult {
                key: large_key(batch),
                verdict: Some(verdict),
                error: None,
                floor_ms: Some(4.5),
                floor_json: None,
                median_ms: Some(median),
                utilisation: Some(4.5 / median),
                mbu: None,
                mfu: None,
                summary_json: Some(serde_json::json!({
                    "median_ms": median, "p95_ms": median * 1.01, "min_ms": median * 0.99,
                    "spread_pct": 0.6, "n": 300, "repeat_medians_ms": [median, median, median]
                })),
                decision_json: Some(decision),
                repeats_ms: vec![vec![median; 100]; 3],
                warmup_ms: vec![],
                env: std::collections::BTreeMap::from([("torch".to_owned(), "2.5.1".to_owned())]),
                gpu_state_json: None,
                stderr_tail: None,
                promote: true,
                budget: None,
                costs: Vec::new(),
                quality: std::collections::BTreeMap::new(),
                speculative: None,
                energy: Vec::new(),
            }
        })
        .collect();
    NewRun {
        started_at: t,
        finished_at: t + jiff::SignedDuration::from_mins(50),
        git_sha: Some(format!("{night:02}bbbbbbbbbbbbbbbb")),
        branch: Some("main".into()),
        trigger: Some("schedule".into()),
        pr_number: None,
        gpu_sku: "h100-sxm".into(),
        gpu_json: None,
        host: Some("ci-1".into()),
        utilgate_version: "0.1.0".into(),
        config_json: None,
        promote_reason: "passed the gate on main".into(),
        canary_json: None,
        group: None,
        uid: None,
        budget_night: None,
        results,
    }
}

#[test]
fn a_large_runs_page_is_a_summary_under_500_kb_that_links_every_case() {
    use utilgate::case::Verdict;
    let env = TestEnv::new();
    std::fs::create_dir_all(env.db().parent().expect("dir")).expect("mkdir");
    let mut store = utilgate::store::Store::open(&env.db(), std::time::Duration::from_secs(5))
        .expect("opens the store");
    store
        .insert_run(&large_night(0, 500, |_| Verdict::Pass))
        .expect("stores night 1");
    // Night 2: three regressions among 500 passes.
    store
        .insert_run(&large_night(1, 500, |b| {
            if b % 200 == 7 {
                Verdict::Regressed
            } else {
                Verdict::Pass
            }
        }))
        .expect("stores night 2");
    drop(store);
    let text = build(&env);
    assert!(
        text.starts_with("site: 500 case pages (500 rewritten), 2 run pages (2 rewritten)"),
        "{text}"
    );
    let site = env.path().join("site");
    let page = read(&site.join("runs/2.html"));
    assert!(page.len() < 500_000, "the run page is {} bytes", page.len());
    assert!(
        page.contains("utilgate run 2 on h100-sxm"),
        "the run's header"
    );
    assert!(page.contains(r#"rel="prev" href="1.html""#));
    assert!(
        page.contains("A summary: each case"),
        "it says it is a summary"
    );
    // Every case's row links its own page, and that page exists (the template escapes `/`).
    let page = page.replace("&#x2f;", "/");
    let marker = r#"<a class="history" href="../"#;
    let linked: std::collections::BTreeSet<&str> = page
        .match_indices(marker)
        .map(|(at, _)| {
            let rest = &page[at + marker.len()..];
            &rest[..rest.find('"').expect("closed")]
        })
        .collect();
    assert_eq!(linked.len(), 500, "every case linked once: {linked:?}");
    for batch in 1..=500 {
        let tag = format!("_b{batch}_c4096-");
        let to = linked
            .iter()
            .find(|l| l.contains(&tag))
            .unwrap_or_else(|| panic!("case b{batch} is linked"));
        assert!(site.join(to).is_file(), "{to}");
    }
    // The three regressions have a section (the rows link it); the passes have none.
    assert_eq!(
        page.matches(r#"<section class="case""#).count(),
        3,
        "{page}"
    );
    assert!(page.contains(r#"<h3><span class="v-regressed">regressed</span> decode/seed-8b/bf16/decode/b207/c4096"#), "{page}");
    assert!(!page.contains("<svg"), "no per-case chart on a summary");
    assert_self_contained(&page);
}

const SITE_URL: &str = "https://org.github.io/repo/";

/// The sticky comment of a pull request 10% slower than main's baseline, published with the
/// config's `[site]` table as `site` is given.
fn pr_comment(env: &TestEnv, site: &str) -> String {
    use crate::github::{Actions, Github, baseline_then_pr, matching, publish};
    env.write_config(&format!("{}\n{site}", TestEnv::config_with("")));
    baseline_then_pr(env, "11.0");
    let gh = Github::happy();
    let actions = Actions::new(env, &gh.uri(), false);
    let out = publish(env, &actions, &[]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", stderr(&out));
    let requests = gh.requests();
    let created = matching(&requests, "POST", "/issues/2/comments");
    assert_eq!(created.len(), 1, "{}", stderr(&out));
    let body: serde_json::Value = created[0].body_json().expect("json body");
    body["body"].as_str().expect("body").to_owned()
}

#[test]
fn with_a_site_url_the_comment_links_each_regressed_case_to_its_page_and_the_index() {
    let env = TestEnv::new();
    let text = pr_comment(&env, &format!("[site]\nurl = \"{SITE_URL}\"\n"));
    assert!(text.contains("regressed"), "{text}");
    assert!(
        text.contains(&format!(
            "[Every case's history on the site]({SITE_URL}index.html)"
        )),
        "{text}"
    );
    // Both cases regressed: each links its page, and the page is the one `site` writes.
    build(&env);
    let prefix = format!("[this case's page on the site]({SITE_URL}");
    let pages: Vec<&str> = text
        .match_indices(&prefix)
        .map(|(at, _)| {
            let rest = &text[at + prefix.len()..];
            &rest[..rest.find(')').expect("closed")]
        })
        .collect();
    assert_eq!(pages.len(), 2, "{text}");
    for page in pages {
        assert!(page.starts_with("cases/h100-sxm_decode_seed-8b"), "{page}");
        assert!(env.path().join("site").join(page).is_file(), "{page}");
    }
}

#[test]
fn without_a_site_url_the_comment_links_no_site() {
    let env = TestEnv::new();
    let text = pr_comment(&env, "");
    assert!(text.contains("regressed"), "{text}");
    assert!(!text.contains("on the site"), "{text}");
    assert!(!text.contains("cases/"), "{text}");
}

#[test]
fn a_site_url_that_is_no_address_names_the_key_and_the_fix() {
    let env = TestEnv::new();
    env.write_config(&format!(
        "{}\n[site]\nurl = \"org.github.io/repo\"\n",
        TestEnv::config_with("")
    ));
    let out = env
        .cmd()
        .args(["site", "--out", "site"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("utilgate.toml") && err.contains("site.url"),
        "{err}"
    );
    assert!(
        err.contains("url = \"https://org.github.io/repo/\""),
        "{err}"
    );
}
