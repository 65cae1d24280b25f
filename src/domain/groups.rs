//! The groups and their rules as the settings write them: slots per group
//! (`FLEETLOCK_GROUPS`), settle times (`FLEETLOCK_SETTLE`), leases
//! (`FLEETLOCK_LEASE`), drain gates (`FLEETLOCK_DRAIN`), the bound on the
//! groups only `*` covers, and the durations all of them are written in.
//! Parsed here, pure; [`crate::config`] reads the variables.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use crate::domain::canary::{CanaryRule, parse_canary};
use crate::domain::error::Error;
use crate::domain::input::GroupName;
use crate::domain::lock::{DrainRule, GroupRules, OnDrainTimeout};
use crate::domain::time::parse_span;
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

/// The longest settle time: past a day, pausing the group says it better.
pub(crate) const MAX_SETTLE: Duration = Duration::from_secs(24 * 3600);

/// The shortest lease. A node that took its slot may wait up to 10 minutes
/// for logged-in users before it reboots, then boots and tells the server
/// at Zincati's start, retried every 5 minutes: a shorter lease would give
/// a slot away while its node is still rebooting.
pub(crate) const MIN_LEASE: Duration = Duration::from_secs(30 * 60);
/// The longest lease: a week. Past that, `fleetlock release` says it better.
pub(crate) const MAX_LEASE: Duration = Duration::from_secs(7 * 24 * 3600);

/// The shortest drain timeout: a load balancer needs this long at the least
/// to stop sending a node new connections.
pub(crate) const MIN_DRAIN: Duration = Duration::from_secs(60);
/// The longest drain timeout: past a day, pausing the group says it better.
pub(crate) const MAX_DRAIN: Duration = Duration::from_secs(24 * 3600);

/// The shortest return timeout: a target group's health checks need this
/// long at the least to see a node healthy again (two checks 30 s apart).
pub(crate) const MIN_RETURN: Duration = Duration::from_secs(60);
/// The longest return timeout: past a day, a node is not coming back by
/// itself.
pub(crate) const MAX_RETURN: Duration = Duration::from_secs(24 * 3600);

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

/// Slot count per group, from `FLEETLOCK_GROUPS` (`default=1,workers=3,*=2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSlots {
    listed: BTreeMap<GroupName, u32>,
    /// `*=N`: every valid group not listed gets N slots.
    others: Option<u32>,
    /// From `FLEETLOCK_SETTLE`; a group in neither map settles for zero.
    settle: BTreeMap<GroupName, Duration>,
    settle_others: Option<Duration>,
    /// From `FLEETLOCK_LEASE`; a group in neither map has no lease.
    lease: BTreeMap<GroupName, Duration>,
    lease_others: Option<Duration>,
    /// From `FLEETLOCK_DRAIN`; a group in neither map has no drain gate.
    drain: BTreeMap<GroupName, (Duration, OnDrainTimeout)>,
    drain_others: Option<(Duration, OnDrainTimeout)>,
    /// From `FLEETLOCK_RETURN`; a group in neither map has no return gate.
    returns: BTreeMap<GroupName, Duration>,
    returns_others: Option<Duration>,
    /// From `FLEETLOCK_ZONES`: groups split by zone ([`crate::domain::zones`]).
    zoned: BTreeSet<GroupName>,
    /// From `FLEETLOCK_CANARY` ([`crate::domain::canary`]); a group in
    /// neither has no canary.
    canary: BTreeMap<GroupName, CanaryRule>,
    canary_others: Option<CanaryRule>,
    /// How many groups only `*` covers may have an item.
    wildcard_limit: u32,
}

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
        Ok(Self {
            listed,
            others,
            settle: BTreeMap::new(),
            settle_others: None,
            lease: BTreeMap::new(),
            lease_others: None,
            drain: BTreeMap::new(),
            drain_others: None,
            returns: BTreeMap::new(),
            returns_others: None,
            zoned: BTreeSet::new(),
            canary: BTreeMap::new(),
            canary_others: None,
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
    pub fn with_settle(mut self, spec: &str) -> Result<Self, GroupsError> {
        let (settle, settle_others) = self
            .durations(spec, "a settle time", "workers=10m,*=2m", parse_duration)
            .map_err(GroupsError::Settle)?;
        self.settle = settle;
        self.settle_others = settle_others;
        Ok(self)
    }

    /// Adds the leases of `FLEETLOCK_LEASE` (`workers=6h`): from
    /// [`MIN_LEASE`] to [`MAX_LEASE`], for groups these slots configure.
    pub fn with_lease(mut self, spec: &str) -> Result<Self, GroupsError> {
        let (lease, lease_others) = self
            .durations(spec, "a lease", "workers=6h", parse_lease)
            .map_err(GroupsError::Lease)?;
        self.lease = lease;
        self.lease_others = lease_others;
        Ok(self)
    }

    /// Adds the drain gates of `FLEETLOCK_DRAIN` (`workers=15m,db=30m:grant`):
    /// a timeout from [`MIN_DRAIN`] to [`MAX_DRAIN`], then `hold` (the
    /// default) or `grant`, for groups these slots configure.
    pub fn with_drain(mut self, spec: &str) -> Result<Self, GroupsError> {
        let (drain, drain_others) = self
            .durations(
                spec,
                "a drain timeout",
                "workers=15m,db=30m:grant",
                parse_drain,
            )
            .map_err(GroupsError::Drain)?;
        self.drain = drain;
        self.drain_others = drain_others;
        Ok(self)
    }

    /// The drain timeout of every group `*` covers, if it has one.
    pub(crate) fn others_drain(&self) -> Option<Duration> {
        self.drain_others.map(|(timeout, _)| timeout)
    }

    /// Whether any group has a drain gate.
    pub(crate) fn drains(&self) -> bool {
        !self.drain.is_empty() || self.drain_others.is_some()
    }

    /// Adds the return gates of `FLEETLOCK_RETURN` (`workers=20m`): a
    /// return timeout from [`MIN_RETURN`] to [`MAX_RETURN`], for groups
    /// these slots configure.
    pub fn with_return(mut self, spec: &str) -> Result<Self, GroupsError> {
        let (returns, returns_others) = self
            .durations(spec, "a return timeout", "workers=20m", parse_return)
            .map_err(GroupsError::Return)?;
        self.returns = returns;
        self.returns_others = returns_others;
        Ok(self)
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
            if !self.listed.contains_key(&group) {
                return bad(format!(
                    "{}; a group split by zone is named there with its slots",
                    self.not_configured(&group)
                ));
            }
            if !zoned.insert(group) {
                return bad(format!("group '{name}' is listed twice"));
            }
        }
        for group in self.listed.keys() {
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
    pub fn with_canary(mut self, spec: &str) -> Result<Self, GroupsError> {
        let (canary, canary_others) = self
            .durations(spec, "a canary", "workers=30m:1+3", parse_canary)
            .map_err(GroupsError::Canary)?;
        self.canary = canary;
        self.canary_others = canary_others;
        Ok(self)
    }

    /// Whether any group has a canary.
    pub(crate) fn canaries(&self) -> bool {
        !self.canary.is_empty() || self.canary_others.is_some()
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
        self.listed.contains_key(group)
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
        !self.returns.is_empty() || self.returns_others.is_some()
    }

    /// A duration per group (`GROUP=DURATION,*=DURATION`), each read by
    /// `parse`, for groups these slots configure only.
    fn durations<T>(
        &self,
        spec: &str,
        what: &str,
        example: &str,
        parse: fn(&str) -> Result<T, String>,
    ) -> Result<(BTreeMap<GroupName, T>, Option<T>), String> {
        per_group(
            spec,
            "GROUP=DURATION",
            example,
            |name, time| parse(time).map_err(|why| format!("'{name}': {why}")),
            |group| match group {
                None if self.others.is_none() => Err(format!(
                    "'*' is given {what} but FLEETLOCK_GROUPS has no '*'"
                )),
                Some(group) => self.setting_may_name(group),
                None => Ok(()),
            },
        )
    }

    /// Slots, settle time and lease of a group, or `unknown_group`.
    pub fn rules_for(&self, group: &GroupName) -> Result<GroupRules, Error> {
        self.slots_for(group)?;
        Ok(self.rules_of(group))
    }

    /// The rules of a group the names' reading gave ([`Self::meaning`]'s
    /// `group`: listed, or only `*` covers it), read once per request.
    pub(crate) fn rules_of(&self, group: &GroupName) -> GroupRules {
        let slots = self
            .listed
            .get(group)
            .copied()
            .or(self.others)
            .unwrap_or_default();
        let settle = self
            .settle
            .get(group)
            .copied()
            .or(self.settle_others)
            .unwrap_or(Duration::ZERO);
        let wildcard_limit = (!self.listed.contains_key(group)).then_some(self.wildcard_limit);
        let lease = self.lease.get(group).copied().or(self.lease_others);
        let drain = self.drain.get(group).copied().or(self.drain_others);
        GroupRules {
            slots,
            settle,
            wildcard_limit,
            lease,
            drain: drain.map(drain_rule),
            return_timeout: self.returns.get(group).copied().or(self.returns_others),
            zone: None,
            canary: self.canary.get(group).copied().or(self.canary_others),
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
        Ok(self
            .listed
            .get(group)
            .copied()
            .or(self.others)
            .unwrap_or_default())
    }

    pub(crate) fn listed(&self) -> impl Iterator<Item = (&GroupName, u32)> {
        self.listed.iter().map(|(g, n)| (g, *n))
    }

    pub(crate) fn others(&self) -> Option<u32> {
        self.others
    }

    /// The rules of every group `*` covers, if there is a `*`.
    pub(crate) fn others_rules(&self) -> Option<GroupRules> {
        Some(GroupRules {
            slots: self.others?,
            settle: self.settle_others.unwrap_or(Duration::ZERO),
            wildcard_limit: Some(self.wildcard_limit),
            lease: self.lease_others,
            drain: self.drain_others.map(drain_rule),
            return_timeout: self.returns_others,
            zone: None,
            canary: self.canary_others,
        })
    }
}

fn drain_rule((timeout, on_timeout): (Duration, OnDrainTimeout)) -> DrainRule {
    DrainRule {
        timeout,
        on_timeout,
        window_closes: None,
    }
}

/// A drain gate: `15m` (hold on timeout), `15m:hold` or `30m:grant`, the
/// timeout from [`MIN_DRAIN`] to [`MAX_DRAIN`].
pub(crate) fn parse_drain(text: &str) -> Result<(Duration, OnDrainTimeout), String> {
    let (time, policy) = text.split_once(':').unwrap_or((text, "hold"));
    let on_timeout = match policy.trim() {
        "hold" => OnDrainTimeout::Hold,
        "grant" => OnDrainTimeout::Grant,
        other => {
            return Err(format!(
                "'{other}' is not what happens at the drain timeout: 'hold' (keep refusing, \
                 the default) or 'grant' (the node reboots undrained)"
            ));
        }
    };
    let timeout = parse_span(time)?;
    if timeout < MIN_DRAIN {
        return Err(format!(
            "drain timeout '{}' is shorter than 1m: a load balancer needs longer to let \
             a node's connections finish",
            time.trim()
        ));
    }
    if timeout > MAX_DRAIN {
        return Err(format!(
            "drain timeout '{}' is longer than 24h; pause the group instead",
            time.trim()
        ));
    }
    Ok((timeout, on_timeout))
}

/// A return timeout, from [`MIN_RETURN`] to [`MAX_RETURN`].
pub(crate) fn parse_return(text: &str) -> Result<Duration, String> {
    let timeout = parse_span(text)?;
    if timeout < MIN_RETURN {
        return Err(format!(
            "return timeout '{}' is shorter than 1m: a load balancer's health checks need \
             longer to see a node healthy again",
            text.trim()
        ));
    }
    if timeout > MAX_RETURN {
        return Err(format!(
            "return timeout '{}' is longer than 24h; a node that has not come back by then \
             will not by itself",
            text.trim()
        ));
    }
    Ok(timeout)
}

impl Default for GroupSlots {
    fn default() -> Self {
        Self::parse(DEFAULT_GROUPS).expect("the built-in default parses")
    }
}

/// `90s`, `10m`, `1h`, `1h30m`, `0s`: whole numbers with units h, m, s, in
/// that order, up to [`MAX_SETTLE`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_span(text)?;
    if duration > MAX_SETTLE {
        return Err(format!(
            "'{text}' is longer than 24h; pause the group instead"
        ));
    }
    Ok(duration)
}

/// A lease, written as [`parse_duration`] reads it, from [`MIN_LEASE`] to
/// [`MAX_LEASE`].
pub(crate) fn parse_lease(text: &str) -> Result<Duration, String> {
    let lease = parse_span(text)?;
    if lease < MIN_LEASE {
        return Err(format!(
            "lease '{text}' is shorter than 30m: a node may still be rebooting then, and its \
             slot would go to another node; leave the group out of FLEETLOCK_LEASE for no lease"
        ));
    }
    if lease > MAX_LEASE {
        return Err(format!(
            "lease '{text}' is longer than a week (168h); release a stuck slot with \
             'fleetlock release' instead"
        ));
    }
    Ok(lease)
}
