//! Every setting this program reads, read and checked in one place, once at
//! start: a mistake stops the process (or the command) with a clear message
//! instead of surfacing on the first request. Each entry point and each
//! command reads only the settings it uses, so a bad `FLEETLOCK_WINDOWS` in
//! an operator's shell stops nothing that needs no windows.
//!
//! Everything reads the environment through a function (`var`), so the tests
//! need not touch the process's environment and `status --function` reads a
//! deployed function's variables the same way.

mod entries;
pub(crate) mod settings;

pub(crate) use entries::{
    AlarmPausesSettings, ApiSettings, ApiSettingsError, DrainedSettings, HostSource, LockSettings,
    SlotEventsSettings, alarm_gates, host_source, operator_name,
};

use std::fmt;

use crate::domain::auth::{Auth, BadClients, Clients};
use crate::domain::coverage::{self, Mismatch};
use crate::domain::groups::{GroupSlots, GroupsError};
use crate::domain::lock::gates;
use crate::domain::lock::zones::ZonesGate;
use crate::domain::windows::{Schedule, ScheduleError};

/// Whether `name` reads as an AWS region name (`eu-west-1`): lowercase
/// letters, digits and dashes, at most 32.
pub(crate) fn is_region_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Every page of the docs, for the tests that read their examples.
#[cfg(test)]
pub(crate) fn docs_text() -> String {
    let pages = [
        include_str!("../README.md"),
        include_str!("../docs/deploy.md"),
        include_str!("../docs/configuration.md"),
        include_str!("../docs/operating.md"),
        include_str!("../docs/events-and-alarms.md"),
        include_str!("../docs/security.md"),
        include_str!("../docs/costs-and-sizing.md"),
        include_str!("../docs/design.md"),
        include_str!("../docs/development.md"),
        include_str!("../docs/kubernetes.md"),
        include_str!("../infra/README.md"),
    ];
    // A new page of docs/ joins the list above.
    let in_docs = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/docs"))
        .unwrap()
        .count();
    assert_eq!(in_docs + 2, pages.len(), "list every page of docs/ here");
    pages.join("\n")
}

/// The process's own environment.
pub(crate) fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The groups' settings: `FLEETLOCK_GROUPS`, each gate's value per
    /// group, `FLEETLOCK_ZONES`, `FLEETLOCK_MAX_WILDCARD_GROUPS`.
    Groups(GroupsError),
    Windows(String),
    TimeZone(String),
    Table(String),
    Clients(String),
    Auth(String),
    AlarmPauses(String),
    Region(String),
    /// A setting this entry point or command needs is unset: the sentence
    /// says which and what for.
    Missing(String),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Groups(err) => err.fmt(f),
            ConfigError::Windows(why) => write!(f, "FLEETLOCK_WINDOWS: {why}"),
            ConfigError::TimeZone(why) => write!(f, "FLEETLOCK_TIME_ZONE: {why}"),
            ConfigError::Table(why) => write!(f, "FLEETLOCK_TABLE: {why}"),
            ConfigError::Clients(why) => write!(f, "FLEETLOCK_CLIENTS: {why}"),
            ConfigError::Auth(why) => write!(f, "FLEETLOCK_AUTH: {why}"),
            ConfigError::AlarmPauses(why) => write!(f, "FLEETLOCK_ALARM_PAUSES: {why}"),
            ConfigError::Region(why) => write!(f, "FLEETLOCK_REGION: {why}"),
            ConfigError::Missing(sentence) => f.write_str(sentence),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<GroupsError> for ConfigError {
    fn from(err: GroupsError) -> Self {
        ConfigError::Groups(err)
    }
}

/// Everything the service reads from its environment.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) groups: GroupSlots,
    /// The DynamoDB table; `None` means the embedded in-process store.
    pub(crate) table: Option<String>,
    /// `None` when neither `FLEETLOCK_CLIENTS` nor `FLEETLOCK_AUTH` says: the
    /// caller decides (Lambda refuses to start, a loopback server is open).
    pub(crate) auth: Option<Auth>,
    /// Maintenance windows (`FLEETLOCK_WINDOWS`, `FLEETLOCK_TIME_ZONE`).
    pub(crate) windows: Schedule,
    /// `FLEETLOCK_REGION`: on a global table, the region this function
    /// records its settings under, and compares them with the others'.
    /// `None`: one region, nothing compared.
    pub(crate) region: Option<String>,
}

impl Config {
    /// Reads the service's settings through `var`, so tests need not touch
    /// the process environment; the first wrong setting is the error.
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Self::checked(var).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Every setting checked on its own, so `config check` can list every
    /// mistake at once, in the order [`Config::from_vars`] meets them (its
    /// error is the first of these). A setting that refines another one
    /// (the settle time and windows refine the groups, the windows need the
    /// zone) is still checked when that one is wrong, against a stand-in
    /// that accepts every group (`*=1`) or UTC: its own mistakes show, the
    /// cross-checks wait for the fix.
    pub(crate) fn checked(var: impl Fn(&str) -> Option<String>) -> Result<Self, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let mut fault = |err: ConfigError| errors.push(err);
        let (mut groups, groups_known) = match var("FLEETLOCK_GROUPS") {
            None => (GroupSlots::default(), true),
            Some(spec) => match GroupSlots::parse(&spec) {
                Ok(groups) => (groups, true),
                Err(err) => {
                    fault(err.into());
                    (GroupSlots::parse("*=1").expect("a valid stand-in"), false)
                }
            },
        };
        // Each refines the groups in this order. First the zones: every
        // later setting reads its group names through them (a zone's group
        // is refused there, naming its split group). Then each gate's value
        // per group, in the order of domain::lock::gates' list.
        type Refine = fn(GroupSlots, &str, &str) -> Result<GroupSlots, GroupsError>;
        let zones: Refine = |groups, _, spec| groups.with_zones(spec);
        let gate: Refine = GroupSlots::with_setting;
        let limit: Refine = |groups, _, spec| groups.with_wildcard_limit(spec);
        let order = [(ZonesGate::VARIABLE, zones)]
            .into_iter()
            .chain(gates::settings().map(|setting| (setting.variable, gate)))
            .chain([("FLEETLOCK_MAX_WILDCARD_GROUPS", limit)]);
        for (name, refine) in order {
            if let Some(spec) = var(name).filter(|v| !v.trim().is_empty()) {
                match refine(groups.clone(), name, &spec) {
                    Ok(refined) => groups = refined,
                    Err(err) => fault(err.into()),
                }
            }
        }
        let schedule =
            Schedule::in_zone(var("FLEETLOCK_TIME_ZONE").as_deref()).unwrap_or_else(|why| {
                fault(ConfigError::TimeZone(why.to_string()));
                Schedule::in_zone(None).expect("UTC")
            });
        let windows = match var("FLEETLOCK_WINDOWS").filter(|v| !v.trim().is_empty()) {
            Some(spec) => windows(&schedule, &spec, &groups, groups_known).unwrap_or_else(|why| {
                fault(ConfigError::Windows(why.to_string()));
                schedule
            }),
            None => schedule,
        };
        if let Err(why) = crate::domain::lock::window::drains_fit(&windows, groups.drain_timeouts())
        {
            fault(ConfigError::Windows(why.to_string()));
        }
        let table = table(&var).unwrap_or_else(|err| {
            fault(err);
            None
        });
        let auth = auth(&var).unwrap_or_else(|err| {
            fault(err);
            None
        });
        let region = var("FLEETLOCK_REGION")
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty());
        if let Some(name) = &region
            && !is_region_name(name)
        {
            fault(ConfigError::Region(format!(
                "'{name}' is not a region name like eu-west-1"
            )));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Self {
            groups,
            table,
            auth,
            windows,
            region,
        })
    }

    pub(crate) fn from_env() -> Result<Self, ConfigError> {
        Self::from_vars(process_env)
    }

    /// The groups and the credentials read against each other
    /// ([`coverage::mismatches`]); nothing without credentials.
    pub(crate) fn mismatches(&self) -> Vec<Mismatch> {
        match &self.auth {
            Some(Auth::Required(clients)) => coverage::mismatches(&self.groups, clients),
            _ => Vec::new(),
        }
    }

    /// Logs each mismatch at start. A start that failed would answer every
    /// node 5xx: the checks before a deploy refuse the typos, and here they
    /// only reach the log.
    pub(crate) fn log_mismatches(&self) {
        for mismatch in self.mismatches() {
            tracing::warn!(typo = mismatch.typo, "{}", mismatch.text);
        }
    }
}

/// `FLEETLOCK_TABLE`, checked; `None` when unset.
pub(crate) fn table(var: impl Fn(&str) -> Option<String>) -> Result<Option<String>, ConfigError> {
    match var("FLEETLOCK_TABLE") {
        None => Ok(None),
        Some(name) if valid_table_name(&name) => Ok(Some(name)),
        Some(name) => Err(ConfigError::Table(format!(
            "'{name}' is not a DynamoDB table name (3 to 255 of a-z A-Z 0-9 _ - .)"
        ))),
    }
}

/// `FLEETLOCK_WINDOWS` in `schedule`'s zone, each naming a configured group
/// (any group, while the groups themselves are wrong: `groups_known` false).
fn windows(
    schedule: &Schedule,
    spec: &str,
    groups: &GroupSlots,
    groups_known: bool,
) -> Result<Schedule, ScheduleError> {
    schedule.clone().with_windows(
        spec,
        |g| match groups.setting_may_name(g) {
            Err(why) if groups_known => Err(why),
            _ => Ok(()),
        },
        !groups_known || groups.others().is_some(),
    )
}

/// `FLEETLOCK_CLIENTS` and `FLEETLOCK_AUTH`; `None` when neither says.
fn auth(var: impl Fn(&str) -> Option<String>) -> Result<Option<Auth>, ConfigError> {
    let clients = var("FLEETLOCK_CLIENTS").filter(|v| !v.trim().is_empty());
    match (var("FLEETLOCK_AUTH").as_deref(), clients) {
        (Some("disabled"), Some(_)) => Err(ConfigError::Auth(
            "'disabled' conflicts with the clients listed in FLEETLOCK_CLIENTS".into(),
        )),
        (Some("disabled"), None) => Ok(Some(Auth::Disabled)),
        (Some("required") | None, Some(clients)) => Ok(Some(Auth::Required(
            Clients::parse(&clients).map_err(|BadClients(why)| ConfigError::Clients(why))?,
        ))),
        (Some("required"), None) => Err(ConfigError::Auth(
            "'required' but FLEETLOCK_CLIENTS lists no client (see 'fleetlock credential')".into(),
        )),
        (None, None) => Ok(None),
        (Some(other), _) => Err(ConfigError::Auth(format!(
            "'{other}' is neither 'required' nor 'disabled'"
        ))),
    }
}

/// The table a command works on: `FLEETLOCK_TABLE`, and nothing else.
pub(crate) fn command_table(
    var: impl Fn(&str) -> Option<String>,
    command: &str,
) -> Result<String, ConfigError> {
    table(var)?.ok_or_else(|| {
        ConfigError::Missing(format!(
            "{command} works on the DynamoDB table named by FLEETLOCK_TABLE, which is unset \
             (e.g. FLEETLOCK_TABLE=fleetlock AWS_REGION=eu-west-1 fleetlock {command})"
        ))
    })
}

/// Whether any of the settings that decide grants is set.
pub(crate) fn rules_given(var: impl Fn(&str) -> Option<String>) -> bool {
    settings::rule_variables().any(|name| var(name).is_some())
}

/// The deployed function whose settings `status` and `forget` read:
/// `--function`, else `FLEETLOCK_FUNCTION`; blank is none.
pub(crate) fn deployed_function(
    var: impl Fn(&str) -> Option<String>,
    flag: Option<String>,
) -> Option<String> {
    flag.or_else(|| var("FLEETLOCK_FUNCTION"))
        .filter(|f| !f.trim().is_empty())
}

/// The Lambda handler name (`_HANDLER`), which picks the entry point.
pub(crate) fn lambda_handler(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    var("_HANDLER")
}

/// The name a Lambda function runs under: the metrics' `Service` dimension.
pub(crate) fn function_name(var: impl Fn(&str) -> Option<String>) -> String {
    var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|| "fleetlock".into())
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
    use std::path::PathBuf;
    use std::time::Duration;

    use super::entries::{DEFAULT_BUS, MACHINE_ID_FILE};

    use crate::domain::groups::*;
    use crate::domain::input::GroupName;
    use crate::domain::lock::lease::parse_lease;
    use crate::domain::time::format_duration;

    fn group(s: &str) -> GroupName {
        GroupName::parse(s).unwrap()
    }

    /// Found by the model check (tests/model): a window no longer than the
    /// drain timeout begins no drain, and the group never moves.
    #[test]
    fn a_drain_gate_longer_than_every_window_of_its_group_is_refused() {
        let config = |windows: &'static str, drain: &'static str| {
            Config::from_vars(move |name| match name {
                "FLEETLOCK_GROUPS" => Some("workers=1,*=1".into()),
                "FLEETLOCK_DRAIN" => Some(drain.into()),
                "FLEETLOCK_WINDOWS" => Some(windows.into()),
                _ => None,
            })
        };
        let sat = |length: u32| format!("days=Sat start_time=22:00 length_minutes={length}");
        let workers = |length| format!("workers: {}", sat(length)).leak() as &'static str;
        let err = config(workers(60), "workers=1h").unwrap_err().to_string();
        assert!(
            err.contains("group 'workers': its longest window, 60 minutes, is not longer"),
            "{err}"
        );
        assert!(config(workers(61), "workers=1h").is_ok());
        // Two windows that touch are one stretch: Saturday 22:00 to Sunday 00:30.
        let touching = "workers: days=Sat start_time=22:00 length_minutes=120; \
                        workers: days=Sun start_time=00:00 length_minutes=30";
        assert!(config(touching, "workers=2h").is_ok());
        let others = format!("*: {}", sat(30)).leak() as &'static str;
        let err = config(others, "*=30m").unwrap_err().to_string();
        // `*`'s window and drain reach workers, which has neither of its own.
        assert!(err.contains("its longest window, 30 minutes"), "{err}");
        assert!(
            config(others, "workers=20m").is_ok(),
            "20 minutes fit in the window of '*'"
        );
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
    fn star_never_makes_a_group_that_differs_from_a_listed_one_only_in_case() {
        let slots = GroupSlots::parse("workers=3,*=1").unwrap();
        let refused = slots.slots_for(&group("Workers")).unwrap_err();
        assert_eq!(refused.kind(), "unknown_group");
        assert!(
            refused
                .value()
                .contains("most likely belongs to group 'workers'"),
            "{}",
            refused.value()
        );
        assert_eq!(slots.slots_for(&group("workers")), Ok(3));
        assert_eq!(
            slots.slots_for(&group("workers2")),
            Ok(1),
            "not a case twin"
        );
        // Without '*' the plain refusal names the twin all the same.
        let listed = GroupSlots::parse("workers=3").unwrap();
        assert!(
            listed
                .slots_for(&group("WORKERS"))
                .unwrap_err()
                .value()
                .contains("'workers'")
        );
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
        let entry = crate::domain::auth::new_credential("fleet", "*")
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
            .with_setting("FLEETLOCK_SETTLE", "workers=10m, *=90s")
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
            ("db=10m", "not configured by FLEETLOCK_GROUPS"),
            (
                "wrokers=10m",
                "group 'wrokers' is not configured by FLEETLOCK_GROUPS (did you mean 'workers'?)",
            ),
            ("*=1m", "has no '*'"),
            ("workers=1m,workers=2m", "listed twice"),
            ("workers=1m,,default=1m", "empty entry"),
            ("bad_name=1m", "group 'bad_name'"),
            ("workers=48h", "longer than 24h"),
        ] {
            let err = groups()
                .with_setting("FLEETLOCK_SETTLE", spec)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("FLEETLOCK_SETTLE: ") && err.contains(says),
                "{spec}: {err}"
            );
        }
    }

    #[test]
    fn leases_per_group_with_a_wildcard_and_none_by_default() {
        let config = Config::from_vars(vars(&[
            ("FLEETLOCK_GROUPS", "default=1,workers=3,*=1"),
            ("FLEETLOCK_LEASE", "workers=6h, *=90m"),
        ]))
        .unwrap();
        let lease = |g: &str| config.groups.rules_for(&group(g)).unwrap().lease;
        assert_eq!(lease("workers"), Some(Duration::from_secs(6 * 3600)));
        assert_eq!(lease("other"), Some(Duration::from_secs(90 * 60)));
        let plain = Config::from_vars(vars(&[("FLEETLOCK_GROUPS", "workers=3")])).unwrap();
        assert_eq!(
            plain.groups.rules_for(&group("workers")).unwrap().lease,
            None
        );
        assert_eq!(
            parse_lease("168h"),
            Ok(Duration::from_secs(7 * 24 * 3600)),
            "a week is the longest"
        );
        assert_eq!(
            parse_lease("30m"),
            Ok(Duration::from_secs(1800)),
            "30m is the shortest"
        );
    }

    #[test]
    fn drain_gates_per_group_hold_by_default_and_none_without_the_setting() {
        use crate::domain::lock::OnDrainTimeout;
        let config = Config::from_vars(vars(&[
            ("FLEETLOCK_GROUPS", "default=1,workers=3,*=1"),
            ("FLEETLOCK_DRAIN", "workers=15m, *=1h:grant"),
        ]))
        .unwrap();
        let drain = |g: &str| {
            config
                .groups
                .rules_for(&group(g))
                .unwrap()
                .drain
                .map(|d| (d.timeout.as_secs(), d.on_timeout))
        };
        assert_eq!(drain("workers"), Some((900, OnDrainTimeout::Hold)));
        assert_eq!(drain("other"), Some((3600, OnDrainTimeout::Grant)));
        assert!(config.groups.drains());
        let plain = Config::from_vars(vars(&[("FLEETLOCK_GROUPS", "workers=3")])).unwrap();
        assert_eq!(
            plain.groups.rules_for(&group("workers")).unwrap().drain,
            None
        );
        assert!(!plain.groups.drains());
        // The drained function sweeps only with a gate, into the API
        // function's metric, which it must be told.
        let drained = |drain: Option<&str>, service: Option<&str>| {
            DrainedSettings::from_vars(|name| match name {
                "FLEETLOCK_TABLE" => Some("locks".into()),
                "FLEETLOCK_GROUPS" => Some("workers=3".into()),
                "FLEETLOCK_DRAIN" => drain.map(Into::into),
                "FLEETLOCK_METRICS_SERVICE" => service.map(Into::into),
                _ => None,
            })
        };
        let swept = drained(Some("workers=15m"), Some("api")).unwrap();
        assert_eq!(swept.sweep.map(|(_, service)| service), Some("api".into()));
        assert!(drained(None, Some("api")).unwrap().sweep.is_none());
        let why = drained(Some("workers=15m"), None).unwrap_err().to_string();
        assert!(
            why.starts_with("FLEETLOCK_METRICS_SERVICE is unset"),
            "{why}"
        );
        // Either a named group's gate or the `*` gate alone is a gate.
        for spec in ["workers=15m", "*=1h"] {
            let one = Config::from_vars(vars(&[
                ("FLEETLOCK_GROUPS", "workers=3,*=1"),
                ("FLEETLOCK_DRAIN", spec),
            ]))
            .unwrap();
            assert!(one.groups.drains(), "{spec}");
        }
        use crate::domain::lock::drain::parse_drain;
        assert_eq!(
            parse_drain("1m"),
            Ok((Duration::from_secs(60), OnDrainTimeout::Hold))
        );
        assert_eq!(
            parse_drain("24h:hold"),
            Ok((Duration::from_secs(86_400), OnDrainTimeout::Hold))
        );
    }

    #[test]
    fn bad_drain_settings_stop_start_up_with_the_reason() {
        for (spec, says) in [
            ("workers", "not of the form"),
            ("workers=soon", "not a duration"),
            (
                "workers=15m:later",
                "'later' is not what happens at the drain timeout",
            ),
            ("db=15m", "not configured"),
            ("*=15m", "has no '*'"),
            ("workers=15m,workers=20m", "listed twice"),
            ("workers=59s", "shorter than 1m"),
            ("workers=24h1s:grant", "longer than 24h"),
        ] {
            let errors = Config::checked(vars(&[
                ("FLEETLOCK_GROUPS", "default=1,workers=3"),
                ("FLEETLOCK_DRAIN", spec),
            ]))
            .unwrap_err();
            let err = errors[0].to_string();
            assert!(
                errors.len() == 1 && err.starts_with("FLEETLOCK_DRAIN: ") && err.contains(says),
                "{spec}: {errors:?}"
            );
        }
    }

    #[test]
    fn bad_lease_settings_stop_start_up_with_the_reason() {
        for (spec, says) in [
            ("workers", "not of the form"),
            ("workers=long", "not a duration"),
            ("db=6h", "not configured"),
            ("*=6h", "has no '*'"),
            ("workers=6h,workers=7h", "listed twice"),
            ("workers=29m59s", "shorter than 30m"),
            ("workers=0s", "shorter than 30m"),
            ("workers=169h", "longer than a week"),
        ] {
            let errors = Config::checked(vars(&[
                ("FLEETLOCK_GROUPS", "default=1,workers=3"),
                ("FLEETLOCK_LEASE", spec),
            ]))
            .unwrap_err();
            let err = errors[0].to_string();
            assert!(
                errors.len() == 1 && err.starts_with("FLEETLOCK_LEASE: ") && err.contains(says),
                "{spec}: {errors:?}"
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

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn a_command_reads_only_the_table_and_never_the_rules() {
        let shell = vars(&[
            ("FLEETLOCK_TABLE", "locks"),
            ("FLEETLOCK_WINDOWS", "garbage"),
            ("FLEETLOCK_GROUPS", "not a list"),
        ]);
        assert_eq!(command_table(&shell, "release"), Ok("locks".into()));
        let unset = command_table(vars(&[]), "release").unwrap_err().to_string();
        assert!(unset.starts_with("release works on the DynamoDB table named by FLEETLOCK_TABLE"));
        let bad = command_table(vars(&[("FLEETLOCK_TABLE", "a b")]), "status").unwrap_err();
        assert!(matches!(bad, ConfigError::Table(_)), "{bad:?}");
        assert!(rules_given(&shell));
        assert!(!rules_given(vars(&[("FLEETLOCK_TABLE", "locks")])));
    }

    #[test]
    fn the_api_needs_a_table_and_a_decision_on_credentials() {
        let no_table = ApiSettings::from_vars(vars(&[("FLEETLOCK_AUTH", "disabled")]));
        assert_eq!(no_table.unwrap_err(), ApiSettingsError::NoTable);
        let no_auth = ApiSettings::from_vars(vars(&[("FLEETLOCK_TABLE", "locks")]));
        assert_eq!(no_auth.unwrap_err(), ApiSettingsError::NoAuth);
        let bad = ApiSettings::from_vars(vars(&[("FLEETLOCK_SETTLE", "x")])).unwrap_err();
        assert!(
            matches!(
                &bad,
                ApiSettingsError::Invalid(ConfigError::Groups(err)) if err.variable == "FLEETLOCK_SETTLE"
            ),
            "{bad:?}"
        );
        let ok = ApiSettings::from_vars(vars(&[
            ("FLEETLOCK_TABLE", "locks"),
            ("FLEETLOCK_AUTH", "disabled"),
            ("AWS_LAMBDA_FUNCTION_NAME", "fleetlock-prod"),
        ]))
        .unwrap();
        assert_eq!(
            (ok.table.as_str(), ok.function.as_str()),
            ("locks", "fleetlock-prod")
        );
        assert_eq!(ok.auth, Auth::Disabled);
    }

    #[test]
    fn an_alarm_pause_of_a_group_not_configured_is_refused() {
        let typo = alarm_gates(vars(&[
            ("FLEETLOCK_GROUPS", "default=1,workers=3"),
            ("FLEETLOCK_ALARM_PAUSES", "api-5xx=wrokers"),
        ]))
        .unwrap_err();
        assert_eq!(
            typo.to_string(),
            "FLEETLOCK_ALARM_PAUSES: alarm 'api-5xx' pauses group 'wrokers', which \
             FLEETLOCK_GROUPS does not configure (did you mean 'workers'?) (configured: default, \
             workers); the pause would guard nothing"
        );
        for ok in [
            [
                ("FLEETLOCK_GROUPS", "default=1,workers=3"),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx=workers"),
            ],
            [
                ("FLEETLOCK_GROUPS", "default=1,*=2"),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx=anything"),
            ],
            [
                ("FLEETLOCK_GROUPS", "default=1"),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx=*"),
            ],
        ] {
            assert!(alarm_gates(vars(&ok)).is_ok(), "{ok:?}");
        }
        // Unset groups are the built-in default's.
        assert!(alarm_gates(vars(&[("FLEETLOCK_ALARM_PAUSES", "x=default")])).is_ok());
        assert!(alarm_gates(vars(&[("FLEETLOCK_ALARM_PAUSES", "x=workers")])).is_err());
    }

    #[test]
    fn slot_events_read_only_the_bus_and_alarm_pauses_need_gates() {
        // A broken group setting is none of the slot-events function's business.
        let events = SlotEventsSettings::from_vars(vars(&[
            ("FLEETLOCK_GROUPS", "not a list"),
            ("FLEETLOCK_EVENT_BUS", " "),
        ]));
        assert_eq!(events.bus, DEFAULT_BUS);
        assert_eq!(events.function, "fleetlock");
        let no_gates = AlarmPausesSettings::from_vars(vars(&[("FLEETLOCK_TABLE", "locks")]));
        assert_eq!(
            no_gates.unwrap_err().to_string(),
            "FLEETLOCK_ALARM_PAUSES names no alarm: nothing to follow"
        );
        let no_table = AlarmPausesSettings::from_vars(vars(&[("FLEETLOCK_ALARM_PAUSES", "a=*")]));
        assert_eq!(
            no_table.unwrap_err().to_string(),
            "FLEETLOCK_TABLE is unset; alarm pauses are written to the lock table"
        );
        let ok = AlarmPausesSettings::from_vars(vars(&[
            ("FLEETLOCK_TABLE", "locks"),
            ("FLEETLOCK_GROUPS", "db=1,web=2"),
            ("FLEETLOCK_ALARM_PAUSES", "db-errors=*"),
        ]))
        .unwrap();
        assert_eq!(ok.configured, [group("db"), group("web")]);
    }

    #[test]
    fn lock_settings_and_the_operator_have_defaults() {
        let lock = LockSettings::from_vars(vars(&[]));
        assert_eq!(lock.url, None);
        assert_eq!(lock.machine_id_file, PathBuf::from(MACHINE_ID_FILE));
        assert_eq!(
            operator_name(vars(&[("USER", "ana")]), None),
            Ok("ana".into())
        );
        assert_eq!(
            operator_name(vars(&[("USER", "ana")]), Some("bob".into())),
            Ok("bob".into())
        );
        assert_eq!(operator_name(vars(&[]), None), Ok("an operator".into()));
        assert!(operator_name(vars(&[]), Some(" ".into())).is_err());
        assert_eq!(
            deployed_function(vars(&[("FLEETLOCK_FUNCTION", "f")]), None),
            Some("f".into())
        );
        assert_eq!(deployed_function(vars(&[]), Some(" ".into())), None);
    }

    /// Every configuration the docs write out as shell assignments goes
    /// together and starts: one value per variable wherever it appears, and
    /// all of them read as the function reads them.
    #[test]
    fn the_docs_example_configuration_starts() {
        let docs = docs_text();
        let mut seen: Vec<(String, String)> = Vec::new();
        for (at, _) in docs.match_indices("FLEETLOCK_") {
            let rest = &docs[at..];
            let Some((name, value)) = rest.split_once('=') else {
                continue;
            };
            if !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                continue;
            }
            let value = match value.strip_prefix('\'') {
                Some(quoted) => quoted.split('\'').next().unwrap_or_default(),
                None => value
                    .split(|c: char| c.is_whitespace() || c == '`')
                    .next()
                    .unwrap_or_default(),
            };
            let rules = [
                "FLEETLOCK_GROUPS",
                "FLEETLOCK_SETTLE",
                "FLEETLOCK_LEASE",
                "FLEETLOCK_WINDOWS",
                "FLEETLOCK_TIME_ZONE",
                "FLEETLOCK_ALARM_PAUSES",
            ];
            if rules.contains(&name) && !value.is_empty() {
                seen.push((name.to_owned(), value.to_owned()));
            }
        }
        for (name, value) in &seen {
            for (other, differs) in &seen {
                assert!(
                    other != name || differs == value,
                    "the docs give {name} as '{value}' and as '{differs}'"
                );
            }
        }
        for name in ["FLEETLOCK_GROUPS", "FLEETLOCK_SETTLE", "FLEETLOCK_WINDOWS"] {
            assert!(
                seen.iter().any(|(n, _)| n == name),
                "no {name} example: {seen:?}"
            );
        }
        let var = |name: &str| seen.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        let config = Config::from_vars(var).unwrap_or_else(|e| panic!("{e}: {seen:?}"));
        alarm_gates(var).unwrap();
        assert!(config.windows.calendars().count() >= 2, "{seen:?}");
    }

    /// Issue 64: a setting that names a zone's group of a split group is
    /// refused naming the split group, whichever setting it is and in
    /// whichever order the settings are read; a twin gets a did-you-mean.
    #[test]
    fn a_setting_on_a_zones_group_names_the_split_group() {
        for (setting, spec) in [
            ("FLEETLOCK_CANARY", "workers.us-east-1a=30m"),
            ("FLEETLOCK_SETTLE", "workers.us-east-1a=10m"),
            ("FLEETLOCK_LEASE", "workers.us-east-1a=6h"),
            (
                "FLEETLOCK_WINDOWS",
                "workers.us-east-1a: days=Sat start_time=02:00 length_minutes=60",
            ),
        ] {
            let err = Config::from_vars(|name| match name {
                "FLEETLOCK_GROUPS" => Some("workers=3,*=1".into()),
                "FLEETLOCK_ZONES" => Some("workers".into()),
                n if n == setting => Some(spec.into()),
                _ => None,
            })
            .unwrap_err()
            .to_string();
            assert!(err.starts_with(setting), "{setting}: {err}");
            assert!(
                err.contains("zone 'us-east-1a' of group 'workers'"),
                "{setting}: {err}"
            );
        }
        for twin in [
            "Workers.us-east-1a",
            "worker.us-east-1a",
            "workers-us-east-1a",
        ] {
            let err = Config::from_vars(|name| match name {
                "FLEETLOCK_GROUPS" => Some("workers=3".into()),
                "FLEETLOCK_ZONES" => Some("workers".into()),
                "FLEETLOCK_CANARY" => Some(format!("{twin}=30m")),
                _ => None,
            })
            .unwrap_err()
            .to_string();
            assert!(err.contains("did you mean 'workers'?"), "{twin}: {err}");
        }
    }
}
