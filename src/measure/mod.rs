//! Measuring step times: the harness protocol parser (pure) and the harness runner (I/O: child
//! processes). Declarations and re-exports only.

pub mod builtin;
pub mod cuda;
pub mod harness;
pub mod host;
pub mod protocol;
pub mod reference;

pub use harness::{HarnessError, RepeatOutput, RepeatSpec, run_repeat};
pub use protocol::{HarnessReport, ProtocolError, ProtocolErrorKind, parse, sanitize};
