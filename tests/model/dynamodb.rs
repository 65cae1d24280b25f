//! The model's steps on the DynamoDB store: every step of a bounded
//! exploration taken again from the same state on DynamoDB Local (the state
//! seeded as its item, each call signed as the role that makes it in
//! production), where the rules are the condition expressions. The state
//! after it and what was heard must be the memory store's, step for step:
//! the model's promise, checked on the memory store, holds for the
//! conditions too.
//!
//! Needs DynamoDB Local and the IAM enforcer (AWS_ENDPOINT_URL), as
//! ./scripts/test starts them: without them it fails, never skips.

use std::collections::HashSet;

use fleetlock::domain::input::GroupName;
use fleetlock::domain::lock::GroupRecord;
use fleetlock::store::dynamodb::DynamoStore;

use crate::role_store::RoleStore;
use crate::world::{Bounds, ModelStore, State, World};

impl ModelStore for RoleStore {
    async fn put(&self, group: &GroupName, record: &GroupRecord) {
        self.seed(group, record).await;
    }

    async fn get(&self, group: &GroupName) -> GroupRecord {
        use fleetlock::domain::store::LockStore as _;
        let mut groups = self.groups(Some(group)).await.unwrap();
        groups.pop().map(|(_, record)| record).unwrap_or_default()
    }
}

/// A fresh table on DynamoDB Local, and a maker of stores on it.
fn table() -> String {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is unset: the model's steps on DynamoDB need DynamoDB Local and \
             the IAM enforcer, which ./scripts/test starts"
        )
    });
    assert!(
        endpoint.starts_with("http://127.0.0.1:"),
        "{endpoint} is not loopback"
    );
    let table = format!("model-{}-{}", std::process::id(), rand_suffix());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let (client, _) = fleetlock::test_support::counted_client().await;
        DynamoStore::new(client, &table)
            .create_table()
            .await
            .unwrap();
    });
    table
}

fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// How far [`lands_alike`] goes: every step from every state within
/// `near` steps of the start, and from every state along `walks` random
/// walks of `length` steps (deep states: returns stopped, waves, zones
/// switched), each walk seeded by its number, so a run is repeatable.
#[derive(Clone, Copy, Debug)]
pub struct Reach {
    pub near: usize,
    pub walks: u64,
    pub length: usize,
}

/// Both stores from the states [`Reach`] says: the first step where they
/// differ, or how many steps were compared.
pub fn lands_alike(bounds: Bounds, reach: Reach) -> Result<usize, String> {
    let memory = World::new(bounds);
    let table = table();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dynamodb = World::on(bounds, || {
        runtime.block_on(RoleStore::new(&table, &Default::default()))
    });
    let mut compared = 0;
    // Every step from `state` on both stores; the states it leads to.
    let mut from = |state: &State| -> Result<Vec<State>, String> {
        let mut after = Vec::new();
        for step in memory.steps(state) {
            let (want, heard) = memory.apply(state, step);
            let (got, answered) = dynamodb.apply(state, step);
            compared += 1;
            if want != got || heard.word() != answered.word() {
                return Err(format!(
                    "from {state:#?}\nthe step {step:?}:\nmemory: {} {want:#?}\n\
                     DynamoDB: {} {got:#?}",
                    heard.word(),
                    answered.word()
                ));
            }
            after.push(want);
        }
        Ok(after)
    };
    let mut frontier = vec![memory.initial()];
    let mut seen: HashSet<State> = frontier.iter().cloned().collect();
    for _ in 0..reach.near {
        let mut next = Vec::new();
        for state in &frontier {
            for after in from(state)? {
                if seen.insert(after.clone()) {
                    next.push(after);
                }
            }
        }
        frontier = next;
    }
    for walk in 0..reach.walks {
        // xorshift64, seeded by the walk's number.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64 ^ (walk + 1).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let mut state = memory.initial();
        for _ in 0..reach.length {
            let after = from(&state)?;
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            match after.len() {
                0 => break,
                n => state = after[(seed % n as u64) as usize].clone(),
            }
        }
    }
    Ok(compared)
}
