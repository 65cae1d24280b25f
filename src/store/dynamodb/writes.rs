//! The writes behind each decision: what a conditional write did
//! ([`Written`]), and the request and condition of each family of writes (a
//! grant, a reserved slot granted, a release, a person's pause; a lease's
//! take-over and renewal are in lease_writes.rs, the count of groups only
//! `*` covers in wildcard_writes.rs, the gates' fragments of a grant's
//! condition in conditions.rs). lock_store.rs sends them and turns their
//! results into the domain's answers.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;

use super::codec::{
    drain_attribute, excluded_attribute, holder_attribute, legacy_holder_attribute, number,
    read_number, record_of, renewed_attribute, return_failed_attribute, returning_attribute,
    taken_attribute,
};
use super::conditions::{
    FREED, GRANT_CHECKS, GRANT_ZONE_CHECK, canary_terms, reserves, zone_terms,
};
use super::{
    ALARMS_ATTRIBUTE, COUNT_ATTRIBUTE, DynamoStore, KEY_ATTRIBUTE, PAUSE_VERSION_ATTRIBUTE,
    PAUSED_ATTRIBUTE, RELEASED_ATTRIBUTE, SLOTS_ATTRIBUTE, STOPPED_ATTRIBUTE, ZONE_ATTRIBUTE,
    unavailable,
};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{Acquire, GroupRules, Refusal};
use crate::domain::store::{Changed, Decided, StoreError};
use crate::domain::time::Timestamp;

/// What a conditional write did, with the item after it (applied) or as the
/// condition saw it (refused; `None` when there was no item).
pub(super) enum Written {
    Applied(GroupRecord, Option<f64>),
    /// The write landed, but the item it left cannot be read: stored data
    /// the condition could not see (a holder count below the holders, an
    /// id no version writes).
    AppliedUnreadable(StoreError),
    Refused(Option<GroupRecord>),
}

impl Written {
    /// `applied` or `refused` as the outcome, with the item and the units.
    pub(super) fn decided<T>(self, applied: T, refused: T) -> Result<Decided<T>, StoreError> {
        match self {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: applied,
                group,
                write_units,
            }),
            Written::AppliedUnreadable(err) => Err(err),
            Written::Refused(group) => Ok(Decided {
                outcome: refused,
                group: group.unwrap_or_default(),
                write_units: None,
            }),
        }
    }
}

/// What a second write of a pre-reboot answers when its condition refused
/// it, from the item the refusal returned, with no third request: an
/// answer that would need another write (a slot freed meanwhile, another
/// expired holder, a reservation to grant) is a full group for this call,
/// and Zincati's next try decides it.
pub(super) fn refused_again(
    current: GroupRecord,
    id: &NodeId,
    rules: GroupRules,
    now: Timestamp,
) -> Decided<Acquire> {
    let outcome = match current.decide_acquire(id, rules, now) {
        Acquire::Granted
        | Acquire::Reserves
        | Acquire::TakesExpired { .. }
        | Acquire::DrainTimedOut { .. } => Acquire::Refused(Refusal::Full),
        outcome => outcome,
    };
    decided(outcome, current)
}

/// What a grant's write that went through answers: behind a drain gate it
/// reserved the slot.
pub(super) fn granted(rules: GroupRules) -> Acquire {
    match rules.drain {
        Some(_) => Acquire::Reserves,
        None => Acquire::Granted,
    }
}

pub(super) fn decided<T>(outcome: T, group: GroupRecord) -> Decided<T> {
    Decided {
        outcome,
        group,
        write_units: None,
    }
}

impl DynamoStore {
    /// The one conditional write that takes a slot; with `item_exists`, only
    /// on a group that has an item already.
    pub(super) fn acquire_request(
        &self,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        item_exists: bool,
        begins: bool,
    ) -> UpdateItemFluentBuilder {
        // A missing count means a group never used: free, unless it has no
        // slots. While the window closes before a drain could end, no new
        // drain begins: no room at all (the refused write still answers a
        // holder or a reserved node from the item it returns).
        let room = if rules
            .drain
            .is_some_and(|drain| drain.window_closes.is_some())
        {
            "(attribute_exists(#slots) AND attribute_not_exists(#slots))"
        } else if rules.slots > 0 {
            "(attribute_not_exists(#count) OR #count < :slots)"
        } else {
            "#count < :slots"
        };
        let mut condition = format!("{room} AND {GRANT_CHECKS}");
        let (zone_set, zone_check, zone_remove) = zone_terms(rules, GRANT_ZONE_CHECK);
        condition.push_str(zone_check);
        let (request, canary) = canary_terms(self.grant_checks(id, rules, now), rules, now, begins);
        let (canary_set, canary_add) = canary.as_ref().map_or(("", ""), |c| (c.set, c.add));
        if let Some(canary) = &canary {
            condition.push_str(&canary.check);
        }
        let mut request = request
            .update_expression(format!(
                "SET #holder = :now, {}{zone_set}{canary_set}#slots = :slots REMOVE #renewed, \
                 #taken{zone_remove} ADD #count :one{canary_add}",
                reserves(rules)
            ))
            .expression_attribute_values(":one", number(1));
        if rules.zone.is_some() && canary.is_none() {
            request = request.expression_attribute_values(":zero", number(0));
        }
        if item_exists {
            condition.push_str(" AND attribute_exists(#key)");
            request = request.expression_attribute_names("#key", KEY_ATTRIBUTE);
        }
        request.condition_expression(condition)
    }

    /// A write that gives `id` a slot at `now`, with the names and values of
    /// [`GRANT_CHECKS`]: the grant and the take-over past a lease both start
    /// here, so the second can never check less than the first.
    pub(super) fn grant_checks(
        &self,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> UpdateItemFluentBuilder {
        let request = self
            .client
            .update_item()
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#legacy", legacy_holder_attribute(id))
            .expression_attribute_names("#excluded", excluded_attribute(id))
            // A grant starts afresh: no renewal of an earlier slot, no mark
            // of a slot taken from the node.
            .expression_attribute_names("#renewed", renewed_attribute(id))
            .expression_attribute_names("#taken", taken_attribute(id))
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_names("#slots", SLOTS_ATTRIBUTE)
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE)
            .expression_attribute_names("#alarms", ALARMS_ATTRIBUTE)
            .expression_attribute_names("#stopped", STOPPED_ATTRIBUTE)
            .expression_attribute_names("#released", RELEASED_ATTRIBUTE)
            .expression_attribute_values(":now", number(now.0))
            .expression_attribute_values(":slots", number(rules.slots.into()))
            .expression_attribute_values(":settled", number(now.minus(rules.settle).0));
        // The zone group is written, or removed ([`zone_terms`]).
        let request = request.expression_attribute_names("#zone", ZONE_ATTRIBUTE);
        let request = match rules.zone {
            Some(zone) => {
                request.expression_attribute_values(":zone", AttributeValue::S(zone.to_string()))
            }
            None => request,
        };
        // DynamoDB refuses a name no expression uses: only a reservation
        // writes the mark.
        match rules.drain {
            Some(_) => request.expression_attribute_names("#drain", drain_attribute(id)),
            None => request,
        }
    }

    /// The one write that turns the reservation of `id` into its slot,
    /// dated `now` (a lease runs from here), the count unchanged: only while
    /// it is the reservation made at `since` (any, without), and while the
    /// node may reboot (no pause, no alarm, not excluded). The drain's
    /// confirmation and a grant on timeout alike.
    pub(super) fn grant_reserved_request(
        &self,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> UpdateItemFluentBuilder {
        let reservation = match since {
            Some(_) => "#drain = :since",
            None => "attribute_exists(#drain)",
        };
        let request = self
            .client
            .update_item()
            .update_expression("SET #holder = :now REMOVE #drain")
            // The holder too: a `d:ID` left without its `h:ID` (written by
            // hand) must not become a holder the count does not know.
            .condition_expression(format!(
                "{reservation} AND attribute_exists(#holder) AND attribute_not_exists(#paused) \
                 AND attribute_not_exists(#alarms) AND attribute_not_exists(#stopped) \
                 AND attribute_not_exists(#excluded)"
            ))
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#drain", drain_attribute(id))
            .expression_attribute_names("#excluded", excluded_attribute(id))
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE)
            .expression_attribute_names("#alarms", ALARMS_ATTRIBUTE)
            .expression_attribute_names("#stopped", STOPPED_ATTRIBUTE)
            .expression_attribute_values(":now", number(now.0));
        match since {
            Some(since) => request.expression_attribute_values(":since", number(since.0)),
            None => request,
        }
    }

    /// The second and last write of a pre-reboot whose first found its
    /// group's rollout over, in a group with a canary: the grant (or
    /// reservation) that begins a new rollout, as its canary. Of two nodes
    /// that both found it over, one begins it; the other hears, from the
    /// item its refused write returns, that the canary is out.
    pub(super) async fn begin_rollout(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        let request = self.acquire_request(id, rules, now, false, true);
        match self.update(group, request).await? {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: granted(rules),
                group,
                write_units,
            }),
            Written::AppliedUnreadable(err) => {
                self.take_back(group, id, now, None).await;
                Err(err)
            }
            Written::Refused(current) => {
                Ok(refused_again(current.unwrap_or_default(), id, rules, now))
            }
        }
    }

    /// The second and last write of a pre-reboot whose reservation waited
    /// past the drain timeout in a group that grants on timeout.
    pub(super) async fn grant_on_timeout(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        since: Timestamp,
    ) -> Result<Decided<Acquire>, StoreError> {
        let request = self.grant_reserved_request(id, Some(since), now);
        match self.update(group, request).await? {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: Acquire::DrainTimedOut { since },
                group,
                write_units,
            }),
            // A 500: the node will not reboot. Its slot stays reserved, as
            // before this write, which is what the item says anyway.
            Written::AppliedUnreadable(err) => Err(err),
            Written::Refused(current) => {
                Ok(refused_again(current.unwrap_or_default(), id, rules, now))
            }
        }
    }

    /// Removes the grant of `id` written at `granted` (and only that one),
    /// after the write landed on an item that cannot be read; a take-over's
    /// grant gives the slot back to the holder it took it from (`restore`,
    /// with its time), the count unchanged. A failure is logged: the node
    /// then holds a slot it was told it did not get, which blocks the group
    /// (never over-grants it) until an operator repairs it.
    pub(super) async fn take_back(
        &self,
        group: &GroupName,
        id: &NodeId,
        granted: Timestamp,
        restore: Option<(&NodeId, Timestamp)>,
    ) {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(group.to_string()))
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#drain", drain_attribute(id))
            .expression_attribute_values(":granted", number(granted.0));
        let request = match restore {
            None => request
                .update_expression("REMOVE #holder, #drain ADD #count :minus_one")
                .condition_expression("#holder = :granted")
                .expression_attribute_names("#count", COUNT_ATTRIBUTE)
                .expression_attribute_values(":minus_one", AttributeValue::N("-1".into())),
            Some((expired, since)) => request
                .update_expression("REMOVE #holder, #drain, #expired_taken SET #expired = :since")
                .condition_expression("#holder = :granted AND attribute_not_exists(#expired)")
                .expression_attribute_names("#expired", holder_attribute(expired))
                .expression_attribute_names("#expired_taken", taken_attribute(expired))
                .expression_attribute_values(":since", number(since.0)),
        };
        match self.conditional(request).await {
            Ok(true) => tracing::error!(
                group = %group,
                id = %id.shown(),
                "a grant was written on an item that cannot be read, and taken back: \
                 repair or delete the item ('fleetlock status' names what is wrong)"
            ),
            // A release of the same node got there first: nothing is held.
            Ok(false) => tracing::error!(
                group = %group,
                id = %id.shown(),
                "a grant was written on an item that cannot be read, and was already \
                 released: repair or delete the item ('fleetlock status' names what is wrong)"
            ),
            Err(err) => tracing::error!(
                group = %group,
                id = %id.shown(),
                error = %err,
                "a grant was written on an item that cannot be read and could not be taken \
                 back: the node holds a slot it was refused; repair the group"
            ),
        }
    }

    /// The group and its pause version, read consistently: what a person's
    /// pause or resume writes on.
    pub(super) async fn read_pause_version(
        &self,
        group: &GroupName,
    ) -> Result<(GroupRecord, u64), StoreError> {
        let item = self.read_item(group.as_str()).await?;
        let version = match &item {
            Some(item) => read_number(item, PAUSE_VERSION_ATTRIBUTE)?.unwrap_or(0),
            None => 0,
        };
        Ok((record_of(item.as_ref())?, version))
    }

    /// A person's pause or resume, written only on the pause version `seen`
    /// and moving it on. Refused: `AlreadySo` when the group already is as
    /// asked (`already`), else `Overtaken`.
    pub(super) async fn person_pause_write(
        &self,
        group: &GroupName,
        request: UpdateItemFluentBuilder,
        seen: u64,
        already: impl Fn(&GroupRecord) -> bool,
    ) -> Result<Decided<Changed>, StoreError> {
        let request = request
            .expression_attribute_names("#version", PAUSE_VERSION_ATTRIBUTE)
            .expression_attribute_values(":seen", number(seen))
            .expression_attribute_values(":next", number(seen + 1));
        match self.update(group, request).await? {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: Changed::Yes,
                group,
                write_units,
            }),
            Written::AppliedUnreadable(err) => Err(err),
            Written::Refused(now) => {
                let now = now.unwrap_or_default();
                let outcome = if already(&now) {
                    Changed::AlreadySo
                } else {
                    Changed::Overtaken
                };
                Ok(decided(outcome, now))
            }
        }
    }

    /// The conditional write that frees the slot of `id` if it was granted
    /// no later than `now` (and ends its return, if it was returning); with
    /// `stamp`, it also records `now` as the last release, only if no later
    /// release is recorded.
    pub(super) fn release_request(
        &self,
        id: &NodeId,
        now: Timestamp,
        stamp: bool,
    ) -> UpdateItemFluentBuilder {
        let held = "((attribute_exists(#holder) AND #holder <= :now) \
                    OR (attribute_exists(#legacy) AND #legacy <= :now))";
        let request = self
            .freeing(id)
            .expression_attribute_values(":now", number(now.0));
        if stamp {
            request
                .update_expression(format!(
                    "REMOVE {FREED} SET #released = :now ADD #count :minus_one"
                ))
                .condition_expression(format!(
                    "{held} AND (attribute_not_exists(#released) OR #released <= :now)"
                ))
                .expression_attribute_names("#released", RELEASED_ATTRIBUTE)
        } else {
            request
                .update_expression(format!("REMOVE {FREED} ADD #count :minus_one"))
                .condition_expression(held)
        }
    }

    /// The names of a write that frees the slot of `id`: its holder under
    /// either name and every mark of it ([`FREED`]), and the count.
    pub(super) fn freeing(&self, id: &NodeId) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#legacy", legacy_holder_attribute(id))
            .expression_attribute_names("#drain", drain_attribute(id))
            .expression_attribute_names("#renewed", renewed_attribute(id))
            .expression_attribute_names("#returning", returning_attribute(id))
            .expression_attribute_names("#failed", return_failed_attribute(id))
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()))
    }

    /// Sends a conditional write whose outcome is only whether it applied.
    pub(super) async fn conditional(
        &self,
        request: UpdateItemFluentBuilder,
    ) -> Result<bool, StoreError> {
        match request.send().await {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(err))
                if err.err().is_conditional_check_failed_exception() =>
            {
                Ok(false)
            }
            Err(err) => Err(unavailable(err)),
        }
    }

    /// The item of `key`, read consistently.
    pub(super) async fn read_item(
        &self,
        key: &str,
    ) -> Result<Option<HashMap<String, AttributeValue>>, StoreError> {
        let read = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(key.to_owned()))
            .consistent_read(true)
            .send()
            .await
            .map_err(unavailable)?;
        Ok(read.item)
    }
}
