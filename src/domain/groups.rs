//! The groups and their rules as the settings write them: slots per group
//! (`FLEETLOCK_GROUPS`), the groups split by zone (`FLEETLOCK_ZONES`), the
//! bound on the groups only `*` covers, and each gate's setting kept per
//! group (one `Settings` per group and one for `*`; each gate's own value is
//! read by its module: `lock::settle`, `lock::lease`, `lock::drain`,
//! `lock::returns`, `canary`).
//! Parsed here, pure; [`crate::config`] reads the variables.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::domain::canary::{CanaryRule, parse_canary};
use crate::domain::error::Error;
use crate::domain::input::GroupName;
use crate::domain::lock::drain::{drain_rule, parse_drain};
use crate::domain::lock::lease::parse_lease;
use crate::domain::lock::returns::parse_return;
// Read by every setting and command that takes a duration up to a day.
pub use crate::domain::lock::settle::parse_duration;
use crate::domain::lock::{GroupRules, OnDrainTimeout};
use crate::domain::zones;

/// Why a group setting was refused, named by its variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupsError {
    Groups(String),
    Settle(String),
    Lease(String),
    Drain(String),
    Return(String),
    Zones(String),
    Canary(String),
    MaxWildcardGroups(String),
}

impl fmt::Display for GroupsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GroupsError::Groups(why) => write!(f, "FLEETLOCK_GROUPS: {why}"),
            GroupsError::Settle(why) => write!(f, "FLEETLOCK_SETTLE: {why}"),
            GroupsError::Lease(why) => write!(f, "FLEETLOCK_LEASE: {why}"),
            GroupsError::Drain(why) => write!(f, "FLEETLOCK_DRAIN: {why}"),
            GroupsError::Return(why) => write!(f, "FLEETLOCK_RETURN: {why}"),
            GroupsError::Zones(why) => write!(f, "FLEETLOCK_ZONES: {why}"),
            GroupsError::Canary(why) => write!(f, "FLEETLOCK_CANARY: {why}"),
            GroupsError::MaxWildcardGroups(why) => {
                write!(f, "FLEETLOCK_MAX_WILDCARD_GROUPS: {why}")
            }
        }
    }
}

impl std::error::Error for GroupsError {}

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
/// group no setting names: each gate's setting, `None` where its variable
/// does not name the group. A group's rules are its entry, each gate
/// falling back to the `*` entry's ([`GroupSlots::rules_of`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Settings {
    /// `FLEETLOCK_GROUPS`; `None` for a group only `*` gives slots (another
    /// setting names it), and for the `*` entry of a list without `*`.
    slots: Option<u32>,
    /// `FLEETLOCK_SETTLE`; none settles for zero.
    settle: Option<Duration>,
    /// `FLEETLOCK_LEASE`; none holds until given back.
    lease: Option<Duration>,
    /// `FLEETLOCK_DRAIN`; none has no drain gate.
    drain: Option<(Duration, OnDrainTimeout)>,
    /// `FLEETLOCK_RETURN`; none has no return gate.
    return_timeout: Option<Duration>,
    /// `FLEETLOCK_CANARY` ([`crate::domain::canary`]); none has no canary.
    canary: Option<CanaryRule>,
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

/// A gate's field of a group's settings.
type Field<T> = fn(&mut Settings) -> &mut Option<T>;

/// A value per group, as `FLEETLOCK_GROUPS` and `FLEETLOCK_SETTLE` write it:
/// `GROUP=VALUE` entries separated by commas, `*` for every group not listed,
/// each at most once. `value` reads an entry's value (given the group's name),
/// and `accept` vets a group (`None` for `*`) before it is recorded.
fn per_group<T>(
    spec: &str,
    form: &str,
    example: &str,
    value: impl Fn(&str, &str) -> Result<T, String>,
    accept: impl Fn(Option<&GroupName>) -> Result<(), String>,
) -> Result<(BTreeMap<GroupName, T>, Option<T>), String> {
    let mut listed = BTreeMap::new();
    let mut others = None;
    for entry in spec.split(',').map(str::trim) {
        if entry.is_empty() {
            return Err(format!(
                "empty entry in '{spec}'; expected e.g. '{example}'"
            ));
        }
        let (name, text) = entry
            .split_once('=')
            .ok_or_else(|| format!("entry '{entry}' is not of the form {form}"))?;
        let (name, text) = (name.trim(), text.trim());
        let parsed = value(name, text)?;
        if name == "*" {
            accept(None)?;
            if others.replace(parsed).is_some() {
                return Err("'*' is listed twice".into());
            }
            continue;
        }
        let group = GroupName::parse(name).map_err(|e| format!("group '{name}': {}", e.value()))?;
        accept(Some(&group))?;
        if listed.insert(group, parsed).is_some() {
            return Err(format!("group '{name}' is listed twice"));
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
                let slots: u32 = count.parse().map_err(|_| {
                    format!("slot count '{count}' of '{name}' is not a whole number from 0 up")
                })?;
                if slots > MAX_SLOTS {
                    return Err(format!(
                        "slot count {slots} of '{name}' is above {MAX_SLOTS}, the most a group \
                         can hold: every holder is part of the group's one DynamoDB item"
                    ));
                }
                Ok(slots)
            },
            |_| Ok(()),
        )
        .map_err(GroupsError::Groups)?;
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
        let bad = |why: String| Err(GroupsError::MaxWildcardGroups(why));
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

    /// Adds the settle times of `FLEETLOCK_SETTLE` (`workers=10m,*=2m`): every
    /// group named must be one these slots configure.
    pub fn with_settle(self, spec: &str) -> Result<Self, GroupsError> {
        self.with_setting(
            spec,
            "a settle time",
            "workers=10m,*=2m",
            parse_duration,
            |s| &mut s.settle,
        )
        .map_err(GroupsError::Settle)
    }

    /// Adds the leases of `FLEETLOCK_LEASE` (`workers=6h`): from
    /// [`MIN_LEASE`](crate::domain::lock::lease::MIN_LEASE) to
    /// [`MAX_LEASE`](crate::domain::lock::lease::MAX_LEASE), for groups these slots configure.
    pub fn with_lease(self, spec: &str) -> Result<Self, GroupsError> {
        self.with_setting(spec, "a lease", "workers=6h", parse_lease, |s| &mut s.lease)
            .map_err(GroupsError::Lease)
    }

    /// Adds the drain gates of `FLEETLOCK_DRAIN` (`workers=15m,db=30m:grant`):
    /// a timeout from [`MIN_DRAIN`](crate::domain::lock::drain::MIN_DRAIN) to
    /// [`MAX_DRAIN`](crate::domain::lock::drain::MAX_DRAIN), then `hold` (the
    /// default) or `grant`, for groups these slots configure.
    pub fn with_drain(self, spec: &str) -> Result<Self, GroupsError> {
        let example = "workers=15m,db=30m:grant";
        self.with_setting(spec, "a drain timeout", example, parse_drain, |s| {
            &mut s.drain
        })
        .map_err(GroupsError::Drain)
    }

    /// Each drain gate's timeout: of the groups listed (with their name),
    /// then of every group `*` covers.
    pub(crate) fn drain_timeouts(&self) -> impl Iterator<Item = (Option<&GroupName>, Duration)> {
        let listed = self.listed().filter_map(|(group, _)| {
            let drain = self.rules_for(group).ok()?.drain?;
            Some((Some(group), drain.timeout))
        });
        listed.chain(self.others.drain.map(|(timeout, _)| (None, timeout)))
    }

    /// Whether any group has a drain gate.
    pub(crate) fn drains(&self) -> bool {
        self.any(|s| s.drain.is_some())
    }

    /// Adds the return gates of `FLEETLOCK_RETURN` (`workers=20m`): a
    /// return timeout from [`MIN_RETURN`](crate::domain::lock::returns::MIN_RETURN) to
    /// [`MAX_RETURN`](crate::domain::lock::returns::MAX_RETURN), for groups
    /// these slots configure.
    pub fn with_return(self, spec: &str) -> Result<Self, GroupsError> {
        let what = "a return timeout";
        self.with_setting(spec, what, "workers=20m", parse_return, |s| {
            &mut s.return_timeout
        })
        .map_err(GroupsError::Return)
    }

    /// Adds the groups of `FLEETLOCK_ZONES` (`workers,db`), split by zone:
    /// each named in FLEETLOCK_GROUPS (never `*`), none a zone of another,
    /// and no group FLEETLOCK_GROUPS lists one of their zones.
    pub fn with_zones(mut self, spec: &str) -> Result<Self, GroupsError> {
        let bad = |why: String| Err(GroupsError::Zones(why));
        let mut zoned = BTreeSet::new();
        for name in spec.split(',').map(str::trim) {
            if name == "*" {
                return bad(
                    "'*' cannot be split by zone: name each group whose nodes go out one \
                     zone at a time, as FLEETLOCK_GROUPS names it"
                        .into(),
                );
            }
            let group = match GroupName::parse(name) {
                Ok(group) => group,
                Err(e) => return bad(format!("group '{name}': {}", e.value())),
            };
            if !self.is_listed(&group) {
                return bad(format!(
                    "{}; a group split by zone is named there with its slots",
                    self.not_configured(&group)
                ));
            }
            if !zoned.insert(group) {
                return bad(format!("group '{name}' is listed twice"));
            }
        }
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

    /// Adds the canaries of `FLEETLOCK_CANARY` (`workers=30m:1+3`): a bake,
    /// waves and how long a wave's node may be out
    /// ([`crate::domain::canary::parse_canary`]), for groups these slots
    /// configure.
    pub fn with_canary(self, spec: &str) -> Result<Self, GroupsError> {
        self.with_setting(spec, "a canary", "workers=30m:1+3", parse_canary, |s| {
            &mut s.canary
        })
        .map_err(GroupsError::Canary)
    }

    /// Whether any group has a canary.
    pub(crate) fn canaries(&self) -> bool {
        self.any(|s| s.canary.is_some())
    }

    /// Whether a group's settings, or the `*` entry, say `which`.
    fn any(&self, which: impl Fn(&Settings) -> bool) -> bool {
        self.groups.values().any(&which) || which(&self.others)
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
        self.any(|s| s.return_timeout.is_some())
    }

    /// Sets one gate's `field` of each group from its variable
    /// (`GROUP=DURATION,*=DURATION`), each value read by `parse`, for
    /// groups these slots configure only; what it said before is replaced.
    fn with_setting<T, E: fmt::Display>(
        mut self,
        spec: &str,
        what: &str,
        example: &str,
        parse: fn(&str) -> Result<T, E>,
        field: Field<T>,
    ) -> Result<Self, String> {
        let (named, others) = per_group(
            spec,
            "GROUP=DURATION",
            example,
            |name, time| parse(time).map_err(|why| format!("'{name}': {why}")),
            |group| match group {
                None if self.others.slots.is_none() => Err(format!(
                    "'*' is given {what} but FLEETLOCK_GROUPS has no '*'"
                )),
                Some(group) => self.setting_may_name(group),
                None => Ok(()),
            },
        )?;
        for settings in self.groups.values_mut() {
            *field(settings) = None;
        }
        self.groups
            .retain(|_, settings| *settings != Settings::default());
        for (group, value) in named {
            *field(self.groups.entry(group).or_default()) = Some(value);
        }
        *field(&mut self.others) = others;
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
        let listed = self.is_listed(group);
        self.rules_from(
            self.groups.get(group).unwrap_or(&Settings::default()),
            listed,
        )
    }

    /// The rules of a group whose settings are `own`: each gate's own
    /// setting, else the `*` entry's.
    fn rules_from(&self, own: &Settings, listed: bool) -> GroupRules {
        let others = &self.others;
        GroupRules {
            slots: own.slots.or(others.slots).unwrap_or_default(),
            settle: own.settle.or(others.settle).unwrap_or(Duration::ZERO),
            wildcard_limit: (!listed).then_some(self.wildcard_limit),
            lease: own.lease.or(others.lease),
            drain: own.drain.or(others.drain).map(drain_rule),
            return_timeout: own.return_timeout.or(others.return_timeout),
            zone: None,
            canary: own.canary.or(others.canary),
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
        Some(self.rules_from(&Settings::default(), false))
    }
}

impl Default for GroupSlots {
    fn default() -> Self {
        Self::parse(DEFAULT_GROUPS).expect("the built-in default parses")
    }
}
