//! What `config check` prints of a valid configuration.

use crate::config::Config;
use crate::deploy::DeployInputs;
use crate::domain::alarms::AlarmGates;
use crate::domain::auth::Auth;
use crate::domain::groups::MAX_SLOTS;
use crate::domain::input::{GroupName, MAX_GROUP_CHARS, MAX_ID_BYTES, STORED_ID_BYTES};
use crate::domain::lock::gates;
use crate::domain::time::{Timestamp, format_duration};
use crate::domain::windows::Schedule;

/// What `config check` prints of a valid configuration: each group's
/// rules (slots, settle time, windows with when they next open or close
/// after `from`, the alarms that pause it), who may call, where the locks
/// live, and every fixed bound.
pub(crate) fn config_summary(
    config: &Config,
    gates: &AlarmGates,
    from: Timestamp,
    deployed: Option<&DeployInputs>,
) -> String {
    let mut out = groups_section(config, gates, from);
    out.push_str(&clients_line(config, deployed));
    out.push_str(&match &config.table {
        Some(table) => format!("table: {table}\n"),
        None if deployed.is_some() => "table: the one the stack or the module creates\n".into(),
        None => "table: none; 'serve' keeps the locks in memory\n".into(),
    });
    out.push_str(&bounds_section());
    out
}

/// `groups:`, a line a group and one for '*'.
fn groups_section(config: &Config, gates: &AlarmGates, from: Timestamp) -> String {
    let mut out = String::from("groups:\n");
    let alarms_of = |group: Option<&GroupName>| {
        let alarms = gates.alarms_for(group);
        if alarms.is_empty() {
            String::new()
        } else {
            format!("; paused while in ALARM: {}", alarms.join(", "))
        }
    };
    for (name, _) in config.groups.listed() {
        // Split by zone: every zone's group shares these rules.
        if let Ok(rules) = config.groups.rules_as_set(name) {
            out.push_str(&format!(
                "  {name}: {}, {}{}\n",
                gates::summary(&rules),
                windows_text(&config.windows, Some(name), from),
                alarms_of(Some(name))
            ));
        }
    }
    match config.groups.others_rules() {
        Some(rules) => out.push_str(&format!(
            "  * (every other valid group): {}, {}{}; at most {} such groups come into \
             existence (FLEETLOCK_MAX_WILDCARD_GROUPS)\n",
            gates::summary(&rules),
            windows_text(&config.windows, None, from),
            alarms_of(None),
            config.groups.wildcard_limit()
        )),
        None => out.push_str("  no '*': any other group is refused (unknown_group)\n"),
    }
    if !config.groups.covers_default() {
        out.push_str(
            "  (no 'default': nodes without [identity] group in Zincati's config are \
             refused)\n",
        );
    }
    out
}

/// A group's windows (or '*''s, for `None`) and when they next open or
/// close after `from`.
fn windows_text(schedule: &Schedule, group: Option<&GroupName>, from: Timestamp) -> String {
    let at = |t: Timestamp| {
        if schedule.is_utc() {
            t.to_rfc3339()
        } else {
            format!("{} ({})", t.to_rfc3339(), schedule.local_text(t))
        }
    };
    schedule
        .calendars()
        .find(|(g, _)| *g == group)
        .map(|(_, calendar)| {
            let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
            let next = match schedule.changes(calendar, from, 1).first() {
                Some((true, opens)) => format!("closed, next opens {}", at(*opens)),
                Some((false, closes)) => format!("open now, closes {}", at(*closes)),
                None => "never open".into(),
            };
            format!(
                "reboots only in {} ({}): {next}",
                list.join("; "),
                schedule.zone_name()
            )
        })
        .unwrap_or_else(|| "always open".into())
}

/// `clients:`: who may call, or why no one needs to say.
fn clients_line(config: &Config, deployed: Option<&DeployInputs>) -> String {
    match &config.auth {
        Some(Auth::Required(clients)) => {
            let names: Vec<&str> = clients.names().collect();
            format!("clients: {}\n", names.join(", "))
        }
        Some(Auth::Disabled) => {
            "clients: none, authentication disabled (private networks only)\n".into()
        }
        None => match deployed.and_then(|d| d.unread.iter().find(|(name, _)| name == "clients")) {
            Some((_, text)) => format!("clients: clients = {text}, which only Terraform reads\n"),
            None => "clients: not set; under Lambda the function refuses to start, and \
                     'serve' is open on loopback only\n"
                .into(),
        },
    }
}

/// `bounds:`: every fixed limit a caller meets.
fn bounds_section() -> String {
    let limits = crate::http::server::Limits::default();
    format!(
        "bounds:\n  \
         an id: at most {MAX_ID_BYTES} bytes of visible characters (a steady-state also takes \
         the ids of up to {STORED_ID_BYTES} bytes that 0.2 granted)\n  \
         a group name: at most {MAX_GROUP_CHARS} characters of A-Z a-z 0-9 . -\n  \
         slots of a group: at most {MAX_SLOTS}\n  \
         a request body: at most {} bytes\n  \
         serve (defaults): headers within {}, body within {}, each answer taken within {}, \
         at most {} connections, \
         {} KiB of buffer and {} header lines a connection\n",
        crate::http::MAX_BODY_BYTES,
        format_duration(limits.header_timeout),
        format_duration(limits.body_timeout),
        format_duration(limits.write_timeout),
        limits.max_connections,
        crate::http::server::MAX_BUFFER_BYTES / 1024,
        crate::http::server::MAX_HEADERS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_check_says_what_each_group_gets_and_every_bound() {
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3,db=1".into()),
            "FLEETLOCK_SETTLE" => Some("workers=10m".into()),
            "FLEETLOCK_LEASE" => Some("workers=6h".into()),
            "FLEETLOCK_TABLE" => Some("fleetlock".into()),
            "FLEETLOCK_AUTH" => Some("disabled".into()),
            _ => None,
        })
        .unwrap();
        let summary = config_summary(&config, &Default::default(), Timestamp::now(), None);
        for line in [
            "  db: 1 slot, settle 0s, always open",
            "  workers: 3 slots, settle 10m, lease 6h (then a full group's next asker takes the \
             oldest slot), always open",
            "  no '*': any other group is refused (unknown_group)",
            "  (no 'default': nodes without [identity] group in Zincati's config are refused)",
            "clients: none, authentication disabled (private networks only)",
            "table: fleetlock",
            "  slots of a group: at most 500",
        ] {
            assert!(
                summary.lines().any(|l| l == line),
                "{line:?} not in:\n{summary}"
            );
        }
        assert!(summary.contains("an id: at most 128 bytes"), "{summary}");
        assert!(summary.contains("at most 512 connections"), "{summary}");
    }

    #[test]
    fn a_group_split_by_zone_with_a_canary_says_both() {
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3,db=1".into()),
            "FLEETLOCK_ZONES" => Some("workers".into()),
            "FLEETLOCK_CANARY" => Some("workers=30m:1+3".into()),
            "FLEETLOCK_AUTH" => Some("disabled".into()),
            _ => None,
        })
        .unwrap();
        let summary = config_summary(&config, &Default::default(), Timestamp::now(), None);
        let workers = summary
            .lines()
            .find(|l| l.starts_with("  workers: "))
            .unwrap();
        assert!(
            workers.contains("one zone at a time (its nodes ask as 'workers.ZONE'"),
            "{workers}"
        );
        assert!(
            workers.contains("canary: the canary, then 3, then the rest, each back 30m"),
            "{workers}"
        );
        assert!(
            summary
                .lines()
                .any(|l| l == "  db: 1 slot, settle 0s, always open"),
            "{summary}"
        );
    }
}
