//! Start-up configuration, read and checked once. A mistake here stops the
//! process with a clear message instead of surfacing on the first request.

use std::collections::BTreeMap;
use std::fmt;

use crate::auth::{Auth, Clients};
use crate::error::Error;
use crate::input::GroupName;

/// Used when `FLEETLOCK_GROUPS` is unset: Zincati's default group, one slot.
pub const DEFAULT_GROUPS: &str = "default=1";

/// Slot count per group, from `FLEETLOCK_GROUPS` (`default=1,workers=3,*=2`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupSlots {
    listed: BTreeMap<GroupName, u32>,
    /// `*=N`: every valid group not listed gets N slots.
    others: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    Groups(String),
    Table(String),
    Clients(String),
    Auth(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Groups(why) => write!(f, "FLEETLOCK_GROUPS: {why}"),
            ConfigError::Table(why) => write!(f, "FLEETLOCK_TABLE: {why}"),
            ConfigError::Clients(why) => write!(f, "FLEETLOCK_CLIENTS: {why}"),
            ConfigError::Auth(why) => write!(f, "FLEETLOCK_AUTH: {why}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl GroupSlots {
    pub fn parse(spec: &str) -> Result<Self, ConfigError> {
        let mut listed = BTreeMap::new();
        let mut others = None;
        for entry in spec.split(',').map(str::trim) {
            if entry.is_empty() {
                return Err(ConfigError::Groups(format!(
                    "empty entry in '{spec}'; expected e.g. 'default=1,workers=3'"
                )));
            }
            let (name, count) = entry.split_once('=').ok_or_else(|| {
                ConfigError::Groups(format!("entry '{entry}' is not of the form GROUP=SLOTS"))
            })?;
            let (name, count) = (name.trim(), count.trim());
            let slots: u32 = count.parse().map_err(|_| {
                ConfigError::Groups(format!(
                    "slot count '{count}' of '{name}' is not a whole number from 0 up"
                ))
            })?;
            if name == "*" {
                if others.replace(slots).is_some() {
                    return Err(ConfigError::Groups("'*' is listed twice".into()));
                }
                continue;
            }
            let group = GroupName::parse(name)
                .map_err(|e| ConfigError::Groups(format!("group '{name}': {}", e.value())))?;
            if listed.insert(group, slots).is_some() {
                return Err(ConfigError::Groups(format!(
                    "group '{name}' is listed twice"
                )));
            }
        }
        Ok(Self { listed, others })
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
}

impl Config {
    /// Reads `FLEETLOCK_GROUPS` and `FLEETLOCK_TABLE` through `var`, so tests
    /// need not touch the process environment.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let groups = match var("FLEETLOCK_GROUPS") {
            Some(spec) => GroupSlots::parse(&spec)?,
            None => GroupSlots::default(),
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
        })
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(|name| std::env::var(name).ok())
    }
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
    fn auth_is_required_by_clients_disabled_only_explicitly() {
        let entry = crate::auth::new_credential("fleet", "*").unwrap().entry;
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
        assert!(with(Some("disabled"), Some(&entry)).is_err());
        assert!(with(Some("required"), None).is_err());
        assert!(with(Some("off"), None).is_err());
        assert!(with(None, Some("garbage")).is_err());
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
        assert!(with("a").is_err());
        assert!(with("has space").is_err());
    }
}
