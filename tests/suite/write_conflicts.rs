//! A global table in multi-Region strong consistency answers a write that
//! raced one from another Region with `ReplicatedWriteConflictException`,
//! and does not apply it. A fault proxy answers so in front of DynamoDB Local,
//! on every kind of write the store makes: the SDK's own retry (bounded,
//! jittered; the model marks the error retryable) sends the same conditional
//! write again, whose condition decides afresh, so every caller hears what it
//! would have heard without the conflict, in one request more.

use std::time::Duration;

use fleetlock::domain::input::{GroupName, PauseReason};
use fleetlock::domain::lock::{ByPerson, DrainRule, GroupRules, OnDrainTimeout};
use fleetlock::domain::store::{Decided, StoreError};
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::DynamoStore;

use fleetlock::domain::auth::Auth;

use crate::fault_proxy::Fault;
use crate::helpers::{api, group, id, proxied_store, spawn_server, store_through, stored, zincati};
use fleetlock::domain::store::Decisions;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const LEASE: Duration = Duration::from_secs(1800);

fn leased() -> GroupRules {
    GroupRules {
        slots: 1,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: Some(LEASE),
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

fn gated() -> GroupRules {
    GroupRules {
        drain: Some(DrainRule {
            timeout: Duration::from_secs(900),
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        lease: None,
        ..leased()
    }
}

fn returning() -> GroupRules {
    GroupRules {
        lease: None,
        return_timeout: Some(Duration::from_secs(1200)),
        zone: None,
        canary: None,
        ..leased()
    }
}

/// Each kind of write the store makes, as one call, in the order the test
/// makes them: each family of writes on groups of its own.
#[derive(Clone, Copy, Debug)]
enum Write {
    Grant,
    Renewal,
    TakeOver,
    Release,
    PersonPause,
    AlarmPause,
    Resume,
    AlarmCleared,
    Exclusion,
    Inclusion,
    Reservation,
    Confirmation,
    ReturningGrant,
    Return,
    ReturnStop,
    ReturnConfirmation,
    StopResumed,
}

impl Write {
    const ALL: [Write; 17] = [
        Write::Grant,
        Write::Renewal,
        Write::TakeOver,
        Write::Release,
        Write::PersonPause,
        Write::AlarmPause,
        Write::Resume,
        Write::AlarmCleared,
        Write::Exclusion,
        Write::Inclusion,
        Write::Reservation,
        Write::Confirmation,
        Write::ReturningGrant,
        Write::Return,
        Write::ReturnStop,
        Write::ReturnConfirmation,
        Write::StopResumed,
    ];

    /// The groups the write's family uses: one without a conflict, one
    /// raced.
    fn groups(self) -> (GroupName, GroupName) {
        let family = match self {
            Write::Reservation | Write::Confirmation => "gated",
            Write::ReturningGrant
            | Write::Return
            | Write::ReturnStop
            | Write::ReturnConfirmation
            | Write::StopResumed => "returning",
            _ => "leased",
        };
        (
            group(&format!("{family}-plain")),
            group(&format!("{family}-raced")),
        )
    }

    /// Which of the call's writes meets the conflict: a renewal and a
    /// take-over write after the grant's write was refused.
    fn conflicted(self) -> usize {
        match self {
            Write::Renewal | Write::TakeOver => 1,
            _ => 0,
        }
    }

    /// The call on group `g`, and its answer.
    async fn call(self, store: &DynamoStore, g: &GroupName) -> String {
        let later = T0.plus(Duration::from_secs(600));
        let past_lease = T0.plus(LEASE * 3);
        let past_return = later.plus(Duration::from_secs(3600));
        let pause = ByPerson {
            reason: PauseReason::parse("db migration").unwrap(),
            since: T0,
            by: "ana".into(),
        };
        let exclusion = ByPerson {
            reason: PauseReason::parse("disk replacement").unwrap(),
            since: T0,
            by: "ana".into(),
        };
        match self {
            Write::Grant => shown(store.acquire(g, &id("a"), leased(), T0).await),
            Write::Renewal => shown(store.acquire(g, &id("a"), leased(), later).await),
            Write::TakeOver => shown(store.acquire(g, &id("b"), leased(), past_lease).await),
            Write::Release => shown(store.release(g, &id("b"), false, past_lease).await),
            Write::PersonPause => shown(store.pause(g, pause).await),
            Write::AlarmPause => shown(store.pause_for_alarm(g, "api-5xx").await),
            Write::Resume | Write::StopResumed => shown(store.resume(g).await),
            Write::AlarmCleared => shown(store.clear_alarm(g, "api-5xx").await),
            Write::Exclusion => shown(store.exclude(g, &id("d"), exclusion).await),
            Write::Inclusion => shown(store.include(g, &id("d")).await),
            Write::Reservation => shown(store.acquire(g, &id("c"), gated(), T0).await),
            Write::Confirmation => shown(store.drained(g, &id("c"), None, later).await),
            Write::ReturningGrant => shown(store.acquire(g, &id("e"), returning(), T0).await),
            Write::Return => shown(store.release(g, &id("e"), true, later).await),
            Write::ReturnStop => shown(
                store
                    .stop_rollout(
                        g,
                        &id("e"),
                        later,
                        fleetlock::domain::lock::StopCause::Return,
                        past_return,
                    )
                    .await,
            ),
            Write::ReturnConfirmation => {
                shown(store.returned(g, &id("e"), Some(later), past_return).await)
            }
        }
    }
}

fn shown<T: std::fmt::Debug>(decided: Result<Decided<T>, StoreError>) -> String {
    format!("{:?}", decided.unwrap().outcome)
}

/// Every kind of write, each on two groups: one without a conflict, and one
/// whose write meets a conflict (the second write where the call makes two).
/// Both answer alike and end alike, and the raced call makes exactly one
/// request more.
#[tokio::test]
async fn a_conflict_on_any_kind_of_write_is_retried_and_the_caller_never_sees_it() {
    let (proxy, store) = proxied_store("conflicts").await;
    for write in Write::ALL {
        let (plain, raced) = write.groups();
        let (before, _) = proxy.counts();
        let expected = write.call(&store, &plain).await;
        println!("{write:?}: {expected}");
        let (after_plain, _) = proxy.counts();
        proxy.next_writes(Fault::None, write.conflicted());
        proxy.next_writes(Fault::ReplicatedWriteConflict, 1);
        let answered = write.call(&store, &raced).await;
        let (after_raced, _) = proxy.counts();
        assert_eq!(answered, expected, "{write:?}: the conflict was heard");
        assert_eq!(
            after_raced - after_plain,
            after_plain - before + 1,
            "{write:?}: one request more, the retried write"
        );
        assert_eq!(
            stored(&store, &raced).await,
            stored(&store, &plain).await,
            "{write:?}: the groups ended alike, every field"
        );
    }
}

/// Two regions' services on one table, every request 30 ms slower and one
/// write in four refused as a conflict: Zincati-shaped nodes of both regions
/// race for a group's slots, round after round. Never more holders than
/// slots, a 200 only to a holder, a 423 never to one, and a node that heard
/// 503 learns the truth from its next call, as Zincati asks again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_regions_racing_through_conflicts_and_latency_never_over_grant() {
    const SLOTS: usize = 2;
    let (proxy, first) = proxied_store("conflict-race").await;
    let table = first.table().to_owned();
    let second = store_through(&proxy, &table, &format!("{table}-second")).await;
    let regions = [
        spawn_server(api(&format!("db={SLOTS}"), first, Auth::Disabled)).await,
        spawn_server(api(&format!("db={SLOTS}"), second, Auth::Disabled)).await,
    ];
    let reader = store_through(&proxy, &table, &format!("{table}-reader")).await;
    proxy.latency(Duration::from_millis(30));
    proxy.chaos_on_writes(0x2E61, &[(250, Fault::ReplicatedWriteConflict)]);
    let regions = std::sync::Arc::new(regions);
    // Node n lives in region n % 2 and always calls its own region's URL.
    let call = |n: usize, endpoint: &'static str, id: String| {
        let regions = std::sync::Arc::clone(&regions);
        async move {
            let answer = zincati(regions[n % 2].addr, endpoint, &id, "db").await;
            (answer.status, answer.word())
        }
    };
    let (mut granted, mut unavailable) = (0, 0);
    for round in 0..4 {
        let tasks: Vec<_> = (0..24)
            .map(|n| {
                let id = format!("r{round}-node{n}");
                let asked = call(n, "pre-reboot", id.clone());
                tokio::spawn(async move { (n, id, asked.await) })
            })
            .collect();
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        let holders: Vec<String> = stored(&reader, &group("db"))
            .await
            .holders
            .holders()
            .map(|(id, _)| id.to_string())
            .collect();
        assert!(holders.len() <= SLOTS, "round {round}: {holders:?}");
        for (n, id, (status, word)) in &answers {
            match (*status, word.as_str()) {
                (200, "granted" | "already_held") => {
                    granted += 1;
                    assert!(
                        holders.contains(id),
                        "round {round}: {id} heard 200 but holds nothing"
                    );
                }
                (423, "semaphore_full") => {
                    assert!(
                        !holders.contains(id),
                        "round {round}: {id} heard 423 but holds a slot"
                    )
                }
                (503, "store_unavailable") => {
                    // Zincati asks again; its answer is the truth (or 503
                    // once more, if that call's writes conflicted too).
                    unavailable += 1;
                    let (status, _) = call(*n, "pre-reboot", id.clone()).await;
                    let truth = if holders.contains(id) { 200 } else { 423 };
                    assert!(
                        status == truth || status == 503,
                        "round {round}: {id} then heard {status}"
                    );
                }
                other => panic!("round {round}: {id} heard {other:?}"),
            }
        }
        // The holders report steady-state to their own regions, through the
        // same conflicts, until their slots are free.
        for (n, id, _) in answers.iter().filter(|(_, id, _)| holders.contains(id)) {
            let mut told = call(*n, "steady-state", id.clone()).await;
            while told.0 == 503 {
                told = call(*n, "steady-state", id.clone()).await;
            }
            assert_eq!(told.0, 200, "round {round}: {id}'s steady-state");
        }
    }
    let (requests, forwarded) = proxy.counts();
    assert!(
        granted >= 4 * SLOTS,
        "each round fills the group: {granted} grants"
    );
    assert!(
        requests > forwarded,
        "conflicts were injected: {requests} requests, {forwarded} forwarded"
    );
    println!(
        "{granted} grants, {unavailable} answers 503, {} conflicts in {requests} requests",
        requests - forwarded
    );
}
