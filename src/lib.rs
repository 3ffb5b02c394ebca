//! utilgate: a performance-regression gate for LLM inference.
//!
//! The library holds everything; `main.rs` only parses arguments and maps the outcome to an exit
//! code. Pure modules (`floor`, `stats`, `compare`, `case`, `catalog`, `measure::protocol`,
//! `report`) never touch files, the environment, processes or the clock; `commands` sequences I/O.

pub mod case;
pub mod catalog;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod config;
pub mod error;
pub mod evidence;
pub mod floor;
pub mod github;
pub mod gpu;
pub mod measure;
pub mod outcome;
pub mod output;
pub mod pipeline;
pub mod redact;
pub mod report;
pub mod serve;
pub mod shard;
pub mod stats;
pub mod store;
pub mod suggest;
pub mod trust;

pub use commands::run;
pub use error::Error;
pub use outcome::Outcome;
