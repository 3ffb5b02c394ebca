//! The command-line interface, clap derive only: no logic.

use clap::Parser;

#[derive(Debug, Parser)]
#[command(name = "utilgate", version, about)]
pub struct Cli {}
