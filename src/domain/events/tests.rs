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
        cause: Default::default(),
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

#[test]
fn a_grant_names_the_zone_out_and_the_rollouts_count_and_a_waves_stop_its_cause() {
    let mut before = group(&[]);
    before.wave_grants = Some(1);
    let mut after = group(&[("a", 4_000)]);
    after.zone = Some("workers.us-east-1a".into());
    after.wave_grants = Some(2);
    let events = changes(&workers(), &before, &after, ORIGIN);
    assert_eq!(kinds(&events), [(Kind::SlotGranted, "a".to_owned())]);
    assert_eq!(events[0].detail["zone_out"], "workers.us-east-1a");
    assert_eq!(events[0].detail["rollout_grants"], 2);
    // A group with neither: the event has the shape it always had.
    let plain = changes(&workers(), &group(&[]), &group(&[("a", 4_000)]), ORIGIN);
    assert!(plain[0].detail.get("zone_out").is_none());
    assert!(plain[0].detail.get("rollout_grants").is_none());

    let mut stopped = after.clone();
    stopped.pause.stop = Some(crate::domain::lock::RolloutStop {
        id: NodeId::parse("a").unwrap(),
        returning_since: Timestamp(4_000),
        at: Timestamp(3_604_000),
        cause: crate::domain::lock::StopCause::Wave,
    });
    let events = changes(&workers(), &after, &stopped, ORIGIN);
    let paused: Vec<_> = events
        .iter()
        .filter(|e| e.kind == Kind::GroupPaused)
        .collect();
    assert_eq!(paused.len(), 1, "{events:?}");
    assert_eq!(paused[0].detail["cause"], "wave_overdue");
    assert_eq!(paused[0].detail["granted_at"], "1970-01-01T00:00:04.000Z");
}
