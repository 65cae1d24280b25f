//! Settings that agree across regions. On a global table each region's
//! function decides grants with its own settings in the write's condition:
//! a group given 3 slots in one region and 1 in another would be granted 3
//! by the first while the second believes in 1. So each region records a
//! digest of every group's deciding settings (slots, settle, lease, drain,
//! return, windows, one zone at a time) in the table, and refuses to serve a group whose digest
//! another region recorded differently. Pure: the store keeps the records,
//! the service compares.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use crate::domain::groups::GroupSlots;
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRules;
use crate::domain::windows::{Calendar, Schedule};

/// The key of every group only `*` covers, in a region's record.
pub(crate) const OTHERS: &str = "*";

/// The key, in a region's record, of who wrote it (the function's name):
/// no group can have it (`~` is not in a group name). Two stacks in one
/// region on one table write the same record; the one whose record was
/// written over compares its settings with the other's.
pub(crate) const BY: &str = "~by";

/// What a record's digest reads as when the table holds something else
/// there: it equals no digest, so only that group is refused.
pub(crate) const UNREADABLE: &str = "(unreadable)";

/// The records as this function compares them: as read, and where another
/// writer (`BY`) recorded this region's settings over ours, that writer's
/// record as one more region, named `REGION (WRITER)`.
pub(crate) fn compared(region: &str, by: &str, recorded: &Recorded) -> Recorded {
    let mut compared = recorded.clone();
    if let Some(theirs) = recorded.get(region)
        && let Some(writer) = theirs.get(BY)
        && !by.is_empty()
        && writer != by
    {
        compared.insert(format!("{region} ({writer})"), theirs.clone());
    }
    compared
}

/// A region's digests: group (or [`OTHERS`]) to the digest of its deciding
/// settings.
pub type Digests = BTreeMap<String, String>;

/// What every region recorded: region to its digests.
pub type Recorded = BTreeMap<String, Digests>;

/// The digests of the settings this function serves, by group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SettingsDigests(Digests);

impl SettingsDigests {
    /// Every group the settings list, and `*` if they have one.
    pub(crate) fn of(groups: &GroupSlots, windows: &Schedule) -> Self {
        let mut digests = Digests::new();
        for (name, _) in groups.listed() {
            if let Ok(rules) = groups.rules_as_set(name) {
                digests.insert(
                    name.to_string(),
                    digest(rules, windows.calendar_for(name), windows),
                );
            }
        }
        if let Some(rules) = groups.others_rules() {
            digests.insert(
                OTHERS.to_owned(),
                digest(rules, windows.others_calendar(), windows),
            );
        }
        Self(digests)
    }

    pub(crate) fn as_map(&self) -> &Digests {
        &self.0
    }

    /// The digest this function decides `group` with; `None` for a group
    /// it does not serve.
    pub(crate) fn for_group(&self, group: &GroupName) -> Option<&str> {
        digest_in(&self.0, group.as_str())
    }

    /// The first other region that recorded `group` with other settings
    /// than these. A region that never recorded, or that does not serve the
    /// group (it refuses every node of it), agrees.
    pub(crate) fn disagreeing<'a>(
        &self,
        region: &str,
        recorded: &'a Recorded,
        group: &GroupName,
    ) -> Option<&'a str> {
        let ours = self.for_group(group)?;
        differs(region, recorded, group.as_str(), ours)
            .first()
            .copied()
    }

    /// Every (other region, group or [`OTHERS`]) whose settings differ from
    /// these, by the same rule as [`Self::disagreeing`]: what a function
    /// says at its start.
    pub(crate) fn disagreements(&self, region: &str, recorded: &Recorded) -> Vec<(String, String)> {
        self.0
            .iter()
            .flat_map(|(key, ours)| {
                differs(region, recorded, key, ours)
                    .into_iter()
                    .map(move |other| (other.to_owned(), key.clone()))
            })
            .collect()
    }
}

/// For a person looking at the table: every group (or [`OTHERS`]) some
/// regions serve with different settings, with those regions, by the rule
/// each function applies ([`SettingsDigests::disagreeing`]).
pub(crate) fn differing(recorded: &Recorded) -> BTreeMap<String, BTreeSet<String>> {
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (region, digests) in recorded {
        for (key, ours) in digests.iter().filter(|(key, _)| !key.starts_with('~')) {
            let others = differs(region, recorded, key, ours);
            if !others.is_empty() {
                let regions = found.entry(key.clone()).or_default();
                regions.insert(region.clone());
                regions.extend(others.into_iter().map(str::to_owned));
            }
        }
    }
    found
}

/// The regions other than `region` whose digest for `key` differs from
/// `ours`.
fn differs<'r>(region: &str, recorded: &'r Recorded, key: &str, ours: &str) -> Vec<&'r str> {
    recorded
        .iter()
        .filter(|(other, _)| other.as_str() != region)
        .filter(|(_, theirs)| digest_in(theirs, key).is_some_and(|d| d != ours))
        .map(|(other, _)| other.as_str())
        .collect()
}

/// The digest that decides `key` in a record: its own, else `*`'s.
fn digest_in<'a>(digests: &'a Digests, key: &str) -> Option<&'a str> {
    digests
        .get(key)
        .or_else(|| digests.get(OTHERS))
        .map(String::as_str)
}

/// The digest of the settings that decide a group's grants: its rules and
/// its windows in their zone, whether it is split by zone and its canary
/// (each named only where it is set, so that a group's digest is what an
/// earlier version recorded). 16 bytes of SHA-256, as hex.
fn digest(rules: GroupRules, calendar: Option<&Calendar>, windows: &Schedule) -> String {
    let mut text = crate::domain::lock::gates::digest_text(&rules);
    if let Some(calendar) = calendar {
        let _ = write!(text, ";zone={};windows=", windows.zone_name());
        for window in calendar.windows() {
            let _ = write!(text, "[{window}]");
        }
    }
    Sha256::digest(text.as_bytes())[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digests(groups: &str, extra: &[(&str, &str)]) -> SettingsDigests {
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some(groups.to_owned()),
            _ => extra
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned()),
        })
        .unwrap();
        SettingsDigests::of(&config.groups, &config.windows)
    }

    fn group(name: &str) -> GroupName {
        GroupName::parse(name).unwrap()
    }

    #[test]
    fn every_deciding_setting_changes_a_groups_digest_and_nothing_else_does() {
        let base = digests("workers=3,db=1,*=1", &[]);
        let workers = base.for_group(&group("workers")).unwrap().to_owned();
        assert_eq!(workers.len(), 32);
        for (name, value) in [
            ("FLEETLOCK_SETTLE", "workers=10m"),
            ("FLEETLOCK_LEASE", "workers=6h"),
            ("FLEETLOCK_DRAIN", "workers=15m"),
            ("FLEETLOCK_RETURN", "workers=20m"),
            ("FLEETLOCK_ZONES", "workers"),
            ("FLEETLOCK_CANARY", "workers=30m"),
            (
                "FLEETLOCK_WINDOWS",
                "workers: days=Sat start_time=22:00 length_minutes=60",
            ),
        ] {
            let changed = digests("workers=3,db=1,*=1", &[(name, value)]);
            assert_ne!(
                changed.for_group(&group("workers")),
                Some(workers.as_str()),
                "{name}"
            );
            assert_eq!(
                changed.for_group(&group("db")),
                base.for_group(&group("db")),
                "{name} of workers leaves db alone"
            );
        }
        assert_ne!(
            digests("workers=4,db=1,*=1", &[]).for_group(&group("workers")),
            Some(workers.as_str())
        );
        // What a drain timeout does (hold or grant) decides grants too.
        let drain = |spec| digests("workers=3", &[("FLEETLOCK_DRAIN", spec)]);
        assert_ne!(
            drain("workers=15m").for_group(&group("workers")),
            drain("workers=15m:grant").for_group(&group("workers"))
        );
        // Each part of a canary decides grants: the bake, the waves and
        // how long a wave's node may be out.
        let canary = |spec| {
            digests("workers=3", &[("FLEETLOCK_CANARY", spec)])
                .for_group(&group("workers"))
                .map(str::to_owned)
        };
        for (one, other) in [
            ("workers=30m", "workers=20m"),
            ("workers=30m", "workers=30m:1+3"),
            ("workers=30m:1+3", "workers=30m:1+3:2h"),
        ] {
            assert_ne!(canary(one), canary(other), "{one} against {other}");
        }
        assert_eq!(
            canary("workers=30m"),
            canary("workers=30m:1:1h"),
            "the defaults"
        );
        // Who may call and the order of the list decide no grant.
        let reordered = digests("db=1,*=1,workers=3", &[("FLEETLOCK_AUTH", "disabled")]);
        assert_eq!(reordered, base);
        // A group only `*` covers is decided by `*`'s settings.
        assert_eq!(
            base.for_group(&group("anything")),
            base.as_map().get(OTHERS).map(String::as_str)
        );
        assert_eq!(digests("workers=3", &[]).for_group(&group("other")), None);
    }

    #[test]
    fn a_region_that_recorded_other_settings_for_the_group_disagrees() {
        let here = digests("workers=3,db=1", &[]);
        let there = digests("workers=1,db=1", &[]);
        let recorded = Recorded::from([
            ("eu-west-1".to_owned(), here.as_map().clone()),
            ("eu-central-1".to_owned(), there.as_map().clone()),
            // A region that serves only `*`: its `*` decides workers there.
            ("eu-west-2".to_owned(), digests("*=3", &[]).as_map().clone()),
        ]);
        assert_eq!(
            here.disagreeing("eu-west-1", &recorded, &group("workers")),
            Some("eu-central-1")
        );
        assert_eq!(
            here.disagreeing("eu-west-1", &recorded, &group("db")),
            Some("eu-west-2"),
            "db=1 here, '*=3' there"
        );
        let alone = Recorded::from([("eu-west-1".to_owned(), here.as_map().clone())]);
        assert_eq!(
            here.disagreeing("eu-west-1", &alone, &group("workers")),
            None
        );
        assert_eq!(
            here.disagreements("eu-west-1", &recorded),
            [
                ("eu-west-2".to_owned(), "db".to_owned()),
                ("eu-central-1".to_owned(), "workers".to_owned()),
            ],
            "workers=3 here and '*=3' there agree"
        );
        // A region that does not serve the group refuses it: no conflict.
        let narrow = Recorded::from([("x".to_owned(), digests("db=1", &[]).as_map().clone())]);
        assert_eq!(
            here.disagreeing("eu-west-1", &narrow, &group("workers")),
            None
        );
    }

    #[test]
    fn a_person_sees_which_groups_differ_and_between_which_regions() {
        let record = |digests: &SettingsDigests| digests.as_map().clone();
        let one = digests("db=1,workers=3", &[]);
        let three = digests("db=3,workers=3", &[]);
        let wildcard = digests("*=1", &[]);
        let mut recorded = Recorded::new();
        recorded.insert("eu-west-1".into(), record(&one));
        recorded.insert("eu-west-2".into(), record(&one));
        assert!(differing(&recorded).is_empty(), "the same settings agree");
        recorded.insert("eu-west-3".into(), record(&three));
        let found = differing(&recorded);
        assert_eq!(found.keys().collect::<Vec<_>>(), ["db"]);
        assert_eq!(
            found["db"].iter().collect::<Vec<_>>(),
            ["eu-west-1", "eu-west-2", "eu-west-3"]
        );
        // A region serving the groups through '*' (1 slot each) agrees on
        // db and differs on workers, as its function would find.
        recorded.insert("eu-west-3".into(), record(&wildcard));
        let found = differing(&recorded);
        assert_eq!(found.keys().collect::<Vec<_>>(), ["workers"], "{found:?}");
        assert_eq!(found["workers"].len(), 3);
    }
}
