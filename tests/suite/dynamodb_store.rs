//! The DynamoDB adapter against Amazon's DynamoDB Local on loopback.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryPartition;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType,
    ScalarAttributeType,
};
use fleetlock::domain::input::GroupName;
use fleetlock::domain::lock::{Acquire, GroupRules, Refusal, Release};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::{DynamoStore, Regional, TableProblem};
use fleetlock::test_support::{RequestCounter, counted_client};

use crate::helpers::{RoleStore, dynamo_store, group, id, raw_item, rules, unique_table_name};
use fleetlock::domain::store::Decisions;

/// A group with `count` slots and no settle time.
fn slots(count: u32) -> GroupRules {
    rules(count, Duration::ZERO)
}

/// What a pre-reboot of node `name` at time `at` is answered.
async fn take(store: &RoleStore, g: &GroupName, name: &str, count: u32, at: u64) -> Acquire {
    store
        .acquire(g, &id(name), slots(count), Timestamp(at))
        .await
        .unwrap()
        .outcome
}

async fn holders(store: &RoleStore, name: &str) -> Vec<(String, u64)> {
    let groups = store.groups(Some(&group(name))).await.unwrap();
    groups
        .first()
        .map(|(_, record)| {
            record
                .holders
                .holders()
                .map(|(id, at)| (id.to_string(), at.0))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn first_use_of_a_group_creates_it_in_the_same_request() {
    let (store, requests) = dynamo_store("first-use").await;
    let before = requests.get();
    let decided = store
        .acquire(&group("default"), &id("a"), slots(1), Timestamp(1_000))
        .await
        .unwrap();
    assert_eq!(decided.outcome, Acquire::Granted);
    assert_eq!(requests.get() - before, 1, "one DynamoDB request");
    assert_eq!(holders(&store, "default").await, vec![("a".into(), 1_000)]);
    let listed = store.groups(None).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].1.slots, Some(1));
}

#[tokio::test]
async fn a_holder_asking_again_keeps_one_slot_and_its_first_time() {
    let (store, _) = dynamo_store("recursive").await;
    let g = group("default");
    store
        .acquire(&g, &id("a"), slots(2), Timestamp(1_000))
        .await
        .unwrap();
    let again = store
        .acquire(&g, &id("a"), slots(2), Timestamp(2_000))
        .await
        .unwrap();
    assert_eq!(again.outcome, Acquire::AlreadyHeld);
    assert_eq!(again.group.holders.len(), 1);
    assert_eq!(holders(&store, "default").await, vec![("a".into(), 1_000)]);
    // One slot is still free for another node.
    let other = store
        .acquire(&g, &id("b"), slots(2), Timestamp(3_000))
        .await
        .unwrap();
    assert_eq!(other.outcome, Acquire::Granted);
}

#[tokio::test]
async fn release_is_idempotent_and_a_non_holder_changes_nothing() {
    let (store, _) = dynamo_store("release").await;
    let g = group("default");
    store
        .acquire(&g, &id("a"), slots(1), Timestamp(1_000))
        .await
        .unwrap();
    let by_other = store
        .release(&g, &id("b"), false, Timestamp(2_000))
        .await
        .unwrap();
    assert_eq!(by_other.outcome, Release::NotHeld);
    assert_eq!(holders(&store, "default").await, vec![("a".into(), 1_000)]);
    assert_eq!(
        store
            .release(&g, &id("a"), false, Timestamp(2_000))
            .await
            .unwrap()
            .outcome,
        Release::Released
    );
    assert_eq!(
        store
            .release(&g, &id("a"), false, Timestamp(2_000))
            .await
            .unwrap()
            .outcome,
        Release::NotHeld
    );
    assert!(holders(&store, "default").await.is_empty());
    // A release in a group never used creates nothing.
    assert_eq!(
        store
            .release(&group("never"), &id("a"), false, Timestamp(2_000))
            .await
            .unwrap()
            .outcome,
        Release::NotHeld
    );
    let names: Vec<_> = store
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(names, vec!["default"]);
}

#[tokio::test]
async fn a_full_group_refuses_and_keeps_its_holders() {
    let (store, _) = dynamo_store("full").await;
    let g = group("workers");
    for name in ["a", "b"] {
        assert_eq!(
            store
                .acquire(&g, &id(name), slots(2), Timestamp(1))
                .await
                .unwrap()
                .outcome,
            Acquire::Granted
        );
    }
    let refused = store
        .acquire(&g, &id("c"), slots(2), Timestamp(2))
        .await
        .unwrap();
    assert_eq!(refused.outcome, Acquire::Refused(Refusal::Full));
    assert_eq!(refused.group.holders.len(), 2);
    let ids: Vec<_> = holders(&store, "workers")
        .await
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ids, vec!["a", "b"]);
}

#[tokio::test]
async fn slot_count_raised_and_lowered_applies_at_once_without_eviction() {
    let (store, _) = dynamo_store("resize").await;
    let g = group("default");
    store
        .acquire(&g, &id("a"), slots(1), Timestamp(1))
        .await
        .unwrap();
    assert_eq!(
        take(&store, &g, "b", 1, 2).await,
        Acquire::Refused(Refusal::Full)
    );
    // Raised to 3: two more fit.
    assert_eq!(take(&store, &g, "b", 3, 3).await, Acquire::Granted);
    assert_eq!(take(&store, &g, "c", 3, 4).await, Acquire::Granted);
    // Lowered to 1: nobody is evicted, nobody new enters, holders still hear yes.
    assert_eq!(
        take(&store, &g, "d", 1, 5).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(take(&store, &g, "c", 1, 5).await, Acquire::AlreadyHeld);
    assert_eq!(holders(&store, "default").await.len(), 3);
    store
        .release(&g, &id("a"), false, Timestamp(5))
        .await
        .unwrap();
    store
        .release(&g, &id("b"), false, Timestamp(5))
        .await
        .unwrap();
    assert_eq!(
        take(&store, &g, "d", 1, 6).await,
        Acquire::Refused(Refusal::Full)
    );
    store
        .release(&g, &id("c"), false, Timestamp(6))
        .await
        .unwrap();
    assert_eq!(take(&store, &g, "d", 1, 7).await, Acquire::Granted);
}

#[tokio::test]
async fn zero_slots_freeze_a_group_even_on_first_use() {
    let (store, _) = dynamo_store("frozen").await;
    let g = group("frozen");
    assert_eq!(
        take(&store, &g, "a", 0, 1).await,
        Acquire::Refused(Refusal::Full)
    );
    assert!(holders(&store, "frozen").await.is_empty());
    store
        .acquire(&g, &id("b"), slots(1), Timestamp(2))
        .await
        .unwrap();
    assert_eq!(take(&store, &g, "b", 0, 3).await, Acquire::AlreadyHeld);
    assert_eq!(
        take(&store, &g, "c", 0, 3).await,
        Acquire::Refused(Refusal::Full)
    );
}

/// What `call` decided, and the HTTP requests the client sent to DynamoDB
/// while it ran.
async fn requests_for<T>(requests: &RequestCounter, call: impl Future<Output = T>) -> (T, u64) {
    let before = requests.get();
    let outcome = call.await;
    (outcome, requests.get() - before)
}

#[tokio::test]
async fn every_protocol_decision_is_exactly_one_request() {
    let (store, requests) = dynamo_store("one-request").await;
    let (g, frozen) = (group("default"), group("frozen"));
    let (a, b) = (id("a"), id("b"));
    let settle_1h = rules(1, Duration::from_secs(3600));
    let store = &store;
    let acquire = |g, id, rules, at| async move {
        let decided = store.acquire(g, id, rules, Timestamp(at)).await.unwrap();
        format!("{:?}", decided.outcome)
    };
    let release = |g, id, at| async move {
        let decided = store.release(g, id, false, Timestamp(at)).await.unwrap();
        format!("{:?}", decided.outcome)
    };
    store
        .pause(
            &frozen,
            fleetlock::domain::lock::ByPerson {
                reason: fleetlock::domain::input::PauseReason::parse("frozen").unwrap(),
                since: Timestamp(0),
                by: "ops".into(),
            },
        )
        .await
        .unwrap();
    let cases = [
        (
            "grant",
            requests_for(&requests, acquire(&g, &a, slots(1), 1)).await,
            "Granted",
        ),
        (
            "already held",
            requests_for(&requests, acquire(&g, &a, slots(1), 2)).await,
            "AlreadyHeld",
        ),
        (
            "full",
            requests_for(&requests, acquire(&g, &b, slots(1), 3)).await,
            "Refused(Full)",
        ),
        (
            "paused",
            requests_for(&requests, acquire(&frozen, &b, slots(1), 3)).await,
            "Refused(Paused)",
        ),
        (
            "release by a non-holder",
            requests_for(&requests, release(&g, &b, 4)).await,
            "NotHeld",
        ),
        (
            "release",
            requests_for(&requests, release(&g, &a, 5)).await,
            "Released",
        ),
        (
            "settling",
            requests_for(&requests, acquire(&g, &b, settle_1h, 6)).await,
            "Refused(Settling { until: Timestamp(3600005) })",
        ),
    ];
    for (label, (outcome, sent), expected) in cases {
        assert_eq!(outcome, expected, "{label}");
        assert_eq!(sent, 1, "{label} sent {sent} DynamoDB requests");
    }
}

/// Many distinct nodes race for a few slots; exactly that many win, and the
/// table agrees. Then all release and the race runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_race_of_many_nodes_never_over_grants() {
    const NODES: usize = 120;
    const SLOTS: u32 = 5;
    let (store, _) = dynamo_store("race").await;
    let store = Arc::new(store);
    let g = group("default");
    for round in 0..2 {
        let tasks: Vec<_> = (0..NODES)
            .map(|n| {
                let (store, g) = (Arc::clone(&store), g.clone());
                tokio::spawn(async move {
                    let node = id(&format!("node-{round}-{n:03}"));
                    let decided = store
                        .acquire(&g, &node, slots(SLOTS), Timestamp::now())
                        .await
                        .unwrap();
                    (node, decided.outcome)
                })
            })
            .collect();
        let mut granted = BTreeSet::new();
        for task in tasks {
            let (node, outcome) = task.await.unwrap();
            match outcome {
                Acquire::Granted => assert!(granted.insert(node.to_string())),
                Acquire::Refused(Refusal::Full) => {}
                other => panic!("{node} never asked before and nothing pauses: {other:?}"),
            }
        }
        assert_eq!(
            granted.len(),
            SLOTS as usize,
            "round {round}: exactly the slot count won"
        );
        let stored: BTreeSet<_> = holders(&store, "default")
            .await
            .into_iter()
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            stored, granted,
            "round {round}: the table holds exactly the winners"
        );
        // Everyone sends steady-state, winners and losers alike, concurrently.
        let releases: Vec<_> = (0..NODES)
            .map(|n| {
                let (store, g) = (Arc::clone(&store), g.clone());
                tokio::spawn(async move {
                    let node = id(&format!("node-{round}-{n:03}"));
                    store
                        .release(&g, &node, false, Timestamp::now())
                        .await
                        .unwrap()
                        .outcome
                })
            })
            .collect();
        let mut released = 0;
        for task in releases {
            if task.await.unwrap() == Release::Released {
                released += 1;
            }
        }
        assert_eq!(
            released, SLOTS as usize,
            "round {round}: each winner released once"
        );
        assert!(holders(&store, "default").await.is_empty());
    }
}

/// One call in the pause-and-settle race, timed on one clock: when it was
/// asked, when its answer came, and what it was.
#[derive(Clone, Debug)]
enum Call {
    Acquire {
        asked: u64,
        answered: u64,
        outcome: Acquire,
    },
    Release {
        asked: u64,
        answered: u64,
    },
    Pause {
        answered: u64,
    },
    Resume {
        asked: u64,
    },
}

/// Pauses, resumes and releases race a stream of grants. A grant never lands
/// once a pause has been answered and before the resume is asked, nor within
/// the settle time of a release answered before it was asked; and the group
/// never holds more than its slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pauses_and_settle_times_racing_grants_never_over_grant() {
    const SLOTS: u32 = 2;
    const SETTLE_MS: u64 = 150;
    let rules = rules(SLOTS, Duration::from_millis(SETTLE_MS));
    let (store, _) = dynamo_store("race-pause").await;
    let store = Arc::new(store);
    let g = group("default");
    // One monotonic clock in milliseconds for every task, and the times the
    // store is given are read from it too.
    let start = std::time::Instant::now();
    let now = move || 1_000_000 + start.elapsed().as_millis() as u64;
    let run_for = Duration::from_millis(2500);
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));

    let mut tasks = Vec::new();
    for worker in 0..6u64 {
        let (store, g, log) = (Arc::clone(&store), g.clone(), Arc::clone(&log));
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < run_for {
                n += 1;
                let node = id(&format!("w{worker}-{n}"));
                let asked = now();
                let outcome = store
                    .acquire(&g, &node, rules, Timestamp(asked))
                    .await
                    .unwrap()
                    .outcome;
                let answered = now();
                log.lock().unwrap().push(Call::Acquire {
                    asked,
                    answered,
                    outcome: outcome.clone(),
                });
                if outcome == Acquire::Granted {
                    // Rebooting: a while, then steady-state.
                    tokio::time::sleep(Duration::from_millis(20 + 15 * worker)).await;
                    let asked = now();
                    let released = store
                        .release(&g, &node, false, Timestamp(asked))
                        .await
                        .unwrap();
                    assert_eq!(released.outcome, Release::Released);
                    let answered = now();
                    log.lock().unwrap().push(Call::Release { asked, answered });
                } else {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        }));
    }
    {
        let (store, g, log) = (Arc::clone(&store), g.clone(), Arc::clone(&log));
        tasks.push(tokio::spawn(async move {
            while start.elapsed() < run_for {
                tokio::time::sleep(Duration::from_millis(170)).await;
                let pause = fleetlock::domain::lock::ByPerson {
                    reason: fleetlock::domain::input::PauseReason::parse("race").unwrap(),
                    since: Timestamp(now()),
                    by: "test".into(),
                };
                store.pause(&g, pause).await.unwrap();
                log.lock().unwrap().push(Call::Pause { answered: now() });
                tokio::time::sleep(Duration::from_millis(120)).await;
                log.lock().unwrap().push(Call::Resume { asked: now() });
                store.resume(&g).await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let log = log.lock().unwrap().clone();

    let grants: Vec<(u64, u64)> = log
        .iter()
        .filter_map(|c| match c {
            Call::Acquire {
                asked,
                answered,
                outcome: Acquire::Granted,
            } => Some((*asked, *answered)),
            _ => None,
        })
        .collect();
    // Paused periods: from a pause's answer to the next resume's asking.
    let mut paused = Vec::new();
    let mut since = None;
    for call in &log {
        match call {
            Call::Pause { answered } => since = Some(*answered),
            Call::Resume { asked } => paused.extend(since.take().map(|s| (s, *asked))),
            _ => {}
        }
    }
    for &(asked, answered) in &grants {
        for &(from, to) in &paused {
            assert!(
                !(asked > from && answered < to),
                "a grant asked at {asked} and answered at {answered} inside a pause {from}..{to}"
            );
        }
        for call in &log {
            if let Call::Release {
                asked: released_at,
                answered: release_answered,
            } = call
            {
                assert!(
                    !(*release_answered < asked && asked < released_at + SETTLE_MS),
                    "a grant asked at {asked}, within the settle time of a release at {released_at}"
                );
            }
        }
    }
    // Slots surely held: from a grant's answer to its release's asking. More
    // than SLOTS of those at one instant would be an over-grant.
    let mut held: Vec<(u64, i32)> = grants.iter().map(|&(_, answered)| (answered, 1)).collect();
    held.extend(log.iter().filter_map(|c| match c {
        Call::Release { asked, .. } => Some((*asked, -1)),
        _ => None,
    }));
    held.sort();
    let mut now_held = 0;
    for (at, change) in held {
        now_held += change;
        assert!(
            now_held <= SLOTS as i32,
            "{now_held} slots surely held at {at}"
        );
    }
    let count = |f: fn(&Acquire) -> bool| {
        log.iter()
            .filter(|c| matches!(c, Call::Acquire { outcome, .. } if f(outcome)))
            .count()
    };
    // The race ran through every state, not around them.
    assert!(grants.len() >= 5, "{} grants", grants.len());
    assert!(
        count(|o| *o == Acquire::Refused(Refusal::Paused)) > 0,
        "no refusal while paused"
    );
    assert!(
        count(|o| matches!(o, Acquire::Refused(Refusal::Settling { .. }))) > 0,
        "no refusal while settling"
    );
    assert!(
        count(|o| *o == Acquire::Refused(Refusal::Full)) > 0,
        "no refusal while full"
    );
    assert!(holders(&store, "default").await.is_empty());
}

#[tokio::test]
async fn create_table_again_is_harmless() {
    let (store, _) = dynamo_store("create-twice").await;
    store
        .acquire(&group("default"), &id("a"), slots(1), Timestamp(1))
        .await
        .unwrap();
    // Made again as a deployer makes it (`fleetlock create-table`).
    let (client, _) = counted_client().await;
    let deployer = DynamoStore::new(client, store.table());
    assert!(
        !deployer.create_table().await.unwrap(),
        "reported as already there"
    );
    assert_eq!(holders(&store, "default").await.len(), 1, "data kept");
}

/// A 32-hex id like Zincati's app-specific machine id.
fn machine_id(n: usize) -> String {
    format!("{n:032x}")
}

#[tokio::test]
async fn a_holder_stored_by_version_0_1_keeps_its_slot_and_never_gets_a_second() {
    let (store, requests) = dynamo_store("legacy").await;
    let (client, _) = counted_client().await;
    // The item exactly as version 0.1 wrote it: `holder:<id>` attributes.
    client
        .put_item()
        .table_name(store.table())
        .item("group", AttributeValue::S("default".into()))
        .item("holder_count", AttributeValue::N("1".into()))
        .item("slots", AttributeValue::N("2".into()))
        .item("holder:old-node", AttributeValue::N("1000".into()))
        .send()
        .await
        .unwrap();
    let g = group("default");
    assert_eq!(
        holders(&store, "default").await,
        vec![("old-node".into(), 1_000)]
    );

    let before = requests.get();
    assert_eq!(
        take(&store, &g, "old-node", 2, 5_000).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(requests.get() - before, 1, "still one request");
    assert_eq!(
        take(&store, &g, "new-node", 2, 6_000).await,
        Acquire::Granted
    );
    assert_eq!(
        take(&store, &g, "third", 2, 7_000).await,
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(
        take(&store, &g, "old-node", 2, 8_000).await,
        Acquire::AlreadyHeld
    );
    assert_eq!(
        holders(&store, "default").await,
        vec![("new-node".into(), 6_000), ("old-node".into(), 1_000)],
        "one slot each, the old holder's time kept"
    );

    let released = store
        .release(&g, &id("old-node"), false, Timestamp(10_000))
        .await
        .unwrap();
    assert_eq!(released.outcome, Release::Released);
    assert_eq!(released.group.holders.len(), 1);
    let raw = raw_item(&client, store.table(), "default").await;
    assert!(
        !raw.contains_key("holder:old-node"),
        "the old attribute is gone"
    );
    assert!(
        raw.contains_key("h:new-node"),
        "new holders use the short name"
    );
    assert_eq!(raw["holder_count"], AttributeValue::N("1".into()));
    assert_eq!(take(&store, &g, "third", 2, 11_000).await, Acquire::Granted);
}

#[tokio::test]
async fn write_units_grow_with_the_holders_of_a_group() {
    let (store, _) = dynamo_store("units").await;
    let store = store.reporting_write_units();
    let g = group("big");
    let mut units = Vec::new();
    for n in 0..60 {
        let decided = store
            .acquire(
                &g,
                &id(&machine_id(n)),
                slots(100),
                Timestamp(1_764_480_000_000 + n as u64),
            )
            .await
            .unwrap();
        assert_eq!(decided.outcome, Acquire::Granted);
        units.push(
            decided
                .write_units
                .expect("DynamoDB reports the units of a write"),
        );
    }
    assert_eq!(units[0], 1.0, "a small item is one write unit");
    assert!(units.windows(2).all(|w| w[0] <= w[1]), "{units:?}");
    assert!(
        units[59] >= 3.0,
        "60 holders of 32-hex ids pass 2 KB: {units:?}"
    );
    // A refusal reports nothing: DynamoDB does not say what it billed.
    let full = store
        .acquire(&g, &id("late"), slots(60), Timestamp(9))
        .await
        .unwrap();
    assert_eq!(
        (full.outcome, full.write_units),
        (Acquire::Refused(Refusal::Full), None)
    );
}

#[tokio::test]
async fn the_table_check_tells_a_mistake_from_an_outage() {
    let (store, _) = dynamo_store("check").await;
    assert_eq!(store.check_table(Regional::Yes(None)).await, Ok(()));

    let (client, _) = counted_client().await;
    let missing = DynamoStore::new(client.clone(), unique_table_name("never-created"));
    match missing.check_table(Regional::Yes(None)).await {
        Err(TableProblem::Unusable(why)) => assert!(why.contains("does not exist"), "{why}"),
        other => panic!("{other:?}"),
    }

    let other_key = unique_table_name("other-key");
    client
        .create_table()
        .table_name(&other_key)
        .attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name("id")
                .attribute_type(ScalarAttributeType::S)
                .build()
                .unwrap(),
        )
        .key_schema(
            KeySchemaElement::builder()
                .attribute_name("id")
                .key_type(KeyType::Hash)
                .build()
                .unwrap(),
        )
        .billing_mode(BillingMode::PayPerRequest)
        .send()
        .await
        .unwrap();
    match DynamoStore::new(client, other_key)
        .check_table(Regional::Yes(None))
        .await
    {
        Err(TableProblem::Unusable(why)) => assert!(why.contains("'group'"), "{why}"),
        other => panic!("{other:?}"),
    }

    // Nothing listens on the discard port: DynamoDB cannot be reached.
    let config = aws_sdk_dynamodb::config::Builder::from(&fleetlock::aws::load_config().await)
        .endpoint_url("http://127.0.0.1:9")
        .retry_partition(RetryPartition::new("unreachable"))
        .build();
    let unreachable = DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), "fleetlock");
    match unreachable.check_table(Regional::Yes(None)).await {
        Err(TableProblem::Unreachable(why)) => {
            assert!(why.contains("could not be reached"), "{why}");
            assert!(
                !why.contains('\n') && why.len() < 300,
                "one short line: {why}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// The item exactly as this version writes it: deployed tables hold items
/// in this form, and a refactor must not change it unnoticed.
#[tokio::test]
async fn the_item_a_grant_a_release_and_a_pause_write_is_exactly_this() {
    use std::collections::HashMap;
    let (store, _) = dynamo_store("item-format").await;
    let (client, _) = counted_client().await;
    let raw = || async {
        raw_item(&client, store.table(), "default")
            .await
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let n = |v: &str| AttributeValue::N(v.into());
    let s = |v: &str| AttributeValue::S(v.into());
    let expect =
        |pairs: Vec<(&str, AttributeValue)>| -> std::collections::BTreeMap<String, AttributeValue> {
            pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
        };
    let g = group("default");
    store
        .acquire(&g, &id("node-a"), slots(2), Timestamp(1_000))
        .await
        .unwrap();
    assert_eq!(
        raw().await,
        expect(vec![
            ("group", s("default")),
            ("holder_count", n("1")),
            ("h:node-a", n("1000")),
            ("slots", n("2")),
        ])
    );
    store
        .release(&g, &id("node-a"), false, Timestamp(2_000))
        .await
        .unwrap();
    let pause = fleetlock::domain::lock::ByPerson {
        reason: fleetlock::domain::input::PauseReason::parse("kernel regression").unwrap(),
        since: Timestamp(3_000),
        by: "alice".into(),
    };
    store.pause(&g, pause).await.unwrap();
    store.pause_for_alarm(&g, "api-5xx").await.unwrap();
    assert_eq!(
        raw().await,
        expect(vec![
            ("group", s("default")),
            ("holder_count", n("0")),
            ("slots", n("2")),
            ("released_at", n("2000")),
            (
                "paused",
                AttributeValue::M(HashMap::from([
                    ("reason".to_owned(), s("kernel regression")),
                    ("since".to_owned(), n("3000")),
                    ("by".to_owned(), s("alice")),
                ])),
            ),
            ("pause_version", n("1")),
            ("alarms", AttributeValue::Ss(vec!["api-5xx".into()])),
        ])
    );
}

/// An item in this version's format, written as a deployed table holds it,
/// read back by the code as the state it stands for.
#[tokio::test]
async fn an_item_in_todays_format_reads_as_the_state_it_stands_for() {
    use std::collections::HashMap;
    let (store, _) = dynamo_store("item-read").await;
    let (client, _) = counted_client().await;
    let n = |v: &str| AttributeValue::N(v.into());
    let s = |v: &str| AttributeValue::S(v.into());
    client
        .put_item()
        .table_name(store.table())
        .set_item(Some(HashMap::from([
            ("group".to_owned(), s("workers")),
            ("holder_count".to_owned(), n("2")),
            ("h:node-a".to_owned(), n("1000")),
            ("holder:old-node".to_owned(), n("900")),
            ("slots".to_owned(), n("3")),
            ("released_at".to_owned(), n("800")),
            (
                "paused".to_owned(),
                AttributeValue::M(HashMap::from([
                    ("reason".to_owned(), s("kernel regression")),
                    ("since".to_owned(), n("1100")),
                    ("by".to_owned(), s("alice")),
                ])),
            ),
            ("pause_version".to_owned(), n("3")),
            (
                "alarms".to_owned(),
                AttributeValue::Ss(vec!["api-5xx".into()]),
            ),
        ])))
        .send()
        .await
        .unwrap();
    let (_, record) = store
        .groups(Some(&group("workers")))
        .await
        .unwrap()
        .pop()
        .unwrap();
    let holders: Vec<(String, u64)> = record
        .holders
        .holders()
        .map(|(id, at)| (id.to_string(), at.0))
        .collect();
    assert_eq!(holders, [("node-a".into(), 1000), ("old-node".into(), 900)]);
    assert_eq!(record.slots, Some(3));
    assert_eq!(record.last_release, Some(Timestamp(800)));
    let person = record.pause.person.unwrap();
    assert_eq!(
        (person.reason.as_str(), person.since, person.by.as_str()),
        ("kernel regression", Timestamp(1100), "alice")
    );
    assert_eq!(
        record.pause.alarms.into_iter().collect::<Vec<_>>(),
        ["api-5xx"]
    );
}

/// The roles the store's calls are signed as are enforced: each role is
/// refused, as AWS refuses it, a store call whose action its shipped policy
/// lacks, and the item is left as it was. (Every principal against every
/// action: tests/iac/test_roles.py.)
#[tokio::test]
async fn each_role_is_refused_a_store_call_outside_its_policy() {
    let (store, _) = dynamo_store("roles").await;
    let g = group("workers");
    assert_eq!(take(&store, &g, "a", 1, 1).await, Acquire::Granted);
    let as_role = |principal: &'static str| {
        let table = store.table().to_owned();
        async move {
            let client = crate::helpers::client_as(&format!("{principal}.{table}")).await;
            DynamoStore::new(client, table)
        }
    };
    let denied =
        |result: Result<String, fleetlock::domain::store::StoreError>, what: &str| match result {
            Err(fleetlock::domain::store::StoreError::Unavailable(why)) => assert!(
                why.contains("AccessDeniedException") && why.contains("is not authorized"),
                "{what}: {why}"
            ),
            other => panic!("{what}: not refused: {other:?}"),
        };
    // The API function: no Scan (status's listing), no DeleteItem (forget).
    let function = as_role("function").await;
    let listed = function
        .groups(None)
        .await
        .map(|groups| format!("{groups:?}"));
    denied(listed, "the function's Scan");
    let forgot = function
        .forget(&g)
        .await
        .map(|forgot| format!("{forgot:?}"));
    denied(forgot, "the function's DeleteItem");
    // The drained function and the alarm-pauses function: no DeleteItem.
    for principal in ["drained", "alarm-pauses"] {
        let forgot = as_role(principal).await.forget(&g).await;
        denied(forgot.map(|forgot| format!("{forgot:?}")), principal);
    }
    // The operator: no DescribeTable, no CreateTable (the deployer's).
    let operator = as_role("operator").await;
    let made = operator
        .create_table()
        .await
        .map(|made| format!("{made:?}"));
    denied(made, "the operator's CreateTable");
    // The Kubernetes agent: no Scan.
    let listed = as_role("kube-agent").await.groups(None).await;
    denied(
        listed.map(|groups| format!("{groups:?}")),
        "the agent's Scan",
    );
    // Nothing was changed by any of them.
    assert_eq!(holders(&store, "workers").await, [("a".to_owned(), 1)]);
}
