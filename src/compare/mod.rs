//! The verdict engine (DESIGN.md §2 and §7): one case's evidence against its baseline, the
//! environment diff shown beside a regression, and which results may fail the gate or become a
//! baseline. Pure: no files, clock, environment or processes; everything arrives as arguments.
//!
//! The statistical rule is explained in README "How the gate decides" and in [`decide`]'s documentation; its
//! power is measured by `examples/power_eval.rs` through this very code.

mod decide;
mod env;
mod gate;
mod service;

pub use decide::{Decision, Estimator, Evidence, Policy, decide, error_decision, missing_decision};
pub use env::{EnvChange, env_diff, with_env_causes};
pub use gate::{
    acceptable, gate_failed, missing_keys, promotable, run_promotes, should_confirm,
    unpromoted_note,
};
pub use service::{
    DEFAULT_GATED, MetricDecision, ServeDecision, ServePolicy, decide_serve, invalid_reason,
    settings_diff,
};
