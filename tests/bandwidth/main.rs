//! Tests that take real measurements of memory bandwidth and compare them with each other. They
//! live in their own test binary because cargo runs test binaries one after another: nothing
//! else in the suite competes with them for the memory bus. In the `cli` binary the other tests'
//! harnesses streamed memory while the bandwidth probe ran, the probe measured low, and a real
//! step came out 25% faster than its floor (`invalid`, seen in CI).
#![expect(
    clippy::disallowed_methods,
    reason = "tests start processes and read the environment"
)]

#[path = "../cli/env.rs"]
#[allow(
    dead_code,
    reason = "the shared test environment has helpers only the cli binary uses"
)]
mod env;
mod example;
