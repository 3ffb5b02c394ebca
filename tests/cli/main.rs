//! End-to-end tests: the real binary, real child processes speaking the harness protocol, real
//! `SQLite` files in temporary directories. One test binary with modules, to save link time.
#![expect(
    clippy::disallowed_methods,
    reason = "tests start processes and read the environment"
)]

mod adopt;
mod checks;
mod env;
mod example;
mod failures;
mod floor;
mod gate;
mod github;
mod gpu;
mod history;
mod python;
mod report;
mod run;
mod standin;
mod trust;
mod workflows;
