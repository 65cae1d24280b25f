//! Where semaphores live. One narrow trait; each backend is an adapter that
//! applies the rules of [`crate::lock`] atomically.

use std::fmt;
use std::future::Future;

use crate::error::Error;
use crate::input::{GroupName, NodeId};
use crate::lock::{Acquire, Release, Semaphore, Timestamp};

pub mod dynamodb;
pub mod memory;

/// A group as stored: its holders, and the slot count applied at its last grant
/// (for people reading `fleetlock status`; decisions use the configured count).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupRecord {
    pub holders: Semaphore,
    pub slots: Option<u32>,
}

/// An outcome and the group as it stands right after it was decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided<T> {
    pub outcome: T,
    pub group: GroupRecord,
    /// Write units the store reported for this decision (DynamoDB, on a write
    /// that went through); `None` where it reports none.
    pub write_units: Option<f64>,
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

/// Each call is one atomic decision: it is durable before the call returns.
pub trait LockStore: Send + Sync + 'static {
    /// Takes a slot for `id` if the group has fewer than `slots` holders; a
    /// node that already holds one keeps it.
    fn acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        slots: u32,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Acquire>, StoreError>> + Send;

    /// Gives back the slot of `id`, if it holds one.
    fn release(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> impl Future<Output = Result<Decided<Release>, StoreError>> + Send;

    /// Every stored group (or just `only`), sorted by name, read consistently.
    fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> impl Future<Output = Result<Vec<(GroupName, GroupRecord)>, StoreError>> + Send;
}
