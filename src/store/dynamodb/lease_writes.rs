//! The two writes of a lease: a newcomer taking over the slot of a holder
//! past its lease, and a holder renewing its lease. Each holds only on what
//! the other changes, so of a renewal and a take-over of one slot exactly
//! one wins.

use super::DynamoStore;
use super::codec::{
    drain_attribute, holder_attribute, legacy_holder_attribute, number, renewed_attribute,
    returning_attribute, taken_attribute,
};
use super::conditions::{GRANT_CHECKS, TAKE_OVER_ZONE_CHECK, canary_terms, reserves, zone_terms};
use super::writes::{Written, decided, refused_again};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{Acquire, GroupRules};
use crate::domain::store::{Decided, StoreError};
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

impl DynamoStore {
    /// The second and last write of a request that found its group full with
    /// a holder past its lease: `id` takes the slot of `expired`, granted at
    /// `since` and last renewed as `current` (the item the refused grant
    /// returned) says, the count unchanged. It
    /// repeats every condition of the first write but the room (pause,
    /// alarms, exclusion, settle, the asker not holding), and holds only
    /// while the expired holder's grant is still `since` and its renewal
    /// still `renewed` (so of two askers one wins, and of a take-over and
    /// the holder's renewal one wins; a release and a new grant of that node
    /// in between end it too) and the group holds no more holders than its
    /// slots. It marks the slot as taken from `expired` (`t:ID`), and
    /// removes the marks `current` holds past their bound
    /// ([`crate::domain::lock::GroupRecord::stale_taken`]).
    /// A 0.1 holder (`holder:<id>`) is covered: whichever of its two names
    /// it is stored under is the one removed.
    pub(super) fn take_expired_request(
        &self,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        (expired, since): (&NodeId, Timestamp),
        current: &GroupRecord,
    ) -> UpdateItemFluentBuilder {
        let renewed = current.renewed.get(expired).copied();
        let stale = current.stale_taken(now);
        let stale: Vec<&NodeId> = stale.iter().filter(|s| *s != id && *s != expired).collect();
        let mut remove = "#expired, #expired_legacy, #expired_renewed, #renewed, #taken".to_owned();
        for index in 0..stale.len() {
            remove.push_str(&format!(", #stale{index}"));
        }
        let renewal = match renewed {
            Some(_) => "#expired_renewed = :renewed",
            None => "attribute_not_exists(#expired_renewed)",
        };
        let (zone_set, zone_check, zone_remove) = zone_terms(rules, TAKE_OVER_ZONE_CHECK);
        // A take-over is a grant of the rollout too: inside a wave only (at
        // a wave's first, a node is out: the one it replaces).
        let (request, canary) = canary_terms(self.grant_checks(id, rules, now), rules, now, false);
        let (canary_add, canary_check) = canary
            .as_ref()
            .map_or(("", ""), |c| (" ADD #wave_grants :one", c.check.as_str()));
        let mut request = request
            .update_expression(format!(
                "SET #holder = :now, {}{zone_set}#slots = :slots, #expired_taken = :now \
                 REMOVE {remove}{zone_remove}{canary_add}",
                reserves(rules)
            ))
            .condition_expression(format!(
                "(#expired = :since OR #expired_legacy = :since) AND {renewal} \
                 AND attribute_not_exists(#expired_returning) \
                 AND #count <= :slots AND {GRANT_CHECKS}{zone_check}{canary_check}"
            ))
            .expression_attribute_names("#expired", holder_attribute(expired))
            .expression_attribute_names("#expired_legacy", legacy_holder_attribute(expired))
            .expression_attribute_names("#expired_renewed", renewed_attribute(expired))
            .expression_attribute_names("#expired_taken", taken_attribute(expired))
            // A returning slot is never taken over: its node is not back.
            .expression_attribute_names("#expired_returning", returning_attribute(expired))
            .expression_attribute_values(":since", number(since.0));
        for (index, node) in stale.iter().enumerate() {
            request =
                request.expression_attribute_names(format!("#stale{index}"), taken_attribute(node));
        }
        if rules.zone.is_some() || rules.canary.is_some() {
            request = request.expression_attribute_values(":one", number(1));
        }
        match renewed {
            Some(renewed) => request.expression_attribute_values(":renewed", number(renewed.0)),
            None => request,
        }
    }

    /// A holder's pre-reboot in a group with a lease renews it: the one
    /// write dates `r:ID` `now`, while the node still holds the slot granted
    /// at `granted` (not taken over meanwhile, not released and granted
    /// again) as a granted slot (not a reservation), and never moves an
    /// earlier renewal back over a later one. The grant time stays.
    pub(super) fn renew_request(
        &self,
        id: &NodeId,
        granted: Timestamp,
        now: Timestamp,
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .update_expression("SET #renewed = :now")
            .condition_expression(
                "#holder = :granted AND attribute_not_exists(#drain) \
                 AND (attribute_not_exists(#renewed) OR #renewed <= :now)",
            )
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#drain", drain_attribute(id))
            .expression_attribute_names("#renewed", renewed_attribute(id))
            .expression_attribute_values(":granted", number(granted.0))
            .expression_attribute_values(":now", number(now.0))
    }

    /// Sends [`Self::renew_request`] for a holder the first write found
    /// (`current`, the item it saw). Refused, the answer comes from the item
    /// the condition saw: still a holder (a later renewal landed first)
    /// keeps its yes; a node whose slot was taken meanwhile is refused, never
    /// granted by this call.
    pub(super) async fn renew(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        current: GroupRecord,
    ) -> Result<Decided<Acquire>, StoreError> {
        let Some(granted) = current.holders.held_since(id) else {
            return Ok(refused_again(current, id, rules, now));
        };
        match self
            .update(group, self.renew_request(id, granted, now))
            .await?
        {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: Acquire::AlreadyHeld,
                group,
                write_units,
            }),
            // The renewal landed; the node holds, as before it.
            Written::AppliedUnreadable(err) => Err(err),
            Written::Refused(seen) => {
                let seen = seen.unwrap_or_default();
                if seen.holders.holds(id) {
                    Ok(decided(Acquire::AlreadyHeld, seen))
                } else {
                    Ok(refused_again(seen, id, rules, now))
                }
            }
        }
    }

    /// Sends [`Self::take_expired_request`]. Refused, it answers from the item
    /// the condition saw, with no third request: whatever else that item
    /// allows (a slot freed meanwhile, another expired holder) is a full
    /// group for this call, and Zincati's next try decides it.
    pub(super) async fn take_expired(
        &self,
        group: &GroupName,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        (expired, since): (&NodeId, Timestamp),
        current: &GroupRecord,
    ) -> Result<Decided<Acquire>, StoreError> {
        let request = self.take_expired_request(id, rules, now, (expired, since), current);
        match self.update(group, request).await? {
            Written::Applied(group, write_units) => Ok(Decided {
                outcome: Acquire::TakesExpired {
                    holder: expired.clone(),
                    since,
                },
                group,
                write_units,
            }),
            Written::AppliedUnreadable(err) => {
                self.take_back(group, id, now, Some((expired, since))).await;
                Err(err)
            }
            Written::Refused(current) => {
                Ok(refused_again(current.unwrap_or_default(), id, rules, now))
            }
        }
    }
}
