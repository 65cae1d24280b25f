//! Confirming a drain: the actions a hook sends (`{"action": "drained", ...}`
//! to confirm, `{"action": "slot", ...}` to read a node's slot before it
//! undrains it) and what each outcome of a confirmation says, the same
//! sentence for the command line and for a hook's answer. Pure: the
//! `drained` entry point and the `fleetlock drained` command are the
//! adapters.

use serde_json::{Value, json};

use crate::domain::error::Error;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{Drained, GroupRecord, Returned};
use crate::domain::time::Timestamp;

/// A confirmation, as a hook or a person asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Confirmation {
    pub(crate) group: GroupName,
    pub(crate) id: NodeId,
    /// The reservation drained (a `Slot Drain Requested` event's
    /// `reserved_at`): only that one is granted. `None` grants whichever
    /// stands.
    pub(crate) reserved_at: Option<Timestamp>,
}

/// The actions the `drained` entry point takes: a closed set, so that a
/// mistyped action is refused rather than read as a confirmation.
pub(crate) const ACTIONS: [&str; 4] = ["drained", "returned", "slot", "sweep"];

/// What a hook asks of the `drained` entry point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Confirm a drain: the reservation becomes the slot.
    Drained(Confirmation),
    /// Confirm a return to service: the returning slot is freed. The
    /// confirmation's time is the return's start (`released_at`, a `Slot
    /// Released` event's `at`).
    Returned(Confirmation),
    /// Read whether a node holds or waits for a slot (changes nothing): a
    /// hook undrains only a node that does neither, since events come out
    /// of order and more than once.
    Slot { group: GroupName, id: NodeId },
    /// Count every group's reservations past their drain timeout, for the
    /// `DrainsOverdue` alarm (a schedule sends it): the calls of a group
    /// count them too, but a group nobody calls sends nothing.
    Sweep,
}

impl Action {
    /// Reads an action; every mistake is named.
    pub(crate) fn parse(action: &Value) -> Result<Self, ActionError> {
        match action.get("action").and_then(Value::as_str) {
            Some("sweep") => Ok(Action::Sweep),
            Some("returned") => Confirmation::fields(action, "released_at").map(Action::Returned),
            Some("slot") => {
                let confirmation = Confirmation::fields(action, "reserved_at")?;
                Ok(Action::Slot {
                    group: confirmation.group,
                    id: confirmation.id,
                })
            }
            _ => Confirmation::from_action(action).map(Action::Drained),
        }
    }
}

/// How many reservations of all `stored` groups waited past their group's
/// drain timeout at `now`, by the rules `groups` configures (a group they
/// no longer cover counts nothing).
pub(crate) fn overdue_in_all(
    stored: &[(GroupName, GroupRecord)],
    groups: &crate::domain::groups::GroupSlots,
    now: Timestamp,
) -> usize {
    stored
        .iter()
        .filter_map(|(name, group)| {
            let rules = groups.rules_for(name).ok()?;
            crate::domain::service::drains_overdue(group, rules, now)
        })
        .sum()
}

/// A node's slot as a hook reads it: `holds` a granted slot, or
/// `waiting_for_drain` since `reserved_at`, or `returning` since
/// `released_at`; `state` names which (`none` for no slot). A hook that
/// undrains a node only when it holds nothing must treat `returning` as
/// "not yet": `holds` and `waiting_for_drain` are both false then.
pub(crate) fn slot_state(group: &GroupRecord, name: &GroupName, id: &NodeId) -> Value {
    let reserved = group.draining.get(id);
    let returning = group.returning.get(id);
    let state = match (group.holders.holds(id), reserved, returning) {
        (false, _, _) => "none",
        (true, Some(_), _) => "waiting_for_drain",
        (true, None, Some(_)) => "returning",
        (true, None, None) => "holds",
    };
    json!({
        "group": name.as_str(),
        "id": id.as_str(),
        "state": state,
        "holds": state == "holds",
        "waiting_for_drain": reserved.is_some(),
        "reserved_at": reserved.map(|at| at.to_rfc3339_millis()),
        "returning": returning.is_some(),
        "released_at": returning.map(|at| at.to_rfc3339_millis()),
    })
}

/// What a return's confirmation came to, as [`Confirmed`] says a drain's:
/// `done` when the node's slot is free after this call.
pub(crate) fn confirmed_return(outcome: Returned, confirmation: &Confirmation) -> Confirmed {
    let (group, id) = (&confirmation.group, confirmation.id.shown());
    let asked = confirmation.reserved_at.map_or_else(String::new, |at| {
        format!(" (released at {})", at.to_rfc3339())
    });
    let (outcome, done, value) = match outcome {
        Returned::Freed => (
            "returned",
            true,
            format!(
                "confirmed the return of '{id}' to service in group '{group}'{asked}: its slot \
                 is free, and the next node may take it"
            ),
        ),
        Returned::NotReturning { holds: true } => (
            "still_held",
            false,
            format!(
                "'{id}' still holds its slot in group '{group}': it has not reported \
                 steady-state since its reboot, so there is no return to confirm yet; nothing \
                 changed"
            ),
        ),
        Returned::NotReturning { holds: false } => (
            "not_returning",
            false,
            format!(
                "'{id}' has no returning slot in group '{group}': its return was confirmed \
                 before, or its slot was released; nothing changed"
            ),
        ),
        Returned::OtherReturn { since } => (
            "other_return",
            false,
            format!(
                "'{id}' in group '{group}' returns since {}, not since the release \
                 confirmed{asked}: that return ended; nothing changed (confirm the return \
                 since {} once the node is back)",
                since.to_rfc3339_millis(),
                since.to_rfc3339_millis()
            ),
        ),
    };
    Confirmed {
        outcome,
        done,
        value,
    }
}

impl Confirmation {
    /// Reads `{"action": "drained", "group": G, "id": X, "reserved_at": T}`
    /// (`reserved_at` optional, RFC 3339 as the event writes it). Every
    /// mistake is named.
    pub(crate) fn from_action(action: &Value) -> Result<Self, ActionError> {
        match action.get("action").and_then(Value::as_str) {
            Some("drained") => Self::fields(action, "reserved_at"),
            Some(other) => Err(ActionError::Unknown(other.to_owned())),
            None if !action.is_object() => Self::fields(action, "reserved_at"),
            None => Err(ActionError::NoAction),
        }
    }

    /// The group, the id and the time of an action (`time`: the field that
    /// names the reservation or the return confirmed).
    fn fields(action: &Value, time: &'static str) -> Result<Self, ActionError> {
        let Value::Object(fields) = action else {
            return Err(ActionError::NotAnObject);
        };
        let text = |name: &'static str| {
            (fields.get(name))
                .and_then(Value::as_str)
                .ok_or(ActionError::NoField(name))
        };
        let group = GroupName::parse(text("group")?).map_err(ActionError::Refused)?;
        let id = NodeId::stored(text("id")?).map_err(ActionError::Refused)?;
        let reserved_at = match fields.get(time) {
            None | Some(Value::Null) => None,
            Some(Value::String(at)) => Some(parse_time(at)?),
            Some(_) => return Err(ActionError::NotAString(time)),
        };
        Ok(Self {
            group,
            id,
            reserved_at,
        })
    }
}

/// Why a hook's action was refused; each sentence names the mistake.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("unknown action {0:?}; this function takes: {actions}", actions = ACTIONS.join(", "))]
    Unknown(String),
    #[error("the event has no string field \"action\" (one of: {actions})", actions = ACTIONS.join(", "))]
    NoAction,
    #[error(
        "the event is not a JSON object like {{\"action\": \"drained\", \"group\": \"workers\", \
         \"id\": \"...\"}}"
    )]
    NotAnObject,
    #[error("the action has no string field {0:?}")]
    NoField(&'static str),
    #[error("{0:?} is not a string")]
    NotAString(&'static str),
    /// The group or the id, refused as a node's request would be.
    #[error("{}", .0.value())]
    Refused(Error),
    #[error(transparent)]
    Time(#[from] TimeError),
}

/// Why a time was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    #[error("'{0}' is not a time like 2026-11-30T05:12:09.042Z (RFC 3339, in UTC)")]
    NotATime(String),
    #[error("'{0}' is before 1970")]
    Before1970(String),
}

/// `2026-11-30T05:12:09.042Z`, as events write times, to the millisecond.
pub(crate) fn parse_time(text: &str) -> Result<Timestamp, TimeError> {
    let at: jiff::Timestamp =
        (text.trim().parse()).map_err(|_| TimeError::NotATime(text.to_owned()))?;
    u64::try_from(at.as_millisecond())
        .map(Timestamp)
        .map_err(|_| TimeError::Before1970(text.to_owned()))
}

/// What a confirmation came to: a stable name, whether the node may now
/// reboot (or already could), and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Confirmed {
    pub(crate) outcome: &'static str,
    /// The node holds its slot after this call: the confirmation is done.
    pub(crate) done: bool,
    pub(crate) value: String,
}

impl Confirmed {
    pub(crate) fn of(outcome: Drained, confirmation: &Confirmation) -> Self {
        let (group, id) = (&confirmation.group, confirmation.id.shown());
        let asked = confirmation.reserved_at.map_or_else(String::new, |at| {
            format!(" (reserved at {})", at.to_rfc3339())
        });
        let (name, done, value) = match outcome {
            Drained::Granted => (
                "granted",
                true,
                format!(
                    "confirmed the drain of '{id}' in group '{group}'{asked}: its reserved slot is \
                     now its own, and it reboots at its next request (Zincati asks every 5 \
                     minutes)"
                ),
            ),
            Drained::AlreadyGranted => (
                "already_granted",
                true,
                format!("'{id}' holds its slot in group '{group}' already; nothing changed"),
            ),
            Drained::Returning { since } => (
                "returning",
                false,
                format!(
                    "'{id}' in group '{group}' rebooted already: the reservation confirmed{asked} \
                     ended, and its slot is returning since {} until its return is confirmed; \
                     nothing changed (bring the node back into service, then confirm its return)",
                    since.to_rfc3339_millis()
                ),
            ),
            Drained::NoReservation => (
                "no_reservation",
                false,
                format!(
                    "'{id}' has no reservation in group '{group}': it never asked, or its \
                     reservation ended (its steady-state, or a release); nothing changed"
                ),
            ),
            Drained::OtherReservation { since } => (
                "other_reservation",
                false,
                format!(
                    "'{id}' in group '{group}' waits since {}, not since the reservation \
                     confirmed{asked}: that one ended; nothing changed (drain the node for its \
                     new reservation, then confirm that one)",
                    since.to_rfc3339_millis()
                ),
            ),
            Drained::Excluded => (
                "excluded",
                false,
                format!(
                    "'{id}' is excluded from group '{group}'s rollout: its reservation stays and \
                     it does not reboot; include it, then confirm again"
                ),
            ),
            Drained::Paused => (
                "paused",
                false,
                format!(
                    "group '{group}' is paused: the reservation of '{id}' stays and it does not \
                     reboot; confirm again once the group is resumed"
                ),
            ),
        };
        Self {
            outcome: name,
            done,
            value,
        }
    }

    /// A hook's answer: `{"outcome", "done", "value", "group", "id"}`.
    pub(crate) fn to_json(&self, confirmation: &Confirmation) -> Value {
        json!({
            "outcome": self.outcome,
            "done": self.done,
            "value": self.value,
            "group": confirmation.group.as_str(),
            "id": confirmation.id.as_str(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(text: &str) -> Result<Confirmation, String> {
        Confirmation::from_action(&serde_json::from_str(text).unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_sentences_with_braces_and_lists_read_whole() {
        assert_eq!(
            action("[]").unwrap_err(),
            r#"the event is not a JSON object like {"action": "drained", "group": "workers", "id": "..."}"#
        );
        assert_eq!(
            action(r#"{"action":"drain"}"#).unwrap_err(),
            format!(
                r#"unknown action "drain"; this function takes: {}"#,
                ACTIONS.join(", ")
            )
        );
        assert_eq!(
            action(r#"{"group":"g"}"#).unwrap_err(),
            format!(
                r#"the event has no string field "action" (one of: {})"#,
                ACTIONS.join(", ")
            )
        );
        assert_eq!(
            parse_time("1969-12-31T23:59:59Z").unwrap_err().to_string(),
            "'1969-12-31T23:59:59Z' is before 1970"
        );
    }

    #[test]
    fn an_action_names_the_group_the_node_and_the_reservation() {
        let confirmation = action(
            r#"{"action":"drained","group":"workers","id":"n1",
                "reserved_at":"2025-11-30T05:12:09.042Z"}"#,
        )
        .unwrap();
        assert_eq!(confirmation.group.as_str(), "workers");
        assert_eq!(confirmation.id.as_str(), "n1");
        assert_eq!(confirmation.reserved_at, Some(Timestamp(1_764_479_529_042)));
        let any = action(r#"{"action":"drained","group":"workers","id":"n1"}"#).unwrap();
        assert_eq!(any.reserved_at, None);
    }

    #[test]
    fn a_slot_action_reads_whether_the_node_holds_or_waits() {
        use crate::domain::lock::Semaphore;
        let Action::Slot { group, id } =
            Action::parse(&serde_json::json!({"action": "slot", "group": "workers", "id": "n1"}))
                .unwrap()
        else {
            panic!("a slot action");
        };
        let n1 = NodeId::parse("n1").unwrap();
        let mut record = GroupRecord {
            holders: Semaphore::from_holders([(n1.clone(), Timestamp(5))]),
            ..GroupRecord::default()
        };
        let state = slot_state(&record, &group, &id);
        assert_eq!(
            (
                state["holds"].as_bool(),
                state["waiting_for_drain"].as_bool()
            ),
            (Some(true), Some(false))
        );
        record.draining.insert(n1, Timestamp(5));
        let state = slot_state(&record, &group, &id);
        assert_eq!(
            (
                state["holds"].as_bool(),
                state["waiting_for_drain"].as_bool()
            ),
            (Some(false), Some(true))
        );
        assert_eq!(state["reserved_at"], "1970-01-01T00:00:00.005Z");
        let state = slot_state(&GroupRecord::default(), &group, &id);
        assert_eq!(
            (
                state["holds"].as_bool(),
                state["waiting_for_drain"].as_bool()
            ),
            (Some(false), Some(false))
        );
        assert!(matches!(
            Action::parse(&serde_json::json!({"action": "drained", "group": "g", "id": "n"})),
            Ok(Action::Drained(_))
        ));
    }

    #[test]
    fn a_bad_action_is_refused_with_what_is_wrong() {
        for (text, says) in [
            ("[]", "not a JSON object"),
            (r#"{"group":"g","id":"n"}"#, "no string field \"action\""),
            (
                r#"{"action":"drain","group":"g","id":"n"}"#,
                "unknown action \"drain\"",
            ),
            (
                r#"{"action":"drained","id":"n"}"#,
                "no string field \"group\"",
            ),
            (r#"{"action":"drained","group":"a b","id":"n"}"#, "group"),
            (r#"{"action":"drained","group":"g","id":""}"#, "id"),
            (
                r#"{"action":"drained","group":"g","id":"n","reserved_at":"yesterday"}"#,
                "not a time",
            ),
            (
                r#"{"action":"drained","group":"g","id":"n","reserved_at":5}"#,
                "not a string",
            ),
        ] {
            let err = action(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn each_outcome_says_what_happened_and_whether_the_node_may_reboot() {
        let confirmation = action(r#"{"action":"drained","group":"workers","id":"n1"}"#).unwrap();
        let said = |outcome| Confirmed::of(outcome, &confirmation);
        assert!(said(Drained::Granted).done);
        assert!(
            said(Drained::Granted)
                .value
                .contains("reboots at its next request")
        );
        assert!(said(Drained::AlreadyGranted).done);
        for outcome in [
            Drained::NoReservation,
            Drained::OtherReservation {
                since: Timestamp(1_764_479_529_042),
            },
            Drained::Excluded,
            Drained::Paused,
        ] {
            let answer = said(outcome);
            assert!(!answer.done, "{answer:?}");
            assert!(answer.value.contains("'n1'"), "{answer:?}");
        }
        let other = said(Drained::OtherReservation {
            since: Timestamp(1_764_479_529_042),
        });
        assert!(
            other.value.contains("since 2025-11-30T05:12:09.042Z"),
            "{other:?}"
        );
        assert_eq!(
            said(Drained::Paused).to_json(&confirmation)["outcome"],
            "paused"
        );
    }
}
