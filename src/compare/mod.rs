//! The verdict engine (DESIGN.md §2 and §7): one case's evidence against its baseline, the
//! environment diff shown beside a regression, and which results may fail the gate or become a
//! baseline, change points and trends over a case's nightly history. Pure: no files, clock,
//! environment or processes; everything arrives as arguments (seeds included).
//!
//! The statistical rule is explained in README "How the gate decides" and in [`decide`]'s documentation; its
//! power is measured by `examples/power_eval.rs` through this very code.

pub mod budget;
mod changepoint;
mod decide;
mod env;
mod gate;
pub mod history;
mod trend;

pub use changepoint::{
    ChangePoint, ChangePointError, Detector, Magnitude, Significance, change_points,
};
pub use decide::{Decision, Estimator, Evidence, Policy, decide, error_decision, missing_decision};
pub use env::{EnvChange, env_diff, with_env_causes};
pub use gate::{acceptable, gate_failed, missing_keys, promotable, run_promotes, should_confirm};
pub use trend::{Trend, trend};
