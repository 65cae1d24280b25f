//! The writes to the list of groups only `*` covers (the item keyed
//! [`super::WILDCARD_KEY`]): whether the list was found full a moment ago,
//! a name counted or no longer, and the names counted.

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::AttributeValue;

use super::{DynamoStore, KEY_ATTRIBUTE, WILDCARD_KEY, WILDCARD_NAMES_ATTRIBUTE};
use crate::domain::input::GroupName;
use crate::domain::store::StoreError;
use crate::domain::time::Timestamp;

impl DynamoStore {
    /// Whether a count was refused within [`super::WILDCARD_FULL_REMEMBERED`]
    /// of `now`: a new group is then refused without a write to the list.
    pub(super) fn wildcard_list_known_full(&self, now: Timestamp) -> bool {
        let at = self
            .wildcard_full_at
            .load(std::sync::atomic::Ordering::Relaxed);
        at != 0 && now.0 >= at && now.0 - at < super::WILDCARD_FULL_REMEMBERED.as_millis() as u64
    }

    /// No longer counts `group` among those only `*` covers; `false` when it
    /// was not counted.
    pub(super) async fn uncount_wildcard_group(
        &self,
        group: &GroupName,
    ) -> Result<bool, StoreError> {
        let request = self
            .wildcard_list_write(group, "DELETE #names :group")
            .condition_expression("contains(#names, :name)");
        self.conditional(request).await
    }

    /// A write to the list of groups only `*` covers, naming `group`.
    pub(super) fn wildcard_list_write(
        &self,
        group: &GroupName,
        update: &str,
    ) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(WILDCARD_KEY.into()))
            .update_expression(update)
            .expression_attribute_names("#names", WILDCARD_NAMES_ATTRIBUTE)
            .expression_attribute_values(":group", AttributeValue::Ss(vec![group.to_string()]))
            .expression_attribute_values(":name", AttributeValue::S(group.to_string()))
    }

    /// The groups only `*` covers that are counted, sorted.
    pub(super) async fn counted_wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
        let item = self.read_item(WILDCARD_KEY).await?;
        let names = match item.as_ref().and_then(|i| i.get(WILDCARD_NAMES_ATTRIBUTE)) {
            None => return Ok(Vec::new()),
            Some(AttributeValue::Ss(names)) => names,
            Some(_) => {
                return Err(StoreError::Corrupt(format!(
                    "{WILDCARD_KEY}.{WILDCARD_NAMES_ATTRIBUTE} is not a string set"
                )));
            }
        };
        let mut groups = names
            .iter()
            .map(|name| {
                GroupName::parse(name)
                    .map_err(|_| StoreError::Corrupt(format!("invalid group name {name:?}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        groups.sort();
        Ok(groups)
    }
}
