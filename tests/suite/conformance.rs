//! The DynamoDB conditions against the rules: random sequences of every
//! store operation, with late writes (a request landing again, with the time
//! it was first sent, after newer ones: what an SDK retry after a lost answer
//! is), run on the memory store (the rules applied under a mutex) and on the
//! DynamoDB store on DynamoDB Local (the rules written again as condition
//! expressions). Every outcome and every group as stored after it must be
//! equal; proptest shrinks a difference to the shortest sequence.
//!
//! `FLEETLOCK_CONFORMANCE_CASES` sets the number of sequences (240 by
//! default, run 4 at once: each request is a few round trips to DynamoDB
//! Local); `scripts/conformance` runs thousands, `scripts/mutants
//! conditions` runs it against broken conditions.

use std::time::Duration;

use proptest::prelude::*;

use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::GroupRecord;
use fleetlock::domain::lock::parse_canary;
use fleetlock::domain::lock::{ByPerson, DrainRule, GroupRules, OnDrainTimeout, StopCause};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::domain::zones::ZoneGroup;

use fleetlock::store::memory::MemoryStore;

use crate::helpers::{RoleStore, dynamo_store, raw_item, rules as rules_of};
use crate::item_layout::{Json, as_written, item_of};
use fleetlock::domain::store::Decisions;

const NODES: [&str; 3] = ["n1", "n2", "n3"];
const MINUTE: u64 = 60_000;

/// The rules a request of node `n` is decided by: a few sets, as the
/// settings may change between two requests (every gate, a window closing
/// before a drain would end, and zones and a canary switched on and off
/// over the records the others left included). In a group split by
/// zone, nodes n1 and n3 ask from one zone, n2 from another.
fn rules(which: u8, n: usize, group: &GroupName) -> GroupRules {
    let gate = |on_timeout| DrainRule {
        timeout: Duration::from_secs(600),
        on_timeout,
        window_closes: None,
    };
    let base = rules_of(1, Duration::ZERO);
    let zone = || {
        let zone_group = GroupName::parse(&format!("{group}.z{}", n % 2)).unwrap();
        Some(ZoneGroup::of(&zone_group))
    };
    let canary = || Some(parse_canary("5m:1+1:15m").unwrap());
    match which % 11 {
        0 => base,
        1 => GroupRules {
            slots: 2,
            settle: Duration::from_secs(300),
            ..base
        },
        2 => GroupRules {
            lease: Some(Duration::from_secs(1800)),
            ..base
        },
        3 => GroupRules {
            drain: Some(gate(OnDrainTimeout::Hold)),
            ..base
        },
        4 => GroupRules {
            drain: Some(gate(OnDrainTimeout::Grant)),
            return_timeout: Some(Duration::from_secs(600)),
            ..base
        },
        5 => GroupRules {
            slots: 2,
            return_timeout: Some(Duration::from_secs(600)),
            lease: Some(Duration::from_secs(1800)),
            ..base
        },
        6 => GroupRules {
            slots: 2,
            zone: zone(),
            ..base
        },
        7 => GroupRules {
            slots: 2,
            settle: Duration::from_secs(300),
            drain: Some(gate(OnDrainTimeout::Grant)),
            return_timeout: Some(Duration::from_secs(600)),
            zone: zone(),
            ..base
        },
        8 => GroupRules {
            slots: 2,
            canary: canary(),
            ..base
        },
        // A maintenance window that closes before a drain begun now would
        // end: no drain begins (the service sets the time it closes).
        9 => GroupRules {
            slots: 2,
            drain: Some(DrainRule {
                window_closes: Some(Timestamp(1_000_000 + 45 * MINUTE)),
                ..gate(OnDrainTimeout::Hold)
            }),
            ..base
        },
        _ => GroupRules {
            slots: 2,
            lease: Some(Duration::from_secs(1800)),
            return_timeout: Some(Duration::from_secs(600)),
            zone: zone(),
            canary: canary(),
            ..base
        },
    }
}

/// Which time a confirmation names: the one stored, none (a person), or an
/// ended one.
#[derive(Clone, Copy, Debug)]
enum Since {
    Stored,
    None,
    Ended,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Acquire(usize, u8),
    Release(usize, bool),
    Drained(usize, Since),
    Returned(usize, Since),
    /// The sweep's stop for the node's return (or, `true`, for its wave's
    /// grant), as it read it (or for one that has ended).
    Stop(usize, bool, Since),
    /// A person's `fleetlock begin-rollout`.
    BeginRollout,
    Pause,
    Resume,
    Exclude(usize),
    Include(usize),
    AlarmPause,
    AlarmClear,
    Forget,
}

/// One request: what, and how many minutes after the one before it arrived;
/// `late`: it lands again after the next request, with its first time.
#[derive(Clone, Copy, Debug)]
struct Request {
    op: Op,
    minutes: u64,
    late: bool,
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0..NODES.len();
    let since = prop_oneof![Just(Since::Stored), Just(Since::None), Just(Since::Ended)];
    prop_oneof![
        6 => (node.clone(), any::<u8>()).prop_map(|(n, r)| Op::Acquire(n, r)),
        4 => (node.clone(), any::<bool>()).prop_map(|(n, r)| Op::Release(n, r)),
        2 => (node.clone(), since.clone()).prop_map(|(n, s)| Op::Drained(n, s)),
        2 => (node.clone(), since.clone()).prop_map(|(n, s)| Op::Returned(n, s)),
        1 => (node.clone(), any::<bool>(), since.clone()).prop_map(|(n, wave, s)| Op::Stop(n, wave, s)),
        1 => Just(Op::BeginRollout),
        1 => Just(Op::Pause),
        1 => Just(Op::Resume),
        1 => node.clone().prop_map(Op::Exclude),
        1 => node.prop_map(Op::Include),
        1 => Just(Op::AlarmPause),
        1 => Just(Op::AlarmClear),
        1 => Just(Op::Forget),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    // 400 minutes: past a canary's quiet time, which begins a new rollout.
    let minutes = prop_oneof![
        6 => prop_oneof![Just(0u64), Just(1), Just(6), Just(11), Just(31)],
        1 => Just(400u64),
    ];
    (op(), minutes, proptest::bool::weighted(0.15)).prop_map(|(op, minutes, late)| Request {
        op,
        minutes,
        late,
    })
}

fn id(n: usize) -> NodeId {
    NodeId::parse(NODES[n]).unwrap()
}

/// Runs `op` at `at` on `store`: its outcome as text (the two stores' types
/// are one), and the group as stored after it.
async fn run<S: LockStore>(store: &S, group: &GroupName, op: Op, at: Timestamp) -> String {
    // What a hook or the sweep read first, only for the requests that name it.
    let record = match op {
        Op::Drained(..) | Op::Returned(..) | Op::Stop(..) => stored(store, group).await,
        _ => GroupRecord::default(),
    };
    let since = |held: Option<Timestamp>, which: Since| match which {
        Since::Stored => held,
        Since::None => None,
        Since::Ended => Some(Timestamp(1)),
    };
    let person = || ByPerson {
        reason: PauseReason::parse("conformance").unwrap(),
        since: at,
        by: "test".into(),
    };
    match op {
        Op::Acquire(n, r) => {
            format!(
                "{:?}",
                store
                    .acquire(group, &id(n), rules(r, n, group), at)
                    .await
                    .unwrap()
                    .outcome
            )
        }
        Op::Release(n, returns) => {
            format!(
                "{:?}",
                store
                    .release(group, &id(n), returns, at)
                    .await
                    .unwrap()
                    .outcome
            )
        }
        Op::Drained(n, which) => {
            let since = since(record.draining.get(&id(n)).copied(), which);
            format!(
                "{:?}",
                store
                    .drained(group, &id(n), since, at)
                    .await
                    .unwrap()
                    .outcome
            )
        }
        Op::Returned(n, which) => {
            let since = since(record.returning.get(&id(n)).copied(), which);
            format!(
                "{:?}",
                store
                    .returned(group, &id(n), since, at)
                    .await
                    .unwrap()
                    .outcome
            )
        }
        Op::Stop(n, wave, which) => {
            let (read, cause) = if wave {
                (record.holders.held_since(&id(n)), StopCause::Wave)
            } else {
                (record.returning.get(&id(n)).copied(), StopCause::Return)
            };
            // The sweep always names a time: none read is an ended one.
            let since = since(read, which).unwrap_or(Timestamp(1));
            let stopped = store.stop_rollout(group, &id(n), since, cause, at).await;
            format!("{:?}", stopped.unwrap().outcome)
        }
        Op::BeginRollout => format!(
            "{:?}",
            store.begin_rollout(group, at).await.unwrap().outcome
        ),
        Op::Pause => format!("{:?}", store.pause(group, person()).await.unwrap().outcome),
        Op::Resume => format!("{:?}", store.resume(group).await.unwrap().outcome),
        Op::Exclude(n) => {
            format!(
                "{:?}",
                store
                    .exclude(group, &id(n), person())
                    .await
                    .unwrap()
                    .outcome
            )
        }
        Op::Include(n) => format!("{:?}", store.include(group, &id(n)).await.unwrap().outcome),
        Op::AlarmPause => {
            format!(
                "{:?}",
                store.pause_for_alarm(group, "a").await.unwrap().outcome
            )
        }
        Op::AlarmClear => format!("{:?}", store.clear_alarm(group, "a").await.unwrap().outcome),
        Op::Forget => match store.forget(group).await.unwrap() {
            // The group as kept is compared below; here only that it was.
            fleetlock::domain::store::Forgot::Kept(_) => "Kept".into(),
            // An item with nothing in it (DynamoDB keeps a pause's version
            // after a resume; memory drops an empty record): gone either way.
            fleetlock::domain::store::Forgot::Removed { counted: false }
            | fleetlock::domain::store::Forgot::NothingStored => "Gone".into(),
            other => format!("{other:?}"),
        },
    }
}

async fn stored<S: LockStore>(store: &S, group: &GroupName) -> GroupRecord {
    let mut groups = store.groups(Some(group)).await.unwrap();
    groups.pop().map(|(_, record)| record).unwrap_or_default()
}

/// The DynamoDB store under test, and the harness's own client to read
/// its items as they are written.
struct Dynamo {
    store: RoleStore,
    client: aws_sdk_dynamodb::Client,
}

impl Dynamo {
    async fn new(prefix: &str) -> Self {
        let (store, _) = dynamo_store(prefix).await;
        let (client, _) = fleetlock::test_support::counted_client().await;
        Self { store, client }
    }

    /// The group's item as written ([`as_written`]).
    async fn item(&self, group: &GroupName) -> Json {
        as_written(raw_item(&self.client, self.store.table(), group.as_str()).await)
    }
}

/// Runs the requests on both stores, in a group of their own; the first
/// difference, with the requests up to it.
async fn differs(dynamo: &Dynamo, group: &GroupName, requests: &[Request]) -> Result<(), String> {
    let memory = MemoryStore::default();
    let mut now = Timestamp(1_000_000);
    let mut late: Option<(Op, Timestamp)> = None;
    let mut log = Vec::new();
    for request in requests {
        now = now.plus(Duration::from_millis(request.minutes * MINUTE + 1));
        let mut landing = vec![(request.op, now)];
        // A write kept back lands after this newer one, with its own time.
        landing.extend(late.take());
        if request.late {
            late = Some((request.op, now));
        }
        for (op, at) in landing {
            land(&memory, dynamo, group, op, at, &mut log).await?;
        }
    }
    Ok(())
}

/// Lands `op` at `at` on both stores; the difference, if any, with `log`:
/// in the outcome, the record as read, or the item as written.
async fn land(
    memory: &MemoryStore,
    dynamo: &Dynamo,
    group: &GroupName,
    op: Op,
    at: Timestamp,
    log: &mut Vec<String>,
) -> Result<(), String> {
    let expected = run(memory, group, op, at).await;
    let got = run(&dynamo.store, group, op, at).await;
    log.push(format!("{op:?} at +{} ms -> {expected}", at.0 - 1_000_000));
    let (want, have) = (
        stored(memory, group).await,
        stored(&dynamo.store, group).await,
    );
    let (written, item) = (item_of(&want), dynamo.item(group).await);
    if expected != got || want != have || written != item {
        return Err(format!(
            "memory and DynamoDB differ after:\n  {}\nmemory: {expected}\n{want:#?}\n\
             as an item: {written:#}\nDynamoDB: {got}\n{have:#?}\nits item: {item:#}",
            log.join("\n  ")
        ));
    }
    Ok(())
}

/// Runs `sequence` (each request at the minute given) on both stores, in
/// a table of its own: every outcome, record and item the same. The last
/// outcome, and the group as stored after it.
async fn both_agree_on(name: &str, sequence: &[(Op, u64)]) -> (String, GroupRecord) {
    let dynamo = Dynamo::new(&format!("conformance-{name}")).await;
    let (memory, group) = (MemoryStore::default(), GroupName::parse(name).unwrap());
    let mut log = Vec::new();
    for &(op, minutes) in sequence {
        let when = Timestamp(1_000_000 + minutes * MINUTE);
        if let Err(difference) = land(&memory, &dynamo, &group, op, when, &mut log).await {
            panic!("{name}: {difference}");
        }
    }
    let last = log.last().and_then(|line| line.rsplit(" -> ").next());
    (
        last.unwrap_or_default().to_owned(),
        stored(&memory, &group).await,
    )
}

// Sequences random ones rarely reach, each named for what it holds both
// stores to (the mutants of `scripts/mutants conditions` name them).

/// Two overdue returns stop one group once: the first stop stays.
#[tokio::test]
async fn two_overdue_returns_stop_the_group_once() {
    let sequence = [
        (Op::Acquire(0, 5), 0),
        (Op::Acquire(1, 5), 1),
        (Op::Release(0, true), 2),
        (Op::Release(1, true), 3),
        (Op::Stop(0, false, Since::Stored), 20),
        (Op::Stop(1, false, Since::Stored), 21),
    ];
    let (last, group) = both_agree_on("stops", &sequence).await;
    assert_eq!(last, "Stopped", "the second return counted as failed too");
    assert_eq!(group.pause.stop.map(|stop| stop.id), Some(id(0)));
}

/// A return confirmed with a time before another node's recorded release
/// (clock skew between two callers): the later release time stays.
#[tokio::test]
async fn a_confirmation_older_than_the_last_release_keeps_the_later_one() {
    let sequence = [
        (Op::Acquire(0, 5), 0),
        (Op::Acquire(1, 5), 1),
        (Op::Release(0, true), 2),
        (Op::Release(1, false), 5),
        (Op::Returned(0, Since::None), 4),
    ];
    let (last, group) = both_agree_on("skewed", &sequence).await;
    assert_eq!(last, "Freed");
    assert_eq!(group.last_release, Some(Timestamp(1_000_000 + 5 * MINUTE)));
}

/// A grant refused on a group never stored (a window closing before its
/// drain could end) stores nothing: a person's `begin-rollout` then finds
/// no group, on both stores.
#[tokio::test]
async fn a_refused_grant_on_a_group_never_stored_stores_nothing() {
    let sequence = [(Op::Acquire(0, 9), 0), (Op::BeginRollout, 1)];
    let (last, group) = both_agree_on("refused-first", &sequence).await;
    assert_eq!(
        (last.as_str(), group),
        ("NotStored", GroupRecord::default())
    );
}

/// A steady-state whose answer was lost lands again, with its first time,
/// after the node was granted again: it never frees the newer grant.
#[tokio::test]
async fn a_release_that_lands_late_never_frees_a_newer_grant() {
    let sequence = [
        (Op::Acquire(0, 0), 0),
        (Op::Release(0, false), 1),
        (Op::Acquire(0, 0), 2),
        (Op::Release(0, false), 1),
    ];
    let (last, group) = both_agree_on("late-release", &sequence).await;
    assert_eq!(last, "NotHeld");
    assert!(group.holders.holds(&id(0)), "{group:?}");
}

/// The sweep's stop for a return that has ended (the node came back and
/// left again: its return now starts later) changes nothing.
#[tokio::test]
async fn a_stop_for_a_return_that_ended_changes_nothing() {
    let sequence = [
        (Op::Acquire(0, 5), 0),
        (Op::Release(0, true), 1),
        (Op::Returned(0, Since::Stored), 2),
        (Op::Acquire(0, 5), 20),
        (Op::Release(0, true), 22),
        (Op::Stop(0, false, Since::Ended), 40),
    ];
    let (last, group) = both_agree_on("ended-stop", &sequence).await;
    assert_eq!((last.as_str(), group.pause.stop), ("NotReturning", None));
}

/// A return the sweep stopped, then confirmed: the slot goes, and every
/// mark of it (the failed return's too) with it; the node asks again once
/// a person resumed.
#[tokio::test]
async fn a_stopped_return_confirmed_leaves_no_mark_behind() {
    let sequence = [
        (Op::Acquire(0, 5), 0),
        (Op::Release(0, true), 1),
        (Op::Stop(0, false, Since::Stored), 20),
        (Op::Returned(0, Since::Stored), 21),
        (Op::Resume, 22),
        (Op::Acquire(0, 5), 23),
    ];
    let (last, group) = both_agree_on("stopped-return", &sequence).await;
    assert_eq!(last, "Granted");
    assert!(group.returns_failed.is_empty(), "{group:?}");
}

/// Zones switched on while a node holds a slot from before the split: no
/// node of any zone goes out beside it (its zone is not known).
#[tokio::test]
async fn slots_held_before_a_split_keep_every_zone_waiting() {
    let sequence = [
        (Op::Acquire(0, 1), 0),
        (Op::Acquire(1, 6), 1),
        (Op::Acquire(2, 6), 2),
        (Op::Release(0, false), 3),
        (Op::Acquire(1, 6), 10),
    ];
    let (last, _) = both_agree_on("split", &sequence).await;
    assert_eq!(last, "Granted", "once the old slot is back");
}

/// Zones on, a node of one zone out; the split switched off and a node of
/// any zone granted; the split on again: the zone recorded first no longer
/// says whose nodes are out, so the first zone's node waits too.
#[tokio::test]
async fn a_zone_recorded_before_the_split_was_switched_off_lets_no_zone_beside_it() {
    let sequence = [
        (Op::Acquire(0, 6), 0),
        (Op::Acquire(1, 5), 1),
        (Op::Release(0, false), 2),
        (Op::Acquire(0, 6), 3),
    ];
    let (last, group) = both_agree_on("split-off", &sequence).await;
    assert_eq!(last, "Refused(OtherZone { zone: \"\" })");
    assert_eq!((group.holders.len(), group.zone), (1, None));
}

/// A canary, its wave of one, then the rest at the group's two slots: a
/// third node of the rest finds the group full.
#[tokio::test]
async fn the_rest_of_a_rollout_goes_at_the_slots_and_no_further() {
    let sequence = [
        (Op::Acquire(0, 8), 0),
        (Op::Release(0, false), 1),
        (Op::Acquire(1, 8), 7),
        (Op::Release(1, false), 8),
        (Op::Acquire(0, 8), 14),
        (Op::Acquire(1, 8), 14),
        (Op::Acquire(2, 8), 14),
    ];
    let (last, group) = both_agree_on("rest", &sequence).await;
    assert_eq!((last.as_str(), group.holders.len()), ("Refused(Full)", 2));
}

/// Sequences run at once in each case, each in a group of its own:
/// DynamoDB Local answers several callers faster than one after another.
const AT_ONCE: usize = 4;

#[test]
fn every_decision_and_every_item_on_dynamodb_is_the_rules() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dynamo = runtime.block_on(Dynamo::new("conformance"));
    let sequences: u32 = std::env::var("FLEETLOCK_CONFORMANCE_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(240);
    let config = ProptestConfig {
        cases: sequences.div_ceil(AT_ONCE as u32),
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let next = std::sync::atomic::AtomicU32::new(0);
    let sequence = proptest::collection::vec(request(), 1..24);
    proptest!(config, |(batch in proptest::collection::vec(sequence, AT_ONCE))| {
        let runs = batch.iter().map(|requests| {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let group = GroupName::parse(&format!("g{n}")).unwrap();
            let dynamo = &dynamo;
            async move { differs(dynamo, &group, requests).await }
        });
        let results = runtime.block_on(futures_util::future::join_all(runs));
        if let Some(difference) = results.into_iter().find_map(Result::err) {
            prop_assert!(false, "{}", difference);
        }
    });
}
