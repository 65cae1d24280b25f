//! The return gate: its setting (`FLEETLOCK_RETURN`, a return timeout per
//! group) and its rules: a node's steady-state leaves its slot counted as
//! returning ([`GroupRecord::release`]) until a hook or a person confirms it
//! back in service; past the group's return timeout the sweep stops the
//! group, once per return. The same stop serves a canary's wave whose node
//! is not back within the canary's time ([`GroupRecord::waves_overdue`]).

use std::time::Duration;

use super::GroupRules;
use super::gates::{Gate, GroupSetting, Shown};
use super::{GroupRecord, Refusal, RolloutStop, StopCause};
use crate::domain::canary::CanaryRule;
use crate::domain::error::Error;
use crate::domain::input::{ClientParams, NodeId};
use crate::domain::names::shell_word;
use crate::domain::outcomes::{Release, Returned};
use crate::domain::time::format_duration;
use crate::domain::time::human_duration;
use crate::domain::time::{NotADuration, Timestamp, parse_span};
use serde_json::{Value, json};

/// The shortest return timeout: a target group's health checks need this
/// long at the least to see a node healthy again (two checks 30 s apart).
pub(crate) const MIN_RETURN: Duration = Duration::from_secs(60);

/// The longest return timeout: past a day, a node is not coming back by
/// itself.
pub(crate) const MAX_RETURN: Duration = Duration::from_secs(24 * 3600);

/// A return timeout, from [`MIN_RETURN`] to [`MAX_RETURN`].
pub(crate) fn parse_return(text: &str) -> Result<Duration, ReturnError> {
    let timeout = parse_span(text)?;
    if timeout < MIN_RETURN {
        return Err(ReturnError::TooShort(text.trim().to_owned()));
    }
    if timeout > MAX_RETURN {
        return Err(ReturnError::TooLong(text.trim().to_owned()));
    }
    Ok(timeout)
}

/// Why a return timeout was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReturnError {
    #[error(transparent)]
    NotADuration(#[from] NotADuration),
    #[error(
        "return timeout '{0}' is shorter than 1m: a load balancer's health checks need longer \
         to see a node healthy again"
    )]
    TooShort(String),
    #[error(
        "return timeout '{0}' is longer than 24h; a node that has not come back by then will \
         not by itself"
    )]
    TooLong(String),
}

impl GroupRecord {
    /// The return gate's refusal of a node whose slot is returning: it is
    /// out of service already, and goes down again only once it was back.
    pub(super) fn return_refusal(
        &self,
        id: &NodeId,
        timeout: Option<Duration>,
        now: Timestamp,
    ) -> Option<Refusal> {
        let (&since, timeout) = (self.returning.get(id)?, timeout?);
        let until = since.plus(timeout);
        Some(Refusal::Returning {
            since,
            until,
            overdue: now >= until,
        })
    }

    /// A steady-state of `id`, holding its slot, at `now` in a group with a
    /// return gate: its slot counts as returning from now until its return
    /// is confirmed; a steady-state of a node already returning changes
    /// nothing (Zincati reports one at every start).
    pub(super) fn begin_return(&mut self, id: &NodeId, now: Timestamp) -> Release {
        if self.returning.contains_key(id) {
            return Release::StillReturning;
        }
        self.draining.remove(id);
        self.renewed.remove(id);
        self.returning.insert(id.clone(), now);
        Release::Returning
    }

    /// What a confirmation that `id` is back in service gets, without
    /// changing anything: freed unless the node is not returning, or is
    /// returning since another time than the one confirmed (`since`, when
    /// the confirmer names it). A pause does not keep a slot from coming
    /// back: nobody goes down by it.
    pub(crate) fn decide_returned(&self, id: &NodeId, since: Option<Timestamp>) -> Returned {
        match self.returning.get(id) {
            None => Returned::NotReturning {
                holds: self.holders.holds(id),
            },
            Some(&returning) if since.is_some_and(|since| since != returning) => {
                Returned::OtherReturn { since: returning }
            }
            Some(_) => Returned::Freed,
        }
    }

    /// The return of `id` confirmed at `now`: its slot is free, and the
    /// settle period runs from here (the node is back, which is what a
    /// settle time waits after).
    pub(crate) fn returned(
        &mut self,
        id: &NodeId,
        since: Option<Timestamp>,
        now: Timestamp,
    ) -> Returned {
        let outcome = self.decide_returned(id, since);
        if outcome == Returned::Freed {
            self.free(id, now);
        }
        outcome
    }

    /// The returns that passed `timeout` at `now` and have not stopped the
    /// group yet: (node, return's start), oldest first.
    pub fn returns_overdue(&self, timeout: Duration, now: Timestamp) -> Vec<(NodeId, Timestamp)> {
        let mut overdue: Vec<_> = self
            .returning
            .iter()
            .filter(|(id, since)| {
                since.plus(timeout) <= now && !self.returns_failed.contains_key(*id)
            })
            .map(|(id, since)| (id.clone(), *since))
            .collect();
        overdue.sort_by_key(|(_, since)| *since);
        overdue
    }

    /// What the server's stop of the rollout for `id` does, without
    /// changing anything: for the return begun at `since`
    /// ([`StopCause::Return`]), or for the wave's slot granted at `since`
    /// ([`StopCause::Wave`]; a reservation waits for its drain instead).
    /// A slot fails once, by its return or by its wave.
    pub(crate) fn decide_stop(&self, id: &NodeId, since: Timestamp, cause: StopCause) -> Stopping {
        let stands = match cause {
            StopCause::Return => self.returning.get(id) == Some(&since),
            StopCause::Wave => {
                self.holders.held_since(id) == Some(since) && !self.draining.contains_key(id)
            }
        };
        if !stands {
            Stopping::NotReturning
        } else if self.returns_failed.contains_key(id) {
            Stopping::AlreadyCounted
        } else {
            Stopping::Stopped
        }
    }

    /// The return of `id` begun at `since` passed its timeout, or its
    /// wave's slot granted at `since` is not back past the canary's time,
    /// seen at `now`: the group stops (unless it stopped already, for this
    /// node or another), and the slot is counted as failed, once. The slot
    /// stays: the node is not known to be back.
    pub(crate) fn stop_rollout(
        &mut self,
        id: &NodeId,
        since: Timestamp,
        cause: StopCause,
        now: Timestamp,
    ) -> Stopping {
        let outcome = self.decide_stop(id, since, cause);
        if outcome == Stopping::Stopped {
            self.returns_failed.insert(id.clone(), since);
            self.pause.stop.get_or_insert(RolloutStop {
                id: id.clone(),
                returning_since: since,
                at: now,
                cause,
            });
        }
        outcome
    }

    /// In a rollout with a canary, while a wave (the canary, or a wave
    /// before the rest) is out: its nodes out of service past the canary's
    /// time at `now` (from their grant; a reservation waits for its drain,
    /// which has its own timeout) that have not stopped the group yet:
    /// (node, grant), oldest first.
    pub fn waves_overdue(&self, canary: CanaryRule, now: Timestamp) -> Vec<(NodeId, Timestamp)> {
        let grants = self.wave_grants.unwrap_or(0);
        if !self.rollout_runs(canary, now) || canary.wave_of(grants).index.is_none() {
            return Vec::new();
        }
        let mut overdue: Vec<_> = self
            .holders
            .holders()
            .filter(|(id, granted)| {
                granted.plus(canary.back_within) <= now
                    && !self.draining.contains_key(*id)
                    && !self.returns_failed.contains_key(*id)
            })
            .map(|(id, granted)| (id.clone(), granted))
            .collect();
        overdue.sort_by_key(|(_, granted)| *granted);
        overdue
    }
}

/// What a sweep's stop for an overdue return did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopping {
    /// The return is counted as failed, and the group is stopped (by this
    /// return, or still by an earlier one).
    Stopped,
    /// This return stopped the group before: nothing changed.
    AlreadyCounted,
    /// The node is not returning (for a wave: not holding) since that time
    /// any more: nothing changed.
    NotReturning,
}

/// The return gate in the list of gates.
pub(crate) struct ReturnGate;

impl ReturnGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_RETURN";
}

/// How `ReturnGate::VARIABLE` sets a group's rules.
static SETTING: GroupSetting = GroupSetting {
    variable: ReturnGate::VARIABLE,
    what: "a return timeout",
    example: "workers=20m",
    read: |text, rules| {
        rules.return_timeout = Some(parse_return(text)?);
        Ok(())
    },
    copy: |from, to| to.return_timeout = from.return_timeout,
};

impl Gate for ReturnGate {
    fn setting(&self) -> Option<&'static GroupSetting> {
        Some(&SETTING)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        rules.return_timeout.map(|timeout| {
            format!(
                ", return gate {} (a released slot is free once its node's return is \
                 confirmed; past the timeout the group stops)",
                format_duration(timeout)
            )
        })
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        Some(format!(
            "return={}",
            rules.return_timeout.map_or("-".into(), format_duration)
        ))
    }

    /// Each slot returning, with how to confirm its node is back.
    fn status(&self, group: &Shown) -> Vec<String> {
        let name = group.name;
        let timeout = group.rules.and_then(|rules| rules.return_timeout);
        (group.record.returning.iter())
            .map(|(id, since)| {
                let until = match timeout {
                    Some(timeout) if since.plus(timeout) <= group.now => format!(
                        ", past its return timeout since {}",
                        since.plus(timeout).to_rfc3339()
                    ),
                    Some(timeout) => format!(", due by {}", since.plus(timeout).to_rfc3339()),
                    None if group.deployed => {
                        ", and the group has no return gate now: nobody confirms it by itself"
                            .into()
                    }
                    None => String::new(),
                };
                format!(
                    "{name}: '{}'{} is returning since {} ({}){until}: confirm with \
                     'fleetlock returned --group {name} --id {} --released-at {}'",
                    id.shown(),
                    (group.host_of)(id),
                    since.to_rfc3339(),
                    human_duration(since.age_at(group.now)),
                    shell_word(&id.shown()),
                    since.to_rfc3339_millis()
                )
            })
            .collect()
    }

    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let timeout = group.rules.and_then(|r| r.return_timeout);
        vec![(
            "return_timeout_seconds",
            json!(timeout.map(|t| t.as_secs())),
        )]
    }

    /// Whether the holder's slot is returning, since when and until when.
    fn holder_fields(
        &self,
        group: &Shown,
        id: &NodeId,
        _at: Timestamp,
    ) -> Vec<(&'static str, Value)> {
        let returning = group.record.returning.get(id).copied();
        let until = returning
            .zip(group.rules.and_then(|rules| rules.return_timeout))
            .map(|(since, timeout)| since.plus(timeout));
        vec![
            ("returning", json!(returning.is_some())),
            (
                "released_at",
                json!(returning.map(Timestamp::to_rfc3339_millis)),
            ),
            (
                "returning_for_seconds",
                json!(returning.map(|since| since.age_at(group.now).as_secs())),
            ),
            ("return_until", json!(until.map(Timestamp::to_rfc3339))),
            (
                "return_overdue",
                json!(until.map(|until| until <= group.now)),
            ),
        ]
    }
}

/// The refusal of a node whose slot is returning since `since`.
pub(crate) fn refusal(
    params: &ClientParams,
    since: Timestamp,
    until: Timestamp,
    overdue: bool,
) -> Error {
    Error::WaitingForReturn {
        group: params.group.to_string(),
        id: params.id.shown(),
        since: since.to_rfc3339(),
        until: until.to_rfc3339(),
        overdue,
    }
}
