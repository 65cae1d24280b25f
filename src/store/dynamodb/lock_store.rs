//! The `LockStore` implementation: every decision one conditional write.

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::codec::{VERSION_AS_READ, excluded_attribute, number, person_pause_value, record_of};
use super::writes::{Written, decided, granted};
use super::{
    ALARMS_ATTRIBUTE, DynamoStore, EXCLUDED_COUNT_ATTRIBUTE, KEY_ATTRIBUTE, PAUSED_ATTRIBUTE,
    ROLLOUT_BEGAN_ATTRIBUTE, STOPPED_ATTRIBUTE, WAVE_GRANTS_ATTRIBUTE, unavailable, write_units,
};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{
    Acquire, ByPerson, Drained, GroupRules, Release, Returned, RolloutStop, StopCause, Stopping,
};
use crate::domain::store::{
    Beginning, Changed, Decided, Excluding, Forgot, LockStore, StoreError, exclusion_refused,
};
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

    /// A pause or resume: `Yes` when the write went through.
    pub(super) async fn change(
        &self,
        group: &GroupName,
        request: UpdateItemFluentBuilder,
    ) -> Result<Decided<Changed>, StoreError> {
        let written = self.update(group, request).await?;
        written.decided(Changed::Yes, Changed::AlreadySo)
    }

    /// One write to the set of alarms pausing the group; refused (nothing
    /// changes) when the alarm is already in, or already out of, the set.
    pub(super) async fn change_alarms(
        &self,
        group: &GroupName,
        alarm: &str,
        update: &str,
        condition: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        let request = self
            .client
            .update_item()
            .update_expression(update)
            .condition_expression(condition)
            .expression_attribute_names("#alarms", ALARMS_ATTRIBUTE)
            .expression_attribute_values(":alarm", AttributeValue::Ss(vec![alarm.to_owned()]))
            .expression_attribute_values(":name", AttributeValue::S(alarm.to_owned()));
        self.change(group, request).await
    }
}

impl LockStore for DynamoStore {
    async fn acquire(
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
                        Acquire::TooManyGroups { limit },
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

    async fn release(
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

    async fn returned(
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

    async fn stop_rollout(
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

    async fn drained(
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

    async fn pause(
        &self,
        group: &GroupName,
        pause: ByPerson,
    ) -> Result<Decided<Changed>, StoreError> {
        let (current, seen) = self.read_pause_version(group).await?;
        if current.pause.person.is_some() {
            return Ok(decided(Changed::AlreadySo, current));
        }
        let request = self
            .client
            .update_item()
            .update_expression("SET #paused = :pause, #version = :next")
            .condition_expression(format!(
                "attribute_not_exists(#paused) AND {VERSION_AS_READ}"
            ))
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE)
            .expression_attribute_values(":pause", person_pause_value(&pause));
        self.person_pause_write(group, request, seen, |now| now.pause.person.is_some())
            .await
    }

    async fn begin_rollout(
        &self,
        group: &GroupName,
        now: Timestamp,
    ) -> Result<Decided<Beginning>, StoreError> {
        let request = self
            .client
            .update_item()
            .update_expression("SET #wave_grants = :zero, #began = :now")
            .condition_expression(
                "attribute_exists(#key) AND (attribute_not_exists(#began) OR #began < :now)",
            )
            .expression_attribute_names("#key", KEY_ATTRIBUTE)
            .expression_attribute_names("#wave_grants", WAVE_GRANTS_ATTRIBUTE)
            .expression_attribute_names("#began", ROLLOUT_BEGAN_ATTRIBUTE)
            .expression_attribute_values(":zero", number(0))
            .expression_attribute_values(":now", number(now.0));
        match self.update(group, request).await? {
            Written::Refused(None) => Ok(decided(Beginning::NotStored, GroupRecord::default())),
            written => written.decided(Beginning::Begun, Beginning::AlreadyBegun),
        }
    }

    async fn resume(&self, group: &GroupName) -> Result<Decided<Changed>, StoreError> {
        let (current, seen) = self.read_pause_version(group).await?;
        let resumed =
            |group: &GroupRecord| group.pause.person.is_none() && group.pause.stop.is_none();
        if resumed(&current) {
            return Ok(decided(Changed::AlreadySo, current));
        }
        // Only what this call read: a stop the sweep writes after the read
        // (it moves no pause version) stays, for a person to see.
        let mut cleared = Vec::new();
        if current.pause.person.is_some() {
            cleared.push(("#paused", PAUSED_ATTRIBUTE));
        }
        if current.pause.stop.is_some() {
            cleared.push(("#stopped", STOPPED_ATTRIBUTE));
        }
        let names: Vec<&str> = cleared.iter().map(|(name, _)| *name).collect();
        let mut request = self
            .client
            .update_item()
            .update_expression(format!("REMOVE {} SET #version = :next", names.join(", ")))
            .condition_expression(format!(
                "attribute_exists({}) AND {VERSION_AS_READ}",
                names.join(") AND attribute_exists(")
            ));
        for (name, attribute) in cleared {
            request = request.expression_attribute_names(name, attribute);
        }
        self.person_pause_write(group, request, seen, resumed).await
    }

    async fn exclude(
        &self,
        group: &GroupName,
        id: &NodeId,
        exclusion: ByPerson,
    ) -> Result<Decided<Excluding>, StoreError> {
        let (current, seen) = self.read_pause_version(group).await?;
        if let Some(refused) = exclusion_refused(&current, id) {
            return Ok(decided(refused, current));
        }
        let request = self
            .client
            .update_item()
            .update_expression("SET #excluded = :exclusion, #version = :next ADD #xcount :one")
            .condition_expression(format!(
                "attribute_not_exists(#excluded) AND {VERSION_AS_READ}"
            ))
            .expression_attribute_names("#excluded", excluded_attribute(id))
            .expression_attribute_names("#xcount", EXCLUDED_COUNT_ATTRIBUTE)
            .expression_attribute_values(":exclusion", person_pause_value(&exclusion))
            .expression_attribute_values(":one", number(1));
        let decided = self
            .person_pause_write(group, request, seen, |now| now.excluded.contains_key(id))
            .await?;
        Ok(decided.map(Excluding::Changed))
    }

    async fn include(
        &self,
        group: &GroupName,
        id: &NodeId,
    ) -> Result<Decided<Changed>, StoreError> {
        let (current, seen) = self.read_pause_version(group).await?;
        if !current.excluded.contains_key(id) {
            return Ok(decided(Changed::AlreadySo, current));
        }
        let request = self
            .client
            .update_item()
            .update_expression("REMOVE #excluded SET #version = :next ADD #xcount :minus_one")
            .condition_expression(format!("attribute_exists(#excluded) AND {VERSION_AS_READ}"))
            .expression_attribute_names("#excluded", excluded_attribute(id))
            .expression_attribute_names("#xcount", EXCLUDED_COUNT_ATTRIBUTE)
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()));
        self.person_pause_write(group, request, seen, |now| !now.excluded.contains_key(id))
            .await
    }

    async fn pause_for_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        self.change_alarms(
            group,
            alarm,
            "ADD #alarms :alarm",
            "NOT contains(#alarms, :name)",
        )
        .await
    }

    async fn clear_alarm(
        &self,
        group: &GroupName,
        alarm: &str,
    ) -> Result<Decided<Changed>, StoreError> {
        // DELETE of the last name removes the attribute: the group is free.
        self.change_alarms(
            group,
            alarm,
            "DELETE #alarms :alarm",
            "contains(#alarms, :name)",
        )
        .await
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
