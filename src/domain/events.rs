//! Slot events: what changed in a group between two stored states, as the
//! events its consumers hear (a node took or gave back a slot, a group was
//! paused or resumed). Pure: the stream adapter ([`crate::entry::slot_events`]) reads the
//! states from the table's stream and sends what this returns.
//!
//! The item holds no event data of its own: every field comes from the state
//! before and after one write, so the protocol's write stays as small as it is.

use std::future::Future;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{GroupRecord, StopCause};
use crate::domain::time::Timestamp;

/// The `source` of every event this service sends.
pub(crate) const SOURCE: &str = "fleetlock";

/// One `detail-type` per kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    SlotReleased,
    SlotReturned,
    SlotExpired,
    SlotReturnOverdue,
    GroupResumed,
    NodeIncluded,
    GroupPaused,
    NodeExcluded,
    SlotGranted,
    SlotDrainRequested,
}

impl Kind {
    pub(crate) fn detail_type(self) -> &'static str {
        match self {
            Kind::SlotGranted => "Slot Granted",
            Kind::SlotDrainRequested => "Slot Drain Requested",
            Kind::SlotReleased => "Slot Released",
            Kind::SlotReturned => "Slot Returned",
            Kind::SlotReturnOverdue => "Slot Return Overdue",
            Kind::SlotExpired => "Slot Expired",
            Kind::GroupPaused => "Group Paused",
            Kind::GroupResumed => "Group Resumed",
            Kind::NodeExcluded => "Node Excluded",
            Kind::NodeIncluded => "Node Included",
        }
    }
}

/// The stream record that carried a change: what makes a redelivery
/// recognisable and what dates a change the item does not date itself.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Origin<'a> {
    /// The stream record's `eventID`: the same on every delivery of it.
    pub(crate) record_id: &'a str,
    /// The record's `SequenceNumber`: grows with every write to the group.
    pub(crate) sequence: &'a str,
    /// When DynamoDB wrote the record (`ApproximateCreationDateTime`).
    pub(crate) written_at: Timestamp,
}

/// One change of a group, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SlotEvent {
    pub(crate) kind: Kind,
    /// When the change happened, as precisely as the item says.
    pub(crate) at: Timestamp,
    pub(crate) detail: Value,
}

/// Every change from `old` to `new` (an absent item is `GroupRecord::default()`),
/// releases, returns (or the one expiry), slots that began returning and
/// returns overdue first, then resumes, then pauses, then inclusions and exclusions,
/// then grants, then drain requests; within a kind by node id or alarm name, so that a
/// redelivery produces the same list.
pub(crate) fn changes(
    group: &GroupName,
    old: &GroupRecord,
    new: &GroupRecord,
    origin: Origin<'_>,
) -> Vec<SlotEvent> {
    let after = After::of(group, old, new, origin);
    let mut events = Vec::new();
    let arrived: Vec<_> = new
        .holders
        .holders()
        .filter(|(id, _)| !old.holders.holds(id))
        .collect();
    slots_left(&after, old, new, &arrived, &mut events);
    returns_begun(&after, old, new, &mut events);
    returns_overdue(&after, old, new, &mut events);
    pauses_and_resumes(&after, old, new, &mut events);
    exclusions(&after, old, new, &mut events);
    grants(&after, old, new, &arrived, &mut events);
    events
}

/// Slots given back, released by hand, ended in a return, or taken over.
fn slots_left(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    arrived: &[(&NodeId, Timestamp)],
    events: &mut Vec<SlotEvent>,
) {
    let origin = after.origin;
    // Only a take-over past a lease removes one holder and adds another in
    // one write, and records no release: the holder that left did not give
    // its slot back, it expired, and the one that arrived took it.
    let left: Vec<_> = old
        .holders
        .holders()
        .filter(|(id, _)| !new.holders.holds(id))
        .collect();
    let taken_over = new.last_release == old.last_release;
    if let ([(id, held_since)], [(taker, taken_at)], true) = (&left[..], arrived, taken_over) {
        let fields = json!({
            "id": id.as_str(),
            "held_since": held_since.to_rfc3339_millis(),
            "held_seconds": held_since.age_at(*taken_at).as_secs(),
            "taken_by": taker.as_str(),
        });
        events.push(after.event(Kind::SlotExpired, id.as_str(), *taken_at, fields));
    } else {
        for (id, held_since) in &left {
            // A release writes `released_at`; a deleted item has none.
            let at = new
                .last_release
                .filter(|&at| Some(at) != old.last_release)
                .unwrap_or(origin.written_at);
            let mut fields = json!({
                "id": id.as_str(),
                "held_since": held_since.to_rfc3339_millis(),
                "held_seconds": held_since.age_at(at).as_secs(),
            });
            // A reservation that ended before its drain was confirmed: the
            // node did not reboot, and a hook that drained it undrains it.
            if old.draining.contains_key(*id) {
                fields["reserved"] = true.into();
            }
            // A returning slot that left: its return was confirmed (or a
            // person released it).
            let kind = match old.returning.get(*id) {
                Some(since) => {
                    fields["released_at"] = since.to_rfc3339_millis().into();
                    fields["returning_seconds"] = since.age_at(at).as_secs().into();
                    Kind::SlotReturned
                }
                None => Kind::SlotReleased,
            };
            events.push(after.event(kind, id.as_str(), at, fields));
        }
    }
}

fn returns_begun(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    events: &mut Vec<SlotEvent>,
) {
    // A steady-state behind a return gate: the slot is given back but
    // still counts, returning, until the node is confirmed back in service.
    for (id, since) in &new.returning {
        if old.returning.contains_key(id) || !old.holders.holds(id) {
            continue;
        }
        let held_since = new.holders.held_since(id).unwrap_or(*since);
        let mut fields = json!({
            "id": id.as_str(),
            "held_since": held_since.to_rfc3339_millis(),
            "held_seconds": held_since.age_at(*since).as_secs(),
            "returning": true,
        });
        if old.draining.contains_key(id) {
            fields["reserved"] = true.into();
        }
        events.push(after.event(Kind::SlotReleased, id.as_str(), *since, fields));
    }
}

fn returns_overdue(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    events: &mut Vec<SlotEvent>,
) {
    let origin = after.origin;
    // Returns that passed their timeout, as the sweep judged them.
    for (id, since) in &new.returns_failed {
        if old.returns_failed.get(id) != Some(since) {
            let fields = json!({
                "id": id.as_str(),
                "released_at": since.to_rfc3339_millis(),
                "returning_seconds": since.age_at(origin.written_at).as_secs(),
            });
            events.push(after.event(
                Kind::SlotReturnOverdue,
                id.as_str(),
                origin.written_at,
                fields,
            ));
        }
    }
}

fn pauses_and_resumes(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    events: &mut Vec<SlotEvent>,
) {
    let origin = after.origin;
    // Resumes (a pause in `old` gone from `new`), then pauses (the reverse).
    for (kind, has, lacks) in [
        (Kind::GroupResumed, &old.pause, &new.pause),
        (Kind::GroupPaused, &new.pause, &old.pause),
    ] {
        if let Some(pause) = has.person.as_ref().filter(|_| lacks.person.is_none()) {
            // A person's pause is dated by its own `since`; a resume, by the record.
            let at = match kind {
                Kind::GroupPaused => pause.since,
                _ => origin.written_at,
            };
            let fields =
                json!({ "cause": "person", "reason": pause.reason.as_str(), "by": pause.by });
            events.push(after.event(kind, "person", at, fields));
        }
        for alarm in has.alarms.difference(&lacks.alarms) {
            let fields = json!({ "cause": "alarm", "alarm": alarm });
            events.push(after.event(kind, &format!("alarm:{alarm}"), origin.written_at, fields));
        }
        if let Some(stop) = has.stop.as_ref().filter(|_| lacks.stop.is_none()) {
            let at = match kind {
                Kind::GroupPaused => stop.at,
                _ => origin.written_at,
            };
            let (cause, fields) = match stop.cause {
                StopCause::Return => (
                    "return_overdue",
                    json!({
                        "cause": "return_overdue",
                        "id": stop.id.as_str(),
                        "released_at": stop.returning_since.to_rfc3339_millis(),
                    }),
                ),
                StopCause::Wave => (
                    "wave_overdue",
                    json!({
                        "cause": "wave_overdue",
                        "id": stop.id.as_str(),
                        "granted_at": stop.returning_since.to_rfc3339_millis(),
                    }),
                ),
            };
            events.push(after.event(kind, cause, at, fields));
        }
    }
}

fn exclusions(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    events: &mut Vec<SlotEvent>,
) {
    let origin = after.origin;
    // Inclusions (an exclusion in `old` gone from `new`), then exclusions.
    for (id, exclusion) in &old.excluded {
        if !new.excluded.contains_key(id) {
            let fields =
                json!({ "id": id.as_str(), "excluded_since": exclusion.since.to_rfc3339_millis() });
            events.push(after.event(Kind::NodeIncluded, id.as_str(), origin.written_at, fields));
        }
    }
    for (id, exclusion) in &new.excluded {
        if !old.excluded.contains_key(id) {
            let fields = json!({
                "id": id.as_str(),
                "reason": exclusion.reason.as_str(),
                "by": exclusion.by,
            });
            events.push(after.event(Kind::NodeExcluded, id.as_str(), exclusion.since, fields));
        }
    }
}

fn grants(
    after: &After<'_>,
    old: &GroupRecord,
    new: &GroupRecord,
    arrived: &[(&NodeId, Timestamp)],
    events: &mut Vec<SlotEvent>,
) {
    let origin = after.origin;
    // Grants: a node that took a free slot, and a reservation confirmed
    // (or granted on its timeout), which the item dates anew.
    let confirmed = old.draining.keys().filter(|id| {
        !new.draining.contains_key(*id) && new.holders.holds(id) && old.holders.holds(id)
    });
    let mut granted: Vec<_> = arrived
        .iter()
        .filter(|(id, _)| !new.draining.contains_key(*id))
        .map(|(id, since)| (*id, *since, None))
        .chain(confirmed.map(|id| {
            let at = new.holders.held_since(id).unwrap_or(origin.written_at);
            (id, at, old.draining.get(id).copied())
        }))
        .collect();
    granted.sort_by(|a, b| a.0.cmp(b.0));
    for (id, since, reserved) in granted {
        let mut fields = json!({ "id": id.as_str() });
        if let Some(reserved) = reserved {
            fields["reserved_at"] = reserved.to_rfc3339_millis().into();
            fields["waited_seconds"] = reserved.age_at(since).as_secs().into();
        }
        events.push(after.event(Kind::SlotGranted, id.as_str(), since, fields));
    }
    for (id, since) in arrived {
        if new.draining.contains_key(id) {
            let fields = json!({
                "id": id.as_str(),
                "reserved_at": since.to_rfc3339_millis(),
            });
            events.push(after.event(Kind::SlotDrainRequested, id.as_str(), *since, fields));
        }
    }
}

/// The fields every event shares: the group as it stands after the write.
struct After<'a> {
    group: &'a GroupName,
    holders: usize,
    holder_ids: Vec<&'a str>,
    slots: Option<u32>,
    paused: bool,
    /// In a group split by zone: the zone group out after the write.
    zone_out: Option<&'a str>,
    /// In a group with a canary: the rollout's grants after the write.
    rollout_grants: Option<u32>,
    origin: Origin<'a>,
}

impl<'a> After<'a> {
    fn of(
        group: &'a GroupName,
        old: &GroupRecord,
        new: &'a GroupRecord,
        origin: Origin<'a>,
    ) -> Self {
        Self {
            group,
            holders: new.holders.len(),
            holder_ids: new.holders.holders().map(|(id, _)| id.as_str()).collect(),
            // A deleted item has no slot count left; the last one known is
            // still the group's.
            slots: new.slots.or(old.slots),
            paused: new.pause.is_paused(),
            zone_out: new.zone_out(),
            rollout_grants: new.wave_grants,
            origin,
        }
    }

    fn event(&self, kind: Kind, subject: &str, at: Timestamp, fields: Value) -> SlotEvent {
        let mut detail = json!({
            "group": self.group.as_str(),
            "at": at.to_rfc3339_millis(),
            "holders": self.holders,
            "holder_ids": self.holder_ids,
            "slots": self.slots,
            "paused": self.paused,
            "sequence": self.origin.sequence,
            "idempotency_key": idempotency_key(self.origin.record_id, kind, subject),
        });
        // Named only where the group is split by zone or has a canary, so
        // that a consumer of other groups sees the events it always saw.
        if let Some(zone) = self.zone_out {
            detail["zone_out"] = zone.into();
        }
        if let Some(grants) = self.rollout_grants {
            detail["rollout_grants"] = grants.into();
        }
        if let (Value::Object(detail), Value::Object(fields)) = (&mut detail, fields) {
            detail.extend(fields);
        }
        SlotEvent { kind, at, detail }
    }
}

/// The same for every delivery of one change, different for any other: the
/// stream record's id, the kind of change and whom it concerns.
pub(crate) fn idempotency_key(record_id: &str, kind: Kind, subject: &str) -> String {
    let digest = Sha256::new()
        .chain_update(record_id.as_bytes())
        .chain_update([0])
        .chain_update(kind.detail_type().as_bytes())
        .chain_update([0])
        .chain_update(subject.as_bytes())
        .finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// One event to put.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    pub(crate) detail_type: &'static str,
    pub(crate) detail: String,
    pub(crate) time: Timestamp,
}

impl From<&SlotEvent> for Outgoing {
    fn from(event: &SlotEvent) -> Self {
        Self {
            detail_type: event.kind.detail_type(),
            detail: event.detail.to_string(),
            time: event.at,
        }
    }
}

/// Where events go: EventBridge in production. `put` answers, entry by entry,
/// the error of each one that failed; `Err` when the call as a whole failed.
pub trait EventSink: Send + Sync + 'static {
    fn put(
        &self,
        entries: &[Outgoing],
    ) -> impl Future<Output = Result<Vec<Option<String>>, PutFailed>> + Send;
}

/// A put failed as a whole (no entry's answer): the sink says why in its
/// own words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PutFailed(pub String);

#[cfg(test)]
mod tests;
