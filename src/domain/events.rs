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

use crate::domain::input::GroupName;
use crate::domain::lock::{GroupRecord, Timestamp};

/// The `source` of every event this service sends.
pub const SOURCE: &str = "fleetlock";

/// One `detail-type` per kind of change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
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
    pub const ALL: [Kind; 10] = [
        Kind::SlotGranted,
        Kind::SlotDrainRequested,
        Kind::SlotReleased,
        Kind::SlotReturned,
        Kind::SlotReturnOverdue,
        Kind::SlotExpired,
        Kind::GroupPaused,
        Kind::GroupResumed,
        Kind::NodeExcluded,
        Kind::NodeIncluded,
    ];

    pub fn detail_type(self) -> &'static str {
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
pub struct Origin<'a> {
    /// The stream record's `eventID`: the same on every delivery of it.
    pub record_id: &'a str,
    /// The record's `SequenceNumber`: grows with every write to the group.
    pub sequence: &'a str,
    /// When DynamoDB wrote the record (`ApproximateCreationDateTime`).
    pub written_at: Timestamp,
}

/// One change of a group, ready to send.
#[derive(Clone, Debug, PartialEq)]
pub struct SlotEvent {
    pub kind: Kind,
    /// When the change happened, as precisely as the item says.
    pub at: Timestamp,
    pub detail: Value,
}

/// Every change from `old` to `new` (an absent item is `GroupRecord::default()`),
/// releases, returns (or the one expiry), slots that began returning and
/// returns overdue first, then resumes, then pauses, then inclusions and exclusions,
/// then grants, then drain requests; within a kind by node id or alarm name, so that a
/// redelivery produces the same list.
pub fn changes(
    group: &GroupName,
    old: &GroupRecord,
    new: &GroupRecord,
    origin: Origin<'_>,
) -> Vec<SlotEvent> {
    let after = After::of(group, old, new, origin);
    let mut events = Vec::new();

    // Only a take-over past a lease removes one holder and adds another in
    // one write, and records no release: the holder that left did not give
    // its slot back, it expired, and the one that arrived took it.
    let left: Vec<_> = old
        .holders
        .holders()
        .filter(|(id, _)| !new.holders.holds(id))
        .collect();
    let arrived: Vec<_> = new
        .holders
        .holders()
        .filter(|(id, _)| !old.holders.holds(id))
        .collect();
    let taken_over = new.last_release == old.last_release;
    if let ([(id, held_since)], [(taker, taken_at)], true) = (&left[..], &arrived[..], taken_over) {
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
            let fields = json!({
                "cause": "return_overdue",
                "id": stop.id.as_str(),
                "released_at": stop.returning_since.to_rfc3339_millis(),
            });
            events.push(after.event(kind, "return_overdue", at, fields));
        }
    }
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
            events.push(after.event(Kind::SlotDrainRequested, id.as_str(), since, fields));
        }
    }
    events
}

/// The fields every event shares: the group as it stands after the write.
struct After<'a> {
    group: &'a GroupName,
    holders: usize,
    holder_ids: Vec<&'a str>,
    slots: Option<u32>,
    paused: bool,
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
        if let (Value::Object(detail), Value::Object(fields)) = (&mut detail, fields) {
            detail.extend(fields);
        }
        SlotEvent { kind, at, detail }
    }
}

/// The same for every delivery of one change, different for any other: the
/// stream record's id, the kind of change and whom it concerns.
pub fn idempotency_key(record_id: &str, kind: Kind, subject: &str) -> String {
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
    pub detail_type: &'static str,
    pub detail: String,
    pub time: Timestamp,
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
    ) -> impl Future<Output = Result<Vec<Option<String>>, String>> + Send;
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::domain::input::{NodeId, PauseReason};
    use crate::domain::lock::{ByPerson, Pause, Semaphore};

    #[test]
    fn the_idempotency_key_consumers_dedupe_on_is_pinned() {
        // Computed apart from this code: python3 -c "import hashlib;
        // print(hashlib.sha256(b'rec-1\x00Slot Granted\x00node-a').hexdigest()[:32])"
        assert_eq!(
            idempotency_key("rec-1", Kind::SlotGranted, "node-a"),
            "d8d3c58144da3d0cb318686e79227eef"
        );
    }

    const ORIGIN: Origin<'static> = Origin {
        record_id: "rec-1",
        sequence: "100",
        written_at: Timestamp(5_000),
    };

    fn group(holders: &[(&str, u64)]) -> GroupRecord {
        GroupRecord {
            holders: Semaphore::from_holders(
                holders
                    .iter()
                    .map(|(id, at)| (NodeId::parse(id).unwrap(), Timestamp(*at))),
            ),
            slots: Some(2),
            ..GroupRecord::default()
        }
    }

    fn kinds(events: &[SlotEvent]) -> Vec<(Kind, String)> {
        events
            .iter()
            .map(|e| {
                let subject = e.detail["id"]
                    .as_str()
                    .or(e.detail["alarm"].as_str())
                    .or(e.detail["cause"].as_str())
                    .unwrap_or_default();
                (e.kind, subject.to_owned())
            })
            .collect()
    }

    fn workers() -> GroupName {
        GroupName::parse("workers").unwrap()
    }

    #[test]
    fn a_grant_is_dated_by_the_holder_and_counts_the_holders_after_it() {
        let events = changes(
            &workers(),
            &group(&[("a", 1_000)]),
            &group(&[("a", 1_000), ("b", 4_000)]),
            ORIGIN,
        );
        assert_eq!(kinds(&events), [(Kind::SlotGranted, "b".to_owned())]);
        let detail = &events[0].detail;
        assert_eq!(events[0].at, Timestamp(4_000));
        assert_eq!(detail["group"], "workers");
        assert_eq!(detail["at"], "1970-01-01T00:00:04.000Z");
        assert_eq!(detail["holders"], 2);
        assert_eq!(detail["holder_ids"], json!(["a", "b"]));
        assert_eq!(detail["slots"], 2);
        assert_eq!(detail["paused"], false);
        assert_eq!(detail["sequence"], "100");
    }

    #[test]
    fn a_renewal_of_a_lease_is_no_event() {
        let held = group(&[("a", 1_000)]);
        let mut renewed = held.clone();
        renewed
            .renewed
            .insert(NodeId::parse("a").unwrap(), Timestamp(9_000));
        assert!(changes(&workers(), &held, &renewed, ORIGIN).is_empty());
    }

    #[test]
    fn an_exclusion_and_an_inclusion_are_events_of_their_own() {
        let mut excluded = group(&[("a", 1_000)]);
        excluded.excluded.insert(
            NodeId::parse("sick").unwrap(),
            ByPerson {
                reason: PauseReason::parse("disk replacement").unwrap(),
                since: Timestamp(3_000),
                by: "alice".into(),
            },
        );
        let events = changes(&workers(), &group(&[("a", 1_000)]), &excluded, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::NodeExcluded, "sick".to_owned())]);
        assert_eq!(events[0].at, Timestamp(3_000), "dated by the exclusion");
        assert_eq!(events[0].detail["reason"], "disk replacement");
        assert_eq!(events[0].detail["by"], "alice");
        let events = changes(&workers(), &excluded, &group(&[("a", 1_000)]), ORIGIN);
        assert_eq!(kinds(&events), [(Kind::NodeIncluded, "sick".to_owned())]);
        assert_eq!(events[0].at, ORIGIN.written_at, "dated by the record");
        assert_eq!(Kind::NodeExcluded.detail_type(), "Node Excluded");
        assert_eq!(Kind::NodeIncluded.detail_type(), "Node Included");
    }

    #[test]
    fn a_release_is_dated_by_released_at_and_says_how_long_the_slot_was_held() {
        let mut after = group(&[]);
        after.last_release = Some(Timestamp(64_000));
        let events = changes(&workers(), &group(&[("a", 4_000)]), &after, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotReleased, "a".to_owned())]);
        assert_eq!(events[0].at, Timestamp(64_000));
        assert_eq!(events[0].detail["held_seconds"], 60);
        assert_eq!(events[0].detail["held_since"], "1970-01-01T00:00:04.000Z");
        assert_eq!(events[0].detail["holders"], 0);
    }

    #[test]
    fn a_slot_taken_past_its_lease_is_an_expiry_and_a_grant_not_a_release() {
        let before = group(&[("old", 1_000), ("b", 2_000)]);
        let after = group(&[("b", 2_000), ("new", 3_601_000)]);
        let events = changes(&workers(), &before, &after, ORIGIN);
        assert_eq!(
            kinds(&events),
            [
                (Kind::SlotExpired, "old".to_owned()),
                (Kind::SlotGranted, "new".to_owned())
            ]
        );
        let expired = &events[0];
        assert_eq!(expired.at, Timestamp(3_601_000), "dated by the take-over");
        assert_eq!(expired.detail["taken_by"], "new");
        assert_eq!(expired.detail["held_seconds"], 3_600);
        assert_eq!(expired.detail["held_since"], "1970-01-01T00:00:01.000Z");
        assert_eq!(expired.detail["holders"], 2);
        assert_eq!(Kind::SlotExpired.detail_type(), "Slot Expired");
        // A release and a grant are never one write; two holders leaving is
        // a deleted or rewritten item, released as before.
        let rewritten = changes(&workers(), &before, &group(&[("new", 5_000)]), ORIGIN);
        assert_eq!(
            kinds(&rewritten),
            [
                (Kind::SlotReleased, "b".to_owned()),
                (Kind::SlotReleased, "old".to_owned()),
                (Kind::SlotGranted, "new".to_owned())
            ]
        );
    }

    fn reserved(mut group: GroupRecord, ids: &[(&str, u64)]) -> GroupRecord {
        for (id, at) in ids {
            group
                .draining
                .insert(NodeId::parse(id).unwrap(), Timestamp(*at));
        }
        group
    }

    #[test]
    fn a_reservation_is_a_drain_request_its_confirmation_the_grant_and_its_end_a_release() {
        let before = group(&[("a", 1_000)]);
        let asked = reserved(group(&[("a", 1_000), ("b", 4_000)]), &[("b", 4_000)]);
        let events = changes(&workers(), &before, &asked, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotDrainRequested, "b".to_owned())]);
        assert_eq!(events[0].detail["reserved_at"], "1970-01-01T00:00:04.000Z");
        assert_eq!(events[0].detail["holders"], 2, "the reservation counts");
        assert_eq!(
            Kind::SlotDrainRequested.detail_type(),
            "Slot Drain Requested"
        );

        let confirmed = group(&[("a", 1_000), ("b", 64_000)]);
        let events = changes(&workers(), &asked, &confirmed, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotGranted, "b".to_owned())]);
        assert_eq!(events[0].at, Timestamp(64_000), "dated by the confirmation");
        assert_eq!(events[0].detail["waited_seconds"], 60);

        let mut ended = group(&[("a", 1_000)]);
        ended.last_release = Some(Timestamp(9_000));
        let events = changes(&workers(), &asked, &ended, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotReleased, "b".to_owned())]);
        assert_eq!(events[0].detail["reserved"], true, "the undrain signal");
        let released = changes(&workers(), &confirmed, &ended, ORIGIN);
        assert_eq!(released[0].detail.get("reserved"), None);
    }

    #[test]
    fn a_return_is_a_release_that_says_returning_then_a_returned_or_an_overdue_stop() {
        let held = group(&[("a", 1_000)]);
        let mut back = held.clone();
        back.returning
            .insert(NodeId::parse("a").unwrap(), Timestamp(61_000));
        let events = changes(&workers(), &held, &back, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotReleased, "a".to_owned())]);
        assert_eq!(events[0].detail["returning"], true);
        assert_eq!(events[0].detail["held_seconds"], 60);
        assert_eq!(events[0].detail["holders"], 1, "the returning slot counts");
        assert_eq!(events[0].at, Timestamp(61_000));
        // A repeated steady-state writes nothing new: no event.
        assert!(changes(&workers(), &back, &back.clone(), ORIGIN).is_empty());

        let mut stopped = back.clone();
        stopped
            .returns_failed
            .insert(NodeId::parse("a").unwrap(), Timestamp(61_000));
        stopped.pause.stop = Some(crate::domain::lock::RolloutStop {
            id: NodeId::parse("a").unwrap(),
            returning_since: Timestamp(61_000),
            at: Timestamp(1_261_000),
        });
        let events = changes(&workers(), &back, &stopped, ORIGIN);
        assert_eq!(
            kinds(&events),
            [
                (Kind::SlotReturnOverdue, "a".to_owned()),
                (Kind::GroupPaused, "a".to_owned())
            ]
        );
        assert_eq!(events[1].detail["cause"], "return_overdue");
        assert_eq!(events[1].detail["paused"], true);
        assert_eq!(events[1].at, Timestamp(1_261_000));

        let mut freed = group(&[]);
        freed.last_release = Some(Timestamp(121_000));
        let events = changes(&workers(), &back, &freed, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::SlotReturned, "a".to_owned())]);
        assert_eq!(events[0].detail["returning_seconds"], 60);
        assert_eq!(events[0].detail["released_at"], "1970-01-01T00:01:01.000Z");
        assert_eq!(Kind::SlotReturned.detail_type(), "Slot Returned");
    }

    #[test]
    fn a_take_over_behind_a_drain_gate_expires_the_old_slot_and_requests_a_drain() {
        let old = group(&[("old", 1_000), ("b", 2_000)]);
        let new = reserved(group(&[("new", 9_000), ("b", 2_000)]), &[("new", 9_000)]);
        let events = changes(&workers(), &old, &new, ORIGIN);
        assert_eq!(
            kinds(&events),
            [
                (Kind::SlotExpired, "old".to_owned()),
                (Kind::SlotDrainRequested, "new".to_owned())
            ]
        );
    }

    #[test]
    fn a_deleted_item_releases_every_holder_at_the_record_time() {
        let events = changes(
            &workers(),
            &group(&[("a", 1_000), ("b", 2_000)]),
            &GroupRecord::default(),
            ORIGIN,
        );
        assert_eq!(
            kinds(&events),
            [
                (Kind::SlotReleased, "a".to_owned()),
                (Kind::SlotReleased, "b".to_owned())
            ]
        );
        assert!(events.iter().all(|e| e.at == ORIGIN.written_at));
        // The last slot count known stays the group's.
        assert_eq!(events[0].detail["slots"], 2);
    }

    #[test]
    fn pauses_and_resumes_by_a_person_and_by_alarms() {
        let person = ByPerson {
            reason: PauseReason::parse("kernel regression").unwrap(),
            since: Timestamp(3_000),
            by: "ana".into(),
        };
        let mut paused = group(&[]);
        paused.pause = Pause {
            person: Some(person),
            alarms: BTreeSet::from(["api-errors".to_owned()]),
            stop: None,
        };
        let events = changes(&workers(), &group(&[]), &paused, ORIGIN);
        assert_eq!(
            kinds(&events),
            [
                (Kind::GroupPaused, "person".to_owned()),
                (Kind::GroupPaused, "api-errors".to_owned())
            ]
        );
        assert_eq!(events[0].detail["reason"], "kernel regression");
        assert_eq!(events[0].detail["by"], "ana");
        assert_eq!(events[0].at, Timestamp(3_000));
        assert_eq!(events[1].detail["cause"], "alarm");
        assert_eq!(events[1].detail["paused"], true);

        // The person resumes; the alarm's pause stays.
        let mut alarm_only = paused.clone();
        alarm_only.pause.person = None;
        let events = changes(&workers(), &paused, &alarm_only, ORIGIN);
        assert_eq!(kinds(&events), [(Kind::GroupResumed, "person".to_owned())]);
        assert_eq!(events[0].detail["paused"], true);
        assert_eq!(events[0].detail["by"], "ana");

        let events = changes(&workers(), &alarm_only, &group(&[]), ORIGIN);
        assert_eq!(
            kinds(&events),
            [(Kind::GroupResumed, "api-errors".to_owned())]
        );
        assert_eq!(events[0].detail["paused"], false);
    }

    #[test]
    fn nothing_changed_is_no_event() {
        let same = group(&[("a", 1_000)]);
        assert!(changes(&workers(), &same, &same, ORIGIN).is_empty());
    }

    #[test]
    fn the_key_is_the_same_for_a_redelivery_and_differs_for_anything_else() {
        let key = idempotency_key("rec-1", Kind::SlotGranted, "a");
        assert_eq!(key, idempotency_key("rec-1", Kind::SlotGranted, "a"));
        assert_eq!(key.len(), 32);
        for other in [
            idempotency_key("rec-2", Kind::SlotGranted, "a"),
            idempotency_key("rec-1", Kind::SlotReleased, "a"),
            idempotency_key("rec-1", Kind::SlotGranted, "b"),
        ] {
            assert_ne!(key, other);
        }
        let events = changes(&workers(), &group(&[]), &group(&[("a", 1)]), ORIGIN);
        assert_eq!(events[0].detail["idempotency_key"], key);
    }
}
