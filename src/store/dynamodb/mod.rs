//! The DynamoDB adapter: the only module that knows `AttributeValue`.
//!
//! # Item design
//! One item per group, partition key `group` (S):
//!
//! | attribute      | type | meaning                                             |
//! |----------------|------|-----------------------------------------------------|
//! | `group`        | S    | the group name (partition key)                      |
//! | `holder_count` | N    | how many `h:*` attributes the item has              |
//! | `h:<id>`       | N    | one per holder: when it took its slot, epoch ms     |
//! | `slots`        | N    | the slot count applied at the last grant (for people) |
//! | `released_at`  | N    | the arrival of the latest release that freed a slot, epoch ms |
//! | `paused`       | M    | a person's pause: `reason`, `since` (epoch ms), `by` |
//! | `pause_version`| N    | how many times a person paused or resumed the group |
//! | `alarms`       | SS   | the gating alarms in ALARM that pause the group |
//!
//! Each holder is a top-level attribute rather than an entry of a map, so the
//! first request of a new group needs no existing parent: `SET h:<id>` and
//! `ADD holder_count 1` both create what is missing. Every protocol call is one
//! conditional `UpdateItem`; DynamoDB serialises writes to an item, so the
//! condition sees every earlier grant and no slot is ever given twice. A failed
//! condition returns the item as it was (`ALL_OLD`), from which the pure rules
//! tell a holder asking again (granted) from a full group (refused) without a
//! second request. A retried write is harmless for the same reason: the retry
//! finds the holder already there.
//!
//! Groups that only `*` covers are counted: their names are kept in a string
//! set `names` on one more item, keyed [`WILDCARD_KEY`], which no group name
//! can be (`~` is not allowed in one). The first grant of such a group finds
//! no item (the write asks `attribute_exists(group)`), adds the name to the
//! set under `size(names) < :limit`, then writes again: three requests, once
//! per group; every later call is one request again.
//!
//! Versions up to 0.1 named holders `holder:<id>`. The shorter prefix keeps an
//! item of 32-hex ids 5 bytes a holder smaller (a write unit is 1 KB of the
//! item); such holders are still read, kept, counted and released, and every
//! condition checks both names, so a node holding a slot under the old name
//! never gets a second one.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_config::SdkConfig;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::config::Intercept;
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, RuntimeComponents};
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::error::{BoxError, DisplayErrorContext, SdkError};
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, ConsumedCapacity, KeySchemaElement, KeyType,
    ReturnConsumedCapacity, ReturnValue, ReturnValuesOnConditionCheckFailure, ScalarAttributeType,
};

use crate::aws::{self, OperationLog};
use crate::domain::input::{GroupName, NodeId, PauseReason};
use crate::domain::lock::{Acquire, GroupRules, Pause, PersonPause, Release, Semaphore, Timestamp};
use crate::domain::store::{Changed, Decided, Forgot, GroupRecord, LockStore, StoreError};

pub const KEY_ATTRIBUTE: &str = "group";
const KEY_TYPE: ScalarAttributeType = ScalarAttributeType::S;
const BILLING_MODE: BillingMode = BillingMode::PayPerRequest;
const COUNT_ATTRIBUTE: &str = "holder_count";
const SLOTS_ATTRIBUTE: &str = "slots";
const PAUSED_ATTRIBUTE: &str = "paused";
const ALARMS_ATTRIBUTE: &str = "alarms";
const RELEASED_ATTRIBUTE: &str = "released_at";
/// Counts a person's pauses and resumes: each writes only on the count it
/// read, so a late one never undoes a newer one.
const PAUSE_VERSION_ATTRIBUTE: &str = "pause_version";
const HOLDER_PREFIX: &str = "h:";
/// The key of the item that lists the groups only `*` covers.
pub const WILDCARD_KEY: &str = "~wildcard-groups";
const WILDCARD_NAMES_ATTRIBUTE: &str = "names";
/// The holder prefix of version 0.1 items: read and released, never written.
const LEGACY_HOLDER_PREFIX: &str = "holder:";

/// A DynamoDB client on the shared configuration, with each request's
/// operation in the debug log.
pub fn client(aws: &SdkConfig) -> Client {
    let config = aws_sdk_dynamodb::config::Builder::from(aws)
        .interceptor(OperationLog)
        .build();
    Client::from_conf(config)
}

/// A client configured as in production, with a [`RequestCounter`] on it: the
/// benchmark and the tests count the DynamoDB requests of each protocol call.
pub async fn counted_client() -> (Client, RequestCounter) {
    let counter = RequestCounter::default();
    let config = aws_sdk_dynamodb::config::Builder::from(&aws::load_config().await)
        .interceptor(OperationLog)
        .interceptor(counter.clone())
        .build();
    (Client::from_conf(config), counter)
}

pub struct DynamoStore {
    client: Client,
    table: String,
    consumed_capacity: ReturnConsumedCapacity,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            consumed_capacity: ReturnConsumedCapacity::None,
        }
    }

    /// Asks DynamoDB for the write units of every write it lets through
    /// ([`Decided::write_units`]): for the benchmark and the tests. Off in
    /// production, where it would make DynamoDB do more for each call.
    pub fn reporting_write_units(mut self) -> Self {
        self.consumed_capacity = ReturnConsumedCapacity::Total;
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

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

impl DynamoStore {
    /// One `DescribeTable` at start-up: the table exists with this project's
    /// key. It also opens the connection to DynamoDB before the first request
    /// (on Lambda the init phase runs with more CPU).
    pub async fn check_table(&self) -> Result<(), TableProblem> {
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
        Ok(())
    }
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

/// The write units DynamoDB billed for a write that succeeded. A refused
/// conditional write is billed too, by the same item size, but DynamoDB does
/// not report it.
fn write_units(consumed: Option<&ConsumedCapacity>) -> Option<f64> {
    consumed.and_then(|c| c.write_capacity_units.or(c.capacity_units))
}

/// One readable line for people; the SDK's whole error chain goes to the
/// debug log (`RUST_LOG=debug`).
fn unavailable<E: std::error::Error + 'static>(err: E) -> StoreError {
    tracing::debug!(error = %DisplayErrorContext(&err), "DynamoDB request failed");
    StoreError::Unavailable(one_line(&err))
}

/// The outermost and the innermost cause of an error, once each: "dispatch
/// failure: Connection refused (os error 111)", "service error:
/// ResourceNotFoundException: …".
fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut root = err;
    while let Some(source) = root.source() {
        root = source;
    }
    let (top, root) = (err.to_string(), root.to_string());
    if top == root || top.contains(&root) {
        top
    } else {
        format!("{top}: {root}")
    }
}

fn holder_attribute(id: &NodeId) -> String {
    format!("{HOLDER_PREFIX}{id}")
}

fn legacy_holder_attribute(id: &NodeId) -> String {
    format!("{LEGACY_HOLDER_PREFIX}{id}")
}

fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn read_number(
    item: &HashMap<String, AttributeValue>,
    name: &str,
) -> Result<Option<u64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(n)) => n
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("attribute {name} is not a whole number"))),
        Some(_) => Err(StoreError::Corrupt(format!(
            "attribute {name} is not a number"
        ))),
    }
}

impl TryFrom<&HashMap<String, AttributeValue>> for GroupRecord {
    type Error = StoreError;

    fn try_from(item: &HashMap<String, AttributeValue>) -> Result<Self, StoreError> {
        let mut holders = Vec::new();
        for name in item.keys() {
            let raw_id = name
                .strip_prefix(HOLDER_PREFIX)
                .or_else(|| name.strip_prefix(LEGACY_HOLDER_PREFIX));
            if let Some(raw_id) = raw_id {
                let id = NodeId::stored(raw_id)
                    .map_err(|_| StoreError::Corrupt(format!("invalid holder id {raw_id:?}")))?;
                let at = read_number(item, name)?.unwrap_or_default();
                holders.push((id, Timestamp(at)));
            }
        }
        let count = read_number(item, COUNT_ATTRIBUTE)?.unwrap_or(0);
        if count != holders.len() as u64 {
            return Err(StoreError::Corrupt(format!(
                "{COUNT_ATTRIBUTE} is {count} but {} holders are stored",
                holders.len()
            )));
        }
        let slots =
            read_number(item, SLOTS_ATTRIBUTE)?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let person = match item.get(PAUSED_ATTRIBUTE) {
            None => None,
            Some(AttributeValue::M(pause)) => Some(read_person_pause(pause)?),
            Some(_) => {
                return Err(StoreError::Corrupt(format!(
                    "{PAUSED_ATTRIBUTE} is not a map"
                )));
            }
        };
        let alarms = match item.get(ALARMS_ATTRIBUTE) {
            None => BTreeSet::new(),
            Some(AttributeValue::Ss(names)) => names.iter().cloned().collect(),
            Some(_) => {
                return Err(StoreError::Corrupt(format!(
                    "{ALARMS_ATTRIBUTE} is not a string set"
                )));
            }
        };
        Ok(GroupRecord {
            holders: Semaphore::from_holders(holders),
            pause: Pause { person, alarms },
            last_release: read_number(item, RELEASED_ATTRIBUTE)?.map(Timestamp),
            slots,
        })
    }
}

/// A group's state from an image of its item in DynamoDB's JSON (`{"S": ..}`,
/// `{"N": ..}`), as a stream record carries it; `None` (no image) is a group
/// with no item. The same reading as every other, so a stream sees exactly
/// what a decision saw.
pub fn record_from_image(image: Option<&serde_json::Value>) -> Result<GroupRecord, StoreError> {
    let Some(image) = image else {
        return Ok(GroupRecord::default());
    };
    record_of(Some(&item_from_json(image)?))
}

/// A person's pause or resume writes only on the pause version it read.
const VERSION_AS_READ: &str = "(attribute_not_exists(#version) OR #version = :seen)";

/// The item that lists the groups only `*` covers: not a group.
fn is_wildcard_list(item: &HashMap<String, AttributeValue>) -> bool {
    matches!(item.get(KEY_ATTRIBUTE), Some(AttributeValue::S(key)) if key == WILDCARD_KEY)
}

/// The group an image's keys (or the image itself) names; `None` for the
/// item that lists the groups only `*` covers, which is no group.
pub fn group_from_keys(keys: &serde_json::Value) -> Result<Option<GroupName>, StoreError> {
    match item_from_json(keys)?.get(KEY_ATTRIBUTE) {
        Some(AttributeValue::S(name)) if name == WILDCARD_KEY => Ok(None),
        Some(AttributeValue::S(name)) => GroupName::parse(name)
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("invalid group name {name:?}"))),
        _ => Err(StoreError::Corrupt(format!(
            "the key has no string attribute {KEY_ATTRIBUTE:?}"
        ))),
    }
}

fn item_from_json(item: &serde_json::Value) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let serde_json::Value::Object(item) = item else {
        return Err(StoreError::Corrupt("an image is not a JSON object".into()));
    };
    item.iter()
        .map(|(name, value)| {
            attribute_from_json(value)
                .map(|value| (name.clone(), value))
                .map_err(|why| StoreError::Corrupt(format!("attribute {name}: {why}")))
        })
        .collect()
}

/// One attribute in DynamoDB's JSON: an object with exactly one type key.
fn attribute_from_json(value: &serde_json::Value) -> Result<AttributeValue, String> {
    use serde_json::Value;
    let Value::Object(typed) = value else {
        return Err("not a typed value".into());
    };
    let mut entries = typed.iter();
    let (Some((kind, inner)), None) = (entries.next(), entries.next()) else {
        return Err("not exactly one type key".into());
    };
    let text = |v: &Value| v.as_str().map(str::to_owned).ok_or("expected a string");
    let texts = |v: &Value| -> Result<Vec<String>, String> {
        v.as_array()
            .ok_or("expected a list")?
            .iter()
            .map(|v| text(v).map_err(String::from))
            .collect()
    };
    let blob = |v: &Value| -> Result<aws_sdk_dynamodb::primitives::Blob, String> {
        use base64::Engine;
        let raw = text(v)?;
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map(aws_sdk_dynamodb::primitives::Blob::new)
            .map_err(|_| "invalid base64".into())
    };
    Ok(match (kind.as_str(), inner) {
        ("S", v) => AttributeValue::S(text(v)?),
        ("N", v) => AttributeValue::N(text(v)?),
        ("B", v) => AttributeValue::B(blob(v)?),
        ("SS", v) => AttributeValue::Ss(texts(v)?),
        ("NS", v) => AttributeValue::Ns(texts(v)?),
        ("BS", v) => AttributeValue::Bs(
            v.as_array()
                .ok_or("expected a list")?
                .iter()
                .map(blob)
                .collect::<Result<_, _>>()?,
        ),
        ("BOOL", Value::Bool(b)) => AttributeValue::Bool(*b),
        ("NULL", _) => AttributeValue::Null(true),
        ("M", Value::Object(_)) => {
            AttributeValue::M(item_from_json(inner).map_err(|e| e.to_string())?)
        }
        ("L", Value::Array(items)) => AttributeValue::L(
            items
                .iter()
                .map(attribute_from_json)
                .collect::<Result<_, _>>()?,
        ),
        (other, _) => return Err(format!("unknown or malformed type {other:?}")),
    })
}

fn read_person_pause(pause: &HashMap<String, AttributeValue>) -> Result<PersonPause, StoreError> {
    let text = |name: &str| match pause.get(name) {
        Some(AttributeValue::S(text)) => Ok(text.clone()),
        _ => Err(StoreError::Corrupt(format!(
            "{PAUSED_ATTRIBUTE}.{name} is missing or not a string"
        ))),
    };
    let reason = PauseReason::parse(&text("reason")?)
        .map_err(|why| StoreError::Corrupt(format!("{PAUSED_ATTRIBUTE}.reason: {why}")))?;
    let since = read_number(pause, "since")?
        .ok_or_else(|| StoreError::Corrupt(format!("{PAUSED_ATTRIBUTE}.since is missing")))?;
    Ok(PersonPause {
        reason,
        since: Timestamp(since),
        by: text("by")?,
    })
}

fn person_pause_value(pause: &PersonPause) -> AttributeValue {
    AttributeValue::M(HashMap::from([
        (
            "reason".to_owned(),
            AttributeValue::S(pause.reason.to_string()),
        ),
        ("since".to_owned(), number(pause.since.0)),
        ("by".to_owned(), AttributeValue::S(pause.by.clone())),
    ]))
}

fn record_of(item: Option<&HashMap<String, AttributeValue>>) -> Result<GroupRecord, StoreError> {
    item.map_or_else(|| Ok(GroupRecord::default()), GroupRecord::try_from)
}

/// What a conditional write did, with the item after it (applied) or as the
/// condition saw it (refused; `None` when there was no item).
enum Written {
    Applied(GroupRecord, Option<f64>),
    /// The write landed, but the item it left cannot be read: stored data
    /// the condition could not see (a holder count below the holders, an
    /// id no version writes).
    AppliedUnreadable(StoreError),
    Refused(Option<GroupRecord>),
}

impl Written {
    /// `applied` or `refused` as the outcome, with the item and the units.
    fn decided<T>(self, applied: T, refused: T) -> Result<Decided<T>, StoreError> {
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

impl DynamoStore {
    /// Sends one conditional `UpdateItem` on the group's item, asking for the
    /// item after the write, or as it was when the condition refused it.
    async fn update(
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
}

fn decided<T>(outcome: T, group: GroupRecord) -> Decided<T> {
    Decided {
        outcome,
        group,
        write_units: None,
    }
}

impl DynamoStore {
    /// The one conditional write that takes a slot; with `item_exists`, only
    /// on a group that has an item already.
    fn acquire_request(
        &self,
        id: &NodeId,
        rules: GroupRules,
        now: Timestamp,
        item_exists: bool,
    ) -> UpdateItemFluentBuilder {
        // A missing count means a group never used: free, unless it has no slots.
        let room = if rules.slots > 0 {
            "(attribute_not_exists(#count) OR #count < :slots)"
        } else {
            "#count < :slots"
        };
        let mut condition = format!(
            "attribute_not_exists(#holder) AND attribute_not_exists(#legacy) AND {room} \
             AND attribute_not_exists(#paused) AND attribute_not_exists(#alarms)"
        );
        let mut request = self
            .client
            .update_item()
            .update_expression("SET #holder = :now, #slots = :slots ADD #count :one")
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#legacy", legacy_holder_attribute(id))
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_names("#slots", SLOTS_ATTRIBUTE)
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE)
            .expression_attribute_names("#alarms", ALARMS_ATTRIBUTE)
            .expression_attribute_values(":now", number(now.0))
            .expression_attribute_values(":slots", number(rules.slots.into()))
            .expression_attribute_values(":one", number(1));
        // The settle period is over when the last release is at least
        // `settle` before now; the time is a value, never in the expression.
        // With no settle time this still refuses a request that arrived
        // before the latest release, so that its write, landing late, cannot
        // give a slot back to a node that has since released it.
        condition.push_str(" AND (attribute_not_exists(#released) OR #released <= :settled)");
        request = request
            .expression_attribute_names("#released", RELEASED_ATTRIBUTE)
            .expression_attribute_values(":settled", number(now.minus(rules.settle).0));
        if item_exists {
            condition.push_str(" AND attribute_exists(#key)");
            request = request.expression_attribute_names("#key", KEY_ATTRIBUTE);
        }
        request.condition_expression(condition)
    }

    /// Removes the grant of `id` written at `granted` (and only that one),
    /// after the write landed on an item that cannot be read. A failure is
    /// logged: the node then holds a slot it was told it did not get, which
    /// blocks the group (never over-grants it) until an operator repairs it.
    async fn take_back(&self, group: &GroupName, id: &NodeId, granted: Timestamp) {
        let request = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(group.to_string()))
            .update_expression("REMOVE #holder ADD #count :minus_one")
            .condition_expression("#holder = :granted")
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_values(":granted", number(granted.0))
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()));
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
    async fn read_pause_version(
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
    async fn person_pause_write(
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
    /// no later than `now`; with `stamp`, it also records `now` as the last
    /// release, only if no later release is recorded.
    fn release_request(&self, id: &NodeId, now: Timestamp, stamp: bool) -> UpdateItemFluentBuilder {
        let held = "((attribute_exists(#holder) AND #holder <= :now) \
                    OR (attribute_exists(#legacy) AND #legacy <= :now))";
        let request = self
            .client
            .update_item()
            .expression_attribute_names("#holder", holder_attribute(id))
            .expression_attribute_names("#legacy", legacy_holder_attribute(id))
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
            .expression_attribute_values(":now", number(now.0))
            .expression_attribute_values(":minus_one", AttributeValue::N("-1".into()));
        if stamp {
            request
                .update_expression(
                    "REMOVE #holder, #legacy SET #released = :now ADD #count :minus_one",
                )
                .condition_expression(format!(
                    "{held} AND (attribute_not_exists(#released) OR #released <= :now)"
                ))
                .expression_attribute_names("#released", RELEASED_ATTRIBUTE)
        } else {
            request
                .update_expression("REMOVE #holder, #legacy ADD #count :minus_one")
                .condition_expression(held)
        }
    }

    /// Counts a group only `*` covers, unless `limit` such groups are
    /// counted already; `false` then. Counting a counted group again is
    /// harmless (a set), so a retried or repeated call changes nothing.
    async fn count_wildcard_group(
        &self,
        group: &GroupName,
        limit: u32,
    ) -> Result<bool, StoreError> {
        let request = self
            .wildcard_list_write(group, "ADD #names :group")
            .condition_expression(
                "contains(#names, :name) OR attribute_not_exists(#names) OR size(#names) < :limit",
            )
            .expression_attribute_values(":limit", number(limit.into()));
        self.conditional(request).await
    }

    /// No longer counts `group` among those only `*` covers; `false` when it
    /// was not counted.
    async fn uncount_wildcard_group(&self, group: &GroupName) -> Result<bool, StoreError> {
        let request = self
            .wildcard_list_write(group, "DELETE #names :group")
            .condition_expression("contains(#names, :name)");
        self.conditional(request).await
    }

    /// A write to the list of groups only `*` covers, naming `group`.
    fn wildcard_list_write(&self, group: &GroupName, update: &str) -> UpdateItemFluentBuilder {
        self.client
            .update_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(WILDCARD_KEY.into()))
            .update_expression(update)
            .expression_attribute_names("#names", WILDCARD_NAMES_ATTRIBUTE)
            .expression_attribute_values(":group", AttributeValue::Ss(vec![group.to_string()]))
            .expression_attribute_values(":name", AttributeValue::S(group.to_string()))
    }

    /// Sends a conditional write whose outcome is only whether it applied.
    async fn conditional(&self, request: UpdateItemFluentBuilder) -> Result<bool, StoreError> {
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
    async fn read_item(
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

    /// The groups only `*` covers that are counted, sorted.
    pub async fn wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
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
                    self.acquire_request(id, rules, now, needs_item.is_some()),
                )
                .await?;
            let current = match written {
                Written::Applied(group, write_units) => {
                    return Ok(Decided {
                        outcome: Acquire::Granted,
                        group,
                        write_units,
                    });
                }
                Written::AppliedUnreadable(err) => {
                    // The answer is a 500, so the node will not reboot: the
                    // slot it was just written must not stay held.
                    self.take_back(group, id, now).await;
                    return Err(err);
                }
                Written::Refused(current) => current,
            };
            if let (None, Some(limit)) = (&current, needs_item.take()) {
                // A new group: counted first, unless it would be refused anyway.
                let outcome = GroupRecord::default().decide_acquire(id, rules, now);
                if outcome != Acquire::Granted {
                    return Ok(decided(outcome, GroupRecord::default()));
                }
                if !self.count_wildcard_group(group, limit).await? {
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
                Acquire::Granted => Err(StoreError::Corrupt(
                    "the conditional write was refused although a slot is free".into(),
                )),
                outcome => Ok(decided(outcome, current)),
            };
        }
    }

    async fn release(
        &self,
        group: &GroupName,
        id: &NodeId,
        now: Timestamp,
    ) -> Result<Decided<Release>, StoreError> {
        // Frees the slot only if it was granted before this request arrived,
        // and starts the settle period again only if no later release did.
        let written = self
            .update(group, self.release_request(id, now, true))
            .await?;
        let Written::Refused(current) = written else {
            return written.decided(Release::Released, Release::NotHeld);
        };
        let current = current.unwrap_or_default();
        if current.clone().release(id, now) == Release::NotHeld {
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

    async fn pause(
        &self,
        group: &GroupName,
        pause: PersonPause,
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

    async fn resume(&self, group: &GroupName) -> Result<Decided<Changed>, StoreError> {
        let (current, seen) = self.read_pause_version(group).await?;
        if current.pause.person.is_none() {
            return Ok(decided(Changed::AlreadySo, current));
        }
        let request = self
            .client
            .update_item()
            .update_expression("REMOVE #paused SET #version = :next")
            .condition_expression(format!("attribute_exists(#paused) AND {VERSION_AS_READ}"))
            .expression_attribute_names("#paused", PAUSED_ATTRIBUTE);
        self.person_pause_write(group, request, seen, |now| now.pause.person.is_none())
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
        let deleted = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(KEY_ATTRIBUTE, AttributeValue::S(group.to_string()))
            .condition_expression(
                "(attribute_not_exists(#count) OR #count = :zero) \
                 AND attribute_not_exists(#paused) AND attribute_not_exists(#alarms)",
            )
            .expression_attribute_names("#count", COUNT_ATTRIBUTE)
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
                    return Ok(Forgot::Kept(record_of(refused.item())?));
                }
                other => return Err(unavailable(other)),
            },
            Err(err) => return Err(unavailable(err)),
        };
        let counted = self.uncount_wildcard_group(group).await?;
        Ok(match (removed, counted) {
            (true, counted) => Forgot::Removed { counted },
            (false, true) => Forgot::Uncounted,
            (false, false) => Forgot::NothingStored,
        })
    }

    async fn groups(
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
}

/// Counts the HTTP requests a client sends to DynamoDB, retries included: the
/// benchmark and the tests use it to show one request per protocol call.
#[derive(Clone, Debug, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
