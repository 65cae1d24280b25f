//! A global table in multi-Region strong consistency answers a write that
//! raced one from another Region with `ReplicatedWriteConflictException`,
//! and does not apply it. A fault proxy answers so in front of DynamoDB Local,
//! on every kind of write the store makes: the SDK's own retry (bounded,
//! jittered; the model marks the error retryable) sends the same conditional
//! write again, whose condition decides afresh, so every caller hears what it
//! would have heard without the conflict, in one request more.

use std::time::Duration;

use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::{DrainRule, GroupRules, OnDrainTimeout, PersonPause, Timestamp};
use fleetlock::domain::store::{GroupRecord, LockStore};
use fleetlock::store::dynamodb::DynamoStore;

use crate::fault_proxy::Fault;
use crate::helpers::proxied_store;

const T0: Timestamp = Timestamp(1_764_480_000_000);
const LEASE: Duration = Duration::from_secs(1800);

fn id(s: &str) -> NodeId {
    NodeId::parse(s).unwrap()
}

fn leased() -> GroupRules {
    GroupRules {
        slots: 1,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: Some(LEASE),
        drain: None,
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

async fn stored(store: &DynamoStore, g: &GroupName) -> GroupRecord {
    let mut groups = store.groups(Some(g)).await.unwrap();
    groups.pop().map(|(_, record)| record).unwrap_or_default()
}

/// Every kind of write, each on two groups: `plain` without a conflict and
/// `raced` with a conflict on one of its writes (`conflicted`: the first, or
/// the second where the call writes twice). Both must answer alike and end
/// alike, and the raced call makes exactly one request more.
#[tokio::test]
async fn a_conflict_on_any_kind_of_write_is_retried_and_the_caller_never_sees_it() {
    let (proxy, store) = proxied_store("conflicts").await;
    let plain = GroupName::parse("plain").unwrap();
    let raced = GroupName::parse("raced").unwrap();
    let gated_plain = GroupName::parse("gated-plain").unwrap();
    let gated_raced = GroupName::parse("gated-raced").unwrap();
    let later = T0.plus(Duration::from_secs(600));
    let past_lease = T0.plus(LEASE * 3);
    let pause = PersonPause {
        reason: PauseReason::parse("db migration").unwrap(),
        since: T0,
        by: "ana".into(),
    };

    // (what, the write that conflicts, the call on a group)
    type Call<'a> = Box<
        dyn Fn(&'a GroupName) -> std::pin::Pin<Box<dyn std::future::Future<Output = String> + 'a>>
            + 'a,
    >;
    let store = &store;
    let steps: Vec<(&str, usize, bool, Call)> = vec![
        (
            "a grant",
            0,
            false,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .acquire(g, &id("a"), leased(), T0)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
        (
            "a holder's renewal",
            1,
            false,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .acquire(g, &id("a"), leased(), later)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
        (
            "a take-over past the lease",
            1,
            false,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .acquire(g, &id("b"), leased(), past_lease)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
        (
            "a release",
            0,
            false,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .release(g, &id("b"), past_lease)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
        (
            "a person's pause",
            0,
            false,
            Box::new(|g| {
                let pause = pause.clone();
                Box::pin(
                    async move { format!("{:?}", store.pause(g, pause).await.unwrap().outcome) },
                )
            }),
        ),
        (
            "an alarm's pause",
            0,
            false,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store.pause_for_alarm(g, "api-5xx").await.unwrap().outcome
                    )
                })
            }),
        ),
        (
            "a reservation behind a drain gate",
            0,
            true,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .acquire(g, &id("c"), gated(), T0)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
        (
            "a drain's confirmation",
            0,
            true,
            Box::new(|g| {
                Box::pin(async move {
                    format!(
                        "{:?}",
                        store
                            .drained(g, &id("c"), None, later)
                            .await
                            .unwrap()
                            .outcome
                    )
                })
            }),
        ),
    ];
    for (what, conflicted, drain, call) in &steps {
        let (plain, raced) = if *drain {
            (&gated_plain, &gated_raced)
        } else {
            (&plain, &raced)
        };
        let (before, _) = proxy.counts();
        let expected = call(plain).await;
        let (after_plain, _) = proxy.counts();
        proxy.next_writes(Fault::None, *conflicted);
        proxy.next_writes(Fault::ReplicatedWriteConflict, 1);
        let answered = call(raced).await;
        let (after_raced, _) = proxy.counts();
        assert_eq!(answered, expected, "{what}: the conflict was heard");
        assert_eq!(
            after_raced - after_plain,
            after_plain - before + 1,
            "{what}: one request more, the retried write"
        );
        let (p, r) = (stored(store, plain).await, stored(store, raced).await);
        assert_eq!(
            (format!("{:?}", p.holders), format!("{:?}", p.pause)),
            (format!("{:?}", r.holders), format!("{:?}", r.pause)),
            "{what}: the groups ended alike"
        );
    }
}
