//! The `LockStore` implementation: every decision one conditional write.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::codec::record_of;
use super::writes::{Written, decided, granted};
use super::{DynamoStore, KEY_ATTRIBUTE, unavailable, write_units};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{
    Acquire, Drained, GroupRules, Refusal, Release, Returned, RolloutStop, StopCause, Stopping,
};
use crate::domain::store::{Decided, Forgot, LockStore, StoreError};
use crate::domain::store::{Decision, Operation};
use crate::domain::time::Timestamp;

impl DynamoStore {
    /// Sends one conditional `UpdateItem` on the group's item, asking for the
    /// item after the write, or as it was when the condition refused it.
    pub(super) async fn update(
        &self,
        group: &GroupName,
        request: UpdateItemFluentBuilder,
    ) -> Result<Written, StoreError> {
        let result = request
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(group.to_string()))
            .return_values(ReturnValue::AllNew)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .return_consumed_capacity(self.consumed_capacity.clone())
            .send()
            .await;
        match result {
            Ok(output) => Ok(match record_of(output.attributes()) {
                Ok(group) => Written::Applied(group, write_units(output.consumed_capacity())),
                Err(err) => Written::AppliedUnreadable(err),
            }),
            Err(SdkError::ServiceError(err)) => match err.into_err() {
                UpdateItemError::ConditionalCheckFailedException(refused) => Ok(Written::Refused(
                    refused.item().map(GroupRecord::try_from).transpose()?,
                )),
                other => Err(unavailable(other)),
            },
            Err(err) => Err(unavailable(err)),
        }
    }
}

// Each decision the store makes, one per operation: what `decide` sends
// each `Operation` to.
impl DynamoStore {
    async fn decide_acquire(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        // A group only `*` covers is written to only once it has an item, or
        // once it is counted: see the module's item design.
        let mut needs_item = rules.wildcard_limit;
        loop {
            let written = self
                .update(
                    group,
                    self.acquire_request(id, rules, now, needs_item.is_some(), false),
                )
                .await?;
            let current = match written {
                Written::Applied(group, write_units) => {
                    return Ok(Decided {
                        outcome: granted(rules),
                        group,
                        write_units,
                    });
                }
                Written::AppliedUnreadable(err) => {
                    // The answer is a 500, so the node will not reboot: the
                    // slot it was just written must not stay held.
                    self.take_back(group, id, now, None).await;
                    return Err(err);
                }
                Written::Refused(current) => current,
            };
            if let (None, Some(limit)) = (&current, needs_item.take()) {
                // A new group: counted first, unless it would be refused anyway.
                let outcome = GroupRecord::default().decide_acquire(id, rules, now);
                if !matches!(outcome, Acquire::Granted | Acquire::Reserves) {
                    return Ok(decided(outcome, GroupRecord::default()));
                }
                if self.wildcard_list_known_full(now)
                    || !self.count_wildcard_group(group, limit, now).await?
                {
                    return Ok(decided(
                        Acquire::Refused(Refusal::TooManyGroups { limit }),
                        GroupRecord::default(),
                    ));
                }
                continue;
            }
            // Refused: already held (a repeat, or a retry of a write whose
            // answer was lost), paused, settling or full. The pure rules tell
            // which from the item the condition saw.
            let current = current.unwrap_or_default();
            return match current.decide_acquire(id, rules, now) {
                Acquire::Granted | Acquire::Reserves
                    if rules
                        .canary
                        .is_some_and(|canary| !current.rollout_runs(canary, now)) =>
                {
                    self.begin_rollout(group, id, rules, now).await
                }
                Acquire::Granted | Acquire::Reserves => Err(StoreError::Corrupt(
                    "the conditional write was refused although a slot is free".into(),
                )),
                Acquire::TakesExpired { holder, since } => {
                    self.take_expired(group, id, rules, now, (&holder, since), &current)
                        .await
                }
                Acquire::AlreadyHeld if current.renews(id, rules) => {
                    self.renew(group, id, rules, now, current).await
                }
                Acquire::DrainTimedOut { since } => {
                    self.grant_on_timeout(group, id, rules, now, since).await
                }
                outcome => Ok(decided(outcome, current)),
            };
        }
    }

    async fn decide_release(
        &self,
        group: &GroupName,
        id: &NodeId,
        returns: bool,
        now: Timestamp,
    ) -> Result<Decided<Release>, StoreError> {
        if returns {
            // The slot stays counted, now returning: one write.
            let written = self.update(group, self.returning_request(id, now)).await?;
            let Written::Refused(current) = written else {
                return written.decided(Release::Returning, Release::NotHeld);
            };
            let current = current.unwrap_or_default();
            return match current.clone().release(id, true, now) {
                Release::Returning => Err(StoreError::Corrupt(
                    "the return was refused although the node holds its slot".into(),
                )),
                outcome => Ok(decided(outcome, current)),
            };
        }
        // Frees the slot only if it was granted before this request arrived,
        // and starts the settle period again only if no later release did.
        let written = self
            .update(group, self.release_request(id, now, true))
            .await?;
        let Written::Refused(current) = written else {
            return written.decided(Release::Released, Release::NotHeld);
        };
        let current = current.unwrap_or_default();
        if current.clone().release(id, false, now) == Release::NotHeld {
            // Not a holder (a repeat, a retry whose first attempt landed,
            // or a newer grant of the same node): idempotent, nothing changed.
            return Ok(decided(Release::NotHeld, current));
        }
        // A holder, but a later release is recorded: this one landed late.
        // Free the slot and keep the later time (a second request, only
        // in this case).
        let written = self
            .update(group, self.release_request(id, now, false))
            .await?;
        written.decided(Release::Released, Release::NotHeld)
    }

    async fn decide_returned(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Decided<Returned>, StoreError> {
        let written = self
            .update(group, self.returned_request(id, since, now, true))
            .await?;
        let Written::Refused(current) = written else {
            return written.decided(Returned::Freed, Returned::NotReturning { holds: false });
        };
        let current = current.unwrap_or_default();
        match current.decide_returned(id, since) {
            // Returning, but a later release is recorded: free the slot and
            // keep the later time (a second request, only in this case).
            Returned::Freed => {
                let written = self
                    .update(group, self.returned_request(id, since, now, false))
                    .await?;
                match written {
                    Written::Refused(current) => {
                        let current = current.unwrap_or_default();
                        let outcome = match current.decide_returned(id, since) {
                            Returned::Freed => Returned::NotReturning { holds: false },
                            outcome => outcome,
                        };
                        Ok(decided(outcome, current))
                    }
                    written => written.decided(Returned::Freed, Returned::Freed),
                }
            }
            outcome => Ok(decided(outcome, current)),
        }
    }

    async fn decide_stop_rollout(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    ) -> Result<Decided<Stopping>, StoreError> {
        let stop = RolloutStop {
            id: id.clone(),
            returning_since: since,
            at: now,
            cause,
        };
        let written = self.update(group, self.stop_request(&stop)).await?;
        let Written::Refused(current) = written else {
            return written.decided(Stopping::Stopped, Stopping::NotReturning);
        };
        let current = current.unwrap_or_default();
        match current.decide_stop(id, since, cause) {
            Stopping::Stopped => Err(StoreError::Corrupt(
                "the stop was refused although the return stands uncounted".into(),
            )),
            outcome => Ok(decided(outcome, current)),
        }
    }

    async fn decide_drained(
        &self,
        group: &GroupName,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Result<Decided<Drained>, StoreError> {
        let request = self.grant_reserved_request(id, since, now);
        match self.update(group, request).await? {
            Written::Applied(after, write_units) => Ok(Decided {
                outcome: Drained::Granted,
                group: after,
                write_units,
            }),
            Written::AppliedUnreadable(err) => Err(err),
            Written::Refused(current) => {
                let current = current.unwrap_or_default();
                match current.decide_drained(id, since) {
                    Drained::Granted => Err(StoreError::Corrupt(
                        "the confirmation was refused although the reservation stands".into(),
                    )),
                    outcome => Ok(decided(outcome, current)),
                }
            }
        }
    }
}

impl LockStore for DynamoStore {
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
        self.forget_group(group).await
    }

    async fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
        self.read_groups(only).await
    }

    async fn wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
        self.counted_wildcard_groups().await
    }

    async fn record_settings(
        &self,
        region: &str,
        digests: &crate::domain::agreement::Digests,
    ) -> Result<crate::domain::agreement::Recorded, StoreError> {
        self.write_settings(region, digests).await
    }

    async fn recorded_settings(&self) -> Result<crate::domain::agreement::Recorded, StoreError> {
        self.read_settings().await
    }

    async fn forget_region(&self, region: &str) -> Result<bool, StoreError> {
        self.forget_region_record(region).await
    }
}
