//! The drained entry point: a hook (a Step Functions task, a Lambda, SSM
//! Automation) confirms that a node was drained by invoking this function
//! with `{"action": "drained", "group": G, "id": X, "reserved_at": T}`
//! under `lambda:InvokeFunction`, which no node credential can make. The
//! answer is JSON (`outcome`, `done`, `value`); a malformed action or a
//! store that cannot be reached fails the invocation, so a hook retries.
//! `{"action": "slot", "group": G, "id": X}` reads whether the node holds
//! or waits for a slot, for a hook about to undrain it. `{"action":
//! "sweep"}`, sent by a schedule every 5 minutes, counts every group's
//! reservations past their drain timeout into the `DrainsOverdue` metric:
//! a group's calls count them too, but a group nobody calls sends nothing.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use crate::aws;
use crate::config;
use crate::domain::drain::{Action, Confirmed, overdue_in_all, slot_state};
use crate::domain::groups::GroupSlots;
use crate::domain::lock::{Clock, SystemClock};
use crate::domain::store::LockStore;
use crate::metrics::{DRAINS_OVERDUE, emf_line};

/// Confirms drains in one store.
pub struct DrainConfirmer<S> {
    store: S,
    clock: Arc<dyn Clock>,
    sweep: Option<Sweep>,
}

/// What a sweep needs: the gates, and the API function whose
/// `DrainsOverdue` metric (its dimension) the alarm watches.
struct Sweep {
    groups: GroupSlots,
    service: String,
}

impl<S: LockStore> DrainConfirmer<S> {
    pub fn new(store: S) -> Self {
        Self {
            store,
            clock: Arc::new(SystemClock),
            sweep: None,
        }
    }

    /// Sweeps for the gates `groups` configures, into the metric of the
    /// API function `service`.
    pub fn with_sweep(mut self, groups: GroupSlots, service: impl Into<String>) -> Self {
        self.sweep = Some(Sweep {
            groups,
            service: service.into(),
        });
        self
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
            Action::Sweep => return self.sweep().await,
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

    /// Every group read once (one consistent scan), its reservations past
    /// their timeout counted, and one EMF line printed with the total.
    async fn sweep(&self) -> Result<Value, String> {
        let sweep = self.sweep.as_ref().ok_or(
            "no sweep without a drain gate: FLEETLOCK_DRAIN and FLEETLOCK_METRICS_SERVICE are \
             unset on this function",
        )?;
        let stored = self.store.groups(None).await.map_err(|err| {
            tracing::error!(error = %err, "lock store failed on a sweep");
            format!("the groups could not be read: {err}")
        })?;
        let now = self.clock.now();
        let overdue = overdue_in_all(&stored, &sweep.groups, now);
        let groups = stored.len();
        let properties = serde_json::json!({ DRAINS_OVERDUE: overdue, "Groups": groups });
        println!(
            "{}",
            emf_line(
                &sweep.service,
                now,
                &[(DRAINS_OVERDUE, "Count")],
                properties
            )
        );
        tracing::info!(drains_overdue = overdue, groups, "sweep");
        Ok(serde_json::json!({ "drains_overdue": overdue, "groups": groups }))
    }
}

pub async fn run() -> ExitCode {
    let setup = async {
        let settings =
            config::DrainedSettings::from_vars(config::process_env).map_err(|e| e.to_string())?;
        let store = super::checked_store(&aws::load_config().await, settings.table).await?;
        let confirmer = DrainConfirmer::new(store);
        Ok::<_, String>(match settings.sweep {
            Some((groups, service)) => confirmer.with_sweep(groups, service),
            None => confirmer,
        })
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
        // Without a gate configured, a sweep says why it cannot count.
        let sweep = json!({"action": "sweep"});
        let why = confirmer.handle(&sweep).await.unwrap_err();
        assert!(why.starts_with("no sweep without a drain gate"), "{why}");
    }

    /// The sweep of `drain`'s gates at `minutes`, over a store whose
    /// reservations `workers=15m,*=1h` made: old (0) and young (10) in
    /// workers, one at 0 in db and one at 0 in a group only `*` covers.
    async fn swept(drain: &str, minutes: u64) -> Value {
        let configured = |drain: &str| {
            GroupSlots::parse("workers=2,db=1,*=1")
                .unwrap()
                .with_drain(drain)
                .unwrap()
        };
        let made = configured("workers=15m,*=1h");
        let t0 = Timestamp(1_764_480_000_000);
        let at = |m: u64| t0.plus(std::time::Duration::from_secs(m * 60));
        let store = MemoryStore::default();
        for (group, id, when) in [
            ("workers", "old", 0),
            ("workers", "young", 10),
            ("db", "other", 0),
            ("new-group", "older", 0),
        ] {
            let group = GroupName::parse(group).unwrap();
            let rules = made.rules_for(&group).unwrap();
            let node = NodeId::parse(id).unwrap();
            store.acquire(&group, &node, rules, at(when)).await.unwrap();
        }
        struct At(Timestamp);
        impl Clock for At {
            fn now(&self) -> Timestamp {
                self.0
            }
        }
        let confirmer = DrainConfirmer::new(store)
            .with_sweep(configured(drain), "api")
            .with_clock(At(at(minutes)));
        confirmer.handle(&json!({"action": "sweep"})).await.unwrap()
    }

    #[tokio::test]
    async fn a_sweep_counts_the_reservations_past_their_timeout_in_every_group() {
        // At 20 minutes only workers' 15m reservation made at 0 is overdue:
        // the other groups have `*`'s hour.
        let at_20 = swept("workers=15m,*=1h", 20).await;
        assert_eq!(at_20, json!({"drains_overdue": 1, "groups": 3}));
        assert_eq!(swept("workers=15m,*=1h", 60).await["drains_overdue"], 4);
        // A group without a gate counts nothing, whatever it stores.
        assert_eq!(swept("workers=15m", 60).await["drains_overdue"], 2);
    }
}
