//! `create-table`: the table the lock lives in, made and waited for, or
//! only its definition printed.

use std::io::Write;

use clap::Args;

use crate::config::{self, process_env};
use crate::store::dynamodb::DynamoStore;

use super::Failure;
use super::context::{command_aws, dynamo_store};

/// Create FLEETLOCK_TABLE and wait until it is active (--dry-run: print the
/// table definition only)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct CreateTable {
    /// Print the table definition only
    #[arg(long)]
    pub(crate) dry_run: bool,
}

impl CreateTable {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        if self.dry_run {
            table_definition(out);
            return Ok(());
        }
        let table = config::command_table(process_env, "create-table")?;
        let store = dynamo_store(&command_aws().await?, table);
        create_table(&store, out).await
    }
}

/// `create-table`, and with `--dry-run` only the definition.
pub(crate) async fn create_table(store: &DynamoStore, out: &mut impl Write) -> Result<(), Failure> {
    let created = store.create_table().await?;
    let verb = if created {
        "created"
    } else {
        "already exists:"
    };
    say!(out, "table {verb} {} (active)", store.table());
    Ok(())
}

/// `create-table --dry-run`.
pub(crate) fn table_definition(out: &mut impl Write) {
    say!(out, "{:#}", crate::store::dynamodb::table_definition());
}
