//! The canary gate over a group's record: whether its rollout runs, how
//! many slots it granted, where it stands, and the refusal of a wave that
//! must wait ([`crate::domain::canary`] holds the setting).

use super::GroupRules;
use super::gates::{Gate, GroupSetting, Shown};
use super::{GroupRecord, Refusal, RolloutState, WaveWait};
use crate::domain::canary::{CanaryRule, ROLLOUT_QUIET, parse_canary};
use crate::domain::canary::{Wave, wave_phrase};
use crate::domain::error::Error;
use crate::domain::error::counted;
use crate::domain::input::ClientParams;
use crate::domain::time::Timestamp;
use crate::domain::time::format_duration;
use serde_json::{Value, json};

impl GroupRecord {
    /// Whether the group's rollout still runs at `now`: a node is out, or
    /// the last slot given back (or the rollout's start) is more recent
    /// than the bake and [`ROLLOUT_QUIET`]. The next grant of a group whose
    /// rollout does not run begins a new one, with its canary.
    pub fn rollout_runs(&self, canary: CanaryRule, now: Timestamp) -> bool {
        let quiet_since = now.minus(canary.bake + ROLLOUT_QUIET);
        !self.holders.is_empty()
            || self.last_release.is_some_and(|at| at > quiet_since)
            || self.rollout_began.is_some_and(|at| at > quiet_since)
    }

    /// The grants the running rollout has made, as the next grant counts
    /// them: none when a new rollout begins.
    pub(crate) fn rollout_grants(&self, canary: CanaryRule, now: Timestamp) -> u32 {
        if self.rollout_runs(canary, now) {
            self.wave_grants.unwrap_or(0)
        } else {
            0
        }
    }

    /// A slot taken at `now`: one more grant of the running rollout, or the
    /// first of a new one.
    pub(super) fn count_wave_grant(&mut self, canary: CanaryRule, now: Timestamp) {
        let grants = self.rollout_grants(canary, now);
        if !self.rollout_runs(canary, now) {
            self.rollout_began = Some(now);
        }
        self.wave_grants = Some(grants.saturating_add(1));
    }

    /// Where the group's rollout stands at `now`, for people (`status`) and
    /// for the grant ([`Self::wave_refusal`]): `None` when none runs (the
    /// next grant is a new rollout's canary, with no node out and the bake
    /// long over).
    pub(crate) fn rollout_state(&self, canary: CanaryRule, now: Timestamp) -> Option<RolloutState> {
        if !self.rollout_runs(canary, now) {
            return None;
        }
        let grants = self.wave_grants.unwrap_or(0);
        let waits = if !canary.is_wave_start(grants) {
            WaveWait::InWave(canary.wave_after(grants))
        } else if !self.holders.is_empty() {
            WaveWait::Out(canary.wave_of(grants))
        } else {
            match self.last_release.map(|at| at.plus(canary.bake)) {
                Some(until) if until > now => WaveWait::Baking(canary.wave_of(grants), until),
                _ => WaveWait::NextMayGo(canary.wave_after(grants)),
            }
        };
        Some(RolloutState {
            began: self.rollout_began,
            grants,
            waits,
        })
    }

    /// A person begins a new rollout at `now` ([`crate::domain::store::Decisions::begin_rollout`]):
    /// none of its grants made yet, so the next is a canary.
    pub(crate) fn begin_rollout(&mut self, now: Timestamp) -> bool {
        if self.rollout_began.is_some_and(|began| began >= now) {
            return false;
        }
        self.rollout_began = Some(now);
        self.wave_grants = Some(0);
        true
    }

    /// Why a grant the slots allow waits for the rollout's waves, if it
    /// does: it would be a wave's first, while a node is still out
    /// (reserved, holding or returning) or the bake since the last slot
    /// came back has not passed. The same as the grant's condition on
    /// DynamoDB.
    pub(super) fn wave_refusal(&self, canary: CanaryRule, now: Timestamp) -> Option<Refusal> {
        match self.rollout_state(canary, now)?.waits {
            WaveWait::Out(wave) => Some(Refusal::WaveOut { wave }),
            WaveWait::Baking(wave, until) => Some(Refusal::Baking { wave, until }),
            WaveWait::InWave(_) | WaveWait::NextMayGo(_) => None,
        }
    }
}

/// The canary gate in the list of gates.
pub(crate) struct CanaryGate;

impl CanaryGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_CANARY";
}

/// How `CanaryGate::VARIABLE` sets a group's rules.
static SETTING: GroupSetting = GroupSetting {
    variable: CanaryGate::VARIABLE,
    what: "a canary",
    example: "workers=30m:1+3",
    read: |text, rules| {
        rules.canary = Some(parse_canary(text).map_err(|why| why.to_string())?);
        Ok(())
    },
    copy: |from, to| to.canary = from.canary,
};

impl Gate for CanaryGate {
    fn setting(&self) -> Option<&'static GroupSetting> {
        Some(&SETTING)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        rules.canary.map(|canary| {
            format!(
                ", canary: {}, each back {} before the next (a wave's node out past {} stops \
                 the group)",
                canary.plan_phrase(),
                format_duration(canary.bake),
                format_duration(canary.back_within)
            )
        })
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        rules
            .canary
            .map(|canary| format!("canary={}", canary.setting()))
    }

    /// Where the group's rollout stands: which wave goes, is out or bakes.
    fn status(&self, group: &Shown) -> Vec<String> {
        (group.rules.and_then(|rules| rules.canary))
            .map(|canary| {
                format!(
                    "{} rolls out in waves ({}, each back {} before the next): {}",
                    group.name,
                    canary.plan_phrase(),
                    format_duration(canary.bake),
                    rollout_phrase(group.record, canary, group.now)
                )
            })
            .into_iter()
            .collect()
    }

    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let canary = group.rules.and_then(|rules| rules.canary);
        let rollout = canary.map(|canary| rollout_json(group.record, canary, group.now));
        vec![("rollout", json!(rollout))]
    }
}

/// Where a canary rollout stands, as a sentence.
fn rollout_phrase(record: &GroupRecord, canary: CanaryRule, now: Timestamp) -> String {
    let Some(state) = record.rollout_state(canary, now) else {
        return "no rollout runs; the next node to take a slot is a new rollout's canary".into();
    };
    let began = state.began.map_or("-".into(), Timestamp::to_rfc3339);
    let where_ = match state.waits {
        WaveWait::InWave(wave) => match wave.size {
            Some(size) => format!(
                "{} goes, {} of {size} granted",
                wave_phrase(wave),
                wave.granted
            ),
            None => "the rest go at the group's slots".to_owned(),
        },
        WaveWait::Out(wave) => format!(
            "{} is out; the next wave waits until it is back and the bake is over",
            wave_phrase(wave)
        ),
        WaveWait::Baking(wave, until) => format!(
            "{} is back; the next wave begins at {}",
            wave_phrase(wave),
            until.to_rfc3339()
        ),
        WaveWait::NextMayGo(wave) => {
            format!("the next node to ask begins {}", wave_phrase(wave))
        }
    };
    format!(
        "rollout since {began}, {}; {where_}",
        counted(u64::from(state.grants), "grant", "grants")
    )
}

/// The refusal of a grant that would begin the next wave of a canary
/// rollout, while `wave` is out (no `until`) or bakes until `until`.
pub(crate) fn refusal(
    params: &ClientParams,
    rules: GroupRules,
    wave: Wave,
    until: Option<Timestamp>,
) -> Error {
    let (plan, bake) = rules.canary.map_or_else(Default::default, |canary| {
        (canary.plan_phrase(), format_duration(canary.bake))
    });
    Error::WaitingForWave {
        group: params.group.to_string(),
        wave: wave_phrase(wave),
        plan,
        bake,
        until: until.map(Timestamp::to_rfc3339),
    }
}

/// Where a canary rollout stands: whether one runs, since when, its grants,
/// the wave out or baking (and until when), the wave the next grant joins.
fn rollout_json(record: &GroupRecord, canary: CanaryRule, now: Timestamp) -> Value {
    let Some(state) = record.rollout_state(canary, now) else {
        return json!({"runs": false, "canary": canary.setting()});
    };
    // A wave is out until it is back; then it bakes: never both.
    let (wave_out, baking, bake_until, next) = match state.waits {
        WaveWait::InWave(wave) | WaveWait::NextMayGo(wave) => {
            (None, None, None, Some(wave_phrase(wave)))
        }
        WaveWait::Out(wave) => (Some(wave_phrase(wave)), None, None, None),
        WaveWait::Baking(wave, until) => (
            None,
            Some(wave_phrase(wave)),
            Some(until.to_rfc3339()),
            None,
        ),
    };
    json!({
        "runs": true,
        "canary": canary.setting(),
        "began": state.began.map(Timestamp::to_rfc3339),
        "grants": state.grants,
        "wave_out": wave_out,
        "wave_baking": baking,
        "bake_until": bake_until,
        "next_grant_in": next,
    })
}
