//! The built-in harness workloads: `utilgate harness cpu-decode` and `utilgate harness
//! reference` are harness processes that speak protocol v1 like a user's benchmark, started by
//! `run` as children. Declarations only.

pub mod cpu_decode;
pub mod protocol_env;
pub mod reference;
