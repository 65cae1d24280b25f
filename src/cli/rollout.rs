//! `begin-rollout`: a person begins a new rollout of a group with a canary
//! (`FLEETLOCK_CANARY`), so that its next node to take a slot is a canary,
//! whatever the server would tell from the time the group was quiet.

use std::io::Write;

use clap::Args;

use crate::config::Config;
use crate::domain::canary::CanaryRule;
use crate::domain::input::GroupName;
use crate::domain::store::{Beginning, LockStore};
use crate::domain::time::{Timestamp, format_duration};

use super::Failure;
use super::context::{
    Act, Known, command_aws, deployed_config, dynamo_store, group_named, written_now,
};
use crate::domain::store::Decisions;

/// Begin a new rollout of a group with a canary: its next node to take a
/// slot is a canary, once every node out is back and the bake is over
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct BeginRollout {
    /// The group
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// Check the group and its canary against this deployed function's
    /// configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

impl BeginRollout {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let group = group_named(&self.group)?;
        let table = crate::config::command_table(crate::config::process_env, "begin-rollout")?;
        let aws = command_aws().await?;
        let store = dynamo_store(&aws, table);
        let deployed = deployed_config(&aws, self.function).await?;
        let group = Known::new(&store, store.table(), deployed.as_ref())
            .meant(std::slice::from_ref(&group), Act::BeginRollout)
            .await?
            .remove(0);
        let canary = canary_of(&group, deployed.as_ref())?;
        let now = written_now(&store).await?;
        begin_rollout(&store, &group, canary, now, out).await
    }
}

/// The group's canary, where the deployed configuration was read: a group
/// without one is refused (nothing would come of a rollout begun there).
fn canary_of(group: &GroupName, deployed: Option<&Config>) -> Result<Option<CanaryRule>, Failure> {
    let Some(config) = deployed else {
        return Ok(None);
    };
    match config.groups.rules_for(group) {
        Ok(rules) if rules.canary.is_some() => Ok(rules.canary),
        _ => Err(Failure::Refused(format!(
            "group '{group}' has no canary in the deployed configuration (FLEETLOCK_CANARY); \
             nothing changed: a rollout begins only where a canary is set"
        ))),
    }
}

/// `begin-rollout`: the group's rollout begins again at `now`; says what
/// the next grant will be.
pub(crate) async fn begin_rollout<S: LockStore>(
    store: &S,
    group: &GroupName,
    canary: Option<CanaryRule>,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.begin_rollout(group, now).await?;
    let bake = canary.map_or_else(
        || "the bake".to_owned(),
        |canary| format!("the {} bake", format_duration(canary.bake)),
    );
    match decided.outcome {
        Beginning::Begun => {
            let out_now = decided.group.holders.len();
            let waits = if out_now > 0 {
                format!(
                    "; it waits until the {out_now} node{} out now {} back",
                    if out_now == 1 { "" } else { "s" },
                    if out_now == 1 { "is" } else { "are" }
                )
            } else {
                String::new()
            };
            // Without the configuration, the canary is not known to exist:
            // a group without one grants as it did, and the begin is inert.
            let (whether, unchecked) = if canary.is_none() {
                (
                    "where it has a canary, ",
                    " (the configuration was not read, so whether the group has a canary was \
                     not checked: where FLEETLOCK_CANARY sets none, nothing changes for its \
                     nodes; pass --function NAME to check)",
                )
            } else {
                ("", "")
            };
            say!(
                out,
                "began a new rollout of '{group}': {whether}its next node to take a slot is a \
                 canary, once every node out is back and {bake} is over{waits}{unchecked}"
            );
        }
        Beginning::AlreadyBegun => say!(
            out,
            "a rollout of '{group}' began at this time or later already; nothing changed"
        ),
        Beginning::NotStored => say!(
            out,
            "no node has taken a slot of '{group}' yet; nothing changed: its first grant \
             begins a rollout with a canary anyway"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{group, node, printed};
    use crate::domain::lock::canary::parse_canary;
    use crate::domain::lock::{Acquire, GroupRules, Refusal};
    use crate::store::memory::MemoryStore;
    use std::time::Duration;

    #[tokio::test]
    async fn a_begun_rollout_makes_the_next_grant_a_canary_after_the_nodes_out() {
        let store = MemoryStore::default();
        let workers = group("workers");
        let canary = parse_canary("30m").unwrap();
        let rules = GroupRules {
            slots: 3,
            canary: Some(canary),
            ..GroupRules::default()
        };
        let t = |m: u64| Timestamp(1_764_480_000_000 + m * 60_000);
        let mut said = Vec::new();
        begin_rollout(&store, &workers, Some(canary), t(0), &mut said)
            .await
            .unwrap();
        assert!(printed(said).contains("no node has taken a slot of 'workers' yet"));
        // A rollout in its rest: two nodes out, a third would go.
        for (n, at) in [("c", 0), ("a", 40), ("b", 41)] {
            if n == "a" {
                store
                    .release(&workers, &node("c"), false, t(10))
                    .await
                    .unwrap();
            }
            let taken = store
                .acquire(&workers, &node(n), rules, t(at))
                .await
                .unwrap();
            assert_eq!(taken.outcome, Acquire::Granted, "{n}");
        }
        let mut said = Vec::new();
        begin_rollout(&store, &workers, Some(canary), t(42), &mut said)
            .await
            .unwrap();
        let said = printed(said);
        assert!(
            said.contains(
                "began a new rollout of 'workers': its next node to take a slot is a canary, \
                 once every node out is back and the 30m bake is over; it waits until the 2 \
                 nodes out now are back"
            ),
            "{said}"
        );
        let next = store
            .acquire(&workers, &node("d"), rules, t(43))
            .await
            .unwrap();
        assert!(
            matches!(next.outcome, Acquire::Refused(Refusal::WaveOut { .. })),
            "{next:?}"
        );
        for n in ["a", "b"] {
            store
                .release(&workers, &node(n), false, t(50))
                .await
                .unwrap();
        }
        let baked = t(50).plus(Duration::from_secs(1800));
        let canary_grant = store
            .acquire(&workers, &node("d"), rules, baked)
            .await
            .unwrap();
        assert_eq!(canary_grant.outcome, Acquire::Granted);
        let after = store
            .acquire(&workers, &node("e"), rules, baked)
            .await
            .unwrap();
        assert!(
            matches!(after.outcome, Acquire::Refused(Refusal::WaveOut { .. })),
            "the canary goes alone"
        );
        // A retry of the begin that lands late changes nothing.
        let mut said = Vec::new();
        begin_rollout(&store, &workers, Some(canary), t(42), &mut said)
            .await
            .unwrap();
        assert!(printed(said).contains("began at this time or later already"));
    }

    #[test]
    fn a_group_without_a_canary_is_refused_where_the_configuration_was_read() {
        let config = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3,db=1".into()),
            "FLEETLOCK_CANARY" => Some("workers=30m".into()),
            _ => None,
        })
        .unwrap();
        assert!(
            canary_of(&group("workers"), Some(&config))
                .unwrap()
                .is_some()
        );
        let err = canary_of(&group("db"), Some(&config)).unwrap_err();
        assert!(err.to_string().contains("has no canary"), "{err}");
        assert_eq!(canary_of(&group("db"), None).unwrap(), None);
    }
}
