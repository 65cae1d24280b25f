//! A group's holders: who holds a slot, since when, and how many.

use std::collections::BTreeMap;

use crate::domain::input::NodeId;
use crate::domain::outcomes::{Acquire, Refusal, Release};
use crate::domain::time::Timestamp;

/// One group's holders and when each took its slot. Kept sorted by id so that
/// listings are stable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Semaphore {
    holders: BTreeMap<NodeId, Timestamp>,
}

impl Semaphore {
    pub fn from_holders(holders: impl IntoIterator<Item = (NodeId, Timestamp)>) -> Self {
        Self {
            holders: holders.into_iter().collect(),
        }
    }

    /// What a request for a slot gets, without changing anything. `slots` is
    /// the group's count as configured now, so a lowered count blocks new
    /// holders at once and never evicts the ones there.
    pub(crate) fn decide_acquire(&self, id: &NodeId, slots: u32) -> Acquire {
        if self.holders.contains_key(id) {
            Acquire::AlreadyHeld
        } else if self.holders.len() < slots as usize {
            Acquire::Granted
        } else {
            Acquire::Refused(Refusal::Full)
        }
    }

    pub(crate) fn acquire(&mut self, id: &NodeId, slots: u32, now: Timestamp) -> Acquire {
        let outcome = self.decide_acquire(id, slots);
        if outcome == Acquire::Granted {
            self.holders.insert(id.clone(), now);
        }
        outcome
    }

    /// `to` takes the slot of `from`, at `now`: one holder for another.
    pub(super) fn hand_over(&mut self, from: &NodeId, to: &NodeId, now: Timestamp) {
        if self.holders.remove(from).is_some() {
            self.holders.insert(to.clone(), now);
        }
    }

    /// `id`'s slot counts as taken at `now` (a reservation granted).
    pub(super) fn set_time(&mut self, id: &NodeId, now: Timestamp) {
        if let Some(at) = self.holders.get_mut(id) {
            *at = now;
        }
    }

    pub(crate) fn release(&mut self, id: &NodeId) -> Release {
        match self.holders.remove(id) {
            Some(_) => Release::Released,
            None => Release::NotHeld,
        }
    }

    pub fn holds(&self, id: &NodeId) -> bool {
        self.holders.contains_key(id)
    }

    /// When `id` took its slot, if it holds one.
    pub fn held_since(&self, id: &NodeId) -> Option<Timestamp> {
        self.holders.get(id).copied()
    }

    pub fn len(&self) -> usize {
        self.holders.len()
    }

    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }

    pub fn holders(&self) -> impl Iterator<Item = (&NodeId, Timestamp)> {
        self.holders.iter().map(|(id, at)| (id, *at))
    }

    /// The holder that has kept its slot longest: after a failed update it is
    /// the node that blocks its group.
    pub(crate) fn oldest(&self) -> Option<(&NodeId, Timestamp)> {
        self.holders().min_by_key(|(_, at)| *at)
    }
}
