//! What several commands share: the AWS configuration and the table, built
//! only once a command's own settings are checked; the deployed function's
//! configuration; and the refusal of a group name that looks like a typo.

use aws_config::SdkConfig;

use crate::aws::server_clock::ServerClock;
use crate::aws::{self, function_config};
use crate::config::{self, Config, ConfigError, process_env};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;
use crate::store::dynamodb::DynamoStore;

use super::Failure;
use crate::domain::names::did_you_mean;
use crate::domain::zones::zone_of;

/// A group named on the command line; a bad name is the command's input
/// error, in the sentence the name's own check gives.
pub(crate) fn group_named(name: &str) -> Result<GroupName, Failure> {
    GroupName::parse(name).map_err(|e| Failure::Input(e.value()))
}

/// What a person does to a named group, for the sentence that refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Pause,
    Resume,
    /// Only a stored group can hold a slot: the configuration is not read.
    Release,
    Exclude,
    Include,
    BeginRollout,
}

impl Act {
    /// Whether the command acts on one node: a zone's group
    /// (`workers.us-east-1a`) reaches that node in its split group's item,
    /// where its slot is.
    fn on_a_node(self) -> bool {
        matches!(self, Act::Release | Act::Exclude | Act::Include)
    }

    /// Whether the command clears what is stored under a name as it is:
    /// an item `*` made before the name's group was split by zone is
    /// released, resumed or included there, as `status` shows it.
    fn clears_stored(self) -> bool {
        matches!(self, Act::Release | Act::Resume | Act::Include)
    }

    /// What the command does, for the sentence that refuses a zone's group.
    fn what(self) -> &'static str {
        match self {
            Act::Pause => "a pause stops",
            Act::Resume => "a resume lets go on",
            Act::BeginRollout => "a rollout begins in",
            Act::Release | Act::Exclude | Act::Include => "it acts on",
        }
    }
}

/// What is known of the groups a command names: the table, and the
/// configuration when it was read.
pub(crate) struct Known<'a, S> {
    store: &'a S,
    table: &'a str,
    deployed: Option<&'a Config>,
}

impl<'a, S: LockStore> Known<'a, S> {
    pub(crate) fn new(store: &'a S, table: &'a str, deployed: Option<&'a Config>) -> Self {
        Self {
            store,
            table,
            deployed,
        }
    }

    /// The groups a command acts on for the names a person gave, read as
    /// the nodes' names are ([`crate::domain::groups::GroupSlots::meaning`]):
    /// a zone's group is its split group's item for a command on one node,
    /// and refused naming that group for a command on a whole group, so
    /// that nothing says it paused what no node will feel. Then the names
    /// neither stored nor configured are refused as typos.
    pub(crate) async fn meant(
        &self,
        named: &[GroupName],
        act: Act,
    ) -> Result<Vec<GroupName>, Failure> {
        let meant = self.read_as_nodes_do(named, act).await?;
        self.refuse_typos(&meant, act).await?;
        Ok(meant)
    }

    /// [`Self::meant`] without the refusal of typos (`pause --create`).
    pub(crate) async fn read_as_nodes_do(
        &self,
        named: &[GroupName],
        act: Act,
    ) -> Result<Vec<GroupName>, Failure> {
        let mut meant = Vec::with_capacity(named.len());
        for group in named {
            meant.push(self.meant_one(group, act).await?);
        }
        Ok(meant)
    }

    async fn meant_one(&self, group: &GroupName, act: Act) -> Result<GroupName, Failure> {
        let stored = !self.store.groups(Some(group)).await?.is_empty();
        let table = self.table;
        let Some(config) = self.deployed else {
            if stored {
                return Ok(group.clone());
            }
            return match self.stored_parent(group).await? {
                Some(parent) => Err(Failure::Refused(format!(
                    "group '{group}' is not stored in table '{table}', and the configuration \
                     was not read: if '{parent}' is split by zone (FLEETLOCK_ZONES), nodes \
                     asking as '{group}' hold slots of '{parent}'; nothing changed: name \
                     --group {parent}, or pass --function NAME to read the configuration"
                ))),
                None => Ok(group.clone()),
            };
        };
        match config.groups.meaning(group) {
            Ok(meaning) if !meaning.is_zone_of(group) => Ok(group.clone()),
            _ if stored && act.clears_stored() => Ok(group.clone()),
            Ok(meaning) if act.on_a_node() => Ok(meaning.group),
            Ok(meaning) => {
                let parent = meaning.group;
                Err(Failure::Refused(format!(
                    "group '{group}' is {}: its nodes take slots of '{parent}', and {} the \
                     whole group; nothing changed: name --group {parent}",
                    zone_of(group, &parent),
                    act.what()
                )))
            }
            Err(_) => Ok(group.clone()),
        }
    }

    /// The group `status --group` shows for a name, and a line that says
    /// why where it is not the name itself: a zone's group shows its split
    /// group, whose item holds its nodes' slots (a stored item of the name
    /// itself, left from before the split, is shown as it is).
    pub(crate) async fn shown(
        &self,
        group: &GroupName,
    ) -> Result<(GroupName, Option<String>), Failure> {
        if !self.store.groups(Some(group)).await?.is_empty() {
            return Ok((group.clone(), None));
        }
        let parent = match self.deployed {
            Some(config) => config
                .groups
                .meaning(group)
                .ok()
                .filter(|meaning| meaning.is_zone_of(group))
                .map(|meaning| (meaning.group, "is split by zone")),
            None => self.stored_parent(group).await?.map(|parent| {
                (
                    parent,
                    "is stored; if it is split by zone (FLEETLOCK_ZONES)",
                )
            }),
        };
        Ok(match parent {
            Some((parent, how)) => {
                let note = format!(
                    "(group '{group}' is not stored: '{parent}' {how}, its nodes asking as \
                     '{group}' hold slots of '{parent}', shown here)"
                );
                (parent, Some(note))
            }
            None => (group.clone(), None),
        })
    }

    /// The longest stored group `group` is under (`workers` for
    /// `workers.us-east-1a`), if any.
    pub(crate) async fn stored_parent(
        &self,
        group: &GroupName,
    ) -> Result<Option<GroupName>, Failure> {
        let name = group.as_str();
        for (at, _) in name.rmatch_indices('.') {
            let Ok(parent) = GroupName::parse(&name[..at]) else {
                continue;
            };
            if !self.store.groups(Some(&parent)).await?.is_empty() {
                return Ok(Some(parent));
            }
        }
        Ok(None)
    }

    /// Refuses the first group that is neither stored nor configured: most
    /// often a typo, which would otherwise create a group nobody uses while
    /// the real one goes on granting. Names the closest known group: where
    /// the configuration was read, the one the nodes' reading of the name
    /// gives.
    pub(crate) async fn refuse_typos(&self, named: &[GroupName], act: Act) -> Result<(), Failure> {
        let mut stored: Option<Vec<GroupName>> = None;
        for group in named {
            let configured = self
                .deployed
                .is_some_and(|config| config.groups.slots_for(group).is_ok());
            if configured || !self.store.groups(Some(group)).await?.is_empty() {
                continue;
            }
            if stored.is_none() {
                let names = self.store.groups(None).await?.into_iter().map(|(n, _)| n);
                stored = Some(names.collect());
            }
            let listed = self
                .deployed
                .into_iter()
                .flat_map(|config| config.groups.listed().map(|(name, _)| name.clone()));
            let known: Vec<GroupName> = listed.chain(stored.iter().flatten().cloned()).collect();
            let closest = match self.deployed.map(|config| config.groups.meaning(group)) {
                Some(Err(crate::domain::error::Error::UnknownGroup {
                    meant: Some(meant), ..
                })) => format!(" (did you mean '{meant}'?)"),
                _ => did_you_mean(group.as_str(), known.iter().map(GroupName::as_str)),
            };
            let table = self.table;
            let unknown = match self.deployed {
                _ if act == Act::Release => {
                    format!(
                        "group '{group}' is not stored in table '{table}': no node has held a slot there"
                    )
                }
                Some(_) => {
                    format!("group '{group}' is neither stored in table '{table}' nor configured")
                }
                None => format!(
                    "group '{group}' is not stored in table '{table}', and the configuration was \
                     not read (pass --function NAME to check it)"
                ),
            };
            let next = match act {
                Act::Pause => "to pause a group no node has used yet, add --create",
                Act::Resume => "nothing is paused there",
                Act::Release => "check the group with 'fleetlock status'",
                Act::Exclude => "exclude a node of a group that is configured or stored",
                Act::Include => "nothing is excluded there",
                Act::BeginRollout => "begin a rollout of a group that is configured or stored",
            };
            return Err(Failure::Refused(format!(
                "{unknown}{closest}; nothing changed: {next}"
            )));
        }
        Ok(())
    }
}

/// The group and the node a command on a slot names (the id as `status`
/// shows it: an invisible character escaped), and the table: the names and
/// the table checked first, then a group that is not stored refused as a
/// likely typo (only a stored group holds a slot).
pub(crate) async fn stored_node(
    group: &str,
    id: &str,
    command: &str,
) -> Result<(GroupName, NodeId, DynamoStore), Failure> {
    let group = group_named(group)?;
    let id = NodeId::from_shown(id).map_err(|e| Failure::Input(e.value()))?;
    let table = config::command_table(process_env, command)?;
    let aws = command_aws().await?;
    let store = dynamo_store(&aws, table);
    // The configuration only where the name is not stored: it says which
    // split group a zone's name takes its slots from.
    let deployed = match store.groups(Some(&group)).await?.is_empty() {
        true => deployed_config(&aws, None).await?,
        false => None,
    };
    let group = Known::new(&store, store.table(), deployed.as_ref())
        .meant(std::slice::from_ref(&group), Act::Release)
        .await?
        .remove(0);
    Ok((group, id, store))
}

/// The group a command on one node names, and the table it is stored in:
/// the name and the table checked first, then a group neither stored nor
/// configured refused as a likely typo.
pub(crate) async fn known_group(
    group: &str,
    function: Option<String>,
    act: Act,
    command: &str,
) -> Result<(GroupName, DynamoStore), Failure> {
    let group = group_named(group)?;
    let table = config::command_table(process_env, command)?;
    let aws = command_aws().await?;
    let store = dynamo_store(&aws, table);
    let deployed = deployed_config(&aws, function).await?;
    let group = Known::new(&store, store.table(), deployed.as_ref())
        .meant(std::slice::from_ref(&group), act)
        .await?
        .remove(0);
    Ok((group, store))
}

/// The configuration the function runs with: its environment through the
/// Lambda API (`--function`, or `FLEETLOCK_FUNCTION`), else the same variables
/// in this shell when any is set, else unknown.
pub(crate) async fn deployed_config(
    aws: &SdkConfig,
    function: Option<String>,
) -> Result<Option<Config>, Failure> {
    match config::deployed_function(process_env, function) {
        Some(function) => function_settings(aws, &function).await.map(Some),
        None => shell_rules(),
    }
}

/// A deployed function's configuration, read through the Lambda API.
pub(crate) async fn function_settings(aws: &SdkConfig, function: &str) -> Result<Config, Failure> {
    let client = aws::lambda_client(aws);
    let variables = function_config::function_environment(&client, function)
        .await
        .map_err(|e| Failure::Aws(e.to_string()))?;
    function_config::config_of(&variables).map_err(|e| {
        Failure::Refused(format!(
            "function '{function}' has an invalid configuration: {e}"
        ))
    })
}

/// The rules of this shell's variables, when any is set.
pub(crate) fn shell_rules() -> Result<Option<Config>, Failure> {
    if !config::rules_given(process_env) {
        return Ok(None);
    }
    Ok(Some(Config::from_env()?))
}

/// The AWS configuration of a command, once its own settings are checked.
pub(crate) async fn command_aws() -> Result<SdkConfig, Failure> {
    aws::load_command_config()
        .await
        .map_err(|why| Failure::Config(ConfigError::Missing(why.to_string())))
}

/// The table's store, on a client that reads AWS's clock from every answer
/// ([`SERVER_CLOCK`]).
pub(crate) fn dynamo_store(aws: &SdkConfig, table: String) -> DynamoStore {
    let config = aws::dynamodb_config(aws).interceptor(SERVER_CLOCK.clone());
    DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config.build()), table)
}

/// AWS's clock as this command's DynamoDB answers show it: one command runs
/// per process, and every store it makes reports here.
pub(crate) static SERVER_CLOCK: std::sync::LazyLock<ServerClock> =
    std::sync::LazyLock::new(ServerClock::default);

/// The time a command writes: this machine's, once it is known to be within
/// a few seconds of AWS's (read from the answers so far, or from one read of
/// the table when none came yet); a skewed clock stops the command, with
/// the line that says so, before it writes anything.
pub(crate) async fn written_now(store: &DynamoStore) -> Result<Timestamp, Failure> {
    if SERVER_CLOCK.skew_ms().is_none() {
        // Any answer carries a Date; this read is one GetItem.
        store
            .wildcard_groups()
            .await
            .map_err(|e| Failure::Aws(e.to_string()))?;
    }
    SERVER_CLOCK
        .check()
        .map_err(|e| Failure::Refused(e.to_string()))?;
    Ok(Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{config, group, node, rules};
    use crate::domain::store::Decisions;
    use crate::domain::time::Timestamp;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn only_a_group_stored_or_configured_is_taken_as_meant() {
        let store = MemoryStore::default();
        store
            .acquire(&group("db"), &node("n1"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let configured = config("default=1,workers=2");
        let known = Known::new(&store, "t", Some(&configured));
        // Stored, or configured (though never used): as meant.
        known
            .refuse_typos(&[group("db"), group("workers")], Act::Pause)
            .await
            .unwrap();
        let typo = known
            .refuse_typos(&[group("wrokers")], Act::Pause)
            .await
            .unwrap_err()
            .to_string();
        assert!(typo.contains("(did you mean 'workers'?)"), "{typo}");
        // The closest of the stored names too; nothing close, no guess.
        let near_stored = known.refuse_typos(&[group("dbb")], Act::Resume).await;
        assert!(
            near_stored
                .unwrap_err()
                .to_string()
                .contains("did you mean 'db'")
        );
        let far = known.refuse_typos(&[group("frontend")], Act::Pause).await;
        assert!(!far.unwrap_err().to_string().contains("did you mean"));
        // Without the configuration, only the stored group is known.
        let blind = Known::new(&store, "t", None);
        blind
            .refuse_typos(&[group("db")], Act::Pause)
            .await
            .unwrap();
        assert!(
            blind
                .refuse_typos(&[group("workers")], Act::Pause)
                .await
                .is_err()
        );
        // Nothing was created by any of it.
        assert_eq!(store.groups(None).await.unwrap().len(), 1);
    }
}
