//! The Lambda entry points. The handler name (`_HANDLER`) picks one before
//! any setting is read; each reads its own settings ([`crate::config`]) and
//! builds its own clients ([`crate::aws`]).

pub(crate) mod alarm_pauses;
pub(crate) mod api;
pub(crate) mod check_config;
pub mod drained;
pub mod slot_events;

use std::process::ExitCode;
use std::sync::Arc;

use aws_config::SdkConfig;
use lambda_http::service_fn;

use crate::aws;
use crate::config;
use crate::config::ConfigError;
use crate::domain::drain::ActionError;
use crate::domain::store::StoreError;
use crate::logging;
use crate::store::dynamodb::{DynamoStore, Regional, TableProblem};

/// Why an entry point did not start, or an invocation got no answer: what
/// the log says, and what Lambda reports as the invocation's error.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error(
        "unknown Lambda handler {0:?}; the handler names the entry point: {names}",
        names = EntryPoint::NAMES.join(", ")
    )]
    UnknownHandler(String),
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The table is missing, or its key is not this server's.
    #[error("{0}")]
    Table(String),
    #[error("the settings could not be recorded for region {region}: {source}")]
    NotRecorded { region: String, source: StoreError },
    /// The lock store failed: what could not be done, then its words.
    #[error("{what}: {source}")]
    Store {
        what: &'static str,
        source: StoreError,
    },
    /// The lock store failed, in its own words only.
    #[error(transparent)]
    StoreFailed(#[from] StoreError),
    #[error("invalid action: {0}")]
    InvalidAction(#[from] ActionError),
    #[error(
        "no sweep without a drain or return gate or a canary: FLEETLOCK_DRAIN, \
         FLEETLOCK_RETURN, FLEETLOCK_CANARY and FLEETLOCK_METRICS_SERVICE are unset on this \
         function"
    )]
    NoSweep,
    /// The alarms' states could not be read, in CloudWatch's words.
    #[error("{0}")]
    Alarms(String),
    #[error("alarm pauses not written: {}", .0.join(", "))]
    PausesNotWritten(Vec<String>),
    #[error(
        "this function only checks the deployment's settings: invoke it with \
         {{\"action\": \"{action}\"}}",
        action = check_config::ACTION
    )]
    NotACheck,
    /// The deployment's settings: every problem, in one line.
    #[error("{0}")]
    SettingsRefused(String),
}

/// The service on a global table (`FLEETLOCK_REGION`): it records this
/// region's settings (one write) and says which regions differ, which it
/// refuses to serve those groups with. Without a region, the service as it
/// is.
pub(crate) async fn agreeing<S: crate::domain::store::LockStore>(
    service: crate::domain::service::FleetLock<S>,
    region: Option<String>,
) -> Result<crate::domain::service::FleetLock<S>, EntryError> {
    let Some(region) = region else {
        return Ok(service);
    };
    // Who records: the function's name (a second stack in this region on
    // this table is then compared with this one), or `fleetlock serve`.
    let writer =
        std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "fleetlock serve".to_owned());
    let service = service
        .agreeing(region.clone(), crate::domain::service::AGREEMENT_REFRESH)
        .recorded_as(writer);
    let differing = service
        .record_settings()
        .await
        .map_err(|source| EntryError::NotRecorded {
            region: region.clone(),
            source,
        })?;
    for (other, group) in differing {
        tracing::error!(
            group,
            region = other,
            "settings differ: region {other} serves group '{group}' with other settings on the \
             same table; neither grants it until both serve the same"
        );
    }
    tracing::info!(
        region,
        "settings recorded; every region's are compared before each call"
    );
    Ok(service)
}

/// Names, at start, each item `*` made whose name these settings read
/// otherwise now ([`crate::domain::service::FleetLock::leftover_groups`]),
/// with the commands that clear it. A failed read is said and passed over:
/// the service serves without it.
pub(crate) async fn name_leftovers<S: crate::domain::store::LockStore>(
    service: &crate::domain::service::FleetLock<S>,
) {
    match service.leftover_groups().await {
        Ok(leftovers) => {
            for (group, why) in leftovers {
                tracing::warn!(
                    group = %group,
                    "group '{group}' has an item '*' made before the configuration named it \
                     otherwise: {why}; whoever holds a slot there is out of service and counted \
                     in no group's slots: see 'fleetlock status --group {group}', release each \
                     holder once it is back, then 'fleetlock forget --group {group}'"
                );
            }
        }
        Err(err) => tracing::warn!(
            error = %err,
            "the groups '*' made could not be read to find those named otherwise now"
        ),
    }
}

/// Runs the entry point the handler names, until the runtime stops.
pub async fn run() -> ExitCode {
    logging::init(true);
    let handler = config::lambda_handler(config::process_env);
    let entry = match EntryPoint::from_handler(handler.as_deref()) {
        Ok(entry) => entry,
        Err(why) => {
            tracing::error!(error = %why, "not starting");
            return ExitCode::FAILURE;
        }
    };
    tracing::info!(entry = entry.name(), handler, "starting");
    match entry {
        EntryPoint::Api => api::run().await,
        EntryPoint::SlotEvents => slot_events::run().await,
        EntryPoint::AlarmPauses => alarm_pauses::run().await,
        EntryPoint::Drained => drained::run().await,
        EntryPoint::CheckConfig => check_config::run().await,
    }
}

/// What a Lambda function built from this binary does, from its handler name
/// (`_HANDLER`): chosen before anything else, since each entry point needs
/// its own settings and clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EntryPoint {
    /// The FleetLock API (`api`, or `bootstrap`, which both templates set).
    Api,
    /// Slot events from the table's stream (`slot-events`).
    SlotEvents,
    /// Pauses from CloudWatch alarms (`alarm-pauses`).
    AlarmPauses,
    /// Drain confirmations from hooks, as JSON actions (`drained`).
    Drained,
    /// A deploy's check of its settings before any function serves them
    /// (`check-config`).
    CheckConfig,
}

impl EntryPoint {
    pub(crate) const NAMES: [&str; 5] = [
        "api",
        "slot-events",
        "alarm-pauses",
        "drained",
        "check-config",
    ];

    pub(crate) fn from_handler(handler: Option<&str>) -> Result<Self, EntryError> {
        match handler.map(str::trim) {
            None | Some("" | "api" | "bootstrap") => Ok(EntryPoint::Api),
            Some("slot-events") => Ok(EntryPoint::SlotEvents),
            Some("alarm-pauses") => Ok(EntryPoint::AlarmPauses),
            Some("drained") => Ok(EntryPoint::Drained),
            Some("check-config") => Ok(EntryPoint::CheckConfig),
            Some(other) => Err(EntryError::UnknownHandler(other.to_owned())),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            EntryPoint::Api => "api",
            EntryPoint::SlotEvents => "slot-events",
            EntryPoint::AlarmPauses => "alarm-pauses",
            EntryPoint::Drained => "drained",
            EntryPoint::CheckConfig => "check-config",
        }
    }
}

/// Serves events of any other shape: `handle` gets each event's JSON and
/// answers JSON, or an error that Lambda reports as the invocation's.
pub(crate) async fn run_json<F, Fut>(handle: F) -> Result<(), lambda_http::Error>
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<serde_json::Value, EntryError>> + Send,
{
    let handle = Arc::new(handle);
    lambda_http::lambda_runtime::run(service_fn(
        move |event: lambda_http::LambdaEvent<serde_json::Value>| {
            let handle = Arc::clone(&handle);
            async move {
                handle(event.payload)
                    .await
                    .map_err(lambda_http::Error::from)
            }
        },
    ))
    .await
}

/// How the process ends when the Lambda runtime loop returns.
fn runtime_stopped(result: Result<(), lambda_http::Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            tracing::error!(error = %err, "lambda runtime stopped");
            ExitCode::FAILURE
        }
    }
}

/// The store of a serving process, after one check of its table: a missing
/// table or a wrong key stops the start; an unreachable DynamoDB does not (it
/// is an outage, answered `store_unavailable` until it ends, with no restart).
pub(crate) async fn checked_store(
    aws: &SdkConfig,
    table: String,
    regional: Regional<'_>,
) -> Result<DynamoStore, EntryError> {
    let store = DynamoStore::new(aws::dynamodb_client(aws), table);
    let started = std::time::Instant::now();
    let checked = store.check_table(regional).await;
    // A cold start's one AWS call: its share of the init, in the log.
    let check_ms = started.elapsed().as_secs_f64() * 1000.0;
    match checked {
        Ok(()) => {
            tracing::info!(table = store.table(), check_ms, "table checked");
            Ok(store)
        }
        Err(TableProblem::Unreachable(why)) => {
            tracing::warn!(error = %why, "starting anyway; calls answer 503 until DynamoDB answers");
            Ok(store)
        }
        Err(TableProblem::Unusable(why)) => Err(EntryError::Table(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_name_chooses_the_entry_point() {
        assert_eq!(EntryPoint::from_handler(None), Ok(EntryPoint::Api));
        assert_eq!(
            EntryPoint::from_handler(Some("bootstrap")),
            Ok(EntryPoint::Api)
        );
        for name in EntryPoint::NAMES {
            assert_eq!(
                EntryPoint::from_handler(Some(name)).map(EntryPoint::name),
                Ok(name)
            );
        }
        let unknown = EntryPoint::from_handler(Some("events")).unwrap_err();
        assert!(unknown.to_string().contains("slot-events"), "{unknown}");
    }
}
