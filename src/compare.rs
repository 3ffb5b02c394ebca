//! The verdict engine (DESIGN.md §2 and §7): one case's evidence against its reference, the
//! environment diff shown beside a regression, and which results may fail the gate or become a
//! baseline, change points and trends over a case's nightly history. Pure: no files, clock,
//! environment or processes; everything arrives as arguments (seeds included).
//!
//! The statistical rule is explained in docs/verdict.md and in [`decide`]'s documentation; its
//! power is measured by `examples/power_eval` through this very code.

mod ab;
mod against;
pub mod bisect;
pub mod budget;
mod canary;
mod changepoint;
mod common;
mod decide;
pub mod energy;
mod energy_record;
mod env;
mod frontier;
mod gate;
mod gate_stat;
pub mod history;
pub(crate) mod night;
pub mod quality;
mod reference;
mod service;
pub mod speculation;
mod stat;
mod trend;

pub use ab::{AbPlan, decide_ab};
pub use against::decide_against;
pub use canary::{CanaryShift, canary_shift};
pub use changepoint::{
    ChangePoint, ChangePointError, Detector, Magnitude, Significance, change_points,
};
pub use common::{CommonMode, SharedCause, common_mode};
pub use decide::{
    Decision, Estimator, Evidence, LineageStart, Policy, Reach, decide, error_decision,
    missing_decision,
};
pub use env::{EnvChange, env_diff, with_env_causes};
pub use frontier::{SweepFile, decide_sweep, level_metric};
pub use gate::{
    acceptable, gate_failed, missing_keys, promotable, run_promotes, should_confirm,
    unpromoted_note,
};
pub use gate_stat::{GateStat, TailDecision};
pub use reference::{Canary, Night, Pooled, Reference, confirm_evidence, eligible, reference};
pub use service::{
    DEFAULT_GATED, FrontierFigures, MetricDecision, ServeDecision, ServePolicy, decide_serve,
    invalid_reason, settings_diff,
};
pub use trend::{Trend, trend};
