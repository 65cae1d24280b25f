//! What a node hears of a decision: the rules' outcome turned, in one
//! place, into the outcome word the log line and the metric carry and, for a
//! decision that grants nothing, the refusal (kind, status and the sentence
//! Zincati writes in the node's journal; see [`Error`]). Each gate words its
//! own refusal in its file (`lock::<gate>::refusal`); `refusal_heard` is the
//! one arm per refusal that asks it.

use std::time::Duration;

use crate::domain::error::Error;
use crate::domain::input::{ClientParams, NodeId};
use crate::domain::lock;
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{Acquire, GroupRules, Refusal, Release};
use crate::domain::time::Timestamp;
use crate::domain::time::format_duration;

mod drain;
mod returns;

pub use drain::drains_overdue;
use drain::{log_drain_timed_out, reserved};
pub use returns::{Returns, returns};

/// What happened to the node's slot: the word the log line and the metric
/// carry (`Outcome`). A decision that grants nothing is [`Outcome::Refused`],
/// with the gate's refusal; the sentence the node hears of it is in
/// [`Answer::refusal`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node took a slot.
    Granted(Grant),
    /// Granted the slot of a holder past the group's lease, in its place.
    TakenOver,
    /// A slot was reserved for the node, which waits for its drain: refused
    /// at the edge (`waiting_for_drain`), never a 2xx before the drain.
    Reserved,
    /// The node held its slot already, and keeps it.
    Held,
    /// A steady-state: the node's slot was freed (`held`), or it held none.
    Released { held: bool },
    /// In a group with a return gate: the steady-state left the slot
    /// counted as returning until the node's return is confirmed; `already`
    /// where it was returning before, and nothing changed.
    Returning { already: bool },
    /// The node took no slot, for the gate's reason: refused at the edge.
    Refused(Refusal),
}

/// How a node took its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// A free slot.
    Free,
    /// Its reserved slot waited past the drain timeout, and the group
    /// grants on timeout: granted undrained.
    DrainTimedOut,
}

impl Outcome {
    pub fn as_str(&self) -> &'static str {
        match self {
            Outcome::Granted(Grant::Free) => "granted",
            Outcome::Granted(Grant::DrainTimedOut) => "granted_drain_timeout",
            Outcome::TakenOver => "granted_expired",
            Outcome::Reserved => "reserved",
            Outcome::Held => "already_held",
            Outcome::Released { held: true } => "released",
            Outcome::Released { held: false } => "not_held",
            Outcome::Returning { already: false } => "returning",
            Outcome::Returning { already: true } => "still_returning",
            Outcome::Refused(refusal) => refusal.word(),
        }
    }
}

/// A decision, with the group as it stands after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub outcome: Outcome,
    pub(crate) holders: usize,
    pub(crate) slots: u32,
    /// How long the longest holder has kept its slot: a stuck node shows here.
    pub(crate) oldest_holder_age: Option<Duration>,
    /// For a decision that grants nothing (full, paused, settling): the
    /// refusal Zincati hears, non-2xx with its own kind.
    pub refusal: Option<Error>,
    /// For [`Outcome::TakenOver`] (and a [`Outcome::Reserved`] that
    /// took an expired slot): whose slot it was, and how long it had been
    /// held.
    pub expired: Option<ExpiredSlot>,
    /// In a group with a drain gate: how many of its reservations waited
    /// past their drain timeout, after this decision (what the alarm on
    /// drains nobody confirmed reads). `None` in a group without one.
    pub(crate) drains_overdue: Option<usize>,
    /// For a pre-reboot in a group with a lease: how long the lease of a
    /// slot held now runs (from this answer, for a holder that renewed).
    pub(crate) lease: Option<Duration>,
    /// In a group with a return gate: its returning slots after this
    /// decision. `None` in a group without one.
    pub(crate) returns: Option<Returns>,
}

impl Answer {
    /// What the node hears: a 2xx with this answer, or its refusal (a
    /// decision that grants nothing is answered as a refusal, with the group
    /// as it stands for the log line and the metric).
    pub(crate) fn heard(&self) -> Result<&Answer, Error> {
        match &self.refusal {
            Some(refusal) => Err(refusal.clone()),
            None => Ok(self),
        }
    }
}

/// A slot that passed from a holder past its lease to the node that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiredSlot {
    pub holder: NodeId,
    pub(crate) held: Duration,
}

/// What the node hears of the rules' answer to its pre-reboot, `group` as
/// the decision left it.
pub(super) fn to_pre_reboot(
    params: &ClientParams,
    rules: GroupRules,
    now: Timestamp,
    outcome: Acquire,
    group: GroupRecord,
) -> Answer {
    let mut expired = None;
    let (outcome, refusal) = match outcome {
        Acquire::Granted => (Outcome::Granted(Grant::Free), None),
        Acquire::TakesExpired { holder, since } => {
            let held = since.age_at(now);
            log_expired(params, rules, &holder, held);
            expired = Some(ExpiredSlot { holder, held });
            match group.draining.get(&params.id) {
                // In a group with a drain gate the slot is reserved.
                Some(&since) => reserved(params, rules, since),
                None => (Outcome::TakenOver, None),
            }
        }
        Acquire::Reserves => reserved(
            params,
            rules,
            group.draining.get(&params.id).copied().unwrap_or(now),
        ),
        Acquire::DrainTimedOut { since } => {
            log_drain_timed_out(params, since.age_at(now));
            (Outcome::Granted(Grant::DrainTimedOut), None)
        }
        Acquire::AlreadyHeld => (Outcome::Held, None),
        Acquire::Refused(refusal) => {
            let heard = refusal_heard(params, rules, &group, &refusal);
            (Outcome::Refused(refusal), Some(heard))
        }
    };
    Answer {
        expired,
        drains_overdue: drains_overdue(&group, rules, now),
        returns: returns(&group, rules, now),
        lease: rules.lease,
        ..answer(outcome, &group, rules.slots, now, refusal)
    }
}

/// The sentence a node hears of a gate's refusal, with the group as the
/// decision left it (who holds the slots, who paused it and why).
fn refusal_heard(
    params: &ClientParams,
    rules: GroupRules,
    group: &GroupRecord,
    refusal: &Refusal,
) -> Error {
    match refusal {
        Refusal::Full => full(params, rules, group),
        Refusal::Paused => lock::pause::refusal(params, group),
        Refusal::Excluded => lock::exclusion::refusal(params, group),
        Refusal::Settling { until } => lock::settle::refusal(params, rules, *until),
        Refusal::Draining { since, overdue, .. } => {
            lock::drain::refusal(params, rules, *since, false, *overdue)
        }
        Refusal::WindowTooShort { closes } => lock::drain::window_closing(params, rules, *closes),
        Refusal::Returning {
            since,
            until,
            overdue,
        } => lock::returns::refusal(params, *since, *until, *overdue),
        Refusal::OtherZone { zone } => lock::zones::refusal(params, rules, zone),
        Refusal::WaveOut { wave } => lock::canary::refusal(params, rules, *wave, None),
        Refusal::Baking { wave, until } => {
            lock::canary::refusal(params, rules, *wave, Some(*until))
        }
        // Not a gate's: the store's limit on groups only `*` covers.
        Refusal::TooManyGroups { limit } => Error::TooManyGroups {
            group: params.group.to_string(),
            limit: *limit,
        },
    }
}

/// The one decision that takes a slot from a node: the operator finds it in
/// the log, as the event's consumers do.
fn log_expired(params: &ClientParams, rules: GroupRules, holder: &NodeId, held: Duration) {
    tracing::warn!(
        group = %params.group,
        id = %params.id.shown(),
        expired = %holder.shown(),
        held_s = held.as_secs(),
        lease = %rules.lease.map(format_duration).unwrap_or_default(),
        "slot expired: a holder kept its slot past the group's lease, and the \
         node that asked took it"
    );
}

/// The refusal of a full group: a node whose slot was taken over hears
/// so (it was told yes, and must learn that it holds nothing now); any
/// other, who holds the slots.
fn full(params: &ClientParams, rules: GroupRules, group: &GroupRecord) -> Error {
    let name = params.group.to_string();
    match group.taken.get(&params.id) {
        Some(taken_at) => Error::SlotTaken {
            group: name,
            id: params.id.shown(),
            taken_at: taken_at.to_rfc3339(),
            lease: rules.lease.map(format_duration),
        },
        None => Error::SemaphoreFull {
            group: name,
            holders: group.holders.len(),
            slots: rules.slots,
            lease_ends: lease_ends(group, rules),
        },
    }
}

/// What the node hears of the rules' answer to its steady-state.
pub(super) fn to_steady_state(
    params: &ClientParams,
    rules: GroupRules,
    now: Timestamp,
    outcome: Release,
    group: GroupRecord,
) -> Answer {
    let outcome = match outcome {
        Release::Released => Outcome::Released { held: true },
        Release::NotHeld => Outcome::Released { held: false },
        Release::Returning => {
            tracing::info!(
                group = %params.group,
                id = %params.id.shown(),
                "slot returning: it counts until the node's return is confirmed"
            );
            Outcome::Returning { already: false }
        }
        Release::StillReturning => Outcome::Returning { already: true },
    };
    Answer {
        drains_overdue: drains_overdue(&group, rules, now),
        returns: returns(&group, rules, now),
        ..answer(outcome, &group, rules.slots, now, None)
    }
}

/// When a full group's longest-held slot may change hands, with its lease:
/// only with a lease, and not while the group holds more than its slots.
fn lease_ends(group: &GroupRecord, rules: GroupRules) -> Option<(String, String)> {
    let lease = rules.lease?;
    let (_, _, start) = group.longest_leased(rules.slots)?;
    Some((start.plus(lease).to_rfc3339(), format_duration(lease)))
}

fn answer(
    outcome: Outcome,
    group: &GroupRecord,
    slots: u32,
    now: Timestamp,
    refusal: Option<Error>,
) -> Answer {
    Answer {
        outcome,
        holders: group.holders.len(),
        slots,
        oldest_holder_age: group.holders.oldest().map(|(_, at)| at.age_at(now)),
        refusal,
        expired: None,
        drains_overdue: None,
        lease: None,
        returns: None,
    }
}
