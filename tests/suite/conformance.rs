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
use fleetlock::domain::lock::{ByPerson, DrainRule, GroupRules, OnDrainTimeout};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::DynamoStore;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{dynamo_store, rules as rules_of};

const NODES: [&str; 3] = ["n1", "n2", "n3"];
const MINUTE: u64 = 60_000;

/// The rules a request is decided by: a few sets, as the settings may
/// change between two requests.
fn rules(which: u8) -> GroupRules {
    let gate = |on_timeout| DrainRule {
        timeout: Duration::from_secs(600),
        on_timeout,
        window_closes: None,
    };
    let base = rules_of(1, Duration::ZERO);
    match which % 6 {
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
        _ => GroupRules {
            slots: 2,
            return_timeout: Some(Duration::from_secs(600)),
            lease: Some(Duration::from_secs(1800)),
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
    /// The sweep's stop for the node's return, as it read it.
    Stop(usize),
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
        2 => (node.clone(), since).prop_map(|(n, s)| Op::Returned(n, s)),
        1 => node.clone().prop_map(Op::Stop),
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
    let minutes = prop_oneof![Just(0u64), Just(1), Just(6), Just(11), Just(31)];
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
        Op::Drained(..) | Op::Returned(..) | Op::Stop(_) => stored(store, group).await,
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
                    .acquire(group, &id(n), rules(r), at)
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
        Op::Stop(n) => {
            let since = record
                .returning
                .get(&id(n))
                .copied()
                .unwrap_or(Timestamp(1));
            let stopped = store
                .stop_rollout(
                    group,
                    &id(n),
                    since,
                    fleetlock::domain::lock::StopCause::Return,
                    at,
                )
                .await;
            format!("{:?}", stopped.unwrap().outcome)
        }
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

/// Runs the requests on both stores, in a group of their own; the first
/// difference, with the requests up to it.
async fn differs(
    dynamo: &DynamoStore,
    group: &GroupName,
    requests: &[Request],
) -> Result<(), String> {
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

/// Lands `op` at `at` on both stores; the difference, if any, with `log`.
async fn land(
    memory: &MemoryStore,
    dynamo: &DynamoStore,
    group: &GroupName,
    op: Op,
    at: Timestamp,
    log: &mut Vec<String>,
) -> Result<(), String> {
    let expected = run(memory, group, op, at).await;
    let got = run(dynamo, group, op, at).await;
    log.push(format!("{op:?} at +{} ms -> {expected}", at.0 - 1_000_000));
    let (want, have) = (stored(memory, group).await, stored(dynamo, group).await);
    if expected != got || want != have {
        return Err(format!(
            "memory and DynamoDB differ after:\n  {}\nmemory: {expected}\n{want:#?}\n\
             DynamoDB: {got}\n{have:#?}",
            log.join("\n  ")
        ));
    }
    Ok(())
}

/// Sequences random ones rarely reach, each at the times given (minutes):
/// two overdue returns stopping one group (the first stop stays), and a
/// return confirmed with a time before another node's recorded release
/// (clock skew between two callers: the later release time stays).
#[tokio::test]
async fn two_stops_and_a_confirmation_older_than_the_last_release_agree() {
    let (dynamo, _) = dynamo_store("conformance-fixed").await;
    let at = |minutes: u64| Timestamp(1_000_000 + minutes * MINUTE);
    let stops = [
        (Op::Acquire(0, 5), at(0)),
        (Op::Acquire(1, 5), at(1)),
        (Op::Release(0, true), at(2)),
        (Op::Release(1, true), at(3)),
        (Op::Stop(0), at(20)),
        (Op::Stop(1), at(21)),
    ];
    let skewed = [
        (Op::Acquire(0, 5), at(0)),
        (Op::Acquire(1, 5), at(1)),
        (Op::Release(0, true), at(2)),
        (Op::Release(1, false), at(5)),
        (Op::Returned(0, Since::None), at(4)),
    ];
    for (name, sequence) in [("stops", &stops[..]), ("skewed", &skewed[..])] {
        let (memory, group) = (MemoryStore::default(), GroupName::parse(name).unwrap());
        let mut log = Vec::new();
        for &(op, when) in sequence {
            if let Err(difference) = land(&memory, &dynamo, &group, op, when, &mut log).await {
                panic!("{name}: {difference}");
            }
        }
    }
}

/// Sequences run at once in each case, each in a group of its own:
/// DynamoDB Local answers several callers faster than one after another.
const AT_ONCE: usize = 4;

#[test]
fn every_decision_and_every_item_on_dynamodb_is_the_rules() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (dynamo, _) = runtime.block_on(dynamo_store("conformance"));
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
