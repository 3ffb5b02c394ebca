//! The measure stage: one case's repeats in fresh processes ([`runner`]) and a whole grid of them
//! between the canary's readings ([`grid`]).

pub(crate) mod grid;
pub(crate) mod runner;
