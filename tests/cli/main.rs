//! End-to-end tests: the real binary, real child processes speaking the harness protocol, real
//! `SQLite` files in temporary directories. One test binary with modules, to save link time.
#![expect(
    clippy::disallowed_methods,
    reason = "tests start processes and read the environment"
)]

mod ab;
mod adopt;
mod axes;
mod base_gate;
mod baselines;
mod baselines_pr;
mod bisect;
mod budget;
mod budget_upgrade;
mod canary;
mod checks;
mod credentials;
mod energy;
mod env;
mod evidence_files;
mod failures;
mod fleet;
mod fleet_publish;
mod floor;
mod front;
mod gate;
mod github;
mod gpu;
mod help;
mod history;
mod import_history;
mod inject;
mod long_history;
mod lost;
mod measurements;
mod nightly_issue;
mod nsight;
mod nsight_capture;
mod parallel;
#[path = "../support/pg_cluster.rs"]
mod pg_cluster;
mod pg_store;
mod pg_store_copy;
mod pg_store_load;
mod pg_store_tls;
mod pr_reference;
mod processes;
mod python;
mod quality;
mod readme;
mod report;
mod run;
mod serve;
mod site;
mod site_serve;
mod speculation;
mod standin;
mod trace;
mod trace_show;
mod trust;
mod utilisation;
mod verdict_words;
mod workflows;
