//! Writes that land in another order than their requests arrived (an SDK
//! retry after a lost answer, a slow connection): a late one never undoes a
//! newer one. On both stores; on DynamoDB Local through the fault proxy, so
//! that the late write is a real request the proxy held back.

use std::time::Duration;

use fleetlock::domain::input::GroupName;
use fleetlock::domain::lock::GroupRecord;
use fleetlock::domain::lock::{Acquire, Refusal, Release};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::memory::MemoryStore;

use crate::fault_proxy::Fault;
use crate::helpers::{id, proxied_store, rules};
use fleetlock::domain::store::Decisions;

const SETTLE: Duration = Duration::from_secs(10);

fn group() -> GroupName {
    GroupName::parse("workers").unwrap()
}

async fn stored<S: LockStore>(store: &S) -> GroupRecord {
    let mut groups = store.groups(Some(&group())).await.unwrap();
    groups.pop().map(|(_, record)| record).unwrap_or_default()
}

async fn take<S: LockStore>(store: &S, node: &str, settle: Duration, at: u64) -> Acquire {
    let (group, node) = (group(), id(node));
    let decided = store.acquire(&group, &node, rules(3, settle), Timestamp(at));
    decided.await.unwrap().outcome
}

async fn give_back<S: LockStore>(store: &S, node: &str, at: u64) -> Release {
    let (group, node) = (group(), id(node));
    let decided = store.release(&group, &node, false, Timestamp(at));
    decided.await.unwrap().outcome
}

/// Both orders' aftermath, once the late writes have landed: the settle
/// period runs from the later release, a newer grant is kept, and a
/// pre-reboot older than its node's release left no holder.
async fn after_the_late_writes<S: LockStore>(store: &S) {
    let record = stored(store).await;
    assert_eq!(
        record.last_release,
        Some(Timestamp(2_000)),
        "never moved back"
    );
    let until = Timestamp(2_000).plus(SETTLE);
    // Inside the later release's settle period: refused.
    assert_eq!(
        take(store, "newcomer", SETTLE, 11_500).await,
        Acquire::Refused(Refusal::Settling { until })
    );
    assert_eq!(
        take(store, "newcomer", SETTLE, 12_000).await,
        Acquire::Granted
    );
}

#[tokio::test]
async fn memory_store_late_writes_never_undo_newer_ones() {
    let store = MemoryStore::default();
    assert_eq!(take(&store, "a", SETTLE, 100).await, Acquire::Granted);
    assert_eq!(take(&store, "b", SETTLE, 100).await, Acquire::Granted);
    // b's release arrived at 2000 and lands first; a's arrived at 1000.
    assert_eq!(give_back(&store, "b", 2_000).await, Release::Released);
    assert_eq!(give_back(&store, "a", 1_000).await, Release::Released);
    after_the_late_writes(&store).await;
    late_steady_state_and_late_pre_reboot(&store).await;
}

/// A node granted again at 30_000: its old steady-state of 25_000 landing
/// now frees nothing; and its pre-reboot of 40_000 landing after its
/// steady-state of 45_000 leaves no holder.
async fn late_steady_state_and_late_pre_reboot<S: LockStore>(store: &S) {
    assert_eq!(
        take(store, "c", Duration::ZERO, 30_000).await,
        Acquire::Granted
    );
    assert_eq!(give_back(store, "c", 25_000).await, Release::NotHeld);
    assert!(stored(store).await.holders.holds(&id("c")));
    assert_eq!(give_back(store, "c", 45_000).await, Release::Released);
    assert!(matches!(
        take(store, "c", Duration::ZERO, 40_000).await,
        Acquire::Refused(Refusal::Settling { .. })
    ));
    assert!(!stored(store).await.holders.holds(&id("c")));
}

#[tokio::test]
async fn dynamodb_late_writes_never_undo_newer_ones() {
    let (proxy, store) = proxied_store("late").await;
    let store = std::sync::Arc::new(store);
    assert_eq!(take(&*store, "a", SETTLE, 100).await, Acquire::Granted);
    assert_eq!(take(&*store, "b", SETTLE, 100).await, Acquire::Granted);
    // a's release is sent first and held back by the proxy until b's has gone
    // through (never past the SDK's 2 s attempt timeout: no retry, the write
    // lands late);
    // b's, sent after it, goes straight through.
    proxy.next(Fault::Hold, 1);
    let (before, _) = proxy.counts();
    let late = tokio::spawn({
        let store = std::sync::Arc::clone(&store);
        async move { give_back(&*store, "a", 1_000).await }
    });
    proxy.until_held().await;
    assert_eq!(give_back(&*store, "b", 2_000).await, Release::Released);
    let (on_time, _) = proxy.counts();
    assert_eq!(on_time - before, 2, "a's held-back request and b's");
    proxy.release();
    assert_eq!(
        late.await.unwrap(),
        Release::Released,
        "a's slot is freed all the same"
    );
    // The late release found a later time recorded and freed the slot with
    // a second request that leaves that time as it is.
    let (after, _) = proxy.counts();
    after_the_late_writes(&*store).await;
    assert_eq!(after - on_time, 1);
    late_steady_state_and_late_pre_reboot(&*store).await;
}

fn person(reason: &str) -> fleetlock::domain::lock::ByPerson {
    fleetlock::domain::lock::ByPerson {
        reason: fleetlock::domain::input::PauseReason::parse(reason).unwrap(),
        since: Timestamp::now(),
        by: "operator".into(),
    }
}

/// Two people: A's pause (or resume) is held back by the proxy after A read
/// the group, while B pauses and resumes (or resumes and pauses) directly.
/// A's write lands last and changes nothing.
#[tokio::test]
async fn a_late_pause_or_resume_never_undoes_a_newer_one() {
    use fleetlock::domain::store::Changed;
    let (proxy, late) = proxied_store("late-pause").await;
    let late = std::sync::Arc::new(late);
    // Straight to DynamoDB Local, each call signed as its role.
    let direct = crate::helpers::RoleStore::new(late.table(), &Default::default()).await;
    let held_back = || {
        // A's read goes through; its write is held until B is done.
        proxy.next(Fault::None, 1);
        proxy.next(Fault::Hold, 1);
    };

    held_back();
    let pausing = tokio::spawn({
        let late = std::sync::Arc::clone(&late);
        async move { late.pause(&group(), person("A: stop")).await.unwrap() }
    });
    proxy.until_held().await;
    let b = direct.pause(&group(), person("B: stop")).await.unwrap();
    assert_eq!(b.outcome, Changed::Yes);
    assert_eq!(direct.resume(&group()).await.unwrap().outcome, Changed::Yes);
    proxy.release();
    let a = pausing.await.unwrap();
    assert_eq!(a.outcome, Changed::Overtaken);
    assert!(
        !stored(&direct).await.pause.is_paused(),
        "B's resume stands"
    );

    direct.pause(&group(), person("C: stop")).await.unwrap();
    held_back();
    let resuming = tokio::spawn({
        let late = std::sync::Arc::clone(&late);
        async move { late.resume(&group()).await.unwrap() }
    });
    proxy.until_held().await;
    assert_eq!(direct.resume(&group()).await.unwrap().outcome, Changed::Yes);
    assert_eq!(
        direct
            .pause(&group(), person("D: stop again"))
            .await
            .unwrap()
            .outcome,
        Changed::Yes
    );
    proxy.release();
    assert_eq!(resuming.await.unwrap().outcome, Changed::Overtaken);
    let pause = stored(&direct)
        .await
        .pause
        .person
        .expect("D's pause stands");
    assert_eq!(pause.reason.as_str(), "D: stop again");
}

/// As for pauses: A's exclusion is held back by the proxy after A read the
/// group, while B excludes and includes the node directly; A's write lands
/// last and changes nothing, so the node B included stays included. And the
/// other way round for an inclusion held back.
#[tokio::test]
async fn a_late_exclusion_or_inclusion_never_undoes_a_newer_one() {
    use fleetlock::domain::store::{Changed, Excluding};
    let (proxy, late) = proxied_store("late-exclusion").await;
    let late = std::sync::Arc::new(late);
    // Straight to DynamoDB Local, each call signed as its role.
    let direct = crate::helpers::RoleStore::new(late.table(), &Default::default()).await;
    let held_back = || {
        proxy.next(Fault::None, 1);
        proxy.next(Fault::Hold, 1);
    };
    let node = id("sick");

    held_back();
    let excluding = tokio::spawn({
        let (late, node) = (std::sync::Arc::clone(&late), node.clone());
        async move {
            late.exclude(&group(), &node, person("A: out"))
                .await
                .unwrap()
        }
    });
    proxy.until_held().await;
    let b = direct
        .exclude(&group(), &node, person("B: out"))
        .await
        .unwrap();
    assert_eq!(b.outcome, Excluding::Changed(Changed::Yes));
    assert_eq!(
        direct.include(&group(), &node).await.unwrap().outcome,
        Changed::Yes
    );
    proxy.release();
    let a = excluding.await.unwrap();
    assert_eq!(a.outcome, Excluding::Changed(Changed::Overtaken));
    assert!(
        stored(&direct).await.excluded.is_empty(),
        "B's inclusion stands"
    );

    direct
        .exclude(&group(), &node, person("C: out"))
        .await
        .unwrap();
    held_back();
    let including = tokio::spawn({
        let (late, node) = (std::sync::Arc::clone(&late), node.clone());
        async move { late.include(&group(), &node).await.unwrap() }
    });
    proxy.until_held().await;
    assert_eq!(
        direct.include(&group(), &node).await.unwrap().outcome,
        Changed::Yes
    );
    assert_eq!(
        direct
            .exclude(&group(), &node, person("D: out again"))
            .await
            .unwrap()
            .outcome,
        Excluding::Changed(Changed::Yes)
    );
    proxy.release();
    assert_eq!(including.await.unwrap().outcome, Changed::Overtaken);
    let exclusion = stored(&direct)
        .await
        .excluded
        .remove(&node)
        .expect("D's exclusion stands");
    assert_eq!(exclusion.reason.as_str(), "D: out again");
}
