//! The alarm-pauses entry point: on a "CloudWatch Alarm State Change" event
//! for a gating alarm, and on a schedule, read the gating alarms' states
//! (DescribeAlarms) and make the table's alarm pauses match them
//! ([`crate::domain::alarms::reconcile`]).
//!
//! The event only says "look now": events can come twice, out of order or
//! not at all, so every decision comes from the alarms' current states, and
//! the schedule repairs what a lost event left behind.

use super::EntryError;
use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::aws::{self, cloudwatch::CloudWatch};
use crate::config::{self, AlarmPausesSettings};
use crate::domain::alarms::{
    AlarmGates, AlarmState, AlarmStates, Change, own_pauses, reconcile, stored_name,
};
use crate::domain::input::GroupName;
use crate::domain::store::Decisions;
use crate::domain::store::LockStore;
use crate::store::dynamodb::Regional;

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
pub(crate) struct AlarmPauses<S, A> {
    store: S,
    alarms: A,
    gates: AlarmGates,
    /// Groups named in `FLEETLOCK_GROUPS`, which `*` covers before their
    /// first request.
    configured: Vec<GroupName>,
    /// On a global table, this function's region: its pauses are stored
    /// as `REGION/ALARM` and it touches no other region's.
    region: Option<String>,
}

impl<S: LockStore, A: AlarmStates> AlarmPauses<S, A> {
    pub(crate) fn new(store: S, alarms: A, gates: AlarmGates, configured: Vec<GroupName>) -> Self {
        Self {
            store,
            alarms,
            gates,
            configured,
            region: None,
        }
    }

    /// The same, on a global table: this region's pauses only.
    pub(crate) fn in_region(mut self, region: Option<String>) -> Self {
        self.region = region;
        self
    }

    /// The pauses of a stored group this function owns.
    fn own(&self, stored: std::collections::BTreeSet<String>) -> BTreeSet<String> {
        own_pauses(self.region.as_deref(), &stored)
    }

    /// Writes each change, one conditional write each; a failed one is
    /// logged and counted, and the others still go.
    async fn apply(&self, changes: &[Change], states: &BTreeMap<String, AlarmState>) -> Written {
        let mut written = Written::default();
        for change in changes {
            let region = self.region.as_deref();
            let (group, alarm, action, result) = match change {
                Change::Pause { group, alarm } => (
                    group,
                    alarm,
                    "paused",
                    self.store
                        .pause_for_alarm(group, &stored_name(region, alarm))
                        .await,
                ),
                Change::Clear { group, alarm } => (
                    group,
                    alarm,
                    "cleared",
                    self.store
                        .clear_alarm(group, &stored_name(region, alarm))
                        .await,
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
    pub(crate) async fn handle(&self, event: &Value) -> Result<Value, EntryError> {
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
        let states = self
            .alarms
            .states(&names)
            .await
            .map_err(|unread| EntryError::Alarms(unread.0))?;
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
            let read = self.store.groups(Some(group)).await?;
            stored_known.extend(
                read.into_iter()
                    .map(|(name, record)| (name, self.own(record.pause.alarms))),
            );
        }
        let first = reconcile(&self.gates, &states, &stored_known, &self.configured);
        let mut written = self.apply(&first, &states).await;
        // Then every other stored group: those only `*` covers, and any an
        // alarm no longer configured still pauses.
        let others: Vec<(GroupName, BTreeSet<String>)> = self
            .store
            .groups(None)
            .await?
            .into_iter()
            .filter(|(name, _)| !known.contains(name))
            .map(|(name, record)| (name, self.own(record.pause.alarms)))
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
            return Err(EntryError::PausesNotWritten(failed));
        }
        let states: BTreeMap<&str, &str> = states
            .iter()
            .map(|(name, state)| (name.as_str(), state.as_str()))
            .collect();
        Ok(json!({ "paused": paused, "cleared": cleared, "alarms": states }))
    }
}
/// Runs the entry point: CloudWatch alarm state changes and a schedule keep
/// the table's alarm pauses in step with the gating alarms. Needs the table,
/// the gates and the groups; no clients.
pub(crate) async fn run() -> ExitCode {
    let setup = async {
        let settings = AlarmPausesSettings::from_vars(config::process_env)?;
        // One configuration for both clients.
        let aws = aws::load_config().await;
        let regional = Regional::Yes(settings.region.as_deref());
        let store = super::checked_store(&aws, settings.table, regional).await?;
        tracing::info!(alarms = ?settings.gates.alarm_names().collect::<Vec<_>>(), "following these alarms");
        Ok::<_, EntryError>(
            AlarmPauses::new(
                store,
                CloudWatch::new(aws::cloudwatch_client(&aws)),
                settings.gates,
                settings.configured,
            )
            .in_region(settings.region),
        )
    };
    let pauses = match setup.await {
        Ok(pauses) => Arc::new(pauses),
        Err(why) => {
            tracing::error!(error = %why, "not starting");
            return ExitCode::FAILURE;
        }
    };
    let result = super::run_json(move |event| {
        let pauses = Arc::clone(&pauses);
        async move { pauses.handle(&event).await }
    })
    .await;
    super::runtime_stopped(result)
}
