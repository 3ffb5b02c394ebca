//! The pipeline every verb that runs, stores or reports cases is built from, one stage a module:
//! plan -> measure -> judge -> store -> report -> publish (docs/architecture.md). Verbs in
//! `commands/` only sequence these stages; no stage imports a verb.

pub(crate) mod base_gate;
pub(crate) mod baselines;
pub(crate) mod budget;
pub(crate) mod context;
pub(crate) mod credentials;
pub(crate) mod device;
pub(crate) mod evidence;
pub(crate) mod fleet;
pub(crate) mod gpu;
pub(crate) mod history;
pub(crate) mod journal;
pub(crate) mod judge;
pub(crate) mod measure;
pub(crate) mod nsight;
pub(crate) mod plan;
pub(crate) mod publish;
pub(crate) mod record;
pub(crate) mod report;
pub(crate) mod serve;
pub(crate) mod serve_stored;
pub(crate) mod serve_suite;
pub(crate) mod site;
pub(crate) mod store;
pub(crate) mod verdicts;
