//! Measuring step times: the harness protocol parser (pure) and the harness runner (I/O: child
//! processes). Declarations and re-exports only.

pub mod builtin;
pub mod canary;
pub mod cgroup;
pub mod checks;
pub mod cuda;
pub mod guard;
pub mod harness;
pub mod host;
pub mod profiler;
pub mod protocol;
pub mod reference;
pub mod workdir;

pub use harness::{HarnessError, RepeatOutput, RepeatSpec, run_repeat};
pub use protocol::{HarnessReport, ProtocolError, ProtocolErrorKind, parse, sanitize};
