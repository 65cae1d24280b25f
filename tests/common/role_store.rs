//! The DynamoDB store as production calls it, each call signed as the role
//! that makes it on AWS. Shared by tests/suite and tests/model.

use aws_sdk_dynamodb::config::Credentials;
use fleetlock::aws::load_config;
use fleetlock::domain::agreement::{Digests, Recorded};
use fleetlock::domain::input::GroupName;
use fleetlock::domain::lock::GroupRecord;
use fleetlock::domain::store::{Decided, Decision, Forgot, LockStore, Operation, StoreError};
use fleetlock::store::dynamodb::DynamoStore;
use fleetlock::test_support::RequestCounter;

/// A DynamoDB client configured as the functions' own, signing as
/// `principal` (`function.TABLE`, `drained.TABLE`, ...), every request
/// counted by `counter`: what it may do is what the templates give that
/// role, as the IAM enforcer judges it.
pub async fn client_signed_as(
    principal: &str,
    counter: &RequestCounter,
) -> aws_sdk_dynamodb::Client {
    let credentials = Credentials::new(principal, "x", None, None, "fleetlock-tests");
    let config = fleetlock::aws::dynamodb_config(&load_config().await)
        .credentials_provider(credentials)
        .interceptor(counter.clone())
        .build();
    aws_sdk_dynamodb::Client::from_conf(config)
}

/// The DynamoDB store as production calls it: each operation signed as
/// the role that makes it on AWS, as the IAM enforcer in front of DynamoDB
/// Local judges it (the policies the templates ship), never the harness's
/// key. A call outside its role's policy fails here as it would on AWS.
///
/// - `function` (the API): a node's pre-reboot and steady-state, the
///   settings' digests, the groups only `*` covers;
/// - `drained` (the drained function: the hooks and the sweep): a drain's
///   and a return's confirmation, the sweep's stop;
/// - `alarm-pauses`: an alarm's pause and its clearing;
/// - `operator` (a person with the CLI): pause, resume, exclude, include,
///   begin-rollout, forget, and reading the groups (`status`).
pub struct RoleStore {
    function: DynamoStore,
    drained: DynamoStore,
    alarms: DynamoStore,
    operator: DynamoStore,
    /// The tests' own hand (the harness's key): items seeded and read.
    harness: aws_sdk_dynamodb::Client,
}

impl RoleStore {
    /// The store of `table` signed as each role, every request counted by
    /// `counter`.
    pub async fn new(table: &str, counter: &RequestCounter) -> Self {
        let store = |principal: &str| {
            let key = format!("{principal}.{table}");
            async move { DynamoStore::new(client_signed_as(&key, counter).await, table) }
        };
        Self {
            function: store("function").await,
            drained: store("drained").await,
            alarms: store("alarm-pauses").await,
            operator: store("operator").await,
            harness: fleetlock::test_support::counted_client().await.0,
        }
    }

    /// Writes `record` as `group`'s item with the harness's key, as
    /// docs/design.md lays it out ([`crate::item_layout::item_for`]); an
    /// empty record deletes the item (the memory store keeps none).
    pub async fn seed(&self, group: &GroupName, record: &GroupRecord) {
        let table = self.function.table();
        if *record == GroupRecord::default() {
            let key = aws_sdk_dynamodb::types::AttributeValue::S(group.to_string());
            let deleted = self
                .harness
                .delete_item()
                .table_name(table)
                .key("group", key);
            deleted.send().await.unwrap();
        } else {
            let item = crate::item_layout::item_for(group.as_str(), record);
            let put = self
                .harness
                .put_item()
                .table_name(table)
                .set_item(Some(item));
            put.send().await.unwrap();
        }
    }

    pub fn table(&self) -> &str {
        self.function.table()
    }

    /// The check of the table each function makes at its cold start.
    pub async fn check_table(
        &self,
        regional: fleetlock::store::dynamodb::Regional<'_>,
    ) -> Result<(), fleetlock::store::dynamodb::TableProblem> {
        self.function.check_table(regional).await
    }

    /// The same, the function's store asking DynamoDB for the write units
    /// of each write ([`DynamoStore::reporting_write_units`]).
    pub fn reporting_write_units(self) -> Self {
        Self {
            function: self.function.reporting_write_units(),
            ..self
        }
    }
}

impl LockStore for RoleStore {
    /// Each operation signed as the role that makes it in production.
    async fn decide(
        &self,
        group: &GroupName,
        operation: Operation<'_>,
    ) -> Result<Decided<Decision>, StoreError> {
        let role = match operation {
            Operation::Acquire { .. } | Operation::Release { .. } => &self.function,
            Operation::Returned { .. }
            | Operation::Drained { .. }
            | Operation::StopRollout { .. } => &self.drained,
            Operation::PauseForAlarm { .. } | Operation::ClearAlarm { .. } => &self.alarms,
            Operation::BeginRollout { .. }
            | Operation::Pause(_)
            | Operation::Resume
            | Operation::Exclude { .. }
            | Operation::Include { .. } => &self.operator,
        };
        role.decide(group, operation).await
    }

    async fn forget(&self, group: &GroupName) -> Result<Forgot, StoreError> {
        self.operator.forget(group).await
    }

    async fn groups(
        &self,
        only: Option<&GroupName>,
    ) -> Result<Vec<(GroupName, GroupRecord)>, StoreError> {
        self.operator.groups(only).await
    }

    async fn wildcard_groups(&self) -> Result<Vec<GroupName>, StoreError> {
        self.function.wildcard_groups().await
    }

    async fn record_settings(
        &self,
        region: &str,
        digests: &Digests,
    ) -> Result<Recorded, StoreError> {
        self.function.record_settings(region, digests).await
    }

    async fn recorded_settings(&self) -> Result<Recorded, StoreError> {
        self.function.recorded_settings().await
    }

    async fn forget_region(&self, region: &str) -> Result<bool, StoreError> {
        self.operator.forget_region(region).await
    }
}
