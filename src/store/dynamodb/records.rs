//! What decides no grant: the groups read (one item, or a consistent scan),
//! a group or a region's record forgotten, and the regions' settings
//! recorded and read. The `LockStore` methods of these names call here.

use std::collections::HashMap;

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, ReturnValuesOnConditionCheckFailure};

use super::codec::{is_wildcard_list, number, record_of, recorded_of};
use super::{
    ALARMS_ATTRIBUTE, COUNT_ATTRIBUTE, DynamoStore, EXCLUDED_COUNT_ATTRIBUTE, KEY_ATTRIBUTE,
    PAUSED_ATTRIBUTE, SETTINGS_KEY, SETTINGS_PREFIX, STOPPED_ATTRIBUTE, unavailable,
};
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRecord;
use crate::domain::store::{Forgot, StoreError};

impl DynamoStore {
    pub(super) async fn forget_group(&self, group: &GroupName) -> Result<Forgot, StoreError> {
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(group.to_string()))
            .condition_expression(
                "(attribute_not_exists(#count) OR #count = :zero) \
                 AND attribute_not_exists(#paused) AND attribute_not_exists(#alarms) \
                 AND attribute_not_exists(#stopped) \
                 AND (attribute_not_exists(#xcount) OR #xcount = :zero)",
            )
            .expression_attribute_names("#stopped", STOPPED_ATTRIBUTE)
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_names("#xcount", EXCLUDED_COUNT_ATTRIBUTE)
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE)
            .expression_attribute_names("#alarms", ALARMS_ATTRIBUTE)
            .expression_attribute_values(":zero", number(0))
            .return_values(ReturnValue::AllOld)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        let removed = match deleted {
            Ok(output) => output.attributes().is_some(),
            Err(SdkError::ServiceError(err)) => match err.into_err() {
                DeleteItemError::ConditionalCheckFailedException(refused) => {
                    return Ok(Forgot::Kept(Box::new(record_of(refused.item())?)));
                }
                other => return Err(unavailable(other)),
            },
            Err(err) => return Err(unavailable(err)),
        };
        let counted = self.uncount_wildcard_group(group).await?;
        if counted {
            // A place is free: the next new group asks the list again.
            self.wildcard_full_at
                .store(0, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(match (removed, counted) {
            (true, counted) => Forgot::Removed { counted },
            (false, true) => Forgot::Uncounted,
            (false, false) => Forgot::NothingStored,
        })
    }

    pub(super) async fn read_groups(
        &self,
        only: Option<&GroupName>,
    ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
        let items: Vec<HashMap<String, AttributeValue>> = match only {
            Some(group) => self.read_item(group.as_str()).await?.into_iter().collect(),
            None => self
                .client
                .scan()
                .table_name(&self.table)
                .consistent_read(true)
                .into_paginator()
                .items()
                .send()
                .collect::<Result<_, _>>()
                .await
                .map_err(unavailable)?,
        };
        let mut groups = items
            .iter()
            .filter(|item| !is_wildcard_list(item))
            .map(|item| {
                let name = match item.get(KEY_ATTRIBUTE) {
                    Some(AttributeValue::S(name)) => GroupName::parse(name)
                        .map_err(|_| StoreError::Corrupt(format!("invalid group name {name:?}")))?,
                    _ => return Err(StoreError::Corrupt("an item has no group name".into())),
                };
                let record = GroupRecord::try_from(item).map_err(|err| match err {
                    StoreError::Corrupt(why) => StoreError::Corrupt(format!(
                        "the item of group '{name}' in table {}: {why}",
                        self.table
                    )),
                    other => other,
                })?;
                Ok((name, record))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(groups)
    }

    pub(super) async fn write_settings(
        &self,
        region: &str,
        digests: &crate::domain::agreement::Digests,
    ) -> Result<crate::domain::agreement::Recorded, StoreError> {
        let map = digests
            .iter()
            .map(|(group, digest)| (group.clone(), AttributeValue::S(digest.clone())))
            .collect();
        let written = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(SETTINGS_KEY.into()))
            .update_expression("SET #mine = :digests")
            .expression_attribute_names("#mine", format!("{SETTINGS_PREFIX}{region}"))
            .expression_attribute_values(":digests", AttributeValue::M(map))
            .return_values(ReturnValue::AllNew)
            .send()
            .await
            .map_err(unavailable)?;
        recorded_of(written.attributes())
    }

    pub(super) async fn read_settings(
        &self,
    ) -> Result<crate::domain::agreement::Recorded, StoreError> {
        recorded_of(self.read_item(SETTINGS_KEY).await?.as_ref())
    }

    pub(super) async fn forget_region_record(&self, region: &str) -> Result<bool, StoreError> {
        let removed = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(SETTINGS_KEY.into()))
            .update_expression("REMOVE #region")
            .condition_expression("attribute_exists(#region)")
            .expression_attribute_names("#region", format!("{SETTINGS_PREFIX}{region}"))
            .send()
            .await;
        match removed {
            Ok(_) => Ok(true),
            Err(SdkError::ServiceError(err)) => match err.into_err() {
                UpdateItemError::ConditionalCheckFailedException(_) => Ok(false),
                other => Err(unavailable(other)),
            },
            Err(err) => Err(unavailable(err)),
        }
    }
}
