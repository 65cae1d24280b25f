//! The rules of the reboot lock, with no HTTP and no AWS in sight.
//!
//! A group is a counting semaphore: at most `slots` nodes hold it at once. The
//! lock is recursive (a holder asking again keeps its one slot) and release is
//! idempotent (a node that holds nothing may release, and nothing changes),
//! because Zincati repeats both calls until it gets a 2xx.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::input::NodeId;

/// Milliseconds since the Unix epoch: when a holder took its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub fn now() -> Self {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Self(u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX))
    }

    /// How long before `now` this was; zero if the clocks disagree.
    pub fn age_at(self, now: Timestamp) -> Duration {
        Duration::from_millis(now.0.saturating_sub(self.0))
    }
}

/// The answer to a request for a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The node took a free slot.
    Granted,
    /// The node already held a slot; it keeps that one.
    AlreadyHeld,
    /// Every slot is taken by other nodes.
    Full,
}

/// The answer to a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Released,
    /// The node held nothing; that is fine and nothing changed.
    NotHeld,
}

/// One group's holders and when each took its slot. Kept sorted by id so that
/// listings are stable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    pub fn decide_acquire(&self, id: &NodeId, slots: u32) -> Acquire {
        if self.holders.contains_key(id) {
            Acquire::AlreadyHeld
        } else if self.holders.len() < slots as usize {
            Acquire::Granted
        } else {
            Acquire::Full
        }
    }

    pub fn acquire(&mut self, id: &NodeId, slots: u32, now: Timestamp) -> Acquire {
        let outcome = self.decide_acquire(id, slots);
        if outcome == Acquire::Granted {
            self.holders.insert(id.clone(), now);
        }
        outcome
    }

    pub fn release(&mut self, id: &NodeId) -> Release {
        match self.holders.remove(id) {
            Some(_) => Release::Released,
            None => Release::NotHeld,
        }
    }

    pub fn holds(&self, id: &NodeId) -> bool {
        self.holders.contains_key(id)
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
    pub fn oldest(&self) -> Option<(&NodeId, Timestamp)> {
        self.holders().min_by_key(|(_, at)| *at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::parse(s).unwrap()
    }

    #[test]
    fn grants_up_to_slots_then_refuses() {
        let mut sem = Semaphore::default();
        assert_eq!(sem.acquire(&id("a"), 2, Timestamp(1)), Acquire::Granted);
        assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
        assert_eq!(sem.acquire(&id("c"), 2, Timestamp(3)), Acquire::Full);
        assert_eq!(sem.len(), 2);
    }

    #[test]
    fn holder_asking_again_keeps_one_slot_and_its_first_time() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(10));
        assert_eq!(
            sem.acquire(&id("a"), 1, Timestamp(20)),
            Acquire::AlreadyHeld
        );
        assert_eq!(sem.len(), 1);
        assert_eq!(sem.oldest(), Some((&id("a"), Timestamp(10))));
    }

    #[test]
    fn release_by_non_holder_changes_nothing() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(1));
        let before = sem.clone();
        assert_eq!(sem.release(&id("b")), Release::NotHeld);
        assert_eq!(sem, before);
        assert_eq!(sem.release(&id("a")), Release::Released);
        assert_eq!(sem.release(&id("a")), Release::NotHeld);
        assert!(sem.is_empty());
    }

    #[test]
    fn lowered_count_blocks_new_holders_but_evicts_nobody() {
        let mut sem = Semaphore::default();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(
                sem.acquire(&id(name), 3, Timestamp(i as u64)),
                Acquire::Granted
            );
        }
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Full);
        assert_eq!(sem.acquire(&id("b"), 1, Timestamp(9)), Acquire::AlreadyHeld);
        assert_eq!(sem.len(), 3);
        sem.release(&id("a"));
        sem.release(&id("b"));
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Full);
        sem.release(&id("c"));
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Granted);
    }

    #[test]
    fn raised_count_applies_at_once() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(1));
        assert_eq!(sem.acquire(&id("b"), 1, Timestamp(2)), Acquire::Full);
        assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
    }

    #[test]
    fn zero_slots_freezes_a_group_but_a_holder_still_hears_yes() {
        let mut sem = Semaphore::default();
        assert_eq!(sem.acquire(&id("a"), 0, Timestamp(1)), Acquire::Full);
        sem.acquire(&id("b"), 1, Timestamp(1));
        assert_eq!(sem.acquire(&id("b"), 0, Timestamp(2)), Acquire::AlreadyHeld);
    }

    #[test]
    fn oldest_is_the_earliest_taker_not_the_smallest_id() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("z"), 3, Timestamp(5));
        sem.acquire(&id("a"), 3, Timestamp(7));
        assert_eq!(sem.oldest(), Some((&id("z"), Timestamp(5))));
        assert_eq!(
            Timestamp(5).age_at(Timestamp(7_005)),
            Duration::from_secs(7)
        );
        assert_eq!(Timestamp(9).age_at(Timestamp(1)), Duration::ZERO);
    }
}
