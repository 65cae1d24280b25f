//! The return gate: a node's steady-state leaves its slot counted as
//! returning until its return to service is confirmed. On both stores
//! through the store API; on DynamoDB Local with the requests counted, the
//! raw item read, in a race, and with a write landing late. The clock is
//! moved, never slept.

use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use fleetlock::domain::input::{GroupName, PauseReason};
use fleetlock::domain::lock::{
    Acquire, ByPerson, DrainRule, Drained, GroupRules, OnDrainTimeout, Refusal, Release, Returned,
    Stopping,
};
use fleetlock::domain::store::{Changed, LockStore};
use fleetlock::domain::time::Timestamp;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, id, raw_item, stored, take};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const TIMEOUT: Duration = Duration::from_secs(20 * 60);
const MINUTE: Duration = Duration::from_secs(60);

fn returning(slots: u32) -> GroupRules {
    GroupRules {
        slots,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: Some(TIMEOUT),
        zone: None,
        canary: None,
    }
}

fn at(minutes: u64) -> Timestamp {
    T0.plus(MINUTE * minutes as u32)
}

async fn steady<S: LockStore>(store: &S, g: &GroupName, node: &str, now: Timestamp) -> Release {
    store
        .release(g, &id(node), true, now)
        .await
        .unwrap()
        .outcome
}

async fn returned<S: LockStore>(
    store: &S,
    g: &GroupName,
    node: &str,
    since: Option<Timestamp>,
    now: Timestamp,
) -> Returned {
    store
        .returned(g, &id(node), since, now)
        .await
        .unwrap()
        .outcome
}

/// A steady-state keeps the slot counted; repeats and late copies change
/// nothing; the node's own pre-reboot waits; a confirmation of nobody, of
/// a holder or of another return changes nothing; the right one frees the
/// slot and starts the settle period, and a duplicate of it is refused.
async fn a_return_counts_until_it_is_confirmed<S: LockStore>(store: &S) {
    let g = group("workers");
    let one = GroupRules {
        settle: 5 * MINUTE,
        ..returning(1)
    };
    assert_eq!(take(store, &g, "a", one, at(0)).await, Acquire::Granted);
    assert_eq!(
        returned(store, &g, "a", None, at(1)).await,
        Returned::NotReturning { holds: true },
        "no steady-state yet"
    );
    assert_eq!(steady(store, &g, "a", at(2)).await, Release::Returning);
    let record = stored(store, &g).await;
    assert_eq!(record.holders.len(), 1, "the returning slot counts");
    assert_eq!(record.returning.get(&id("a")), Some(&at(2)));
    assert_eq!(
        take(store, &g, "b", one, at(3)).await,
        Acquire::Refused(Refusal::Full)
    );
    // Zincati's steady-state at its next start, and one that arrived
    // before the first (landing late): the return stays as it was.
    assert_eq!(steady(store, &g, "a", at(4)).await, Release::StillReturning);
    assert_eq!(steady(store, &g, "a", at(1)).await, Release::StillReturning);
    assert_eq!(
        stored(store, &g).await.returning.get(&id("a")),
        Some(&at(2))
    );
    assert_eq!(
        take(store, &g, "a", one, at(5)).await,
        Acquire::Refused(Refusal::Returning {
            since: at(2),
            until: at(2).plus(TIMEOUT),
            overdue: false
        }),
        "a new update right after waits for the return"
    );
    assert_eq!(
        returned(store, &g, "b", None, at(6)).await,
        Returned::NotReturning { holds: false }
    );
    assert_eq!(
        returned(store, &g, "a", Some(at(1)), at(6)).await,
        Returned::OtherReturn { since: at(2) }
    );
    assert_eq!(
        returned(store, &g, "a", Some(at(2)), at(7)).await,
        Returned::Freed
    );
    let record = stored(store, &g).await;
    assert!(record.holders.is_empty() && record.returning.is_empty());
    assert_eq!(record.last_release, Some(at(7)), "settles from the return");
    assert_eq!(
        returned(store, &g, "a", Some(at(2)), at(8)).await,
        Returned::NotReturning { holds: false },
        "a duplicated confirmation"
    );
    assert_eq!(
        take(store, &g, "b", one, at(8)).await,
        Acquire::Refused(Refusal::Settling { until: at(12) })
    );
    assert_eq!(take(store, &g, "b", one, at(12)).await, Acquire::Granted);
}

/// Where the gate meets the other levers: a pause never keeps a slot from
/// coming back; a lease never takes a returning slot; an excluded node
/// still comes back; a released reservation returns; a person's release
/// and a removed gate free the slot; the drain gate and the return gate
/// together keep one node out of service at a time.
async fn the_gate_meets_the_other_levers<S: LockStore>(store: &S) {
    let g = group("db");
    let leased = GroupRules {
        lease: Some(Duration::from_secs(3600)),
        ..returning(1)
    };
    assert_eq!(take(store, &g, "a", leased, at(0)).await, Acquire::Granted);
    assert_eq!(steady(store, &g, "a", at(1)).await, Release::Returning);
    assert_eq!(
        take(store, &g, "b", leased, at(300)).await,
        Acquire::Refused(Refusal::Full),
        "five hours on, a returning slot is not taken over"
    );
    store.pause_for_alarm(&g, "db-errors").await.unwrap();
    let pause = ByPerson {
        reason: PauseReason::parse("disk").unwrap(),
        since: at(301),
        by: "ana".into(),
    };
    store.exclude(&g, &id("a"), pause).await.unwrap();
    assert_eq!(
        returned(store, &g, "a", None, at(302)).await,
        Returned::Freed,
        "paused, excluded: the node still comes back"
    );
    store.clear_alarm(&g, "db-errors").await.unwrap();
    store.include(&g, &id("a")).await.unwrap();

    // A person's release (and a steady-state with the gate removed) frees
    // a returning slot, unconfirmed.
    assert_eq!(
        take(store, &g, "b", leased, at(303)).await,
        Acquire::Granted
    );
    assert_eq!(steady(store, &g, "b", at(304)).await, Release::Returning);
    let freed = store.release(&g, &id("b"), false, at(305)).await.unwrap();
    assert_eq!(freed.outcome, Release::Released);
    assert!(stored(store, &g).await.holders.is_empty());
    assert_eq!(
        take(store, &g, "c", leased, at(306)).await,
        Acquire::Granted
    );
    assert_eq!(steady(store, &g, "c", at(307)).await, Release::Returning);
    let plain = GroupRules {
        return_timeout: None,
        zone: None,
        canary: None,
        ..leased
    };
    assert_eq!(
        take(store, &g, "c", plain, at(308)).await,
        Acquire::AlreadyHeld,
        "the gate removed: a holder's answer, on the slot it still has"
    );
    let freed = store.release(&g, &id("c"), false, at(309)).await.unwrap();
    assert_eq!(freed.outcome, Release::Released);

    // Drain and return together: reserved, holding, returning are one slot.
    let both = GroupRules {
        drain: Some(DrainRule {
            timeout: 15 * MINUTE,
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        ..returning(1)
    };
    let w = group("web");
    assert_eq!(take(store, &w, "a", both, at(0)).await, Acquire::Reserves);
    let drained = store.drained(&w, &id("a"), None, at(1)).await.unwrap();
    assert_eq!(drained.outcome, Drained::Granted);
    assert_eq!(steady(store, &w, "a", at(5)).await, Release::Returning);
    assert_eq!(
        take(store, &w, "b", both, at(6)).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(returned(store, &w, "a", None, at(9)).await, Returned::Freed);
    assert_eq!(take(store, &w, "b", both, at(10)).await, Acquire::Reserves);
    // Zincati restarted before the drain was confirmed: the node may have
    // been drained, so its slot returns too.
    assert_eq!(steady(store, &w, "b", at(11)).await, Release::Returning);
    let record = stored(store, &w).await;
    assert!(record.draining.is_empty() && record.returning.contains_key(&id("b")));
    assert_eq!(
        store
            .drained(&w, &id("b"), None, at(12))
            .await
            .unwrap()
            .outcome,
        Drained::Returning { since: at(11) },
        "a drain confirmation of a returning node grants nothing"
    );
    assert_eq!(
        take(store, &w, "c", both, at(12)).await,
        Acquire::Refused(Refusal::Full)
    );
}

/// An overdue return stops its group once; the slot stays returning;
/// `resume` clears the stop (and a person's pause) and the next sweep does
/// not stop the group again for the same return.
async fn an_overdue_return_stops_the_group_until_a_person_resumes<S: LockStore>(store: &S) {
    let g = group("stops");
    let two = returning(2);
    take(store, &g, "a", two, at(0)).await;
    assert_eq!(steady(store, &g, "a", at(1)).await, Release::Returning);
    let late = at(1).plus(TIMEOUT);
    let stop = store
        .stop_rollout(
            &g,
            &id("a"),
            at(1),
            fleetlock::domain::lock::StopCause::Return,
            late,
        )
        .await;
    assert_eq!(stop.unwrap().outcome, Stopping::Stopped);
    let again = store
        .stop_rollout(
            &g,
            &id("a"),
            at(1),
            fleetlock::domain::lock::StopCause::Return,
            late,
        )
        .await;
    assert_eq!(again.unwrap().outcome, Stopping::AlreadyCounted);
    let other = store
        .stop_rollout(
            &g,
            &id("a"),
            at(0),
            fleetlock::domain::lock::StopCause::Return,
            late,
        )
        .await;
    assert_eq!(other.unwrap().outcome, Stopping::NotReturning);
    let record = stored(store, &g).await;
    let stop = record.pause.stop.clone().expect("stopped");
    assert_eq!(
        (stop.id, stop.returning_since, stop.at),
        (id("a"), at(1), late)
    );
    assert_eq!(record.returns_failed.get(&id("a")), Some(&at(1)));
    assert_eq!(
        take(store, &g, "b", two, late).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert!(matches!(
        take(store, &g, "a", two, late).await,
        Acquire::Refused(Refusal::Returning { overdue: true, .. })
    ));
    let resumed = store.resume(&g).await.unwrap();
    assert_eq!(resumed.outcome, Changed::Yes);
    assert_eq!(resumed.group.pause.stop, None);
    assert_eq!(store.resume(&g).await.unwrap().outcome, Changed::AlreadySo);
    let record = stored(store, &g).await;
    assert!(
        record
            .returns_overdue(TIMEOUT, late.plus(TIMEOUT))
            .is_empty()
    );
    assert!(record.returning.contains_key(&id("a")), "still returning");
    assert_eq!(take(store, &g, "b", two, late).await, Acquire::Granted);
    assert_eq!(
        returned(store, &g, "a", Some(at(1)), late).await,
        Returned::Freed
    );
    assert!(stored(store, &g).await.returns_failed.is_empty());
}

#[tokio::test]
async fn returns_in_memory() {
    let store = MemoryStore::default();
    a_return_counts_until_it_is_confirmed(&store).await;
    the_gate_meets_the_other_levers(&store).await;
    an_overdue_return_stops_the_group_until_a_person_resumes(&store).await;
}

#[tokio::test]
async fn returns_in_dynamodb() {
    let (store, _) = dynamo_store("returns").await;
    a_return_counts_until_it_is_confirmed(&store).await;
    the_gate_meets_the_other_levers(&store).await;
    an_overdue_return_stops_the_group_until_a_person_resumes(&store).await;
}

/// Each answer of the gate is one request, on the item as documented.
#[tokio::test]
async fn every_return_answer_is_one_request_on_the_documented_item() {
    let (store, requests) = dynamo_store("return-requests").await;
    let g = group("workers");
    let (client, _) = fleetlock::test_support::counted_client().await;
    let count = |before: u64| requests.get() - before;
    let n = |t: Timestamp| Some(AttributeValue::N(t.0.to_string()));
    let one = returning(1);

    take(&store, &g, "a", one, at(0)).await;
    let before = requests.get();
    assert_eq!(steady(&store, &g, "a", at(1)).await, Release::Returning);
    assert_eq!(count(before), 1, "a steady-state that starts a return");
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(raw.get("h:a").cloned(), n(at(0)));
    assert_eq!(raw.get("b:a").cloned(), n(at(1)));
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("1".into()))
    );
    assert!(!raw.contains_key("released_at"));

    for (what, node, expected) in [
        ("a repeated steady-state", "a", Release::StillReturning),
        ("a steady-state of nobody", "z", Release::NotHeld),
    ] {
        let before = requests.get();
        assert_eq!(steady(&store, &g, node, at(2)).await, expected);
        assert_eq!(count(before), 1, "{what}");
    }
    let before = requests.get();
    assert!(matches!(
        take(&store, &g, "a", one, at(2)).await,
        Acquire::Refused(Refusal::Returning { .. })
    ));
    assert_eq!(
        take(&store, &g, "b", one, at(2)).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(count(before), 2, "a returning node and a newcomer asking");

    let before = requests.get();
    let stop = store
        .stop_rollout(
            &g,
            &id("a"),
            at(1),
            fleetlock::domain::lock::StopCause::Return,
            at(30),
        )
        .await
        .unwrap();
    assert_eq!(stop.outcome, Stopping::Stopped);
    assert_eq!(count(before), 1, "a stop");
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(raw.get("o:a").cloned(), n(at(1)));
    assert!(matches!(raw.get("stopped"), Some(AttributeValue::M(_))));

    let before = requests.get();
    assert_eq!(
        returned(&store, &g, "a", Some(at(1)), at(31)).await,
        Returned::Freed
    );
    assert_eq!(count(before), 1, "a confirmation");
    let raw = raw_item(&client, store.table(), "workers").await;
    for gone in ["h:a", "b:a", "o:a"] {
        assert!(!raw.contains_key(gone), "{gone} left: {raw:?}");
    }
    assert_eq!(raw.get("released_at").cloned(), n(at(31)));
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("0".into()))
    );
    assert!(
        raw.contains_key("stopped"),
        "the stop is a person's to clear"
    );
}

/// Nodes ask while the holders report steady-state and hooks confirm
/// returns, all at once, and keep asking until every confirmation has
/// landed: no answer ever shows more holders and returning slots together
/// than the slots, each confirmation frees only a return that stood, and
/// the three slots freed go to exactly three askers.
#[tokio::test]
async fn askers_steady_states_and_confirmations_racing_never_over_grant() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let (store, _) = dynamo_store("return-race").await;
    let store = Arc::new(store);
    let g = group("workers");
    let three = returning(3);
    for node in ["h0", "h1", "h2"] {
        assert_eq!(
            take(&*store, &g, node, three, at(0)).await,
            Acquire::Granted
        );
    }
    let confirmed = Arc::new(AtomicUsize::new(0));
    let mut askers = Vec::new();
    for n in 0..24u64 {
        let (racer, in_group, confirmed) = (Arc::clone(&store), g.clone(), Arc::clone(&confirmed));
        askers.push(tokio::spawn(async move {
            let node = format!("asker-{n}");
            let mut asks = 0;
            loop {
                // Read before asking: an ask sent after the last
                // confirmation landed is the asker's last.
                let all_back = confirmed.load(Ordering::SeqCst) == 3;
                let answer = racer
                    .acquire(&in_group, &id(&node), three, at(2))
                    .await
                    .unwrap();
                asks += 1;
                assert!(
                    answer.group.holders.len() <= 3,
                    "{node}'s answer shows {:?}",
                    answer.group.holders
                );
                match answer.outcome {
                    Acquire::Granted => return (true, asks),
                    Acquire::Refused(Refusal::Full) if all_back => return (false, asks),
                    Acquire::Refused(Refusal::Full) => tokio::task::yield_now().await,
                    other => panic!("{node}: {other:?}"),
                }
            }
        }));
    }
    let mut confirmations = Vec::new();
    for holder in ["h0", "h1", "h2"] {
        let (racer, in_group, confirmed) = (Arc::clone(&store), g.clone(), Arc::clone(&confirmed));
        confirmations.push(tokio::spawn(async move {
            racer
                .release(&in_group, &id(holder), true, at(1))
                .await
                .unwrap();
            let freed = racer
                .returned(&in_group, &id(holder), None, at(2))
                .await
                .unwrap()
                .outcome;
            assert_eq!(freed, Returned::Freed, "{holder}");
            confirmed.fetch_add(1, Ordering::SeqCst);
        }));
    }
    for confirmation in confirmations {
        confirmation.await.unwrap();
    }
    let (mut granted, mut asks) = (0, 0);
    for asker in askers {
        let (won, asked) = asker.await.unwrap();
        granted += usize::from(won);
        asks += asked;
    }
    assert_eq!(
        granted, 3,
        "the three freed slots, each to one asker ({asks} asks)"
    );
    let record = stored(&*store, &g).await;
    assert_eq!(record.holders.len(), 3, "the returns all ended");
    assert!(record.returning.is_empty());
    let (client, _) = fleetlock::test_support::counted_client().await;
    let raw = raw_item(&client, store.table(), "workers").await;
    assert_eq!(
        raw.get("holder_count").cloned(),
        Some(AttributeValue::N("3".into()))
    );
}

/// docs/operating.md: in a group with both gates, a confirmation racing
/// the next node's reservation are two conditional writes on one item:
/// the reservation either finds the slot still returning (full) or freed
/// (it reserves), never both at once. Which is sent first alternates, and
/// each order must be seen.
#[tokio::test]
async fn a_return_confirmed_racing_the_next_reservation_never_reserves_past_the_slots() {
    let (store, _) = dynamo_store("return-drain-race").await;
    let store = Arc::new(store);
    let both = GroupRules {
        drain: Some(DrainRule {
            timeout: Duration::from_secs(900),
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        ..returning(1)
    };
    let mut seen = (0, 0);
    for round in 0..16 {
        let g = group(&format!("round-{round}"));
        assert_eq!(take(&*store, &g, "a", both, at(0)).await, Acquire::Reserves);
        let drained = store.drained(&g, &id("a"), None, at(1)).await.unwrap();
        assert_eq!(drained.outcome, Drained::Granted, "round {round}");
        assert_eq!(steady(&*store, &g, "a", at(2)).await, Release::Returning);
        let confirm = {
            let (store, g) = (Arc::clone(&store), g.clone());
            async move { returned(&*store, &g, "a", None, at(3)).await }
        };
        let reserve = {
            let (store, g) = (Arc::clone(&store), g.clone());
            async move { take(&*store, &g, "b", both, at(3)).await }
        };
        let (confirmed, reserved) = if round % 2 == 0 {
            let confirmed = tokio::spawn(confirm);
            let reserved = tokio::spawn(reserve);
            (confirmed.await.unwrap(), reserved.await.unwrap())
        } else {
            let reserved = tokio::spawn(reserve);
            let confirmed = tokio::spawn(confirm);
            (confirmed.await.unwrap(), reserved.await.unwrap())
        };
        assert_eq!(confirmed, Returned::Freed, "round {round}");
        let record = stored(&*store, &g).await;
        match reserved {
            Acquire::Refused(Refusal::Full) => {
                seen.0 += 1;
                assert!(record.holders.is_empty(), "round {round}: {record:?}");
                // b asks again, as Zincati does: the freed slot is its.
                assert_eq!(take(&*store, &g, "b", both, at(4)).await, Acquire::Reserves);
            }
            Acquire::Reserves => {
                seen.1 += 1;
                assert!(record.returning.is_empty(), "round {round}: {record:?}");
                assert!(record.draining.contains_key(&id("b")), "round {round}");
            }
            other => panic!("round {round}: b heard {other:?}"),
        }
        let record = stored(&*store, &g).await;
        assert_eq!(record.holders.len(), 1, "round {round}: {record:?}");
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "reservations refused {}, made {}: both orders must be seen",
        seen.0,
        seen.1
    );
}

/// A confirmation held back by the proxy lands after the node came back,
/// took a slot again and started a new return: it names the return it
/// confirms, finds another, and frees nothing.
#[tokio::test]
async fn a_late_confirmation_never_ends_a_newer_return() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("return-late").await;
    let store = Arc::new(store);
    let (client, _) = fleetlock::test_support::counted_client().await;
    let direct = fleetlock::store::dynamodb::DynamoStore::new(client, store.table());
    let g = group("workers");
    let one = returning(1);
    take(&direct, &g, "a", one, at(0)).await;
    steady(&direct, &g, "a", at(1)).await;
    proxy.next(Fault::Hold, 1);
    let late = tokio::spawn({
        let (store, g) = (Arc::clone(&store), g.clone());
        async move {
            store
                .returned(&g, &id("a"), Some(at(1)), at(2))
                .await
                .unwrap()
                .outcome
        }
    });
    proxy.until_held().await;
    assert_eq!(
        returned(&direct, &g, "a", Some(at(1)), at(2)).await,
        Returned::Freed
    );
    assert_eq!(take(&direct, &g, "a", one, at(3)).await, Acquire::Granted);
    assert_eq!(steady(&direct, &g, "a", at(4)).await, Release::Returning);
    proxy.release();
    assert_eq!(late.await.unwrap(), Returned::OtherReturn { since: at(4) });
    let record = stored(&direct, &g).await;
    assert_eq!(
        record.returning.get(&id("a")),
        Some(&at(4)),
        "still returning"
    );
}

/// A resume that read the group before the sweep stopped it (its write held
/// back by the proxy) clears the person's pause it read, never the stop it
/// did not see.
#[tokio::test]
async fn a_resume_never_clears_a_stop_written_after_it_read_the_group() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("return-resume").await;
    let store = Arc::new(store);
    let (client, _) = fleetlock::test_support::counted_client().await;
    let direct = fleetlock::store::dynamodb::DynamoStore::new(client, store.table());
    let g = group("workers");
    take(&direct, &g, "a", returning(2), at(0)).await;
    steady(&direct, &g, "a", at(1)).await;
    let pause = ByPerson {
        reason: PauseReason::parse("kernel regression").unwrap(),
        since: at(2),
        by: "ana".into(),
    };
    direct.pause(&g, pause).await.unwrap();
    proxy.next_writes(Fault::Hold, 1);
    let resume = tokio::spawn({
        let (store, g) = (Arc::clone(&store), g.clone());
        async move { store.resume(&g).await.unwrap() }
    });
    proxy.until_held().await;
    let late = at(1).plus(TIMEOUT);
    let stop = direct
        .stop_rollout(
            &g,
            &id("a"),
            at(1),
            fleetlock::domain::lock::StopCause::Return,
            late,
        )
        .await;
    assert_eq!(stop.unwrap().outcome, Stopping::Stopped);
    proxy.release();
    let resumed = resume.await.unwrap();
    assert_eq!(
        resumed.outcome,
        Changed::Yes,
        "the pause it read is cleared"
    );
    let record = stored(&direct, &g).await;
    assert_eq!(record.pause.person, None);
    assert!(record.pause.stop.is_some(), "the stop it never saw stays");
    assert_eq!(
        take(&direct, &g, "b", returning(2), late).await,
        Acquire::Refused(Refusal::Paused)
    );
}
