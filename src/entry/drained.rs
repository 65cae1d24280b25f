//! The drained entry point: a hook (a Step Functions task, a Lambda, SSM
//! Automation) confirms that a node was drained by invoking this function
//! with `{"action": "drained", "group": G, "id": X, "reserved_at": T}`
//! under `lambda:InvokeFunction`, which no node credential can make. The
//! answer is JSON (`outcome`, `done`, `value`); a malformed action or a
//! store that cannot be reached fails the invocation, so a hook retries.
//! `{"action": "slot", "group": G, "id": X}` reads whether the node holds
//! or waits for a slot, for a hook about to undrain it.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use crate::aws;
use crate::config;
use crate::domain::drain::{Action, Confirmed, slot_state};
use crate::domain::lock::{Clock, SystemClock};
use crate::domain::store::LockStore;

/// Confirms drains in one store.
pub struct DrainConfirmer<S> {
    store: S,
    clock: Arc<dyn Clock>,
}

impl<S: LockStore> DrainConfirmer<S> {
    pub fn new(store: S) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
        }
    }

    /// The same, reading the time from `clock` (tests move it).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// One action: the confirmation's answer or the slot read, or why
    /// there is none.
    pub async fn handle(&self, action: &Value) -> Result<Value, String> {
        let action = Action::parse(action).map_err(|why| {
            tracing::error!(error = %why, "refused a malformed action");
            format!("invalid action: {why}")
        })?;
        let confirmation = match action {
            Action::Drained(confirmation) => confirmation,
            Action::Slot { group, id } => {
                let stored = self.store.groups(Some(&group)).await.map_err(|err| {
                    tracing::error!(group = %group, error = %err, "lock store failed on a slot read");
                    format!("the slot could not be read: {err}")
                })?;
                let record = stored
                    .into_iter()
                    .next()
                    .map(|(_, r)| r)
                    .unwrap_or_default();
                return Ok(slot_state(&record, &group, &id));
            }
        };
        let decided = self
            .store
            .drained(
                &confirmation.group,
                &confirmation.id,
                confirmation.reserved_at,
                self.clock.now(),
            )
            .await
            .map_err(|err| {
                tracing::error!(group = %confirmation.group, error = %err, "lock store failed on a drain confirmation");
                format!("nothing was confirmed: {err}")
            })?;
        let confirmed = Confirmed::of(decided.outcome, &confirmation);
        tracing::info!(
            group = %confirmation.group,
            id = %confirmation.id.shown(),
            outcome = confirmed.outcome,
            "{}",
            confirmed.value
        );
        Ok(confirmed.to_json(&confirmation))
    }
}

pub async fn run() -> ExitCode {
    let setup = async {
        let table = config::table(config::process_env)
            .map_err(|e| e.to_string())?
            .ok_or("FLEETLOCK_TABLE is unset; drains are confirmed in the lock table")?;
        let store = super::checked_store(&aws::load_config().await, table).await?;
        Ok::<_, String>(DrainConfirmer::new(store))
    };
    let confirmer = match setup.await {
        Ok(confirmer) => Arc::new(confirmer),
        Err(why) => {
            tracing::error!(error = %why, "not starting");
            return ExitCode::FAILURE;
        }
    };
    let result = super::run_json(move |event| {
        let confirmer = Arc::clone(&confirmer);
        async move { confirmer.handle(&event).await }
    })
    .await;
    super::runtime_stopped(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::groups::GroupSlots;
    use crate::domain::input::{GroupName, NodeId};
    use crate::domain::lock::{Acquire, Timestamp};
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn a_hook_reads_the_slot_confirms_the_drain_and_hears_why_an_action_is_refused() {
        let store = MemoryStore::default();
        let group = GroupName::parse("workers").unwrap();
        let rules = GroupSlots::parse("workers=1")
            .unwrap()
            .with_drain("workers=15m")
            .unwrap()
            .rules_for(&group)
            .unwrap();
        let node = NodeId::parse("node-a").unwrap();
        let reserved = store
            .acquire(&group, &node, rules, Timestamp::now())
            .await
            .unwrap();
        assert_eq!(reserved.outcome, Acquire::Reserves);
        let confirmer = DrainConfirmer::new(store);
        let slot = json!({"action": "slot", "group": "workers", "id": "node-a"});
        let confirm = |id: &str| json!({"action": "drained", "group": "workers", "id": id});

        let read = confirmer.handle(&slot).await.unwrap();
        assert_eq!(
            (&read["waiting_for_drain"], &read["holds"]),
            (&json!(true), &json!(false))
        );
        let confirmed = confirmer.handle(&confirm("node-a")).await.unwrap();
        assert_eq!(
            (&confirmed["outcome"], &confirmed["done"]),
            (&json!("granted"), &json!(true))
        );
        let read = confirmer.handle(&slot).await.unwrap();
        assert_eq!(
            (&read["waiting_for_drain"], &read["holds"]),
            (&json!(false), &json!(true))
        );
        let again = confirmer.handle(&confirm("node-a")).await.unwrap();
        assert_eq!(again["outcome"], "already_granted");
        let nobody = confirmer.handle(&confirm("node-b")).await.unwrap();
        assert_eq!(
            (&nobody["outcome"], &nobody["done"]),
            (&json!("no_reservation"), &json!(false))
        );
        let mistyped = json!({"action": "drain", "group": "workers", "id": "node-a"});
        let why = confirmer.handle(&mistyped).await.unwrap_err();
        assert!(
            why.starts_with("invalid action: unknown action \"drain\""),
            "{why}"
        );
    }
}
