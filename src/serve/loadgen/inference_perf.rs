//! inference-perf (stub).
use serde_json::{Map, Value};
use crate::serve::error::ServeError;
use crate::serve::model::ServeResult;
pub(super) fn is_summary(_obj: &Map<String, Value>) -> bool { false }
pub(super) fn parse(_obj: &Map<String, Value>, origin: &str) -> Result<ServeResult, ServeError> { Err(ServeError::UnknownSchema { origin: origin.to_owned() }) }
