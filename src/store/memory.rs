//! The embedded store: semaphores in this process's memory. For `fleetlock
//! serve` on a laptop and for tests; never under Lambda, where every instance
//! would hold a semaphore of its own. The rules are those of [`crate::domain::lock`],
//! applied under one mutex.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::domain::agreement::{Digests, Recorded};
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{Acquire, Refusal};
use crate::domain::store::{Decided, Forgot, LockStore, StoreError};
use crate::domain::store::{Decision, Operation, apply};

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

impl LockStore for MemoryStore {
    async fn decide(
        &self,
        group: &GroupName,
        operation: Operation<'_>,
    ) -> Result<Decided<Decision>, StoreError> {
        self.with_state(|state| {
            let stored = state.groups.contains_key(group);
            // A group only `*` covers is counted before its first record,
            // as the DynamoDB store counts it.
            if let Operation::Acquire { rules, .. } = &operation
                && let Some(limit) = rules.wildcard_limit
                && !stored
                && !state.wildcard.contains(group)
            {
                if state.wildcard.len() >= limit as usize {
                    let refused =
                        Decision::Acquire(Acquire::Refused(Refusal::TooManyGroups { limit }));
                    return decided(refused, &GroupRecord::default());
                }
                state.wildcard.insert(group.clone());
            }
            on_record(&mut state.groups, group, |record| {
                apply(record, operation, stored)
            })
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
