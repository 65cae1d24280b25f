//! The alarm-pauses entry point: on a "CloudWatch Alarm State Change" event
//! for a gating alarm, and on a schedule, read the gating alarms' states
//! (DescribeAlarms) and make the table's alarm pauses match them
//! ([`crate::domain::alarms::reconcile`]).
//!
//! The event only says "look now": events can come twice, out of order or
//! not at all, so every decision comes from the alarms' current states, and
//! the schedule repairs what a lost event left behind.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use aws_sdk_cloudwatch::types::AlarmType;
use serde_json::{Value, json};

use crate::domain::alarms::{AlarmGates, AlarmState, Change, reconcile};
use crate::domain::input::GroupName;
use crate::domain::store::LockStore;

/// Names per DescribeAlarms call: CloudWatch's limit.
const NAMES_PER_CALL: usize = 100;

/// Where alarm states come from: CloudWatch in production. Every name asked
/// for is in the answer; one CloudWatch did not return is `Missing`.
pub trait AlarmStates: Send + Sync + 'static {
    fn states(
        &self,
        names: &[String],
    ) -> impl Future<Output = Result<BTreeMap<String, AlarmState>, String>> + Send;
}

pub struct CloudWatch {
    client: aws_sdk_cloudwatch::Client,
}

impl CloudWatch {
    pub fn new(client: aws_sdk_cloudwatch::Client) -> Self {
        Self { client }
    }
}

/// A CloudWatch client on the shared configuration, with the debug log.
pub fn client(aws: &aws_config::SdkConfig) -> aws_sdk_cloudwatch::Client {
    let config = aws_sdk_cloudwatch::config::Builder::from(aws)
        .interceptor(crate::aws::OperationLog)
        .build();
    aws_sdk_cloudwatch::Client::from_conf(config)
}

impl AlarmStates for CloudWatch {
    async fn states(&self, names: &[String]) -> Result<BTreeMap<String, AlarmState>, String> {
        let mut states: BTreeMap<String, AlarmState> = names
            .iter()
            .map(|name| (name.clone(), AlarmState::Missing))
            .collect();
        for chunk in names.chunks(NAMES_PER_CALL) {
            let mut next_token = None;
            loop {
                let page = self
                    .client
                    .describe_alarms()
                    .set_alarm_names(Some(chunk.to_vec()))
                    .alarm_types(AlarmType::MetricAlarm)
                    .alarm_types(AlarmType::CompositeAlarm)
                    .set_next_token(next_token)
                    .send()
                    .await
                    .map_err(|e| {
                        let why = aws_sdk_cloudwatch::error::DisplayErrorContext(e);
                        format!("cannot read the alarms' states (DescribeAlarms), nothing changed: {why}")
                    })?;
                let metric = page
                    .metric_alarms()
                    .iter()
                    .map(|a| (a.alarm_name(), a.state_value().map(|s| s.as_str())));
                let composite = page
                    .composite_alarms()
                    .iter()
                    .map(|a| (a.alarm_name(), a.state_value().map(|s| s.as_str())));
                for (name, state) in metric.chain(composite) {
                    if let (Some(name), Some(state)) = (name, state) {
                        states.insert(name.to_owned(), AlarmState::parse(state));
                    }
                }
                next_token = page.next_token().map(str::to_owned);
                if next_token.is_none() {
                    break;
                }
            }
        }
        Ok(states)
    }
}

/// What started a run.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Trigger {
    StateChange {
        alarm: String,
        state: String,
    },
    Schedule,
    /// Anything else (a manual invocation): reconcile all the same.
    Other,
}

fn trigger_of(event: &Value) -> Trigger {
    match event.get("detail-type").and_then(Value::as_str) {
        Some("CloudWatch Alarm State Change") => Trigger::StateChange {
            alarm: event["detail"]["alarmName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            state: event["detail"]["state"]["value"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        },
        Some("Scheduled Event") => Trigger::Schedule,
        _ => Trigger::Other,
    }
}

/// What a set of changes came to.
#[derive(Default)]
struct Written {
    paused: usize,
    cleared: usize,
    failed: Vec<String>,
}

impl Written {
    fn add(&mut self, more: Written) {
        self.paused += more.paused;
        self.cleared += more.cleared;
        self.failed.extend(more.failed);
    }
}

/// Keeps the table's alarm pauses in step with the gating alarms.
pub struct AlarmPauses<S, A> {
    store: S,
    alarms: A,
    gates: AlarmGates,
    /// Groups named in `FLEETLOCK_GROUPS`, which `*` covers before their
    /// first request.
    configured: Vec<GroupName>,
}

impl<S: LockStore, A: AlarmStates> AlarmPauses<S, A> {
    pub fn new(store: S, alarms: A, gates: AlarmGates, configured: Vec<GroupName>) -> Self {
        Self {
            store,
            alarms,
            gates,
            configured,
        }
    }

    /// Writes each change, one conditional write each; a failed one is
    /// logged and counted, and the others still go.
    async fn apply(&self, changes: &[Change], states: &BTreeMap<String, AlarmState>) -> Written {
        let mut written = Written::default();
        for change in changes {
            let (group, alarm, action, result) = match change {
                Change::Pause { group, alarm } => (
                    group,
                    alarm,
                    "paused",
                    self.store.pause_for_alarm(group, alarm).await,
                ),
                Change::Clear { group, alarm } => (
                    group,
                    alarm,
                    "cleared",
                    self.store.clear_alarm(group, alarm).await,
                ),
            };
            let state = states.get(alarm).map_or("not configured", |s| s.as_str());
            if let Err(err) = result {
                tracing::error!(group = %group, alarm, action, error = %err, "alarm pause not written");
                written.failed.push(format!("{group}/{alarm}"));
                continue;
            }
            tracing::info!(group = %group, alarm, state, action, "alarm pause");
            match change {
                Change::Pause { .. } => written.paused += 1,
                Change::Clear { .. } => written.cleared += 1,
            }
        }
        written
    }

    /// Handles one event; `Err` when nothing could be decided (the alarms or
    /// the table could not be read) or a change failed: Lambda then counts
    /// an error, and the next event or the schedule tries again.
    pub async fn handle(&self, event: &Value) -> Result<Value, String> {
        let trigger = trigger_of(event);
        if let Trigger::StateChange { alarm, state } = &trigger {
            if !self.gates.gates_alarm(alarm) {
                tracing::debug!(
                    alarm,
                    state,
                    "an alarm that gates no group changed; ignored"
                );
                return Ok(json!({ "ignored": alarm }));
            }
            tracing::info!(alarm, state, "a gating alarm changed state; reconciling");
        }
        let names: Vec<String> = self.gates.alarm_names().map(str::to_owned).collect();
        let states = self.alarms.states(&names).await?;
        for (alarm, state) in &states {
            if *state == AlarmState::Missing {
                tracing::warn!(
                    alarm,
                    "a gating alarm does not exist (deleted, or misspelt in \
                     FLEETLOCK_ALARM_PAUSES): it pauses nothing, and any pause of it is cleared"
                );
            }
        }
        // The groups the configuration knows first, one read each, so that an
        // alarm reaches them before any scan of groups nobody configured.
        let known = self.gates.known_groups(&self.configured);
        let mut stored_known = Vec::new();
        for group in &known {
            let read = self
                .store
                .groups(Some(group))
                .await
                .map_err(|e| e.to_string())?;
            stored_known.extend(
                read.into_iter()
                    .map(|(name, record)| (name, record.pause.alarms)),
            );
        }
        let first = reconcile(&self.gates, &states, &stored_known, &self.configured);
        let mut written = self.apply(&first, &states).await;
        // Then every other stored group: those only `*` covers, and any an
        // alarm no longer configured still pauses.
        let others: Vec<(GroupName, BTreeSet<String>)> = self
            .store
            .groups(None)
            .await
            .map_err(|e| e.to_string())?
            .into_iter()
            .filter(|(name, _)| !known.contains(name))
            .map(|(name, record)| (name, record.pause.alarms))
            .collect();
        let rest: Vec<Change> = reconcile(&self.gates, &states, &others, &[])
            .into_iter()
            .filter(|change| !known.contains(change.group()))
            .collect();
        written.add(self.apply(&rest, &states).await);
        let Written {
            paused,
            cleared,
            failed,
        } = written;
        if !failed.is_empty() {
            return Err(format!("alarm pauses not written: {}", failed.join(", ")));
        }
        let states: BTreeMap<&str, &str> = states
            .iter()
            .map(|(name, state)| (name.as_str(), state.as_str()))
            .collect();
        Ok(json!({ "paused": paused, "cleared": cleared, "alarms": states }))
    }
}
