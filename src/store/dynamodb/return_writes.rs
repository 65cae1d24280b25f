//! The return gate's writes: a steady-state that leaves the slot
//! returning, the confirmation that frees it, and the sweep's stop of a
//! group whose return passed its timeout.

use super::codec::{
    drain_attribute, holder_attribute, legacy_holder_attribute, number, renewed_attribute,
    return_failed_attribute, returning_attribute, stop_value,
};
use super::conditions::FREED;
use super::{DynamoStore, RELEASED_ATTRIBUTE, STOPPED_ATTRIBUTE};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{RolloutStop, StopCause};
use crate::domain::store::StoreError;
use crate::domain::time::Timestamp;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

impl DynamoStore {
    /// A steady-state in a group with a return gate: the slot of `id`, if
    /// it was granted no later than `now` and is not returning already,
    /// counts as returning from `now` (its holder and the count stay).
    pub(super) fn returning_request(&self, id: &NodeId, now: Timestamp) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .update_expression("SET #returning = :now REMOVE #drain, #renewed")
            .condition_expression(
                "((attribute_exists(#holder) AND #holder <= :now) \
                 OR (attribute_exists(#legacy) AND #legacy <= :now)) \
                 AND attribute_not_exists(#returning)",
            )
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#legacy", legacy_holder_attribute(id))
            .expression_attribute_names("#drain", drain_attribute(id))
            .expression_attribute_names("#renewed", renewed_attribute(id))
            .expression_attribute_names("#returning", returning_attribute(id))
            .expression_attribute_values(":now", number(now.0))
    }

    /// The confirmation of a return: frees the slot of `id` while it
    /// returns (since `since`, when given); with `stamp`, records `now` as
    /// the last release unless a later one is recorded.
    pub(super) fn returned_request(
        &self,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
        stamp: bool,
    ) -> UpdateItemFluentBuilder {
        let returning = match since {
            Some(_) => "#returning = :since",
            None => "attribute_exists(#returning)",
        };
        let request = self.freeing(id);
        let request = if stamp {
            request
                .update_expression(format!(
                    "REMOVE {FREED} SET #released = :now ADD #count :minus_one"
                ))
                .condition_expression(format!(
                    "{returning} AND (attribute_not_exists(#released) OR #released <= :now)"
                ))
                .expression_attribute_names("#released", RELEASED_ATTRIBUTE)
                .expression_attribute_values(":now", number(now.0))
        } else {
            request
                .update_expression(format!("REMOVE {FREED} ADD #count :minus_one"))
                .condition_expression(returning)
        };
        match since {
            Some(since) => request.expression_attribute_values(":since", number(since.0)),
            None => request,
        }
    }

    /// The sweep's stop for the return of `id` begun at `since` (or, in a
    /// canary's wave, for `id` granted at `since`): the group stopped
    /// (unless it is already) and the slot counted as failed, in one write,
    /// only while that return (that grant, not a reservation) stands and
    /// was not counted.
    pub(super) fn stop_request(&self, stop: &RolloutStop) -> UpdateItemFluentBuilder {
        let (stands, mark) = match stop.cause {
            StopCause::Return => ("#returning = :since", returning_attribute(&stop.id)),
            StopCause::Wave => (
                "#holder = :since AND attribute_not_exists(#drain)",
                holder_attribute(&stop.id),
            ),
        };
        let request = self
            .client
            .update_item()
            .update_expression("SET #failed = :since, #stopped = if_not_exists(#stopped, :stop)")
            .condition_expression(format!("{stands} AND attribute_not_exists(#failed)"));
        let request = match stop.cause {
            StopCause::Return => request.expression_attribute_names("#returning", mark),
            StopCause::Wave => request
                .expression_attribute_names("#holder", mark)
                .expression_attribute_names("#drain", drain_attribute(&stop.id)),
        };
        request
            .expression_attribute_names("#failed", return_failed_attribute(&stop.id))
            .expression_attribute_names("#stopped", STOPPED_ATTRIBUTE)
            .expression_attribute_values(":since", number(stop.returning_since.0))
            .expression_attribute_values(":stop", stop_value(stop))
    }

    /// Counts a group only `*` covers, unless `limit` such groups are
    /// counted already; `false` then. Counting a counted group again is
    /// harmless (a set), so a retried or repeated call changes nothing.
    pub(super) async fn count_wildcard_group(
        &self,
        group: &GroupName,
        limit: u32,
        now: Timestamp,
    ) -> Result<bool, StoreError> {
        let request = self
            .wildcard_list_write(group, "ADD #names :group")
            .condition_expression(
                "contains(#names, :name) OR attribute_not_exists(#names) OR size(#names) < :limit",
            )
            .expression_attribute_values(":limit", number(limit.into()));
        let counted = self.conditional(request).await?;
        if !counted {
            self.wildcard_full_at
                .store(now.0, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(counted)
    }
}
