//! The check-config entry point (handler `check-config`): a deployment's code
//! and settings in a function that takes no traffic. A deploy invokes it with
//! `{"action": "check-config"}` before it updates any function that does
//! (SAM: the `ConfigCheck` custom resource; Terraform: an
//! `aws_lambda_invocation`), so a setting the functions would refuse at start
//! fails the deploy, and the previous configuration keeps serving.
//!
//! It checks what the functions check at start, with the same code, and what
//! only AWS can tell: the table, as the API function checks it, and that every
//! alarm `FLEETLOCK_ALARM_PAUSES` names exists. It takes no lock and writes
//! nothing; every problem is listed in the invocation's error.

use super::EntryError;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::aws::{self, cloudwatch::CloudWatch};
use crate::config::{self, ApiSettings, Config};
use crate::domain::alarms::{AlarmState, AlarmStates};
use crate::domain::coverage;
use crate::store::dynamodb::{DynamoStore, Regional, TableProblem};

/// The one action this entry point answers.
pub(crate) const ACTION: &str = "check-config";

/// Checks a deployment's settings against the table and the alarms it names.
pub(crate) struct ConfigChecker<A> {
    dynamodb: aws_sdk_dynamodb::Client,
    alarms: A,
}

impl<A: AlarmStates> ConfigChecker<A> {
    pub(crate) fn new(dynamodb: aws_sdk_dynamodb::Client, alarms: A) -> Self {
        Self { dynamodb, alarms }
    }

    /// One invocation: what the settings give, or every reason the functions
    /// would not start or would misbehave with them.
    pub(crate) async fn handle(
        &self,
        event: &Value,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Value, EntryError> {
        if event.get("action").and_then(Value::as_str) != Some(ACTION) {
            return Err(EntryError::NotACheck);
        }
        // Read once, as the functions read them at start: every error.
        let mut problems = Vec::new();
        let config = Config::checked(&var)
            .map_err(|errors| problems.extend(errors.iter().map(ToString::to_string)))
            .ok();
        let gates = config::alarm_gates(&var)
            .map_err(|err| problems.push(err.to_string()))
            .unwrap_or_default();
        let settings = config.and_then(|config| {
            ApiSettings::from_config(config, &var)
                .map_err(|missing| problems.push(missing.to_string()))
                .ok()
        });
        let Some(settings) = settings.filter(|_| problems.is_empty()) else {
            return Err(EntryError::SettingsRefused(refusal(&problems)));
        };
        // A typo between the groups and the credentials fails the deploy;
        // names far apart may be meant, and are only warned of.
        let (typos, warnings) = coverage::typos_and_warnings(settings.config.mismatches());
        problems.extend(typos);
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        let store = DynamoStore::new(self.dynamodb.clone(), settings.table.clone());
        // As the API and alarm-pauses functions check it at their start.
        match store
            .check_table(Regional::Yes(settings.config.region.as_deref()))
            .await
        {
            Ok(()) => {}
            Err(TableProblem::Unusable(why)) => problems.push(why),
            Err(TableProblem::Unreachable(why)) => problems.push(format!(
                "DynamoDB could not be reached, so the table could not be checked: {why}"
            )),
        }
        let alarms: Vec<String> = gates.alarm_names().map(str::to_owned).collect();
        problems.extend(self.missing_alarms(&alarms).await);
        if !problems.is_empty() {
            return Err(EntryError::SettingsRefused(refusal(&problems)));
        }
        let groups: Vec<String> = settings
            .config
            .groups
            .listed()
            .map(|(group, slots)| format!("{group}={slots}"))
            .chain(settings.config.groups.others().map(|n| format!("*={n}")))
            .collect();
        tracing::info!(
            table = settings.table,
            ?groups,
            ?alarms,
            "the settings check out"
        );
        Ok(json!({
            "ok": true,
            "table": settings.table,
            "groups": groups,
            "alarms": alarms,
            "warnings": warnings,
        }))
    }
}

impl<A: AlarmStates> ConfigChecker<A> {
    /// Each alarm the settings name that does not exist here, as a problem
    /// (or that they could not be read).
    async fn missing_alarms(&self, alarms: &[String]) -> Vec<String> {
        if alarms.is_empty() {
            return Vec::new();
        }
        match self.alarms.states(alarms).await {
            Ok(states) => (states.iter())
                .filter(|(_, state)| **state == AlarmState::Missing)
                .map(|(alarm, _)| {
                    format!(
                        "alarm '{alarm}' (FLEETLOCK_ALARM_PAUSES) does not exist in this \
                         region: its pause would guard nothing"
                    )
                })
                .collect(),
            Err(why) => vec![format!(
                "the alarms FLEETLOCK_ALARM_PAUSES names could not be read: {why}"
            )],
        }
    }
}

/// The invocation's error: every problem, in one line a deploy shows.
fn refusal(problems: &[String]) -> String {
    let refusal = format!(
        "the functions would refuse these settings: {}",
        problems.join("; ")
    );
    tracing::error!(error = %refusal, "the settings do not check out");
    refusal
}

/// Runs the entry point: every invocation checks the settings as they are.
pub(crate) async fn run() -> ExitCode {
    let aws = aws::load_config().await;
    let checker = Arc::new(ConfigChecker::new(
        aws::dynamodb_client(&aws),
        CloudWatch::new(aws::cloudwatch_client(&aws)),
    ));
    let result = super::run_json(move |event| {
        let checker = Arc::clone(&checker);
        async move { checker.handle(&event, config::process_env).await }
    })
    .await;
    super::runtime_stopped(result)
}
