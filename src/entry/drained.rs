//! The drained entry point: a hook (a Step Functions task, a Lambda, SSM
//! Automation) confirms that a node was drained by invoking this function
//! with `{"action": "drained", "group": G, "id": X, "reserved_at": T}`
//! under `lambda:InvokeFunction`, which no node credential can make. The
//! answer is JSON (`outcome`, `done`, `value`); a malformed action or a
//! store that cannot be reached fails the invocation, so a hook retries.
//! `{"action": "returned", "group": G, "id": X, "released_at": T}` confirms
//! that a node is back in service (the return gate). `{"action": "slot",
//! "group": G, "id": X}` reads whether the node holds, waits for or returns
//! a slot, for a hook about to undrain it. `{"action": "sweep"}`, sent by a
//! schedule every 5 minutes, counts every group's reservations past their
//! drain timeout into the `DrainsOverdue` metric and its returns past their
//! return timeout into `ReturnsOverdue` (a group's calls count them too,
//! but a group nobody calls sends nothing), and stops the rollout of a
//! group for each return past its timeout, once, and for each node of a
//! canary's wave not back within the canary's time, once.

use super::EntryError;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use crate::aws;
use crate::config;
use crate::domain::drain::{
    Action, Confirmation, Confirmed, confirmed_return, overdue_in_all, slot_state,
};
use crate::domain::groups::GroupSlots;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{StopCause, Stopping};
use crate::domain::service::returns;
use crate::domain::store::Decisions;
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;
use crate::domain::time::{Clock, SystemClock};
use crate::metrics::{DRAINS_OVERDUE, RETURNS_OVERDUE, emf_line};
use crate::store::dynamodb::Regional;

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
    pub async fn handle(&self, action: &Value) -> Result<Value, EntryError> {
        let action = Action::parse(action).map_err(|why| {
            tracing::error!(error = %why, "refused a malformed action");
            EntryError::InvalidAction(why)
        })?;
        let now = self.clock.now();
        match action {
            Action::Drained(confirmation) => {
                let decided = self
                    .store
                    .drained(
                        &confirmation.group,
                        &confirmation.id,
                        confirmation.reserved_at,
                        now,
                    )
                    .await
                    .map(|d| Confirmed::of(d.outcome, &confirmation));
                answered(&confirmation, decided, "a drain confirmation")
            }
            Action::Returned(confirmation) => {
                let decided = self
                    .store
                    .returned(
                        &confirmation.group,
                        &confirmation.id,
                        confirmation.reserved_at,
                        now,
                    )
                    .await
                    .map(|d| confirmed_return(d.outcome, &confirmation));
                answered(&confirmation, decided, "a return confirmation")
            }
            Action::Sweep => self.sweep().await,
            Action::Slot { group, id } => {
                let stored = self.store.groups(Some(&group)).await.map_err(|err| {
                    tracing::error!(group = %group, error = %err, "lock store failed on a slot read");
                    EntryError::Store {
                        what: "the slot could not be read",
                        source: err,
                    }
                })?;
                let record = stored
                    .into_iter()
                    .next()
                    .map(|(_, r)| r)
                    .unwrap_or_default();
                Ok(slot_state(&record, &group, &id))
            }
        }
    }

    /// Every group read once (one consistent scan): its reservations past
    /// their timeout counted; its returns past their timeout counted, and
    /// each not yet judged stops its group (one conditional write each,
    /// once per return). One EMF line printed with the totals.
    async fn sweep(&self) -> Result<Value, EntryError> {
        let sweep = self.sweep.as_ref().ok_or(EntryError::NoSweep)?;
        let stored = self.store.groups(None).await.map_err(|err| {
            tracing::error!(error = %err, "lock store failed on a sweep");
            EntryError::Store {
                what: "the groups could not be read",
                source: err,
            }
        })?;
        let now = self.clock.now();
        let overdue = overdue_in_all(&stored, &sweep.groups, now);
        let mut returns_overdue = 0;
        let mut stopped = 0;
        let mut waves_overdue = 0;
        for (group, record) in &stored {
            let Ok(rules) = sweep.groups.rules_for(group) else {
                continue;
            };
            if let Some(canary) = rules.canary {
                for (id, granted) in record.waves_overdue(canary, now) {
                    waves_overdue += 1;
                    if self.stop(group, &id, granted, StopCause::Wave, now).await? {
                        stopped += 1;
                        tracing::warn!(
                            group = %group,
                            id = %id.shown(),
                            out_s = granted.age_at(now).as_secs(),
                            "rollout stopped: a node of the canary's wave was not back in \
                             service within the canary's time; its slot stays ('fleetlock \
                             release' once it is back or gone, then 'fleetlock resume')"
                        );
                    }
                }
            }
            let (Some(timeout), Some(returns)) =
                (rules.return_timeout, returns(record, rules, now))
            else {
                continue;
            };
            returns_overdue += returns.overdue;
            for (id, since) in record.returns_overdue(timeout, now) {
                if self.stop(group, &id, since, StopCause::Return, now).await? {
                    stopped += 1;
                    tracing::warn!(
                        group = %group,
                        id = %id.shown(),
                        returning_s = since.age_at(now).as_secs(),
                        "rollout stopped: the node gave its slot back and its return to service \
                         was not confirmed within the return timeout; the slot stays returning \
                         ('fleetlock returned' once it is back, then 'fleetlock resume')"
                    );
                }
            }
        }
        let groups = stored.len();
        let properties = serde_json::json!({
            DRAINS_OVERDUE: overdue,
            RETURNS_OVERDUE: returns_overdue,
            "RolloutsStopped": stopped,
            "WavesOverdue": waves_overdue,
            "Groups": groups,
        });
        println!(
            "{}",
            emf_line(
                &sweep.service,
                now,
                &[(DRAINS_OVERDUE, "Count"), (RETURNS_OVERDUE, "Count")],
                properties
            )
        );
        tracing::info!(
            drains_overdue = overdue,
            returns_overdue,
            stopped,
            groups,
            "sweep"
        );
        Ok(serde_json::json!({
            "drains_overdue": overdue,
            "returns_overdue": returns_overdue,
            "stopped": stopped,
            "waves_overdue": waves_overdue,
            "groups": groups,
        }))
    }

    /// One stop of a group's rollout (one conditional write): whether this
    /// write stopped it for that slot.
    async fn stop(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    ) -> Result<bool, EntryError> {
        let decided = self
            .store
            .stop_rollout(group, id, since, cause, now)
            .await
            .map_err(|err| {
                tracing::error!(group = %group, error = %err, "lock store failed on a rollout stop");
                EntryError::Store {
                    what: "a rollout stop could not be written",
                    source: err,
                }
            })?;
        Ok(decided.outcome == Stopping::Stopped)
    }
}

/// A confirmation's answer to a hook, logged: what it came to, or why
/// nothing was confirmed (`what`: which confirmation, for the log).
fn answered(
    confirmation: &Confirmation,
    decided: Result<Confirmed, crate::domain::store::StoreError>,
    what: &str,
) -> Result<Value, EntryError> {
    let confirmed = decided.map_err(|err| {
        tracing::error!(group = %confirmation.group, error = %err, "lock store failed on {what}");
        EntryError::Store {
            what: "nothing was confirmed",
            source: err,
        }
    })?;
    tracing::info!(
        group = %confirmation.group,
        id = %confirmation.id.shown(),
        outcome = confirmed.outcome,
        "{}",
        confirmed.value
    );
    Ok(confirmed.to_json(confirmation))
}

pub(crate) async fn run() -> ExitCode {
    let setup = async {
        let settings = config::DrainedSettings::from_vars(config::process_env)?;
        let store =
            super::checked_store(&aws::load_config().await, settings.table, Regional::No).await?;
        let confirmer = DrainConfirmer::new(store);
        Ok::<_, EntryError>(match settings.sweep {
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
    use crate::domain::lock::{Acquire, Refusal};
    use crate::domain::time::Timestamp;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn a_hook_reads_the_slot_confirms_the_drain_and_hears_why_an_action_is_refused() {
        let store = MemoryStore::default();
        let group = GroupName::parse("workers").unwrap();
        let rules = GroupSlots::parse("workers=1")
            .unwrap()
            .with_setting("FLEETLOCK_DRAIN", "workers=15m")
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
            why.to_string()
                .starts_with("invalid action: unknown action \"drain\""),
            "{why}"
        );
        // Without a gate configured, a sweep says why it cannot count.
        let sweep = json!({"action": "sweep"});
        let why = confirmer.handle(&sweep).await.unwrap_err();
        assert!(
            why.to_string()
                .starts_with("no sweep without a drain or return gate"),
            "{why}"
        );
    }

    /// A canary alone gives the function a sweep, which stops a group
    /// whose canary is out past its time, once, and says so.
    #[tokio::test]
    async fn a_sweep_stops_a_group_whose_canary_is_not_back_once() {
        let groups = GroupSlots::parse("workers=3")
            .unwrap()
            .with_setting("FLEETLOCK_CANARY", "workers=30m:1:1h")
            .unwrap();
        let t0 = Timestamp(1_764_480_000_000);
        let at = |m: u64| t0.plus(std::time::Duration::from_secs(m * 60));
        let store = MemoryStore::default();
        let workers = GroupName::parse("workers").unwrap();
        let rules = groups.rules_for(&workers).unwrap();
        store
            .acquire(&workers, &NodeId::parse("canary").unwrap(), rules, at(0))
            .await
            .unwrap();
        let clock = crate::test_support::ManualClock::at(at(0));
        let confirmer = DrainConfirmer::new(store)
            .with_sweep(groups, "api")
            .with_clock(clock.clone());
        let action = json!({"action": "sweep"});
        let sweep = |minutes| {
            clock.set(at(minutes));
            confirmer.handle(&action)
        };
        assert_eq!(sweep(59).await.unwrap()["stopped"], 0);
        let first = sweep(61).await.unwrap();
        assert_eq!(
            (&first["stopped"], &first["waves_overdue"]),
            (&json!(1), &json!(1))
        );
        let slot = json!({"action": "slot", "group": "workers", "id": "canary"});
        let seen = confirmer.handle(&slot).await.unwrap();
        assert!(seen.to_string().contains("canary"), "{seen}");
        assert_eq!(sweep(66).await.unwrap()["stopped"], 0, "once");
    }

    /// The sweep of `drain`'s gates at `minutes`, over a store whose
    /// reservations `workers=15m,*=1h` made: old (0) and young (10) in
    /// workers, one at 0 in db and one at 0 in a group only `*` covers.
    async fn swept(drain: &str, minutes: u64) -> Value {
        let configured = |drain: &str| {
            GroupSlots::parse("workers=2,db=1,*=1")
                .unwrap()
                .with_setting("FLEETLOCK_DRAIN", drain)
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
        assert_eq!(
            at_20,
            json!({"drains_overdue": 1, "returns_overdue": 0, "stopped": 0, "waves_overdue": 0, "groups": 3})
        );
        assert_eq!(swept("workers=15m,*=1h", 60).await["drains_overdue"], 4);
        // A group without a gate counts nothing, whatever it stores.
        assert_eq!(swept("workers=15m", 60).await["drains_overdue"], 2);
    }

    #[tokio::test]
    async fn a_hook_confirms_a_return_and_a_sweep_stops_the_group_of_an_overdue_one_once() {
        struct At(std::sync::Mutex<Timestamp>);
        impl Clock for std::sync::Arc<At> {
            fn now(&self) -> Timestamp {
                *self.0.lock().unwrap()
            }
        }
        let groups = GroupSlots::parse("workers=2")
            .unwrap()
            .with_setting("FLEETLOCK_RETURN", "workers=20m")
            .unwrap();
        let group = GroupName::parse("workers").unwrap();
        let rules = groups.rules_for(&group).unwrap();
        let store = MemoryStore::default();
        let t0 = Timestamp(1_764_480_000_000);
        for id in ["a", "b"] {
            let node = NodeId::parse(id).unwrap();
            store.acquire(&group, &node, rules, t0).await.unwrap();
            store.release(&group, &node, true, t0).await.unwrap();
        }
        let clock = std::sync::Arc::new(At(std::sync::Mutex::new(t0)));
        let confirmer = DrainConfirmer::new(store)
            .with_sweep(groups, "api")
            .with_clock(clock.clone());
        let slot = confirmer
            .handle(&json!({"action": "slot", "group": "workers", "id": "a"}))
            .await
            .unwrap();
        assert_eq!(
            (&slot["state"], &slot["holds"], &slot["returning"]),
            (&json!("returning"), &json!(false), &json!(true))
        );
        let released_at = slot["released_at"].as_str().unwrap().to_owned();
        let returned = |id: &str, at: &str| json!({"action": "returned", "group": "workers", "id": id, "released_at": at});
        let other = confirmer
            .handle(&returned("a", "2025-01-01T00:00:00Z"))
            .await
            .unwrap();
        assert_eq!(
            (&other["outcome"], &other["done"]),
            (&json!("other_return"), &json!(false))
        );
        let done = confirmer
            .handle(&returned("a", &released_at))
            .await
            .unwrap();
        assert_eq!(
            (&done["outcome"], &done["done"]),
            (&json!("returned"), &json!(true))
        );
        let again = confirmer
            .handle(&returned("a", &released_at))
            .await
            .unwrap();
        assert_eq!(again["outcome"], "not_returning");
        // b never comes back: 20 minutes on, the sweep stops the group once.
        *clock.0.lock().unwrap() = t0.plus(std::time::Duration::from_secs(20 * 60));
        let sweep = json!({"action": "sweep"});
        let first = confirmer.handle(&sweep).await.unwrap();
        assert_eq!(
            (&first["returns_overdue"], &first["stopped"]),
            (&json!(1), &json!(1))
        );
        let second = confirmer.handle(&sweep).await.unwrap();
        assert_eq!(
            (&second["returns_overdue"], &second["stopped"]),
            (&json!(1), &json!(0))
        );
        let stored = confirmer.store.groups(Some(&group)).await.unwrap();
        let stop = stored[0].1.pause.stop.clone().expect("stopped");
        assert_eq!((stop.id.as_str(), stop.returning_since), ("b", t0));
        assert!(stored[0].1.holders.holds(&NodeId::parse("b").unwrap()));
    }

    /// docs/operating.md: a holder that never reports steady-state keeps its
    /// slot (which blocks a full group), and no sweep, however late, stops
    /// its group: only a return can fail.
    #[tokio::test]
    async fn a_holder_that_never_reports_steady_state_never_stops_its_group() {
        let groups = GroupSlots::parse("workers=1")
            .unwrap()
            .with_setting("FLEETLOCK_RETURN", "workers=20m")
            .unwrap();
        let group = GroupName::parse("workers").unwrap();
        let rules = groups.rules_for(&group).unwrap();
        let store = MemoryStore::default();
        let t0 = Timestamp(1_764_480_000_000);
        let holder = NodeId::parse("a").unwrap();
        store.acquire(&group, &holder, rules, t0).await.unwrap();
        let week_later = t0.plus(std::time::Duration::from_secs(7 * 24 * 3600));
        let confirmer = DrainConfirmer::new(store)
            .with_sweep(groups, "api")
            .with_clock(crate::test_support::ManualClock::at(week_later));
        let swept = confirmer.handle(&json!({"action": "sweep"})).await.unwrap();
        assert_eq!(
            (&swept["returns_overdue"], &swept["stopped"]),
            (&json!(0), &json!(0)),
            "{swept}"
        );
        let stored = confirmer.store.groups(Some(&group)).await.unwrap();
        assert_eq!(stored[0].1.pause.stop, None);
        assert!(stored[0].1.holders.holds(&holder), "it keeps its slot");
        let other = NodeId::parse("b").unwrap();
        let asked = confirmer.store.acquire(&group, &other, rules, week_later);
        assert_eq!(
            asked.await.unwrap().outcome,
            Acquire::Refused(Refusal::Full),
            "full, not stopped"
        );
    }
}
