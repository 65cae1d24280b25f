//! Where semaphores live. One narrow trait; each backend is an adapter that
//! applies the rules of [`crate::domain::lock`] atomically.

use std::fmt;
use std::future::Future;

use crate::domain::agreement::{Digests, Recorded};
use crate::domain::error::Error;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;

/// An outcome and the group as it stands right after it was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided<T> {
    pub outcome: T,
    pub group: GroupRecord,
    /// Write units the store reported for this decision (DynamoDB asked to
    /// report them, on a write that went through); `None` otherwise.
    pub write_units: Option<f64>,
}

/// Whether a pause or resume changed anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Changed {
    Yes,
    AlreadySo,
    /// Refused, nothing changed: between this call's read of the group and
    /// its write, another person's pause or resume changed it, and this
    /// write, landing after that one, would have undone it.
    Overtaken,
}

/// What an exclusion did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Excluding {
    Changed(Changed),
    /// Refused, nothing changed: the group has as many exclusions as it may
    /// ([`crate::domain::lock::MAX_EXCLUSIONS`]).
    AtLimit,
}

/// Why `exclude` of `id` stops before it writes, if it does: the node is
/// excluded already, or the group excludes as many nodes as it may. Both
/// stores decide it from the group as they read it.
pub(crate) fn exclusion_refused(group: &GroupRecord, id: &NodeId) -> Option<Excluding> {
    if group.excluded.contains_key(id) {
        Some(Excluding::Changed(Changed::AlreadySo))
    } else if group.excluded.len() >= crate::domain::lock::MAX_EXCLUSIONS {
        Some(Excluding::AtLimit)
    } else {
        None
    }
}

impl<T> Decided<T> {
    /// The same decision with its outcome mapped.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Decided<U> {
        Decided {
            outcome: f(self.outcome),
            group: self.group,
            write_units: self.write_units,
        }
    }
}

/// What [`Decisions::begin_rollout`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Beginning {
    /// The group's rollout begins again: its count is 0, so its next grant
    /// is a canary, once no node is out and the bake is over.
    Begun,
    /// A rollout begun at or after this time is recorded: nothing changed
    /// (a retry of this write that landed late, or a later begin).
    AlreadyBegun,
    /// The group has no item: no node took a slot yet, and its first grant
    /// begins a rollout anyway. Nothing stored.
    NotStored,
}

/// What [`LockStore::forget`] did.
#[derive(Clone, Debug, PartialEq)]
pub enum Forgot {
    /// The group's item is gone, and the group is no longer counted among
    /// those only `*` covers (`counted`: whether it was).
    Removed { counted: bool },
    /// The group had no item but was counted: it is no longer.
    Uncounted,
    /// No item, not counted: nothing to forget.
    NothingStored,
    /// Refused, nothing changed: the group holds a slot, or a person or an
    /// alarm paused it. The group as it stands.
    Kept(Box<GroupRecord>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The store could not be reached or refused the request; nothing was
    /// decided. The text is for logs only.
    Unavailable(String),
    /// Stored data contradicts the lock's rules; nothing was decided.
    Corrupt(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unavailable(why) => write!(f, "lock store unavailable: {why}"),
            StoreError::Corrupt(why) => write!(f, "lock store holds inconsistent data: {why}"),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<&StoreError> for Error {
    fn from(err: &StoreError) -> Self {
        match err {
            StoreError::Unavailable(_) => Error::StoreUnavailable,
            StoreError::Corrupt(_) => Error::Internal,
        }
    }
}

/// What a store is asked: one decision on one group (an [`Operation`],
/// made in one conditional write), and the reads and upkeep around them.
/// Each call is durable before it returns. The typed calls every caller
/// makes (`acquire`, `pause`, ...) are [`Decisions`], over [`Self::decide`].
pub trait LockStore: Send + Sync + 'static {
    /// Decides `operation` on `group`, as the rules of
    /// [`crate::domain::lock::GroupRecord`] say, in one conditional write
    /// (a take-over past a lease, a grant on a drain timeout, and a release
    /// landing after a later one, take a second). The decision is the
    /// operation's own variant of [`Decision`].
    fn decide(
        &self,
        group: &GroupName,
        operation: Operation<'_>,
    ) -> impl Future<Output = Result<Decided<Decision>, StoreError>> + Send;

    /// Removes a group's item, and its place among the groups only `*`
    /// covers, unless it holds a slot, is paused or excludes a node (one
    /// conditional write each).
    fn forget(&self, group: &GroupName) -> impl Future<Output = Result<Forgot, StoreError>> + Send;

    /// Every stored group (or just `only`), sorted by name, read consistently.
    fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> impl Future<Output = Result<Vec<(GroupName, GroupRecord)>, StoreError>> + Send;

    /// The groups only `*` covers that are counted toward
    /// `FLEETLOCK_MAX_WILDCARD_GROUPS`, sorted.
    fn wildcard_groups(&self) -> impl Future<Output = Result<Vec<GroupName>, StoreError>> + Send;

    /// Records the digests of the settings `region` serves (replacing its
    /// earlier record) and answers every region's record as it stands after
    /// the write: one write, at a function's start.
    fn record_settings(
        &self,
        region: &str,
        digests: &Digests,
    ) -> impl Future<Output = Result<Recorded, StoreError>> + Send;

    /// Every region's recorded settings, read consistently.
    fn recorded_settings(&self) -> impl Future<Output = Result<Recorded, StoreError>> + Send;

    /// Removes `region`'s record (a region taken out of service); false
    /// when there was none. A region still running records again at its
    /// next refresh.
    fn forget_region(&self, region: &str) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

mod decisions;

pub(crate) use decisions::apply;
pub use decisions::{Decision, Decisions, Operation};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::input::PauseReason;
    use crate::domain::lock::{ByPerson, MAX_EXCLUSIONS};
    use crate::domain::time::Timestamp;

    fn excluding(count: usize) -> GroupRecord {
        let mut group = GroupRecord::default();
        for n in 0..count {
            group.excluded.insert(
                NodeId::parse(&format!("n{n}")).unwrap(),
                ByPerson {
                    reason: PauseReason::parse("disk").unwrap(),
                    since: Timestamp(1),
                    by: "ana".into(),
                },
            );
        }
        group
    }

    #[test]
    fn an_exclusion_stops_at_the_cap_and_never_before() {
        let new = NodeId::parse("new").unwrap();
        assert_eq!(
            exclusion_refused(&excluding(MAX_EXCLUSIONS - 1), &new),
            None
        );
        assert_eq!(
            exclusion_refused(&excluding(MAX_EXCLUSIONS), &new),
            Some(Excluding::AtLimit)
        );
        let at_cap = excluding(MAX_EXCLUSIONS);
        assert_eq!(
            exclusion_refused(&at_cap, &NodeId::parse("n0").unwrap()),
            Some(Excluding::Changed(Changed::AlreadySo)),
            "an excluded node at the cap is excluded already, not refused"
        );
    }
}
