//! `fleetlock unlock`: gives the job's slot back, as Zincati's steady-state
//! does, with the settings, retries and exit codes of `lock`
//! ([`crate::cli::lock`]).

use std::process::ExitCode;

use clap::Args;

use crate::cli::lock::LockArgs;
use crate::client::Call;

// The arguments of `unlock`: those of `lock`, without a command.
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct UnlockCommand {
    #[command(flatten)]
    pub(crate) args: LockArgs,
}

impl UnlockCommand {
    pub(crate) async fn run(self) -> ExitCode {
        self.args.run(Call::SteadyState).await
    }
}
