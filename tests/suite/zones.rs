//! One zone at a time (`FLEETLOCK_ZONES`): on both stores through the store
//! API, with DynamoDB Local's requests counted (one per answer); through the
//! HTTP edge as a stock Zincati calls, with a credential for the parent; and
//! a race of three zones' nodes on one DynamoDB Local table, where no two
//! zones may ever be out at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetlock::domain::auth::{Auth, Clients, new_credential};
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::lock::{Acquire, GroupRules, Refusal, Release};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::domain::zones::ZoneGroup;
use fleetlock::http::Api;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{
    basic_auth, dynamo_store, group, id, raw_item, rules, send, spawn_server, stored, take,
    zincati, zincati_body,
};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);

fn in_zone(slots: u32, zone_group: &str) -> GroupRules {
    GroupRules {
        zone: Some(ZoneGroup::of(&group(zone_group))),
        ..rules(slots, Duration::ZERO)
    }
}

/// Zone a goes out, zone b waits for all of zone a's nodes, then goes.
async fn one_zone_out_at_a_time<S: LockStore>(store: &S) {
    let g = group("workers");
    let (a, b) = (in_zone(3, "workers.a"), in_zone(3, "workers.b"));
    assert_eq!(take(store, &g, "a1", a, T0).await, Acquire::Granted);
    assert_eq!(take(store, &g, "a2", a, T0).await, Acquire::Granted);
    assert_eq!(
        take(store, &g, "b1", b, T0).await,
        Acquire::Refused(Refusal::OtherZone {
            zone: "workers.a".into()
        })
    );
    let record = stored(store, &g).await;
    assert_eq!(record.holders.len(), 2, "the refusal took nothing");
    assert_eq!(record.zone.as_deref(), Some("workers.a"));
    for node in ["a1", "a2"] {
        let released = store.release(&g, &id(node), false, T0).await.unwrap();
        assert_eq!(released.outcome, Release::Released);
    }
    let later = T0.plus(Duration::from_secs(1));
    assert_eq!(take(store, &g, "b1", b, later).await, Acquire::Granted);
    assert_eq!(stored(store, &g).await.zone.as_deref(), Some("workers.b"));
    assert_eq!(
        take(store, &g, "a1", a, later).await,
        Acquire::Refused(Refusal::OtherZone {
            zone: "workers.b".into()
        })
    );
}

#[tokio::test]
async fn one_zone_out_at_a_time_in_memory() {
    one_zone_out_at_a_time(&MemoryStore::default()).await;
}

#[tokio::test]
async fn one_zone_out_at_a_time_on_dynamodb_in_one_request_per_answer() {
    let (store, counter) = dynamo_store("zones").await;
    let before = counter.get();
    one_zone_out_at_a_time(&store).await;
    // 7 answers (4 pre-reboots, 2 releases, 1 refusal) and two reads of
    // the item by the test itself.
    assert_eq!(counter.get() - before, 7 + 2);
    let (client, _) = fleetlock::test_support::counted_client().await;
    let item = raw_item(&client, store.table(), "workers").await;
    assert_eq!(
        item.get("zone")
            .and_then(|v| v.as_s().ok())
            .map(String::as_str),
        Some("workers.b"),
        "the zone out is one attribute of the group's one item"
    );
}

/// A lease's take-over across zones: only from the last holder of the
/// other zone, on DynamoDB as in memory.
async fn a_take_over_never_brings_a_second_zone_out<S: LockStore>(store: &S) {
    let g = group("workers");
    let lease = Duration::from_secs(3600);
    let leased = |zone| GroupRules {
        lease: Some(lease),
        ..in_zone(2, zone)
    };
    assert_eq!(
        take(store, &g, "a1", leased("workers.a"), T0).await,
        Acquire::Granted
    );
    assert_eq!(
        take(store, &g, "a2", leased("workers.a"), T0).await,
        Acquire::Granted
    );
    let late = T0.plus(lease * 2);
    // Both expired: the group is full, zone a is out, and a node of zone b
    // hears so (taking over one of two would leave zone a out beside it).
    assert_eq!(
        take(store, &g, "b1", leased("workers.b"), late).await,
        Acquire::Refused(Refusal::OtherZone {
            zone: "workers.a".into()
        })
    );
    // A node of zone a takes an expired slot of its own zone.
    assert!(matches!(
        take(store, &g, "a3", leased("workers.a"), late).await,
        Acquire::TakesExpired { .. }
    ));
    assert_eq!(stored(store, &g).await.holders.len(), 2);
}

#[tokio::test]
async fn a_take_over_never_brings_a_second_zone_out_in_memory() {
    a_take_over_never_brings_a_second_zone_out(&MemoryStore::default()).await;
}

#[tokio::test]
async fn a_take_over_never_brings_a_second_zone_out_on_dynamodb() {
    let (store, _) = dynamo_store("zones-lease").await;
    a_take_over_never_brings_a_second_zone_out(&store).await;
}

fn zoned_api<S: LockStore>(store: S, auth: Auth) -> Arc<Api<S>> {
    let groups = GroupSlots::parse("workers=3,db=1")
        .unwrap()
        .with_zones("workers")
        .unwrap();
    Arc::new(Api::new(FleetLock::new(groups, store), auth))
}

/// As a stock Zincati calls: each node's group names its zone; the answer
/// to a node of another zone is its own kind, and its journal sentence
/// names the zone out and the node's own.
async fn zincati_nodes_of_three_zones<S: LockStore + 'static>(store: S) {
    let server = spawn_server(zoned_api(store, Auth::Disabled)).await;
    let a = zincati(server.addr, "pre-reboot", "n1", "workers.us-east-1a").await;
    assert_eq!(a.status, 200, "{}", a.json());
    let a2 = zincati(server.addr, "pre-reboot", "n2", "workers.us-east-1a").await;
    assert_eq!(a2.status, 200);
    let b = zincati(server.addr, "pre-reboot", "n3", "workers.us-east-1b").await;
    assert_eq!(b.status, 423);
    assert_eq!(b.kind(), "another_zone_out");
    let value = b.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("group 'workers'")
            && value.contains("zone 'us-east-1a'")
            && value.contains("zone 'us-east-1b'"),
        "{value}"
    );
    // The parent's own name is a zone of its own; a name under the split
    // group that is no zone is refused, never a group of its own.
    let bare = zincati(server.addr, "pre-reboot", "n4", "workers").await;
    assert_eq!(bare.kind(), "another_zone_out");
    let nested = zincati(server.addr, "pre-reboot", "n5", "workers.a.b").await;
    assert_eq!(
        (nested.status, nested.kind().as_str()),
        (400, "invalid_group")
    );
    // Steady-state at boot from a node of another zone is fine, and
    // releases free zone a for the others.
    let boot = zincati(server.addr, "steady-state", "n3", "workers.us-east-1b").await;
    assert_eq!(boot.status, 200);
    for node in ["n1", "n2"] {
        let done = zincati(server.addr, "steady-state", node, "workers.us-east-1a").await;
        assert_eq!(done.word(), "released");
    }
    let c = zincati(server.addr, "pre-reboot", "n6", "workers.us-east-1c").await;
    assert_eq!(c.status, 200);
    let b = zincati(server.addr, "pre-reboot", "n3", "workers.us-east-1b").await;
    assert_eq!(b.kind(), "another_zone_out");
    // Another group is not split.
    let db = zincati(server.addr, "pre-reboot", "n7", "db").await;
    assert_eq!(db.status, 200);
}

#[tokio::test]
async fn zincati_nodes_of_three_zones_in_memory() {
    zincati_nodes_of_three_zones(MemoryStore::default()).await;
}

#[tokio::test]
async fn zincati_nodes_of_three_zones_on_dynamodb() {
    let (store, _) = dynamo_store("zones-http").await;
    zincati_nodes_of_three_zones(store).await;
}

#[tokio::test]
async fn a_credential_for_the_group_reaches_its_zones_and_no_other_group() {
    let workers = new_credential("fleet", "workers").unwrap();
    let clients = Clients::parse(&workers.entry).unwrap();
    let server = spawn_server(zoned_api(MemoryStore::default(), Auth::Required(clients))).await;
    let authorization = basic_auth("fleet", &workers.secret);
    let ask = |group: &'static str| {
        let (addr, authorization) = (server.addr, authorization.clone());
        async move {
            send(
                addr,
                "POST",
                "/v1/pre-reboot",
                &[
                    ("fleet-lock-protocol", "true"),
                    ("authorization", &authorization),
                ],
                zincati_body("n1", group),
            )
            .await
        }
    };
    assert_eq!(ask("workers.us-east-1a").await.status, 200);
    assert_eq!(ask("db").await.kind(), "forbidden_group");
    // `db` is not split by zone: the credential for `workers` does not
    // reach `db.us-east-1a`, nor a group only named like a zone.
    assert_eq!(ask("db.us-east-1a").await.kind(), "forbidden_group");
}

/// Nodes of three zones race for a group of 3 slots on one DynamoDB Local
/// table, on one clock that every call moves on: a node counts as out from the moment it hears its grant until it sends
/// its steady-state, and no grant may ever find a node of another zone out.
#[tokio::test]
async fn three_zones_racing_on_dynamodb_never_have_two_zones_out() {
    let (store, _) = dynamo_store("zones-race").await;
    let store = Arc::new(store);
    let out: Arc<Mutex<BTreeMap<String, &'static str>>> = Arc::default();
    let grants = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(T0.0));
    let tick = move || Timestamp(clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1);
    let zones = ["workers.a", "workers.b", "workers.c"];
    let mut nodes = Vec::new();
    for n in 0..12 {
        let (store, out, grants, tick) = (store.clone(), out.clone(), grants.clone(), tick.clone());
        let zone = zones[n % 3];
        nodes.push(tokio::spawn(async move {
            let g = group("workers");
            let node = format!("node-{n}");
            for _ in 0..25 {
                let outcome = take(&*store, &g, &node, in_zone(3, zone), tick()).await;
                match outcome {
                    Acquire::Granted => {
                        {
                            let mut out = out.lock().unwrap();
                            let others: Vec<_> =
                                out.values().filter(|z| **z != zone).copied().collect();
                            assert!(others.is_empty(), "{zone} granted while {others:?} out");
                            out.insert(node.clone(), zone);
                        }
                        grants.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        tokio::task::yield_now().await;
                        out.lock().unwrap().remove(&node);
                        let released = store.release(&g, &id(&node), false, tick()).await.unwrap();
                        assert_eq!(released.outcome, Release::Released);
                    }
                    Acquire::Refused(Refusal::OtherZone { .. })
                    | Acquire::Refused(Refusal::Full)
                    | Acquire::Refused(Refusal::Settling { .. }) => {}
                    other => panic!("{other:?}"),
                }
            }
        }));
    }
    for node in nodes {
        node.await.unwrap();
    }
    let grants = grants.load(std::sync::atomic::Ordering::Relaxed);
    assert!(grants >= 10, "the race granted only {grants} slots");
    assert!(stored(&*store, &group("workers")).await.holders.is_empty());
}
