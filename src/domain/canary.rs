//! A canary, then waves (`FLEETLOCK_CANARY`): the first node of a rollout
//! goes alone; the next ones wait until it is back in service and a bake
//! time has passed; then waves that grow (`1+3`: the canary, then 3, then
//! the rest at the group's slots), with the same bake between them.
//!
//! FleetLock does not say which version a node moves to, so a rollout is
//! told by time: the first grant after the group has been quiet (no node
//! out, no slot given back) for its bake plus [`ROLLOUT_QUIET`] begins one,
//! and `fleetlock begin-rollout` begins one by hand. The group's item counts
//! the grants of the rollout (`wave_grants`): a grant whose count is a
//! wave's first ([`CanaryRule::is_wave_start`]) needs every node back and the
//! bake over, in the same conditional write that takes the slot.

use std::fmt;
use std::time::Duration;

use crate::domain::time::{NotADuration, format_duration, parse_span};

/// How long a group is quiet, after its last wave's bake, before its next
/// grant begins a new rollout with a canary. Inside one rollout Zincati's
/// nodes ask every 5 minutes; a fleet's nodes find an update hours apart at
/// most, and a new release comes weeks later.
pub const ROLLOUT_QUIET: Duration = Duration::from_secs(6 * 3600);

/// The most waves before "the rest": each is a value in the grant's
/// condition.
pub const MAX_WAVES: usize = 5;

/// The shortest and longest bake: a minute (a health check sees a node
/// come back), a day (past that, pausing the group says it better).
pub const MIN_BAKE: Duration = Duration::from_secs(60);
pub const MAX_BAKE: Duration = Duration::from_secs(24 * 3600);

/// How long a wave's node may stay out of service (from its grant to its
/// slot freed) before the sweep stops the group, unless the setting says:
/// a reboot, a boot and Zincati's first report take minutes.
pub const DEFAULT_BACK_WITHIN: Duration = Duration::from_secs(3600);
pub const MIN_BACK_WITHIN: Duration = Duration::from_secs(15 * 60);
pub const MAX_BACK_WITHIN: Duration = Duration::from_secs(24 * 3600);

/// A group's canary and waves. `Copy`, as the rules it travels in are.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CanaryRule {
    /// After each wave is back, how long before the next one goes.
    pub bake: Duration,
    /// How long a node of a wave (not of "the rest") may be out before the
    /// sweep stops the group.
    pub back_within: Duration,
    /// Wave sizes, the canary's first (always 1); the rest after them.
    sizes: [u16; MAX_WAVES],
    waves: u8,
}

/// Where a rollout stands, as a person reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wave {
    /// 0 for the canary; `None` for the rest.
    pub index: Option<usize>,
    /// Grants of this wave so far, and its size (`None` for the rest).
    pub granted: u32,
    pub size: Option<u32>,
}

impl Wave {
    /// The nodes out before a rollout began (a person began it, or the
    /// canary was set while they were out): its canary waits for them too.
    pub const BEFORE: Wave = Wave {
        index: None,
        granted: 0,
        size: Some(0),
    };
}

impl CanaryRule {
    /// The grant counts at which a wave begins: 0 (the canary), then each
    /// wave's end, the last being where the rest begins.
    pub fn wave_starts(&self) -> impl Iterator<Item = u32> + '_ {
        std::iter::once(0).chain(self.sizes[..usize::from(self.waves)].iter().scan(
            0u32,
            |total, size| {
                *total += u32::from(*size);
                Some(*total)
            },
        ))
    }

    /// Whether the grant that follows `grants` grants of the rollout is a
    /// wave's first: it needs every node back and the bake over.
    pub fn is_wave_start(&self, grants: u32) -> bool {
        self.wave_starts().any(|start| start == grants)
    }

    /// The wave the next grant after `grants` belongs to.
    pub fn wave_after(&self, grants: u32) -> Wave {
        let mut start = 0;
        for (index, size) in self.sizes[..usize::from(self.waves)].iter().enumerate() {
            let size = u32::from(*size);
            if grants < start + size {
                return Wave {
                    index: Some(index),
                    granted: grants - start,
                    size: Some(size),
                };
            }
            start += size;
        }
        Wave {
            index: None,
            granted: grants - start,
            size: None,
        }
    }

    /// The wave whose grants `grants` completes or is in: the one a
    /// refusal at a wave's start waits on (the canary at 1; at 0, what was
    /// out before the rollout began, [`Wave::BEFORE`]).
    pub fn wave_of(&self, grants: u32) -> Wave {
        match grants {
            0 => Wave::BEFORE,
            _ => self.wave_after(grants - 1),
        }
    }

    /// The waves as written (`1+3`).
    pub fn sizes_text(&self) -> String {
        self.sizes[..usize::from(self.waves)]
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join("+")
    }

    /// How a person reads the waves: "the canary, then 3, then the rest".
    pub fn plan_phrase(&self) -> String {
        let mut phrase = "the canary".to_owned();
        for size in &self.sizes[1..usize::from(self.waves)] {
            phrase.push_str(&format!(", then {size}"));
        }
        phrase.push_str(", then the rest");
        phrase
    }

    /// As the setting writes it (`30m:1+3:1h`): what the regions' digest
    /// compares.
    pub fn setting(&self) -> String {
        format!(
            "{}:{}:{}",
            format_duration(self.bake),
            self.sizes_text(),
            format_duration(self.back_within)
        )
    }
}

impl fmt::Debug for CanaryRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CanaryRule({})", self.setting())
    }
}

/// A wave's name in a sentence: "the canary", "wave 2 (3 nodes)".
pub fn wave_phrase(wave: Wave) -> String {
    if wave == Wave::BEFORE {
        return "what was out before this rollout began".to_owned();
    }
    match (wave.index, wave.size) {
        (Some(0), _) => "the canary".to_owned(),
        (Some(index), Some(size)) => format!(
            "wave {} ({size} node{})",
            index + 1,
            if size == 1 { "" } else { "s" }
        ),
        _ => "the rest".to_owned(),
    }
}

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
    let mut sizes = [0u16; MAX_WAVES];
    let mut waves = 1;
    sizes[0] = 1;
    if let Some(written) = parts.next() {
        let listed: Vec<&str> = written.split('+').map(str::trim).collect();
        if listed.len() > MAX_WAVES {
            return Err(CanaryError::TooManyWaves(written.to_owned()));
        }
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
            sizes[index] = size;
        }
        waves = listed.len() as u8;
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
    Ok(CanaryRule {
        bake,
        back_within,
        sizes,
        waves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
