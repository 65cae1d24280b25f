//! Rollout control: a person's and alarms' pauses, and the settle time after
//! each release, against DynamoDB Local and the embedded store, through the
//! store API and over HTTP as Zincati calls. The clock is moved, never slept.

use std::sync::Arc;
use std::time::Duration;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::PauseReason;
use fleetlock::domain::lock::{Acquire, ByPerson, MAX_EXCLUSIONS, Refusal, Release};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::{Changed, Excluding, LockStore};
use fleetlock::domain::time::{Clock, Timestamp};
use fleetlock::http::Api;
use fleetlock::store::memory::MemoryStore;
use fleetlock::test_support::ManualClock;

use crate::helpers::{dynamo_store, group, id, rules, spawn_server, take, zincati};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const SETTLE: Duration = Duration::from_secs(600);

fn person(reason: &str, since: Timestamp) -> ByPerson {
    ByPerson {
        reason: PauseReason::parse(reason).unwrap(),
        since,
        by: "alice".into(),
    }
}

/// The same checks for every store: a person's pause, alarms' pauses kept
/// apart from it, and who still hears yes while paused.
async fn pauses_keep_holders_and_stop_newcomers<S: LockStore>(store: &S) {
    let g = group("workers");
    let open = rules(3, Duration::ZERO);
    assert_eq!(take(store, &g, "holder", open, T0).await, Acquire::Granted);

    let paused = store
        .pause(&g, person("kernel regression", T0))
        .await
        .unwrap();
    assert_eq!(paused.outcome, Changed::Yes);
    assert_eq!(
        take(store, &g, "newcomer", open, T0).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(
        take(store, &g, "holder", open, T0).await,
        Acquire::AlreadyHeld
    );
    // A second pause keeps the first one's reason and time.
    let again = store
        .pause(&g, person("another", T0.plus(SETTLE)))
        .await
        .unwrap();
    assert_eq!(again.outcome, Changed::AlreadySo);
    let kept = again.group.pause.person.unwrap();
    assert_eq!(
        (kept.reason.as_str(), kept.since),
        ("kernel regression", T0)
    );

    // An alarm pauses too; a person's resume leaves the alarm's pause.
    assert_eq!(
        store
            .pause_for_alarm(&g, "etcd-quorum")
            .await
            .unwrap()
            .outcome,
        Changed::Yes
    );
    assert_eq!(
        store
            .pause_for_alarm(&g, "etcd-quorum")
            .await
            .unwrap()
            .outcome,
        Changed::AlreadySo
    );
    assert_eq!(
        store.pause_for_alarm(&g, "api-5xx").await.unwrap().outcome,
        Changed::Yes
    );
    let resumed = store.resume(&g).await.unwrap();
    assert_eq!(resumed.outcome, Changed::Yes);
    assert!(resumed.group.pause.person.is_none());
    assert_eq!(resumed.group.pause.alarms.len(), 2);
    assert_eq!(
        take(store, &g, "newcomer", open, T0).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(store.resume(&g).await.unwrap().outcome, Changed::AlreadySo);

    // Steady-state releases while paused; nobody is evicted.
    let released = store.release(&g, &id("holder"), false, T0).await.unwrap();
    assert_eq!(released.outcome, Release::Released);
    assert!(released.group.pause.is_paused());

    // Each alarm clears its own pause; the last one frees the group.
    assert_eq!(
        store.clear_alarm(&g, "etcd-quorum").await.unwrap().outcome,
        Changed::Yes
    );
    assert_eq!(
        store.clear_alarm(&g, "etcd-quorum").await.unwrap().outcome,
        Changed::AlreadySo
    );
    assert_eq!(
        take(store, &g, "newcomer", open, T0).await,
        Acquire::Refused(Refusal::Paused)
    );
    let cleared = store.clear_alarm(&g, "api-5xx").await.unwrap();
    assert!(!cleared.group.pause.is_paused());
    assert_eq!(
        take(store, &g, "newcomer", open, T0).await,
        Acquire::Granted
    );

    // Pausing a group never used creates it, paused.
    let fresh = group("never-used");
    store.pause(&fresh, person("freeze", T0)).await.unwrap();
    assert_eq!(
        take(store, &fresh, "n", open, T0).await,
        Acquire::Refused(Refusal::Paused)
    );
    let listed = store.groups(Some(&fresh)).await.unwrap();
    assert!(listed[0].1.pause.person.is_some() && listed[0].1.holders.is_empty());
}

/// One settle period for the whole group after any release.
async fn the_group_settles_after_every_release<S: LockStore>(store: &S) {
    let g = group("db");
    let settling = rules(2, SETTLE);
    assert_eq!(take(store, &g, "a", settling, T0).await, Acquire::Granted);
    assert_eq!(take(store, &g, "b", settling, T0).await, Acquire::Granted);
    let at = T0.plus(Duration::from_secs(60));
    store.release(&g, &id("a"), false, at).await.unwrap();
    let until = at.plus(SETTLE);
    assert_eq!(
        take(store, &g, "c", settling, at).await,
        Acquire::Refused(Refusal::Settling { until })
    );
    assert_eq!(
        take(store, &g, "b", settling, at).await,
        Acquire::AlreadyHeld
    );
    let just_before = until.minus(Duration::from_millis(1));
    assert_eq!(
        take(store, &g, "c", settling, just_before).await,
        Acquire::Refused(Refusal::Settling { until })
    );
    assert_eq!(
        take(store, &g, "c", settling, until).await,
        Acquire::Granted
    );
    // A release by someone else (an operator's release) starts it again.
    store.release(&g, &id("b"), false, until).await.unwrap();
    assert!(matches!(
        take(store, &g, "d", settling, until.plus(Duration::from_secs(1))).await,
        Acquire::Refused(Refusal::Settling { .. })
    ));
    // The same group with no settle time configured grants at once.
    assert_eq!(
        take(store, &g, "d", rules(2, Duration::ZERO), until).await,
        Acquire::Granted
    );
}

#[tokio::test]
async fn pauses_in_dynamodb() {
    let (store, _) = dynamo_store("pauses").await;
    pauses_keep_holders_and_stop_newcomers(&store).await;
}

#[tokio::test]
async fn pauses_in_memory() {
    pauses_keep_holders_and_stop_newcomers(&MemoryStore::default()).await;
}

#[tokio::test]
async fn settle_in_dynamodb() {
    let (store, _) = dynamo_store("settle").await;
    the_group_settles_after_every_release(&store).await;
}

#[tokio::test]
async fn settle_in_memory() {
    the_group_settles_after_every_release(&MemoryStore::default()).await;
}

/// The same checks for every store: an excluded node is refused while the
/// rest of its group goes on; a holder excluded keeps its slot and gives it
/// back; an inclusion lets it in again; the limit and `forget` hold.
async fn an_excluded_node_sits_out_while_the_group_goes_on<S: LockStore>(store: &S) {
    let g = group("workers");
    let open = rules(2, Duration::ZERO);
    assert_eq!(take(store, &g, "holder", open, T0).await, Acquire::Granted);
    let excluded = store
        .exclude(&g, &id("sick"), person("disk replacement", T0))
        .await
        .unwrap();
    assert_eq!(excluded.outcome, Excluding::Changed(Changed::Yes));
    assert_eq!(
        store
            .exclude(&g, &id("sick"), person("again", T0))
            .await
            .unwrap()
            .outcome,
        Excluding::Changed(Changed::AlreadySo),
        "a second exclusion keeps the first"
    );
    assert_eq!(
        take(store, &g, "sick", open, T0).await,
        Acquire::Refused(Refusal::Excluded)
    );
    // The rest of the group goes on: a free slot goes to another node.
    assert_eq!(take(store, &g, "well", open, T0).await, Acquire::Granted);
    // A holder excluded keeps its slot, hears yes, and gives it back.
    store
        .exclude(&g, &id("holder"), person("watch it", T0))
        .await
        .unwrap();
    assert_eq!(
        take(store, &g, "holder", open, T0).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(
        store
            .release(&g, &id("holder"), false, T0)
            .await
            .unwrap()
            .outcome,
        Release::Released
    );
    assert_eq!(
        take(store, &g, "holder", open, T0).await,
        Acquire::Refused(Refusal::Excluded)
    );
    // An excluded node of a full group hears that it is excluded.
    assert_eq!(take(store, &g, "other", open, T0).await, Acquire::Granted);
    assert_eq!(
        take(store, &g, "sick", open, T0).await,
        Acquire::Refused(Refusal::Excluded)
    );
    // Included again: it may take a slot once one is free.
    assert_eq!(
        store.include(&g, &id("sick")).await.unwrap().outcome,
        Changed::Yes
    );
    assert_eq!(
        store.include(&g, &id("sick")).await.unwrap().outcome,
        Changed::AlreadySo
    );
    assert_eq!(
        take(store, &g, "sick", open, T0).await,
        Acquire::Refused(Refusal::Full)
    );
    store.release(&g, &id("well"), false, T0).await.unwrap();
    assert_eq!(take(store, &g, "sick", open, T0).await, Acquire::Granted);
    // The limit: at most MAX_EXCLUSIONS a group, the first refused changes nothing.
    let crowded = group("crowded");
    for n in 0..MAX_EXCLUSIONS {
        let decided = store
            .exclude(&crowded, &id(&format!("n{n}")), person("test", T0))
            .await
            .unwrap();
        assert_eq!(decided.outcome, Excluding::Changed(Changed::Yes));
    }
    let refused = store
        .exclude(&crowded, &id("one-too-many"), person("test", T0))
        .await
        .unwrap();
    assert_eq!(refused.outcome, Excluding::AtLimit);
    assert_eq!(refused.group.excluded.len(), MAX_EXCLUSIONS);
    // A group that excludes a node is kept by `forget`.
    assert!(matches!(
        store.forget(&crowded).await.unwrap(),
        fleetlock::domain::store::Forgot::Kept(_)
    ));
    let stored = store.groups(Some(&g)).await.unwrap();
    assert!(stored[0].1.excluded.contains_key(&id("holder")));
    assert!(!stored[0].1.excluded.contains_key(&id("sick")));
}

#[tokio::test]
async fn exclusions_in_dynamodb() {
    let (store, _) = dynamo_store("exclusions").await;
    an_excluded_node_sits_out_while_the_group_goes_on(&store).await;
}

#[tokio::test]
async fn exclusions_in_memory() {
    an_excluded_node_sits_out_while_the_group_goes_on(&MemoryStore::default()).await;
}

#[tokio::test]
async fn an_excluded_nodes_refusal_is_one_request_and_its_exclusion_one_write() {
    let (store, requests) = dynamo_store("one-request-exclusion").await;
    let g = group("workers");
    let open = rules(3, Duration::ZERO);
    take(&store, &g, "a", open, T0).await;
    let before = requests.get();
    store
        .exclude(&g, &id("b"), person("test", T0))
        .await
        .unwrap();
    assert_eq!(
        requests.get() - before,
        2,
        "an exclusion reads the group, then writes once on what it read"
    );
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "b", open, T0).await,
        Acquire::Refused(Refusal::Excluded)
    );
    assert_eq!(requests.get() - before, 1, "an excluded node's refusal");
    let before = requests.get();
    assert_eq!(take(&store, &g, "c", open, T0).await, Acquire::Granted);
    assert_eq!(requests.get() - before, 1, "a grant beside an exclusion");
}

/// Many nodes racing for the slots while exclusions come and go: never more
/// holders than slots, and never a grant to a node excluded before it asked.
#[tokio::test]
async fn a_race_with_exclusions_never_over_grants_nor_grants_the_excluded() {
    let (store, _) = dynamo_store("exclusion-race").await;
    let store = Arc::new(store);
    let g = group("workers");
    let open = rules(3, Duration::ZERO);
    for n in 0..5 {
        store
            .exclude(&g, &id(&format!("excluded-{n}")), person("race", T0))
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for n in 0..40 {
        let (racer, at) = (Arc::clone(&store), g.clone());
        tasks.push(tokio::spawn(async move {
            let (store, g) = (racer, at);
            let node = if n % 4 == 0 {
                format!("excluded-{}", n % 5)
            } else {
                format!("node-{n}")
            };
            let outcome = store
                .acquire(&g, &id(&node), open, T0)
                .await
                .unwrap()
                .outcome;
            (node, outcome)
        }));
        if n % 10 == 5 {
            let (flipper, at) = (Arc::clone(&store), g.clone());
            tasks.push(tokio::spawn(async move {
                let (store, g) = (flipper, at);
                let node = format!("flip-{n}");
                // Another flip's write may land between this one's read and
                // write: it is then overtaken and changes nothing, and the
                // operator runs it again, as the command says.
                while store
                    .exclude(&g, &id(&node), person("flip", T0))
                    .await
                    .unwrap()
                    .outcome
                    == Excluding::Changed(Changed::Overtaken)
                {}
                while store.include(&g, &id(&node)).await.unwrap().outcome == Changed::Overtaken {}
                (node, Acquire::Refused(Refusal::Full))
            }));
        }
    }
    let mut granted = Vec::new();
    for task in tasks {
        let (node, outcome) = task.await.unwrap();
        if outcome == Acquire::Granted {
            granted.push(node);
        }
    }
    assert!(granted.len() <= 3, "{granted:?}");
    assert!(
        granted.iter().all(|node| !node.starts_with("excluded-")),
        "{granted:?}"
    );
    let stored = store.groups(Some(&g)).await.unwrap();
    assert_eq!(stored[0].1.holders.len(), granted.len());
    assert_eq!(stored[0].1.excluded.len(), 5);
}

#[tokio::test]
async fn paused_and_settling_refusals_are_still_one_request() {
    let (store, requests) = dynamo_store("one-request-rollout").await;
    let g = group("workers");
    let settling = rules(3, SETTLE);
    take(&store, &g, "a", settling, T0).await;
    take(&store, &g, "b", settling, T0).await;
    store.release(&g, &id("a"), false, T0).await.unwrap();
    let count = |before: u64| requests.get() - before;
    let before = requests.get();
    assert!(matches!(
        take(&store, &g, "c", settling, T0).await,
        Acquire::Refused(Refusal::Settling { .. })
    ));
    assert_eq!(count(before), 1, "settling");
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "b", settling, T0).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(count(before), 1, "a holder while settling");
    store.pause_for_alarm(&g, "x").await.unwrap();
    let before = requests.get();
    assert_eq!(
        take(&store, &g, "c", settling, T0).await,
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(count(before), 1, "paused");
    let before = requests.get();
    assert_eq!(
        store
            .release(&g, &id("b"), false, T0)
            .await
            .unwrap()
            .outcome,
        Release::Released
    );
    assert_eq!(count(before), 1, "a release while paused");
    let before = requests.get();
    assert_eq!(
        store.clear_alarm(&g, "x").await.unwrap().outcome,
        Changed::Yes
    );
    assert_eq!(count(before), 1, "an alarm's clear is one write");
}

/// The service over real HTTP, as Zincati calls it, with a clock the test moves.
fn served<S: LockStore>(store: S, clock: &ManualClock) -> Arc<Api<S>> {
    let groups = GroupSlots::parse("default=1,workers=2")
        .unwrap()
        .with_setting("FLEETLOCK_SETTLE", "workers=10m")
        .unwrap();
    let service = FleetLock::new(groups, store).with_clock(clock.clone());
    Arc::new(Api::new(service, Auth::Disabled))
}

async fn zincati_sees_paused_and_settling_groups<S: LockStore>(store: S) {
    let clock = ManualClock::at(T0);
    let api = served(store, &clock);
    let server = spawn_server(Arc::clone(&api)).await;
    let addr = server.addr;

    // Settling: after a release, a free slot waits for the settle time.
    assert_eq!(
        zincati(addr, "pre-reboot", "w1", "workers").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "pre-reboot", "w2", "workers").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "steady-state", "w1", "workers").await.status,
        200
    );
    let r = zincati(addr, "pre-reboot", "w3", "workers").await;
    assert_eq!((r.status, r.kind()), (423, "settling".to_string()));
    let value = r.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("2025-11-30T05:30:00Z") && value.contains("10m"),
        "{value}"
    );
    let r = zincati(addr, "pre-reboot", "w2", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );
    clock.advance(SETTLE);
    let r = zincati(addr, "pre-reboot", "w3", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );

    // Paused: newcomers hear group_paused with who, since when and why.
    api.service()
        .store()
        .pause(
            &group("default"),
            person("kernel 6.12 regression", clock.now()),
        )
        .await
        .unwrap();
    let r = zincati(addr, "pre-reboot", "d1", "default").await;
    assert_eq!((r.status, r.kind()), (423, "group_paused".to_string()));
    let value = r.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("by alice since 2025-11-30T05:30:00Z: kernel 6.12 regression"),
        "{value}"
    );
    // Steady-state at boot still works in the paused group.
    let r = zincati(addr, "steady-state", "d1", "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("not_held"))
    );
    // Other groups are untouched: workers still frees and grants slots.
    let r = zincati(addr, "steady-state", "w2", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("released"))
    );
    clock.advance(SETTLE);
    let r = zincati(addr, "pre-reboot", "w4", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    api.service()
        .store()
        .resume(&group("default"))
        .await
        .unwrap();
    let r = zincati(addr, "pre-reboot", "d1", "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
}

#[tokio::test]
async fn over_http_against_dynamodb() {
    let (store, _) = dynamo_store("rollout-http").await;
    zincati_sees_paused_and_settling_groups(store).await;
}

#[tokio::test]
async fn over_http_against_the_embedded_store() {
    zincati_sees_paused_and_settling_groups(MemoryStore::default()).await;
}

/// Every answer Zincati can get costs one DynamoDB request, refusals
/// included, counted at the HTTP client under the whole service.
#[tokio::test]
async fn over_http_every_answer_is_one_dynamodb_request() {
    let (store, requests) = dynamo_store("rollout-one-request").await;
    let clock = ManualClock::at(T0);
    let api = served(store, &clock);
    let server = spawn_server(Arc::clone(&api)).await;
    let addr = server.addr;
    let mut asked = Vec::new();
    let mut ask = async |endpoint: &str, node: &str, group: &str, answer: &str| {
        let before = requests.get();
        let r = zincati(addr, endpoint, node, group).await;
        assert_eq!(r.word(), answer, "{endpoint} {node} {group}");
        asked.push((answer.to_owned(), requests.get() - before));
    };
    ask("pre-reboot", "d1", "default", "granted").await;
    ask("pre-reboot", "d1", "default", "already_held").await;
    ask("pre-reboot", "d2", "default", "semaphore_full").await;
    ask("steady-state", "d2", "default", "not_held").await;
    ask("pre-reboot", "w1", "workers", "granted").await;
    ask("steady-state", "w1", "workers", "released").await;
    ask("pre-reboot", "w2", "workers", "settling").await;
    api.service()
        .store()
        .pause(&group("workers"), person("regression", clock.now()))
        .await
        .unwrap();
    clock.advance(SETTLE);
    ask("pre-reboot", "w2", "workers", "group_paused").await;
    ask("steady-state", "w2", "workers", "not_held").await;
    api.service()
        .store()
        .exclude(&group("default"), &id("d2"), person("disk", clock.now()))
        .await
        .unwrap();
    ask("steady-state", "d1", "default", "released").await;
    ask("pre-reboot", "d2", "default", "node_excluded").await;
    for (answer, sent) in asked {
        assert_eq!(sent, 1, "{answer} cost {sent} DynamoDB requests");
    }
}

/// Operators excluding at once, one place below the cap: whatever the
/// interleaving, the group never excludes more than it may, each exclude
/// says what it did (landed, at the limit, or overtaken, which the command
/// asks to run again), and what landed is exactly what is stored.
async fn concurrent_excludes_stop_at_the_cap<S: LockStore + 'static>(store: Arc<S>) {
    for round in 0..5 {
        let g = group(&format!("capped-{round}"));
        for n in 0..MAX_EXCLUSIONS - 1 {
            store
                .exclude(&g, &id(&format!("early-{n}")), person("fill", T0))
                .await
                .unwrap();
        }
        let racers: Vec<_> = (0..6)
            .map(|n| {
                let (store, g) = (Arc::clone(&store), g.clone());
                tokio::spawn(async move {
                    let node = id(&format!("late-{n}"));
                    // As the operator would: run it again when overtaken.
                    loop {
                        let outcome = store
                            .exclude(&g, &node, person("race", T0))
                            .await
                            .unwrap()
                            .outcome;
                        if outcome != Excluding::Changed(Changed::Overtaken) {
                            return (node, outcome);
                        }
                    }
                })
            })
            .collect();
        let mut landed = Vec::new();
        for racer in racers {
            let (node, outcome) = racer.await.unwrap();
            match outcome {
                Excluding::Changed(Changed::Yes) => landed.push(node),
                Excluding::AtLimit => {}
                other => panic!("{node}: {other:?}"),
            }
        }
        assert_eq!(
            landed.len(),
            1,
            "round {round}: exactly the last place taken"
        );
        let stored = store.groups(Some(&g)).await.unwrap();
        let excluded = &stored[0].1.excluded;
        assert_eq!(excluded.len(), MAX_EXCLUSIONS, "round {round}");
        assert!(excluded.contains_key(&landed[0]));
        assert_eq!(
            excluded
                .keys()
                .filter(|k| k.as_str().starts_with("late-"))
                .count(),
            1,
            "round {round}: {excluded:?}"
        );
    }
}

#[tokio::test]
async fn concurrent_excludes_stop_at_the_cap_in_dynamodb() {
    let (store, _) = dynamo_store("exclusion-cap-race").await;
    concurrent_excludes_stop_at_the_cap(Arc::new(store)).await;
}

#[tokio::test]
async fn concurrent_excludes_stop_at_the_cap_in_memory() {
    concurrent_excludes_stop_at_the_cap(Arc::new(MemoryStore::default())).await;
}
