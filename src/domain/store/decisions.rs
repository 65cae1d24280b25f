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

/// An answer of one kind of operation: the variant of [`Decision`] it is.
trait Answer: Sized {
    fn of(decision: Decision) -> Result<Self, Decision>;
}

macro_rules! answer {
    ($($variant:ident($answer:ty)),* $(,)?) => {$(
        impl Answer for $answer {
            fn of(decision: Decision) -> Result<Self, Decision> {
                match decision {
                    Decision::$variant(answer) => Ok(answer),
                    other => Err(other),
                }
            }
        }
    )*};
}

answer!(
    Acquire(Acquire),
    Release(Release),
    Returned(Returned),
    Drained(Drained),
    Stopping(Stopping),
    Beginning(Beginning),
    Changed(Changed),
    Excluding(Excluding),
);

/// The store's decision of `operation` on `group`, as the answer the
/// operation expects; a store that answered another kind is a fault of the
/// store, never a panic.
async fn answer<S: LockStore + ?Sized, T: Answer>(
    store: &S,
    group: &GroupName,
    operation: Operation<'_>,
) -> Result<Decided<T>, StoreError> {
    let named = operation.as_str();
    let Decided {
        outcome,
        group,
        write_units,
    } = store.decide(group, operation).await?;
    match T::of(outcome) {
        Ok(outcome) => Ok(Decided {
            outcome,
            group,
            write_units,
        }),
        Err(other) => Err(StoreError::Corrupt(format!(
            "the store answered {other:?} to {named}"
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
        answer(self, group, Operation::Acquire { id, rules, now })
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
        answer(self, group, Operation::Release { id, returns, now })
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
        answer(self, group, Operation::Returned { id, since, now })
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
        answer(self, group, operation)
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
        answer(self, group, Operation::Drained { id, since, now })
    }

    /// A person begins a new rollout of a group with a canary: the
    /// rollout's count is 0 and its start `now` (one write), only on a
    /// stored group, and never over a begin recorded at or after `now`.
    fn begin_rollout(
        &self,
        group: &GroupName,
        now: Timestamp,
    ) -> impl Future<Output = Result<Decided<Beginning>, StoreError>> + Send {
        answer(self, group, Operation::BeginRollout { now })
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
        answer(self, group, Operation::Pause(pause))
    }

    /// Clears a person's pause and the server's stop (a person looked);
    /// alarms' pauses stay. Like `pause`, it never undoes a pause or a stop
    /// that landed after this call read the group.
    fn resume(
        &self,
        group: &GroupName,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        answer(self, group, Operation::Resume)
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
        answer(self, group, Operation::Exclude { id, exclusion })
    }

    /// Lets `id` take slots again; as `exclude`, one write on the group as read.
    fn include(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        answer(self, group, Operation::Include { id })
    }

    /// An alarm in ALARM pauses the group (one write); idempotent.
    fn pause_for_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        answer(self, group, Operation::PauseForAlarm { alarm })
    }

    /// The alarm left ALARM: its pause is cleared (one write); idempotent.
    fn clear_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> impl Future<Output = Result<Decided<Changed>, StoreError>> + Send {
        answer(self, group, Operation::ClearAlarm { alarm })
    }
}

impl<S: LockStore + ?Sized> Decisions for S {}

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
        // Like a refused conditional write, nothing on a group never stored.
        Operation::Release { .. } if !stored => Decision::Release(Release::NotHeld),
        Operation::Returned { .. } if !stored => {
            Decision::Returned(Returned::NotReturning { holds: false })
        }
        Operation::Drained { .. } if !stored => Decision::Drained(Drained::NoReservation),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::agreement::{Digests, Recorded};
    use crate::domain::store::Forgot;

    /// A broken store: every decision it makes is a pause's.
    struct AnswersChanged;

    impl LockStore for AnswersChanged {
        async fn decide(
            &self,
            _: &GroupName,
            _: Operation<'_>,
        ) -> Result<Decided<Decision>, StoreError> {
            Ok(Decided {
                outcome: Decision::Changed(Changed::Yes),
                group: GroupRecord::default(),
                write_units: None,
            })
        }
        async fn forget(&self, _: &GroupName) -> Result<Forgot, StoreError> {
            Ok(Forgot::NothingStored)
        }
        async fn groups(
            &self,
            _: Option<&GroupName>,
        ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
            Ok(Vec::new())
        }
        async fn wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
            Ok(Vec::new())
        }
        async fn record_settings(&self, _: &str, _: &Digests) -> Result<Recorded, StoreError> {
            Ok(Recorded::new())
        }
        async fn recorded_settings(&self) -> Result<Recorded, StoreError> {
            Ok(Recorded::new())
        }
        async fn forget_region(&self, _: &str) -> Result<bool, StoreError> {
            Ok(false)
        }
    }

    #[tokio::test]
    async fn a_decision_of_another_kind_is_a_store_fault_never_a_panic() {
        let group = GroupName::parse("workers").unwrap();
        let id = NodeId::parse("n1").unwrap();
        let refused = AnswersChanged
            .acquire(&group, &id, GroupRules::default(), Timestamp(1))
            .await
            .unwrap_err();
        assert_eq!(
            refused,
            StoreError::Corrupt("the store answered Changed(Yes) to acquire".into())
        );
        // Its own kind is answered as it came.
        let paused = AnswersChanged.resume(&group).await.unwrap();
        assert_eq!(paused.outcome, Changed::Yes);
    }
}
