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
//! bake over, in the same conditional write that takes the slot. The
//! setting's parse and bounds are the gate's ([`crate::domain::lock::canary`]).

use std::fmt;
use std::time::Duration;

use crate::domain::time::format_duration;

/// How long a group is quiet, after its last wave's bake, before its next
/// grant begins a new rollout with a canary. Inside one rollout Zincati's
/// nodes ask every 5 minutes; a fleet's nodes find an update hours apart at
/// most, and a new release comes weeks later.
pub const ROLLOUT_QUIET: Duration = Duration::from_secs(6 * 3600);

/// The most waves before "the rest": each is a value in the grant's
/// condition.
pub const MAX_WAVES: usize = 5;

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
    /// A canary with a bake, the time a wave's node may be out, and its
    /// waves' sizes (the canary's 1 first), as the gate's parse vetted
    /// them (`crate::domain::lock::canary::parse_canary`): at most
    /// [`MAX_WAVES`] are kept.
    pub(crate) fn new(bake: Duration, back_within: Duration, waves: &[u16]) -> Self {
        let mut sizes = [0u16; MAX_WAVES];
        for (slot, size) in sizes.iter_mut().zip(waves) {
            *slot = *size;
        }
        CanaryRule {
            bake,
            back_within,
            sizes,
            waves: waves.len().min(MAX_WAVES) as u8,
        }
    }

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
