//! GPU paths on a machine without a GPU: the missing driver is a clear error (exit 2) for
//! `probe` and reference suites, and a missing NVML is one warning while the run goes on.
//! On a machine with the driver they check the other side (the probe measures; the reference
//! suite does not fail for want of a driver); the GPU's own tests are `#[ignore]`d and run by
//! scripts/gpu-check.sh.

use crate::env::{TestEnv, stderr};

const NO_DRIVER: &str =
    "no NVIDIA driver found (libcuda.so.1); run on a GPU runner or use a harness suite";

fn has_driver() -> bool {
    utilgate::gpu::libs::require_driver().is_ok()
}

#[test]
fn probe_without_a_driver_exits_2_with_the_message() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["probe", "--no-store"])
        .output()
        .expect("runs");
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    if has_driver() {
        // The other side: with a driver the probe measures and prints its table.
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(crate::env::stdout(&out).contains("achievable"), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(err.contains(NO_DRIVER), "{err}");
    }
}

#[test]
fn reference_suite_without_a_driver_exits_2_before_measuring() {
    let env = TestEnv::new();
    let config = TestEnv::config_with("").replace(
        "command = \"sh harness.sh\"",
        "workload = \"reference\"\ngraphs = true",
    );
    env.write_config(&config);
    let check = env.cmd().args(["config", "check"]).output().expect("runs");
    assert_eq!(check.status.code(), Some(0), "{}", stderr(&check));
    let out = env.run("main", &[]);
    let err = stderr(&out);
    assert!(!err.contains("panicked"), "{err}");
    if has_driver() {
        // The other side: a driver is found, so that is never the reason it stops.
        assert!(!err.contains(NO_DRIVER), "{err}");
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(err.contains(NO_DRIVER), "{err}");
        assert!(
            !env.db().exists(),
            "nothing is stored when the run cannot start"
        );
    }
}

#[test]
fn missing_nvml_is_one_warning_and_the_run_goes_on() {
    let env = TestEnv::new();
    let out = env.run("main", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    let warning = "no NVML (libnvidia-ml.so.1): GPU clocks and throttling are not recorded";
    if err.contains(warning) {
        assert_eq!(err.matches(warning).count(), 1, "{err}");
    } else {
        // NVML is present: the run recorded the GPU's fingerprint.
        let store = utilgate::store::Store::open_existing_read_only(
            &env.db(),
            std::time::Duration::from_secs(5),
        )
        .expect("store");
        let run = store
            .run(utilgate::store::RunId(1))
            .expect("read")
            .expect("run");
        let gpu = run.gpu_json.expect("gpu_json");
        assert!(gpu["fingerprint"]["name"].is_string(), "{gpu}");
    }
}
