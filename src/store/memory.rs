//! The embedded store: semaphores in this process's memory. For `fleetlock
//! serve` on a laptop and for tests; never under Lambda, where every instance
//! would hold a semaphore of its own.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::{Decided, GroupRecord, LockStore, StoreError};
use crate::input::{GroupName, NodeId};
use crate::lock::{Acquire, Release, Timestamp};

#[derive(Default)]
pub struct MemoryStore {
    groups: Mutex<BTreeMap<GroupName, GroupRecord>>,
}

impl MemoryStore {
    fn with_groups<T>(
        &self,
        f: impl FnOnce(&mut BTreeMap<GroupName, GroupRecord>) -> T,
    ) -> Result<T, StoreError> {
        // A poisoned lock means a panic mid-update: refuse rather than guess.
        let mut groups = self
            .groups
            .lock()
            .map_err(|_| StoreError::Corrupt("memory store lock poisoned".into()))?;
        Ok(f(&mut groups))
    }
}

impl LockStore for MemoryStore {
    async fn acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        slots: u32,
        now: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        self.with_groups(|groups| {
            let record = groups.entry(group.clone()).or_default();
            let outcome = record.holders.acquire(id, slots, now);
            if outcome == Acquire::Granted {
                record.slots = Some(slots);
            }
            Decided {
                outcome,
                group: record.clone(),
                write_units: None,
            }
        })
    }

    async fn release(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> Result<Decided<Release>, StoreError> {
        self.with_groups(|groups| match groups.get_mut(group) {
            Some(record) => Decided {
                outcome: record.holders.release(id),
                group: record.clone(),
                write_units: None,
            },
            None => Decided {
                outcome: Release::NotHeld,
                group: GroupRecord::default(),
                write_units: None,
            },
        })
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
