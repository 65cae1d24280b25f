//! Leases: a holder past its group's lease loses its slot only to a node
//! that asks while the group is full. On both stores through the store API,
//! on DynamoDB Local with the requests counted and in a race, and over HTTP
//! as Zincati calls. The clock is moved, never slept.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use fleetlock::domain::input::PauseReason;
use fleetlock::domain::lock::GroupRecord;
use fleetlock::domain::lock::{Acquire, ByPerson, GroupRules, Refusal, Release};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, id, raw_item, stored, take};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const LEASE: Duration = Duration::from_secs(6 * 3600);

fn leased(slots: u32) -> GroupRules {
    GroupRules {
        slots,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: Some(LEASE),
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

fn held_by(record: &GroupRecord) -> Vec<(String, u64)> {
    record
        .holders
        .holders()
        .map(|(id, at)| (id.as_str().to_owned(), at.0))
        .collect()
}

fn expired(holder: &str, since: Timestamp) -> Acquire {
    Acquire::TakesExpired {
        holder: id(holder),
        since,
    }
}

/// The same checks on every store: who takes an expired slot, when, and
/// what the node that lost it hears afterwards.
async fn a_slot_past_its_lease_goes_to_the_next_asker<S: LockStore>(store: &S) {
    let g = group("workers");
    let two = leased(2);
    assert_eq!(take(store, &g, "gone", two, T0).await, Acquire::Granted);
    let later = T0.plus(Duration::from_secs(3600));
    assert_eq!(take(store, &g, "young", two, later).await, Acquire::Granted);

    // A millisecond short of the lease: full, like any full group.
    let almost = T0.plus(LEASE).minus(Duration::from_millis(1));
    assert_eq!(
        take(store, &g, "asker", two, almost).await,
        Acquire::Refused(Refusal::Full)
    );
    // Without a lease, held until given back, however old.
    let much_later = T0.plus(LEASE * 3);
    let no_lease = GroupRules { lease: None, ..two };
    assert_eq!(
        take(store, &g, "asker", no_lease, much_later).await,
        Acquire::Refused(Refusal::Full)
    );

    let at = T0.plus(LEASE);
    assert_eq!(
        take(store, &g, "asker", two, at).await,
        expired("gone", T0),
        "the oldest holder, past its lease"
    );
    let record = stored(store, &g).await;
    assert_eq!(
        held_by(&record),
        [("asker".into(), at.0), ("young".into(), later.0)],
        "one holder for another, the count unchanged"
    );
    assert_eq!(record.slots, Some(2));
    // The asker asking again holds; the node that lost the slot hears a
    // plain "held nothing" for its steady-state, and its next pre-reboot
    // is a newcomer's.
    assert_eq!(
        take(store, &g, "asker", two, at).await,
        Acquire::AlreadyHeld
    );
    let released = store.release(&g, &id("gone"), false, at).await.unwrap();
    assert_eq!(released.outcome, Release::NotHeld);
    assert_eq!(
        take(store, &g, "gone", two, at).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(held_by(&stored(store, &g).await).len(), 2);
}

/// Every other refusal wins over a slot past its lease, on every store:
/// nothing is taken over while paused, settling, or for an excluded asker.
async fn other_refusals_win_over_an_expired_slot<S: LockStore>(store: &S) {
    let g = group("db");
    let one = leased(1);
    assert_eq!(take(store, &g, "stuck", one, T0).await, Acquire::Granted);
    let at = T0.plus(LEASE * 2);

    store.pause_for_alarm(&g, "db-errors").await.unwrap();
    assert_eq!(
        take(store, &g, "asker", one, at).await,
        Acquire::Refused(Refusal::Paused)
    );
    store.clear_alarm(&g, "db-errors").await.unwrap();

    let exclusion = ByPerson {
        reason: PauseReason::parse("disk replacement").unwrap(),
        since: T0,
        by: "ana".into(),
    };
    store.exclude(&g, &id("sick"), exclusion).await.unwrap();
    assert_eq!(
        take(store, &g, "sick", one, at).await,
        Acquire::Refused(Refusal::Excluded)
    );

    // Settling: a release of another group member (slots were raised, then
    // lowered again) started the settle period.
    let three = GroupRules {
        settle: Duration::from_secs(600),
        ..leased(3)
    };
    assert_eq!(take(store, &g, "extra", three, T0).await, Acquire::Granted);
    let released = store.release(&g, &id("extra"), false, at).await.unwrap();
    assert_eq!(released.outcome, Release::Released);
    let settling = GroupRules {
        settle: Duration::from_secs(600),
        ..one
    };
    assert!(matches!(
        take(
            store,
            &g,
            "asker",
            settling,
            at.plus(Duration::from_secs(1))
        )
        .await,
        Acquire::Refused(Refusal::Settling { .. })
    ));
    assert_eq!(held_by(&stored(store, &g).await), [("stuck".into(), T0.0)]);
    // Once it settled, the expired slot changes hands.
    let settled = at.plus(Duration::from_secs(600));
    assert_eq!(
        take(store, &g, "asker", settling, settled).await,
        expired("stuck", T0)
    );
}

/// After the count was lowered, a group holding more than its slots gives
/// no expired slot away: that would keep more holders than slots.
async fn a_lowered_count_is_never_taken_over<S: LockStore>(store: &S) {
    let g = group("lowered");
    for node in ["a", "b", "c"] {
        assert_eq!(take(store, &g, node, leased(3), T0).await, Acquire::Granted);
    }
    let at = T0.plus(LEASE * 2);
    assert_eq!(
        take(store, &g, "d", leased(2), at).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(held_by(&stored(store, &g).await).len(), 3);
    store.release(&g, &id("c"), false, T0).await.unwrap();
    // Two of two: one expired slot changes hands, two holders stay.
    assert_eq!(take(store, &g, "d", leased(2), at).await, expired("a", T0));
    assert_eq!(held_by(&stored(store, &g).await).len(), 2);
}

/// A holder asking again renews its lease (the grant time stays): the
/// next asker finds the slot held, until a lease passes with no renewal;
/// then the node that lost its slot hears a full group and is marked.
async fn a_holder_that_asks_again_keeps_its_slot<S: LockStore>(store: &S) {
    let g = group("renewing");
    let one = leased(1);
    assert_eq!(take(store, &g, "a", one, T0).await, Acquire::Granted);
    let past = T0.plus(LEASE + Duration::from_secs(60));
    assert_eq!(take(store, &g, "a", one, past).await, Acquire::AlreadyHeld);
    let next = past.plus(Duration::from_secs(1));
    assert_eq!(
        take(store, &g, "b", one, next).await,
        Acquire::Refused(Refusal::Full)
    );
    let record = stored(store, &g).await;
    assert_eq!(
        held_by(&record),
        [("a".into(), T0.0)],
        "the grant time stays"
    );
    assert_eq!(record.renewed.get(&id("a")), Some(&past));
    // A late renewal (an older request's write) never moves it back.
    assert_eq!(
        take(store, &g, "a", one, T0.plus(LEASE / 2)).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(stored(store, &g).await.renewed.get(&id("a")), Some(&past));
    // One lease after the renewal: taken over, and the loser is marked.
    let expiry = past.plus(LEASE);
    assert_eq!(take(store, &g, "b", one, expiry).await, expired("a", T0));
    let record = stored(store, &g).await;
    assert_eq!(record.taken.get(&id("a")), Some(&expiry));
    assert!(record.renewed.is_empty(), "no renewal of a slot lost");
    // The loser's pre-reboot is refused, never a 200, and renews nothing.
    assert_eq!(
        take(store, &g, "a", one, expiry).await,
        Acquire::Refused(Refusal::Full)
    );
    // Its steady-state frees nothing; b's release frees the slot, and a
    // takes it afresh: its mark goes.
    assert_eq!(
        store
            .release(&g, &id("a"), false, expiry)
            .await
            .unwrap()
            .outcome,
        Release::NotHeld
    );
    assert_eq!(
        store
            .release(&g, &id("b"), false, expiry)
            .await
            .unwrap()
            .outcome,
        Release::Released
    );
    assert_eq!(take(store, &g, "a", one, expiry).await, Acquire::Granted);
    let record = stored(store, &g).await;
    assert!(record.taken.is_empty() && record.renewed.is_empty());
}

#[tokio::test]
async fn leases_in_memory() {
    let store = MemoryStore::default();
    a_holder_that_asks_again_keeps_its_slot(&store).await;
    a_slot_past_its_lease_goes_to_the_next_asker(&store).await;
    other_refusals_win_over_an_expired_slot(&store).await;
    a_lowered_count_is_never_taken_over(&store).await;
}

#[tokio::test]
async fn leases_in_dynamodb() {
    let (store, _) = dynamo_store("leases").await;
    a_holder_that_asks_again_keeps_its_slot(&store).await;
    a_slot_past_its_lease_goes_to_the_next_asker(&store).await;
    other_refusals_win_over_an_expired_slot(&store).await;
    a_lowered_count_is_never_taken_over(&store).await;
}

#[tokio::test]
async fn a_take_over_is_two_requests_and_every_other_answer_one() {
    let (store, requests) = dynamo_store("lease-requests").await;
    let g = group("workers");
    let one = leased(1);
    let count = |before: u64| requests.get() - before;

    let before = requests.get();
    assert_eq!(take(&store, &g, "gone", one, T0).await, Acquire::Granted);
    assert_eq!(count(before), 1, "a grant");
    let before = requests.get();
    let young = T0.plus(LEASE / 2);
    assert_eq!(
        take(&store, &g, "asker", one, young).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(
        count(before),
        1,
        "a full group whose holder is in its lease"
    );

    let at = T0.plus(LEASE);
    let before = requests.get();
    let decided = store.acquire(&g, &id("asker"), one, at).await.unwrap();
    assert_eq!(decided.outcome, expired("gone", T0));
    assert_eq!(count(before), 2, "the refused grant, then the take-over");
    assert_eq!(held_by(&decided.group), [("asker".into(), at.0)]);

    let before = requests.get();
    assert_eq!(
        take(&store, &g, "asker", one, at).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(
        count(before),
        2,
        "the new holder asking again: the refused grant, then its renewal"
    );
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "gone", one, at).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(
        count(before),
        1,
        "the node that lost its slot, asking again"
    );

    // The item as DynamoDB holds it: the count unchanged, the old holder gone.
    let (client, _) = fleetlock::test_support::counted_client().await;
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(
        raw.get("holder_count"),
        Some(&AttributeValue::N("1".into()))
    );
    assert!(!raw.contains_key("h:gone") && raw.contains_key("h:asker"));
    assert_eq!(
        raw.get("t:gone"),
        Some(&AttributeValue::N(at.0.to_string())),
        "the mark of the slot taken from it"
    );
    assert_eq!(
        raw.get("r:asker"),
        Some(&AttributeValue::N(at.0.to_string())),
        "the renewal, beside the grant"
    );
}

/// A holder stored in the 0.1 format (`holder:<id>`) is covered: past its
/// lease, its slot changes hands like any other, under whichever name.
#[tokio::test]
async fn a_holder_stored_by_version_0_1_past_its_lease_is_taken_over_too() {
    let (store, requests) = dynamo_store("lease-legacy").await;
    let (client, _) = fleetlock::test_support::counted_client().await;
    client
        .put_item()
        .table_name(store.table())
        .item("group", AttributeValue::S("default".into()))
        .item("holder_count", AttributeValue::N("1".into()))
        .item("slots", AttributeValue::N("1".into()))
        .item("holder:old-node", AttributeValue::N(T0.0.to_string()))
        .send()
        .await
        .unwrap();
    let g = group("default");
    let at = T0.plus(LEASE);
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "new-node", leased(1), at).await,
        expired("old-node", T0)
    );
    assert_eq!(requests.get() - before, 2);
    let raw = raw_item(&client, store.table(), "default").await;
    assert!(!raw.contains_key("holder:old-node"), "{raw:?}");
    assert_eq!(
        raw.get("h:new-node"),
        Some(&AttributeValue::N(at.0.to_string()))
    );
    assert_eq!(
        raw.get("holder_count"),
        Some(&AttributeValue::N("1".into()))
    );
}

/// Many nodes ask at once of a full group whose holders are all past their
/// lease, some of them excluded before they ask, while other exclusions come
/// and go: each expired slot changes hands once, never to an excluded node,
/// never more holders than slots, the count true, and no asker sends more
/// than two requests.
#[tokio::test]
async fn askers_racing_for_expired_slots_with_exclusions_never_over_grant() {
    use fleetlock::domain::store::{Changed, Excluding};
    let (store, requests) = dynamo_store("lease-race").await;
    let store = Arc::new(store);
    let g = group("workers");
    let three = leased(3);
    for node in ["x", "y", "z"] {
        assert_eq!(take(&*store, &g, node, three, T0).await, Acquire::Granted);
    }
    let exclusion = || ByPerson {
        reason: PauseReason::parse("race").unwrap(),
        since: T0,
        by: "ana".into(),
    };
    for n in (0..24).step_by(4) {
        let excluded = id(&format!("asker-{n}"));
        store.exclude(&g, &excluded, exclusion()).await.unwrap();
    }
    // The flips through a client of their own, the operator's role:
    // `requests` counts the askers'.
    let client = crate::helpers::client_as(&format!("operator.{}", store.table())).await;
    let operator = Arc::new(fleetlock::store::dynamodb::DynamoStore::new(
        client,
        store.table(),
    ));
    let at = T0.plus(LEASE * 2);
    let askers = 24;
    let before = requests.get();
    let mut tasks = Vec::new();
    for n in 0..askers {
        let (racer, in_group) = (Arc::clone(&store), g.clone());
        tasks.push(tokio::spawn(async move {
            let (store, g) = (racer, in_group);
            let node = format!("asker-{n}");
            let outcome = store.acquire(&g, &id(&node), three, at).await.unwrap();
            Some((node, outcome.outcome))
        }));
        if n % 6 == 3 {
            let (flipper, in_group) = (Arc::clone(&operator), g.clone());
            tasks.push(tokio::spawn(async move {
                let (store, g) = (flipper, in_group);
                let node = id(&format!("flip-{n}"));
                // Overtaken by another flip's write: run again, as the
                // command tells an operator to.
                while store.exclude(&g, &node, exclusion()).await.unwrap().outcome
                    == Excluding::Changed(Changed::Overtaken)
                {}
                while store.include(&g, &node).await.unwrap().outcome == Changed::Overtaken {}
                None
            }));
        }
    }
    let mut taken = Vec::new();
    let mut winners = Vec::new();
    for task in tasks {
        let Some((node, outcome)) = task.await.unwrap() else {
            continue;
        };
        let number: usize = node.trim_start_matches("asker-").parse().unwrap();
        match outcome {
            Acquire::TakesExpired { holder, .. } => {
                assert!(
                    !number.is_multiple_of(4),
                    "{node} is excluded and took a slot"
                );
                taken.push(holder.as_str().to_owned());
                winners.push(node);
            }
            Acquire::Refused(Refusal::Excluded) => assert!(number.is_multiple_of(4), "{node}"),
            Acquire::Refused(Refusal::Full) => {}
            other => panic!("{node}: {other:?}"),
        }
    }
    let sent = requests.get() - before;
    assert!(sent <= 2 * askers, "{sent} requests for {askers} askers");
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), winners.len(), "no expired slot went twice");
    let record = stored(&*store, &g).await;
    assert_eq!(record.holders.len(), 3, "never more than the slots");
    for winner in &winners {
        assert!(record.holders.holds(&id(winner)), "{winner}");
    }
    assert!(!winners.is_empty(), "some asker took an expired slot");
    assert_eq!(
        record.excluded.len(),
        6,
        "the flips left their nodes included"
    );
}

/// A holder past its lease renewing while another node asks for its slot,
/// at the same instant, on DynamoDB Local: of the renewal and the take-over
/// exactly one wins, every round, and the group holds one node. Which one
/// is sent first alternates, and each side must win some rounds: a race
/// that one side always wins proves nothing about the other.
#[tokio::test]
async fn a_renewal_racing_a_take_over_has_exactly_one_winner() {
    let (store, _) = dynamo_store("lease-renewal-race").await;
    let store = Arc::new(store);
    let one = leased(1);
    let mut seen = (0, 0);
    for round in 0..16 {
        let g = group(&format!("round-{round}"));
        assert_eq!(take(&*store, &g, "holder", one, T0).await, Acquire::Granted);
        let at = T0.plus(LEASE + Duration::from_secs(60));
        let order = if round % 2 == 0 {
            ["holder", "asker"]
        } else {
            ["asker", "holder"]
        };
        let racers: Vec<_> = order
            .into_iter()
            .map(|node| {
                let (store, g) = (Arc::clone(&store), g.clone());
                tokio::spawn(async move { (node, take(&*store, &g, node, one, at).await) })
            })
            .collect();
        let mut outcomes = [
            Acquire::Refused(Refusal::Full),
            Acquire::Refused(Refusal::Full),
        ];
        for racer in racers {
            let (node, outcome) = racer.await.unwrap();
            outcomes[usize::from(node == "asker")] = outcome;
        }
        let record = stored(&*store, &g).await;
        match (&outcomes[0], &outcomes[1]) {
            (Acquire::AlreadyHeld, Acquire::Refused(Refusal::Full)) => {
                seen.0 += 1;
                assert_eq!(held_by(&record), [("holder".into(), T0.0)], "round {round}");
            }
            (Acquire::Refused(Refusal::Full), Acquire::TakesExpired { .. }) => {
                seen.1 += 1;
                assert_eq!(held_by(&record), [("asker".into(), at.0)], "round {round}");
                assert!(record.taken.contains_key(&id("holder")), "round {round}");
            }
            other => panic!("round {round}: two winners or none: {other:?}"),
        }
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "renewals won {}, take-overs {}: both must win some rounds",
        seen.0,
        seen.1
    );
}

/// A take-over whose write lands late (held back by the proxy past a
/// release by its own asker, then a new holder): it finds the expired
/// holder gone and changes nothing.
#[tokio::test]
async fn a_late_take_over_never_undoes_a_newer_write() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("lease-late").await;
    let store = Arc::new(store);
    // Straight to DynamoDB Local, each call signed as its role.
    let direct = crate::helpers::RoleStore::new(store.table(), &Default::default()).await;
    let g = group("workers");
    let one = leased(1);
    assert_eq!(take(&direct, &g, "gone", one, T0).await, Acquire::Granted);
    let at = T0.plus(LEASE);
    // The refused grant goes through; the take-over is held until the
    // newer writes are done.
    proxy.next(Fault::None, 1);
    proxy.next(Fault::Hold, 1);
    let late = tokio::spawn({
        let (store, g) = (Arc::clone(&store), g.clone());
        async move { take(&*store, &g, "late", one, at).await }
    });
    proxy.until_held().await;
    // Meanwhile another node takes the expired slot, reboots and gives it
    // back, and the first holder comes back for a new one.
    let quick = at.plus(Duration::from_millis(1));
    assert_eq!(
        take(&direct, &g, "quick", one, quick).await,
        expired("gone", T0)
    );
    let back = quick.plus(Duration::from_secs(60));
    let released = direct.release(&g, &id("quick"), false, back).await.unwrap();
    assert_eq!(released.outcome, Release::Released);
    let regrant = back.plus(Duration::from_secs(1));
    assert_eq!(
        take(&direct, &g, "gone", one, regrant).await,
        Acquire::Granted
    );

    proxy.release();
    let outcome = late.await.unwrap();
    assert!(
        matches!(
            outcome,
            Acquire::Refused(Refusal::Settling { .. }) | Acquire::Refused(Refusal::Full)
        ),
        "{outcome:?}"
    );
    assert_eq!(
        held_by(&stored(&direct, &g).await),
        [("gone".into(), regrant.0)],
        "the newer grant stands"
    );
}

/// A take-over whose answer is lost: the SDK sends it again, the retry
/// finds the asker holding, and the asker hears yes (a holder asking again).
#[tokio::test]
async fn a_take_over_whose_answer_was_lost_is_a_yes_on_its_retry() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("lease-lost").await;
    let g = group("workers");
    let one = leased(1);
    assert_eq!(take(&store, &g, "gone", one, T0).await, Acquire::Granted);
    proxy.next(Fault::None, 1);
    proxy.next(Fault::DropAnswer, 1);
    let at = T0.plus(LEASE);
    assert_eq!(
        take(&store, &g, "asker", one, at).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(held_by(&stored(&store, &g).await), [("asker".into(), at.0)]);
}
