//! utilgate: a performance-regression gate for LLM inference.
//!
//! The library holds everything; `main.rs` only parses arguments and maps the outcome to an exit
//! code. Pure modules (`floor`, `stats`, `compare`, `case`, `catalog`, `measure::protocol`,
//! `report`) never touch files, the environment, processes or the clock; `commands` sequences I/O.

pub mod case;
pub(crate) mod catalog;
pub mod cli;
pub(crate) mod commands;
pub mod compare;
pub mod config;
pub(crate) mod error;
pub mod evidence;
pub(crate) mod floor;
pub(crate) mod github;
pub mod gpu;
pub mod measure;
pub(crate) mod outcome;
pub mod output;
pub(crate) mod pipeline;
pub(crate) mod redact;
pub(crate) mod report;
pub mod serve;
pub(crate) mod shard;
pub(crate) mod stats;
pub mod store;
pub(crate) mod suggest;
pub(crate) mod trust;

pub use commands::run;
pub use error::Error;
pub use outcome::Outcome;
