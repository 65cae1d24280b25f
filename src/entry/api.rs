//! The API entry point: FleetLock over API Gateway or a Function URL, with
//! the locks in DynamoDB.

use std::process::ExitCode;
use std::sync::Arc;

use crate::aws;
use crate::config::{self, ApiSettings, ApiSettingsError};
use crate::domain::auth::Auth;
use crate::domain::service::FleetLock;
use crate::http::{Api, lambda};
use crate::metrics::EmbeddedMetrics;
use crate::store::dynamodb::Regional;

pub(crate) async fn run() -> ExitCode {
    let settings = match ApiSettings::from_vars(config::process_env) {
        Ok(settings) => settings,
        Err(ApiSettingsError::Invalid(err)) => {
            tracing::error!(error = %err, "invalid configuration");
            return ExitCode::FAILURE;
        }
        Err(missing @ (ApiSettingsError::NoTable | ApiSettingsError::NoAuth)) => {
            tracing::error!("{missing}");
            return ExitCode::FAILURE;
        }
    };
    settings.config.log_mismatches();
    if settings.auth == Auth::Disabled {
        tracing::warn!(
            "FLEETLOCK_AUTH=disabled: anyone who reaches this endpoint can take and release slots"
        );
    }
    let regional = Regional::Yes(settings.config.region.as_deref());
    let store =
        match super::checked_store(&aws::load_config().await, settings.table, regional).await {
            Ok(store) => store,
            Err(why) => {
                tracing::error!(error = %why, "the lock table cannot be used; not starting");
                return ExitCode::FAILURE;
            }
        };
    let config = settings.config;
    let service = FleetLock::new(config.groups, store).with_windows(config.windows);
    let service = match super::agreeing(service, config.region).await {
        Ok(service) => service,
        Err(why) => {
            tracing::error!(error = %why, "not starting");
            return ExitCode::FAILURE;
        }
    };
    super::name_leftovers(&service).await;
    let api =
        Api::new(service, settings.auth).with_metrics(EmbeddedMetrics::new(settings.function));
    super::runtime_stopped(lambda::run(Arc::new(api)).await)
}
