//! The canary gate: its setting's parse and bounds (`FLEETLOCK_CANARY`, into
//! a [`CanaryRule`], which [`crate::domain::canary`] holds with its waves),
//! and over a group's record whether its rollout runs, how many slots it
//! granted, where it stands, and the refusal of a wave that must wait.

use super::GroupRules;
use super::gates::{Gate, GroupSetting, Shown};
use super::{GroupRecord, Refusal, RolloutState, WaveWait};
use crate::domain::canary::{CanaryRule, MAX_WAVES, ROLLOUT_QUIET};
use crate::domain::canary::{Wave, wave_phrase};
use crate::domain::error::Error;
use crate::domain::error::counted;
use crate::domain::input::ClientParams;
use crate::domain::time::format_duration;
use crate::domain::time::{NotADuration, Timestamp, parse_span};
use serde_json::{Value, json};
use std::time::Duration;

/// The shortest and longest bake: a minute (a health check sees a node
/// come back), a day (past that, pausing the group says it better).
pub(crate) const MIN_BAKE: Duration = Duration::from_secs(60);
pub(crate) const MAX_BAKE: Duration = Duration::from_secs(24 * 3600);

/// How long a wave's node may stay out of service (from its grant to its
/// slot freed) before the sweep stops the group, unless the setting says:
/// a reboot, a boot and Zincati's first report take minutes.
pub(crate) const DEFAULT_BACK_WITHIN: Duration = Duration::from_secs(3600);
pub(crate) const MIN_BACK_WITHIN: Duration = Duration::from_secs(15 * 60);
pub(crate) const MAX_BACK_WITHIN: Duration = Duration::from_secs(24 * 3600);

/// Why a canary was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CanaryError {
    #[error(transparent)]
    NotADuration(#[from] NotADuration),
    #[error(
        "bake '{0}' is not from 1m to 24h: how long a wave stays back in service before the \
         next one goes"
    )]
    Bake(String),
    #[error(
        "waves '{0}' are more than {MAX_WAVES}; after the last one the rest go at the group's \
         slots"
    )]
    TooManyWaves(String),
    #[error("wave '{size}' of '{written}' is not a whole number from 1 to 500")]
    WaveSize { size: String, written: String },
    #[error(
        "waves '{written}' begin with {size}: the first wave is the canary, one node alone \
         (write '1+{size}' for a wave of {size} after it)"
    )]
    FirstWave { written: String, size: u16 },
    #[error(
        "'{0}' is not from 15m to 24h: how long a wave's node may be out of service before the \
         rollout stops"
    )]
    BackWithin(String),
    #[error("'{0}' is one part too many; expected BAKE[:WAVES[:BACK]], e.g. '30m:1+3:1h'")]
    TooManyParts(String),
}

/// `BAKE[:WAVES[:BACK]]`: `30m` (the canary, then the rest), `30m:1+3`
/// (then 3, then the rest), `30m:1+3:2h` (a wave's node not back within 2h
/// stops the group).
pub fn parse_canary(text: &str) -> Result<CanaryRule, CanaryError> {
    let mut parts = text.split(':').map(str::trim);
    let bake_text = parts.next().unwrap_or_default();
    let bake = parse_span(bake_text)?;
    if bake < MIN_BAKE || bake > MAX_BAKE {
        return Err(CanaryError::Bake(bake_text.to_owned()));
    }
    // The canary alone, unless the waves are written.
    let mut sizes = vec![1];
    if let Some(written) = parts.next() {
        let listed: Vec<&str> = written.split('+').map(str::trim).collect();
        if listed.len() > MAX_WAVES {
            return Err(CanaryError::TooManyWaves(written.to_owned()));
        }
        sizes.clear();
        for (index, size) in listed.iter().enumerate() {
            let size: u16 = size
                .parse()
                .ok()
                .filter(|n| (1..=500).contains(n))
                .ok_or_else(|| CanaryError::WaveSize {
                    size: (*size).to_owned(),
                    written: written.to_owned(),
                })?;
            if index == 0 && size != 1 {
                return Err(CanaryError::FirstWave {
                    written: written.to_owned(),
                    size,
                });
            }
            sizes.push(size);
        }
    }
    let back_within = match parts.next() {
        None => DEFAULT_BACK_WITHIN,
        Some(back_text) => {
            let back = parse_span(back_text)?;
            if back < MIN_BACK_WITHIN || back > MAX_BACK_WITHIN {
                return Err(CanaryError::BackWithin(back_text.to_owned()));
            }
            back
        }
    };
    if let Some(extra) = parts.next() {
        return Err(CanaryError::TooManyParts(extra.to_owned()));
    }
    Ok(CanaryRule::new(bake, back_within, &sizes))
}

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
        rules.canary = Some(parse_canary(text)?);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::canary::Wave;

    #[test]
    fn waves_begin_at_the_canary_at_each_end_and_at_the_rest() {
        let rule = parse_canary("30m:1+3").unwrap();
        assert_eq!(rule.wave_starts().collect::<Vec<_>>(), vec![0, 1, 4]);
        assert!(rule.is_wave_start(0) && rule.is_wave_start(1) && rule.is_wave_start(4));
        assert!(!rule.is_wave_start(2) && !rule.is_wave_start(3) && !rule.is_wave_start(5));
        assert_eq!(rule.wave_after(0).index, Some(0));
        assert_eq!(rule.wave_after(3).index, Some(1));
        assert_eq!(rule.wave_after(3).granted, 2);
        assert_eq!(rule.wave_after(4).index, None);
        assert_eq!(rule.wave_of(1).index, Some(0), "one grant: the canary");
        assert_eq!(rule.wave_of(4).index, Some(1));
        assert_eq!(rule.wave_of(0), Wave::BEFORE);
        assert_eq!(
            wave_phrase(rule.wave_of(0)),
            "what was out before this rollout began"
        );
        assert_eq!(wave_phrase(rule.wave_of(1)), "the canary");
        assert_eq!(wave_phrase(rule.wave_of(4)), "wave 2 (3 nodes)");
        assert_eq!(rule.plan_phrase(), "the canary, then 3, then the rest");
        assert_eq!(rule.setting(), "30m:1+3:1h");
    }

    #[test]
    fn the_default_is_a_canary_then_the_rest_with_an_hour_to_come_back() {
        let rule = parse_canary("10m").unwrap();
        assert_eq!(rule.wave_starts().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(rule.back_within, DEFAULT_BACK_WITHIN);
        assert_eq!(rule.bake, Duration::from_secs(600));
        assert_eq!(
            parse_canary("1h:1+2+4:2h").unwrap().setting(),
            "1h:1+2+4:2h"
        );
    }

    #[test]
    fn a_canary_setting_out_of_its_bounds_is_refused_with_its_reason() {
        for (text, says) in [
            ("30s", "not from 1m to 24h"),
            ("25h", "not from 1m to 24h"),
            ("30m:2+3", "the first wave is the canary"),
            ("30m:1+0", "not a whole number from 1 to 500"),
            ("30m:1+x", "not a whole number"),
            ("30m:1+1+1+1+1+1", "more than 5"),
            ("30m:1:5m", "not from 15m to 24h"),
            ("30m:1:1h:x", "one part too many"),
            ("soon", ""),
        ] {
            let why = parse_canary(text).expect_err(text).to_string();
            assert!(why.contains(says), "{text}: {why}");
        }
    }
}
