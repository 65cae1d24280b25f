//! One function per command, each on the settings and clients it was given
//! and writing to `out`: callable, and testable, without spawning the
//! binary. [`super::run`] reads the settings and builds the clients first.

use std::io::Write;

use crate::aws::iam::{self, PolicyFor};
use crate::cli::args::{Targets, did_you_mean};
use crate::cli::deploy_inputs::DeployInputs;
use crate::cli::report;
use crate::config::{self, Config};
use crate::domain::auth;
use crate::domain::hosts::HostMap;
use crate::domain::input::{GroupName, NodeId, PauseReason};
use crate::domain::lock::{PersonPause, Release, Timestamp};
use crate::domain::service::paused_because;
use crate::domain::store::{Changed, Excluding, Forgot, GroupRecord, LockStore};
use crate::domain::windows::{Calendar, Schedule};
use crate::store::dynamodb::DynamoStore;

use super::Failure;

/// A line of a command's report. A closed pipe (`| head`) ends nothing: the
/// command has done its work by the time it reports.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// A group named on the command line; a bad name is the command's input
/// error, in the sentence the name's own check gives.
pub fn group_named(name: &str) -> Result<GroupName, Failure> {
    GroupName::parse(name).map_err(|e| Failure::Input(e.value()))
}

/// `pause`: a person's pause on each group, kept as it is where one stands.
pub async fn pause<S: LockStore>(
    store: &S,
    targets: &[GroupName],
    reason: &PauseReason,
    by: &str,
    since: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    for group in targets {
        let pause = PersonPause {
            reason: reason.clone(),
            since,
            by: by.to_owned(),
        };
        let decided = store.pause(group, pause).await?;
        match decided.outcome {
            Changed::Yes => say!(out, "paused '{group}': no new reboot slots"),
            Changed::Overtaken => say!(
                out,
                "'{group}' was resumed by someone else while this pause was being \
                 written; nothing changed (pause it again if it should stop)"
            ),
            Changed::AlreadySo => say!(
                out,
                "'{group}' was already paused {}; kept as it was",
                paused_because(&decided.group.pause)
            ),
        }
    }
    Ok(())
}

/// `exclude`: keeps one node out of the rollout, says what changed.
pub async fn exclude<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    exclusion: crate::domain::lock::Exclusion,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.exclude(group, id, exclusion).await?;
    let shown = id.shown();
    match decided.outcome {
        Excluding::Changed(Changed::Yes) => {
            let holds = if decided.group.holders.holds(id) {
                "; the slot it holds stays its own until it gives it back"
            } else {
                ""
            };
            say!(
                out,
                "excluded '{shown}' from group '{group}': it takes no new reboot slot while the \
                 rest of the group goes on{holds}"
            );
        }
        Excluding::Changed(Changed::AlreadySo) => say!(
            out,
            "'{shown}' was already excluded from '{group}' {}; kept as it was",
            decided
                .group
                .excluded
                .get(id)
                .map_or_else(String::new, crate::domain::service::excluded_because)
        ),
        Excluding::Changed(Changed::Overtaken) => say!(
            out,
            "'{group}' was changed by someone else while this exclusion was being written; \
             nothing changed (run it again)"
        ),
        Excluding::AtLimit => {
            return Err(Failure::Refused(format!(
                "group '{group}' already excludes {} nodes, the most it may; nothing changed: \
                 include one of them first",
                decided.group.excluded.len()
            )));
        }
    }
    Ok(())
}

/// `include`: lets an excluded node take slots again.
pub async fn include<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.include(group, id).await?;
    let shown = id.shown();
    match decided.outcome {
        Changed::Yes => say!(
            out,
            "included '{shown}' in group '{group}' again: it may take reboot slots"
        ),
        Changed::AlreadySo => say!(
            out,
            "'{shown}' was not excluded from '{group}'; nothing changed"
        ),
        Changed::Overtaken => say!(
            out,
            "'{group}' was changed by someone else while this was being written; nothing \
             changed (run it again)"
        ),
    }
    Ok(())
}

/// What a person does to a named group, for the sentence that refuses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    Pause,
    Resume,
    /// Only a stored group can hold a slot: the configuration is not read.
    Release,
    Exclude,
    Include,
}

/// What is known of the groups a command names: the table, and the
/// configuration when it was read.
pub struct Known<'a, S> {
    store: &'a S,
    table: &'a str,
    deployed: Option<&'a Config>,
}

impl<'a, S: LockStore> Known<'a, S> {
    pub fn new(store: &'a S, table: &'a str, deployed: Option<&'a Config>) -> Self {
        Self {
            store,
            table,
            deployed,
        }
    }

    /// Refuses the first group that is neither stored nor configured: most
    /// often a typo, which would otherwise create a group nobody uses while
    /// the real one goes on granting. Names the closest known group.
    pub async fn refuse_typos(&self, named: &[GroupName], act: Act) -> Result<(), Failure> {
        let mut stored: Option<Vec<GroupName>> = None;
        for group in named {
            let configured = self
                .deployed
                .is_some_and(|config| config.groups.slots_for(group).is_ok());
            if configured || !self.store.groups(Some(group)).await?.is_empty() {
                continue;
            }
            if stored.is_none() {
                let names = self.store.groups(None).await?.into_iter().map(|(n, _)| n);
                stored = Some(names.collect());
            }
            let listed = self
                .deployed
                .into_iter()
                .flat_map(|config| config.groups.listed().map(|(name, _)| name.clone()));
            let known: Vec<GroupName> = listed.chain(stored.iter().flatten().cloned()).collect();
            let closest = did_you_mean(group.as_str(), known.iter().map(GroupName::as_str));
            let table = self.table;
            let unknown = match self.deployed {
                _ if act == Act::Release => {
                    format!(
                        "group '{group}' is not stored in table '{table}': no node has held a slot there"
                    )
                }
                Some(_) => {
                    format!("group '{group}' is neither stored in table '{table}' nor configured")
                }
                None => format!(
                    "group '{group}' is not stored in table '{table}', and the configuration was \
                     not read (pass --function NAME to check it)"
                ),
            };
            let next = match act {
                Act::Pause => "to pause a group no node has used yet, add --create",
                Act::Resume => "nothing is paused there",
                Act::Release => "check the group with 'fleetlock status'",
                Act::Exclude => "exclude a node of a group that is configured or stored",
                Act::Include => "nothing is excluded there",
            };
            return Err(Failure::Refused(format!(
                "{unknown}{closest}; nothing changed: {next}"
            )));
        }
        Ok(())
    }
}

/// `resume`: clears a person's pause; an alarm's stays, and is said.
pub async fn resume<S: LockStore>(
    store: &S,
    targets: &[GroupName],
    out: &mut impl Write,
) -> Result<(), Failure> {
    for group in targets {
        let decided = store.resume(group).await?;
        let verb = match decided.outcome {
            Changed::Yes => format!("resumed '{group}'"),
            Changed::AlreadySo => format!("'{group}' was not paused by a person"),
            Changed::Overtaken => format!(
                "'{group}' was paused again by someone else while this resume was \
                 being written; nothing changed"
            ),
        };
        if decided.group.pause.is_paused() {
            say!(
                out,
                "{verb}; still paused {}",
                paused_because(&decided.group.pause)
            );
        } else {
            say!(out, "{verb}: it grants reboot slots again");
        }
    }
    Ok(())
}

/// The groups a pause or resume names, or every group stored for `--all`.
pub async fn targets<S: LockStore>(
    store: &S,
    targets: &Targets,
    out: &mut impl Write,
) -> Result<Vec<GroupName>, Failure> {
    match targets {
        Targets::Named(names) => names.iter().map(|name| group_named(name)).collect(),
        Targets::All => {
            let stored: Vec<GroupName> = store
                .groups(None)
                .await?
                .into_iter()
                .map(|(name, _)| name)
                .collect();
            // Said every time: `--all` cannot see a group that has no item.
            say!(
                out,
                "--all: {} group(s) stored in the table; a group covered by '*=N' that was never \
                 used has no item and is not covered (name it with --group)",
                stored.len()
            );
            Ok(stored)
        }
    }
}

/// `release`: gives back `id`'s slot in `group`; where it holds none, says
/// where it holds one.
pub async fn release<S: LockStore>(
    store: &S,
    group: &GroupName,
    id: &NodeId,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store.release(group, id, now).await?;
    let left = decided.group.holders.len();
    let id_shown = id.shown();
    if decided.outcome == Release::Released {
        say!(
            out,
            "released '{id_shown}' from group '{group}' ({left} {} left)",
            if left == 1 { "holder" } else { "holders" }
        );
        return Ok(());
    }
    // Nothing released: most often the wrong group. Say where it holds.
    let held_in: Vec<String> = store
        .groups(None)
        .await?
        .into_iter()
        .filter(|(_, record)| record.holders.holds(id))
        .map(|(name, _)| name.to_string())
        .collect();
    if held_in.is_empty() {
        say!(
            out,
            "'{id_shown}' held no slot in group '{group}' and holds none in any group; \
             nothing changed"
        );
        Ok(())
    } else {
        Err(Failure::Refused(format!(
            "'{id_shown}' holds no slot in group '{group}' but holds one in: {}; nothing \
             changed (run: fleetlock release --group {} --id {})",
            held_in.join(", "),
            held_in[0],
            shell_word(&id_shown)
        )))
    }
}

/// `drained`: a person confirms that a node was drained; its reservation
/// becomes its slot. Refused (nothing changed) when there is none to grant.
pub async fn drained<S: LockStore>(
    store: &S,
    confirmation: &crate::domain::drain::Confirmation,
    now: Timestamp,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let decided = store
        .drained(
            &confirmation.group,
            &confirmation.id,
            confirmation.reserved_at,
            now,
        )
        .await?;
    let confirmed = crate::domain::drain::Confirmed::of(decided.outcome, confirmation);
    if confirmed.done {
        say!(out, "{}", confirmed.value);
        Ok(())
    } else {
        Err(Failure::Refused(confirmed.value))
    }
}

/// `forget`: removes a group nobody uses; never one the configuration names.
pub async fn forget<S: LockStore>(
    store: &S,
    table: &str,
    group: &GroupName,
    deployed: Option<&Config>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    match deployed {
        Some(config) if config.groups.listed().any(|(name, _)| name == group) => {
            return Err(Failure::Refused(format!(
                "group '{group}' is named in the function's FLEETLOCK_GROUPS: its next \
                 request would bring it back, without its last release; take it out \
                 of the configuration first"
            )));
        }
        Some(_) => {}
        None => say!(
            out,
            "(the configuration was not read: pass --function NAME to refuse a group \
             it names)"
        ),
    }
    match store.forget(group).await? {
        Forgot::Removed { counted } => say!(
            out,
            "forgot group '{group}': its item is removed{}",
            if counted {
                ", and it no longer counts toward FLEETLOCK_MAX_WILDCARD_GROUPS"
            } else {
                ""
            }
        ),
        Forgot::Uncounted => say!(
            out,
            "group '{group}' had no item; it no longer counts toward \
             FLEETLOCK_MAX_WILDCARD_GROUPS"
        ),
        Forgot::NothingStored => {
            return Err(Failure::Refused(format!(
                "group '{group}' is not stored in table '{table}': nothing to forget \
                 ('fleetlock status' lists the groups)"
            )));
        }
        Forgot::Kept(record) => {
            let mut why = Vec::new();
            if !record.holders.is_empty() {
                let ids: Vec<String> = record.holders.holders().map(|(id, _)| id.shown()).collect();
                let slots = if ids.len() == 1 { "slot" } else { "slots" };
                why.push(format!(
                    "it holds {} {slots} ({}): release {}",
                    ids.len(),
                    ids.join(", "),
                    if ids.len() == 1 {
                        "it first"
                    } else {
                        "them first"
                    }
                ));
            }
            if record.pause.is_paused() {
                why.push(format!(
                    "it is paused {}: resume it first (an alarm's pause clears when \
                     the alarm does)",
                    paused_because(&record.pause)
                ));
            }
            return Err(Failure::Refused(format!(
                "group '{group}' was kept: {}; nothing changed",
                why.join("; and ")
            )));
        }
    }
    Ok(())
}

/// How `status` shows the groups.
#[derive(Clone, Copy)]
pub struct StatusView<'a> {
    pub json: bool,
    /// Every idle group too.
    pub all: bool,
    /// Where the holders' hosts come from, if asked.
    pub hosts: Option<&'a HostLookup>,
}

/// Where the hosts behind ids come from.
pub enum HostLookup {
    /// A host file, read already.
    File(HostMap),
    /// The instances' own tags, through the Tagging API.
    Tags(aws_sdk_resourcegroupstagging::Client),
}

impl HostLookup {
    /// The hosts of these ids (those known).
    pub async fn hosts(&self, ids: &[String]) -> Result<HostMap, Failure> {
        match self {
            HostLookup::File(map) => Ok(map.clone()),
            HostLookup::Tags(client) => crate::aws::instance_tags::hosts_of(client, ids)
                .await
                .map_err(Failure::Aws),
        }
    }
}

/// `hosts`: the host behind each id, or that none is known.
pub async fn hosts(
    ids: &[String],
    lookup: &HostLookup,
    json: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let map = lookup.hosts(ids).await?;
    if json {
        let rows: Vec<_> = ids
            .iter()
            .map(|id| report::host_json(id, map.get(id)))
            .collect();
        say!(out, "{:#}", serde_json::Value::Array(rows));
        return Ok(());
    }
    for id in ids {
        match map.get(id) {
            Some(host) => say!(out, "{id}  {host}"),
            None => say!(
                out,
                "{id}  (unknown: no instance is tagged with it, no line of the host file names it)"
            ),
        }
    }
    Ok(())
}

/// `status`: who holds a slot, and each group's state and rules.
pub async fn status<S: LockStore>(
    store: &S,
    group: Option<&GroupName>,
    deployed: Option<&Config>,
    now: Timestamp,
    view: StatusView<'_>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut groups = store.groups(group).await?;
    let used = groups.len();
    // Every configured group, those no node has used yet too (a group whose
    // window has not opened yet would otherwise be invisible).
    let mut never_used = Vec::new();
    if let (None, Some(config)) = (group, deployed) {
        for (name, _) in config.groups.listed() {
            if !groups.iter().any(|(stored, _)| stored == name) {
                groups.push((name.clone(), GroupRecord::default()));
                never_used.push(name.clone());
            }
        }
    }
    let hosts = match view.hosts {
        Some(lookup) => {
            // The holders' hosts, and the excluded nodes'.
            let ids: Vec<String> = groups
                .iter()
                .flat_map(|(_, record)| {
                    let holders = record.holders.holders().map(|(id, _)| id);
                    holders.chain(record.excluded.keys())
                })
                .map(|id| id.as_str().to_owned())
                .collect();
            Some(lookup.hosts(&ids).await?)
        }
        None => None,
    };
    let wildcard = store.wildcard_groups().await?;
    let wildcard = report::Wildcard {
        counted: wildcard.len(),
        limit: deployed.map(|config| config.groups.wildcard_limit()),
    };
    if view.json {
        say!(
            out,
            "{:#}",
            report::json(
                &groups,
                deployed,
                now,
                wildcard,
                &never_used,
                hosts.as_ref()
            )
        );
        return Ok(());
    }
    let idle_shown = (!view.all).then_some(report::IDLE_SHOWN);
    let _ = write!(
        out,
        "{}",
        report::table(
            &groups,
            deployed,
            now,
            idle_shown,
            wildcard,
            &never_used,
            hosts.as_ref()
        )
    );
    match (group, used == 0) {
        (_, false) => {}
        (None, true) => say!(out, "(no group has been used yet)"),
        (Some(group), true) => say!(out, "{}", report::unused_group(group, deployed)),
    }
    Ok(())
}

/// `create-table`, and with `--dry-run` only the definition.
pub async fn create_table(store: &DynamoStore, out: &mut impl Write) -> Result<(), Failure> {
    let created = store.create_table().await?;
    let verb = if created {
        "created"
    } else {
        "already exists:"
    };
    say!(out, "table {verb} {} (active)", store.table());
    Ok(())
}

/// `create-table --dry-run`.
pub fn table_definition(out: &mut impl Write) {
    say!(out, "{:#}", crate::store::dynamodb::table_definition());
}

/// `iam-policy`, with placeholders for the ARNs not given.
pub fn iam_policy(
    policy_for: PolicyFor,
    table_arn: Option<&str>,
    function_arn: Option<&str>,
    out: &mut impl Write,
) {
    let table = table_arn.unwrap_or("arn:aws:dynamodb:REGION:ACCOUNT:table/TABLE");
    let function = function_arn.unwrap_or("arn:aws:lambda:REGION:ACCOUNT:function:FUNCTION");
    let policy = match policy_for {
        PolicyFor::Function => iam::function_policy(table),
        PolicyFor::Operator => iam::operator_policy(table, function),
        PolicyFor::SlotEvents => iam::slot_events_policy(
            table,
            "arn:aws:events:REGION:ACCOUNT:event-bus/BUS",
            "arn:aws:sqs:REGION:ACCOUNT:QUEUE",
        ),
        PolicyFor::AlarmPauses => {
            iam::alarm_pauses_policy(table, "arn:aws:cloudwatch:REGION:ACCOUNT:alarm:*")
        }
        PolicyFor::NodeTagging => iam::node_tagging_policy(),
        PolicyFor::Drained => iam::drained_policy(table),
        PolicyFor::DrainHook => iam::drain_hook_policy(function),
    };
    say!(out, "{policy:#}");
}

/// `credential`: the entry of a given secret, or a new secret with its entry
/// and the base_url for Zincati; with the deployment's base URL, the whole
/// drop-in a node needs.
pub fn credential(
    name: &str,
    groups: &str,
    secret: Option<&str>,
    base_url: Option<&str>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    if let Some(secret) = secret {
        say!(
            out,
            "{}",
            auth::entry_for(name, groups, secret).map_err(Failure::Input)?
        );
        return Ok(());
    }
    // Checked before a secret is made: nothing is shown for a bad URL.
    let base_url = base_url.map(deployment_url).transpose()?;
    let new = auth::new_credential(name, groups).map_err(Failure::Input)?;
    say!(
        out,
        "FLEETLOCK_CLIENTS entry (it holds only a salted hash):"
    );
    say!(out, "  {}", new.entry);
    say!(
        out,
        "Zincati base_url for the nodes of group(s) '{groups}':"
    );
    let Some(mut url) = base_url else {
        say!(out, "  https://{name}:{}@YOUR-API-HOST/", new.secret);
        say!(out, "The secret is shown once and stored nowhere.");
        say!(
            out,
            "Replace YOUR-API-HOST with the host (and path) of the deployment's BaseUrl \
             output, or pass --url BASE_URL for the whole Zincati drop-in."
        );
        return Ok(());
    };
    // Name and secret are URL-safe by construction (a-z A-Z 0-9 . _ - and hex).
    let _ = url.set_username(name);
    let _ = url.set_password(Some(&new.secret));
    say!(out, "  {url}");
    say!(out, "The secret is shown once and stored nowhere.");
    say!(
        out,
        "Zincati drop-in, /etc/zincati/config.d/55-updates-strategy.toml:"
    );
    say!(out, "  [updates]");
    say!(out, "  strategy = \"fleet_lock\"");
    say!(out, "");
    say!(out, "  [updates.fleet_lock]");
    say!(out, "  base_url = \"{url}\"");
    // One named group: the nodes must say they are in it.
    if !groups.contains([',', '*']) && groups.trim() != "default" {
        say!(
            out,
            "and /etc/zincati/config.d/60-group.toml (the nodes' group; without it they ask for 'default'):"
        );
        say!(out, "  [identity]");
        say!(out, "  group = \"{}\"", groups.trim());
    }
    Ok(())
}

/// The deployment's base URL as Zincati needs it: https (http only on
/// loopback), no credentials of its own, ending with '/'.
fn deployment_url(text: &str) -> Result<url::Url, Failure> {
    let bad = |why: &str| Failure::Input(format!("--url {text}: {why}"));
    let url = url::Url::parse(text.trim()).map_err(|_| bad("not a URL like https://host/"))?;
    let loopback = matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"));
    if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
        return Err(bad("Zincati's base_url is https"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("give the deployment's URL, without credentials"));
    }
    if !url.path().ends_with('/') || url.query().is_some() || url.fragment().is_some() {
        return Err(bad(
            "base_url must end with '/' (Zincati joins v1/pre-reboot to it)",
        ));
    }
    Ok(url)
}

/// `windows`: for each group with windows (or only `group`), whether it is
/// open at `from` and its next `next` openings and closings, in UTC and in
/// the zone's time.
pub fn windows(
    schedule: &Schedule,
    group: Option<&GroupName>,
    from: Timestamp,
    next: usize,
    out: &mut impl Write,
) {
    let calendars: Vec<(String, &Calendar)> = match group {
        Some(group) => match schedule.calendar_for(group) {
            Some(calendar) => vec![(group.to_string(), calendar)],
            None => {
                say!(
                    out,
                    "group '{group}' has no maintenance windows: it may reboot at any time"
                );
                return;
            }
        },
        None => schedule
            .calendars()
            .map(|(name, calendar)| (name.map_or("*".into(), ToString::to_string), calendar))
            .collect(),
    };
    if calendars.is_empty() {
        say!(
            out,
            "no maintenance windows are configured: every group may reboot at any time"
        );
        return;
    }
    let zone = schedule.zone_name();
    let at = |t: Timestamp| {
        if schedule.is_utc() {
            t.to_rfc3339()
        } else {
            format!("{}  {}", t.to_rfc3339(), schedule.local_text(t))
        }
    };
    for (name, calendar) in calendars {
        let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
        say!(out, "{name} ({zone}): {}", list.join("; "));
        let changes = schedule.changes(calendar, from, next);
        let open_now = changes.first().is_some_and(|(opens, _)| !opens);
        say!(
            out,
            "  {} at {}",
            if open_now { "open" } else { "closed" },
            at(from)
        );
        for (opens, when) in changes {
            say!(
                out,
                "  {}  {}",
                if opens { "opens " } else { "closes" },
                at(when)
            );
        }
    }
}

/// `config check`: the settings of these variables, as the function would
/// read them, every error at once; nothing is asked of AWS. `inputs` are
/// the deploy file's, when the variables came from one: its errors name
/// the file's own inputs, and `env` prints the variables it would deploy.
pub fn config_check(
    var: impl Fn(&str) -> Option<String>,
    inputs: Option<(&str, &DeployInputs)>,
    from: Timestamp,
    env: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let checked = Config::checked(&var);
    // The alarm-pauses function's own setting, when given.
    let gates = config::alarm_gates(&var);
    let refused: &[String] = inputs.map_or(&[], |(_, inputs)| &inputs.refused);
    let (config, gates) = match (checked, gates) {
        (Ok(config), Ok(gates)) if refused.is_empty() => (config, gates),
        (checked, gates) => {
            let errors = checked
                .err()
                .unwrap_or_default()
                .into_iter()
                .chain(gates.err())
                .map(|err| {
                    let text = err.to_string();
                    inputs.map_or(text.clone(), |(_, inputs)| inputs.reword(&text))
                })
                .chain(refused.iter().cloned())
                .collect();
            return Err(Failure::InvalidConfiguration {
                source: inputs.map(|(file, _)| file.to_owned()),
                errors,
            });
        }
    };
    if env {
        for name in config::FUNCTION_VARIABLES {
            if let Some(value) = var(name) {
                say!(out, "{name}={}", shell_word(&value));
            }
        }
        return Ok(());
    }
    match inputs {
        None => say!(out, "configuration in this shell: valid"),
        Some((file, inputs)) => {
            say!(out, "configuration {file} deploys: valid");
            if !inputs.given.is_empty() {
                say!(
                    out,
                    "set there: {}; the rest are the defaults",
                    inputs.given.join(", ")
                );
            }
        }
    }
    let _ = write!(
        out,
        "{}",
        report::config_summary(&config, &gates, from, inputs.is_some())
    );
    let alarms: Vec<&str> = gates.alarm_names().collect();
    if !alarms.is_empty() {
        say!(
            out,
            "alarms that pause groups while in ALARM: {}",
            alarms.join(", ")
        );
    }
    Ok(())
}

/// `text` as one shell word: as it is when plain, else in single quotes.
pub fn shell_word(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '@'));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::lock::GroupRules;
    use crate::store::memory::MemoryStore;

    fn group(name: &str) -> GroupName {
        GroupName::parse(name).unwrap()
    }

    fn node(id: &str) -> NodeId {
        NodeId::parse(id).unwrap()
    }

    fn rules(slots: u32) -> GroupRules {
        GroupRules {
            slots,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: None,
            drain: None,
        }
    }

    fn printed(out: Vec<u8>) -> String {
        String::from_utf8(out).unwrap()
    }

    fn config(groups: &str) -> Config {
        Config::from_vars(|name| (name == "FLEETLOCK_GROUPS").then(|| groups.to_owned())).unwrap()
    }

    #[tokio::test]
    async fn pause_then_resume_says_what_changed_each_time() {
        let store = MemoryStore::default();
        let reason = PauseReason::parse("db migration").unwrap();
        let mut out = Vec::new();
        let targets = [group("workers")];
        pause(&store, &targets, &reason, "ana", Timestamp(1_000), &mut out)
            .await
            .unwrap();
        pause(&store, &targets, &reason, "bob", Timestamp(2_000), &mut out)
            .await
            .unwrap();
        resume(&store, &targets, &mut out).await.unwrap();
        resume(&store, &targets, &mut out).await.unwrap();
        let lines: Vec<String> = printed(out).lines().map(String::from).collect();
        assert_eq!(lines[0], "paused 'workers': no new reboot slots");
        assert!(
            lines[1].starts_with("'workers' was already paused") && lines[1].contains("ana"),
            "{}",
            lines[1]
        );
        assert_eq!(lines[2], "resumed 'workers': it grants reboot slots again");
        assert_eq!(
            lines[3],
            "'workers' was not paused by a person: it grants reboot slots again"
        );
        // The store holds what the lines say: not paused.
        let stored = store.groups(Some(&group("workers"))).await.unwrap();
        assert!(!stored[0].1.pause.is_paused());
    }

    #[tokio::test]
    async fn all_targets_every_stored_group_and_says_what_it_cannot_see() {
        let store = MemoryStore::default();
        for name in ["a", "b"] {
            store
                .acquire(&group(name), &node("n1"), rules(1), Timestamp(1))
                .await
                .unwrap();
        }
        let mut out = Vec::new();
        let found = targets(&store, &Targets::All, &mut out).await.unwrap();
        assert_eq!(found, [group("a"), group("b")]);
        assert!(printed(out).starts_with("--all: 2 group(s) stored in the table"));
        let bad = targets(
            &store,
            &Targets::Named(vec!["no/slash".into()]),
            &mut Vec::new(),
        )
        .await;
        assert!(matches!(bad, Err(Failure::Input(_))), "{bad:?}");
    }

    #[tokio::test]
    async fn release_in_the_wrong_group_names_the_right_one_and_frees_nothing() {
        let store = MemoryStore::default();
        store
            .acquire(&group("workers"), &node("it's"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let err = release(
            &store,
            &group("default"),
            &node("it's"),
            Timestamp(2),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Failure::Refused(_)), "{err:?}");
        assert!(
            text.ends_with("(run: fleetlock release --group workers --id 'it'\\''s')"),
            "{text}"
        );
        let held = store.groups(Some(&group("workers"))).await.unwrap();
        assert_eq!(held[0].1.holders.len(), 1, "nothing was released");

        let mut out = Vec::new();
        release(
            &store,
            &group("workers"),
            &node("it's"),
            Timestamp(3),
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(
            printed(out),
            "released 'it's' from group 'workers' (0 holders left)\n"
        );
    }

    #[tokio::test]
    async fn forget_refuses_a_configured_or_busy_group_and_removes_an_idle_one() {
        let store = MemoryStore::default();
        store
            .acquire(&group("old"), &node("n1"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let configured = forget(
            &store,
            "t",
            &group("old"),
            Some(&config("old=1")),
            &mut Vec::new(),
        )
        .await
        .unwrap_err();
        assert!(
            configured
                .to_string()
                .contains("named in the function's FLEETLOCK_GROUPS")
        );
        let busy = forget(&store, "t", &group("old"), None, &mut Vec::new())
            .await
            .unwrap_err();
        assert!(
            busy.to_string()
                .contains("it holds 1 slot (n1): release it first"),
            "{busy}"
        );
        store
            .release(&group("old"), &node("n1"), Timestamp(2))
            .await
            .unwrap();
        let mut out = Vec::new();
        forget(
            &store,
            "t",
            &group("old"),
            Some(&config("default=1")),
            &mut out,
        )
        .await
        .unwrap();
        assert_eq!(printed(out), "forgot group 'old': its item is removed\n");
        assert!(store.groups(None).await.unwrap().is_empty());
        let gone = forget(&store, "t", &group("old"), None, &mut Vec::new())
            .await
            .unwrap_err();
        assert!(
            gone.to_string().contains("is not stored in table 't'"),
            "{gone}"
        );
    }

    #[tokio::test]
    async fn status_lists_holders_and_says_when_nothing_was_used() {
        let store = MemoryStore::default();
        let mut empty = Vec::new();
        let view = StatusView {
            json: false,
            all: false,
            hosts: None,
        };
        status(&store, None, None, Timestamp(10), view, &mut empty)
            .await
            .unwrap();
        assert!(printed(empty).ends_with("(no group has been used yet)\n"));
        store
            .acquire(
                &group("default"),
                &node("node-7"),
                rules(1),
                Timestamp(1_000),
            )
            .await
            .unwrap();
        let mut out = Vec::new();
        let json = StatusView {
            json: true,
            all: false,
            hosts: None,
        };
        status(
            &store,
            None,
            Some(&config("default=1")),
            Timestamp(61_000),
            json,
            &mut out,
        )
        .await
        .unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = listed.to_string();
        assert!(
            text.contains("node-7") && text.contains("default"),
            "{text}"
        );
    }

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: std::collections::BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| map.get(name).cloned()
    }

    /// 2026-03-27, a Friday, 12:00 UTC.
    const FRIDAY_NOON: Timestamp = Timestamp(1_774_612_800_000);

    #[test]
    fn config_check_refuses_a_bad_setting_in_one_line() {
        let err = config_check(
            vars(&[("FLEETLOCK_SETTLE", "default=soon")]),
            None,
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid configuration: FLEETLOCK_SETTLE: "),
            "{err}"
        );
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
        let mut out = Vec::new();
        config_check(
            vars(&[("FLEETLOCK_ALARM_PAUSES", "db-errors=*")]),
            None,
            FRIDAY_NOON,
            false,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.starts_with("configuration in this shell: valid\n"),
            "{text}"
        );
        assert!(
            text.ends_with("alarms that pause groups while in ALARM: db-errors\n"),
            "{text}"
        );
    }

    #[test]
    fn config_check_lists_every_error_not_only_the_first() {
        let err = config_check(
            vars(&[
                ("FLEETLOCK_GROUPS", "default=1,workers=many"),
                ("FLEETLOCK_SETTLE", "db=soon"),
                ("FLEETLOCK_TIME_ZONE", "Mars/Olympus"),
                (
                    "FLEETLOCK_WINDOWS",
                    "db: days=Caturday start_time=22:00 length_minutes=60",
                ),
                ("FLEETLOCK_AUTH", "maybe"),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx="),
            ]),
            None,
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines[0], "invalid configuration, 6 errors:", "{err}");
        for (line, variable) in lines[1..].iter().zip([
            "FLEETLOCK_GROUPS",
            "FLEETLOCK_SETTLE",
            "FLEETLOCK_TIME_ZONE",
            "FLEETLOCK_WINDOWS",
            "FLEETLOCK_AUTH",
            "FLEETLOCK_ALARM_PAUSES",
        ]) {
            assert!(line.starts_with(&format!("  {variable}: ")), "{err}");
        }
        // The first of them is the one the function stops at.
        let first = Config::from_vars(vars(&[
            ("FLEETLOCK_GROUPS", "default=1,workers=many"),
            ("FLEETLOCK_AUTH", "maybe"),
        ]))
        .unwrap_err();
        assert!(
            lines[1].ends_with(&first.to_string()[first.to_string().find(": ").unwrap() + 2..])
        );
    }

    #[test]
    fn config_check_says_when_each_window_next_opens_and_what_pauses_each_group() {
        let mut out = Vec::new();
        config_check(
            vars(&[
                ("FLEETLOCK_GROUPS", "default=1,db=1,*=2"),
                (
                    "FLEETLOCK_WINDOWS",
                    "db: days=Sat start_time=22:00 length_minutes=120",
                ),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx=*;db-latency=db"),
            ]),
            None,
            FRIDAY_NOON,
            false,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        for line in [
            "  db: 1 slot, settle 0s, reboots only in days=Sat start_time=22:00 length_minutes=120 (UTC): closed, \
             next opens 2026-03-28T22:00:00Z; paused while in ALARM: api-5xx, db-latency",
            "  default: 1 slot, settle 0s, always open; paused while in ALARM: api-5xx",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
        assert!(
            text.contains("  * (every other valid group): 2 slots, settle 0s, always open; paused while in ALARM: api-5xx;"),
            "{text}"
        );
    }

    #[test]
    fn config_check_of_a_deploy_file_names_its_inputs_and_prints_its_variables() {
        let inputs = crate::cli::deploy_inputs::from_tfvars(
            "groups = { db = 1 }\nsettle = { db = \"soon\" }\n",
            "prod.tfvars",
        )
        .unwrap();
        let var = |name: &str| inputs.vars.get(name).cloned();
        let err = config_check(
            var,
            Some(("prod.tfvars", &inputs)),
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("invalid configuration in prod.tfvars, 2 errors:"),
            "{err}"
        );
        assert!(
            err.contains("\n  variable settle (FLEETLOCK_SETTLE): "),
            "{err}"
        );
        assert!(
            err.contains(
                "\n  variable clients (FLEETLOCK_CLIENTS) is empty: the deploy is refused unless \
                 variable allow_anonymous is true; make entries with 'fleetlock credential'"
            ),
            "{err}"
        );
        let inputs = crate::cli::deploy_inputs::from_tfvars(
            "groups = { db = 1 }\nallow_anonymous = true\n",
            "lab.tfvars",
        )
        .unwrap();
        let var = |name: &str| inputs.vars.get(name).cloned();
        let mut out = Vec::new();
        config_check(
            var,
            Some(("lab.tfvars", &inputs)),
            FRIDAY_NOON,
            true,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_GROUPS='db=1'"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_AUTH=disabled"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_TIME_ZONE=UTC"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn only_a_group_stored_or_configured_is_taken_as_meant() {
        let store = MemoryStore::default();
        store
            .acquire(&group("db"), &node("n1"), rules(1), Timestamp(1))
            .await
            .unwrap();
        let configured = config("default=1,workers=2");
        let known = Known::new(&store, "t", Some(&configured));
        // Stored, or configured (though never used): as meant.
        known
            .refuse_typos(&[group("db"), group("workers")], Act::Pause)
            .await
            .unwrap();
        let typo = known
            .refuse_typos(&[group("wrokers")], Act::Pause)
            .await
            .unwrap_err()
            .to_string();
        assert!(typo.contains("(did you mean 'workers'?)"), "{typo}");
        // The closest of the stored names too; nothing close, no guess.
        let near_stored = known.refuse_typos(&[group("dbb")], Act::Resume).await;
        assert!(
            near_stored
                .unwrap_err()
                .to_string()
                .contains("did you mean 'db'")
        );
        let far = known.refuse_typos(&[group("frontend")], Act::Pause).await;
        assert!(!far.unwrap_err().to_string().contains("did you mean"));
        // Without the configuration, only the stored group is known.
        let blind = Known::new(&store, "t", None);
        blind
            .refuse_typos(&[group("db")], Act::Pause)
            .await
            .unwrap();
        assert!(
            blind
                .refuse_typos(&[group("workers")], Act::Pause)
                .await
                .is_err()
        );
        // Nothing was created by any of it.
        assert_eq!(store.groups(None).await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn status_shows_every_configured_group_those_never_used_too() {
        let store = MemoryStore::default();
        store
            .acquire(&group("default"), &node("n1"), rules(1), Timestamp(1_000))
            .await
            .unwrap();
        let configured = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("default=1,workers=2".into()),
            "FLEETLOCK_WINDOWS" => {
                Some("workers: days=Mon start_time=00:00 length_minutes=1".into())
            }
            _ => None,
        })
        .unwrap();
        // Tuesday 2026-12-01 12:00 UTC: the workers' window is closed.
        let now = Timestamp(1_796_126_400_000);
        let view = StatusView {
            json: false,
            all: false,
            hosts: None,
        };
        let mut out = Vec::new();
        status(&store, None, Some(&configured), now, view, &mut out)
            .await
            .unwrap();
        let text = printed(out);
        let row = text
            .lines()
            .find(|l| l.starts_with("workers"))
            .unwrap_or_else(|| panic!("{text}"));
        // Columns are two spaces apart at least.
        let cells: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            cells,
            ["workers", "0/2", "closed", "(never used)", "-", "-"],
            "{text}"
        );
        assert!(text.contains("workers windows"), "{text}");
        let mut out = Vec::new();
        let json = StatusView {
            json: true,
            all: false,
            hosts: None,
        };
        status(&store, None, Some(&configured), now, json, &mut out)
            .await
            .unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let never: Vec<(&str, bool)> = listed["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["group"].as_str().unwrap(),
                    g["never_used"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(never, [("default", false), ("workers", true)]);
        // Nothing was stored by looking.
        assert_eq!(store.groups(None).await.unwrap().len(), 1);
    }

    #[test]
    fn a_credential_with_the_deployments_url_is_the_whole_drop_in() {
        let mut out = Vec::new();
        credential(
            "workers",
            "workers",
            None,
            Some("https://abc123.execute-api.eu-west-1.amazonaws.com/"),
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let url = lines[3];
        let secret = url
            .strip_prefix("https://workers:")
            .and_then(|rest| rest.strip_suffix("@abc123.execute-api.eu-west-1.amazonaws.com/"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            !secret.is_empty() && secret.chars().all(|c| c.is_ascii_hexdigit()),
            "{text}"
        );
        // The entry lets exactly that URL's credentials in.
        let clients = auth::Clients::parse(lines[1]).unwrap();
        let header = format!(
            "Basic {}",
            base64::Engine::encode(
                &base64::engine::general_purpose::STANDARD,
                format!("workers:{secret}")
            )
        );
        assert!(clients.authenticate(Some(header.as_bytes())).is_ok());
        assert!(
            text.contains(&format!("  base_url = \"{url}\"\n")),
            "{text}"
        );
        assert!(text.contains("  group = \"workers\"\n"), "{text}");

        // Several groups: no identity file; a fleet-wide one: none either.
        let mut out = Vec::new();
        credential(
            "fleet",
            "*",
            None,
            Some("https://h.example/Prod/"),
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.contains("@h.example/Prod/\"\n") && !text.contains("[identity]"),
            "{text}"
        );

        for (bad, says) in [
            ("http://h.example/", "https"),
            ("https://h.example/Prod", "must end with '/'"),
            ("https://a:b@h.example/", "without credentials"),
            ("h.example", "not a URL"),
        ] {
            let mut out = Vec::new();
            let err = credential("n", "*", None, Some(bad), &mut out).unwrap_err();
            assert!(err.to_string().contains(says), "{bad}: {err}");
            assert!(out.is_empty(), "nothing shown for a bad URL: {bad}");
        }
    }

    fn instant(text: &str) -> Timestamp {
        let at: jiff::Timestamp = text.parse().unwrap();
        Timestamp(u64::try_from(at.as_millisecond()).unwrap())
    }

    /// Berlin's weeks of 2026's clock changes, against instants worked out by
    /// hand from the rules (CET is UTC+1, CEST UTC+2; the clocks go forward
    /// at 01:00Z on 29 March, back at 01:00Z on 25 October), not by the code.
    #[test]
    fn windows_open_and_close_as_the_zones_clock_says_across_both_changes() {
        let berlin = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3".into()),
            "FLEETLOCK_WINDOWS" => {
                Some("workers: days=Sat,Sun start_time=22:00 length_minutes=240".into())
            }
            "FLEETLOCK_TIME_ZONE" => Some("Europe/Berlin".into()),
            _ => None,
        })
        .unwrap();
        for (from, expected) in [
            (
                "2026-03-28T00:00:00Z",
                [
                    "  opens   2026-03-28T21:00:00Z  Sat 2026-03-28 22:00 Europe/Berlin",
                    // 02:00 never comes that night: the window ends at the jump.
                    "  closes  2026-03-29T01:00:00Z  Sun 2026-03-29 03:00 Europe/Berlin",
                    "  opens   2026-03-29T20:00:00Z  Sun 2026-03-29 22:00 Europe/Berlin",
                    "  closes  2026-03-30T00:00:00Z  Mon 2026-03-30 02:00 Europe/Berlin",
                ],
            ),
            (
                "2026-10-24T00:00:00Z",
                [
                    "  opens   2026-10-24T20:00:00Z  Sat 2026-10-24 22:00 Europe/Berlin",
                    // The first 02:00 closes it; the second does not reopen it.
                    "  closes  2026-10-25T00:00:00Z  Sun 2026-10-25 02:00 Europe/Berlin",
                    "  opens   2026-10-25T21:00:00Z  Sun 2026-10-25 22:00 Europe/Berlin",
                    "  closes  2026-10-26T01:00:00Z  Mon 2026-10-26 02:00 Europe/Berlin",
                ],
            ),
        ] {
            let mut out = Vec::new();
            windows(&berlin.windows, None, instant(from), 4, &mut out);
            let text = printed(out);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(
                lines[0],
                "workers (Europe/Berlin): days=Sat,Sun start_time=22:00 length_minutes=240"
            );
            assert!(lines[1].starts_with("  closed at "), "{text}");
            assert_eq!(lines[2..], expected, "{text}");
        }
        let mut out = Vec::new();
        windows(
            &berlin.windows,
            Some(&group("db")),
            Timestamp(0),
            4,
            &mut out,
        );
        assert_eq!(
            printed(out),
            "group 'db' has no maintenance windows: it may reboot at any time\n"
        );
    }

    #[test]
    fn ids_are_quoted_only_when_a_shell_needs_it() {
        assert_eq!(shell_word("node-1.example:a@b"), "node-1.example:a@b");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }
}
