//! Groups that only `*=N` covers: counted, bounded, and forgotten again, on
//! both stores (the DynamoDB one against DynamoDB Local).

use std::sync::Arc;
use std::time::Duration;

use fleetlock::domain::lock::{Acquire, ByPerson, GroupRules, Refusal};
use fleetlock::domain::store::{Forgot, LockStore};
use fleetlock::domain::time::Timestamp;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, group, id, memory_api, spawn_server, zincati};
use fleetlock::domain::store::Decisions;

/// A group only `*` covers, with room for `limit` such groups.
fn wildcard(limit: u32) -> GroupRules {
    GroupRules {
        slots: 1,
        settle: Duration::ZERO,
        wildcard_limit: Some(limit),
        lease: None,
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

/// A group the configuration names: never counted.
const LISTED: GroupRules = GroupRules {
    slots: 1,
    settle: Duration::ZERO,
    wildcard_limit: None,
    lease: None,
    drain: None,
    return_timeout: None,
    zone: None,
    canary: None,
};

async fn names<S: LockStore>(store: &S) -> Vec<String> {
    store
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The same story on either store.
async fn the_limit_refuses_only_new_wildcard_groups_until_one_is_forgotten<S: LockStore>(store: S) {
    let at = Timestamp(1_000);
    for name in ["a", "b", "c"] {
        let took = store
            .acquire(&group(name), &id("n1"), wildcard(3), at)
            .await;
        assert_eq!(took.unwrap().outcome, Acquire::Granted, "{name}");
    }
    let refused = store
        .acquire(&group("d"), &id("n1"), wildcard(3), at)
        .await
        .unwrap();
    assert_eq!(
        refused.outcome,
        Acquire::Refused(Refusal::TooManyGroups { limit: 3 })
    );
    assert_eq!(names(&store).await, ["a", "b", "c"], "nothing stored for d");
    // Groups that exist go on as before, and named groups are never counted.
    let again = store.acquire(&group("a"), &id("n2"), wildcard(3), at).await;
    assert_eq!(again.unwrap().outcome, Acquire::Refused(Refusal::Full));
    let listed = store.acquire(&group("named"), &id("n1"), LISTED, at).await;
    assert_eq!(listed.unwrap().outcome, Acquire::Granted);

    // A group that holds a slot, or is paused, is kept.
    match store.forget(&group("b")).await.unwrap() {
        Forgot::Kept(record) => assert!(record.holders.holds(&id("n1"))),
        other => panic!("forgot a group holding a slot: {other:?}"),
    }
    store
        .release(&group("b"), &id("n1"), false, at)
        .await
        .unwrap();
    let pause = ByPerson {
        reason: fleetlock::domain::input::PauseReason::parse("hold on").unwrap(),
        since: at,
        by: "alice".into(),
    };
    store.pause(&group("b"), pause).await.unwrap();
    assert!(matches!(
        store.forget(&group("b")).await.unwrap(),
        Forgot::Kept(_)
    ));
    store.resume(&group("b")).await.unwrap();
    // Nor a group the sweep stopped, even with its slot back: the stop
    // waits for a person's resume, and forgetting the item would lift it.
    let gated = fleetlock::domain::lock::GroupRules {
        return_timeout: Some(std::time::Duration::from_secs(60)),
        zone: None,
        canary: None,
        ..wildcard(3)
    };
    let b = group("b");
    let took = store.acquire(&b, &id("n3"), gated, Timestamp(2_000)).await;
    assert_eq!(took.unwrap().outcome, Acquire::Granted);
    store
        .release(&b, &id("n3"), true, Timestamp(3_000))
        .await
        .unwrap();
    let n3 = id("n3");
    let stop = store.stop_rollout(
        &b,
        &n3,
        Timestamp(3_000),
        fleetlock::domain::lock::StopCause::Return,
        Timestamp(70_000),
    );
    assert_eq!(
        stop.await.unwrap().outcome,
        fleetlock::domain::lock::Stopping::Stopped
    );
    store
        .returned(&b, &id("n3"), None, Timestamp(80_000))
        .await
        .unwrap();
    match store.forget(&b).await.unwrap() {
        Forgot::Kept(record) => assert!(record.pause.stop.is_some() && record.holders.is_empty()),
        other => panic!("forgot a stopped group: {other:?}"),
    }
    store.resume(&b).await.unwrap();
    assert_eq!(
        store.forget(&group("b")).await.unwrap(),
        Forgot::Removed { counted: true }
    );
    assert_eq!(
        store.forget(&group("b")).await.unwrap(),
        Forgot::NothingStored
    );
    store
        .release(&group("named"), &id("n1"), false, at)
        .await
        .unwrap();
    assert_eq!(
        store.forget(&group("named")).await.unwrap(),
        Forgot::Removed { counted: false }
    );
    // A place is free again: for the API function, whose list was full
    // (a process other than the person's `forget`), within the minute it
    // remembers a full list.
    let later = Timestamp(at.0 + 60_000);
    let took = store
        .acquire(&group("d"), &id("n1"), wildcard(3), later)
        .await;
    assert_eq!(took.unwrap().outcome, Acquire::Granted);
    assert_eq!(names(&store).await, ["a", "c", "d"]);
}

#[tokio::test]
async fn the_memory_store_counts_wildcard_groups() {
    the_limit_refuses_only_new_wildcard_groups_until_one_is_forgotten(MemoryStore::default()).await;
}

#[tokio::test]
async fn the_dynamodb_store_counts_wildcard_groups() {
    let (store, _) = dynamo_store("wildcard").await;
    the_limit_refuses_only_new_wildcard_groups_until_one_is_forgotten(store).await;
}

#[tokio::test]
async fn a_new_wildcard_group_costs_three_requests_once_then_one() {
    let (store, requests) = dynamo_store("wildcard-cost").await;
    let at = Timestamp(1_000);
    let mut sent = Vec::new();
    for (label, name, node) in [
        ("first grant of a new group", "new", "n1"),
        ("second node, full", "new", "n2"),
        ("the holder again", "new", "n1"),
        ("a second new group", "other", "n1"),
        ("a new group past the limit", "third", "n1"),
    ] {
        let before = requests.get();
        let outcome = store
            .acquire(&group(name), &id(node), wildcard(2), at)
            .await
            .unwrap()
            .outcome;
        sent.push((label, outcome, requests.get() - before));
    }
    assert_eq!(
        sent,
        [
            ("first grant of a new group", Acquire::Granted, 3),
            ("second node, full", Acquire::Refused(Refusal::Full), 1),
            ("the holder again", Acquire::AlreadyHeld, 1),
            ("a second new group", Acquire::Granted, 3),
            (
                "a new group past the limit",
                Acquire::Refused(Refusal::TooManyGroups { limit: 2 }),
                2
            ),
        ]
    );
    // The list of counted groups is no group itself.
    assert_eq!(names(&store).await, ["new", "other"]);
    let counted: Vec<String> = store
        .wildcard_groups()
        .await
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(counted, ["new", "other"]);
}

/// Many new groups at once for the last free place: exactly one gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_race_for_the_last_place_admits_exactly_one_group() {
    let (store, _) = dynamo_store("wildcard-race").await;
    let store = Arc::new(store);
    let at = Timestamp(1_000);
    for name in ["g0", "g1", "g2", "g3"] {
        store
            .acquire(&group(name), &id("n"), wildcard(5), at)
            .await
            .unwrap();
    }
    let tasks: Vec<_> = (0..12)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let name = group(&format!("new{n}"));
                store
                    .acquire(&name, &id("n"), wildcard(5), at)
                    .await
                    .unwrap()
                    .outcome
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let granted = outcomes.iter().filter(|o| **o == Acquire::Granted).count();
    let refused = outcomes
        .iter()
        .filter(|o| **o == Acquire::Refused(Refusal::TooManyGroups { limit: 5 }))
        .count();
    assert_eq!((granted, refused), (1, 11), "{outcomes:?}");
    assert_eq!(names(&*store).await.len(), 5);
    assert_eq!(store.wildcard_groups().await.unwrap().len(), 5);
}

#[tokio::test]
async fn zincati_hears_too_many_groups_with_a_sentence_for_its_journal() {
    let server = spawn_server(memory_api("default=1,*=1")).await;
    for n in 0..100 {
        let r = zincati(server.addr, "pre-reboot", "n", &format!("g{n}")).await;
        assert_eq!(r.status, 200, "group {n}");
    }
    let r = zincati(server.addr, "pre-reboot", "n", "g100").await;
    assert_eq!((r.status, r.kind().as_str()), (403, "too_many_groups"));
    assert_eq!(
        r.json()["value"],
        "group 'g100' is new and only '*' covers it, but the 100 such groups this server \
         allows are in use; ask an operator to name the group in FLEETLOCK_GROUPS or to remove \
         an unused one with 'fleetlock forget'"
    );
    // The named group is never refused for it.
    let r = zincati(server.addr, "pre-reboot", "n", "default").await;
    assert_eq!(r.status, 200);
}

/// With `workers` full and `*=1`, a node asking for `Workers` is not a new
/// group with a slot of its own: it hears which group it probably meant,
/// and no fourth worker goes down.
#[tokio::test]
async fn a_case_twin_of_a_full_group_is_refused_not_granted_by_star() {
    let server = spawn_server(memory_api("workers=3,*=1")).await;
    let nodes = [
        "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d01",
        "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d02",
        "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d03",
    ];
    for node in nodes {
        assert_eq!(
            zincati(server.addr, "pre-reboot", node, "workers")
                .await
                .status,
            200
        );
    }
    let fourth = zincati(
        server.addr,
        "pre-reboot",
        "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d04",
        "Workers",
    )
    .await;
    assert_eq!(
        (fourth.status, fourth.kind()),
        (403, "unknown_group".into())
    );
    let value = fourth.json()["value"].as_str().unwrap().to_owned();
    assert!(value.contains("group 'workers'"), "{value}");
    assert!(value.contains("case-sensitive"), "{value}");
    // A group only `*` covers, not a twin, is still served.
    let other = zincati(server.addr, "pre-reboot", nodes[0], "batch").await;
    assert_eq!(other.status, 200);
}

#[tokio::test]
async fn a_full_list_is_not_written_again_for_a_minute_after_a_refusal() {
    // Each write to the list is billed by its whole size, refused or not:
    // about 126 write units with 2,000 names of 64 characters.
    let (store, requests) = dynamo_store("wildfull").await;
    let at = Timestamp(1_000);
    for name in ["a", "b"] {
        let took = store
            .acquire(&group(name), &id("n1"), wildcard(2), at)
            .await;
        assert_eq!(took.unwrap().outcome, Acquire::Granted, "{name}");
    }
    let requests_for = |name: &'static str, at: Timestamp| {
        let (store, requests) = (&store, &requests);
        async move {
            let before = requests.get();
            let refused = store
                .acquire(&group(name), &id("n1"), wildcard(2), at)
                .await
                .unwrap();
            assert_eq!(
                refused.outcome,
                Acquire::Refused(Refusal::TooManyGroups { limit: 2 })
            );
            requests.get() - before
        }
    };
    // The first refusal asks the list: the group's write, then the count.
    assert_eq!(requests_for("c", at).await, 2);
    // Within the minute, the group's own write only (an item it lacks).
    let within = Timestamp(at.0 + 59_000);
    assert_eq!(requests_for("d", within).await, 1);
    // After it, the list is asked again.
    let after = Timestamp(at.0 + 60_000);
    assert_eq!(requests_for("e", after).await, 2);
    // A group a person forgets (`fleetlock forget`, a process of its own)
    // frees a place, which the API function sees once its minute is over:
    // within it, the group's own write only, refused.
    store
        .release(&group("b"), &id("n1"), false, after)
        .await
        .unwrap();
    assert!(matches!(
        store.forget(&group("b")).await.unwrap(),
        Forgot::Removed { counted: true }
    ));
    assert_eq!(requests_for("f", Timestamp(after.0 + 59_000)).await, 1);
    let took = store
        .acquire(
            &group("f"),
            &id("n1"),
            wildcard(2),
            Timestamp(after.0 + 60_000),
        )
        .await;
    assert_eq!(took.unwrap().outcome, Acquire::Granted);
}
