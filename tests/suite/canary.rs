//! A canary, then waves (`FLEETLOCK_CANARY`): on both stores through the
//! store API, with DynamoDB Local's requests counted; a rollout's stop when
//! a wave's node does not come back; the HTTP edge as a stock Zincati
//! calls; and a race of nodes on a quiet group, where exactly one may go.

use std::sync::Arc;
use std::time::Duration;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::lock::parse_canary;
use fleetlock::domain::lock::{Acquire, GroupRules, Refusal, Release, StopCause, Stopping};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::http::Api;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, id, rules, spawn_server, stored, take, zincati};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);

fn at(minutes: u64) -> Timestamp {
    T0.plus(Duration::from_secs(minutes * 60))
}

fn canary(slots: u32, setting: &str) -> GroupRules {
    GroupRules {
        canary: Some(parse_canary(setting).unwrap()),
        ..rules(slots, Duration::ZERO)
    }
}

async fn release<S: LockStore>(store: &S, node: &str, minutes: u64) {
    let released = store
        .release(&group("workers"), &id(node), false, at(minutes))
        .await
        .unwrap();
    assert_eq!(released.outcome, Release::Released, "{node}");
}

/// The canary alone; the wave of 2 after it is back and baked; the rest
/// at the group's 3 slots; and 8 answers that were no grant in between.
async fn a_canary_then_a_wave_then_the_rest<S: LockStore>(store: &S) {
    let g = group("workers");
    let rules = canary(3, "30m:1+2");
    assert_eq!(take(store, &g, "c", rules, at(0)).await, Acquire::Granted);
    assert!(matches!(
        take(store, &g, "a", rules, at(1)).await,
        Acquire::Refused(Refusal::WaveOut { wave }) if wave.index == Some(0)
    ));
    release(store, "c", 10).await;
    assert_eq!(
        take(store, &g, "a", rules, at(20)).await,
        Acquire::Refused(Refusal::Baking {
            wave: rules.canary.unwrap().wave_of(1),
            until: at(40)
        })
    );
    assert_eq!(take(store, &g, "a", rules, at(40)).await, Acquire::Granted);
    assert_eq!(take(store, &g, "b", rules, at(41)).await, Acquire::Granted);
    assert!(matches!(
        take(store, &g, "d", rules, at(42)).await,
        Acquire::Refused(Refusal::WaveOut { wave }) if wave.index == Some(1)
    ));
    release(store, "a", 50).await;
    release(store, "b", 55).await;
    assert!(matches!(
        take(store, &g, "d", rules, at(60)).await,
        Acquire::Refused(Refusal::Baking { until, .. }) if until == at(85)
    ));
    for (n, node) in ["d", "e", "f"].into_iter().enumerate() {
        assert_eq!(
            take(store, &g, node, rules, at(85 + n as u64)).await,
            Acquire::Granted,
            "{node}: the rest go at the slots"
        );
    }
    assert_eq!(
        take(store, &g, "g", rules, at(90)).await,
        Acquire::Refused(Refusal::Full)
    );
    let record = stored(store, &g).await;
    assert_eq!(record.wave_grants, Some(6));
    assert_eq!(record.rollout_began, Some(at(0)));
}

#[tokio::test]
async fn a_canary_then_a_wave_then_the_rest_in_memory() {
    a_canary_then_a_wave_then_the_rest(&MemoryStore::default()).await;
}

#[tokio::test]
async fn a_canary_then_a_wave_then_the_rest_on_dynamodb_in_one_request_per_answer() {
    let (store, counter) = dynamo_store("canary").await;
    let before = counter.get();
    a_canary_then_a_wave_then_the_rest(&store).await;
    // 11 pre-reboots and 3 releases, one request each, but the canary's:
    // its first write finds the rollout over, its second begins one (once
    // a rollout). And the test's own read of the item.
    assert_eq!(counter.get() - before, 14 + 1 + 1);
}

/// A quiet group's next grant begins a new rollout, on both stores.
async fn a_quiet_group_begins_again_with_a_canary<S: LockStore>(store: &S) {
    let g = group("workers");
    let rules = canary(3, "30m");
    assert_eq!(take(store, &g, "c", rules, at(0)).await, Acquire::Granted);
    release(store, "c", 10).await;
    assert_eq!(take(store, &g, "a", rules, at(40)).await, Acquire::Granted);
    assert_eq!(take(store, &g, "b", rules, at(41)).await, Acquire::Granted);
    release(store, "a", 50).await;
    release(store, "b", 60).await;
    // Quiet for the bake and 6 hours after the last slot came back.
    let next = 60 + 30 + 360 + 1;
    assert_eq!(
        take(store, &g, "y", rules, at(next)).await,
        Acquire::Granted
    );
    assert!(matches!(
        take(store, &g, "z", rules, at(next + 1)).await,
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    let record = stored(store, &g).await;
    assert_eq!(record.wave_grants, Some(1));
    assert_eq!(record.rollout_began, Some(at(next)));
}

#[tokio::test]
async fn a_quiet_group_begins_again_with_a_canary_in_memory() {
    a_quiet_group_begins_again_with_a_canary(&MemoryStore::default()).await;
}

#[tokio::test]
async fn a_quiet_group_begins_again_with_a_canary_on_dynamodb() {
    let (store, _) = dynamo_store("canary-quiet").await;
    a_quiet_group_begins_again_with_a_canary(&store).await;
}

/// A canary not back within its time stops the group, once; the stop is
/// the server's, cleared by a person's resume, and the canary still holds
/// the group until it is back.
async fn a_canary_that_does_not_come_back_stops_the_group<S: LockStore>(store: &S) {
    let g = group("workers");
    let rules = canary(2, "30m:1:1h");
    let rule = rules.canary.unwrap();
    assert_eq!(take(store, &g, "c", rules, at(0)).await, Acquire::Granted);
    let record = stored(store, &g).await;
    assert_eq!(record.waves_overdue(rule, at(59)), vec![]);
    let overdue = record.waves_overdue(rule, at(60));
    assert_eq!(overdue, vec![(id("c"), at(0))]);
    let canary_node = id("c");
    let stop = |minutes| store.stop_rollout(&g, &canary_node, at(0), StopCause::Wave, at(minutes));
    assert_eq!(stop(61).await.unwrap().outcome, Stopping::Stopped);
    let record = stored(store, &g).await;
    let written = record.pause.stop.clone().expect("stopped");
    assert_eq!(
        (written.cause, written.returning_since),
        (StopCause::Wave, at(0))
    );
    assert_eq!(stop(66).await.unwrap().outcome, Stopping::AlreadyCounted);
    assert_eq!(
        take(store, &g, "a", rules, at(67)).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(
        store.resume(&g).await.unwrap().outcome,
        fleetlock::domain::store::Changed::Yes
    );
    assert!(
        stored(store, &g)
            .await
            .waves_overdue(rule, at(70))
            .is_empty()
    );
    assert!(matches!(
        take(store, &g, "a", rules, at(71)).await,
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    // Once the canary gave its slot back, a stop for it changes nothing.
    release(store, "c", 80).await;
    assert_eq!(stop(81).await.unwrap().outcome, Stopping::NotReturning);
}

#[tokio::test]
async fn a_canary_that_does_not_come_back_stops_the_group_in_memory() {
    a_canary_that_does_not_come_back_stops_the_group(&MemoryStore::default()).await;
}

#[tokio::test]
async fn a_canary_that_does_not_come_back_stops_the_group_on_dynamodb() {
    let (store, _) = dynamo_store("canary-stop").await;
    a_canary_that_does_not_come_back_stops_the_group(&store).await;
}

/// As a stock Zincati calls: the canary hears 200, the next node a 423
/// whose sentence stands alone in its journal.
async fn zincati_nodes_behind_a_canary<S: LockStore + 'static>(store: S) {
    let groups = GroupSlots::parse("workers=3")
        .unwrap()
        .with_setting("FLEETLOCK_CANARY", "workers=30m:1+3")
        .unwrap();
    let server = spawn_server(Arc::new(Api::new(
        FleetLock::new(groups, store),
        Auth::Disabled,
    )))
    .await;
    let boot = zincati(server.addr, "steady-state", "n2", "workers").await;
    assert_eq!(boot.status, 200, "steady-state at boot changes nothing");
    let first = zincati(server.addr, "pre-reboot", "n1", "workers").await;
    assert_eq!(first.status, 200, "{}", first.json());
    let again = zincati(server.addr, "pre-reboot", "n1", "workers").await;
    assert_eq!(again.status, 200, "the canary asking again keeps its slot");
    let next = zincati(server.addr, "pre-reboot", "n2", "workers").await;
    assert_eq!(
        (next.status, next.kind().as_str()),
        (423, "waiting_for_wave")
    );
    let value = next.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("group 'workers'")
            && value.contains("the canary, then 3, then the rest")
            && value.contains("the canary is not back in service yet")
            && value.contains("30m"),
        "{value}"
    );
}

#[tokio::test]
async fn zincati_nodes_behind_a_canary_in_memory() {
    zincati_nodes_behind_a_canary(MemoryStore::default()).await;
}

#[tokio::test]
async fn zincati_nodes_behind_a_canary_on_dynamodb() {
    let (store, _) = dynamo_store("canary-http").await;
    zincati_nodes_behind_a_canary(store).await;
}

/// Eight nodes ask at once on a quiet group of 3 slots on DynamoDB Local:
/// each first write finds the rollout over, each second write tries to
/// begin it, and exactly one does.
#[tokio::test]
async fn nodes_racing_on_a_quiet_group_on_dynamodb_let_one_canary_go() {
    let (store, _) = dynamo_store("canary-race").await;
    let store = Arc::new(store);
    let rules = canary(3, "30m");
    let mut nodes = Vec::new();
    for n in 0..8 {
        let store = store.clone();
        nodes.push(tokio::spawn(async move {
            take(
                &*store,
                &group("workers"),
                &format!("node-{n}"),
                rules,
                at(0),
            )
            .await
        }));
    }
    let mut granted = 0;
    for node in nodes {
        match node.await.unwrap() {
            Acquire::Granted => granted += 1,
            Acquire::Refused(Refusal::WaveOut { .. }) | Acquire::Refused(Refusal::Full) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(granted, 1, "one canary");
    let record = stored(&*store, &group("workers")).await;
    assert_eq!((record.holders.len(), record.wave_grants), (1, Some(1)));
}

/// By hand: `fleetlock forget` of a group that holds no slot removes its
/// item, and with it the rollout's count and the last release, so the next
/// node is a new rollout's canary, even minutes after the last one.
async fn a_forgotten_group_begins_a_rollout_at_its_next_grant<S: LockStore>(store: &S) {
    let g = group("workers");
    let rules = canary(3, "30m");
    assert_eq!(take(store, &g, "c", rules, at(0)).await, Acquire::Granted);
    release(store, "c", 10).await;
    assert_eq!(take(store, &g, "a", rules, at(40)).await, Acquire::Granted);
    release(store, "a", 50).await;
    assert!(matches!(
        store.forget(&g).await.unwrap(),
        fleetlock::domain::store::Forgot::Removed { .. }
    ));
    assert_eq!(take(store, &g, "b", rules, at(51)).await, Acquire::Granted);
    assert!(matches!(
        take(store, &g, "d", rules, at(52)).await,
        Acquire::Refused(Refusal::WaveOut { wave }) if wave.index == Some(0)
    ));
    assert_eq!(stored(store, &g).await.rollout_began, Some(at(51)));
}

#[tokio::test]
async fn a_forgotten_group_begins_a_rollout_at_its_next_grant_in_memory() {
    a_forgotten_group_begins_a_rollout_at_its_next_grant(&MemoryStore::default()).await;
}

#[tokio::test]
async fn a_forgotten_group_begins_a_rollout_at_its_next_grant_on_dynamodb() {
    let (store, _) = dynamo_store("canary-forget").await;
    a_forgotten_group_begins_a_rollout_at_its_next_grant(&store).await;
}
