//! `pause` and `resume`: a person stops new reboots in groups at once, and
//! lets them go on again (an alarm's pause stays until its alarm clears).

use std::io::Write;

use clap::Args;

use crate::config::{self, process_env};
use crate::domain::input::{GroupName, PauseReason};
use crate::domain::lock::ByPerson;
use crate::domain::lock::pause::paused_because;
use crate::domain::store::{Changed, LockStore};
use crate::domain::time::Timestamp;

use super::Failure;
use super::context::{
    Act, Known, command_aws, deployed_config, dynamo_store, group_named, written_now,
};
use crate::domain::store::Decisions;

/// Stop new reboots in these groups at once (holders keep their slots; --by
/// defaults to $USER); a group neither stored nor configured is refused as a
/// likely typo (--create pauses it all the same)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct PauseCommand {
    #[command(flatten)]
    pub(crate) targets: TargetArgs,
    /// Why: it reaches the nodes' journals
    #[arg(long, value_name = "TEXT")]
    pub(crate) reason: String,
    /// Who pauses (default: $USER)
    #[arg(long, value_name = "NAME")]
    pub(crate) by: Option<String>,
    /// Check the groups against this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
    /// Pause a named group even if it is neither stored nor configured
    #[arg(long)]
    pub(crate) create: bool,
}

/// Clear a person's pause (alarms' pauses stay)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct ResumeCommand {
    #[command(flatten)]
    pub(crate) targets: TargetArgs,
    /// Check the groups against this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

/// The groups a pause or resume acts on: named, or every group stored.
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct TargetArgs {
    /// A group (repeatable)
    #[arg(
        long = "group",
        value_name = "GROUP",
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub(crate) groups: Vec<String>,
    /// Every group stored in the table
    #[arg(long)]
    pub(crate) all: bool,
}

impl PauseCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let reason = PauseReason::parse(&self.reason)
            .map_err(|why| Failure::Input(format!("--reason: {why}")))?;
        let by = config::operator_name(process_env, self.by)
            .map_err(|e| Failure::Input(e.to_string()))?;
        let table = config::command_table(process_env, "pause")?;
        let aws = command_aws().await?;
        let store = dynamo_store(&aws, table);
        let mut targets = targets(&store, &self.targets, out).await?;
        if !self.targets.all {
            let deployed = deployed_config(&aws, self.function).await?;
            let known = Known::new(&store, store.table(), deployed.as_ref());
            targets = match self.create {
                true => known.read_as_nodes_do(&targets, Act::Pause).await?,
                false => known.meant(&targets, Act::Pause).await?,
            };
        }
        let now = written_now(&store).await?;
        pause(&store, &targets, &reason, &by, now, out).await
    }
}

impl ResumeCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let table = config::command_table(process_env, "resume")?;
        let aws = command_aws().await?;
        let store = dynamo_store(&aws, table);
        let mut targets = targets(&store, &self.targets, out).await?;
        if !self.targets.all {
            let deployed = deployed_config(&aws, self.function).await?;
            let known = Known::new(&store, store.table(), deployed.as_ref());
            targets = known.meant(&targets, Act::Resume).await?;
        }
        resume(&store, &targets, out).await
    }
}

/// `pause`: a person's pause on each group, kept as it is where one stands.
pub(crate) async fn pause<S: LockStore>(
    store: &S,
    targets: &[GroupName],
    reason: &PauseReason,
    by: &str,
    since: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    for group in targets {
        let pause = ByPerson {
            reason: reason.clone(),
            since,
            by: by.to_owned(),
        };
        let decided = store.pause(group, pause).await?;
        match decided.outcome {
            Changed::Yes => say!(out, "paused '{group}': no new reboot slots"),
            Changed::Overtaken => say!(
                out,
                "'{group}' was resumed by someone else while this pause was being \
                 written; nothing changed (pause it again if it should stop)"
            ),
            Changed::AlreadySo => say!(
                out,
                "'{group}' was already paused {}; kept as it was",
                paused_because(&decided.group.pause)
            ),
        }
    }
    Ok(())
}

/// `resume`: clears a person's pause and the server's stop of a rollout
/// (a person looked), saying what it cleared; an alarm's stays, and is said.
pub(crate) async fn resume<S: LockStore>(
    store: &S,
    targets: &[GroupName],
    out: &mut impl Write,
) -> Result<(), Failure> {
    for group in targets {
        // Read first only to say what the resume clears.
        let before = store
            .groups(Some(group))
            .await?
            .pop()
            .map(|(_, record)| record)
            .unwrap_or_default();
        let decided = store.resume(group).await?;
        let cleared = match (&before.pause.person, &before.pause.stop) {
            (_, Some(stop)) => {
                let still = if decided.group.returning.contains_key(&stop.id) {
                    format!(
                        "; its slot still counts as returning until 'fleetlock returned' or \
                         'fleetlock release' (group '{group}', id '{}')",
                        stop.id.shown()
                    )
                } else {
                    String::new()
                };
                format!(
                    " (cleared the server's stop: {}{still})",
                    stop.what_happened()
                )
            }
            (Some(person), None) => format!(" (cleared the pause by {})", person.by),
            (None, None) => String::new(),
        };
        let verb = match decided.outcome {
            Changed::Yes => format!("resumed '{group}'{cleared}"),
            Changed::AlreadySo => format!("'{group}' was not paused by a person"),
            Changed::Overtaken => format!(
                "'{group}' was paused again by someone else while this resume was \
                 being written; nothing changed"
            ),
        };
        if decided.group.pause.is_paused() {
            say!(
                out,
                "{verb}; still paused {}",
                paused_because(&decided.group.pause)
            );
        } else {
            say!(out, "{verb}: it grants reboot slots again");
        }
    }
    Ok(())
}

/// The groups a pause or resume names, or every group stored for `--all`.
pub(crate) async fn targets<S: LockStore>(
    store: &S,
    targets: &TargetArgs,
    out: &mut impl Write,
) -> Result<Vec<GroupName>, Failure> {
    if !targets.all {
        return targets
            .groups
            .iter()
            .map(|name| group_named(name))
            .collect();
    }
    let stored: Vec<GroupName> = store
        .groups(None)
        .await?
        .into_iter()
        .map(|(name, _)| name)
        .collect();
    // Said every time: `--all` cannot see a group that has no item.
    say!(
        out,
        "--all: {} group(s) stored in the table; a group covered by '*=N' that was never \
         used has no item and is not covered (name it with --group)",
        stored.len()
    );
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{group, node, printed, rules};
    use crate::domain::lock::{GroupRules, StopCause};
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn pause_then_resume_says_what_changed_each_time() {
        let store = MemoryStore::default();
        let reason = PauseReason::parse("db migration").unwrap();
        let mut out = Vec::new();
        let targets = [group("workers")];
        pause(&store, &targets, &reason, "ana", Timestamp(1_000), &mut out)
            .await
            .unwrap();
        pause(&store, &targets, &reason, "bob", Timestamp(2_000), &mut out)
            .await
            .unwrap();
        resume(&store, &targets, &mut out).await.unwrap();
        resume(&store, &targets, &mut out).await.unwrap();
        let lines: Vec<String> = printed(out).lines().map(String::from).collect();
        assert_eq!(lines[0], "paused 'workers': no new reboot slots");
        assert!(
            lines[1].starts_with("'workers' was already paused") && lines[1].contains("ana"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "resumed 'workers' (cleared the pause by ana): it grants reboot slots again"
        );
        assert_eq!(
            lines[3],
            "'workers' was not paused by a person: it grants reboot slots again"
        );
        // The store holds what the lines say: not paused.
        let stored = store.groups(Some(&group("workers"))).await.unwrap();
        assert!(!stored[0].1.pause.is_paused());
    }

    #[tokio::test]
    async fn resume_clears_the_servers_stop_and_says_what_it_cleared_and_what_stays() {
        let store = MemoryStore::default();
        let workers = group("workers");
        let gated = GroupRules {
            return_timeout: Some(std::time::Duration::from_secs(600)),
            ..rules(2)
        };
        store
            .acquire(&workers, &node("n1"), gated, Timestamp(0))
            .await
            .unwrap();
        store
            .release(&workers, &node("n1"), true, Timestamp(1_000))
            .await
            .unwrap();
        store
            .stop_rollout(
                &workers,
                &node("n1"),
                Timestamp(1_000),
                StopCause::Return,
                Timestamp(601_000),
            )
            .await
            .unwrap();
        store.pause_for_alarm(&workers, "api-5xx").await.unwrap();
        let mut out = Vec::new();
        resume(&store, std::slice::from_ref(&workers), &mut out)
            .await
            .unwrap();
        let line = printed(out);
        assert!(
            line.starts_with("resumed 'workers' (cleared the server's stop: node 'n1' gave its slot back at 1970-01-01T00:00:01Z")
                && line.contains("still counts as returning until 'fleetlock returned'")
                && line.contains("still paused while alarm(s) api-5xx are in ALARM"),
            "{line}"
        );
        let stored = store.groups(Some(&workers)).await.unwrap();
        assert_eq!(stored[0].1.pause.stop, None);
        assert!(stored[0].1.returning.contains_key(&node("n1")));
    }

    #[tokio::test]
    async fn all_targets_every_stored_group_and_says_what_it_cannot_see() {
        let store = MemoryStore::default();
        for name in ["a", "b"] {
            store
                .acquire(&group(name), &node("n1"), rules(1), Timestamp(1))
                .await
                .unwrap();
        }
        let mut out = Vec::new();
        let found = targets(
            &store,
            &TargetArgs {
                groups: vec![],
                all: true,
            },
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(found, [group("a"), group("b")]);
        assert!(printed(out).starts_with("--all: 2 group(s) stored in the table"));
        let bad = targets(
            &store,
            &TargetArgs {
                groups: vec!["no/slash".into()],
                all: false,
            },
            &mut Vec::new(),
        )
        .await;
        assert!(matches!(bad, Err(Failure::Input(_))), "{bad:?}");
    }
}
