//! What a group's name means: the one reading of a name, used by the
//! router, every command, config check, the credentials check and the `*`
//! rule alike. From the name a node asked with (or a person typed) to the
//! configured group whose slots it takes and the zone it is in, or a
//! refusal that names the group it most likely means and what would make
//! it right.
//!
//! The rule that keeps the promise: a name that a configured group could
//! mean (its case twin, a name under it, a zone of it written with `-`),
//! with or without `FLEETLOCK_ZONES`, is never a group of its own under
//! `*`. Such a group would have slots of its own, and its nodes would go
//! out of service beside the configured group's full count.

use crate::domain::error::Error;
use crate::domain::groups::GroupSlots;
use crate::domain::input::GroupName;
pub use crate::domain::names::Meant;
use crate::domain::names::{Unnameable, closest};
use crate::domain::zones::{self, ZoneGroup};

/// The group a name takes its slots from, and where that group is split by
/// zone, the zone group it asked as (`workers.us-east-1a`, or the parent's
/// own name).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meaning {
    pub group: GroupName,
    pub zone: Option<ZoneGroup>,
}

impl Meaning {
    /// Whether the name asked is one of the group's zones (not the group's
    /// own name).
    pub fn is_zone_of(&self, asked: &GroupName) -> bool {
        self.group != *asked
    }
}

impl GroupSlots {
    /// What `asked` means on this server: the group whose slots it takes
    /// (itself, a split group for one of its zones, or a group only `*`
    /// covers), or `unknown_group` naming what it most likely means, or
    /// `invalid_group` for a name under a split group that is no zone.
    pub fn meaning(&self, asked: &GroupName) -> Result<Meaning, Error> {
        if self.is_listed(asked) {
            let zone = self.is_zoned(asked).then(|| ZoneGroup::of(asked));
            return Ok(Meaning {
                group: asked.clone(),
                zone,
            });
        }
        if let Some((group, zone)) = zones::split(self.zoned(), asked)? {
            return Ok(Meaning {
                group,
                zone: Some(zone),
            });
        }
        let unknown = |meant| Error::UnknownGroup {
            group: asked.to_string(),
            meant,
        };
        if let Some(meant) = self.could_mean(asked) {
            return Err(unknown(Some(meant)));
        }
        if self.others().is_some() {
            return Ok(Meaning {
                group: asked.clone(),
                zone: None,
            });
        }
        Err(unknown(self.closest_to(asked).map(Meant::Closest)))
    }

    /// The configured group (or its zone) `asked` could mean, though it is
    /// not that name: never a group of its own under `*`.
    fn could_mean(&self, asked: &GroupName) -> Option<Meant> {
        let name = asked.as_str();
        let listed = || self.listed().map(|(group, _)| group);
        if let Some(twin) = listed().find(|g| g.as_str().eq_ignore_ascii_case(name)) {
            return Some(Meant::Case(twin.to_string()));
        }
        // Under a configured group, in any case; the longest such parent.
        let parent = listed()
            .filter(|g| {
                name.len() > g.as_str().len()
                    && name.as_bytes()[g.as_str().len()] == b'.'
                    && name[..g.as_str().len()].eq_ignore_ascii_case(g.as_str())
            })
            .max_by_key(|g| g.as_str().len());
        if let Some(parent) = parent {
            let rest = &name[parent.as_str().len() + 1..];
            return Some(if self.is_zoned(parent) {
                Meant::Case(format!("{parent}.{rest}"))
            } else {
                Meant::Unsplit {
                    parent: parent.to_string(),
                }
            });
        }
        self.zoned().find_map(|parent| {
            let head = name.get(..parent.as_str().len())?;
            let rest = name[parent.as_str().len()..].strip_prefix('-')?;
            (head.eq_ignore_ascii_case(parent.as_str()) && zones::looks_like_zone(rest))
                .then(|| Meant::Separator(format!("{parent}.{rest}")))
        })
    }

    /// The closest name a node of this server asks with, within two edits:
    /// a configured group, or a zone of a split group whose name is a typo
    /// of its parent's (`worker.us-east-1a`, `wrokers-us-east-1a`).
    fn closest_to(&self, asked: &GroupName) -> Option<String> {
        let name = asked.as_str();
        let zoned = self.zoned().map(GroupName::as_str);
        if let Some((head, rest)) = name.split_once(['.', '-'])
            && zones::looks_like_zone(rest)
            && let Some(parent) = closest(head, zoned.clone()).or_else(|| {
                zoned
                    .clone()
                    .find(|parent| parent.eq_ignore_ascii_case(head))
            })
        {
            return Some(format!("{parent}.{rest}"));
        }
        closest(name, self.listed().map(|(group, _)| group.as_str())).map(str::to_owned)
    }

    /// Why a group stored under `stored` is no group of its own under
    /// these settings (`*` made it before a split by zone, or before a
    /// configured group came to mean its name): its holders are out of
    /// service and counted in no group's slots. `None` where the name is
    /// still its own group.
    pub fn no_longer_itself(&self, stored: &GroupName) -> Option<String> {
        match self.meaning(stored) {
            Ok(meaning) if !meaning.is_zone_of(stored) => None,
            Ok(meaning) => Some(format!(
                "its name is now {}, and its nodes take slots of '{}'",
                zones::zone_of(stored, &meaning.group),
                meaning.group
            )),
            Err(Error::UnknownGroup {
                meant: Some(meant), ..
            }) => Some(format!(
                "its nodes are refused now (unknown_group): the configuration means '{meant}' \
                 by such a name"
            )),
            Err(err) => Some(format!("its nodes are refused now ({})", err.kind())),
        }
    }

    /// Whether a setting (`FLEETLOCK_SETTLE`, `FLEETLOCK_CANARY`, a window,
    /// an alarm's pause, ...) may name `group`: a configured group by its
    /// own name, or a group only `*` covers. A zone's group is refused
    /// naming its split group: a setting holds for every zone of it.
    pub(crate) fn setting_may_name(&self, group: &GroupName) -> Result<(), Unnameable> {
        match self.meaning(group) {
            Ok(meaning) if !meaning.is_zone_of(group) => Ok(()),
            Ok(meaning) => Err(Unnameable::ZoneOfSplit {
                group: group.to_string(),
                zone: zones::zone_of(group, &meaning.group),
                parent: meaning.group.to_string(),
            }),
            Err(Error::InvalidGroup(why)) => Err(Unnameable::Invalid(why)),
            Err(_) => Err(Unnameable::NotConfigured(self.not_configured(group))),
        }
    }

    /// Why a setting may not name `group`: not configured, and the
    /// configured group it most likely means (a typo within two edits, its
    /// case twin, or the group a zone's name is under).
    pub fn not_configured(&self, group: &GroupName) -> String {
        let name = group.as_str();
        let listed = || self.listed().map(|(group, _)| group.as_str());
        let parent = name.split_once(['.', '-']).and_then(|(head, _)| {
            listed()
                .find(|g| g.eq_ignore_ascii_case(head))
                .or_else(|| closest(head, listed()))
        });
        let hint = match parent {
            Some(parent) if !self.is_listed(group) => format!(
                " (did you mean '{parent}'? a setting names a group as FLEETLOCK_GROUPS \
                 does, never one of its zones)"
            ),
            _ => listed()
                .find(|g| g.eq_ignore_ascii_case(name))
                .or_else(|| closest(name, listed()))
                .map_or(String::new(), |meant| format!(" (did you mean '{meant}'?)")),
        };
        format!("group '{group}' is not configured by FLEETLOCK_GROUPS{hint}")
    }
}

#[cfg(test)]
mod tests;
