//! Reads a load-generator result file from disk and parses it. The only I/O of `serve`.

#![expect(
    clippy::disallowed_methods,
    reason = "a load generator's results are a file"
)]

use std::path::Path;

use super::error::ServeError;
use super::model::ServeResult;
use super::parse::parse;

/// Every result in the file at `path` (one for vLLM, one per line for `SGLang`'s JSONL).
pub fn read_file(path: &Path) -> Result<Vec<ServeResult>, ServeError> {
    let text = std::fs::read_to_string(path).map_err(|source| ServeError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, &path.display().to_string())
}
