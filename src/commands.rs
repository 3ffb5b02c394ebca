//! Commands: the only place that sequences I/O. Each returns an `Outcome` (a failed gate is an
//! outcome, not an error) or an `Error` (exit 2).

pub mod ab;
pub mod baseline;
pub mod bisect;
pub mod changes;
pub mod compare;
pub mod completions;
pub mod config;
pub mod floor;
pub mod gpus;
pub mod history;
pub mod import;
pub mod import_history;
pub mod man;
pub mod probe;
pub mod publish;
pub mod report;
pub mod run;
pub mod runs;
pub mod site;
pub mod store_copy;
pub mod trace;

use crate::Error;
use crate::cli::{
    Cli, Command, ConfigCommand, HarnessCommand, ImportCommand, RunsCommand, TraceCommand,
};
use crate::outcome::Outcome;
use crate::pipeline::context::env_lookup;

#[expect(
    clippy::needless_pass_by_value,
    reason = "the parsed command line is handed over whole"
)]
pub fn run(cli: Cli) -> Result<Outcome, Error> {
    crate::output::set_color(cli.global.color);
    // Whatever is printed or stored from here on masks the credentials this process holds.
    let env = env_lookup();
    crate::redact::register_secrets(
        crate::redact::CREDENTIAL_VARS
            .iter()
            .filter_map(|name| env(name)),
    );
    // And the password of a store URL given in the environment (`UTILGATE_DB`).
    crate::redact::register_secrets(
        env("UTILGATE_DB")
            .as_deref()
            .and_then(crate::trust::url_password)
            .map(str::to_owned),
    );
    let outcome = dispatch(&cli);
    // The run's harness guard, if one was started, exits now and is reaped: nothing of the run
    // outlives it, and the guard's CPU time (and its shells') is this process's children's.
    crate::measure::harness::close_guard();
    outcome
}

fn dispatch(cli: &Cli) -> Result<Outcome, Error> {
    match &cli.command {
        Command::Run(args) => run::run(args),
        Command::Floor(args) => floor::floor(args),
        Command::Compare(args) => compare::compare(args),
        Command::Baseline(cmd) => baseline::baseline(cmd),
        Command::Runs(RunsCommand::List(args)) => runs::list(args),
        Command::Runs(RunsCommand::Show(args)) => runs::show(args),
        Command::Store(crate::cli::StoreCommand::Copy(args)) => store_copy::copy(args),
        Command::Config(ConfigCommand::Check(args)) => config::check(args),
        Command::Config(ConfigCommand::Default) => config::print_default(),
        Command::Report(args) => report::report(args),
        Command::Publish(args) => match &args.group {
            Some(group) => publish::publish_group(args, group),
            None => publish::publish(args),
        },
        Command::Harness(HarnessCommand::CpuDecode(args)) => {
            crate::measure::builtin::cpu_decode::cpu_decode(args).map(|()| Outcome::Passed)
        }
        Command::Harness(HarnessCommand::Reference(args)) => {
            crate::measure::builtin::reference::reference_harness(args).map(|()| Outcome::Passed)
        }
        Command::Harness(HarnessCommand::Guard(args)) => {
            let status = match &args.command {
                Some(command) if !args.serve => {
                    crate::measure::guard::run(args.parent, args.scope.as_deref(), command)
                }
                _ => crate::measure::guard::server::serve(args.parent),
            };
            std::process::exit(status)
        }
        Command::Import(ImportCommand::Run(args)) => import::import_run(args),
        Command::Ab(args) => ab::ab(args),
        Command::Probe(args) => probe::probe(args),
        Command::Gpus(args) => gpus::gpus(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => man::man(args),
        Command::Import(ImportCommand::Serve(args)) => import::import_serve(args),
        Command::Import(ImportCommand::History(args)) => import_history::import_history(args),
        Command::History(args) => history::history(args),
        Command::Changes(args) => changes::changes(args),
        Command::Site(args) => site::site(args),
        Command::Bisect(args) => bisect::bisect(args),
        Command::Trace(TraceCommand::Show(args)) => trace::show(args),
        Command::Trace(TraceCommand::Diff(args)) => trace::diff_cmd(args),
    }
}
