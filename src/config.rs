//! Start-up configuration, read and checked once. A mistake here stops the
//! process with a clear message instead of surfacing on the first request.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::domain::error::Error;
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRules;
use crate::domain::windows::Schedule;
use crate::http::auth::{Auth, Clients};

/// The longest settle time: past a day, pausing the group says it better.
pub const MAX_SETTLE: Duration = Duration::from_secs(24 * 3600);

/// Used when `FLEETLOCK_GROUPS` is unset: Zincati's default group, one slot.
pub const DEFAULT_GROUPS: &str = "default=1";

/// The most slots a group may have. Each holder is an attribute of its
/// group's item: 500 holders with the longest ids an older version stored
/// (256 bytes) make an item of about 133 KB, a third of DynamoDB's 400 KB
/// item limit, which leaves room for the pause and the alarms.
pub const MAX_SLOTS: u32 = 500;

/// How many groups only `*` covers may have an item, unless
/// `FLEETLOCK_MAX_WILDCARD_GROUPS` says otherwise.
pub const DEFAULT_WILDCARD_GROUPS: u32 = 100;
/// The highest `FLEETLOCK_MAX_WILDCARD_GROUPS`: their names are kept in one
/// item, at most 64 characters each.
pub const MAX_WILDCARD_GROUPS: u32 = 2000;

/// Slot count per group, from `FLEETLOCK_GROUPS` (`default=1,workers=3,*=2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSlots {
    listed: BTreeMap<GroupName, u32>,
    /// `*=N`: every valid group not listed gets N slots.
    others: Option<u32>,
    /// From `FLEETLOCK_SETTLE`; a group in neither map settles for zero.
    settle: BTreeMap<GroupName, Duration>,
    settle_others: Option<Duration>,
    /// How many groups only `*` covers may have an item.
    wildcard_limit: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    Groups(String),
    Settle(String),
    Windows(String),
    TimeZone(String),
    Table(String),
    Clients(String),
    Auth(String),
    MaxWildcardGroups(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Groups(why) => write!(f, "FLEETLOCK_GROUPS: {why}"),
            ConfigError::Settle(why) => write!(f, "FLEETLOCK_SETTLE: {why}"),
            ConfigError::Windows(why) => write!(f, "FLEETLOCK_WINDOWS: {why}"),
            ConfigError::TimeZone(why) => write!(f, "FLEETLOCK_TIME_ZONE: {why}"),
            ConfigError::Table(why) => write!(f, "FLEETLOCK_TABLE: {why}"),
            ConfigError::Clients(why) => write!(f, "FLEETLOCK_CLIENTS: {why}"),
            ConfigError::Auth(why) => write!(f, "FLEETLOCK_AUTH: {why}"),
            ConfigError::MaxWildcardGroups(why) => {
                write!(f, "FLEETLOCK_MAX_WILDCARD_GROUPS: {why}")
            }
        }
    }
}

impl std::error::Error for ConfigError {}

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
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
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
        .map_err(ConfigError::Groups)?;
        Ok(Self {
            listed,
            others,
            settle: BTreeMap::new(),
            settle_others: None,
            wildcard_limit: DEFAULT_WILDCARD_GROUPS,
        })
    }

    /// Sets how many groups only `*` covers may have an item
    /// (`FLEETLOCK_MAX_WILDCARD_GROUPS`): 1 to [`MAX_WILDCARD_GROUPS`].
    pub fn with_wildcard_limit(mut self, text: &str) -> Result<Self, ConfigError> {
        let bad = |why: String| Err(ConfigError::MaxWildcardGroups(why));
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
    pub fn wildcard_limit(&self) -> u32 {
        self.wildcard_limit
    }

    /// Adds the settle times of `FLEETLOCK_SETTLE` (`workers=10m,*=2m`): every
    /// group named must be one these slots configure.
    pub fn with_settle(mut self, spec: &str) -> Result<Self, ConfigError> {
        let (settle, settle_others) = per_group(
            spec,
            "GROUP=DURATION",
            "workers=10m,*=2m",
            |name, time| parse_duration(time).map_err(|why| format!("'{name}': {why}")),
            |group| match group {
                None if self.others.is_none() => {
                    Err("'*' is given a settle time but FLEETLOCK_GROUPS has no '*'".into())
                }
                Some(group) if self.slots_for(group).is_err() => Err(format!(
                    "group '{group}' is not configured by FLEETLOCK_GROUPS"
                )),
                _ => Ok(()),
            },
        )
        .map_err(ConfigError::Settle)?;
        self.settle = settle;
        self.settle_others = settle_others;
        Ok(self)
    }

    /// Slots and settle time of a group, or `unknown_group`.
    pub fn rules_for(&self, group: &GroupName) -> Result<GroupRules, Error> {
        let slots = self.slots_for(group)?;
        let settle = self
            .settle
            .get(group)
            .copied()
            .or(self.settle_others)
            .unwrap_or(Duration::ZERO);
        let wildcard_limit = (!self.listed.contains_key(group)).then_some(self.wildcard_limit);
        Ok(GroupRules {
            slots,
            settle,
            wildcard_limit,
        })
    }

    /// The slot count of a group, or `unknown_group` if this server does not
    /// coordinate it.
    pub fn slots_for(&self, group: &GroupName) -> Result<u32, Error> {
        self.listed
            .get(group)
            .copied()
            .or(self.others)
            .ok_or_else(|| Error::UnknownGroup(group.to_string()))
    }

    pub fn listed(&self) -> impl Iterator<Item = (&GroupName, u32)> {
        self.listed.iter().map(|(g, n)| (g, *n))
    }

    pub fn others(&self) -> Option<u32> {
        self.others
    }

    /// The rules of every group `*` covers, if there is a `*`.
    pub fn others_rules(&self) -> Option<GroupRules> {
        Some(GroupRules {
            slots: self.others?,
            settle: self.settle_others.unwrap_or(Duration::ZERO),
            wildcard_limit: Some(self.wildcard_limit),
        })
    }
}

impl Default for GroupSlots {
    fn default() -> Self {
        Self::parse(DEFAULT_GROUPS).expect("the built-in default parses")
    }
}

/// Everything the service reads from its environment.
#[derive(Clone, Debug)]
pub struct Config {
    pub groups: GroupSlots,
    /// The DynamoDB table; `None` means the embedded in-process store.
    pub table: Option<String>,
    /// `None` when neither `FLEETLOCK_CLIENTS` nor `FLEETLOCK_AUTH` says: the
    /// caller decides (Lambda refuses to start, a loopback server is open).
    pub auth: Option<Auth>,
    /// Maintenance windows (`FLEETLOCK_WINDOWS`, `FLEETLOCK_TIME_ZONE`).
    pub windows: Schedule,
}

impl Config {
    /// Reads `FLEETLOCK_GROUPS` and `FLEETLOCK_TABLE` through `var`, so tests
    /// need not touch the process environment.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let groups = match var("FLEETLOCK_GROUPS") {
            Some(spec) => GroupSlots::parse(&spec)?,
            None => GroupSlots::default(),
        };
        let groups = match var("FLEETLOCK_SETTLE").filter(|v| !v.trim().is_empty()) {
            Some(spec) => groups.with_settle(&spec)?,
            None => groups,
        };
        let groups = match var("FLEETLOCK_MAX_WILDCARD_GROUPS").filter(|v| !v.trim().is_empty()) {
            Some(limit) => groups.with_wildcard_limit(&limit)?,
            None => groups,
        };
        let schedule = Schedule::in_zone(var("FLEETLOCK_TIME_ZONE").as_deref())
            .map_err(ConfigError::TimeZone)?;
        let windows = match var("FLEETLOCK_WINDOWS").filter(|v| !v.trim().is_empty()) {
            Some(spec) => schedule
                .with_windows(
                    &spec,
                    |g| groups.slots_for(g).is_ok(),
                    groups.others().is_some(),
                )
                .map_err(ConfigError::Windows)?,
            None => schedule,
        };
        let table = match var("FLEETLOCK_TABLE") {
            None => None,
            Some(name) if valid_table_name(&name) => Some(name),
            Some(name) => {
                return Err(ConfigError::Table(format!(
                    "'{name}' is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)"
                )));
            }
        };
        let clients = var("FLEETLOCK_CLIENTS").filter(|v| !v.trim().is_empty());
        let auth = match (var("FLEETLOCK_AUTH").as_deref(), clients) {
            (Some("disabled"), Some(_)) => {
                return Err(ConfigError::Auth(
                    "'disabled' conflicts with the clients listed in FLEETLOCK_CLIENTS".into(),
                ));
            }
            (Some("disabled"), None) => Some(Auth::Disabled),
            (Some("required") | None, Some(clients)) => {
                Some(Auth::Required(Clients::parse(&clients)?))
            }
            (Some("required"), None) => {
                return Err(ConfigError::Auth(
                    "'required' but FLEETLOCK_CLIENTS lists no client (see 'fleetlock credential')"
                        .into(),
                ));
            }
            (None, None) => None,
            (Some(other), _) => {
                return Err(ConfigError::Auth(format!(
                    "'{other}' is neither 'required' nor 'disabled'"
                )));
            }
        };
        Ok(Self {
            groups,
            table,
            auth,
            windows,
        })
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }
}

/// `90s`, `10m`, `1h`, `1h30m`, `0s`: whole numbers with units h, m, s, in
/// that order, up to [`MAX_SETTLE`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let explain = || format!("'{text}' is not a duration like 90s, 10m, 1h or 1h30m");
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(explain());
    }
    let mut total = 0u64;
    let mut units_left = "hms";
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(explain)?;
        if digits == 0 {
            return Err(explain());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| explain())?;
        let unit = rest[digits..].chars().next().ok_or_else(explain)?;
        let at = units_left.find(unit).ok_or_else(explain)?;
        units_left = &units_left[at + 1..];
        let scale = match unit {
            'h' => 3600,
            'm' => 60,
            _ => 1,
        };
        total = value
            .checked_mul(scale)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(explain)?;
        rest = &rest[digits + 1..];
    }
    let duration = Duration::from_secs(total);
    if duration > MAX_SETTLE {
        return Err(format!(
            "'{text}' is longer than 24h; pause the group instead"
        ));
    }
    Ok(duration)
}

/// A duration in the syntax [`parse_duration`] reads: `1h30m`, `90s`, `0s`.
pub fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (value, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if value > 0 {
            out.push_str(&format!("{value}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

fn valid_table_name(name: &str) -> bool {
    (3..=255).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(s: &str) -> GroupName {
        GroupName::parse(s).unwrap()
    }

    #[test]
    fn unset_means_default_with_one_slot() {
        let config = Config::from_vars(|_| None).unwrap();
        assert_eq!(config.groups.slots_for(&group("default")), Ok(1));
        assert_eq!(
            config
                .groups
                .slots_for(&group("workers"))
                .unwrap_err()
                .kind(),
            "unknown_group"
        );
        assert_eq!(config.table, None);
    }

    #[test]
    fn listed_groups_wildcard_whitespace_and_zero() {
        let slots = GroupSlots::parse(" default = 1 , workers=3,frozen=0, *=2 ").unwrap();
        assert_eq!(slots.slots_for(&group("default")), Ok(1));
        assert_eq!(slots.slots_for(&group("workers")), Ok(3));
        assert_eq!(slots.slots_for(&group("frozen")), Ok(0));
        assert_eq!(slots.slots_for(&group("anything.else")), Ok(2));
    }

    #[test]
    fn a_list_without_default_refuses_zincatis_default_group() {
        let slots = GroupSlots::parse("workers=3").unwrap();
        assert!(slots.slots_for(&group("default")).is_err());
    }

    #[test]
    fn malformed_or_duplicate_entries_stop_start_up() {
        for bad in [
            "",
            "default",
            "default=",
            "default=-1",
            "default=one",
            "default=1,,workers=2",
            "default=1,default=2",
            "*=1,*=2",
            "bad_name=1",
            "=1",
            "default=99999999999",
        ] {
            assert!(GroupSlots::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn a_slot_count_past_what_one_item_holds_stops_start_up() {
        assert_eq!(
            GroupSlots::parse(&format!("default={MAX_SLOTS}"))
                .unwrap()
                .slots_for(&group("default")),
            Ok(MAX_SLOTS)
        );
        let err = GroupSlots::parse(&format!("default=1,*={}", MAX_SLOTS + 1)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "FLEETLOCK_GROUPS: slot count 501 of '*' is above 500, the most a group can hold: \
             every holder is part of the group's one DynamoDB item"
        );
    }

    #[test]
    fn only_groups_the_wildcard_alone_covers_are_counted() {
        let with = |limit: Option<&str>| {
            let limit = limit.map(String::from);
            Config::from_vars(move |n| match n {
                "FLEETLOCK_GROUPS" => Some("default=1,*=2".into()),
                "FLEETLOCK_MAX_WILDCARD_GROUPS" => limit.clone(),
                _ => None,
            })
        };
        let groups = with(None).unwrap().groups;
        assert_eq!(
            groups.rules_for(&group("default")).unwrap().wildcard_limit,
            None
        );
        assert_eq!(
            groups.rules_for(&group("other")).unwrap().wildcard_limit,
            Some(DEFAULT_WILDCARD_GROUPS)
        );
        let groups = with(Some(" 7 ")).unwrap().groups;
        assert_eq!(
            groups.rules_for(&group("other")).unwrap().wildcard_limit,
            Some(7)
        );
        for bad in ["0", "-1", "many", "2001"] {
            let err = with(Some(bad)).unwrap_err().to_string();
            assert!(err.starts_with("FLEETLOCK_MAX_WILDCARD_GROUPS: "), "{err}");
        }
    }

    #[test]
    fn auth_is_required_by_clients_disabled_only_explicitly() {
        let entry = crate::http::auth::new_credential("fleet", "*")
            .unwrap()
            .entry;
        let with = |auth: Option<&str>, clients: Option<&str>| {
            let (auth, clients) = (auth.map(String::from), clients.map(String::from));
            Config::from_vars(move |n| match n {
                "FLEETLOCK_AUTH" => auth.clone(),
                "FLEETLOCK_CLIENTS" => clients.clone(),
                _ => None,
            })
        };
        assert!(matches!(
            with(None, Some(&entry)).unwrap().auth,
            Some(Auth::Required(_))
        ));
        assert!(matches!(
            with(Some("required"), Some(&entry)).unwrap().auth,
            Some(Auth::Required(_))
        ));
        assert_eq!(
            with(Some("disabled"), None).unwrap().auth,
            Some(Auth::Disabled)
        );
        assert_eq!(
            with(Some("disabled"), Some(" ")).unwrap().auth,
            Some(Auth::Disabled)
        );
        assert_eq!(with(None, None).unwrap().auth, None);
        assert_eq!(with(None, Some("")).unwrap().auth, None);
        // Each refusal names the setting at fault and what is wrong with it.
        let refusal = |auth, clients| with(auth, clients).unwrap_err().to_string();
        assert_eq!(
            refusal(Some("disabled"), Some(&entry)),
            "FLEETLOCK_AUTH: 'disabled' conflicts with the clients listed in FLEETLOCK_CLIENTS"
        );
        assert!(refusal(Some("required"), None).starts_with("FLEETLOCK_AUTH: 'required' but"));
        assert_eq!(
            refusal(Some("off"), None),
            "FLEETLOCK_AUTH: 'off' is neither 'required' nor 'disabled'"
        );
        assert_eq!(
            refusal(None, Some("garbage")),
            "FLEETLOCK_CLIENTS: an entry is not NAME:GROUPS:SALT:SHA256 (it has 1 fields)"
        );
    }

    #[test]
    fn settle_times_per_group_with_a_wildcard() {
        let groups = GroupSlots::parse("default=1,workers=3,*=1")
            .unwrap()
            .with_settle("workers=10m, *=90s")
            .unwrap();
        let settle = |g: &str| groups.rules_for(&group(g)).unwrap().settle;
        assert_eq!(settle("workers"), Duration::from_secs(600));
        assert_eq!(settle("other"), Duration::from_secs(90));
        assert_eq!(
            settle("default"),
            Duration::from_secs(90),
            "'*' covers the unlisted"
        );
        let plain = GroupSlots::parse("default=1,workers=3").unwrap();
        assert_eq!(
            plain.rules_for(&group("workers")).unwrap().settle,
            Duration::ZERO
        );
        assert_eq!(plain.rules_for(&group("workers")).unwrap().slots, 3);
    }

    #[test]
    fn durations_read_as_people_write_them() {
        for (text, secs) in [
            ("0s", 0),
            ("90s", 90),
            ("10m", 600),
            ("1h", 3600),
            ("1h30m", 5400),
            ("2m5s", 125),
            ("24h", 86_400),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        for text in ["0s", "90s", "10m", "1h", "1h30m", "2m5s", "24h"] {
            let duration = parse_duration(text).unwrap();
            assert_eq!(parse_duration(&format_duration(duration)), Ok(duration));
        }
        assert_eq!(format_duration(Duration::from_secs(90)), "1m30s");
        for bad in [
            "",
            "10",
            "m",
            "10x",
            "1.5h",
            "-1m",
            "10m1h",
            "1h1h",
            "25h",
            "10 m",
            "99999999999999999999s",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn bad_settle_settings_stop_start_up_with_the_reason() {
        let groups = || GroupSlots::parse("default=1,workers=3").unwrap();
        for (spec, says) in [
            ("workers", "not of the form"),
            ("workers=soon", "not a duration"),
            ("db=10m", "not configured"),
            ("*=1m", "has no '*'"),
            ("workers=1m,workers=2m", "listed twice"),
            ("workers=1m,,default=1m", "empty entry"),
            ("bad_name=1m", "group 'bad_name'"),
            ("workers=48h", "longer than 24h"),
        ] {
            let err = groups().with_settle(spec).unwrap_err().to_string();
            assert!(
                err.starts_with("FLEETLOCK_SETTLE: ") && err.contains(says),
                "{spec}: {err}"
            );
        }
    }

    #[test]
    fn windows_and_their_zone_are_read_and_checked_at_start() {
        let with = |windows: Option<&'static str>, zone: Option<&'static str>| {
            Config::from_vars(move |n| match n {
                "FLEETLOCK_GROUPS" => Some("default=1,workers=2".into()),
                "FLEETLOCK_WINDOWS" => windows.map(String::from),
                "FLEETLOCK_TIME_ZONE" => zone.map(String::from),
                _ => None,
            })
        };
        let config = with(
            Some("workers: days=Sat start_time=22:00 length_minutes=60"),
            Some("Europe/Berlin"),
        )
        .unwrap();
        assert_eq!(config.windows.zone_name(), "Europe/Berlin");
        assert!(config.windows.calendar_for(&group("workers")).is_some());
        assert!(config.windows.calendar_for(&group("default")).is_none());
        assert_eq!(with(None, None).unwrap().windows.zone_name(), "UTC");
        for (windows, zone, says) in [
            (
                Some("db: days=Sat start_time=22:00 length_minutes=60"),
                None,
                "FLEETLOCK_WINDOWS: group 'db' is not configured",
            ),
            (
                Some("workers: days=Sat start_time=7:5 length_minutes=60"),
                None,
                "FLEETLOCK_WINDOWS: 'workers': start_time",
            ),
            (
                None,
                Some("localtime"),
                "FLEETLOCK_TIME_ZONE: 'localtime' is refused",
            ),
            (
                None,
                Some("Nowhere/City"),
                "FLEETLOCK_TIME_ZONE: 'Nowhere/City'",
            ),
        ] {
            let err = with(windows, zone).unwrap_err().to_string();
            assert!(err.starts_with(says), "{err}");
        }
    }

    #[test]
    fn table_name_is_checked() {
        let with = |table: &'static str| {
            Config::from_vars(move |n| (n == "FLEETLOCK_TABLE").then(|| table.to_string()))
        };
        assert_eq!(
            with("fleetlock-locks").unwrap().table.as_deref(),
            Some("fleetlock-locks")
        );
        for bad in ["a", "has space"] {
            assert_eq!(
                with(bad).unwrap_err().to_string(),
                format!(
                    "FLEETLOCK_TABLE: '{bad}' is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)"
                ),
            );
        }
    }
}
