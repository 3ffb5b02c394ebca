//! End-to-end tests: the real binary, real child processes speaking the harness protocol, real
//! SQLite files in temporary directories. One test binary with modules, to save link time.

mod env;
mod example;
mod failures;
mod floor;
mod gate;
mod gpu;
mod python;
mod run;
