//! AIPerf (stub).
use serde_json::{Map, Value};
use crate::serve::error::ServeError;
use crate::serve::model::ServeResult;
pub(super) const CSV_JSON_KEY: &str = "aiperf_profile_export_csv";
pub(super) fn is_csv(_text: &str) -> bool { false }
pub(super) fn is_json(_obj: &Map<String, Value>) -> bool { false }
pub(super) fn parse_csv(_text: &str, origin: &str) -> Result<ServeResult, ServeError> { Err(ServeError::UnknownSchema { origin: origin.to_owned() }) }
pub(super) fn parse_json(_obj: &Map<String, Value>, origin: &str) -> Result<ServeResult, ServeError> { Err(ServeError::UnknownSchema { origin: origin.to_owned() }) }
