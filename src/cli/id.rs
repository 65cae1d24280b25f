//! `id`: the id Zincati sends for a machine, as status and the logs show it.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::{LockSettings, process_env};

use super::Failure;

/// The id Zincati sends for a machine (status and the logs show it): systemd's
/// app-specific id of its machine id (with --app, the id of lock --app NAME)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Id {
    /// The machine id (32 hex digits, as in /etc/machine-id)
    #[arg(long, value_name = "HEX", conflicts_with = "machine_id_file")]
    pub(crate) machine_id: Option<String>,
    /// Read the machine id from this file (default: FLEETLOCK_MACHINE_ID_FILE or /etc/machine-id)
    #[arg(long, value_name = "FILE")]
    pub(crate) machine_id_file: Option<PathBuf>,
    /// The id `fleetlock lock --app NAME` takes on that machine instead of Zincati's
    #[arg(long, value_name = "NAME")]
    pub(crate) app: Option<String>,
}

impl Id {
    pub(crate) fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let (text, from) = match (self.machine_id, self.machine_id_file) {
            (Some(hex), _) => (hex, "--machine-id".to_owned()),
            (None, Some(file)) => (read_machine_id(&file)?, file.display().to_string()),
            (None, None) => {
                let file = LockSettings::from_vars(process_env).machine_id_file;
                (read_machine_id(&file)?, file.display().to_string())
            }
        };
        let machine = crate::client::parse_machine_id(&text)
            .map_err(|why| Failure::Input(format!("{from}: {why}")))?;
        let id = match self.app {
            None => crate::client::zincati_id(&machine),
            Some(app) => crate::client::job_id(&machine, &app),
        };
        say!(out, "{id}");
        Ok(())
    }
}

fn read_machine_id(file: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(file).map_err(|e| Failure::Input(format!("{}: {e}", file.display())))
}
