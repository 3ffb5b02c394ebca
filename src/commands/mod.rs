//! Commands: the only place that sequences I/O. Each returns an `Outcome` (a failed gate is an
//! outcome, not an error) or an `Error` (exit 2).

pub mod ab;
pub mod baseline;
pub mod baseline_diff;
pub mod baseline_files;
pub mod bisect;
pub mod budget;
pub mod compare;
pub mod config;
pub mod credentials;
pub mod device;
pub mod evidence;
pub mod fleet;
pub mod floor;
pub mod gpu_run;
pub mod gpus;
pub mod history;
pub mod import;
pub mod judge;
pub mod nsight;
pub mod probe;
pub mod publish;
pub mod publish_check;
pub mod publish_issue;
pub mod report;
pub mod resume;
pub mod run;
pub mod runs;
pub mod serve;
pub mod serve_stored;
pub mod serve_suite;
pub mod store_copy;
pub mod trace;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use crate::Error;
use crate::cli::{
    Cli, Command, ConfigCommand, HarnessCommand, ImportCommand, RunsCommand, TraceCommand,
};
use crate::error::Exit;
use crate::store::Store;

/// What a command concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The gate passed, or the command did what it was asked.
    Passed,
    /// A case got a verdict listed in `fail_on`.
    GateFailed,
    /// The gate did not fail, but some case could not be measured (stored as `error`).
    CasesFailed,
    /// `bisect --run`: this commit cannot be tested (git bisect skips it, exit 125).
    BisectSkip,
    /// `bisect --run`: stop the bisection (exit 128).
    BisectAbort,
}

impl Outcome {
    /// The outcome of two runs together: a failed gate over failed cases over a pass.
    #[must_use]
    pub fn worst(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::GateFailed, _) | (_, Outcome::GateFailed) => Outcome::GateFailed,
            (Outcome::CasesFailed, _) | (_, Outcome::CasesFailed) => Outcome::CasesFailed,
            _ => Outcome::Passed,
        }
    }

    #[must_use]
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Passed => Exit::Success,
            Outcome::GateFailed => Exit::GateFailed,
            Outcome::CasesFailed => Exit::Error,
            Outcome::BisectSkip => Exit::BisectSkip,
            Outcome::BisectAbort => Exit::BisectAbort,
        }
        .into()
    }
}

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
            Some(group) => fleet::publish_group(args, group),
            None => publish::publish(args),
        },
        Command::Harness(HarnessCommand::CpuDecode(args)) => {
            crate::measure::builtin::cpu_decode::cpu_decode(args).map(|()| Outcome::Passed)
        }
        Command::Harness(HarnessCommand::Reference(args)) => {
            crate::measure::builtin::reference::reference_harness(args).map(|()| Outcome::Passed)
        }
        Command::Harness(HarnessCommand::Guard(args)) => {
            let status =
                crate::measure::guard::run(args.parent, args.scope.as_deref(), &args.command);
            std::process::exit(status)
        }
        Command::Import(ImportCommand::Run(args)) => import::import_run(args),
        Command::Ab(args) => ab::ab(args),
        Command::Probe(args) => probe::probe(args),
        Command::Gpus(args) => gpus::gpus(args),
        Command::Completions(args) => gpus::completions(args),
        Command::Man(args) => gpus::man(args),
        Command::Import(ImportCommand::Serve(args)) => serve::import_serve(args),
        Command::History(args) => history::history(args),
        Command::Changes(args) => history::changes(args),
        Command::Bisect(args) => bisect::bisect(args),
        Command::Trace(TraceCommand::Show(args)) => trace::show(args),
        Command::Trace(TraceCommand::Diff(args)) => trace::diff_cmd(args),
    }
}

/// The current time: commands read the clock here and pass it on.
#[must_use]
pub fn now() -> jiff::Timestamp {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the one place commands read the clock"
    )]
    jiff::Timestamp::now()
}

/// The process environment as a lookup function, so pure code can take it as an argument.
pub fn env_lookup() -> impl Fn(&str) -> Option<String> {
    #[expect(
        clippy::disallowed_methods,
        reason = "edge: the one place commands read the environment"
    )]
    |name: &str| std::env::var(name).ok()
}

/// The suites a command runs: all of them, or those `wanted` names (each must exist, with a
/// did-you-mean otherwise); a config without suites is an error naming the file.
pub fn select_suites<'a>(
    loaded: &'a crate::config::LoadedConfig,
    wanted: &[String],
) -> Result<Vec<&'a crate::config::SuiteConfig>, Error> {
    let suites = &loaded.config.suites;
    if suites.is_empty() {
        return Err(Error::NoSuites {
            path: loaded.path.clone(),
        });
    }
    for name in wanted {
        if !suites.iter().any(|s| &s.name == name) {
            let names: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::UnknownSuite {
                name: name.clone(),
                path: loaded.path.clone(),
                known: names.iter().map(|n| (*n).to_owned()).collect(),
                suggestion: crate::suggest::did_you_mean(name, names).map(str::to_owned),
            });
        }
    }
    Ok(suites
        .iter()
        .filter(|s| wanted.is_empty() || wanted.contains(&s.name))
        .collect())
}

pub fn open_store(path: &Path, busy_timeout_s: f64) -> Result<Store, Error> {
    Ok(Store::open(path, Duration::from_secs_f64(busy_timeout_s))?)
}
