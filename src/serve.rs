//! Service benchmarks (DESIGN.md §12): readers for load-generator result files (`vllm bench
//! serve`, the older `benchmark_serving.py`, `SGLang`'s `bench_serving`, `AIPerf`, `GuideLLM`,
//! inference-perf, `MLPerf` `LoadGen`), one model of a result
//! with its metrics and their directions, the case key of a service case, and the utilisation
//! estimates a service result implies. Pure but [`read`], which reads a file.

mod command;
mod error;
mod estimate;
mod key;
mod loadgen;
mod model;
mod parse;
mod read;

pub use command::{
    SERVE_VARIABLES, ServeCommandVars, check_serve_template, opt_text, render_serve_command,
    serve_template_hint,
};
pub use error::ServeError;
pub use estimate::{ServeEstimate, SplitPoint, estimate, latency_split};
pub use key::{ServeKey, format_rate};
pub use model::{
    Direction, Samples, Schema, ServeResult, Settings, canonical_metric, direction_of,
};
pub use parse::parse;
pub use read::read_file;
