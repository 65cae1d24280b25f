//! The decisions a person or an alarm makes on a group: a pause and a
//! resume, an exclusion and an inclusion, an alarm's pause and its clearing,
//! a rollout begun. Each is one conditional write on the group as read.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;

use super::codec::{VERSION_AS_READ, excluded_attribute, number, person_pause_value};
use super::writes::{Written, decided};
use super::{
    ALARMS_ATTRIBUTE, DynamoStore, EXCLUDED_COUNT_ATTRIBUTE, KEY_ATTRIBUTE, PAUSED_ATTRIBUTE,
    ROLLOUT_BEGAN_ATTRIBUTE, STOPPED_ATTRIBUTE, WAVE_GRANTS_ATTRIBUTE,
};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::ByPerson;
use crate::domain::lock::GroupRecord;
use crate::domain::store::{Beginning, Changed, Decided, Excluding, StoreError, exclusion_refused};
use crate::domain::time::Timestamp;

impl DynamoStore {
    /// A pause or resume: `Yes` when the write went through.
    async fn change(
        &self,
        group: &GroupName,
        request: UpdateItemFluentBuilder,
    ) -> Result<Decided<Changed>, StoreError> {
        let written = self.update(group, request).await?;
        written.decided(Changed::Yes, Changed::AlreadySo)
    }

    /// One write to the set of alarms pausing the group; refused (nothing
    /// changes) when the alarm is already in, or already out of, the set.
    async fn change_alarms(
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

    pub(super) async fn decide_pause(
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

    pub(super) async fn decide_begin_rollout(
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

    pub(super) async fn decide_resume(
        &self,
        group: &GroupName,
    ) -> Result<Decided<Changed>, StoreError> {
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

    pub(super) async fn decide_exclude(
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

    pub(super) async fn decide_include(
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

    pub(super) async fn decide_pause_for_alarm(
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

    pub(super) async fn decide_clear_alarm(
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
}
