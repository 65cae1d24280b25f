//! `forget`: a group nobody uses any more, or a global table's region
//! taken out of service, removed from the table.

use std::io::Write;

use clap::Args;

use crate::config::{self, Config, process_env};
use crate::domain::input::GroupName;
use crate::domain::lock::pause::paused_because;
use crate::domain::store::{Forgot, LockStore};

use super::Failure;
use super::context::{command_aws, deployed_config, dynamo_store, group_named};

/// Remove a group that holds nothing, is not paused and is not named in the
/// configuration; or, on a global table, a region taken out of service
#[derive(Args, Debug, PartialEq, Eq)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["group", "region"])))]
pub(crate) struct Forget {
    /// The group to remove
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: Option<String>,
    /// The region whose settings record to remove (a region taken out of
    /// service; one still running records again within 30 s)
    #[arg(long, value_name = "REGION")]
    pub(crate) region: Option<String>,
    /// Refuse a group this deployed function's configuration names
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

impl Forget {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        if let Some(region) = self.region {
            if self.function.is_some() {
                return Err(Failure::Input(
                    "--function goes with --group: a region's record names no group".into(),
                ));
            }
            if !config::is_region_name(&region) {
                return Err(Failure::Input(format!(
                    "--region: '{region}' is not a region name like eu-west-1"
                )));
            }
            let table = config::command_table(process_env, "forget")?;
            let store = dynamo_store(&command_aws().await?, table);
            return forget_region(&store, store.table(), &region, out).await;
        }
        let group = group_named(self.group.as_deref().unwrap_or_default())?;
        let table = config::command_table(process_env, "forget")?;
        let aws = command_aws().await?;
        let deployed = deployed_config(&aws, self.function).await?;
        let store = dynamo_store(&aws, table);
        forget(&store, store.table(), &group, deployed.as_ref(), out).await
    }
}

/// `forget --region`: removes a region's settings record, when it has one;
/// names a recorded region one typo away from the one asked.
pub(crate) async fn forget_region<S: LockStore>(
    store: &S,
    table: &str,
    region: &str,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let recorded = store.recorded_settings().await?;
    if !recorded.contains_key(region) {
        let meant = recorded
            .keys()
            .find(|other| crate::domain::names::one_typo_apart(other, region));
        let listed: Vec<&str> = recorded.keys().map(String::as_str).collect();
        return Err(Failure::Refused(match meant {
            Some(meant) => format!(
                "region '{region}' has no settings record in table '{table}': did you mean \
                 '{meant}'? (recorded: {})",
                listed.join(", ")
            ),
            None if listed.is_empty() => {
                format!("no region has a settings record in table '{table}': nothing to forget")
            }
            None => format!(
                "region '{region}' has no settings record in table '{table}' (recorded: {})",
                listed.join(", ")
            ),
        }));
    }
    if store.forget_region(region).await? {
        say!(
            out,
            "forgot region {region}'s settings record: groups it served differently are \
             served again; if {region} still runs, it records its settings again within 30 s"
        );
    } else {
        say!(out, "region {region}'s settings record was already gone");
    }
    Ok(())
}

/// `forget`: removes a group nobody uses; never one the configuration names.
pub(crate) async fn forget<S: LockStore>(
    store: &S,
    table: &str,
    group: &GroupName,
    deployed: Option<&Config>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    match deployed {
        Some(config) if config.groups.listed().any(|(name, _)| name == group) => {
            return Err(Failure::Refused(format!(
                "group '{group}' is named in the function's FLEETLOCK_GROUPS: its next \
                 request would bring it back, without its last release; take it out \
                 of the configuration first"
            )));
        }
        Some(_) => {}
        None => say!(
            out,
            "(the configuration was not read: pass --function NAME to refuse a group \
             it names)"
        ),
    }
    match store.forget(group).await? {
        Forgot::Removed { counted } => say!(
            out,
            "forgot group '{group}': its item is removed{}",
            if counted {
                ", and it no longer counts toward FLEETLOCK_MAX_WILDCARD_GROUPS"
            } else {
                ""
            }
        ),
        Forgot::Uncounted => say!(
            out,
            "group '{group}' had no item; it no longer counts toward \
             FLEETLOCK_MAX_WILDCARD_GROUPS"
        ),
        Forgot::NothingStored => {
            // A zone's name: its nodes' slots are in its split group's item.
            let zone_of = deployed
                .and_then(|config| config.groups.zone_parent(group))
                .map_or(String::new(), |parent| {
                    format!(
                        "; it is {}, and its nodes' slots are kept in '{parent}''s item",
                        crate::domain::zones::zone_of(group, &parent)
                    )
                });
            return Err(Failure::Refused(format!(
                "group '{group}' is not stored in table '{table}': nothing to forget{zone_of} \
                 ('fleetlock status' lists the groups)"
            )));
        }
        Forgot::Kept(record) => {
            let mut why = Vec::new();
            if !record.holders.is_empty() {
                let ids: Vec<String> = record.holders.holders().map(|(id, _)| id.shown()).collect();
                let slots = if ids.len() == 1 { "slot" } else { "slots" };
                why.push(format!(
                    "it holds {} {slots} ({}): release {}",
                    ids.len(),
                    ids.join(", "),
                    if ids.len() == 1 {
                        "it first"
                    } else {
                        "them first"
                    }
                ));
            }
            if record.pause.is_paused() {
                why.push(format!(
                    "it is paused {}: resume it first (an alarm's pause clears when \
                     the alarm does)",
                    paused_because(&record.pause)
                ));
            }
            return Err(Failure::Refused(format!(
                "group '{group}' was kept: {}; nothing changed",
                why.join("; and ")
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{config, group, node, printed, rules};
    use crate::domain::store::Decisions;
    use crate::domain::time::Timestamp;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn forget_refuses_a_configured_or_busy_group_and_removes_an_idle_one() {
        let store = MemoryStore::default();
        store
            .acquire(&group("old"), &node("n1"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let configured = forget(
            &store,
            "t",
            &group("old"),
            Some(&config("old=1")),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        assert!(
            configured
                .to_string()
                .contains("named in the function's FLEETLOCK_GROUPS")
        );
        let busy = forget(&store, "t", &group("old"), None, &mut Vec::new())
            .await
            .unwrap_err();
        assert!(
            busy.to_string()
                .contains("it holds 1 slot (n1): release it first"),
            "{busy}"
        );
        store
            .release(&group("old"), &node("n1"), false, Timestamp(2))
            .await
            .unwrap();
        let mut out = Vec::new();
        forget(
            &store,
            "t",
            &group("old"),
            Some(&config("default=1")),
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(printed(out), "forgot group 'old': its item is removed\n");
        assert!(store.groups(None).await.unwrap().is_empty());
        let gone = forget(&store, "t", &group("old"), None, &mut Vec::new())
            .await
            .unwrap_err();
        assert!(
            gone.to_string().contains("is not stored in table 't'"),
            "{gone}"
        );
    }

    #[tokio::test]
    async fn forget_of_a_zones_name_says_where_its_slots_are() {
        let store = MemoryStore::default();
        let zoned = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=2".into()),
            "FLEETLOCK_ZONES" => Some("workers".into()),
            _ => None,
        })
        .unwrap();
        let refused = forget(
            &store,
            "t",
            &group("workers.us-east-1a"),
            Some(&zoned),
            &mut Vec::new(),
        )
        .await
        .unwrap_err()
        .to_string();
        assert!(
            refused.contains("zone 'us-east-1a' of group 'workers', which is split by zone"),
            "{refused}"
        );
    }
}
