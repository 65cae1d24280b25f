//! One function per command, each on the settings and clients it was given
//! and writing to `out`: callable, and testable, without spawning the
//! binary. [`super::run`] reads the settings and builds the clients first.

use std::io::Write;

use crate::aws::iam::{self, PolicyFor};
use crate::cli::args::Targets;
use crate::cli::report;
use crate::config::{self, Config};
use crate::domain::auth;
use crate::domain::input::{GroupName, NodeId, PauseReason};
use crate::domain::lock::{PersonPause, Release, Timestamp};
use crate::domain::service::paused_because;
use crate::domain::store::{Changed, Forgot, LockStore};
use crate::store::dynamodb::DynamoStore;

use super::Failure;

/// A line of a command's report. A closed pipe (`| head`) ends nothing: the
/// command has done its work by the time it reports.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
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
        Targets::Named(names) => names
            .iter()
            .map(|name| GroupName::parse(name).map_err(|e| Failure::Input(e.value())))
            .collect(),
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
            "released '{id_shown}' from group '{group}' ({left} holder(s) left)"
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
                why.push(format!(
                    "it holds {} slot(s) ({}): release them first",
                    ids.len(),
                    ids.join(", ")
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
#[derive(Clone, Copy, Debug)]
pub struct StatusView {
    pub json: bool,
    /// Every idle group too.
    pub all: bool,
}

/// `status`: who holds a slot, and each group's state and rules.
pub async fn status<S: LockStore>(
    store: &S,
    group: Option<&GroupName>,
    deployed: Option<&Config>,
    now: Timestamp,
    view: StatusView,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let groups = store.groups(group).await?;
    let wildcard = store.wildcard_groups().await?;
    let wildcard = report::Wildcard {
        counted: wildcard.len(),
        limit: deployed.map(|config| config.groups.wildcard_limit()),
    };
    if view.json {
        say!(out, "{:#}", report::json(&groups, deployed, now, wildcard));
        return Ok(());
    }
    let idle_shown = (!view.all).then_some(report::IDLE_SHOWN);
    let _ = write!(
        out,
        "{}",
        report::table(&groups, deployed, now, idle_shown, wildcard)
    );
    match (group, groups.is_empty()) {
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
    };
    say!(out, "{policy:#}");
}

/// `credential`: the entry of a given secret, or a new secret with its entry
/// and the base_url for Zincati.
pub fn credential(
    name: &str,
    groups: &str,
    secret: Option<&str>,
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
    say!(out, "  https://{name}:{}@YOUR-API-HOST/", new.secret);
    say!(out, "The secret is shown once and stored nowhere.");
    Ok(())
}

/// `config check`: the settings of these variables, as the function would
/// read them; nothing is asked of AWS.
pub fn config_check(
    var: impl Fn(&str) -> Option<String>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let config = Config::from_vars(&var).map_err(Failure::InvalidConfiguration)?;
    // The alarm-pauses function's own setting, when given.
    let gates = config::alarm_gates(&var).map_err(Failure::InvalidConfiguration)?;
    say!(out, "configuration in this shell: valid");
    let _ = write!(out, "{}", report::config_summary(&config));
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
