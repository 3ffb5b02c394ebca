//! Service benchmarks (DESIGN.md §12): readers for load-generator result files (`vllm bench
//! serve`, the older `benchmark_serving.py`, `SGLang`'s `bench_serving`, `AIPerf`, `GuideLLM`,
//! inference-perf, `MLPerf` `LoadGen`), one model of a result
//! with its metrics and their directions, the case key of a service case, and the utilisation
//! estimates a service result implies. Pure but [`read`], which reads a file.

mod command;
mod error;
mod estimate;
mod frontier;
mod key;
mod loadgen;
mod model;
mod parse;
mod plausible;
mod read;

pub use command::{
    SERVE_VARIABLES, ServeCommandVars, check_serve_template, opt_text, render_serve_command,
    serve_template_hint,
};
pub use error::ServeError;
pub use estimate::{ServeEstimate, SplitPoint, estimate, latency_split};
pub use frontier::{
    AreaBetween, Frontier, FrontierPoint, GPU_COUNT_FIELDS, PointError, SweepPoint, TPOT_METRICS,
    area_between, gpus_of_file, place_files, tpot_ms,
};
pub use key::{SWEPT_RATE, ServeKey, SweepAxis, UNSTATED_RATE, format_rate, rate_of};
pub use model::{
    Direction, Samples, Schema, ServeResult, Settings, canonical_metric, direction_of,
};
pub use parse::parse;
pub use plausible::{Implausible, implausible, unchecked_reason};
pub use read::read_file;
