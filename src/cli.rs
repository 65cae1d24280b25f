//! The command line, for use outside Lambda. Each command family is one
//! module holding its clap arguments and its `run`, which checks what it was
//! given before it touches AWS; [`Sub`] lists them, and the help, the usage
//! lines, the completions and the docs' command table are all generated from
//! that one definition ([`usage`]). [`context`] reads the settings and builds
//! the clients several commands share.

/// A line of a command's report. A closed pipe (`| head`) ends nothing: the
/// command has done its work by the time it reports.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

pub(crate) mod check;
pub(crate) mod config_check;
pub(crate) mod context;
pub(crate) mod create_table;
pub(crate) mod credential;
#[cfg(test)]
mod doc_commands;
pub(crate) mod exclude;
pub(crate) mod failure;
pub(crate) mod forget;
pub(crate) mod hosts;
pub(crate) mod iam_policy;
pub(crate) mod id;
pub mod lock;
pub(crate) mod pause;
pub(crate) mod rollout;
pub(crate) mod serve;
pub(crate) mod slot;
pub(crate) mod status;
#[cfg(test)]
mod testing;
pub(crate) mod unlock;
pub(crate) mod usage;
pub(crate) mod windows;

use std::io::Write as _;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub(crate) use failure::Failure;
pub(crate) use usage::{USAGE_EXIT, command_help, definition, help_text, parse};

use crate::logging;

/// The arguments as clap reads them: the one definition of every command.
#[derive(Parser, Debug)]
#[command(
    name = "fleetlock",
    version,
    about = "fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS",
    long_about = "fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS.\n\n\
                  Under the AWS Lambda runtime it serves API Gateway and Function URL events; \
                  elsewhere it runs these commands (fleetlock help COMMAND, or COMMAND --help, \
                  for one command's options).",
    disable_help_subcommand = false
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Sub>,
}

/// Every command, in the order the help lists them.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub(crate) enum Sub {
    Serve(serve::Serve),
    CreateTable(create_table::CreateTable),
    Status(status::Status),
    Hosts(hosts::Hosts),
    Release(slot::ReleaseCommand),
    Drained(slot::DrainedCommand),
    Returned(slot::ReturnedCommand),
    Forget(forget::Forget),
    Pause(pause::PauseCommand),
    Resume(pause::ResumeCommand),
    Exclude(exclude::ExcludeCommand),
    Include(exclude::IncludeCommand),
    BeginRollout(rollout::BeginRollout),
    Credential(credential::Credential),
    IamPolicy(iam_policy::IamPolicy),
    /// Take a slot of the group for a job, as Zincati takes one (the URL from
    /// FLEETLOCK_URL or --url-file; --url also works but shows the secret in
    /// ps and shell history); with -- COMMAND, hold it while COMMAND runs
    ///
    /// Exit codes of lock and unlock: 0 done, 1 refused (or --wait timed out,
    /// or stopped), 2 bad input or a 4xx asking again cannot mend, 3
    /// unreachable or 5xx. With -- COMMAND: the command's own code once it
    /// ran, 4 if the slot was lost and the command stopped, 127 if it could
    /// not be started.
    Lock(lock::LockCommand),
    /// Give the job's slot back
    ///
    /// Exit codes of lock and unlock: 0 done, 1 refused (or --wait timed out,
    /// or stopped), 2 bad input or a 4xx asking again cannot mend, 3
    /// unreachable or 5xx.
    Unlock(unlock::UnlockCommand),
    Check(check::CheckArgs),
    Id(id::Id),
    Windows(windows::Windows),
    /// The settings
    Config {
        #[command(subcommand)]
        command: config_check::ConfigSub,
    },
    Completions(Completions),
    #[command(hide = true)]
    Version,
}

/// Print completions for bash, zsh, fish, elvish or powershell (e.g.
/// fleetlock completions bash > /etc/bash_completion.d/fleetlock)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Completions {
    /// The shell
    #[arg(value_name = "SHELL")]
    pub(crate) shell: clap_complete::Shell,
}

/// Runs the command the arguments name; the exit code says how it ended.
pub async fn run(args: Vec<String>) -> ExitCode {
    if let Some(help) = command_help(&args) {
        print!("{help}");
        return ExitCode::SUCCESS;
    }
    let command = match parse(&args) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("fleetlock: {why}\n{}", usage::where_to_read(&args));
            return ExitCode::from(USAGE_EXIT);
        }
    };
    let Some(command) = command else {
        print!("{}", help_text());
        return ExitCode::SUCCESS;
    };
    logging::init(false);
    command.run().await
}

impl Sub {
    /// Carries the command out; lock, unlock and check have exit codes of
    /// their own, every other command 0 or 1.
    pub(crate) async fn run(self) -> ExitCode {
        let out = &mut std::io::stdout();
        let done = match self {
            Sub::Lock(args) => return args.run().await,
            Sub::Unlock(args) => return args.run().await,
            Sub::Check(args) => return args.run().await,
            Sub::Version => {
                println!("fleetlock {}", env!("CARGO_PKG_VERSION"));
                Ok(())
            }
            Sub::Completions(Completions { shell }) => {
                // Written whole, not through clap_complete's own writes,
                // which panic on a closed pipe (`| head`).
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut definition(), "fleetlock", &mut script);
                let _ = out.write_all(&script);
                Ok(())
            }
            Sub::Serve(args) => args.run().await,
            Sub::CreateTable(args) => args.run(out).await,
            Sub::Status(args) => args.run(out).await,
            Sub::Hosts(args) => args.run(out).await,
            Sub::Release(args) => args.run(out).await,
            Sub::Drained(args) => args.run(out).await,
            Sub::Returned(args) => args.run(out).await,
            Sub::Forget(args) => args.run(out).await,
            Sub::Pause(args) => args.run(out).await,
            Sub::Resume(args) => args.run(out).await,
            Sub::BeginRollout(args) => args.run(out).await,
            Sub::Exclude(args) => args.run(out).await,
            Sub::Include(args) => args.run(out).await,
            Sub::Credential(args) => args.run(out),
            Sub::IamPolicy(args) => {
                args.run(out);
                Ok(())
            }
            Sub::Id(args) => args.run(out),
            Sub::Windows(args) => args.run(out).await,
            Sub::Config { command } => command.run(out).await,
        };
        match done {
            Ok(()) => ExitCode::SUCCESS,
            Err(why) => {
                eprintln!("fleetlock: {why}");
                ExitCode::FAILURE
            }
        }
    }
}
