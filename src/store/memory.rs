//! The embedded store: semaphores in this process's memory. For `fleetlock
//! serve` on a laptop and for tests; never under Lambda, where every instance
//! would hold a semaphore of its own. The rules are those of [`crate::lock`],
//! applied under one mutex.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::{Changed, Decided, GroupRecord, LockStore, StoreError};
use crate::input::{GroupName, NodeId};
use crate::lock::{Acquire, GroupRules, PersonPause, Release, Timestamp};

#[derive(Default)]
pub struct MemoryStore {
    groups: Mutex<BTreeMap<GroupName, GroupRecord>>,
}

impl MemoryStore {
    /// Runs `f` on every group under the one lock. A poisoned lock means a
    /// panic mid-update: refuse rather than guess.
    fn with_groups<T>(
        &self,
        f: impl FnOnce(&mut BTreeMap<GroupName, GroupRecord>) -> T,
    ) -> Result<T, StoreError> {
        let mut groups = self
            .groups
            .lock()
            .map_err(|_| StoreError::Corrupt("memory store lock poisoned".into()))?;
        Ok(f(&mut groups))
    }

    /// Applies `change` to the group (created if missing) and returns its
    /// outcome with the group as it stands after.
    fn change<T>(
        &self,
        group: &GroupName,
        change: impl FnOnce(&mut GroupRecord) -> T,
    ) -> Result<Decided<T>, StoreError> {
        self.with_groups(|groups| {
            let record = groups.entry(group.clone()).or_default();
            decided(change(record), record)
        })
    }
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

impl LockStore for MemoryStore {
    async fn acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        self.change(group, |record| record.acquire(id, rules, now))
    }

    async fn release(
        &self,
        group: &GroupName,
        id: &NodeId,
        now: Timestamp,
    ) -> Result<Decided<Release>, StoreError> {
        // Like a refused conditional write, a release of nothing stores nothing.
        self.with_groups(|groups| match groups.get_mut(group) {
            Some(record) => decided(record.release(id, now), record),
            None => decided(Release::NotHeld, &GroupRecord::default()),
        })
    }

    async fn pause(
        &self,
        group: &GroupName,
        pause: PersonPause,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            let was_free = record.pause.person.is_none();
            record.pause.person.get_or_insert(pause);
            changed(was_free)
        })
    }

    async fn resume(&self, group: &GroupName) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            changed(record.pause.person.take().is_some())
        })
    }

    async fn pause_for_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| {
            changed(record.pause.alarms.insert(alarm.to_owned()))
        })
    }

    async fn clear_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change(group, |record| changed(record.pause.alarms.remove(alarm)))
    }

    async fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
        self.with_groups(|groups| {
            groups
                .iter()
                .filter(|(name, _)| only.is_none_or(|only| *name == only))
                .map(|(name, record)| (name.clone(), record.clone()))
                .collect()
        })
    }
}
