//! The decisions a store makes, as one [`Operation`] in and one
//! [`Decision`] out (what [`LockStore::decide`] takes and answers), and the
//! typed calls over them ([`Decisions`]) that the service, the entry points
//! and the commands make. A store implements `decide` once; a new operation
//! is a variant here, an arm in each store, and its typed call.

use std::future::Future;

use super::{Beginning, Changed, Decided, Excluding, LockStore, StoreError, exclusion_refused};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{
    Acquire, ByPerson, Drained, GroupRecord, GroupRules, Release, Returned, StopCause, Stopping,
};
use crate::domain::time::Timestamp;

/// One decision on one group.
#[derive(Clone, Debug)]
pub enum Operation<'a> {
    /// A slot for `id` ([`crate::domain::lock::GroupRecord::decide_acquire`]).
    Acquire {
        id: &'a NodeId,
        rules: GroupRules,
        now: Timestamp,
    },
    /// The slot of `id` given back, or left returning with `returns`.
    Release {
        id: &'a NodeId,
        returns: bool,
        now: Timestamp,
    },
    /// `id` is back in service: its returning slot (the return begun at
    /// `since`, when given) is freed.
    Returned {
        id: &'a NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    },
    /// `id` was drained: its reservation (made at `since`, when given)
    /// becomes its slot.
    Drained {
        id: &'a NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    },
    /// The return or wave slot of `id`, since `since`, is overdue: the
    /// group stops, once per slot.
    StopRollout {
        id: &'a NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    },
    /// A person begins a new rollout of a group with a canary.
    BeginRollout { now: Timestamp },
    /// A person's pause.
    Pause(ByPerson),
    /// A person clears their pause and the server's stop.
    Resume,
    /// A person keeps `id` out of the group's rollout.
    Exclude { id: &'a NodeId, exclusion: ByPerson },
    /// A person lets `id` take slots again.
    Include { id: &'a NodeId },
    /// An alarm in ALARM pauses the group.
    PauseForAlarm { alarm: &'a str },
    /// The alarm left ALARM.
    ClearAlarm { alarm: &'a str },
}

impl Operation<'_> {
    /// The operation's name, for a log line and a refusal.
    pub fn as_str(&self) -> &'static str {
        match self {
            Operation::Acquire { .. } => "acquire",
            Operation::Release { .. } => "release",
            Operation::Returned { .. } => "returned",
            Operation::Drained { .. } => "drained",
            Operation::StopRollout { .. } => "stop_rollout",
            Operation::BeginRollout { .. } => "begin_rollout",
            Operation::Pause(_) => "pause",
            Operation::Resume => "resume",
            Operation::Exclude { .. } => "exclude",
            Operation::Include { .. } => "include",
            Operation::PauseForAlarm { .. } => "pause_for_alarm",
            Operation::ClearAlarm { .. } => "clear_alarm",
        }
    }
}

/// What an operation decided: the variant of its own kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Acquire(Acquire),
    Release(Release),
    Returned(Returned),
    Drained(Drained),
    Stopping(Stopping),
    Beginning(Beginning),
    /// A pause, a resume, an include or an alarm's pause or clearing.
    Changed(Changed),
    Excluding(Excluding),
}

/// Turns a decision into the answer its operation expects; a store that
/// answered another kind is a fault of the store, never a panic.
fn expect<T>(
    decided: Result<Decided<Decision>, StoreError>,
    operation: &'static str,
    pick: impl FnOnce(Decision) -> Result<T, Decision>,
) -> Result<Decided<T>, StoreError> {
    let Decided {
        outcome,
        group,
        write_units,
    } = decided?;
    match pick(outcome) {
        Ok(outcome) => Ok(Decided {
            outcome,
            group,
            write_units,
        }),
        Err(other) => Err(StoreError::Corrupt(format!(
            "the store answered {other:?} to {operation}"
        ))),
    }
}

/// The typed calls over [`LockStore::decide`], one per operation, for
/// every store.
pub trait Decisions: LockStore {
    /// Takes a slot for `id` as [`crate::domain::lock::GroupRecord::decide_acquire`] says: a
    /// node that already holds one keeps it; otherwise only in a group that is
    /// neither paused, nor settling, nor full.
    fn acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Acquire>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Acquire { id, rules, now });
        async move {
            expect(decided.await, "acquire", |d| match d {
                Decision::Acquire(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// Gives back the slot of `id`, if it holds one; a release at `now`
    /// starts the group's settle period. With `returns` (a node's
    /// steady-state in a group with a return gate) the slot counts as
    /// returning instead, as [`crate::domain::lock::GroupRecord::release`] says.
    fn release(
        &self,
        group: &GroupName,
        id: &NodeId,
        returns: bool,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Release>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Release { id, returns, now });
        async move {
            expect(decided.await, "release", |d| match d {
                Decision::Release(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// A hook or a person confirms that `id` is back in service: its
    /// returning slot (the return begun at `since`, when given) is freed,
    /// in one conditional write, as
    /// [`crate::domain::lock::GroupRecord::decide_returned`] says.
    fn returned(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Returned>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Returned { id, since, now });
        async move {
            expect(decided.await, "returned", |d| match d {
                Decision::Returned(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// The return of `id` begun at `since` passed its timeout (`cause`
    /// [`StopCause::Return`]), or, in a canary's wave, `id` granted at
    /// `since` is not back in time ([`StopCause::Wave`]): the group stops,
    /// once per slot (one conditional write), as
    /// [`crate::domain::lock::GroupRecord::stop_rollout`] says.
    fn stop_rollout(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Stopping>, StoreError>> + Send {
        let operation = Operation::StopRollout {
            id,
            since,
            cause,
            now,
        };
        let decided = self.decide(group, operation);
        async move {
            expect(decided.await, "stop_rollout", |d| match d {
                Decision::Stopping(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// A hook or a person confirms that `id` was drained: its reservation
    /// (the one made at `since`, when given) becomes its slot, in one
    /// conditional write, as [`crate::domain::lock::GroupRecord::decide_drained`]
    /// says.
    fn drained(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Drained>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Drained { id, since, now });
        async move {
            expect(decided.await, "drained", |d| match d {
                Decision::Drained(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// A person begins a new rollout of a group with a canary: the
    /// rollout's count is 0 and its start `now` (one write), only on a
    /// stored group, and never over a begin recorded at or after `now`.
    fn begin_rollout(
        &self,
        group: &GroupName,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Beginning>, StoreError>> + Send {
        let decided = self.decide(group, Operation::BeginRollout { now });
        async move {
            expect(decided.await, "begin_rollout", |d| match d {
                Decision::Beginning(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// A person's pause; a group never used gets its item. A group already
    /// paused by a person keeps that pause, which is returned unchanged. It
    /// applies only to the group as this call read it: it never undoes a
    /// resume that landed in between (`Overtaken`).
    fn pause(
        &self,
        group: &GroupName,
        pause: ByPerson,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Pause(pause));
        async move { expect(decided.await, "pause", changed) }
    }

    /// Clears a person's pause and the server's stop (a person looked);
    /// alarms' pauses stay. Like `pause`, it never undoes a pause or a stop
    /// that landed after this call read the group.
    fn resume(
        &self,
        group: &GroupName,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Resume);
        async move { expect(decided.await, "resume", changed) }
    }

    /// Keeps `id` out of the group's rollout: it takes no new slot, a slot it
    /// holds stays its own. Like `pause`, one write on the group as read,
    /// which never undoes an `include` that landed in between; refused at
    /// [`crate::domain::lock::MAX_EXCLUSIONS`].
    fn exclude(
        &self,
        group: &GroupName,
        id: &NodeId,
        exclusion: ByPerson,
    ) -> impl Future<Output = Result<Decided<Excluding>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Exclude { id, exclusion });
        async move {
            expect(decided.await, "exclude", |d| match d {
                Decision::Excluding(outcome) => Ok(outcome),
                other => Err(other),
            })
        }
    }

    /// Lets `id` take slots again; as `exclude`, one write on the group as read.
    fn include(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        let decided = self.decide(group, Operation::Include { id });
        async move { expect(decided.await, "include", changed) }
    }

    /// An alarm in ALARM pauses the group (one write); idempotent.
    fn pause_for_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        let decided = self.decide(group, Operation::PauseForAlarm { alarm });
        async move { expect(decided.await, "pause_for_alarm", changed) }
    }

    /// The alarm left ALARM: its pause is cleared (one write); idempotent.
    fn clear_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        let decided = self.decide(group, Operation::ClearAlarm { alarm });
        async move { expect(decided.await, "clear_alarm", changed) }
    }
}

impl<S: LockStore + ?Sized> Decisions for S {}

fn changed(decision: Decision) -> Result<Changed, Decision> {
    match decision {
        Decision::Changed(outcome) => Ok(outcome),
        other => Err(other),
    }
}

/// The rules' decision of `operation` on a group's `record`, changing it
/// as the decision says: what the embedded store does under its lock, and
/// what DynamoDB's conditional writes are held to (the conformance test).
/// `stored` says whether the group had a record: on a group never stored,
/// the confirmations, the stop and `begin-rollout` change nothing. A
/// group only `*` covers is counted by the store before it is asked.
pub(crate) fn apply(record: &mut GroupRecord, operation: Operation<'_>, stored: bool) -> Decision {
    let changed = |yes: bool| {
        Decision::Changed(if yes {
            Changed::Yes
        } else {
            Changed::AlreadySo
        })
    };
    match operation {
        Operation::Acquire { id, rules, now } => Decision::Acquire(record.acquire(id, rules, now)),
        Operation::Release { .. } | Operation::Returned { .. } | Operation::Drained { .. }
            if !stored =>
        {
            // Like a refused conditional write, on a group never stored.
            Decision::from_nothing_stored(&operation)
        }
        Operation::Release { id, returns, now } => {
            Decision::Release(record.release(id, returns, now))
        }
        Operation::Returned { id, since, now } => {
            Decision::Returned(record.returned(id, since, now))
        }
        Operation::Drained { id, since, now } => Decision::Drained(record.drained(id, since, now)),
        Operation::StopRollout { .. } if !stored => Decision::Stopping(Stopping::NotReturning),
        Operation::StopRollout {
            id,
            since,
            cause,
            now,
        } => Decision::Stopping(record.stop_rollout(id, since, cause, now)),
        Operation::BeginRollout { .. } if !stored => Decision::Beginning(Beginning::NotStored),
        Operation::BeginRollout { now } => Decision::Beginning(match record.begin_rollout(now) {
            true => Beginning::Begun,
            false => Beginning::AlreadyBegun,
        }),
        Operation::Pause(pause) => {
            let was_free = record.pause.person.is_none();
            record.pause.person.get_or_insert(pause);
            changed(was_free)
        }
        Operation::Resume => {
            let person = record.pause.person.take().is_some();
            let stop = record.pause.stop.take().is_some();
            changed(person || stop)
        }
        Operation::Exclude { id, exclusion } => {
            Decision::Excluding(exclusion_refused(record, id).unwrap_or_else(|| {
                record.excluded.insert(id.clone(), exclusion);
                Excluding::Changed(Changed::Yes)
            }))
        }
        Operation::Include { id } => changed(record.excluded.remove(id).is_some()),
        Operation::PauseForAlarm { alarm } => changed(record.pause.alarms.insert(alarm.to_owned())),
        Operation::ClearAlarm { alarm } => changed(record.pause.alarms.remove(alarm)),
    }
}

impl Decision {
    /// What a release or a confirmation decides on a group never stored.
    fn from_nothing_stored(operation: &Operation<'_>) -> Self {
        match operation {
            Operation::Returned { .. } => {
                Decision::Returned(Returned::NotReturning { holds: false })
            }
            Operation::Drained { .. } => Decision::Drained(Drained::NoReservation),
            _ => Decision::Release(Release::NotHeld),
        }
    }
}
