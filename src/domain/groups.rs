//! The groups and their rules as the settings write them: slots per group
//! (`FLEETLOCK_GROUPS`), the groups split by zone (`FLEETLOCK_ZONES`), the
//! bound on the groups only `*` covers, and the rules of each group (one
//! [`GroupRules`] per group a setting names and one for `*`), which each
//! gate's setting sets through its module's parse
//! ([`crate::domain::lock::gates::GroupSetting`]).
//! Parsed here, pure; [`crate::config`] reads the variables.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::domain::error::Error;
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRules;
use crate::domain::lock::gates::{self, GroupSetting, ReadError};
use crate::domain::lock::zones::{ZonesGate, parse_zones};
use crate::domain::names::Unnameable;
// Read by every setting and command that takes a duration up to a day.
pub use crate::domain::lock::settle::parse_duration;
use crate::domain::zones;

/// Why a group setting was refused: its variable, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {why}")]
pub struct GroupsError {
    pub variable: String,
    pub why: String,
}

impl GroupsError {
    fn of<Why: fmt::Display>(variable: &str) -> impl Fn(Why) -> Self {
        move |why| GroupsError {
            variable: variable.to_owned(),
            why: why.to_string(),
        }
    }
}

/// Used when `FLEETLOCK_GROUPS` is unset: Zincati's default group, one slot.
pub(crate) const DEFAULT_GROUPS: &str = "default=1";

/// The most slots a group may have. Each holder is an attribute of its
/// group's item: 500 holders with the longest ids an older version stored
/// (256 bytes) make an item of about 133 KB, a third of DynamoDB's 400 KB
/// item limit, which leaves room for the pause and the alarms.
pub const MAX_SLOTS: u32 = 500;

/// How many groups only `*` covers may have an item, unless
/// `FLEETLOCK_MAX_WILDCARD_GROUPS` says otherwise.
pub(crate) const DEFAULT_WILDCARD_GROUPS: u32 = 100;
/// The highest `FLEETLOCK_MAX_WILDCARD_GROUPS`: their names are kept in one
/// item, at most 64 characters each.
pub(crate) const MAX_WILDCARD_GROUPS: u32 = 2000;

/// What the settings say of one group, or (as the `*` entry) of every
/// group no setting names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Settings {
    /// `FLEETLOCK_GROUPS`; `None` for a group only `*` gives slots (another
    /// setting names it), and for the `*` entry of a list without `*`.
    slots: Option<u32>,
    /// Its gates as their settings set them: a gate's variable's value for
    /// the group, else its `*` value, else none. Its slots and what a
    /// request sets are [`GroupSlots::rules_of`]'s.
    rules: GroupRules,
}

/// The groups and their rules: slots per group from `FLEETLOCK_GROUPS`
/// (`default=1,workers=3,*=2`), and each gate's setting, kept per group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSlots {
    /// Every group a setting names, with what each says of it.
    groups: BTreeMap<GroupName, Settings>,
    /// The `*` entries: `*=N` gives every valid group not listed N slots.
    others: Settings,
    /// From `FLEETLOCK_ZONES`: groups split by zone ([`crate::domain::zones`]).
    zoned: BTreeSet<GroupName>,
    /// How many groups only `*` covers may have an item.
    wildcard_limit: u32,
}

/// Why a list of values per group was refused, after its variable's name.
#[derive(Debug, thiserror::Error)]
enum EntriesError {
    #[error("empty entry in '{spec}'; expected e.g. '{example}'")]
    Empty { spec: String, example: &'static str },
    #[error("entry '{entry}' is not of the form {form}")]
    NotAnEntry { entry: String, form: &'static str },
    #[error("group '{name}': {why}")]
    BadName { name: String, why: String },
    #[error("'*' is listed twice")]
    StarTwice,
    #[error("group '{0}' is listed twice")]
    Twice(String),
    #[error("slot count '{count}' of '{name}' is not a whole number from 0 up")]
    NotASlotCount { count: String, name: String },
    #[error(
        "slot count {slots} of '{name}' is above {MAX_SLOTS}, the most a group can hold: every \
         holder is part of the group's one DynamoDB item"
    )]
    TooManySlots { slots: u32, name: String },
    /// A group's value, in its gate's words.
    #[error("'{name}': {why}")]
    Value { name: String, why: ReadError },
    /// `what` (a gate's value) for `*`, which has no slots.
    #[error("'*' is given {0} but FLEETLOCK_GROUPS has no '*'")]
    StarWithoutSlots(&'static str),
    #[error(transparent)]
    Unnameable(#[from] Unnameable),
}

/// A value per group, as `FLEETLOCK_GROUPS` and `FLEETLOCK_SETTLE` write it:
/// `GROUP=VALUE` entries separated by commas, `*` for every group not listed,
/// each at most once. `value` reads an entry's value (given the group's name),
/// and `accept` vets a group (`None` for `*`) before it is recorded.
fn per_group<T>(
    spec: &str,
    form: &'static str,
    example: &'static str,
    value: impl Fn(&str, &str) -> Result<T, EntriesError>,
    accept: impl Fn(Option<&GroupName>) -> Result<(), EntriesError>,
) -> Result<(BTreeMap<GroupName, T>, Option<T>), EntriesError> {
    let mut listed = BTreeMap::new();
    let mut others = None;
    for entry in spec.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(EntriesError::Empty {
                spec: spec.to_owned(),
                example,
            });
        }
        let (name, text) = entry
            .split_once('=')
            .ok_or_else(|| EntriesError::NotAnEntry {
                entry: entry.to_owned(),
                form,
            })?;
        let (name, text) = (name.trim(), text.trim());
        let parsed = value(name, text)?;
        if name == "*" {
            accept(None)?;
            if others.replace(parsed).is_some() {
                return Err(EntriesError::StarTwice);
            }
            continue;
        }
        let group = GroupName::parse(name).map_err(|e| EntriesError::BadName {
            name: name.to_owned(),
            why: e.value(),
        })?;
        accept(Some(&group))?;
        if listed.insert(group, parsed).is_some() {
            return Err(EntriesError::Twice(name.to_owned()));
        }
    }
    Ok((listed, others))
}

impl GroupSlots {
    /// Whether Zincati's default group (a node without `[identity] group`
    /// asks for `default`) gets slots.
    pub(crate) fn covers_default(&self) -> bool {
        GroupName::parse("default").is_ok_and(|default| self.slots_for(&default).is_ok())
    }

    pub fn parse(spec: &str) -> Result<Self, GroupsError> {
        let (listed, others) = per_group(
            spec,
            "GROUP=SLOTS",
            "default=1,workers=3",
            |name, count| {
                let slots: u32 = count.parse().map_err(|_| EntriesError::NotASlotCount {
                    count: count.to_owned(),
                    name: name.to_owned(),
                })?;
                if slots > MAX_SLOTS {
                    return Err(EntriesError::TooManySlots {
                        slots,
                        name: name.to_owned(),
                    });
                }
                Ok(slots)
            },
            |_| Ok(()),
        )
        .map_err(GroupsError::of("FLEETLOCK_GROUPS"))?;
        let groups = listed
            .into_iter()
            .map(|(group, slots)| {
                let settings = Settings {
                    slots: Some(slots),
                    ..Settings::default()
                };
                (group, settings)
            })
            .collect();
        Ok(Self {
            groups,
            others: Settings {
                slots: others,
                ..Settings::default()
            },
            zoned: BTreeSet::new(),
            wildcard_limit: DEFAULT_WILDCARD_GROUPS,
        })
    }

    /// Sets how many groups only `*` covers may have an item
    /// (`FLEETLOCK_MAX_WILDCARD_GROUPS`): 1 to [`MAX_WILDCARD_GROUPS`].
    pub fn with_wildcard_limit(mut self, text: &str) -> Result<Self, GroupsError> {
        let bad = |why: String| Err(GroupsError::of("FLEETLOCK_MAX_WILDCARD_GROUPS")(why));
        let limit: u32 = match text.trim().parse() {
            Ok(limit) => limit,
            Err(_) => return bad(format!("'{text}' is not a whole number")),
        };
        if !(1..=MAX_WILDCARD_GROUPS).contains(&limit) {
            return bad(format!("{limit} is not from 1 to {MAX_WILDCARD_GROUPS}"));
        }
        self.wildcard_limit = limit;
        Ok(self)
    }

    /// How many groups only `*` covers may have an item.
    pub(crate) fn wildcard_limit(&self) -> u32 {
        self.wildcard_limit
    }

    /// Each drain gate's timeout: of the groups listed (with their name),
    /// then of every group `*` covers.
    pub(crate) fn drain_timeouts(&self) -> impl Iterator<Item = (Option<&GroupName>, Duration)> {
        let listed = self.listed().filter_map(|(group, _)| {
            let drain = self.rules_for(group).ok()?.drain?;
            Some((Some(group), drain.timeout))
        });
        listed.chain(self.others.rules.drain.map(|drain| (None, drain.timeout)))
    }

    /// Whether any group has a drain gate.
    pub(crate) fn drains(&self) -> bool {
        self.any(|rules| rules.drain.is_some())
    }

    /// Adds the groups of `FLEETLOCK_ZONES` (`workers,db`), split by zone:
    /// each named in FLEETLOCK_GROUPS (never `*`), none a zone of another,
    /// and no group FLEETLOCK_GROUPS lists one of their zones.
    pub fn with_zones(mut self, spec: &str) -> Result<Self, GroupsError> {
        let bad = |why: String| Err(GroupsError::of(ZonesGate::VARIABLE)(why));
        let unlisted =
            |group: &GroupName| (!self.is_listed(group)).then(|| self.not_configured(group));
        let zoned = match parse_zones(spec, unlisted) {
            Ok(zoned) => zoned,
            Err(why) => return bad(why.to_string()),
        };
        for (group, _) in self.listed() {
            if let Some((parent, _)) = zones::under(&zoned, group) {
                return bad(format!(
                    "group '{group}' is under '{parent}', which is split by zone: a node \
                     asking with that name takes a slot of '{parent}', so FLEETLOCK_GROUPS \
                     may not give it slots of its own (nor may '{group}' be split again)"
                ));
            }
        }
        self.zoned = zoned;
        Ok(self)
    }

    /// Whether any group has a canary.
    pub(crate) fn canaries(&self) -> bool {
        self.any(|rules| rules.canary.is_some())
    }

    /// Whether a group's rules, or the `*` entry's, say `which`.
    fn any(&self, which: impl Fn(&GroupRules) -> bool) -> bool {
        self.groups.values().any(|s| which(&s.rules)) || which(&self.others.rules)
    }

    /// The groups split by zone.
    pub(crate) fn zoned(&self) -> impl Iterator<Item = &GroupName> + Clone {
        self.zoned.iter()
    }

    /// Whether `group` is split by zone (named in `FLEETLOCK_ZONES`).
    pub(crate) fn is_zoned(&self, group: &GroupName) -> bool {
        self.zoned.contains(group)
    }

    /// Whether `FLEETLOCK_GROUPS` names `group` itself.
    pub(crate) fn is_listed(&self, group: &GroupName) -> bool {
        self.groups.get(group).is_some_and(|s| s.slots.is_some())
    }

    /// The split group whose slots `group` takes, where `group` is one of
    /// its zones' groups (not the split group's own name): a credential
    /// for the split group reaches it.
    pub(crate) fn zone_parent(&self, group: &GroupName) -> Option<GroupName> {
        self.meaning(group)
            .ok()
            .filter(|meaning| meaning.is_zone_of(group))
            .map(|meaning| meaning.group)
    }

    /// Whether any group has a return gate.
    pub(crate) fn returns(&self) -> bool {
        self.any(|rules| rules.return_timeout.is_some())
    }

    /// Sets a gate's part of each group's rules from its variable
    /// (`variable`, e.g. `FLEETLOCK_LEASE`, as `workers=6h,*=1h`), for
    /// groups these slots configure only; what it said before is replaced.
    /// The variable is one of [`gates::settings`]'.
    pub fn with_setting(self, variable: &str, spec: &str) -> Result<Self, GroupsError> {
        match gates::settings().find(|setting| setting.variable == variable) {
            Some(setting) => self.set(setting, spec),
            None => Err(GroupsError::of(variable)(
                "no gate of a group is set by this variable",
            )),
        }
    }

    /// The variables [`Self::with_setting`] reads: each gate's set per
    /// group, in the list's order.
    pub fn setting_variables() -> impl Iterator<Item = &'static str> {
        gates::settings().map(|setting| setting.variable)
    }

    fn set(mut self, setting: &GroupSetting, spec: &str) -> Result<Self, GroupsError> {
        let what = setting.what;
        let (named, others) = per_group(
            spec,
            "GROUP=DURATION",
            setting.example,
            |name, text| {
                let mut read = GroupRules::default();
                (setting.read)(text, &mut read).map_err(|why| EntriesError::Value {
                    name: name.to_owned(),
                    why,
                })?;
                Ok(read)
            },
            |group| match group {
                None if self.others.slots.is_none() => Err(EntriesError::StarWithoutSlots(what)),
                Some(group) => Ok(self.setting_may_name(group)?),
                None => Ok(()),
            },
        )
        .map_err(GroupsError::of(setting.variable))?;
        // A group named gets an entry of its own, with what the other
        // gates' `*` values gave it; then each group takes its value, else
        // the `*` value (none without one).
        for group in named.keys() {
            let everyone = &self.others.rules;
            self.groups
                .entry(group.clone())
                .or_insert_with(|| Settings {
                    slots: None,
                    rules: *everyone,
                });
        }
        let others = others.unwrap_or_default();
        (setting.copy)(&others, &mut self.others.rules);
        for (group, settings) in &mut self.groups {
            (setting.copy)(named.get(group).unwrap_or(&others), &mut settings.rules);
        }
        // What says no more than the `*` entry is the same as no entry.
        let everyone = &self.others.rules;
        self.groups
            .retain(|_, settings| settings.slots.is_some() || settings.rules != *everyone);
        Ok(self)
    }

    /// Slots, settle time and lease of a group, or `unknown_group`.
    pub fn rules_for(&self, group: &GroupName) -> Result<GroupRules, Error> {
        self.slots_for(group)?;
        Ok(self.rules_of(group))
    }

    /// The rules the settings give `group` itself, as a person reads them
    /// and the regions compare them: a group split by zone names its own
    /// zone group, so that the zones gate has its say.
    pub(crate) fn rules_as_set(&self, group: &GroupName) -> Result<GroupRules, Error> {
        let mut rules = self.rules_for(group)?;
        rules.zone = self.is_zoned(group).then(|| zones::ZoneGroup::of(group));
        Ok(rules)
    }

    /// The rules of a group the names' reading gave ([`Self::meaning`]'s
    /// `group`: listed, or only `*` covers it), read once per request.
    pub(crate) fn rules_of(&self, group: &GroupName) -> GroupRules {
        let own = self.groups.get(group).unwrap_or(&self.others);
        self.rules_from(own, self.is_listed(group))
    }

    /// The rules of a group whose settings are `own`: its gates, its slots
    /// (else the `*` entry's), and the bound of a group only `*` covers. No
    /// zone: no setting writes one, a request's zone group does.
    fn rules_from(&self, own: &Settings, listed: bool) -> GroupRules {
        GroupRules {
            slots: own.slots.or(self.others.slots).unwrap_or_default(),
            wildcard_limit: (!listed).then_some(self.wildcard_limit),
            ..own.rules
        }
    }

    /// The slot count of a group named as itself, or `unknown_group` if
    /// this server does not coordinate it ([`Self::meaning`]: `*` never
    /// covers a name a configured group could mean), or `invalid_group`
    /// for a zone's group, whose slots are its split group's.
    pub fn slots_for(&self, group: &GroupName) -> Result<u32, Error> {
        let meaning = self.meaning(group)?;
        if meaning.is_zone_of(group) {
            return Err(Error::InvalidGroup(format!(
                "group '{group}' is {}: it takes the slots of '{}'",
                zones::zone_of(group, &meaning.group),
                meaning.group
            )));
        }
        Ok(self.rules_of(group).slots)
    }

    pub(crate) fn listed(&self) -> impl Iterator<Item = (&GroupName, u32)> {
        self.groups
            .iter()
            .filter_map(|(group, settings)| Some((group, settings.slots?)))
    }

    pub(crate) fn others(&self) -> Option<u32> {
        self.others.slots
    }

    /// The rules of every group `*` covers, if there is a `*`.
    pub(crate) fn others_rules(&self) -> Option<GroupRules> {
        self.others.slots?;
        Some(self.rules_from(&self.others, false))
    }
}

impl Default for GroupSlots {
    fn default() -> Self {
        Self::parse(DEFAULT_GROUPS).expect("the built-in default parses")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str) -> GroupName {
        GroupName::parse(name).unwrap()
    }

    /// The groups of `workers=3,*=2` with `settings` set in their order.
    fn set(settings: &[(&str, &str)]) -> GroupSlots {
        let mut groups = GroupSlots::parse("workers=3,*=2").unwrap();
        for (variable, spec) in settings {
            groups = groups.with_setting(variable, spec).unwrap();
        }
        groups
    }

    #[test]
    fn each_gate_takes_a_groups_own_value_else_the_star_value_in_any_order() {
        let settings = [
            ("FLEETLOCK_SETTLE", "other=5m"),
            ("FLEETLOCK_LEASE", "*=6h,workers=1h"),
            ("FLEETLOCK_DRAIN", "other=15m:grant,*=30m"),
            ("FLEETLOCK_RETURN", "workers=20m"),
            ("FLEETLOCK_CANARY", "*=30m:1+3"),
        ];
        let forward = set(&settings);
        let mut reversed = settings;
        reversed.reverse();
        assert_eq!(forward, set(&reversed));

        let minutes = |m: u64| Duration::from_secs(m * 60);
        // Named only by FLEETLOCK_SETTLE and FLEETLOCK_DRAIN, slots from `*`.
        let other = forward.rules_for(&group("other")).unwrap();
        assert_eq!(other.slots, 2);
        assert_eq!(other.wildcard_limit, Some(DEFAULT_WILDCARD_GROUPS));
        assert_eq!(other.settle, minutes(5));
        assert_eq!(other.lease, Some(minutes(360)));
        let drain = other.drain.unwrap();
        assert_eq!(drain.timeout, minutes(15));
        assert_eq!(drain.on_timeout, crate::domain::lock::OnDrainTimeout::Grant);
        assert_eq!(other.return_timeout, None);
        assert!(other.canary.is_some());

        let workers = forward.rules_for(&group("workers")).unwrap();
        assert_eq!(workers.slots, 3);
        assert_eq!(workers.wildcard_limit, None);
        assert_eq!(workers.settle, Duration::ZERO);
        assert_eq!(workers.lease, Some(minutes(60)));
        assert_eq!(workers.drain.unwrap().timeout, minutes(30));
        assert_eq!(workers.return_timeout, Some(minutes(20)));

        // A group no setting names has the `*` values.
        let anyone = forward.rules_for(&group("anyone")).unwrap();
        assert_eq!(Some(anyone), forward.others_rules());
        assert_eq!(anyone.settle, Duration::ZERO);
        assert_eq!(anyone.drain.unwrap().timeout, minutes(30));
    }

    #[test]
    fn a_setting_set_again_replaces_what_it_said() {
        let once = set(&[("FLEETLOCK_SETTLE", "other=5m,workers=1m")]);
        let again = once.with_setting("FLEETLOCK_SETTLE", "*=2m").unwrap();
        assert_eq!(again, set(&[("FLEETLOCK_SETTLE", "*=2m")]));
        let minutes = |m: u64| Duration::from_secs(m * 60);
        for name in ["other", "workers"] {
            let rules = again.rules_for(&group(name)).unwrap();
            assert_eq!(rules.settle, minutes(2), "{name}");
        }
        let cleared = again
            .with_setting("FLEETLOCK_SETTLE", "workers=0s")
            .unwrap();
        assert_eq!(
            cleared,
            set(&[])
                .with_setting("FLEETLOCK_SETTLE", "workers=0s")
                .unwrap()
        );
    }

    /// The order `config check` reads them in, hence the order of its
    /// mistakes: the gates' list's.
    #[test]
    fn the_settings_of_the_gates_are_read_in_the_lists_order() {
        assert_eq!(
            GroupSlots::setting_variables().collect::<Vec<_>>(),
            [
                "FLEETLOCK_SETTLE",
                "FLEETLOCK_LEASE",
                "FLEETLOCK_DRAIN",
                "FLEETLOCK_RETURN",
                "FLEETLOCK_CANARY"
            ]
        );
    }

    #[test]
    fn a_variable_that_sets_no_gate_is_refused_by_its_name() {
        let err = set(&[])
            .with_setting("FLEETLOCK_TABLE", "workers=5m")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "FLEETLOCK_TABLE: no gate of a group is set by this variable"
        );
    }
}
