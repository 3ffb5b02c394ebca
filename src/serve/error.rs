//! Errors of the service-result readers: every variant names the file (and the line of a JSONL
//! file) and the key, with a hint. No I/O.

use std::path::PathBuf;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ServeError {
    #[error("failed to read the load-generator result {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: not a JSON result object: {source}")]
    Json {
        origin: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("{origin}: holds no result (the file is empty)")]
    Empty { origin: String },
    #[error("{origin}: expected a JSON object, found {found}")]
    NotAnObject { origin: String, found: &'static str },
    #[error(
        "{origin}: not a result of a known load generator (no `completed` and `duration` keys)"
    )]
    UnknownSchema { origin: String },
    #[error("{origin}: missing required key `{key}` of the {schema} schema")]
    MissingKey {
        origin: String,
        key: &'static str,
        schema: &'static str,
    },
    #[error("{origin}: key `{key}`: expected {expected}, found {found}")]
    BadValue {
        origin: String,
        key: String,
        expected: &'static str,
        found: String,
    },
    #[error("{origin}: the result names no model (this {schema} output has no `model_id`)")]
    NoModel {
        origin: String,
        schema: &'static str,
    },
    #[error("{origin}: holds {count} results, but one repeat writes exactly one")]
    SeveralResults { origin: String, count: usize },
    #[error("{origin}: a point of a sweep needs `{key}`, which the file does not hold")]
    NotOnFrontier { origin: String, key: &'static str },
    /// A rate sweep (or anything else that needs the offered load) got a file that states no
    /// request rate: `what` names the kind of file, `fix` the file that states it.
    #[error("{origin}: {what} states no request rate, so it has no place in a rate sweep")]
    NoRate {
        origin: String,
        what: &'static str,
        fix: &'static str,
    },
    #[error("the sweep {case} has {points} point(s): a frontier needs at least two")]
    OnePointSweep { case: String, points: usize },
    /// A field of another load generator's report (`AIPerf`, `GuideLLM`, inference-perf, `MLPerf`
    /// `LoadGen`) is missing or not what the supported versions write: `field` is its path in the
    /// file, `fix` the hint.
    #[error("{origin}: {tool} result: `{field}` {problem}")]
    Field {
        origin: String,
        tool: &'static str,
        field: String,
        problem: String,
        fix: String,
    },
}

impl ServeError {
    /// The error for a result of `schema` that states no request rate where one is needed.
    #[must_use]
    pub fn no_rate(origin: String, schema: super::Schema) -> ServeError {
        let (what, fix) = match schema {
            super::Schema::AiperfProfileExport => (
                "this AIPerf CSV export (profile_export_aiperf.csv)",
                "import the profile_export_aiperf.json of the same `aiperf profile` run instead: it states the rate (the CSV states no settings at all)",
            ),
            super::Schema::InferencePerfSummary => (
                "this inference-perf summary over several stages",
                "import the stage_N_lifecycle_metrics.json files instead, one per stage: each states its stage's rate",
            ),
            _ => (
                "this result",
                "import a result file that states its request rate",
            ),
        };
        ServeError::NoRate { origin, what, fix }
    }

    /// A one-line suggestion printed after the error.
    #[must_use]
    pub fn hint(&self) -> Option<String> {
        let hint = match self {
            ServeError::Read { .. } => {
                "check that the load generator wrote the file it was given ($UTILGATE_RESULT_FILE)"
            }
            ServeError::Json { .. } | ServeError::NotAnObject { .. } | ServeError::Empty { .. } => {
                "pass the file written by `vllm bench serve --save-result` or `sglang.bench_serving --output-file`"
            }
            ServeError::UnknownSchema { .. } => {
                "utilgate reads vLLM's `--save-result` files (both schemas), SGLang's bench_serving JSONL, AIPerf's profile export (JSON or CSV), GuideLLM's benchmarks JSON, inference-perf's summary report and MLPerf LoadGen's mlperf_log_summary.txt"
            }
            ServeError::MissingKey { .. } => {
                "the file looks truncated or hand-edited; re-run the load generator with --save-result"
            }
            ServeError::BadValue { .. } => "the value must be what the load generator writes there",
            ServeError::NoModel { .. } => {
                "pass --model NAME to name the model the cases are keyed by"
            }
            ServeError::NotOnFrontier { .. } => {
                "a sweep places each point by its output_throughput and TPOT (median_tpot_ms, mean_tpot_ms or median_itl_ms): keep the load generator's default --percentile-metrics"
            }
            ServeError::OnePointSweep { .. } => {
                "pass the files of every rate (or concurrency) of the sweep together, or leave out --sweep"
            }
            ServeError::SeveralResults { .. } => {
                "SGLang appends to --output-file: give each repeat a fresh file ($UTILGATE_RESULT_FILE is one)"
            }
            ServeError::Field { fix, .. } => return Some(fix.clone()),
            ServeError::NoRate { fix, .. } => fix,
        };
        Some(hint.to_owned())
    }
}
