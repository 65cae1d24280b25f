//! The drain gate: a node's first request for a free slot reserves it, and
//! the slot is granted only once its drain is confirmed. On both stores
//! through the store API, on DynamoDB Local with the requests counted, the
//! raw item read, in a race and with writes landing late, and over HTTP as
//! Zincati calls. The clock is moved, never slept.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use fleetlock::domain::input::{GroupName, PauseReason};
use fleetlock::domain::lock::{
    Acquire, ByPerson, DrainRule, Drained, GroupRules, OnDrainTimeout, Refusal, Release,
};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, id, raw_item, stored, take};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const TIMEOUT: Duration = Duration::from_secs(15 * 60);

fn gated(slots: u32, on_timeout: OnDrainTimeout) -> GroupRules {
    GroupRules {
        slots,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: None,
        drain: Some(DrainRule {
            timeout: TIMEOUT,
            on_timeout,
            window_closes: None,
        }),
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

const HOLD: OnDrainTimeout = OnDrainTimeout::Hold;
const GRANT: OnDrainTimeout = OnDrainTimeout::Grant;

async fn drained<S: LockStore>(
    store: &S,
    g: &GroupName,
    node: &str,
    since: Option<Timestamp>,
    now: Timestamp,
) -> Drained {
    store
        .drained(g, &id(node), since, now)
        .await
        .unwrap()
        .outcome
}

fn waiting(since: Timestamp, overdue: bool) -> Acquire {
    Acquire::Refused(Refusal::Draining {
        since,
        until: since.plus(TIMEOUT),
        overdue,
    })
}

/// A reservation counts against the slots, waits, and becomes the slot at
/// its confirmation; a confirmation of nothing, or of another reservation,
/// changes nothing; the node's steady-state ends a reservation.
async fn a_reservation_waits_for_its_confirmation<S: LockStore>(store: &S) {
    let g = group("workers");
    let one = gated(1, HOLD);
    assert_eq!(take(store, &g, "a", one, T0).await, Acquire::Reserves);
    let record = stored(store, &g).await;
    assert_eq!(record.holders.len(), 1, "the reservation counts");
    assert_eq!(record.draining.get(&id("a")), Some(&T0));
    assert_eq!(
        take(store, &g, "b", one, T0).await,
        Acquire::Refused(Refusal::Full)
    );
    let later = T0.plus(Duration::from_secs(300));
    assert_eq!(take(store, &g, "a", one, later).await, waiting(T0, false));

    assert_eq!(
        drained(store, &g, "b", None, later).await,
        Drained::NoReservation
    );
    assert_eq!(
        drained(
            store,
            &g,
            "a",
            Some(T0.minus(Duration::from_secs(1))),
            later
        )
        .await,
        Drained::OtherReservation { since: T0 }
    );
    assert!(stored(store, &g).await.draining.contains_key(&id("a")));
    assert_eq!(
        drained(store, &g, "a", Some(T0), later).await,
        Drained::Granted
    );
    let record = stored(store, &g).await;
    assert!(record.draining.is_empty());
    assert_eq!(record.holders.held_since(&id("a")), Some(later));
    assert_eq!(take(store, &g, "a", one, later).await, Acquire::AlreadyHeld);
    assert_eq!(
        drained(store, &g, "a", Some(T0), later).await,
        Drained::AlreadyGranted
    );
    let back = later.plus(Duration::from_secs(120));
    let released = store.release(&g, &id("a"), false, back).await.unwrap();
    assert_eq!(released.outcome, Release::Released);

    // Zincati restarted while its node waited: its steady-state ends the
    // reservation, and a confirmation arriving after that grants nothing.
    let next = back.plus(Duration::from_secs(1));
    assert_eq!(take(store, &g, "c", one, next).await, Acquire::Reserves);
    let released = store.release(&g, &id("c"), false, next).await.unwrap();
    assert_eq!(released.outcome, Release::Released);
    assert_eq!(
        drained(store, &g, "c", Some(next), next).await,
        Drained::NoReservation
    );
    let record = stored(store, &g).await;
    assert!(record.holders.is_empty() && record.draining.is_empty());
}

/// Past the drain timeout: `hold` keeps refusing, `grant` grants at the
/// node's next request; a pause or an exclusion wins over both, and over a
/// confirmation, and the reservation stays through them.
async fn a_timeout_holds_or_grants_and_a_pause_wins<S: LockStore>(store: &S) {
    let g = group("db");
    assert_eq!(
        take(store, &g, "a", gated(2, HOLD), T0).await,
        Acquire::Reserves
    );
    let due = T0.plus(TIMEOUT);
    assert_eq!(
        take(store, &g, "a", gated(2, HOLD), due).await,
        waiting(T0, true)
    );

    store.pause_for_alarm(&g, "db-errors").await.unwrap();
    assert_eq!(
        take(store, &g, "a", gated(2, GRANT), due).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(drained(store, &g, "a", None, due).await, Drained::Paused);
    store.clear_alarm(&g, "db-errors").await.unwrap();

    let exclusion = ByPerson {
        reason: PauseReason::parse("disk").unwrap(),
        since: T0,
        by: "ana".into(),
    };
    store.exclude(&g, &id("a"), exclusion).await.unwrap();
    assert_eq!(
        take(store, &g, "a", gated(2, GRANT), due).await,
        Acquire::Refused(Refusal::Excluded)
    );
    assert_eq!(drained(store, &g, "a", None, due).await, Drained::Excluded);
    store.include(&g, &id("a")).await.unwrap();
    assert!(stored(store, &g).await.draining.contains_key(&id("a")));

    assert_eq!(
        take(store, &g, "a", gated(2, GRANT), due).await,
        Acquire::DrainTimedOut { since: T0 }
    );
    let record = stored(store, &g).await;
    assert!(record.draining.is_empty());
    assert_eq!(record.holders.held_since(&id("a")), Some(due));
    assert_eq!(
        take(store, &g, "a", gated(2, GRANT), due).await,
        Acquire::AlreadyHeld
    );
}

/// A settle time gates new reservations; a window about to close begins
/// no drain; a lease never takes a reservation, and a take-over behind a
/// gate is a reservation.
async fn settle_windows_and_leases_meet_the_gate<S: LockStore>(store: &S) {
    let g = group("edge");
    let settle = GroupRules {
        settle: Duration::from_secs(600),
        ..gated(2, HOLD)
    };
    assert_eq!(take(store, &g, "a", settle, T0).await, Acquire::Reserves);
    store.drained(&g, &id("a"), None, T0).await.unwrap();
    let back = T0.plus(Duration::from_secs(60));
    store.release(&g, &id("a"), false, back).await.unwrap();
    assert!(matches!(
        take(store, &g, "b", settle, back.plus(Duration::from_secs(1))).await,
        Acquire::Refused(Refusal::Settling { .. })
    ));

    let closes = back.plus(Duration::from_secs(3600));
    let mut closing = gated(2, HOLD);
    if let Some(drain) = closing.drain.as_mut() {
        drain.window_closes = Some(closes);
    }
    assert_eq!(
        take(store, &g, "b", closing, back.plus(Duration::from_secs(600))).await,
        Acquire::Refused(Refusal::WindowTooShort { closes })
    );
    assert!(
        stored(store, &g).await.holders.is_empty(),
        "nothing reserved"
    );

    let lease = Duration::from_secs(3600);
    let leased = GroupRules {
        lease: Some(lease),
        ..gated(2, HOLD)
    };
    let t1 = back.plus(Duration::from_secs(600));
    assert_eq!(take(store, &g, "held", leased, t1).await, Acquire::Reserves);
    store.drained(&g, &id("held"), None, t1).await.unwrap();
    assert_eq!(
        take(store, &g, "waits", leased, t1).await,
        Acquire::Reserves
    );
    let late = t1.plus(lease * 3);
    assert_eq!(
        take(store, &g, "new", leased, late).await,
        Acquire::TakesExpired {
            holder: id("held"),
            since: t1
        }
    );
    let record = stored(store, &g).await;
    assert_eq!(record.holders.len(), 2);
    assert_eq!(record.draining.get(&id("new")), Some(&late), "drains first");
    assert!(
        record.draining.contains_key(&id("waits")),
        "never taken over"
    );
    assert_eq!(
        take(store, &g, "other", leased, late).await,
        Acquire::Refused(Refusal::Full)
    );
}

#[tokio::test]
async fn drains_in_memory() {
    let store = MemoryStore::default();
    a_reservation_waits_for_its_confirmation(&store).await;
    a_timeout_holds_or_grants_and_a_pause_wins(&store).await;
    settle_windows_and_leases_meet_the_gate(&store).await;
}

#[tokio::test]
async fn drains_in_dynamodb() {
    let (store, _) = dynamo_store("drains").await;
    a_reservation_waits_for_its_confirmation(&store).await;
    a_timeout_holds_or_grants_and_a_pause_wins(&store).await;
    settle_windows_and_leases_meet_the_gate(&store).await;
}

#[tokio::test]
async fn every_drain_answer_is_one_request_and_a_grant_on_timeout_two() {
    let (store, requests) = dynamo_store("drain-requests").await;
    let g = group("workers");
    let count = |before: u64| requests.get() - before;
    let (client, _) = fleetlock::test_support::counted_client().await;

    let before = requests.get();
    assert_eq!(
        take(&store, &g, "a", gated(2, GRANT), T0).await,
        Acquire::Reserves
    );
    assert_eq!(count(before), 1, "a reservation");
    let raw = raw_item(&client, store.table(), "workers").await;
    let at = |t: Timestamp| Some(AttributeValue::N(t.0.to_string()));
    assert_eq!(raw.get("h:a").cloned(), at(T0));
    assert_eq!(raw.get("d:a").cloned(), at(T0));
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("1".into()))
    );

    let before = requests.get();
    let soon = T0.plus(Duration::from_secs(300));
    assert_eq!(
        take(&store, &g, "a", gated(2, GRANT), soon).await,
        waiting(T0, false)
    );
    assert_eq!(count(before), 1, "a reserved node asking again");

    let before = requests.get();
    assert_eq!(
        take(&store, &g, "b", gated(2, GRANT), soon).await,
        Acquire::Reserves
    );
    assert_eq!(
        drained(&store, &g, "b", Some(soon), soon).await,
        Drained::Granted
    );
    assert_eq!(count(before), 2, "a reservation, then its confirmation");
    let raw = raw_item(&client, store.table(), "workers").await;
    assert!(!raw.contains_key("d:b"));
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("2".into()))
    );

    let before = requests.get();
    assert_eq!(
        take(&store, &g, "c", gated(2, GRANT), soon).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(
        drained(&store, &g, "c", None, soon).await,
        Drained::NoReservation
    );
    assert_eq!(count(before), 2, "a full group, a confirmation of nothing");

    let due = T0.plus(TIMEOUT);
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "a", gated(2, HOLD), due).await,
        waiting(T0, true)
    );
    assert_eq!(count(before), 1, "an overdue reservation, held");
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "a", gated(2, GRANT), due).await,
        Acquire::DrainTimedOut { since: T0 }
    );
    assert_eq!(
        count(before),
        2,
        "the refused grant, then the grant on timeout"
    );
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(raw.get("h:a").cloned(), at(due));
    assert!(!raw.contains_key("d:a"));
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("2".into()))
    );
}

/// Many nodes ask at once of a group with a drain gate while confirmations
/// and steady-states race them: never more reservations and holders
/// together than slots, the count true, each confirmation granting only a
/// reservation that stood, and every asker one request.
#[tokio::test]
async fn askers_and_confirmations_racing_never_over_reserve() {
    let (store, requests) = dynamo_store("drain-race").await;
    let store = Arc::new(store);
    let g = group("workers");
    let three = gated(3, HOLD);
    // The confirmations come from the drained function's role.
    let client = crate::helpers::client_as(&format!("drained.{}", store.table())).await;
    let operator = Arc::new(fleetlock::store::dynamodb::DynamoStore::new(
        client,
        store.table(),
    ));
    let askers = 24;
    let before = requests.get();
    let mut tasks = Vec::new();
    for n in 0..askers {
        let (racer, in_group) = (Arc::clone(&store), g.clone());
        tasks.push(tokio::spawn(async move {
            let node = format!("asker-{n}");
            let at = T0.plus(Duration::from_millis(n));
            let outcome = racer
                .acquire(&in_group, &id(&node), three, at)
                .await
                .unwrap();
            (node, Ok(outcome.outcome))
        }));
        // Confirmations of nodes that may or may not have reserved yet.
        let (confirmer, in_group) = (Arc::clone(&operator), g.clone());
        tasks.push(tokio::spawn(async move {
            let node = format!("asker-{}", (n * 7) % askers);
            let later = T0.plus(Duration::from_secs(60));
            let outcome = confirmer.drained(&in_group, &id(&node), None, later).await;
            (node, Err(outcome.unwrap().outcome))
        }));
    }
    let mut reserved = Vec::new();
    let mut confirmed = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (node, Ok(Acquire::Reserves)) => reserved.push(node),
            (_, Ok(Acquire::Refused(Refusal::Full))) => {}
            (node, Err(Drained::Granted)) => confirmed.push(node),
            (_, Err(Drained::NoReservation)) => {}
            (node, other) => panic!("{node}: {other:?}"),
        }
    }
    assert_eq!(requests.get() - before, askers, "one request per asker");
    assert_eq!(
        reserved.len(),
        3,
        "three slots, three reservations: {reserved:?}"
    );
    let record = stored(&*store, &g).await;
    assert_eq!(record.holders.len(), 3, "never more than the slots");
    for node in &confirmed {
        assert!(
            reserved.contains(node),
            "{node} was confirmed without a reservation"
        );
        assert!(!record.draining.contains_key(&id(node)), "{node}");
    }
    for node in &reserved {
        assert!(record.holders.holds(&id(node)), "{node}");
        let confirmed_here = confirmed.contains(node);
        assert_eq!(
            record.draining.contains_key(&id(node)),
            !confirmed_here,
            "{node}"
        );
    }
    let (client, _) = fleetlock::test_support::counted_client().await;
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("3".into()))
    );
}

/// A confirmation that lands late (held back by the proxy) after the node
/// gave its reservation back and reserved again: it names the reservation it
/// confirms, finds another one, and grants nothing, so the node's new drain
/// is not skipped.
#[tokio::test]
async fn a_late_confirmation_never_grants_a_newer_reservation() {
    use crate::fault_proxy::Fault;
    let (proxy, function) = crate::helpers::proxied_store("drain-late").await;
    // The confirmation through the proxy, as the drained function sends it;
    // the node's calls straight to DynamoDB Local, as the API function's.
    let table = function.table().to_owned();
    let confirmer = crate::helpers::store_through_as(&proxy, &table, &table, "drained").await;
    let store = Arc::new(confirmer);
    let direct = crate::helpers::RoleStore::new(&table, &Default::default()).await;
    let g = group("workers");
    let one = gated(1, HOLD);
    assert_eq!(take(&direct, &g, "a", one, T0).await, Acquire::Reserves);
    proxy.next(Fault::Hold, 1);
    let late = tokio::spawn({
        let (store, g) = (Arc::clone(&store), g.clone());
        async move {
            store
                .drained(&g, &id("a"), Some(T0), T0.plus(Duration::from_secs(60)))
                .await
                .unwrap()
                .outcome
        }
    });
    proxy.until_held().await;
    let back = T0.plus(Duration::from_secs(30));
    direct.release(&g, &id("a"), false, back).await.unwrap();
    let again = back.plus(Duration::from_secs(1));
    assert_eq!(take(&direct, &g, "a", one, again).await, Acquire::Reserves);

    proxy.release();
    assert_eq!(
        late.await.unwrap(),
        Drained::OtherReservation { since: again }
    );
    let record = stored(&direct, &g).await;
    assert_eq!(record.draining.get(&id("a")), Some(&again), "still waiting");
}

/// A reservation whose answer is lost: the SDK sends it again, the retry
/// finds the reservation, and the node hears that it waits (never a 2xx).
#[tokio::test]
async fn a_reservation_whose_answer_was_lost_still_waits_on_its_retry() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("drain-lost").await;
    let g = group("workers");
    proxy.next(Fault::DropAnswer, 1);
    assert_eq!(
        take(&store, &g, "a", gated(1, HOLD), T0).await,
        waiting(T0, false)
    );
    let record = stored(&store, &g).await;
    assert_eq!(record.holders.len(), 1);
    assert_eq!(record.draining.get(&id("a")), Some(&T0));
}

/// A group only `*` covers, behind a gate: its first request is counted,
/// then reserves (three requests, once, as for a grant).
#[tokio::test]
async fn a_new_wildcard_group_behind_a_gate_reserves_on_its_first_request() {
    let (store, requests) = dynamo_store("drain-wildcard").await;
    let g = group("new-pool");
    let rules = GroupRules {
        wildcard_limit: Some(5),
        ..gated(1, HOLD)
    };
    let before = requests.get();
    assert_eq!(take(&store, &g, "a", rules, T0).await, Acquire::Reserves);
    assert_eq!(requests.get() - before, 3);
    assert_eq!(store.wildcard_groups().await.unwrap(), vec![g.clone()]);
    assert!(stored(&store, &g).await.draining.contains_key(&id("a")));
}
