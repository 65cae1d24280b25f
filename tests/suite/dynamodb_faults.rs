//! DynamoDB faults, injected by a proxy in front of DynamoDB Local: the
//! service retries within bounds, answers 503 when it must, never answers 2xx
//! for a decision that was not stored, never grants a second slot on a retry,
//! and a lost answer resolves on Zincati's next call.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetlock::aws::MAX_ATTEMPTS;
use fleetlock::domain::auth::Auth;
use fleetlock::domain::store::LockStore;
use fleetlock::http::Api;
use fleetlock::store::dynamodb::DynamoStore;

use crate::fault_proxy::{Fault, FaultProxy};
use crate::helpers::proxied_store;
use crate::helpers::{TestServer, api, spawn_server, zincati};

struct Rig {
    proxy: FaultProxy,
    api: Arc<Api<DynamoStore>>,
    server: TestServer,
}

/// The service over HTTP, its DynamoDB client talking through the proxy.
async fn rig(groups: &str) -> Rig {
    let (proxy, store) = proxied_store("faults").await;
    let api = api(groups, store, Auth::Disabled);
    let server = spawn_server(Arc::clone(&api)).await;
    Rig { proxy, api, server }
}

impl Rig {
    async fn holders(&self) -> Vec<String> {
        self.api
            .service()
            .store()
            .groups(Some(
                &fleetlock::domain::input::GroupName::parse("default").unwrap(),
            ))
            .await
            .unwrap()
            .iter()
            .flat_map(|(_, record)| record.holders.holders().map(|(id, _)| id.to_string()))
            .collect()
    }

    async fn call(&self, endpoint: &str, id: &str) -> (u16, String) {
        let r = zincati(self.server.addr, endpoint, id, "default").await;
        (r.status, r.word())
    }
}

#[tokio::test]
async fn a_lost_answer_to_a_grant_is_retried_into_the_same_slot() {
    let rig = rig("default=1").await;
    rig.proxy.next(Fault::DropAnswer, 1);
    // The write landed, its answer was lost; the SDK's retry finds the holder.
    assert_eq!(
        rig.call("pre-reboot", "a").await,
        (200, "already_held".into())
    );
    assert_eq!(rig.holders().await, vec!["a"]);
    assert_eq!(
        rig.call("pre-reboot", "b").await,
        (423, "semaphore_full".into())
    );
}

#[tokio::test]
async fn when_every_answer_is_lost_the_next_zincati_call_resolves_it() {
    let rig = rig("default=1").await;
    rig.proxy.always(Fault::DropAnswer);
    let (before, _) = rig.proxy.counts();
    let answer = rig.call("pre-reboot", "a").await;
    assert_eq!(answer, (503, "store_unavailable".into()));
    let (after, _) = rig.proxy.counts();
    assert_eq!(
        after - before,
        u64::from(MAX_ATTEMPTS),
        "bounded attempts, then a 503"
    );
    rig.proxy.always(Fault::None);
    // Zincati asks again 5 minutes later: the slot it did get is confirmed...
    assert_eq!(
        rig.call("pre-reboot", "a").await,
        (200, "already_held".into())
    );
    // ...and it is the only one.
    assert_eq!(
        rig.call("pre-reboot", "b").await,
        (423, "semaphore_full".into())
    );
    assert_eq!(rig.holders().await, vec!["a"]);
}

#[tokio::test]
async fn a_lost_answer_to_a_release_still_frees_the_slot() {
    let rig = rig("default=1").await;
    assert_eq!(rig.call("pre-reboot", "a").await.0, 200);
    rig.proxy.next(Fault::DropAnswer, 1);
    assert_eq!(
        rig.call("steady-state", "a").await,
        (200, "not_held".into())
    );
    assert!(rig.holders().await.is_empty());
    assert_eq!(rig.call("pre-reboot", "b").await, (200, "granted".into()));
}

#[tokio::test]
async fn throttling_and_server_errors_are_retried_then_answered_503() {
    for fault in [Fault::Throttle, Fault::ServerError] {
        let rig = rig("default=1").await;
        rig.proxy.next(fault, 2);
        assert_eq!(
            rig.call("pre-reboot", "a").await,
            (200, "granted".into()),
            "{fault:?}"
        );
        rig.proxy.always(fault);
        assert_eq!(
            rig.call("pre-reboot", "b").await,
            (503, "store_unavailable".into()),
            "{fault:?}"
        );
        assert_eq!(
            rig.call("steady-state", "a").await,
            (503, "store_unavailable".into()),
            "{fault:?}"
        );
        rig.proxy.always(Fault::None);
        assert_eq!(rig.holders().await, vec!["a"], "{fault:?}: nothing changed");
    }
}

#[tokio::test]
async fn reset_connections_decide_nothing() {
    let rig = rig("default=1").await;
    rig.proxy.always(Fault::Reset);
    let before = rig.proxy.counts();
    let answer = rig.call("pre-reboot", "a").await;
    assert_eq!(answer, (503, "store_unavailable".into()));
    let after = rig.proxy.counts();
    assert_eq!(after.1 - before.1, 0, "nothing reached DynamoDB");
    assert_eq!(
        after.0 - before.0,
        u64::from(MAX_ATTEMPTS),
        "bounded attempts"
    );
    rig.proxy.always(Fault::None);
    assert!(rig.holders().await.is_empty());
    rig.proxy.next(Fault::Reset, 1);
    assert_eq!(rig.call("pre-reboot", "a").await, (200, "granted".into()));
}

#[tokio::test]
async fn a_slow_store_is_given_up_on_inside_the_lambda_timeout() {
    let rig = rig("default=1").await;
    // Slower than the 2 s attempt timeout: the first write lands late, the
    // retry finds it.
    rig.proxy
        .next(Fault::DelayAnswer(Duration::from_secs(3)), 1);
    assert_eq!(
        rig.call("pre-reboot", "a").await,
        (200, "already_held".into())
    );

    rig.proxy.always(Fault::DelayAnswer(Duration::from_secs(3)));
    let started = Instant::now();
    assert_eq!(
        rig.call("pre-reboot", "b").await,
        (503, "store_unavailable".into())
    );
    // A correctness bound, not a speed figure: the function's timeout is 10 s,
    // and a 503 must leave before Lambda cuts the invocation off.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    rig.proxy.always(Fault::None);
    assert_eq!(
        rig.holders().await,
        vec!["a"],
        "b was refused: the group is full"
    );
}

/// Many nodes race while answers are lost: no node hears 2xx without being a
/// holder, and the table never holds more than the slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_race_with_lost_answers_never_over_grants() {
    const SLOTS: usize = 3;
    let rig = Arc::new(rig(&format!("default={SLOTS}")).await);
    let mut granted_in_all_rounds = 0;
    for round in 0..3 {
        // Every other request loses its answer after the write landed.
        for _ in 0..40 {
            rig.proxy.next(Fault::DropAnswer, 1);
            rig.proxy.next(Fault::None, 1);
        }
        let tasks: Vec<_> = (0..40)
            .map(|n| {
                let rig = Arc::clone(&rig);
                tokio::spawn(async move {
                    let id = format!("r{round}-n{n:02}");
                    (id.clone(), rig.call("pre-reboot", &id).await)
                })
            })
            .collect();
        let mut told_yes = Vec::new();
        let mut told_full = Vec::new();
        let mut told_unavailable = Vec::new();
        for task in tasks {
            let (id, (status, word)) = task.await.unwrap();
            match (status, word.as_str()) {
                (200, "granted" | "already_held") => told_yes.push(id),
                (423, "semaphore_full") => told_full.push(id),
                (503, "store_unavailable") => told_unavailable.push(id),
                other => panic!("round {round}: {id} heard {other:?}"),
            }
        }
        rig.proxy.always(Fault::None);
        let holders = rig.holders().await;
        // Forty nodes for three slots: the group fills, and never overfills.
        assert_eq!(holders.len(), SLOTS, "round {round}: {holders:?}");
        granted_in_all_rounds += told_yes.len();
        for id in &told_yes {
            assert!(
                holders.contains(id),
                "round {round}: {id} heard 200 but holds nothing"
            );
        }
        for id in &told_full {
            assert!(
                !holders.contains(id),
                "round {round}: {id} heard 423 but holds a slot"
            );
        }
        // A node that heard 503 asks again, as Zincati does, and learns the truth.
        for id in &told_unavailable {
            let expected = if holders.contains(id) {
                (200, "already_held".to_owned())
            } else {
                (423, "semaphore_full".to_owned())
            };
            assert_eq!(
                rig.call("pre-reboot", id).await,
                expected,
                "round {round}: {id}"
            );
        }
        // Everyone releases (a lost answer here would be retried too).
        for id in holders {
            assert_eq!(rig.call("steady-state", &id).await.0, 200);
        }
        assert!(rig.holders().await.is_empty());
    }
    // Half the answers were lost, not all: some grants were heard.
    assert!(granted_in_all_rounds > 0);
}
