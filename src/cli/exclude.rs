//! `exclude` and `include`: one node kept out of its group's rollout while
//! the rest goes on, and let back in.

use std::io::Write;

use clap::Args;

use crate::config::{self, process_env};
use crate::domain::input::{GroupName, NodeId, PauseReason};
use crate::domain::lock::ByPerson;
use crate::domain::store::{Changed, Excluding, LockStore};

use super::Failure;
use super::context::{Act, known_group, written_now};
use crate::domain::store::Decisions;

/// Keep one node out of the rollout: it takes no new slot (a slot it holds
/// stays its own) while the rest of the group goes on; at most 10 nodes a group
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct ExcludeCommand {
    #[command(flatten)]
    pub(crate) node: NodeArgs,
    /// Why, for the node's journal and for status
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Who excludes it (default: $USER)
    #[arg(long, value_name = "NAME")]
    pub(crate) by: Option<String>,
    /// Check the group against this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

/// Let an excluded node take reboot slots again
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct IncludeCommand {
    #[command(flatten)]
    pub(crate) node: NodeArgs,
    /// Check the group against this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

/// The node that `exclude` and `include` act on.
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct NodeArgs {
    /// The node's group
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// The node's id, as status shows it
    #[arg(long, value_name = "ID")]
    pub(crate) id: String,
}

impl ExcludeCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let node = NodeId::from_shown(&self.node.id).map_err(|e| Failure::Input(e.value()))?;
        let reason = PauseReason::parse(&self.reason)
            .map_err(|why| Failure::Input(format!("--reason: {why}")))?;
        let by = config::operator_name(process_env, self.by)
            .map_err(|e| Failure::Input(e.to_string()))?;
        let (group, store) =
            known_group(&self.node.group, self.function, Act::Exclude, "exclude").await?;
        let exclusion = ByPerson {
            reason,
            since: written_now(&store).await?,
            by,
        };
        exclude(&store, &group, &node, exclusion, out).await
    }
}

impl IncludeCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let node = NodeId::from_shown(&self.node.id).map_err(|e| Failure::Input(e.value()))?;
        let (group, store) =
            known_group(&self.node.group, self.function, Act::Include, "include").await?;
        include(&store, &group, &node, out).await
    }
}

/// `exclude`: keeps one node out of the rollout, says what changed.
pub(crate) async fn exclude<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    exclusion: ByPerson,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.exclude(group, id, exclusion).await?;
    let shown = id.shown();
    match decided.outcome {
        Excluding::Changed(Changed::Yes) => {
            let holds = if decided.group.holders.holds(id) {
                "; the slot it holds stays its own until it gives it back"
            } else {
                ""
            };
            say!(
                out,
                "excluded '{shown}' from group '{group}': it takes no new reboot slot while the \
                 rest of the group goes on{holds}"
            );
        }
        Excluding::Changed(Changed::AlreadySo) => say!(
            out,
            "'{shown}' was already excluded from '{group}' {}; kept as it was",
            decided.group.excluded.get(id).map_or_else(
                String::new,
                crate::domain::lock::exclusion::excluded_because
            )
        ),
        Excluding::Changed(Changed::Overtaken) => say!(
            out,
            "'{group}' was changed by someone else while this exclusion was being written; \
             nothing changed (run it again)"
        ),
        Excluding::AtLimit => {
            return Err(Failure::Refused(format!(
                "group '{group}' already excludes {} nodes, the most it may; nothing changed: \
                 include one of them first",
                decided.group.excluded.len()
            )));
        }
    }
    Ok(())
}

/// `include`: lets an excluded node take slots again.
pub(crate) async fn include<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.include(group, id).await?;
    let shown = id.shown();
    match decided.outcome {
        Changed::Yes => say!(
            out,
            "included '{shown}' in group '{group}' again: it may take reboot slots"
        ),
        Changed::AlreadySo => say!(
            out,
            "'{shown}' was not excluded from '{group}'; nothing changed"
        ),
        Changed::Overtaken => say!(
            out,
            "'{group}' was changed by someone else while this was being written; nothing \
             changed (run it again)"
        ),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{group, node};
    use crate::domain::input::PauseReason;
    use crate::domain::lock::MAX_EXCLUSIONS;
    use crate::domain::time::Timestamp;
    use crate::store::memory::MemoryStore;

    fn exclusion() -> ByPerson {
        ByPerson {
            reason: PauseReason::parse("disk").unwrap(),
            since: Timestamp(1),
            by: "ana".into(),
        }
    }

    #[tokio::test]
    async fn an_exclusion_past_the_limit_is_refused_with_a_line_and_changes_nothing() {
        let store = MemoryStore::default();
        let workers = group("workers");
        for n in 0..MAX_EXCLUSIONS {
            exclude(
                &store,
                &workers,
                &node(&format!("n{n}")),
                exclusion(),
                &mut Vec::new(),
            )
            .await
            .unwrap();
        }
        let err = exclude(
            &store,
            &workers,
            &node("one-more"),
            exclusion(),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        assert!(matches!(err, Failure::Refused(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "group 'workers' already excludes 10 nodes, the most it may; nothing changed: \
             include one of them first"
        );
        let stored = store.groups(Some(&workers)).await.unwrap();
        assert_eq!(stored[0].1.excluded.len(), MAX_EXCLUSIONS);
        assert!(!stored[0].1.excluded.contains_key(&node("one-more")));
    }
}
