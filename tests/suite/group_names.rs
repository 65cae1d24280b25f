//! One reading of a group's name (issue 64), as a stock Zincati asks, on
//! both stores: a name a configured group could mean (its case twin, a zone
//! of it, a name under it) never takes slots of its own under `*`, and the
//! journal's sentence names the group the node most likely means. An item
//! `*` made before a split is named at start.

use std::sync::Arc;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::lock::{Acquire, GroupRules};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::http::Api;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, rules, spawn_server, take, zincati};

const T0: Timestamp = Timestamp(1_764_480_000_000);

fn served<S: LockStore>(store: S, groups: &str, zones: Option<&str>) -> Arc<Api<S>> {
    let mut slots = GroupSlots::parse(groups).unwrap();
    if let Some(zones) = zones {
        slots = slots.with_zones(zones).unwrap();
    }
    Arc::new(Api::new(FleetLock::new(slots, store), Auth::Disabled))
}

/// Every node holding a slot, in every item of the table.
async fn nodes_out<S: LockStore>(store: &S) -> usize {
    let groups = store.groups(None).await.unwrap();
    groups.iter().map(|(_, record)| record.holders.len()).sum()
}

/// Issue 64's one-slot group split by zone beside a `*`: four nodes asked,
/// four were granted in two zones. Now one is, and each other hears which
/// name it most likely means.
async fn a_split_groups_twins_take_none_of_its_slots<S: LockStore + 'static>(store: S) {
    let api = served(store, "workers=1,*=1", Some("workers"));
    let server = spawn_server(Arc::clone(&api)).await;
    let store = api.service().store();
    let first = zincati(server.addr, "pre-reboot", "n1", "workers.us-east-1a").await;
    assert_eq!(first.status, 200, "{}", first.json());
    for (node, asked, meant) in [
        ("n2", "Workers.us-east-1b", "workers.us-east-1b"),
        ("n3", "wOrkers.us-east-1b", "workers.us-east-1b"),
        ("n4", "Workers.us-east-1a", "workers.us-east-1a"),
        ("n5", "workers-us-east-1b", "workers.us-east-1b"),
        ("n6", "Workers", "workers"),
    ] {
        for endpoint in ["pre-reboot", "steady-state"] {
            let answer = zincati(server.addr, endpoint, node, asked).await;
            assert_eq!(
                (answer.status, answer.kind().as_str()),
                (403, "unknown_group"),
                "{endpoint} {asked}"
            );
            let value = answer.json()["value"].as_str().unwrap().to_owned();
            assert!(
                value.contains(&format!("most likely belongs to group '{meant}'")),
                "{asked}: {value}"
            );
        }
    }
    assert_eq!(nodes_out(store).await, 1, "one slot, one node out");
    let items: Vec<String> = store
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(items, ["workers"], "no refused name made an item");
}

#[tokio::test]
async fn a_split_groups_twins_take_none_of_its_slots_in_memory() {
    a_split_groups_twins_take_none_of_its_slots(MemoryStore::default()).await;
}

#[tokio::test]
async fn a_split_groups_twins_take_none_of_its_slots_on_dynamodb() {
    let (store, _) = dynamo_store("names-twins").await;
    a_split_groups_twins_take_none_of_its_slots(store).await;
}

/// The zone unit on a server whose FLEETLOCK_ZONES was forgotten: `db`
/// and three zones of it were granted at once under `*`. Now the zones are
/// refused, with or without a `*`, and the journal names the setting.
async fn zones_of_a_group_not_split_are_refused<S: LockStore + 'static>(store: S, groups: &str) {
    let api = served(store, groups, None);
    let server = spawn_server(Arc::clone(&api)).await;
    let store = api.service().store();
    let db = zincati(server.addr, "pre-reboot", "d0", "db").await;
    assert_eq!(db.status, 200, "{}", db.json());
    for (node, zone) in [("d1", "a"), ("d2", "b"), ("d3", "c")] {
        let asked = format!("db.us-east-1{zone}");
        let answer = zincati(server.addr, "pre-reboot", node, &asked).await;
        assert_eq!(answer.status, 403, "{groups}: {asked}");
        assert_eq!(answer.kind(), "unknown_group");
        let value = answer.json()["value"].as_str().unwrap().to_owned();
        assert!(
            value.contains("under group 'db', which is not split by zone")
                && value.contains("FLEETLOCK_ZONES")
                && value.contains("group = \"db\""),
            "{value}"
        );
    }
    assert_eq!(nodes_out(store).await, 1, "{groups}");
}

#[tokio::test]
async fn zones_of_a_group_not_split_are_refused_in_memory() {
    for groups in ["db=1,*=1", "db=1"] {
        zones_of_a_group_not_split_are_refused(MemoryStore::default(), groups).await;
    }
}

#[tokio::test]
async fn zones_of_a_group_not_split_are_refused_on_dynamodb() {
    for (prefix, groups) in [("names-db-star", "db=1,*=1"), ("names-db", "db=1")] {
        let (store, _) = dynamo_store(prefix).await;
        zones_of_a_group_not_split_are_refused(store, groups).await;
    }
}

/// `*` made `workers.us-east-1a` (its node holds a slot there) before
/// `workers` was split by zone: the start names it, with why, and a group
/// `*` made that is still its own is not named.
async fn an_item_made_before_the_split_is_named<S: LockStore>(store: S) {
    let split = GroupSlots::parse("workers=1,*=1")
        .unwrap()
        .with_zones("workers")
        .unwrap();
    let service = FleetLock::new(split, store);
    assert_eq!(service.leftover_groups().await.unwrap(), []);
    // What `*` made before the split, as the store wrote it then.
    let wildcard = GroupRules {
        wildcard_limit: Some(100),
        ..rules(1, std::time::Duration::ZERO)
    };
    for made in ["workers.us-east-1a", "batch"] {
        assert_eq!(
            take(service.store(), &group(made), "old", wildcard, T0).await,
            Acquire::Granted
        );
    }
    let named = service.leftover_groups().await.unwrap();
    assert_eq!(named.len(), 1, "{named:?}");
    assert_eq!(named[0].0, group("workers.us-east-1a"));
    assert!(
        named[0]
            .1
            .contains("zone 'us-east-1a' of group 'workers', which is split by zone"),
        "{}",
        named[0].1
    );
}

#[tokio::test]
async fn an_item_made_before_the_split_is_named_in_memory() {
    an_item_made_before_the_split_is_named(MemoryStore::default()).await;
}

#[tokio::test]
async fn an_item_made_before_the_split_is_named_on_dynamodb() {
    let (store, _) = dynamo_store("names-leftover").await;
    an_item_made_before_the_split_is_named(store).await;
}
