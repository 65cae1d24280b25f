//! The settings of each entry point besides the service's rules: the API
//! (its table, credentials and function), slot events, alarm pauses, the
//! drained hook, the Kubernetes agent's host, the lock command; each read
//! once at start-up from its variables.

use super::{Config, ConfigError, function_name};
use crate::domain::alarms::AlarmGates;
use crate::domain::auth::Auth;
use crate::domain::groups::GroupSlots;
use crate::domain::input::GroupName;
use crate::domain::names::did_you_mean;
use std::fmt;
use std::path::PathBuf;

/// The API entry point's settings. Under Lambda the locks must live in
/// DynamoDB and a public endpoint needs credentials: no silent default.
#[derive(Clone, Debug)]
pub(crate) struct ApiSettings {
    pub(crate) config: Config,
    pub(crate) table: String,
    pub(crate) auth: Auth,
    pub(crate) function: String,
}

/// Why the API entry point does not start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ApiSettingsError {
    Invalid(ConfigError),
    /// An in-process store would give every Lambda instance a semaphore of
    /// its own.
    NoTable,
    NoAuth,
}

impl fmt::Display for ApiSettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiSettingsError::Invalid(err) => write!(f, "{err}"),
            ApiSettingsError::NoTable => f.write_str(
                "FLEETLOCK_TABLE is unset; under Lambda the locks must live in DynamoDB",
            ),
            ApiSettingsError::NoAuth => f.write_str(
                "neither FLEETLOCK_CLIENTS nor FLEETLOCK_AUTH=disabled is set; a public reboot \
                 lock needs client credentials (see 'fleetlock credential')",
            ),
        }
    }
}

impl ApiSettings {
    pub(crate) fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ApiSettingsError> {
        let config = Config::from_vars(&var).map_err(ApiSettingsError::Invalid)?;
        Self::from_config(config, var)
    }

    /// The same from settings already read (a table and a decision on
    /// credentials still required).
    pub(crate) fn from_config(
        config: Config,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, ApiSettingsError> {
        let table = config.table.clone().ok_or(ApiSettingsError::NoTable)?;
        let auth = config.auth.clone().ok_or(ApiSettingsError::NoAuth)?;
        Ok(Self {
            config,
            table,
            auth,
            function: function_name(&var),
        })
    }
}

/// The bus used when `FLEETLOCK_EVENT_BUS` is unset.
pub(crate) const DEFAULT_BUS: &str = "default";

/// The slot-events entry point's settings: only the bus (and the function's
/// name for its metrics); no table, no clients, no groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SlotEventsSettings {
    pub(crate) bus: String,
    pub(crate) function: String,
}

impl SlotEventsSettings {
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        let bus = var("FLEETLOCK_EVENT_BUS")
            .filter(|bus| !bus.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_BUS.into());
        Self {
            bus,
            function: function_name(&var),
        }
    }
}

/// `FLEETLOCK_ALARM_PAUSES`, checked; empty when unset. A group an alarm
/// names must be one `FLEETLOCK_GROUPS` configures (unless a `*` covers
/// every name): a pause of a group nobody calls guards nothing, and the
/// name is most likely a typo of one that is called.
pub(crate) fn alarm_gates(var: impl Fn(&str) -> Option<String>) -> Result<AlarmGates, ConfigError> {
    let spec = var("FLEETLOCK_ALARM_PAUSES").unwrap_or_default();
    let gates =
        AlarmGates::parse(&spec).map_err(|why| ConfigError::AlarmPauses(why.to_string()))?;
    let groups = match var("FLEETLOCK_GROUPS") {
        // A wrong FLEETLOCK_GROUPS is its own error, said where it is read.
        Some(spec) => match GroupSlots::parse(&spec) {
            Ok(groups) => groups,
            Err(_) => return Ok(gates),
        },
        None => GroupSlots::default(),
    };
    if groups.others().is_some() {
        return Ok(gates);
    }
    if let Some((alarm, group)) = gates.unknown_group(|g| groups.slots_for(g).is_ok()) {
        let configured: Vec<String> = groups.listed().map(|(g, _)| g.to_string()).collect();
        let closest = did_you_mean(group.as_str(), configured.iter().map(String::as_str));
        return Err(ConfigError::AlarmPauses(format!(
            "alarm '{alarm}' pauses group '{group}', which FLEETLOCK_GROUPS does not configure{closest} \
             (configured: {}); the pause would guard nothing",
            configured.join(", ")
        )));
    }
    Ok(gates)
}

/// The alarm-pauses entry point's settings: the table, the gates, and the
/// groups `FLEETLOCK_GROUPS` names (for gates on `*`).
#[derive(Clone, Debug)]
pub(crate) struct AlarmPausesSettings {
    pub(crate) table: String,
    pub(crate) gates: AlarmGates,
    pub(crate) configured: Vec<GroupName>,
    /// `FLEETLOCK_REGION`: on a global table, the region whose pauses this
    /// function owns.
    pub(crate) region: Option<String>,
}

impl AlarmPausesSettings {
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let config = Config::from_vars(&var)?;
        let table = config.table.ok_or_else(|| {
            ConfigError::Missing(
                "FLEETLOCK_TABLE is unset; alarm pauses are written to the lock table".into(),
            )
        })?;
        let gates = alarm_gates(&var)?;
        if gates.is_empty() {
            return Err(ConfigError::Missing(
                "FLEETLOCK_ALARM_PAUSES names no alarm: nothing to follow".into(),
            ));
        }
        let configured = config
            .groups
            .listed()
            .map(|(name, _)| name.clone())
            .collect();
        Ok(Self {
            table,
            gates,
            configured,
            region: config.region,
        })
    }
}

/// The drained entry point's settings: the table, and for its sweep the
/// gates (`FLEETLOCK_GROUPS`, `FLEETLOCK_DRAIN`, `FLEETLOCK_RETURN`,
/// `FLEETLOCK_CANARY`, as the API function reads them) and the API function whose metric it feeds
/// (`FLEETLOCK_METRICS_SERVICE`). Without a gate it confirms and reads
/// slots, and refuses a sweep.
#[derive(Clone, Debug)]
pub(crate) struct DrainedSettings {
    pub(crate) table: String,
    pub(crate) sweep: Option<(GroupSlots, String)>,
}

impl DrainedSettings {
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let config = Config::from_vars(&var)?;
        let table = config.table.ok_or_else(|| {
            ConfigError::Missing(
                "FLEETLOCK_TABLE is unset; drains are confirmed in the lock table".into(),
            )
        })?;
        let service = var("FLEETLOCK_METRICS_SERVICE").filter(|s| !s.trim().is_empty());
        let gates = config.groups.drains() || config.groups.returns() || config.groups.canaries();
        let sweep = match (gates, service) {
            (true, Some(service)) => Some((config.groups, service)),
            (true, None) => {
                return Err(ConfigError::Missing(
                    "FLEETLOCK_METRICS_SERVICE is unset: the sweep of drains, returns and \
                     canaries' waves overdue needs the API function's name, the dimension its DrainsOverdue and \
                     ReturnsOverdue alarms watch"
                        .into(),
                ));
            }
            (false, _) => None,
        };
        Ok(Self { table, sweep })
    }
}

/// Where `status` and `hosts` find the host behind an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostSource {
    /// The instances' own tags (`tags`).
    Tags,
    /// A file of `ID HOST` lines.
    File(PathBuf),
}

/// `--hosts`, else `FLEETLOCK_HOSTS`: `tags`, or a host file's path.
pub(crate) fn host_source(
    var: impl Fn(&str) -> Option<String>,
    given: Option<String>,
) -> Option<HostSource> {
    let text = given.or_else(|| var("FLEETLOCK_HOSTS"))?;
    match text.trim() {
        "" => None,
        "tags" => Some(HostSource::Tags),
        path => Some(HostSource::File(PathBuf::from(path))),
    }
}

/// The default machine id file of `lock --app`.
pub(crate) const MACHINE_ID_FILE: &str = "/etc/machine-id";

/// What `lock` and `unlock` read: the server's URL (when no flag gives it)
/// and the machine id file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LockSettings {
    pub(crate) url: Option<String>,
    pub(crate) machine_id_file: PathBuf,
}

impl LockSettings {
    pub(crate) fn from_vars(var: impl Fn(&str) -> Option<String>) -> Self {
        Self {
            url: var("FLEETLOCK_URL"),
            machine_id_file: var("FLEETLOCK_MACHINE_ID_FILE")
                .map_or_else(|| MACHINE_ID_FILE.into(), PathBuf::from),
        }
    }
}

/// Why `--by` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("--by: 1 to 64 printable characters")]
pub(crate) struct BadOperatorName;

/// Who pauses: `--by`, else the login name (`USER`, `LOGNAME`); kept with
/// the pause.
pub(crate) fn operator_name(
    var: impl Fn(&str) -> Option<String>,
    by: Option<String>,
) -> Result<String, BadOperatorName> {
    let name = by
        .or_else(|| var("USER"))
        .or_else(|| var("LOGNAME"))
        .unwrap_or_else(|| "an operator".into());
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err(BadOperatorName);
    }
    Ok(name.to_owned())
}
