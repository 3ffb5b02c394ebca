//! The CLI's front door through the binary: `gpus`, shell completions, the man page, and the
//! "did you mean" hints for GPU, model and suite names (issue #9).

use crate::env::{TestEnv, stderr, stdout};

#[test]
fn gpus_lists_the_catalogue_with_its_figures() {
    let env = TestEnv::new();
    let out = env.cmd().args(["gpus"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let h100 = text
        .lines()
        .find(|l| l.contains("h100-sxm"))
        .expect("h100-sxm row");
    assert!(h100.contains("3350") && h100.contains("989.4"), "{h100}");
    let json = env.json(&["gpus"]);
    assert_eq!(json["schema_version"], 1);
    let names: Vec<&str> = json["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(
        names.contains(&"h100-sxm") && names.contains(&"a100-80gb"),
        "{names:?}"
    );
}

#[test]
fn a_table_fits_the_width_it_is_given() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["gpus"])
        .env("COLUMNS", "60")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let table: Vec<&str> = text
        .lines()
        .take_while(|l| !l.starts_with("dense"))
        .collect();
    assert!(
        table.iter().all(|l| l.chars().count() <= 60),
        "wider than 60:\n{text}"
    );
}

#[test]
fn a_near_gpu_name_is_suggested_and_the_listing_exists() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "seed-8b",
            "--gpu",
            "h100",
            "--phase",
            "decode",
            "--context",
            "4096",
            "--config",
            "utilgate.toml",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown GPU \"h100\""), "{err}");
    assert!(err.contains("hint: did you mean `h100-sxm`?"), "{err}");
    assert!(err.contains("`utilgate gpus`"), "{err}");
}

#[test]
fn a_near_model_name_is_suggested() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args([
            "floor",
            "--model",
            "llama-3.1-8",
            "--gpu",
            "h100-sxm",
            "--phase",
            "decode",
            "--context",
            "4096",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("did you mean `llama-3.1-8b`?"), "{err}");
}

#[test]
fn a_near_suite_name_is_suggested_before_anything_runs() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["run", "--suite", "decod"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--suite decod: no such suite"), "{err}");
    assert!(err.contains("did you mean `--suite decode`?"), "{err}");
    assert!(!env.db().exists(), "nothing ran");
}

#[test]
fn a_misspelt_config_key_is_suggested() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("").replace("batches = ", "batchs = ");
    env.write_config(&config);
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("unknown field `batchs`"), "{err}");
    assert!(err.contains("hint: did you mean `batches`?"), "{err}");
}

#[test]
fn completions_and_the_man_page_are_generated() {
    let env = TestEnv::new();
    for shell in ["bash", "zsh", "fish"] {
        let out = env
            .cmd()
            .args(["completions", shell])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            text.contains("utilgate") && text.contains("baseline"),
            "{shell}"
        );
    }
    let out = env.cmd().args(["man"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.starts_with(".ie") || page.contains(".TH"), "{page}");
    assert!(page.contains("floor"), "{page}");
    let dir = env.path().join("man");
    let out = env
        .cmd()
        .args(["man", "--out-dir"])
        .arg(&dir)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for page in [
        "utilgate.1",
        "utilgate-run.1",
        "utilgate-floor.1",
        "utilgate-gpus.1",
    ] {
        assert!(dir.join(page).is_file(), "{page}");
    }
}

#[test]
fn errors_are_red_on_a_coloured_stderr_and_plain_in_a_pipe() {
    let env = TestEnv::new();
    let failing = [
        "floor",
        "--model",
        "seed-8b",
        "--gpu",
        "h100",
        "--phase",
        "decode",
        "--context",
        "4096",
    ];
    let out = env
        .cmd()
        .args(["--color", "always"])
        .args(failing)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("\u{1b}[1m\u{1b}[31merror:\u{1b}[0m"),
        "error: in bold red: {err:?}"
    );
    assert!(err.contains("\u{1b}[1m\u{1b}[36mhint:"), "{err:?}");
    // The default, a pipe: no escape codes at all, the same words.
    let out = env.cmd().args(failing).output().expect("runs");
    let plain = stderr(&out);
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    assert!(plain.starts_with("error: "), "{plain}");
    // NO_COLOR wins over a terminal's default but not over `--color always` (as cargo does).
    let out = env
        .cmd()
        .args(failing)
        .env("NO_COLOR", "1")
        .output()
        .expect("runs");
    assert!(!stderr(&out).contains('\u{1b}'));
}
