//! Speculative decoding through the binary (#33 item 3): a suite that drafts k = 4 tokens per
//! round (`[suite.speculative]`), its harness reporting the counted rounds' drafted and
//! accepted tokens; a night whose acceptance fell fails the gate as `regressed` although its
//! round time held, a harness that reports no counts is `invalid`, and the floor is the
//! round's.

use crate::env::{TestEnv, case_of, stderr, stdout, verdict_of};

/// The standard scripted harness (20 counted steps), then the rounds' tokens: 20 rounds x
/// batch x k = 4 drafted, `ACCEPT` percent of them accepted.
const DRAFTING: &str = r#"sh harness.sh
[ -n "$NO_COUNTS" ] && exit 0
drafted=$((20 * UTILGATE_BATCH * UTILGATE_DRAFT_K))
accepted=$((drafted * ${ACCEPT:-70} / 100))
printf '{"speculative": {"drafted": %s, "accepted": %s}}\n' "$drafted" "$accepted" >> "$UTILGATE_OUT"
"#;

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096/draft=ngram/draft_k=4";
const B8: &str = "decode/seed-8b/bf16/decode/b8/c4096/draft=ngram/draft_k=4";

fn drafting_env() -> TestEnv {
    let env = TestEnv::new();
    env.write("drafting.sh", DRAFTING);
    env.write_config(
        &TestEnv::config_with("speculative = { draft = \"ngram\", k = [4] }").replace(
            "command = \"sh harness.sh\"",
            "command = \"sh drafting.sh\"",
        ),
    );
    env
}

#[test]
fn acceptance_that_fell_fails_a_case_whose_rounds_held() {
    let env = drafting_env();
    let first = env.run("main", &[("ACCEPT", "70")]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let report = env.json(&["runs", "show"]);
    // The key carries the draft; the floor is one round's: the bare 8B model verifying 5
    // tokens per sequence (16 GB of weights, 4096 x 131,072 B of cache read, 5 x 131,072 B
    // written at 3.35 TB/s), n-gram drafting costing the GPU nothing.
    let case = case_of(&report, B1);
    let floor = case["floor_ms"].as_f64().expect("a floor");
    let bytes = 16e9 + 4096.0 * 131_072.0 + 5.0 * 131_072.0;
    assert!((floor - bytes / 3.35e12 * 1e3).abs() < 1e-9, "{floor}");
    let reasons = case["decision"]["reasons"].to_string();
    assert!(
        reasons.contains(
            "Speculation: 70.0% of 240 drafted tokens accepted (3.80 tokens per round per \
             sequence at k = 4); no baseline figure yet."
        ),
        "{reasons}"
    );
    let same = env.run("main", &[("ACCEPT", "70")]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));

    // The same steps, half the drafts accepted: batch 8's 480 rounds a night show it (at
    // least 11.9 points at the grid's level), batch 1's 60 cannot tell it from chance.
    let fell = env.run("main", &[("ACCEPT", "50")]);
    assert_eq!(fell.status.code(), Some(1), "{}", stderr(&fell));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B8), "regressed");
    assert_eq!(verdict_of(&report, B1), "inconclusive");
    let case = case_of(&report, B8);
    let check = &case["decision"]["acceptance"];
    assert_eq!(check["verdict"], "regressed");
    assert_eq!(check["now"]["drafted"], 1920);
    assert_eq!(check["now"]["accepted"], 960);
    assert_eq!(check["then"]["accepted"], 1344);
    let reasons = case["decision"]["reasons"][0].as_str().expect("a reason");
    assert!(
        reasons.starts_with(
            "Speculation regressed whatever the step time: acceptance fell from 70.0% (3.80 \
             tokens per round) to 50.0% of 1920 drafted tokens accepted (3.00 tokens per round \
             per sequence at k = 4), 20.0 points against a threshold of 2.0; the drop is at \
             least 11.9 points"
        ),
        "{reasons}"
    );
    assert!(
        case["drop_pct"].as_f64().expect("drop").abs() < 1.0,
        "the round time held: {case}"
    );
    assert!(
        stdout(&fell).contains("Speculation regressed"),
        "{}",
        stdout(&fell)
    );
}

#[test]
fn a_drafting_harness_that_reports_no_counts_is_invalid_and_says_what_to_report() {
    let env = drafting_env();
    let out = env.run("main", &[("NO_COUNTS", "1")]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "invalid");
    let reason = case_of(&report, B1)["decision"]["reasons"][0]
        .as_str()
        .expect("a reason")
        .to_owned();
    assert!(
        reason.contains(
            "the harness reported no {\"speculative\": {\"drafted\": D, \"accepted\": A}} line"
        ),
        "{reason}"
    );
}

#[test]
fn the_harness_sees_its_draft_and_a_prefill_suite_cannot_draft() {
    let env = drafting_env();
    env.write_config(
        &TestEnv::config_with("speculative = { draft = \"ngram\", k = [4] }").replace(
            "phases = [\"decode\"]",
            "phases = [\"decode\", \"prefill\"]",
        ),
    );
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("suite[0].phases") && text.contains("drafts decode steps only"),
        "{text}"
    );
}

#[test]
fn the_floor_command_floors_a_drafted_round() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-8b",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "4096",
            "--draft",
            "llama-3.2-1b",
            "--draft-k",
            "4",
            "--format",
            "json",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let s = &json["floor"]["speculative"];
    assert_eq!(s["k"], 4);
    // Four Llama 3.2 1B steps at contexts 4096 to 4099 (the floor's own tests say how).
    assert_eq!(s["draft_bytes"].as_f64(), Some(10_423_713_792.0));
    let total = json["floor"]["floor_ms"].as_f64().expect("floor");
    let parts = s["verify_ms"].as_f64().expect("verify") + s["draft_ms"].as_f64().expect("draft");
    assert!((total - parts).abs() < 1e-12, "{total} vs {parts}");
    assert_eq!(json["inputs"]["draft"], "llama-3.2-1b");
}
