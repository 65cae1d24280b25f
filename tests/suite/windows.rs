//! Maintenance windows as Zincati meets them: over HTTP, against DynamoDB
//! Local, with a clock the test sets. Outside its windows a group's
//! pre-reboot is refused before the store is asked.

use std::sync::Arc;

use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::ByPerson;
use fleetlock::domain::time::Timestamp;
use fleetlock::test_support::ManualClock;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::windows::{Schedule, Unnameable};
use fleetlock::http::Api;

use crate::helpers::{dynamo_store, rules, spawn_server, zincati};
use fleetlock::domain::store::Decisions;

fn at(text: &str) -> Timestamp {
    let ts: jiff::Timestamp = text.parse().unwrap();
    Timestamp(ts.as_millisecond() as u64)
}

/// One window for `workers`: Saturday 22:00 to 00:00 UTC.
fn saturday_night(groups: &GroupSlots) -> Schedule {
    Schedule::parse(
        "workers: days=Sat start_time=22:00 length_minutes=120",
        None,
        |g| {
            groups
                .slots_for(g)
                .map(|_| ())
                .map_err(|_| Unnameable::NotConfigured(groups.not_configured(g)))
        },
        false,
    )
    .unwrap()
}

#[tokio::test]
async fn a_closed_group_is_refused_without_a_single_dynamodb_request() {
    let (store, requests) = dynamo_store("windows").await;
    let groups = GroupSlots::parse("default=1,workers=2").unwrap();
    let windows = Schedule::parse(
        "workers: days=Sat,Sun start_time=22:00 length_minutes=120",
        Some("Europe/Berlin"),
        |g| {
            groups
                .slots_for(g)
                .map(|_| ())
                .map_err(|_| Unnameable::NotConfigured(groups.not_configured(g)))
        },
        false,
    )
    .unwrap();
    // Monday 2026-12-07 10:00 UTC: the workers' window is closed.
    let clock = ManualClock::at(at("2026-12-07T10:00:00Z"));
    let service = FleetLock::new(groups, store)
        .with_windows(windows)
        .with_clock(clock.clone());
    let api = Arc::new(Api::new(service, Auth::Disabled));
    let server = spawn_server(Arc::clone(&api)).await;
    let addr = server.addr;

    let before = requests.get();
    let r = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(
        (r.status, r.kind()),
        (423, "outside_maintenance_window".to_string())
    );
    let value = r.json()["value"].as_str().unwrap().to_owned();
    // Saturday 22:00 in Berlin (CET, UTC+1) is 21:00 UTC.
    assert!(
        value.contains("2026-12-12T21:00:00Z")
            && value.contains("Sat 2026-12-12 22:00 Europe/Berlin"),
        "{value}"
    );
    assert_eq!(
        requests.get() - before,
        0,
        "no DynamoDB request outside a window"
    );

    // A group without windows is always open; steady-state works while closed.
    assert_eq!(
        zincati(addr, "pre-reboot", "d1", "default").await.status,
        200
    );
    let before = requests.get();
    let r = zincati(addr, "steady-state", "w1", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("not_held"))
    );
    assert_eq!(requests.get() - before, 1);

    // Inside the window: granted, one request.
    clock.set(at("2026-12-12T21:30:00Z"));
    let before = requests.get();
    let r = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    assert_eq!(requests.get() - before, 1);

    // After it closes even the holder is refused (it keeps its slot and
    // reboots in the next window), and its steady-state still releases.
    clock.set(at("2026-12-13T00:00:00Z"));
    let before = requests.get();
    let r = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(
        (r.status, r.kind()),
        (423, "outside_maintenance_window".to_string())
    );
    assert_eq!(
        requests.get() - before,
        0,
        "no DynamoDB request for a holder outside its window either"
    );
    let groups = api.service().store();
    let held = fleetlock::domain::store::LockStore::groups(groups, None)
        .await
        .unwrap();
    let workers = held.iter().find(|(g, _)| g.as_str() == "workers").unwrap();
    assert_eq!(workers.1.holders.len(), 1, "the holder keeps its slot");
    let r = zincati(addr, "steady-state", "w1", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("released"))
    );
}

/// A closed window is the first answer a node hears, whatever else holds the
/// group back: it is what tells the operator when the next try can work.
/// Once the window opens, the group's other reasons come back in the core's
/// order: paused, then settling, then full.
#[tokio::test]
async fn a_closed_window_outranks_paused_settling_and_full() {
    let (store, requests) = dynamo_store("windows-rank").await;
    let workers = GroupName::parse("workers").unwrap();
    let node = |n: &str| NodeId::parse(n).unwrap();
    // Saturday 2026-12-12 21:30 UTC, inside the window: w1 and w2 take the
    // two slots, w3 a third one granted while the group had three, and w3
    // gives its back, so the group is full, settling and then paused.
    let inside = at("2026-12-12T21:30:00Z");
    let three = rules(3, std::time::Duration::ZERO);
    for n in ["w1", "w2", "w3"] {
        store
            .acquire(&workers, &node(n), three, inside)
            .await
            .unwrap();
    }
    store
        .release(&workers, &node("w3"), false, inside)
        .await
        .unwrap();
    store
        .pause(
            &workers,
            ByPerson {
                reason: PauseReason::parse("kernel regression").unwrap(),
                since: inside,
                by: "alice".into(),
            },
        )
        .await
        .unwrap();

    let groups = GroupSlots::parse("workers=2")
        .unwrap()
        .with_setting("FLEETLOCK_SETTLE", "workers=1h")
        .unwrap();
    let windows = Schedule::parse(
        "workers: days=Sat,Sun start_time=22:00 length_minutes=120",
        Some("Europe/Berlin"),
        |g| {
            groups
                .slots_for(g)
                .map(|_| ())
                .map_err(|_| Unnameable::NotConfigured(groups.not_configured(g)))
        },
        false,
    )
    .unwrap();
    // Sunday 00:30 UTC: past the window's close at 00:00 UTC.
    let clock = ManualClock::at(at("2026-12-13T00:30:00Z"));
    let service = FleetLock::new(groups, store)
        .with_windows(windows)
        .with_clock(clock.clone());
    let api = Arc::new(Api::new(service, Auth::Disabled));
    let server = spawn_server(Arc::clone(&api)).await;
    let ask = || zincati(server.addr, "pre-reboot", "w4", "workers");

    let before = requests.get();
    assert_eq!(ask().await.kind(), "outside_maintenance_window");
    assert_eq!(requests.get() - before, 0);

    // Inside the window (still within the settle hour): paused first.
    clock.set(at("2026-12-12T22:00:00Z"));
    assert_eq!(ask().await.kind(), "group_paused");
    api.service().store().resume(&workers).await.unwrap();
    assert_eq!(ask().await.kind(), "settling");
    clock.set(at("2026-12-12T22:31:00Z"));
    assert_eq!(ask().await.kind(), "semaphore_full");
}

/// A drain begins only while the window stays open for the drain timeout:
/// near its end a free slot is refused (`outside_maintenance_window`, the
/// value says when the window closes) and nothing is reserved, in one
/// request; earlier the same node reserves the slot; a reservation made in
/// time is confirmed and granted even once the window is about to close.
#[tokio::test]
async fn a_drain_begins_only_while_the_window_stays_open_for_its_timeout() {
    let (store, requests) = dynamo_store("windows-drain").await;
    let groups = GroupSlots::parse("workers=2")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=30m")
        .unwrap();
    let windows = saturday_night(&groups);
    let clock = ManualClock::at(at("2026-12-12T23:40:00Z"));
    let service = FleetLock::new(groups, store)
        .with_windows(windows)
        .with_clock(clock.clone());
    let api = Arc::new(Api::new(service, Auth::Disabled));
    let server = spawn_server(Arc::clone(&api)).await;
    let addr = server.addr;

    let before = requests.get();
    let late = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(
        (late.status, late.kind()),
        (423, "outside_maintenance_window".to_string())
    );
    let value = late.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("closes at 2026-12-13T00:00:00Z") && value.contains("30m"),
        "{value}"
    );
    assert_eq!(requests.get() - before, 1, "the refused reservation only");
    let stored = api.service().store();
    let workers = GroupName::parse("workers").unwrap();
    let held = stored.groups(Some(&workers)).await.unwrap();
    assert!(
        held.iter().all(|(_, r)| r.holders.is_empty()),
        "nothing reserved: {held:?}"
    );

    // 40 minutes before the close: the drain has its 30 minutes.
    clock.set(at("2026-12-12T23:20:00Z"));
    let reserved = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(reserved.kind(), "waiting_for_drain");
    clock.set(at("2026-12-12T23:45:00Z"));
    let node = NodeId::parse("w1").unwrap();
    let now = fleetlock::domain::time::Clock::now(&clock);
    let confirmed = stored.drained(&workers, &node, None, now).await;
    assert_eq!(
        confirmed.unwrap().outcome,
        fleetlock::domain::lock::Drained::Granted
    );
    let granted = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(
        (granted.status, granted.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );
}

/// Windows gate reboots, not returns (docs/operating.md): a node whose
/// window closed while it rebooted begins its return with its steady-state
/// and the hook's confirmation frees the slot, both while the window is
/// closed; the node's own pre-reboot then hears the window first, and the
/// next node is granted when the window opens again.
#[tokio::test]
async fn a_return_begins_and_is_confirmed_while_the_window_is_closed() {
    use fleetlock::entry::drained::DrainConfirmer;
    use fleetlock::store::dynamodb::DynamoStore;

    let (store, _) = dynamo_store("windows-return").await;
    let table = store.table().to_owned();
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_RETURN", "workers=20m")
        .unwrap();
    let windows = saturday_night(&groups);
    let clock = ManualClock::at(at("2026-12-12T23:50:00Z"));
    let service = FleetLock::new(groups, store)
        .with_windows(windows)
        .with_clock(clock.clone());
    let server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    let addr = server.addr;
    let hook = DrainConfirmer::new(DynamoStore::new(
        crate::helpers::client_as(&format!("drained.{table}")).await,
        &table,
    ))
    .with_clock(clock.clone());

    assert_eq!(
        zincati(addr, "pre-reboot", "w1", "workers").await.status,
        200
    );
    // The reboot ran past the window's close.
    clock.set(at("2026-12-13T00:10:00Z"));
    let back = zincati(addr, "steady-state", "w1", "workers").await;
    assert_eq!(
        (back.status, back.json()["outcome"].as_str()),
        (200, Some("returning"))
    );
    let own = zincati(addr, "pre-reboot", "w1", "workers").await;
    assert_eq!(own.kind(), "outside_maintenance_window", "the window first");
    clock.set(at("2026-12-13T00:15:00Z"));
    let confirmed = hook
        .handle(&serde_json::json!({"action": "returned", "group": "workers", "id": "w1"}))
        .await
        .unwrap();
    assert_eq!(
        (confirmed["outcome"].as_str(), confirmed["done"].as_bool()),
        (Some("returned"), Some(true)),
        "{confirmed}"
    );
    let workers = GroupName::parse("workers").unwrap();
    let (client, _) = fleetlock::test_support::counted_client().await;
    let record = DynamoStore::new(client, &table)
        .groups(Some(&workers))
        .await
        .unwrap();
    assert!(
        record.iter().all(|(_, r)| r.holders.is_empty()),
        "the slot is free: {record:?}"
    );
    // The next Saturday's window: the next node goes.
    clock.set(at("2026-12-19T22:05:00Z"));
    assert_eq!(
        zincati(addr, "pre-reboot", "w2", "workers").await.status,
        200
    );
}
