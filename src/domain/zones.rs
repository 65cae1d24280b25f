//! One zone at a time (`FLEETLOCK_ZONES`): a group split by zone takes its
//! slots from one place, its parent's item, and its nodes out of service are
//! all in one zone at a time.
//!
//! Zincati sends only `id` and `group`, so a node's zone travels in its
//! group: `workers.us-east-1a` is zone `us-east-1a` of `workers` when
//! `workers` is split by zone. Every zone group of a parent shares the
//! parent's slots, settings and item; the grant's one conditional write
//! records which zone group is out, and refuses another while any node of the
//! group holds a slot (reserved, holding or returning). A node that asks
//! with the parent's own name (its zone unknown) is a zone of its own: it
//! never goes down with a node of any named zone.

use std::fmt;

use crate::domain::error::Error;
use crate::domain::input::{GroupName, MAX_GROUP_CHARS};
use crate::domain::names::zone_phrase;

/// The group name a node of a split group asked with: `PARENT.ZONE`, or the
/// parent's own name. `Copy` (an inline buffer), as the rules it travels in
/// are: a group name is at most [`MAX_GROUP_CHARS`] ASCII characters.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ZoneGroup {
    len: u8,
    bytes: [u8; MAX_GROUP_CHARS],
}

impl ZoneGroup {
    pub fn of(group: &GroupName) -> Self {
        let name = group.as_str().as_bytes();
        let mut bytes = [0; MAX_GROUP_CHARS];
        bytes[..name.len()].copy_from_slice(name);
        Self {
            len: name.len() as u8,
            bytes,
        }
    }

    pub fn as_str(&self) -> &str {
        // Built from a group name: ASCII, so always UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }
}

impl fmt::Debug for ZoneGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ZoneGroup({})", self.as_str())
    }
}

impl fmt::Display for ZoneGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// "zone 'us-east-1a' of group 'workers', which is split by zone": what a
/// zone's group is, as every refusal and note that meets one says it.
pub(crate) fn zone_of(zone_group: &GroupName, parent: &GroupName) -> String {
    format!(
        "{} of group '{parent}', which is split by zone",
        zone_phrase(zone_group.as_str())
    )
}

/// Whether `zone` can be a zone's name: letters, digits and `-`, as an
/// Availability Zone's name (`us-east-1a`) or id (`use1-az1`) is.
fn is_zone_name(zone: &str) -> bool {
    !zone.is_empty() && zone.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// Whether `text` reads as an AWS Availability Zone's name
/// (`us-east-1a`, `us-gov-west-1b`, `ap-northeast-1c`) or id (`use1-az1`):
/// where a name is not split at a dot, only a zone this plain is taken as
/// the one a node meant.
pub(crate) fn looks_like_zone(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    let parts: Vec<&str> = text.split('-').collect();
    let letters = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase());
    match parts[..] {
        // An id: `use1-az1`.
        [region, az] => {
            region.len() >= 3
                && region.chars().any(|c| c.is_ascii_digit())
                && az
                    .strip_prefix("az")
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        }
        // A name: `us-east-1a`, `us-gov-west-1a`, `us-west-2-lax-1a`.
        [area, .., last] if parts.len() >= 3 => {
            let digits = last.trim_end_matches(|c: char| c.is_ascii_lowercase());
            area.len() == 2
                && letters(area)
                && parts[1..parts.len() - 1]
                    .iter()
                    .all(|p| letters(p) || p.chars().all(|c| c.is_ascii_digit()))
                && !digits.is_empty()
                && digits.len() < last.len()
                && digits.chars().all(|c| c.is_ascii_digit())
        }
        _ => false,
    }
}

/// The split group `group` is under, if any, and the rest of its name
/// after the dot (`workers.a.b` is under `workers`, rest `a.b`).
pub(crate) fn under<'a, 'g>(
    zoned: impl IntoIterator<Item = &'a GroupName>,
    group: &'g GroupName,
) -> Option<(&'a GroupName, &'g str)> {
    zoned.into_iter().find_map(|parent| {
        let rest = group
            .as_str()
            .strip_prefix(parent.as_str())?
            .strip_prefix('.')?;
        Some((parent, rest))
    })
}

/// Which group `group` takes its slots from, among the split groups
/// `zoned`: `Some((parent, zone group))` for a split group's own name or one
/// of its zones, `None` for any other group. A name under a split group
/// that is not one of its zones (`workers.a.b`, `workers.`) is refused:
/// it would otherwise be a group of its own, with slots of its own.
pub(crate) fn split<'a>(
    zoned: impl IntoIterator<Item = &'a GroupName> + Clone,
    group: &GroupName,
) -> Result<Option<(GroupName, ZoneGroup)>, Error> {
    if let Some(parent) = zoned.clone().into_iter().find(|parent| *parent == group) {
        return Ok(Some((parent.clone(), ZoneGroup::of(group))));
    }
    let Some((parent, zone)) = under(zoned, group) else {
        return Ok(None);
    };
    if !is_zone_name(zone) {
        return Err(Error::InvalidGroup(format!(
            "group '{group}' is under '{parent}', which is split by zone, but '{zone}' is \
             not a zone's name (letters, digits and '-', as 'us-east-1a')"
        )));
    }
    Ok(Some((parent.clone(), ZoneGroup::of(group))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> GroupName {
        GroupName::parse(name).unwrap()
    }

    #[test]
    fn a_zone_group_takes_its_parents_slots() {
        let zoned = [group("workers")];
        let (parent, zone) = split(&zoned, &group("workers.us-east-1a"))
            .unwrap()
            .unwrap();
        assert_eq!(parent, group("workers"));
        assert_eq!(zone.as_str(), "workers.us-east-1a");
        assert_eq!(zone_phrase(zone.as_str()), "zone 'us-east-1a'");
        let (parent, zone) = split(&zoned, &group("workers")).unwrap().unwrap();
        assert_eq!((parent.as_str(), zone.as_str()), ("workers", "workers"));
        assert_eq!(zone_phrase(zone.as_str()), "no zone (the group's own name)");
    }

    #[test]
    fn other_groups_are_themselves() {
        let zoned = [group("workers")];
        assert_eq!(split(&zoned, &group("db")).unwrap(), None);
        assert_eq!(split(&zoned, &group("workersx.a")).unwrap(), None);
        assert_eq!(split(&zoned, &group("worker")).unwrap(), None);
    }

    #[test]
    fn a_name_under_a_split_group_is_one_of_its_zones_or_refused() {
        let zoned = [group("workers")];
        for bad in ["workers.a.b", "workers."] {
            let err = split(&zoned, &group(bad)).unwrap_err();
            assert_eq!(err.kind(), "invalid_group", "{bad}");
            assert!(err.value().contains("split by zone"), "{}", err.value());
        }
    }

    #[test]
    fn the_longest_group_name_fits() {
        let long = format!("w.{}", "a".repeat(MAX_GROUP_CHARS - 2));
        let (_, zone) = split(&[group("w")], &group(&long)).unwrap().unwrap();
        assert_eq!(zone.as_str(), long);
    }
}

#[cfg(test)]
mod setting_tests {
    use crate::domain::groups::{GroupSlots, GroupsError};

    fn zones(groups: &str, spec: &str) -> Result<GroupSlots, GroupsError> {
        GroupSlots::parse(groups).unwrap().with_zones(spec)
    }

    #[test]
    fn fleetlock_zones_names_configured_groups_by_name() {
        let split = zones("workers=3,db=1,*=1", "workers").unwrap();
        assert_eq!(split.zoned().count(), 1);
        for (groups, spec, says) in [
            ("workers=3,*=1", "*", "'*' cannot be split by zone"),
            ("workers=3,*=1", "batch", "group 'batch' is not configured"),
            ("workers=3", "wrokers", "did you mean 'workers'"),
            ("workers=3", "workers,workers", "listed twice"),
            (
                "workers=3,workers.a=1",
                "workers",
                "under 'workers', which is split by zone",
            ),
            ("a=1,a.b=1", "a,a.b", "under 'a', which is split by zone"),
            ("workers=3", "work ers", "group 'work ers'"),
        ] {
            let err = zones(groups, spec).unwrap_err().to_string();
            assert!(err.starts_with("FLEETLOCK_ZONES: "), "{err}");
            assert!(err.contains(says), "{spec}: {err}");
        }
    }

    #[test]
    fn a_zone_group_resolves_to_its_parent_and_others_to_none() {
        let split = zones("workers=3,db=1,*=1", "workers").unwrap();
        let group = |name| crate::domain::input::GroupName::parse(name).unwrap();
        let meaning = split.meaning(&group("workers.eu-west-1b")).unwrap();
        assert_eq!(
            (meaning.group.as_str(), meaning.zone.unwrap().as_str()),
            ("workers", "workers.eu-west-1b")
        );
        // A name under a group not split by zone is no group of its own,
        // though '*' is there: it would take slots beside db's.
        let err = split.meaning(&group("db.eu-west-1b")).unwrap_err();
        assert_eq!(err.kind(), "unknown_group");
        assert!(err.value().contains("not split by zone"), "{}", err.value());
        let other = split.meaning(&group("other")).unwrap();
        assert_eq!((other.group.as_str(), other.zone), ("other", None));
        let rules = split.rules_for(&group("workers")).unwrap();
        assert_eq!((rules.slots, rules.zone), (3, None));
    }
}
