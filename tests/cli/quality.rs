//! The accuracy guard through the binary (#33 item 5): a harness that scores a fixed prompt set
//! beside its steps (`{"quality": {...}}`); a night whose answers collapsed fails the gate as
//! `regressed` although its steps are as fast as ever, and says so first.

use crate::env::{TestEnv, case_of, stderr, stdout, verdict_of};

/// The standard scripted harness, then each repeat's score on 500 prompts (`CORRECT`).
const SCORING: &str = r#"sh harness.sh
printf '{"quality": {"gsm8k": {"correct": %s, "total": 500}}}\n' "${CORRECT:-412}" >> "$UTILGATE_OUT"
"#;

const B1: &str = "decode/seed-8b/bf16/decode/b1/c4096";

#[test]
fn answers_that_collapsed_fail_a_case_whose_steps_held() {
    let env = TestEnv::new();
    env.write("scoring.sh", SCORING);
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", "command = \"sh scoring.sh\""),
    );
    let first = env.run("main", &[("CORRECT", "412")]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    // Two answers fewer of 500 a repeat: 0.4 points, under the 1-point threshold.
    let wobble = env.run("main", &[("CORRECT", "410")]);
    assert_eq!(wobble.status.code(), Some(0), "{}", stderr(&wobble));
    // A metric that held is shown with its figures too, in the stored decision and the HTML
    // report (before, only a failing metric had a sentence).
    let held = "Quality held: gsm8k 82.0% (1230/1500) against the baseline's 82.4%.";
    let report = env.json(&["runs", "show"]);
    let reasons = case_of(&report, B1)["decision"]["reasons"].to_string();
    assert!(reasons.contains(held), "{reasons}");
    let html = env
        .cmd()
        .args(["report", "--format", "html"])
        .output()
        .expect("runs");
    assert!(
        stdout(&html).contains(
            "Quality held: gsm8k 82.0% (1230&#x2f;1500) against the baseline&#x27;s 82.4%."
        ),
        "{}",
        stdout(&html)
    );

    // The same steps, but 300 of 500 right in each of the 3 repeats: 60.0% against the
    // baseline's 1230 of 1500 (82.0%).
    let collapsed = env.run("main", &[("CORRECT", "300")]);
    assert_eq!(collapsed.status.code(), Some(1), "{}", stderr(&collapsed));
    let report = env.json(&["runs", "show"]);
    assert_eq!(verdict_of(&report, B1), "regressed");
    let case = case_of(&report, B1);
    let check = &case["decision"]["quality"][0];
    assert_eq!(check["metric"], "gsm8k");
    assert_eq!(check["verdict"], "regressed");
    assert_eq!(check["now"]["correct"], 900);
    assert_eq!(check["now"]["total"], 1500);
    assert_eq!(check["then"]["correct"], 1230);
    assert!((check["drop_pts"].as_f64().expect("drop") - 22.0).abs() < 1e-9);
    let reasons = case["decision"]["reasons"].to_string();
    assert!(
        reasons.contains(
            "Quality regressed whatever the speed: gsm8k fell from 82.0% (1230/1500) to 60.0% \
             (900/1500), 22.0 points against a threshold of 1.0; the drop is at least 17.8 \
             points"
        ),
        "{reasons}"
    );
    // The terminal says it too, and the step time itself did not move.
    assert!(
        stdout(&collapsed).contains("Quality regressed"),
        "{}",
        stdout(&collapsed)
    );
    assert!(
        case["drop_pct"].as_f64().expect("drop").abs() < 1.0,
        "{case}"
    );
}

#[test]
fn a_malformed_score_names_the_metric_and_the_fix() {
    let env = TestEnv::new();
    env.write("scoring.sh", SCORING);
    env.write_config(
        &TestEnv::config_with("")
            .replace("command = \"sh harness.sh\"", "command = \"sh scoring.sh\""),
    );
    let out = env.run("main", &[("CORRECT", "600")]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        text.contains("quality.gsm8k has 600 correct of 500"),
        "{text}"
    );
    assert!(text.contains("\"correct\": 412"), "{text}");
}
