//! Nothing injected, nothing leaked: values rendered into the harness command are shell-quoted,
//! credentials never reach the harness's environment, and token-shaped strings never reach
//! stderr, stdout or the store (issue #11).

use std::process::Output;

use crate::env::{TestEnv, stderr, stdout};

/// `utilgate run --trusted` (it holds credentials on purpose) with the given environment.
fn run_trusted(env: &TestEnv, envs: &[(&str, &str)]) -> Output {
    let mut cmd = env.cmd();
    cmd.args(["run", "--trusted", "--branch", "main"]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    cmd.output().expect("runs")
}

/// A config whose one model is named `model` (TOML-quoted) and whose command is `command`.
fn config_with_model(model: &str, command: &str) -> String {
    TestEnv::config_with("")
        .replace("[models.seed-8b]", &format!("[models.{model}]"))
        .replace("models = [\"seed-8b\"]", &format!("models = [{model}]"))
        .replace(
            "command = \"sh harness.sh\"",
            &format!("command = {command}"),
        )
        .replace("batches = [1, 8]", "batches = [1]")
}

#[test]
fn hostile_model_names_are_passed_as_one_word_never_run_as_shell() {
    let hostile = [
        r#""x; touch pwned-semicolon""#,
        r#""x$(touch pwned-dollar)""#,
        r#""x`touch pwned-backtick`""#,
        r#""x' ; touch pwned-quote ; echo '""#,
    ];
    for model in hostile {
        let env = TestEnv::new();
        // The harness records the argument it got.
        env.write_config(&config_with_model(
            model,
            r#""printf '%s' {{ model }} > got-arg; sh harness.sh""#,
        ));
        let out = env.run("main", &[]);
        assert_eq!(out.status.code(), Some(0), "{model}: {}", stderr(&out));
        let pwned: Vec<_> = std::fs::read_dir(env.path())
            .expect("dir")
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("pwned"))
            .collect();
        assert!(pwned.is_empty(), "{model} ran as shell: {pwned:?}");
        let got = std::fs::read_to_string(env.path().join("got-arg")).expect("arg");
        let want: String =
            toml::from_str::<toml::Value>(&format!("v = {model}")).expect("toml")["v"]
                .as_str()
                .expect("string")
                .to_owned();
        assert_eq!(got, want, "the harness gets the name as one word");
    }
}

#[test]
fn a_variable_inside_the_users_own_quotes_is_refused_with_the_fix() {
    let env = TestEnv::new();
    env.write_config(&config_with_model(
        "\"seed-8b\"",
        r#""sh harness.sh --model '{{ model }}'""#,
    ));
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("suite[0].command"), "{err}");
    assert!(
        err.contains("{{ model }}") && err.contains("quote"),
        "{err}"
    );
    assert!(err.contains("raw"), "the hint names the raw filter: {err}");
}

#[test]
fn the_raw_filter_renders_a_value_unquoted() {
    let env = TestEnv::new();
    env.write_config(&config_with_model(
        "\"seed-8b\"",
        r#""printf '%s' '{{ model | raw }}' > got-arg; sh harness.sh""#,
    ));
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let got = std::fs::read_to_string(env.path().join("got-arg")).expect("arg");
    assert_eq!(got, "seed-8b");
}

#[test]
fn a_config_dir_with_a_space_runs_every_case() {
    let env = TestEnv::new();
    let dir = env.path().join("my bench dir");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("harness.sh"), crate::env::SCRIPT_HARNESS).expect("harness");
    std::fs::write(
        dir.join("utilgate.toml"),
        TestEnv::config_with("").replace("sh harness.sh", "sh {{ config_dir }}/harness.sh"),
    )
    .expect("config");
    let out = env
        .cmd()
        .current_dir(&dir)
        .args(["run", "--branch", "main"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn control_characters_in_names_are_refused() {
    for (table, fix) in [
        ("models", "[models.\"seed\\u001b[2Jx\"]"),
        ("precisions", "precisions = [\"bf16\\u0007\"]"),
        ("name", "name = \"dec\\u0000ode\""),
    ] {
        let env = TestEnv::new();
        let text = match table {
            "models" => TestEnv::config_with("")
                .replace("[models.seed-8b]", fix)
                .replace("models = [\"seed-8b\"]", "models = [\"seed\\u001b[2Jx\"]"),
            "precisions" => TestEnv::config_with("").replace("precisions = [\"bf16\"]", fix),
            _ => TestEnv::config_with("").replace("name = \"decode\"", fix),
        };
        env.write_config(&text);
        let out = env.cmd().args(["config", "check"]).output().expect("runs");
        assert_eq!(out.status.code(), Some(2), "{table}: {}", stdout(&out));
        let err = stderr(&out);
        assert!(err.contains("control character"), "{table}: {err}");
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{7}'),
            "{table}: {err:?}"
        );
    }
}

#[test]
fn an_unknown_template_variable_is_named() {
    let env = TestEnv::new();
    env.write_config(
        &TestEnv::config_with("").replace("sh harness.sh", "sh harness.sh --model {{ modle }}"),
    );
    let out = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("modle"), "{err}");
    assert!(err.contains("did you mean `model`"), "{err}");
}

/// A harness that reports every credential-looking variable it can see.
const ENV_SPY: &str = r"env | grep -E '^(GH_|GITHUB_TOKEN|ACTIONS_|CI_JOB_TOKEN|PGPASSWORD|DATABASE_URL|AUTH_HEADER|GITHUB_CONTEXT|PERF_DSN|BOT_TOKEN)' | sed 's/=.*//' | sort > seen-vars; sh harness.sh";

#[test]
fn known_credential_variables_never_reach_the_harness_unless_passed_through() {
    let env = TestEnv::new();
    env.write_config(&TestEnv::config_with("").replace("sh harness.sh", ENV_SPY));
    let creds = [
        ("GITHUB_TOKEN", "ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
        ("GH_TOKEN", "gho_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"),
        ("GH_ENTERPRISE_TOKEN", "enterprise-secret-value"),
        ("ACTIONS_ID_TOKEN_REQUEST_TOKEN", "oidc-request-secret"),
        (
            "ACTIONS_ID_TOKEN_REQUEST_URL",
            "https://token.actions.example/x",
        ),
        ("ACTIONS_RUNTIME_TOKEN", "runtime-secret-value"),
        ("CI_JOB_TOKEN", "gitlab-job-secret"),
        ("PGPASSWORD", "postgres-store-password"),
        // A store URL with its password, under a name utilgate does not know.
        (
            "DATABASE_URL",
            "postgres://gate:store-pw-in-url@db.internal/perf",
        ),
        // #28: values that only contain a credential, under names utilgate does not know.
        (
            "AUTH_HEADER",
            "Bearer ghp_cccccccccccccccccccccccccccccccccccc",
        ),
        (
            "GITHUB_CONTEXT",
            r#"{"token":"ghs_dddddddddddddddddddddddddddddddddddd"}"#,
        ),
        ("PERF_DSN", "host=db.internal user=gate password=dsn-pw"),
        ("BOT_TOKEN", "8f14e45fceea167a5a36dedd4bea2543c0ffee42"),
    ];
    let out = run_trusted(&env, &creds);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = std::fs::read_to_string(env.path().join("seen-vars")).expect("spy ran");
    assert_eq!(seen.trim(), "", "credentials reached the harness: {seen}");

    env.write_config(
        &TestEnv::config_with("env_passthrough = [\"GH_TOKEN\"]").replace("sh harness.sh", ENV_SPY),
    );
    let out = run_trusted(&env, &creds);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let seen = std::fs::read_to_string(env.path().join("seen-vars")).expect("spy ran");
    assert_eq!(seen.trim(), "GH_TOKEN");
}

#[test]
fn a_token_printed_by_the_harness_is_masked_on_stderr_and_in_the_store() {
    let env = TestEnv::new();
    let token = "ghp_HarnessLeakedThisToken0123456789ab";
    let secret = "registered-enterprise-token-value";
    env.write_config(&TestEnv::config_with("").replace(
        "sh harness.sh",
        r#"echo \"debug: token $(cat leaked-token) and $GH_SECRET_ECHO\" >&2; exit 3"#,
    ));
    // The harness got a token-shaped value some other way (a file: a variable holding one is
    // removed from its environment), and echoes the value of the job's GITHUB_TOKEN under
    // another name.
    env.write("leaked-token", token);
    let out = run_trusted(
        &env,
        &[("GITHUB_TOKEN", secret), ("GH_SECRET_ECHO", secret)],
    );
    assert_eq!(out.status.code(), Some(2));
    let all = format!("{}{}", stdout(&out), stderr(&out));
    assert!(all.contains("ghp_***"), "{all}");
    let report = env.json(&["runs", "show"]);
    let stored = report.to_string();
    assert!(stored.contains("ghp_***"), "{stored}");
    for text in [&all, &stored] {
        assert!(!text.contains(token), "{text}");
        assert!(!text.contains(secret), "{text}");
    }
    // The store's files themselves hold neither.
    for file in [env.db(), env.db().with_extension("db-wal")] {
        let bytes = std::fs::read(&file).unwrap_or_default();
        let raw = String::from_utf8_lossy(&bytes);
        assert!(
            !raw.contains(token) && !raw.contains(secret),
            "{}",
            file.display()
        );
    }
}
