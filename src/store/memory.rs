//! The embedded store: semaphores in this process's memory. For `fleetlock
//! serve` on a laptop and for tests; never under Lambda, where every instance
//! would hold a semaphore of its own. The rules are those of [`crate::domain::lock`],
//! applied under one mutex.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::domain::agreement::{Digests, Recorded};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{
    Acquire, ByPerson, Drained, GroupRules, Release, Returned, StopCause, Stopping,
};
use crate::domain::store::{
    Beginning, Changed, Decided, Excluding, Forgot, LockStore, StoreError, exclusion_refused,
};
use crate::domain::store::{Decision, Operation};
use crate::domain::time::Timestamp;

#[derive(Default)]
pub struct MemoryStore {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    groups: BTreeMap<GroupName, GroupRecord>,
    /// Groups only `*` covers that were given a record, as the DynamoDB
    /// store counts them.
    wildcard: BTreeSet<GroupName>,
    /// Each region's recorded settings.
    settings: Recorded,
    /// Reads of the regions' records fail, as a role without `GetItem`'s.
    #[cfg(test)]
    refuse_settings_reads: bool,
}

impl MemoryStore {
    /// From now on (or no longer) every read of the regions' records fails.
    #[cfg(test)]
    pub(crate) fn refuse_settings_reads(&self, refuse: bool) {
        self.state.lock().unwrap().refuse_settings_reads = refuse;
    }

    /// The group's record as stored (empty when it has none): what the model
    /// check reads after each step, without going through async calls.
    #[cfg(any(test, feature = "test-support"))]
    pub fn record(&self, group: &GroupName) -> GroupRecord {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.groups.get(group).cloned().unwrap_or_default()
    }

    /// Replaces the group's record (an empty one removes it): the model check
    /// puts a state it explores back before each step.
    #[cfg(any(test, feature = "test-support"))]
    pub fn put_record(&self, group: &GroupName, record: GroupRecord) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if record == GroupRecord::default() {
            state.groups.remove(group);
        } else {
            state.groups.insert(group.clone(), record);
        }
    }

    /// Runs `f` on every group under the one lock. A poisoned lock means a
    /// panic mid-update: refuse rather than guess.
    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> Result<T, StoreError> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| StoreError::Corrupt("memory store lock poisoned".into()))?;
        Ok(f(&mut state))
    }

    /// Applies `change` to the group (created if missing) and returns its
    /// outcome with the group as it stands after.
    fn change<T>(
        &self,
        group: &GroupName,
        change: impl FnOnce(&mut GroupRecord) -> T,
    ) -> Result<Decided<T>, StoreError> {
        self.with_state(|state| on_record(&mut state.groups, group, change))
    }
}

/// `change` applied to the record of `group`. A change that leaves a group
/// never stored empty (a refusal, or nothing to change) stores nothing, as
/// DynamoDB's refused conditional write makes no item.
fn on_record<T>(
    groups: &mut BTreeMap<GroupName, GroupRecord>,
    group: &GroupName,
    change: impl FnOnce(&mut GroupRecord) -> T,
) -> Decided<T> {
    let stored = groups.contains_key(group);
    let record = groups.entry(group.clone()).or_default();
    let decided = decided(change(record), record);
    if !stored && decided.group == GroupRecord::default() {
        groups.remove(group);
    }
    decided
}

fn decided<T>(outcome: T, group: &GroupRecord) -> Decided<T> {
    Decided {
        outcome,
        group: group.clone(),
        write_units: None,
    }
}

fn changed(yes: bool) -> Changed {
    if yes {
        Changed::Yes
    } else {
        Changed::AlreadySo
    }
}

// Each decision the store makes, one per operation: what `decide` sends
// each `Operation` to.
impl MemoryStore {
    async fn decide_acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        self.with_state(|state| {
            if let Some(limit) = rules.wildcard_limit
                && !state.groups.contains_key(group)
                && !state.wildcard.contains(group)
            {
                if state.wildcard.len() >= limit as usize {
                    return decided(Acquire::TooManyGroups { limit }, &GroupRecord::default());
                }
                state.wildcard.insert(group.clone());
            }
            on_record(&mut state.groups, group, |record| {
                record.acquire(id, rules, now)
            })
        })
    }

    async fn decide_release(
        &self,
        group: &GroupName,
        id: &NodeId,
        returns: bool,
        now: Timestamp,
    ) -> Result<Decided<Release>, StoreError> {
        // Like a refused conditional write, a release of nothing stores nothing.
        self.with_state(|state| match state.groups.get_mut(group) {
            Some(record) => decided(record.release(id, returns, now), record),
            None => decided(Release::NotHeld, &GroupRecord::default()),
        })
    }

    async fn decide_returned(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Decided<Returned>, StoreError> {
        self.with_state(|state| match state.groups.get_mut(group) {
            Some(record) => decided(record.returned(id, since, now), record),
            None => decided(
                Returned::NotReturning { holds: false },
                &GroupRecord::default(),
            ),
        })
    }

    async fn decide_stop_rollout(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    ) -> Result<Decided<Stopping>, StoreError> {
        self.with_state(|state| match state.groups.get_mut(group) {
            Some(record) => decided(record.stop_rollout(id, since, cause, now), record),
            None => decided(Stopping::NotReturning, &GroupRecord::default()),
        })
    }

    async fn decide_drained(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Decided<Drained>, StoreError> {
        self.with_state(|state| match state.groups.get_mut(group) {
            Some(record) => decided(record.drained(id, since, now), record),
            None => decided(Drained::NoReservation, &GroupRecord::default()),
        })
    }

    async fn decide_pause(
        &self,
        group: &GroupName,
        pause: ByPerson,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            let was_free = record.pause.person.is_none();
            record.pause.person.get_or_insert(pause);
            changed(was_free)
        })
    }

    async fn decide_begin_rollout(
        &self,
        group: &GroupName,
        now: Timestamp,
    ) -> Result<Decided<Beginning>, StoreError> {
        self.with_state(|state| match state.groups.get_mut(group) {
            Some(record) => {
                let outcome = match record.begin_rollout(now) {
                    true => Beginning::Begun,
                    false => Beginning::AlreadyBegun,
                };
                decided(outcome, record)
            }
            None => decided(Beginning::NotStored, &GroupRecord::default()),
        })
    }

    async fn decide_resume(&self, group: &GroupName) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            let person = record.pause.person.take().is_some();
            let stop = record.pause.stop.take().is_some();
            changed(person || stop)
        })
    }

    async fn decide_exclude(
        &self,
        group: &GroupName,
        id: &NodeId,
        exclusion: ByPerson,
    ) -> Result<Decided<Excluding>, StoreError> {
        self.change(group, |record| {
            exclusion_refused(record, id).unwrap_or_else(|| {
                record.excluded.insert(id.clone(), exclusion);
                Excluding::Changed(Changed::Yes)
            })
        })
    }

    async fn decide_include(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            changed(record.excluded.remove(id).is_some())
        })
    }

    async fn decide_pause_for_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            changed(record.pause.alarms.insert(alarm.to_owned()))
        })
    }

    async fn decide_clear_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| changed(record.pause.alarms.remove(alarm)))
    }
}

impl LockStore for MemoryStore {
    async fn decide(
        &self,
        group: &GroupName,
        operation: Operation<'_>,
    ) -> Result<Decided<Decision>, StoreError> {
        Ok(match operation {
            Operation::Acquire { id, rules, now } => self
                .decide_acquire(group, id, rules, now)
                .await?
                .map(Decision::Acquire),
            Operation::Release { id, returns, now } => self
                .decide_release(group, id, returns, now)
                .await?
                .map(Decision::Release),
            Operation::Returned { id, since, now } => self
                .decide_returned(group, id, since, now)
                .await?
                .map(Decision::Returned),
            Operation::StopRollout {
                id,
                since,
                cause,
                now,
            } => self
                .decide_stop_rollout(group, id, since, cause, now)
                .await?
                .map(Decision::Stopping),
            Operation::Drained { id, since, now } => self
                .decide_drained(group, id, since, now)
                .await?
                .map(Decision::Drained),
            Operation::BeginRollout { now } => self
                .decide_begin_rollout(group, now)
                .await?
                .map(Decision::Beginning),
            Operation::Pause(pause) => self
                .decide_pause(group, pause)
                .await?
                .map(Decision::Changed),
            Operation::Resume => self.decide_resume(group).await?.map(Decision::Changed),
            Operation::Exclude { id, exclusion } => self
                .decide_exclude(group, id, exclusion)
                .await?
                .map(Decision::Excluding),
            Operation::Include { id } => {
                self.decide_include(group, id).await?.map(Decision::Changed)
            }
            Operation::PauseForAlarm { alarm } => self
                .decide_pause_for_alarm(group, alarm)
                .await?
                .map(Decision::Changed),
            Operation::ClearAlarm { alarm } => self
                .decide_clear_alarm(group, alarm)
                .await?
                .map(Decision::Changed),
        })
    }

    async fn forget(&self, group: &GroupName) -> Result<Forgot, StoreError> {
        self.with_state(|state| {
            if let Some(record) = state.groups.get(group)
                && (!record.holders.is_empty()
                    || record.pause.is_paused()
                    || !record.excluded.is_empty())
            {
                return Forgot::Kept(Box::new(record.clone()));
            }
            let counted = state.wildcard.remove(group);
            match (state.groups.remove(group), counted) {
                (Some(_), counted) => Forgot::Removed { counted },
                (None, true) => Forgot::Uncounted,
                (None, false) => Forgot::NothingStored,
            }
        })
    }

    async fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
        self.with_state(|state| {
            state
                .groups
                .iter()
                .filter(|(name, _)| only.is_none_or(|only| *name == only))
                .map(|(name, record)| (name.clone(), record.clone()))
                .collect()
        })
    }

    async fn wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
        self.with_state(|state| state.wildcard.iter().cloned().collect())
    }

    async fn record_settings(
        &self,
        region: &str,
        digests: &Digests,
    ) -> Result<Recorded, StoreError> {
        self.with_state(|state| {
            state.settings.insert(region.to_owned(), digests.clone());
            state.settings.clone()
        })
    }

    async fn recorded_settings(&self) -> Result<Recorded, StoreError> {
        #[cfg(test)]
        if self.with_state(|state| state.refuse_settings_reads)? {
            return Err(StoreError::Unavailable("AccessDeniedException".into()));
        }
        self.with_state(|state| state.settings.clone())
    }

    async fn forget_region(&self, region: &str) -> Result<bool, StoreError> {
        self.with_state(|state| state.settings.remove(region).is_some())
    }
}
