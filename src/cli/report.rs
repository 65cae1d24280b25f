//! What the commands print: `status` as a table or JSON, the summary of
//! `config check`, and durations as people read them.

use crate::config::Config;
use crate::domain::hosts::{Host, HostMap};
use crate::domain::input::GroupName;
use crate::domain::lock::{GroupRules, Timestamp};
use crate::domain::store::GroupRecord;
use crate::domain::windows::WindowState;

fn rfc3339(at: Timestamp) -> String {
    at.to_rfc3339()
}

/// What `config check` prints of a valid configuration: each group's
/// rules (slots, settle time, windows with when they next open or close
/// after `from`, the alarms that pause it), who may call, where the locks
/// live, and every fixed bound.
pub fn config_summary(
    config: &Config,
    gates: &crate::domain::alarms::AlarmGates,
    from: Timestamp,
    deployed: bool,
) -> String {
    use crate::domain::auth::Auth;
    use crate::domain::groups::{MAX_SLOTS, format_duration};
    use crate::domain::input::{MAX_GROUP_CHARS, MAX_ID_BYTES, STORED_ID_BYTES};
    let mut out = String::from("groups:\n");
    let schedule = &config.windows;
    let at = |t: Timestamp| {
        if schedule.is_utc() {
            t.to_rfc3339()
        } else {
            format!("{} ({})", t.to_rfc3339(), schedule.local_text(t))
        }
    };
    let windows_of = |group: Option<&GroupName>| {
        schedule
            .calendars()
            .find(|(g, _)| *g == group)
            .map(|(_, calendar)| {
                let list: Vec<String> =
                    calendar.windows().iter().map(ToString::to_string).collect();
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
    };
    let gates_of = |group: Option<&GroupName>| {
        let alarms = gates.alarms_for(group);
        if alarms.is_empty() {
            String::new()
        } else {
            format!("; paused while in ALARM: {}", alarms.join(", "))
        }
    };
    let rule_text = |rules: GroupRules| {
        format!(
            "{} slot{}, settle {}{}{}",
            rules.slots,
            if rules.slots == 1 { "" } else { "s" },
            format_duration(rules.settle),
            rules.lease.map_or(String::new(), |lease| format!(
                ", lease {} (then a full group's next asker takes the oldest slot)",
                format_duration(lease)
            )),
            rules.drain.map_or(String::new(), |drain| format!(
                ", drain gate {} then {} (a slot is granted once its node's drain is confirmed)",
                format_duration(drain.timeout),
                drain.on_timeout.as_str()
            ))
        )
    };
    for (name, _) in config.groups.listed() {
        if let Ok(rules) = config.groups.rules_for(name) {
            out.push_str(&format!(
                "  {name}: {}, {}{}\n",
                rule_text(rules),
                windows_of(Some(name)),
                gates_of(Some(name))
            ));
        }
    }
    match config.groups.others_rules() {
        Some(rules) => out.push_str(&format!(
            "  * (every other valid group): {}, {}{}; at most {} such groups come into \
             existence (FLEETLOCK_MAX_WILDCARD_GROUPS)\n",
            rule_text(rules),
            windows_of(None),
            gates_of(None),
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
    out.push_str(&match &config.auth {
        Some(Auth::Required(clients)) => {
            let names: Vec<&str> = clients.names().collect();
            format!("clients: {}\n", names.join(", "))
        }
        Some(Auth::Disabled) => {
            "clients: none, authentication disabled (private networks only)\n".into()
        }
        None => "clients: not set; under Lambda the function refuses to start, and \
                 'serve' is open on loopback only\n"
            .into(),
    });
    out.push_str(&match &config.table {
        Some(table) => format!("table: {table}\n"),
        None if deployed => "table: the one the stack or the module creates\n".into(),
        None => "table: none; 'serve' keeps the locks in memory\n".into(),
    });
    let limits = crate::http::server::Limits::default();
    out.push_str(&format!(
        "bounds:\n  \
         an id: at most {MAX_ID_BYTES} bytes of visible characters (a steady-state also takes \
         the ids of up to {STORED_ID_BYTES} bytes that 0.2 granted)\n  \
         a group name: at most {MAX_GROUP_CHARS} characters of A-Z a-z 0-9 . -\n  \
         slots of a group: at most {MAX_SLOTS}\n  \
         a request body: at most {} bytes\n  \
         serve (defaults): headers within {}, body within {}, at most {} connections, \
         {} KiB of buffer and {} header lines a connection\n",
        crate::http::MAX_BODY_BYTES,
        format_duration(limits.header_timeout),
        format_duration(limits.body_timeout),
        limits.max_connections,
        crate::http::server::MAX_BUFFER_BYTES / 1024,
        crate::http::server::MAX_HEADERS,
    ));
    out
}

/// A host as JSON, `{"instance", "name"}`, or `null` when unknown.
fn host_value(host: Option<&Host>) -> serde_json::Value {
    host.map_or(
        serde_json::Value::Null,
        |h| serde_json::json!({ "instance": h.instance, "name": h.name }),
    )
}

/// An id and its host as JSON: `{"id", "host": {"instance", "name"}}`, the
/// host `null` when unknown.
pub fn host_json(id: &str, host: Option<&Host>) -> serde_json::Value {
    serde_json::json!({ "id": id, "host": host_value(host) })
}

/// What `status --group G` says of a group with no item.
pub fn unused_group(group: &GroupName, deployed: Option<&Config>) -> String {
    let configured = match deployed {
        None => "pass --function (or set FLEETLOCK_GROUPS as deployed) to see whether it is \
                 configured"
            .into(),
        Some(config) => match config.groups.slots_for(group) {
            Ok(1) => "it is configured with 1 slot".into(),
            Ok(slots) => format!("it is configured with {slots} slots"),
            Err(_) => "it is not configured: its nodes are refused (unknown_group)".into(),
        },
    };
    format!("group '{group}' has no holders and has never been used; {configured}")
}

fn slots_text(record: &GroupRecord) -> String {
    match record.slots {
        Some(slots) => format!("{}/{slots}", record.holders.len()),
        None => record.holders.len().to_string(),
    }
}

/// The group's rules, if the configuration is known.
fn rules_of(name: &GroupName, deployed: Option<&Config>) -> Option<GroupRules> {
    deployed?.groups.rules_for(name).ok()
}

/// When the group's settle period ends, if the configuration is known.
fn settles_until(
    name: &GroupName,
    record: &GroupRecord,
    deployed: Option<&Config>,
    now: Timestamp,
) -> Option<Timestamp> {
    record.settling_until(rules_of(name, deployed)?.settle, now)
}

fn window(name: &GroupName, deployed: Option<&Config>, now: Timestamp) -> Option<WindowState> {
    deployed.map(|config| config.windows.state(name, now))
}

/// The answer a newcomer would get now, in one word.
fn state(
    name: &GroupName,
    record: &GroupRecord,
    deployed: Option<&Config>,
    now: Timestamp,
) -> &'static str {
    if matches!(
        window(name, deployed, now),
        Some(WindowState::Closed { .. })
    ) {
        "closed"
    } else if record.pause.is_paused() {
        "paused"
    } else if settles_until(name, record, deployed, now).is_some() {
        "settling"
    } else {
        "open"
    }
}

/// A line on a group's windows, if it has any.
fn window_line(name: &GroupName, deployed: Option<&Config>, now: Timestamp) -> Option<String> {
    let config = deployed?;
    let calendar = config.windows.calendar_for(name)?;
    let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
    let at = |t: Timestamp| format!("{} ({})", rfc3339(t), config.windows.local_text(t));
    let state = match config.windows.state(name, now) {
        WindowState::Open { until: Some(until) } => format!("open until {}", at(until)),
        WindowState::Open { until: None } => "open all week".into(),
        WindowState::Closed { opens: Some(opens) } => format!("closed; opens {}", at(opens)),
        WindowState::Closed { opens: None } => "closed; no window can happen".into(),
        WindowState::AlwaysOpen => return None,
    };
    Some(format!(
        "{name} windows ({}): {}; {state}",
        config.windows.zone_name(),
        list.join("; ")
    ))
}

/// Idle groups (no holder, no pause) listed before the rest are only
/// counted: a table with thousands of groups nobody uses hides the few
/// that matter.
pub const IDLE_SHOWN: usize = 20;

/// How many groups only `*` covers are counted, and the limit when the
/// configuration is known.
#[derive(Clone, Copy, Debug)]
pub struct Wildcard {
    pub counted: usize,
    pub limit: Option<u32>,
}

fn is_idle(record: &GroupRecord) -> bool {
    record.holders.is_empty() && !record.pause.is_paused() && record.excluded.is_empty()
}

/// Holders per group, then a line for each paused, settling or windowed
/// group. `deployed` is the configuration the function runs with, when
/// known (`--function`, or the same variables in the shell). With
/// `idle_shown`, only that many idle groups are listed, the rest counted.
pub fn table(
    groups: &[(GroupName, GroupRecord)],
    deployed: Option<&Config>,
    now: Timestamp,
    idle_shown: Option<usize>,
    wildcard: Wildcard,
    never_used: &[GroupName],
    hosts: Option<&HostMap>,
) -> String {
    let mut idle_left = idle_shown.unwrap_or(usize::MAX);
    let mut idle_hidden = 0usize;
    let groups: Vec<&(GroupName, GroupRecord)> = groups
        .iter()
        .filter(|(_, record)| {
            if !is_idle(record) {
                return true;
            }
            if idle_left == 0 {
                idle_hidden += 1;
                return false;
            }
            idle_left -= 1;
            true
        })
        .collect();
    let mut rows = vec![vec![
        "GROUP".to_string(),
        "HELD".to_string(),
        "STATE".to_string(),
        "ID".to_string(),
        "SINCE (UTC)".to_string(),
        "FOR".to_string(),
    ]];
    for &(name, record) in &groups {
        let state = state(name, record, deployed, now).to_string();
        if never_used.contains(name) {
            // Configured, no item yet: its slots as configured.
            let slots = deployed
                .and_then(|config| config.groups.slots_for(name).ok())
                .map_or("0".into(), |slots| format!("0/{slots}"));
            rows.push(vec![
                name.to_string(),
                slots,
                state,
                "(never used)".into(),
                "-".into(),
                "-".into(),
            ]);
            continue;
        }
        if record.holders.is_empty() {
            rows.push(vec![
                name.to_string(),
                slots_text(record),
                state.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        for (id, at) in record.holders.holders() {
            // A reservation holds its slot but its node waits for its drain.
            let state = if record.draining.contains_key(id) {
                "draining".to_string()
            } else {
                state.clone()
            };
            let mut row = vec![
                name.to_string(),
                slots_text(record),
                state,
                // Escaped where it could pass for another id.
                id.shown(),
                rfc3339(at),
                human_duration(at.age_at(now).as_secs()),
            ];
            if let Some(hosts) = hosts {
                row.push(
                    hosts
                        .get(id.as_str())
                        .map_or("?".into(), ToString::to_string),
                );
            }
            rows.push(row);
        }
    }
    // The host column, after FOR, when asked for: "-" where no slot is held.
    if hosts.is_some() {
        rows[0].push("HOST".into());
        for row in rows.iter_mut().skip(1) {
            if row.len() == 6 {
                row.push("-".into());
            }
        }
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|col| {
            rows.iter()
                .map(|r| r[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for &(name, record) in &groups {
        if record.pause.is_paused() {
            out.push_str(&format!(
                "{name} is paused {}\n",
                crate::domain::service::paused_because(&record.pause)
            ));
        }
        for (id, exclusion) in &record.excluded {
            let host = hosts
                .and_then(|hosts| hosts.get(id.as_str()))
                .map_or(String::new(), |host| format!(" ({host})"));
            out.push_str(&format!(
                "{name} excludes '{}'{host} {}\n",
                id.shown(),
                crate::domain::service::excluded_because(exclusion)
            ));
        }
        let drain = rules_of(name, deployed).and_then(|rules| rules.drain);
        for (id, since) in &record.draining {
            let host = hosts
                .and_then(|hosts| hosts.get(id.as_str()))
                .map_or(String::new(), |host| format!(" ({host})"));
            let until = drain.map_or(String::new(), |drain| {
                let until = since.plus(drain.timeout);
                if until <= now {
                    format!(
                        ", past its timeout since {} ({})",
                        rfc3339(until),
                        drain.on_timeout.as_str()
                    )
                } else {
                    format!(", until {}", rfc3339(until))
                }
            });
            out.push_str(&format!(
                "{name}: '{}'{host} waits for its drain since {}{until}: confirm with \
                 'fleetlock drained --group {name} --id {} --reserved-at {}'\n",
                id.shown(),
                rfc3339(*since),
                crate::cli::commands::shell_word(&id.shown()),
                since.to_rfc3339_millis()
            ));
        }
        if let Some(lease) = rules_of(name, deployed).and_then(|rules| rules.lease) {
            for (id, at) in record.holders.holders() {
                if record.draining.contains_key(id) {
                    continue;
                }
                let ends = at.plus(lease);
                if ends <= now {
                    out.push_str(&format!(
                        "{name}: '{}' is past its {} lease since {}: the next node to ask \
                         while the group is full takes its slot\n",
                        id.shown(),
                        crate::domain::groups::format_duration(lease),
                        rfc3339(ends)
                    ));
                }
            }
        }
        if let Some(until) = settles_until(name, record, deployed, now) {
            out.push_str(&format!(
                "{name} settles until {} (last release {})\n",
                rfc3339(until),
                record.last_release.map_or("-".into(), rfc3339)
            ));
        }
        if let Some(line) = window_line(name, deployed, now) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    // Alarm by alarm, which groups it holds: one line an alarm.
    let mut held_by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for &(name, record) in &groups {
        for alarm in &record.pause.alarms {
            held_by.entry(alarm).or_default().push(name.as_str());
        }
    }
    for (alarm, held) in held_by {
        out.push_str(&format!(
            "alarm '{alarm}' is in ALARM and holds: {}\n",
            held.join(", ")
        ));
    }
    if idle_hidden > 0 {
        out.push_str(&format!(
            "... and {idle_hidden} more group(s) that hold nothing and are not paused \
             (--all lists them; 'fleetlock forget --group G' removes one nobody uses)\n"
        ));
    }
    if wildcard.counted > 0 || wildcard.limit.is_some() {
        let limit = wildcard
            .limit
            .map_or(String::new(), |limit| format!(" of {limit} allowed"));
        out.push_str(&format!(
            "{}{limit} group(s) exist that only '*' covers (FLEETLOCK_MAX_WILDCARD_GROUPS)\n",
            wildcard.counted
        ));
    }
    // Without the configuration a settling group would show as open.
    if deployed.is_none() && groups.iter().any(|(_, r)| r.last_release.is_some()) {
        out.push_str(
            "(settle periods and windows are shown with --function NAME, or with the \
             function's FLEETLOCK_* variables set in this shell)\n",
        );
    }
    out
}

pub fn json(
    groups: &[(GroupName, GroupRecord)],
    deployed: Option<&Config>,
    now: Timestamp,
    wildcard: Wildcard,
    never_used: &[GroupName],
    hosts: Option<&HostMap>,
) -> serde_json::Value {
    let groups: Vec<_> = groups
        .iter()
        .map(|(name, record)| {
            let rules = rules_of(name, deployed);
            let lease = rules.and_then(|rules| rules.lease);
            let drain = rules.and_then(|rules| rules.drain);
            let holders: Vec<_> = record
                .holders
                .holders()
                .map(|(id, at)| {
                    let reserved = record.draining.get(id).copied();
                    let ends = lease
                        .filter(|_| reserved.is_none())
                        .map(|lease| at.plus(lease));
                    let drain_until = reserved
                        .zip(drain)
                        .map(|(since, drain)| since.plus(drain.timeout));
                    let mut holder = serde_json::json!({
                        "id": id.as_str(),
                        "id_shown": id.shown(),
                        "acquired_at": rfc3339(at),
                        "acquired_at_ms": at.0,
                        "held_for_seconds": at.age_at(now).as_secs(),
                        "lease_ends_at": ends.map(rfc3339),
                        "lease_expired": ends.map(|ends| ends <= now),
                        "waiting_for_drain": reserved.is_some(),
                        "reserved_at": reserved.map(Timestamp::to_rfc3339_millis),
                        "drain_until": drain_until.map(rfc3339),
                        "drain_overdue": drain_until.map(|until| until <= now),
                    });
                    if let Some(hosts) = hosts {
                        holder["host"] = host_value(hosts.get(id.as_str()));
                    }
                    holder
                })
                .collect();
            let person = record.pause.person.as_ref().map(|p| {
                serde_json::json!({
                    "reason": p.reason.as_str(),
                    "by": p.by,
                    "since": rfc3339(p.since),
                    "since_ms": p.since.0,
                })
            });
            let excluded: Vec<_> = record
                .excluded
                .iter()
                .map(|(id, e)| {
                    let mut exclusion = serde_json::json!({
                        "id": id.as_str(),
                        "id_shown": id.shown(),
                        "reason": e.reason.as_str(),
                        "by": e.by,
                        "since": rfc3339(e.since),
                        "since_ms": e.since.0,
                    });
                    if let Some(hosts) = hosts {
                        exclusion["host"] = host_value(hosts.get(id.as_str()));
                    }
                    exclusion
                })
                .collect();
            let windows = deployed.and_then(|config| {
                let calendar = config.windows.calendar_for(name)?;
                let (state, at) = match config.windows.state(name, now) {
                    WindowState::Open { until } => ("open", until),
                    WindowState::Closed { opens } => ("closed", opens),
                    WindowState::AlwaysOpen => ("always_open", None),
                };
                Some(serde_json::json!({
                    "time_zone": config.windows.zone_name(),
                    "windows": calendar.windows().iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "state": state,
                    "changes_at": at.map(rfc3339),
                    "changes_at_local": at.map(|t| config.windows.local_text(t)),
                }))
            });
            serde_json::json!({
                "group": name.as_str(),
                "never_used": never_used.contains(name),
                "slots": record.slots,
                "configured_slots": rules.map(|r| r.slots),
                "state": state(name, record, deployed, now),
                "holders": holders,
                "paused_by_person": person,
                "excluded": excluded,
                "paused_by_alarms": record.pause.alarms,
                "last_release_at": record.last_release.map(rfc3339),
                "settle_seconds": rules.map(|r| r.settle.as_secs()),
                "lease_seconds": lease.map(|l| l.as_secs()),
                "drain_timeout_seconds": drain.map(|d| d.timeout.as_secs()),
                "drain_on_timeout": drain.map(|d| d.on_timeout.as_str()),
                "settles_until": settles_until(name, record, deployed, now).map(rfc3339),
                "maintenance_windows": windows,
            })
        })
        .collect();
    serde_json::json!({
        "groups": groups,
        "wildcard_groups": { "counted": wildcard.counted, "limit": wildcard.limit },
    })
}

/// `3h 12m`, `45s`: how long a slot has been held, for people.
pub fn human_duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
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
        let summary = config_summary(&config, &Default::default(), Timestamp::now(), false);
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
    fn status_shows_each_reservation_since_when_until_when_and_how_to_confirm_it() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::Semaphore;
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=2".into()),
            "FLEETLOCK_DRAIN" => Some("workers=15m".into()),
            _ => None,
        })
        .unwrap();
        let t0 = Timestamp(1_764_480_000_042);
        let minute = std::time::Duration::from_secs(60);
        let waits = NodeId::parse("waits").unwrap();
        let overdue = NodeId::parse("overdue").unwrap();
        let record = GroupRecord {
            holders: Semaphore::from_holders([
                (waits.clone(), t0.plus(minute * 10)),
                (overdue.clone(), t0),
            ]),
            draining: [(waits, t0.plus(minute * 10)), (overdue, t0)].into(),
            slots: Some(2),
            ..GroupRecord::default()
        };
        let groups = [(GroupName::parse("workers").unwrap(), record)];
        let now = t0.plus(minute * 20);
        let wildcard = Wildcard {
            counted: 0,
            limit: None,
        };
        let text = table(&groups, Some(&config), now, None, wildcard, &[], None);
        assert!(
            text.contains(
                "workers: 'waits' waits for its drain since 2025-11-30T05:30:00Z, until \
                 2025-11-30T05:45:00Z: confirm with 'fleetlock drained --group workers --id \
                 waits --reserved-at 2025-11-30T05:30:00.042Z'"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "'overdue' waits for its drain since 2025-11-30T05:20:00Z, past its \
                 timeout since 2025-11-30T05:35:00Z (hold)"
            ),
            "{text}"
        );
        assert_eq!(text.matches("draining").count(), 2, "{text}");
        let json = json(&groups, Some(&config), now, wildcard, &[], None);
        let group = &json["groups"][0];
        assert_eq!(group["drain_timeout_seconds"], 900);
        assert_eq!(group["drain_on_timeout"], "hold");
        assert_eq!(group["holders"][0]["id"], "overdue");
        assert_eq!(group["holders"][0]["drain_overdue"], true);
        assert_eq!(group["holders"][1]["waiting_for_drain"], true);
        assert_eq!(
            group["holders"][1]["reserved_at"],
            "2025-11-30T05:30:00.042Z"
        );
        assert_eq!(group["holders"][1]["drain_overdue"], false);
    }

    #[test]
    fn status_names_a_holder_past_its_lease_once_the_configuration_is_known() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::Semaphore;
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=2".into()),
            "FLEETLOCK_LEASE" => Some("workers=6h".into()),
            _ => None,
        })
        .unwrap();
        let t0 = Timestamp(1_764_480_000_000);
        let hour = std::time::Duration::from_secs(3600);
        let record = GroupRecord {
            holders: Semaphore::from_holders([
                (NodeId::parse("stuck").unwrap(), t0),
                (NodeId::parse("fresh").unwrap(), t0.plus(hour * 5)),
            ]),
            slots: Some(2),
            ..GroupRecord::default()
        };
        let groups = [(GroupName::parse("workers").unwrap(), record)];
        let now = t0.plus(hour * 7);
        let wildcard = Wildcard {
            counted: 0,
            limit: None,
        };
        let text = table(&groups, Some(&config), now, None, wildcard, &[], None);
        assert!(
            text.contains(
                "workers: 'stuck' is past its 6h lease since 2025-11-30T11:20:00Z: the next \
                 node to ask while the group is full takes its slot"
            ),
            "{text}"
        );
        assert!(!text.contains("'fresh' is past"), "{text}");
        let without = table(&groups, None, now, None, wildcard, &[], None);
        assert!(!without.contains("lease"), "no lease known: {without}");
        let json = json(&groups, Some(&config), now, wildcard, &[], None);
        let group = &json["groups"][0];
        assert_eq!(group["lease_seconds"], 6 * 3600);
        assert_eq!(group["holders"][0]["id"], "fresh");
        assert_eq!(group["holders"][0]["lease_expired"], false);
        assert_eq!(group["holders"][1]["lease_expired"], true);
        assert_eq!(group["holders"][1]["lease_ends_at"], "2025-11-30T11:20:00Z");
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(125), "2m 5s");
        assert_eq!(human_duration(3 * 3600 + 12 * 60 + 5), "3h 12m");
        assert_eq!(human_duration(2 * 86_400 + 3600), "2d 1h");
    }
}
