//! Commands on one node's slot: `release` (a person gives it back),
//! `drained` (a person confirms a node's drain, and its reservation becomes
//! its slot) and `returned` (a person confirms a node is back in service,
//! and its returning slot is freed). All act only on a stored group: only a stored group holds a
//! slot, so any other name is refused as a likely typo.

use std::io::Write;

use clap::Args;

use crate::domain::drain::{Confirmation, Confirmed, confirmed_return};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::Release;
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;

use super::Failure;
use super::context::{stored_node, written_now};
use crate::domain::names::shell_word;
use crate::domain::store::Decisions;

/// Release a slot by hand (ID as status shows it)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct ReleaseCommand {
    /// The group the slot is held in
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// The holder's id, as status shows it
    #[arg(long, value_name = "ID")]
    pub(crate) id: String,
}

impl ReleaseCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let (group, id, store) = stored_node(&self.group, &self.id, "release").await?;
        let now = written_now(&store).await?;
        release(&store, &group, &id, now, out).await
    }
}

/// Confirm that a node waiting for its drain was drained: its reserved slot
/// becomes its own, and it reboots at its next request (--reserved-at: only
/// the reservation made then, as status and the event say it)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct DrainedCommand {
    /// The group the node waits in
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// The node's id, as status shows it
    #[arg(long, value_name = "ID")]
    pub(crate) id: String,
    /// Only the reservation made then (as status and the event say it)
    #[arg(long, value_name = "TIME", value_parser = crate::domain::drain::parse_time)]
    pub(crate) reserved_at: Option<Timestamp>,
}

impl DrainedCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let (confirmation, store, now) =
            confirming(&self.group, &self.id, self.reserved_at, "drained").await?;
        drained(&store, &confirmation, now, out).await
    }
}

/// What a person's confirmation names (a node of a stored group, and the
/// reservation or return confirmed, if given), the table, and the time to
/// write it at (DynamoDB's).
async fn confirming(
    group: &str,
    id: &str,
    at: Option<Timestamp>,
    command: &str,
) -> Result<(Confirmation, crate::store::dynamodb::DynamoStore, Timestamp), Failure> {
    let (group, id, store) = stored_node(group, id, command).await?;
    let now = written_now(&store).await?;
    let confirmation = Confirmation {
        group,
        id,
        reserved_at: at,
    };
    Ok((confirmation, store, now))
}

/// A confirmation's sentence: printed when it is done, else the refusal.
fn said(confirmed: Confirmed, out: &mut impl Write) -> Result<(), Failure> {
    if confirmed.done {
        say!(out, "{}", confirmed.value);
        Ok(())
    } else {
        Err(Failure::Refused(confirmed.value))
    }
}

/// `release`: gives back `id`'s slot in `group`; where it holds none, says
/// where it holds one.
pub(crate) async fn release<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    // A person's release frees the slot, a returning one too: it says the
    // node is done, as a confirmation of its return would.
    let returning = store
        .groups(Some(group))
        .await?
        .first()
        .is_some_and(|(_, record)| record.returning.contains_key(id));
    let decided = store.release(group, id, false, now).await?;
    let left = decided.group.holders.len();
    let id_shown = id.shown();
    if decided.outcome == Release::Released {
        say!(
            out,
            "released '{id_shown}' from group '{group}'{} ({left} {} left)",
            if returning {
                " (its slot was returning; its return is ended unconfirmed)"
            } else {
                ""
            },
            if left == 1 { "holder" } else { "holders" }
        );
        return Ok(());
    }
    // Nothing released: most often the wrong group. Say where it holds.
    let held_in: Vec<String> = store
        .groups(None)
        .await?
        .into_iter()
        .filter(|(_, record)| record.holders.holds(id))
        .map(|(name, _)| name.to_string())
        .collect();
    if held_in.is_empty() {
        say!(
            out,
            "'{id_shown}' held no slot in group '{group}' and holds none in any group; \
             nothing changed"
        );
        Ok(())
    } else {
        Err(Failure::Refused(format!(
            "'{id_shown}' holds no slot in group '{group}' but holds one in: {}; nothing \
             changed (run: fleetlock release --group {} --id {})",
            held_in.join(", "),
            held_in[0],
            shell_word(&id_shown)
        )))
    }
}

/// Confirm that a node whose slot is returning is back in service: its slot
/// is freed and the next node may take it (--released-at: only the return
/// begun then, as status and the Slot Released event say it)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct ReturnedCommand {
    /// The group the node returns in
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// The node's id, as status shows it
    #[arg(long, value_name = "ID")]
    pub(crate) id: String,
    /// Only the return begun then (as status and the event say it)
    #[arg(long, value_name = "TIME", value_parser = crate::domain::drain::parse_time)]
    pub(crate) released_at: Option<Timestamp>,
}

impl ReturnedCommand {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let (confirmation, store, now) =
            confirming(&self.group, &self.id, self.released_at, "returned").await?;
        returned(&store, &confirmation, now, out).await
    }
}

/// `returned`: a person confirms that a node is back in service; its
/// returning slot is freed. Refused (nothing changed) when there is no
/// such return.
pub(crate) async fn returned<S: LockStore>(
    store: &S,
    confirmation: &Confirmation,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store
        .returned(
            &confirmation.group,
            &confirmation.id,
            confirmation.reserved_at,
            now,
        )
        .await?;
    said(confirmed_return(decided.outcome, confirmation), out)?;
    if let Some(stop) = &decided.group.pause.stop {
        say!(
            out,
            "group '{}' is still stopped (node '{}' did not come back in time); \
             'fleetlock resume --group {}' lets the rollout go on",
            confirmation.group,
            stop.id.shown(),
            confirmation.group
        );
    }
    Ok(())
}

/// `drained`: a person confirms that a node was drained; its reservation
/// becomes its slot. Refused (nothing changed) when there is none to grant.
pub(crate) async fn drained<S: LockStore>(
    store: &S,
    confirmation: &Confirmation,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store
        .drained(
            &confirmation.group,
            &confirmation.id,
            confirmation.reserved_at,
            now,
        )
        .await?;
    said(Confirmed::of(decided.outcome, confirmation), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{group, node, printed, rules};
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn release_in_the_wrong_group_names_the_right_one_and_frees_nothing() {
        let store = MemoryStore::default();
        store
            .acquire(&group("workers"), &node("it's"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let err = release(
            &store,
            &group("default"),
            &node("it's"),
            Timestamp(2),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Failure::Refused(_)), "{err:?}");
        assert!(
            text.ends_with("(run: fleetlock release --group workers --id 'it'\\''s')"),
            "{text}"
        );
        let held = store.groups(Some(&group("workers"))).await.unwrap();
        assert_eq!(held[0].1.holders.len(), 1, "nothing was released");

        let mut out = Vec::new();
        release(
            &store,
            &group("workers"),
            &node("it's"),
            Timestamp(3),
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(
            printed(out),
            "released 'it's' from group 'workers' (0 holders left)\n"
        );
    }
}
