//! The drain gate: its setting (`FLEETLOCK_DRAIN`, a timeout and what
//! happens at it, per group) and its rules over a group's record: a
//! reservation decided, confirmed and turned into a grant.

use std::time::Duration;

use super::gates::{Gate, GroupSetting, Shown};
use super::{Acquire, DrainRule, Drained, GroupRecord, GroupRules, OnDrainTimeout, Refusal};
use crate::domain::error::Error;
use crate::domain::input::{ClientParams, NodeId};
use crate::domain::names::shell_word;
use crate::domain::time::format_duration;
use crate::domain::time::{NotADuration, Timestamp, parse_span};
use serde_json::{Value, json};

/// The shortest drain timeout: a load balancer needs this long at the least
/// to stop sending a node new connections.
pub(crate) const MIN_DRAIN: Duration = Duration::from_secs(60);

/// The longest drain timeout: past a day, pausing the group says it better.
pub(crate) const MAX_DRAIN: Duration = Duration::from_secs(24 * 3600);

pub(crate) fn drain_rule((timeout, on_timeout): (Duration, OnDrainTimeout)) -> DrainRule {
    DrainRule {
        timeout,
        on_timeout,
        window_closes: None,
    }
}

/// A drain gate: `15m` (hold on timeout), `15m:hold` or `30m:grant`, the
/// timeout from [`MIN_DRAIN`] to [`MAX_DRAIN`].
pub(crate) fn parse_drain(text: &str) -> Result<(Duration, OnDrainTimeout), DrainError> {
    let (time, policy) = text.split_once(':').unwrap_or((text, "hold"));
    let on_timeout = match policy.trim() {
        "hold" => OnDrainTimeout::Hold,
        "grant" => OnDrainTimeout::Grant,
        other => return Err(DrainError::OnTimeout(other.to_owned())),
    };
    let timeout = parse_span(time)?;
    if timeout < MIN_DRAIN {
        return Err(DrainError::TooShort(time.trim().to_owned()));
    }
    if timeout > MAX_DRAIN {
        return Err(DrainError::TooLong(time.trim().to_owned()));
    }
    Ok((timeout, on_timeout))
}

/// Why a drain gate was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DrainError {
    #[error(transparent)]
    NotADuration(#[from] NotADuration),
    #[error(
        "'{0}' is not what happens at the drain timeout: 'hold' (keep refusing, the default) \
         or 'grant' (the node reboots undrained)"
    )]
    OnTimeout(String),
    #[error(
        "drain timeout '{0}' is shorter than 1m: a load balancer needs longer to let a node's \
         connections finish"
    )]
    TooShort(String),
    #[error("drain timeout '{0}' is longer than 24h; pause the group instead")]
    TooLong(String),
}

/// The drain gate's refusal of a new drain: the maintenance window closes
/// before a drain begun now would time out.
pub(super) fn window_refusal(drain: DrainRule) -> Option<Refusal> {
    let closes = drain.window_closes?;
    Some(Refusal::WindowTooShort { closes })
}

impl GroupRecord {
    /// The answer to a node whose slot is reserved since `since`. A
    /// reservation left over from a drain gate since removed is granted at
    /// the node's next request, as a timeout with `grant` would.
    pub(super) fn decide_reserved(
        &self,
        id: &NodeId,
        since: Timestamp,
        rules: GroupRules,
        now: Timestamp,
    ) -> Acquire {
        if self.excluded.contains_key(id) {
            return Acquire::Refused(Refusal::Excluded);
        }
        if self.pause.is_paused() {
            return Acquire::Refused(Refusal::Paused);
        }
        let Some(drain) = rules.drain else {
            return Acquire::DrainTimedOut { since };
        };
        let until = since.plus(drain.timeout);
        match (now < until, drain.on_timeout) {
            (true, _) => Acquire::Refused(Refusal::Draining {
                since,
                until,
                overdue: false,
            }),
            (false, OnDrainTimeout::Hold) => Acquire::Refused(Refusal::Draining {
                since,
                until,
                overdue: true,
            }),
            (false, OnDrainTimeout::Grant) => Acquire::DrainTimedOut { since },
        }
    }

    /// What a confirmation that `id` was drained gets, without changing
    /// anything: granted unless the reservation is gone, is another one
    /// than the one drained (`since`, when the confirmer names it), or
    /// the node may not reboot now (excluded, or the group paused: the
    /// reservation stays, and a later confirmation grants it).
    pub(crate) fn decide_drained(&self, id: &NodeId, since: Option<Timestamp>) -> Drained {
        if let Some(&since) = self.returning.get(id) {
            // A returning slot is held too, but nothing is left to drain.
            return Drained::Returning { since };
        }
        match self.draining.get(id) {
            None if self.holders.holds(id) => Drained::AlreadyGranted,
            None => Drained::NoReservation,
            Some(&waiting) if since.is_some_and(|since| since != waiting) => {
                Drained::OtherReservation { since: waiting }
            }
            Some(_) if self.excluded.contains_key(id) => Drained::Excluded,
            Some(_) if self.pause.is_paused() => Drained::Paused,
            Some(_) => Drained::Granted,
        }
    }

    pub(crate) fn drained(
        &mut self,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Drained {
        let outcome = self.decide_drained(id, since);
        if outcome == Drained::Granted {
            self.grant_reserved(id, now);
        }
        outcome
    }

    /// The reservation of `id` becomes its slot, taken at `now` (a lease
    /// runs from here).
    /// The slot `id` took at `now` waits for its drain.
    pub(super) fn reserve(&mut self, id: &NodeId, now: Timestamp) {
        self.draining.insert(id.clone(), now);
    }

    pub(super) fn grant_reserved(&mut self, id: &NodeId, now: Timestamp) {
        if self.draining.remove(id).is_some() {
            self.holders.set_time(id, now);
            self.renewed.remove(id);
        }
    }
}

/// The drain gate in the list of gates.
pub(crate) struct DrainGate;

impl DrainGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_DRAIN";
}

/// How `DrainGate::VARIABLE` sets a group's rules.
static SETTING: GroupSetting = GroupSetting {
    variable: DrainGate::VARIABLE,
    what: "a drain timeout",
    example: "workers=15m,db=30m:grant",
    read: |text, rules| {
        rules.drain = Some(drain_rule(parse_drain(text)?));
        Ok(())
    },
    copy: |from, to| to.drain = from.drain,
};

impl Gate for DrainGate {
    fn setting(&self) -> Option<&'static GroupSetting> {
        Some(&SETTING)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        rules.drain.map(|drain| {
            format!(
                ", drain gate {} then {} (a slot is granted once its node's drain is confirmed)",
                format_duration(drain.timeout),
                drain.on_timeout.as_str()
            )
        })
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        Some(format!(
            "drain={}",
            rules.drain.map_or("-".into(), |drain| format!(
                "{}:{}",
                format_duration(drain.timeout),
                drain.on_timeout.as_str()
            ))
        ))
    }

    /// Each reservation waiting for its drain, with how to confirm it.
    fn status(&self, group: &Shown) -> Vec<String> {
        let name = group.name;
        let drain = group.rules.and_then(|rules| rules.drain);
        (group.record.draining.iter())
            .map(|(id, since)| {
                let until = drain.map_or(String::new(), |drain| {
                    let until = since.plus(drain.timeout);
                    if until <= group.now {
                        format!(
                            ", past its timeout since {} ({})",
                            until.to_rfc3339(),
                            drain.on_timeout.as_str()
                        )
                    } else {
                        format!(", until {}", until.to_rfc3339())
                    }
                });
                format!(
                    "{name}: '{}'{} waits for its drain since {}{until}: confirm with \
                     'fleetlock drained --group {name} --id {} --reserved-at {}'",
                    id.shown(),
                    (group.host_of)(id),
                    since.to_rfc3339(),
                    shell_word(&id.shown()),
                    since.to_rfc3339_millis()
                )
            })
            .collect()
    }

    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let drain = group.rules.and_then(|rules| rules.drain);
        vec![
            (
                "drain_timeout_seconds",
                json!(drain.map(|d| d.timeout.as_secs())),
            ),
            (
                "drain_on_timeout",
                json!(drain.map(|d| d.on_timeout.as_str())),
            ),
        ]
    }

    /// Whether the holder waits for its drain, since when and until when.
    fn holder_fields(
        &self,
        group: &Shown,
        id: &NodeId,
        _at: Timestamp,
    ) -> Vec<(&'static str, Value)> {
        let reserved = group.record.draining.get(id).copied();
        let until = reserved
            .zip(group.rules.and_then(|rules| rules.drain))
            .map(|(since, drain)| since.plus(drain.timeout));
        vec![
            ("waiting_for_drain", json!(reserved.is_some())),
            (
                "reserved_at",
                json!(reserved.map(Timestamp::to_rfc3339_millis)),
            ),
            ("drain_until", json!(until.map(Timestamp::to_rfc3339))),
            (
                "drain_overdue",
                json!(until.map(|until| until <= group.now)),
            ),
        ]
    }
}

/// The refusal of a node whose slot is reserved since `since`.
pub(crate) fn refusal(
    params: &ClientParams,
    rules: GroupRules,
    since: Timestamp,
    reserved_now: bool,
    overdue: bool,
) -> Error {
    let timeout = rules.drain.map_or(Duration::ZERO, |drain| drain.timeout);
    Error::WaitingForDrain {
        group: params.group.to_string(),
        id: params.id.shown(),
        since: since.to_rfc3339(),
        until: since.plus(timeout).to_rfc3339(),
        reserved_now,
        overdue,
    }
}

/// The refusal of a new drain: the maintenance window closes at `closes`,
/// before a drain begun now would time out.
pub(crate) fn window_closing(params: &ClientParams, rules: GroupRules, closes: Timestamp) -> Error {
    Error::WindowClosesBeforeDrain {
        group: params.group.to_string(),
        closes: closes.to_rfc3339(),
        timeout: (rules.drain)
            .map(|drain| format_duration(drain.timeout))
            .unwrap_or_default(),
    }
}
