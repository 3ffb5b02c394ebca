//! The verdict policy a case is judged under: the gate's settings with its suite's and its
//! own overrides (`[gate]`, `[[suite]] max_drop_pct`, `gate_on`, `[[suite.case]]`). Pure.

use crate::case::CaseKey;
use crate::compare::Policy;

use super::{Config, GateConfig};

/// The gate policy for one case: thresholds resolved case, then suite, then gate; the gate's
/// defaults without a config.
#[must_use]
pub(crate) fn policy_for(config: Option<&Config>, key: &CaseKey) -> Policy {
    let default_gate = GateConfig::default();
    let gate = config.map_or(&default_gate, |c| &c.gate);
    let threshold = config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .map_or(gate.max_drop_pct, |s| s.max_drop_pct_for(key, gate));
    let gate_on = config
        .and_then(|c| c.suites.iter().find(|s| s.name == key.suite))
        .and_then(|s| s.gate_on.clone())
        .unwrap_or_else(|| gate.gate_on.clone());
    Policy {
        max_drop_pct: threshold,
        family_alpha: gate.family_alpha,
        confirm_repeats: gate.confirm_repeats as usize,
        gate_on,
        stat_max_drop_pct: gate.stat_max_drop_pct.clone(),
        ..Policy::default()
    }
}
