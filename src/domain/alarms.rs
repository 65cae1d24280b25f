//! Pauses that follow CloudWatch alarms, pure: which alarms gate which groups
//! (`FLEETLOCK_ALARM_PAUSES`), and what to change so that the stored pauses
//! match the alarms' current states. The adapter ([`crate::entry::alarm_pauses`])
//! reads the states and the table and makes the changes.
//!
//! Only ALARM pauses. OK clears, and so do INSUFFICIENT_DATA (no data is not
//! a reason to stop a rollout; an alarm that should pause on missing data
//! says so with `TreatMissingData: breaching`) and a deleted alarm (nothing
//! would ever clear its pause otherwise).

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;

use crate::domain::input::GroupName;

/// The groups one alarm gates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gated {
    /// `*`: every group with an item, and every group named in the
    /// configuration.
    All,
    Groups(BTreeSet<GroupName>),
}

/// Which alarms gate which groups.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct AlarmGates {
    gates: BTreeMap<String, Gated>,
}

/// CloudWatch's alarm names: 1 to 255 characters, none a control character.
const MAX_ALARM_NAME: usize = 255;

/// Why `FLEETLOCK_ALARM_PAUSES` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AlarmGatesError {
    #[error("'{0}' is not ALARM=GROUPS (e.g. 'api-5xx=*' or 'db-latency=workers,db')")]
    NotAlarmGroups(String),
    #[error("'{0}' is not an alarm name (1 to {MAX_ALARM_NAME} printable characters)")]
    AlarmName(String),
    #[error("alarm '{0}' gates no group ('*' for all)")]
    NoGroup(String),
    /// A group name refused, as a node's request would be.
    #[error("alarm '{alarm}': {why}")]
    GroupName { alarm: String, why: String },
    #[error("alarm '{0}' is listed twice")]
    Twice(String),
}

impl AlarmGates {
    /// `ALARM=GROUP,GROUP;ALARM=*`: entries separated by `;`, each split at
    /// its last `=` (an alarm name may hold one).
    pub(crate) fn parse(spec: &str) -> Result<Self, AlarmGatesError> {
        let mut gates = BTreeMap::new();
        for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let Some((alarm, groups)) = entry.rsplit_once('=') else {
                return Err(AlarmGatesError::NotAlarmGroups(entry.to_owned()));
            };
            let alarm = alarm.trim();
            if alarm.is_empty()
                || alarm.chars().count() > MAX_ALARM_NAME
                || alarm.chars().any(char::is_control)
            {
                return Err(AlarmGatesError::AlarmName(alarm.to_owned()));
            }
            let gated = match groups.trim() {
                "*" => Gated::All,
                "" => return Err(AlarmGatesError::NoGroup(alarm.to_owned())),
                list => Gated::Groups(
                    list.split(',')
                        .map(|g| GroupName::parse(g.trim()).map_err(|e| e.value()))
                        .collect::<Result<_, _>>()
                        .map_err(|why| AlarmGatesError::GroupName {
                            alarm: alarm.to_owned(),
                            why,
                        })?,
                ),
            };
            if gates.insert(alarm.to_owned(), gated).is_some() {
                return Err(AlarmGatesError::Twice(alarm.to_owned()));
            }
        }
        Ok(Self { gates })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.gates.is_empty()
    }

    pub(crate) fn alarm_names(&self) -> impl Iterator<Item = &str> {
        self.gates.keys().map(String::as_str)
    }

    pub(crate) fn gates_alarm(&self, alarm: &str) -> bool {
        self.gates.contains_key(alarm)
    }

    /// The alarms that pause `group` (`None`: a group only `*` covers,
    /// which only an alarm on `*` gates).
    pub(crate) fn alarms_for(&self, group: Option<&GroupName>) -> Vec<&str> {
        self.gates
            .iter()
            .filter(|(_, gated)| match (gated, group) {
                (Gated::All, _) => true,
                (Gated::Groups(groups), Some(group)) => groups.contains(group),
                (Gated::Groups(_), None) => false,
            })
            .map(|(alarm, _)| alarm.as_str())
            .collect()
    }

    fn gates(&self, alarm: &str, group: &GroupName) -> bool {
        match self.gates.get(alarm) {
            Some(Gated::All) => true,
            Some(Gated::Groups(groups)) => groups.contains(group),
            None => false,
        }
    }

    /// The first alarm that names a group `known` does not know, and that
    /// group: a pause that would guard nothing (a typo, most likely).
    pub(crate) fn unknown_group(
        &self,
        known: impl Fn(&GroupName) -> bool,
    ) -> Option<(&str, &GroupName)> {
        self.gates.iter().find_map(|(alarm, gated)| match gated {
            Gated::All => None,
            Gated::Groups(groups) => groups
                .iter()
                .find(|group| !known(group))
                .map(|group| (alarm.as_str(), group)),
        })
    }

    /// The groups named by any alarm.
    fn named_groups(&self) -> impl Iterator<Item = &GroupName> {
        self.gates.values().flat_map(|gated| {
            match gated {
                Gated::All => None,
                Gated::Groups(groups) => Some(groups.iter()),
            }
            .into_iter()
            .flatten()
        })
    }

    fn any_gates_all(&self) -> bool {
        self.gates.values().any(|gated| *gated == Gated::All)
    }

    /// The groups the configuration knows that an alarm gates: those an
    /// alarm names, and with `*` those `FLEETLOCK_GROUPS` names. They are
    /// reconciled first, before any group nobody configured.
    pub(crate) fn known_groups(&self, configured: &[GroupName]) -> BTreeSet<GroupName> {
        let mut known: BTreeSet<GroupName> = self.named_groups().cloned().collect();
        if self.any_gates_all() {
            known.extend(configured.iter().cloned());
        }
        known
    }
}

/// An alarm's state as CloudWatch reports it, or its absence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AlarmState {
    Alarm,
    Ok,
    InsufficientData,
    /// DescribeAlarms did not return it: deleted, or never created.
    Missing,
}

impl AlarmState {
    pub(crate) fn parse(state: &str) -> Self {
        match state {
            "ALARM" => AlarmState::Alarm,
            "OK" => AlarmState::Ok,
            _ => AlarmState::InsufficientData,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AlarmState::Alarm => "ALARM",
            AlarmState::Ok => "OK",
            AlarmState::InsufficientData => "INSUFFICIENT_DATA",
            AlarmState::Missing => "missing",
        }
    }
}

/// One write to make.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Change {
    Pause { group: GroupName, alarm: String },
    Clear { group: GroupName, alarm: String },
}

impl Change {
    pub(crate) fn group(&self) -> &GroupName {
        match self {
            Change::Pause { group, .. } | Change::Clear { group, .. } => group,
        }
    }
}

/// The changes that make every group's alarm pauses match the alarms' states:
/// a group is paused by exactly the alarms that gate it and are in ALARM.
/// `stored` is every group with an item and the alarms pausing it now;
/// `configured` the groups named in `FLEETLOCK_GROUPS`, which `*` covers
/// even before they have an item. An alarm stored on a group but no longer
/// configured for it is cleared too.
pub(crate) fn reconcile(
    gates: &AlarmGates,
    states: &BTreeMap<String, AlarmState>,
    stored: &[(GroupName, BTreeSet<String>)],
    configured: &[GroupName],
) -> Vec<Change> {
    let mut groups: BTreeMap<&GroupName, Option<&BTreeSet<String>>> = BTreeMap::new();
    for group in gates.named_groups() {
        groups.insert(group, None);
    }
    if gates.any_gates_all() {
        for group in configured {
            groups.insert(group, None);
        }
    }
    for (group, alarms) in stored {
        groups.insert(group, Some(alarms));
    }
    let empty = BTreeSet::new();
    let mut changes = Vec::new();
    for (group, current) in groups {
        let current = current.unwrap_or(&empty);
        let wanted: BTreeSet<&str> = gates
            .alarm_names()
            .filter(|alarm| states.get(*alarm) == Some(&AlarmState::Alarm))
            .filter(|alarm| gates.gates(alarm, group))
            .collect();
        for alarm in &wanted {
            if !current.contains(*alarm) {
                changes.push(Change::Pause {
                    group: group.clone(),
                    alarm: (*alarm).to_owned(),
                });
            }
        }
        for alarm in current {
            if !wanted.contains(alarm.as_str()) {
                changes.push(Change::Clear {
                    group: group.clone(),
                    alarm: alarm.clone(),
                });
            }
        }
    }
    changes
}

/// On a global table each region's alarm-pauses function follows its own
/// region's alarms, and writes and clears only its own pauses: stored as
/// `REGION/ALARM` (`FLEETLOCK_REGION`), so that one region's reconcile never
/// clears another's. Without a region, the alarm's own name.
pub(crate) fn stored_name(region: Option<&str>, alarm: &str) -> String {
    match region {
        Some(region) => format!("{region}/{alarm}"),
        None => alarm.to_owned(),
    }
}

/// The pauses of `stored` this function owns, by their alarm's own name:
/// with a region, those stored under it; without, all.
pub(crate) fn own_pauses(region: Option<&str>, stored: &BTreeSet<String>) -> BTreeSet<String> {
    match region {
        Some(region) => stored
            .iter()
            .filter_map(|name| name.strip_prefix(region)?.strip_prefix('/'))
            .map(str::to_owned)
            .collect(),
        None => stored.clone(),
    }
}

/// Where alarm states come from: CloudWatch in production. Every name asked
/// for is in the answer; one CloudWatch did not return is `Missing`.
pub(crate) trait AlarmStates: Send + Sync + 'static {
    fn states(
        &self,
        names: &[String],
    ) -> impl Future<Output = Result<BTreeMap<String, AlarmState>, AlarmsUnread>> + Send;
}

/// The alarms' states could not be read: nothing is decided, and the source
/// says why in its own words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct AlarmsUnread(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> GroupName {
        GroupName::parse(name).unwrap()
    }

    fn states(pairs: &[(&str, AlarmState)]) -> BTreeMap<String, AlarmState> {
        pairs.iter().map(|(n, s)| (n.to_string(), *s)).collect()
    }

    fn stored(pairs: &[(&str, &[&str])]) -> Vec<(GroupName, BTreeSet<String>)> {
        pairs
            .iter()
            .map(|(g, alarms)| (group(g), alarms.iter().map(|a| a.to_string()).collect()))
            .collect()
    }

    fn pause(g: &str, alarm: &str) -> Change {
        Change::Pause {
            group: group(g),
            alarm: alarm.into(),
        }
    }

    fn clear(g: &str, alarm: &str) -> Change {
        Change::Clear {
            group: group(g),
            alarm: alarm.into(),
        }
    }

    #[test]
    fn a_region_owns_only_the_pauses_stored_under_its_name() {
        let stored: BTreeSet<String> = [
            "eu-west-1/api-5xx",
            "eu-west-10/api-5xx",
            "eu-central-1/api-5xx",
            "plain",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            own_pauses(Some("eu-west-1"), &stored),
            BTreeSet::from(["api-5xx".to_owned()])
        );
        assert_eq!(own_pauses(None, &stored), stored);
        assert_eq!(
            stored_name(Some("eu-west-1"), "api-5xx"),
            "eu-west-1/api-5xx"
        );
        assert_eq!(stored_name(None, "api-5xx"), "api-5xx");
    }

    #[test]
    fn parses_alarms_with_their_groups_or_all() {
        let gates = AlarmGates::parse(" api-5xx=* ; db latency=workers, db ;; ").unwrap();
        assert_eq!(
            gates.alarm_names().collect::<Vec<_>>(),
            ["api-5xx", "db latency"]
        );
        assert!(gates.gates("api-5xx", &group("anything")));
        assert!(gates.gates("db latency", &group("db")));
        assert!(!gates.gates("db latency", &group("default")));
        // Split at the last '=': an alarm name may hold one.
        let odd = AlarmGates::parse("p99=2s=workers").unwrap();
        assert!(odd.gates("p99=2s", &group("workers")));
        assert!(AlarmGates::parse("").unwrap().is_empty());
    }

    #[test]
    fn refuses_what_is_not_alarm_equals_groups() {
        for (spec, says) in [
            ("api-5xx", "not ALARM=GROUPS"),
            ("=workers", "not an alarm name"),
            ("api-5xx=", "gates no group"),
            ("api-5xx=bad group!", "alarm 'api-5xx'"),
            ("a=*;a=workers", "listed twice"),
        ] {
            let why = AlarmGates::parse(spec).unwrap_err().to_string();
            assert!(why.contains(says), "{spec}: {why}");
        }
        let long = format!("{}=*", "a".repeat(256));
        assert!(AlarmGates::parse(&long).is_err());
    }

    #[test]
    fn an_alarm_in_alarm_pauses_its_groups_and_only_those() {
        let gates = AlarmGates::parse("db=workers,db").unwrap();
        let changes = reconcile(
            &gates,
            &states(&[("db", AlarmState::Alarm)]),
            &stored(&[("workers", &[]), ("default", &[])]),
            &[],
        );
        // "db" has no item yet: the pause creates it.
        assert_eq!(changes, [pause("db", "db"), pause("workers", "db")]);
    }

    #[test]
    fn ok_insufficient_data_and_missing_all_clear() {
        let gates = AlarmGates::parse("a=*;b=*;c=*").unwrap();
        let now = states(&[
            ("a", AlarmState::Ok),
            ("b", AlarmState::InsufficientData),
            ("c", AlarmState::Missing),
        ]);
        let changes = reconcile(&gates, &now, &stored(&[("workers", &["a", "b", "c"])]), &[]);
        assert_eq!(
            changes,
            [
                clear("workers", "a"),
                clear("workers", "b"),
                clear("workers", "c")
            ]
        );
    }

    #[test]
    fn nothing_to_do_when_the_table_already_matches() {
        let gates = AlarmGates::parse("a=workers;b=workers").unwrap();
        let now = states(&[("a", AlarmState::Alarm), ("b", AlarmState::Alarm)]);
        assert!(reconcile(&gates, &now, &stored(&[("workers", &["a", "b"])]), &[]).is_empty());
        // One of two alarms clears: the other keeps the group paused.
        let now = states(&[("a", AlarmState::Ok), ("b", AlarmState::Alarm)]);
        assert_eq!(
            reconcile(&gates, &now, &stored(&[("workers", &["a", "b"])]), &[]),
            [clear("workers", "a")]
        );
    }

    #[test]
    fn star_covers_stored_and_configured_groups() {
        let gates = AlarmGates::parse("api=*").unwrap();
        let changes = reconcile(
            &gates,
            &states(&[("api", AlarmState::Alarm)]),
            &stored(&[("workers", &[])]),
            &[group("default"), group("workers")],
        );
        assert_eq!(changes, [pause("default", "api"), pause("workers", "api")]);
    }

    #[test]
    fn an_alarm_no_longer_configured_is_cleared() {
        let gates = AlarmGates::parse("new=workers").unwrap();
        let changes = reconcile(
            &gates,
            &states(&[("new", AlarmState::Ok)]),
            &stored(&[("workers", &["old"])]),
            &[],
        );
        assert_eq!(changes, [clear("workers", "old")]);
    }
}
