//! The table itself: creating it, checking it at start-up, and its
//! definition, which the templates are checked against.

use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::types::{AttributeDefinition, KeySchemaElement, KeyType};

use super::{BILLING_MODE, DynamoStore, KEY_ATTRIBUTE, KEY_TYPE, one_line, unavailable};
use crate::domain::store::StoreError;

/// How long one CreateTable may take before it is tried again.
const CREATE_TABLE_TIMEOUT: Duration = Duration::from_secs(30);

impl DynamoStore {
    /// Creates the table with the project's key schema and on-demand billing,
    /// and waits until it is active. An existing table is left as it is.
    /// Returns whether the table was created by this call.
    pub async fn create_table(&self) -> Result<bool, StoreError> {
        let created = self
            .client
            .create_table()
            .table_name(&self.table)
            .attribute_definitions(
                AttributeDefinition::builder()
                    .attribute_name(KEY_ATTRIBUTE)
                    .attribute_type(KEY_TYPE)
                    .build()
                    .map_err(unavailable)?,
            )
            .key_schema(
                KeySchemaElement::builder()
                    .attribute_name(KEY_ATTRIBUTE)
                    .key_type(KeyType::Hash)
                    .build()
                    .map_err(unavailable)?,
            )
            .billing_mode(BILLING_MODE)
            // Not the 2 s a lock decision gets: a person runs this once, and
            // a DynamoDB Local just started takes longer than that to make
            // its first table (it made it all the same, and the retry then
            // found it "in use").
            .customize()
            .config_override(
                aws_sdk_dynamodb::config::Config::builder().timeout_config(
                    aws_sdk_dynamodb::config::timeout::TimeoutConfig::builder()
                        .operation_attempt_timeout(CREATE_TABLE_TIMEOUT)
                        .operation_timeout(CREATE_TABLE_TIMEOUT * 2)
                        .build(),
                ),
            )
            .send()
            .await;
        let created = match created {
            Ok(_) => true,
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_resource_in_use_exception()) =>
            {
                false
            }
            Err(err) => return Err(unavailable(err)),
        };
        self.client
            .wait_until_table_exists()
            .table_name(&self.table)
            .wait(Duration::from_secs(120))
            .await
            .map_err(unavailable)?;
        Ok(created)
    }
}

/// Why the configured table cannot be used, found at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableProblem {
    /// A configuration mistake (no such table, another key, no permission):
    /// starting would only answer 5xx, so the process refuses to start.
    Unusable(String),
    /// DynamoDB could not be asked: an outage, not a mistake. The process
    /// starts and answers `store_unavailable` until DynamoDB is back, as it
    /// would if the outage began later.
    Unreachable(String),
}

impl std::fmt::Display for TableProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableProblem::Unusable(why) | TableProblem::Unreachable(why) => f.write_str(why),
        }
    }
}

/// Whether a function keeps records of its own region on a global table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Regional<'a> {
    /// It writes nothing per region (the drained function): any table.
    No,
    /// It records its settings or its alarm pauses under its region: on a
    /// global table it needs that region (`FLEETLOCK_REGION`, here if set).
    Yes(Option<&'a str>),
}

impl DynamoStore {
    /// One `DescribeTable` at start-up: the table exists with this project's
    /// key. It also opens the connection to DynamoDB before the first request
    /// (on Lambda the init phase runs with more CPU).
    pub async fn check_table(&self, regional: Regional<'_>) -> Result<(), TableProblem> {
        let table = &self.table;
        let described = match self.client.describe_table().table_name(table).send().await {
            Ok(described) => described,
            Err(err) => {
                let code = err.code().map(str::to_owned);
                let line = one_line(&err);
                tracing::debug!(error = %DisplayErrorContext(&err), "DescribeTable failed");
                return Err(match code.as_deref() {
                    Some("ResourceNotFoundException") => TableProblem::Unusable(format!(
                        "table '{table}' does not exist (create it with the templates, \
                         or `fleetlock create-table` for a test)"
                    )),
                    Some("AccessDeniedException" | "UnrecognizedClientException") => {
                        TableProblem::Unusable(format!(
                            "not allowed to describe table '{table}': {line}"
                        ))
                    }
                    Some(_) => TableProblem::Unusable(format!("table '{table}': {line}")),
                    None => TableProblem::Unreachable(format!(
                        "DynamoDB could not be reached to check table '{table}': {line}"
                    )),
                });
            }
        };
        let key: Vec<(&str, &str)> = described
            .table()
            .map(|t| t.key_schema())
            .unwrap_or_default()
            .iter()
            .map(|k| (k.attribute_name(), k.key_type().as_str()))
            .collect();
        if key != [(KEY_ATTRIBUTE, KeyType::Hash.as_str())] {
            return Err(TableProblem::Unusable(format!(
                "table '{table}' has the key {key:?}; the lock table's key is the partition \
                 key '{KEY_ATTRIBUTE}' (string) alone"
            )));
        }
        let description = described.table();
        let replicas = description.map_or(0, |t| t.replicas().len());
        let consistency = description
            .and_then(|t| t.multi_region_consistency())
            .map(|mode| mode.as_str());
        match global_table_problem(table, replicas, consistency, regional) {
            Some(why) => Err(TableProblem::Unusable(why)),
            None => Ok(()),
        }
    }
}

/// Why a global table cannot hold the locks: in multi-Region eventual
/// consistency (the default mode) a conditional write is checked against
/// this region's replica only, so two regions could each grant the last
/// slot. A table with no replica, or in strong consistency, is fine, unless
/// the function should record under its region and does not know it.
pub fn global_table_problem(
    table: &str,
    replicas: usize,
    consistency: Option<&str>,
    regional: Regional<'_>,
) -> Option<String> {
    if replicas > 0 && consistency == Some("STRONG") && regional == Regional::Yes(None) {
        return Some(format!(
            "table '{table}' is a global table and FLEETLOCK_REGION is not set: this function \
             would neither record its settings nor compare them with the other regions', so \
             regions configured differently could grant more slots than a group has; set \
             FLEETLOCK_REGION to this function's region (the templates do on a global table)"
        ));
    }
    (replicas > 0 && consistency != Some("STRONG")).then(|| {
        format!(
            "table '{table}' is a global table in multi-Region eventual consistency: a \
             conditional write there is checked against this region's replica only, so two \
             regions could each grant the last slot; the locks need multi-Region strong \
             consistency (MRSC), which is chosen when the table is made empty \
             (docs/deploy.md, One lock across regions)"
        )
    })
}

/// The table `create_table` makes, in CloudFormation's property names: the
/// SAM template and the Terraform module are checked against it.
pub fn table_definition() -> serde_json::Value {
    serde_json::json!({
        "AttributeDefinitions": [
            { "AttributeName": KEY_ATTRIBUTE, "AttributeType": KEY_TYPE.as_str() }
        ],
        "KeySchema": [{ "AttributeName": KEY_ATTRIBUTE, "KeyType": KeyType::Hash.as_str() }],
        "BillingMode": BILLING_MODE.as_str(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_global_table_in_eventual_consistency_is_refused_with_why() {
        let serving = Regional::Yes(Some("eu-west-1"));
        assert_eq!(
            global_table_problem("locks", 0, None, Regional::Yes(None)),
            None,
            "one region"
        );
        assert_eq!(
            global_table_problem("locks", 2, Some("STRONG"), serving),
            None,
            "MRSC"
        );
        for mode in [None, Some("EVENTUAL")] {
            let why = global_table_problem("locks", 2, mode, serving).unwrap();
            assert!(
                why.starts_with(
                    "table 'locks' is a global table in multi-Region eventual consistency"
                ) && why.contains("could each grant the last slot"),
                "{why}"
            );
        }
    }

    #[test]
    fn a_function_that_records_per_region_needs_its_region_on_a_global_table() {
        let why = global_table_problem("locks", 2, Some("STRONG"), Regional::Yes(None)).unwrap();
        assert!(
            why.starts_with("table 'locks' is a global table and FLEETLOCK_REGION is not set")
                && why.contains("more slots than a group has"),
            "{why}"
        );
        assert_eq!(
            global_table_problem("locks", 2, Some("STRONG"), Regional::No),
            None,
            "the drained function records nothing per region"
        );
    }
}
