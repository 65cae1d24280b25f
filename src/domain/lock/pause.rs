//! The pause gate: a person's pause (`fleetlock pause`), alarms in ALARM
//! and the server's own stop of a rollout keep a group from granting new
//! slots, each apart so that clearing one leaves the others. Its record,
//! its rule, its refusal and its line in `fleetlock status`; it has no
//! setting of a group's rules, so nothing in `config check`'s summary or
//! the regions' digest.

use super::gates::{Gate, Shown};
use super::{ByPerson, GroupRecord, Refusal};
use crate::domain::error::Error;
use crate::domain::input::{ClientParams, NodeId};
use crate::domain::time::Timestamp;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// Who keeps a group from granting new slots. A person's pause, alarms'
/// pauses and the server's own stop are kept apart, so that a person's
/// `resume` leaves an alarm's pause in place and an alarm clearing leaves a
/// person's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pause {
    pub person: Option<ByPerson>,
    /// CloudWatch alarms in ALARM that gate this group.
    pub alarms: BTreeSet<String>,
    /// The rollout stopped itself: a node did not come back within its
    /// group's return timeout. Cleared by a person's `resume`.
    pub stop: Option<RolloutStop>,
}

impl Pause {
    pub fn is_paused(&self) -> bool {
        self.person.is_some() || !self.alarms.is_empty() || self.stop.is_some()
    }
}

/// A group stopped by the server: the first node whose return passed the
/// group's return timeout (or, in a wave of a canary rollout, that was out
/// of service past the canary's time), when its return began (its grant),
/// and when the stop was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RolloutStop {
    pub id: NodeId,
    pub returning_since: Timestamp,
    pub at: Timestamp,
    pub cause: StopCause,
}

impl RolloutStop {
    /// What the node did, by the stop's cause, as the journal and the
    /// operator's tools say it: a wave's node never gave its slot back.
    pub fn what_happened(&self) -> String {
        let id = self.id.shown();
        let at = self.returning_since.to_rfc3339();
        match self.cause {
            StopCause::Return => format!(
                "node '{id}' gave its slot back at {at} and its return to service was not \
                 confirmed within the return timeout"
            ),
            StopCause::Wave => format!(
                "node '{id}', of a canary's wave, took its slot at {at} and was not back in \
                 service within the time its wave allows (FLEETLOCK_CANARY)"
            ),
        }
    }
}

/// Why the server stopped a rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StopCause {
    /// A return passed the return gate's timeout.
    #[default]
    Return,
    /// A node of a canary's wave was not back in service in time.
    Wave,
}

impl GroupRecord {
    /// A person, an alarm or the server's stop paused the group.
    pub(super) fn pause_refusal(&self) -> Option<Refusal> {
        self.pause.is_paused().then_some(Refusal::Paused)
    }
}

/// The refusal of a paused group, with who paused it and why.
pub(crate) fn refusal(params: &ClientParams, group: &GroupRecord) -> Error {
    Error::GroupPaused {
        group: params.group.to_string(),
        why: paused_because(&group.pause),
    }
}

/// "by alice since 2026-11-30T05:12:09Z: kernel regression", the alarms,
/// and the server's own stop.
pub(crate) fn paused_because(pause: &Pause) -> String {
    let person = pause
        .person
        .as_ref()
        .map(|p| format!("by {} since {}: {}", p.by, p.since.to_rfc3339(), p.reason));
    let alarms = (!pause.alarms.is_empty()).then(|| {
        let names: Vec<&str> = pause.alarms.iter().map(String::as_str).collect();
        format!("while alarm(s) {} are in ALARM", names.join(", "))
    });
    let stop = pause.stop.as_ref().map(|stop| {
        format!(
            "by the server since {}: {}",
            stop.at.to_rfc3339(),
            stop.what_happened()
        )
    });
    let causes: Vec<String> = [person, alarms, stop].into_iter().flatten().collect();
    match causes.len() {
        0 => "(no longer)".into(),
        1 => causes[0].clone(),
        n => format!("{}, and {}", causes[..n - 1].join(", "), causes[n - 1]),
    }
}

/// The pause gate in the list of gates.
pub(crate) struct PauseGate;

impl Gate for PauseGate {
    /// Who paused the group, since when and why.
    fn status(&self, group: &Shown) -> Vec<String> {
        let pause = &group.record.pause;
        (pause.is_paused())
            .then(|| format!("{} is paused {}", group.name, paused_because(pause)))
            .into_iter()
            .collect()
    }

    /// Who paused the group: a person, alarms, the server's stop.
    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let pause = &group.record.pause;
        let person = pause.person.as_ref().map(|p| {
            json!({
                "reason": p.reason.as_str(),
                "by": p.by,
                "since": p.since.to_rfc3339(),
                "since_ms": p.since.0,
            })
        });
        let stopped = pause.stop.as_ref().map(|stop| {
            json!({
                "id": stop.id.as_str(),
                "id_shown": stop.id.shown(),
                "cause": match stop.cause {
                    StopCause::Return => "return",
                    StopCause::Wave => "wave",
                },
                "released_at": (stop.cause == StopCause::Return)
                    .then(|| stop.returning_since.to_rfc3339_millis()),
                "granted_at": (stop.cause == StopCause::Wave)
                    .then(|| stop.returning_since.to_rfc3339_millis()),
                "since": stop.at.to_rfc3339(),
                "since_ms": stop.at.0,
            })
        });
        vec![
            ("paused_by_person", json!(person)),
            ("paused_by_alarms", json!(pause.alarms)),
            ("stopped", json!(stopped)),
        ]
    }
}
