//! `status` as a table for people.

use crate::config::Config;
use crate::domain::hosts::HostMap;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::gates::{self, Shown};
use crate::domain::time::Timestamp;

use super::view::{Wildcard, is_idle, rfc3339, shown, slots_text, state};
use crate::domain::time::human_duration;

/// Holders per group, then a line for each paused, settling or windowed
/// group. `deployed` is the configuration the function runs with, when
/// known (`--function`, or the same variables in the shell). With
/// `idle_shown`, only that many idle groups are listed, the rest counted.
pub(crate) fn render(
    groups: &[(GroupName, GroupRecord)],
    deployed: Option<&Config>,
    now: Timestamp,
    idle_shown: Option<usize>,
    wildcard: Wildcard,
    never_used: &[GroupName],
    hosts: Option<&HostMap>,
) -> String {
    let (groups, idle_hidden) = listed(groups, idle_shown);
    let rows = holder_rows(&groups, deployed, now, never_used, hosts);
    let mut out = aligned(&rows);
    for &(name, record) in &groups {
        group_notes(&mut out, name, record, deployed, now, hosts);
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

/// The groups listed (with `idle_shown`, only that many idle ones) and how
/// many idle ones are left out.
fn listed(
    groups: &[(GroupName, GroupRecord)],
    idle_shown: Option<usize>,
) -> (Vec<&(GroupName, GroupRecord)>, usize) {
    let mut idle_left = idle_shown.unwrap_or(usize::MAX);
    let mut idle_hidden = 0usize;
    let listed = groups
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
    (listed, idle_hidden)
}

/// The table: a header, then a row for each holder (a row for a group
/// that holds none), with a HOST column when `hosts` is given.
fn holder_rows(
    groups: &[&(GroupName, GroupRecord)],
    deployed: Option<&Config>,
    now: Timestamp,
    never_used: &[GroupName],
    hosts: Option<&HostMap>,
) -> Vec<Vec<String>> {
    const HEADER: [&str; 6] = ["GROUP", "HELD", "STATE", "ID", "SINCE (UTC)", "FOR"];
    let mut rows = vec![HEADER.map(String::from).to_vec()];
    for &(name, record) in groups {
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
            // A reservation holds its slot but its node waits for its drain;
            // a returning slot still counts, its node not confirmed back.
            let state = if record.draining.contains_key(id) {
                "draining".to_string()
            } else if record.returning.contains_key(id) {
                "returning".to_string()
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
                human_duration(at.age_at(now)),
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
    rows
}

/// The rows in columns as wide as their widest cell.
fn aligned(rows: &[Vec<String>]) -> String {
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
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A group's lines under the table: its pause, exclusions, drains and
/// returns waiting, holders past their lease, settle period and window.
fn group_notes(
    out: &mut String,
    name: &GroupName,
    record: &GroupRecord,
    deployed: Option<&Config>,
    now: Timestamp,
    hosts: Option<&HostMap>,
) {
    if let Some(line) = super::view::leftover(name, deployed) {
        out.push_str(&line);
        out.push('\n');
    }
    let shown = Shown {
        host_of: &|id| host_of(hosts, id),
        ..shown(name, record, deployed, now)
    };
    for line in gates::status_lines(&shown) {
        out.push_str(&line);
        out.push('\n');
    }
}

/// ` (HOST)` where the host map knows the id's host.
fn host_of(hosts: Option<&HostMap>, id: &NodeId) -> String {
    hosts
        .and_then(|hosts| hosts.get(id.as_str()))
        .map_or(String::new(), |host| format!(" ({host})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings of the group `workers` with two slots and one more.
    fn workers_with(variable: &'static str, value: &'static str) -> Config {
        Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=2".into()),
            _ if name == variable => Some(value.into()),
            _ => None,
        })
        .unwrap()
    }

    /// What status shows of `workers` at `now`: its text, and its group in
    /// `--json`.
    fn shown(
        record: &GroupRecord,
        deployed: Option<&Config>,
        now: Timestamp,
    ) -> (String, serde_json::Value) {
        let groups = [(GroupName::parse("workers").unwrap(), record.clone())];
        let wildcard = Wildcard {
            counted: 0,
            limit: None,
        };
        let text = render(&groups, deployed, now, None, wildcard, &[], None);
        let json = super::super::json::render(&groups, deployed, now, wildcard, &[], None);
        (text, json["groups"][0].clone())
    }

    #[test]
    fn status_says_which_wave_is_out_and_when_the_bake_ends() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::Semaphore;
        let config = workers_with("FLEETLOCK_CANARY", "workers=30m:1+3");
        let t0 = Timestamp(1_764_480_000_000);
        let mut record = GroupRecord {
            holders: Semaphore::from_holders([(NodeId::parse("c").unwrap(), t0)]),
            wave_grants: Some(1),
            rollout_began: Some(t0),
            slots: Some(3),
            ..GroupRecord::default()
        };
        let (text, group) = shown(&record, Some(&config), t0);
        assert!(
            text.contains(
                "workers rolls out in waves (the canary, then 3, then the rest, each back 30m \
                 before the next): rollout since 2025-11-30T05:20:00Z, 1 grant; the canary is \
                 out"
            ),
            "{text}"
        );
        // The next node hears waiting_for_wave: the STATE says so.
        assert!(text.contains("workers  1/3   wave_out"), "{text}");
        assert_eq!(group["state"], "wave_out");
        assert_eq!(group["rollout"]["wave_out"], "the canary");
        assert_eq!(group["rollout"]["wave_baking"], serde_json::Value::Null);
        record.holders = Semaphore::default();
        record.last_release = Some(t0.plus(std::time::Duration::from_secs(600)));
        let (text, group) = shown(
            &record,
            Some(&config),
            t0.plus(std::time::Duration::from_secs(900)),
        );
        assert!(
            text.contains("the canary is back; the next wave begins at 2025-11-30T06:00:00Z"),
            "{text}"
        );
        assert_eq!(group["rollout"]["bake_until"], "2025-11-30T06:00:00Z");
        // Back, it bakes: no wave is out any more.
        assert_eq!(group["rollout"]["wave_out"], serde_json::Value::Null);
        assert_eq!(group["rollout"]["wave_baking"], "the canary");
        assert_eq!(group["state"], "baking");
        // Quiet long past the bake: the next node is a new canary.
        let (text, group) = shown(
            &record,
            Some(&config),
            t0.plus(std::time::Duration::from_secs(86_400)),
        );
        assert!(
            text.contains("the next node to take a slot is a new rollout's canary"),
            "{text}"
        );
        assert_eq!(group["rollout"]["runs"], false);
    }

    #[test]
    fn status_names_the_zone_out_while_a_node_holds_and_not_after() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::Semaphore;
        let config = workers_with("FLEETLOCK_ZONES", "workers");
        let t0 = Timestamp(1_764_480_000_042);
        let mut record = GroupRecord {
            holders: Semaphore::from_holders([(NodeId::parse("a1").unwrap(), t0)]),
            zone: Some("workers.us-east-1a".into()),
            slots: Some(3),
            ..GroupRecord::default()
        };
        let (text, group) = shown(&record, Some(&config), t0);
        assert!(
            text.contains(
                "workers has nodes out in zone 'us-east-1a' (group 'workers.us-east-1a'): the \
                 other zones wait until they are back"
            ),
            "{text}"
        );
        assert_eq!(group["zone_out"], "us-east-1a");
        assert_eq!(group["zone_group_out"], "workers.us-east-1a");
        // Nodes that asked with the group's own name are in no zone.
        record.zone = Some("workers".into());
        let (_, group) = shown(&record, Some(&config), t0);
        assert_eq!(group["zone_out"], serde_json::Value::Null);
        assert_eq!(group["zone_group_out"], "workers");
        record.holders = Semaphore::default();
        let (text, group) = shown(&record, Some(&config), t0);
        assert!(!text.contains("nodes out in"), "{text}");
        assert_eq!(group["zone_out"], serde_json::Value::Null);
        assert_eq!(group["zone_group_out"], serde_json::Value::Null);
    }

    #[test]
    fn status_shows_each_return_for_how_long_until_when_how_to_confirm_it_and_a_stop() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::{RolloutStop, Semaphore};
        let config = workers_with("FLEETLOCK_RETURN", "workers=20m");
        let t0 = Timestamp(1_764_480_000_042);
        let minute = std::time::Duration::from_secs(60);
        let back = NodeId::parse("back").unwrap();
        let gone = NodeId::parse("gone").unwrap();
        let record = GroupRecord {
            holders: Semaphore::from_holders([(back.clone(), t0), (gone.clone(), t0)]),
            returning: [(back, t0.plus(minute * 15)), (gone.clone(), t0)].into(),
            slots: Some(2),
            pause: crate::domain::lock::Pause {
                stop: Some(RolloutStop {
                    id: gone,
                    returning_since: t0,
                    at: t0.plus(minute * 21),
                    cause: Default::default(),
                }),
                ..Default::default()
            },
            ..GroupRecord::default()
        };
        let now = t0.plus(minute * 25);
        let (text, group) = shown(&record, Some(&config), now);
        assert!(
            text.contains(
                "workers: 'back' is returning since 2025-11-30T05:35:00Z (10m), due by \
                 2025-11-30T05:55:00Z: confirm with 'fleetlock returned --group workers --id \
                 back --released-at 2025-11-30T05:35:00.042Z'"
            ),
            "{text}"
        );
        assert!(
            text.contains("'gone' is returning since 2025-11-30T05:20:00Z (25m), past its return timeout since 2025-11-30T05:40:00Z"),
            "{text}"
        );
        assert!(
            text.contains(
                "workers is paused by the server since 2025-11-30T05:41:00Z: node 'gone'"
            ),
            "{text}"
        );
        assert_eq!(text.matches("returning  ").count(), 2, "{text}");
        assert_eq!(group["stopped"]["id"], "gone");
        assert_eq!(group["return_timeout_seconds"], 1200);
        let gone = group["holders"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == "gone")
            .unwrap();
        assert_eq!(
            (
                &gone["returning"],
                &gone["return_overdue"],
                &gone["returning_for_seconds"]
            ),
            (&true.into(), &true.into(), &1500.into())
        );
    }

    #[test]
    fn status_shows_each_reservation_since_when_until_when_and_how_to_confirm_it() {
        use crate::domain::input::NodeId;
        use crate::domain::lock::Semaphore;
        let config = workers_with("FLEETLOCK_DRAIN", "workers=15m");
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
        let now = t0.plus(minute * 20);
        let (text, group) = shown(&record, Some(&config), now);
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
        let config = workers_with("FLEETLOCK_LEASE", "workers=6h");
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
        let now = t0.plus(hour * 7);
        let (text, group) = shown(&record, Some(&config), now);
        assert!(
            text.contains(
                "workers: 'stuck' is past its 6h lease since 2025-11-30T11:20:00Z: the next \
                 node to ask while the group is full takes its slot"
            ),
            "{text}"
        );
        assert!(!text.contains("'fresh' is past"), "{text}");
        let (without, _) = shown(&record, None, now);
        assert!(!without.contains("lease"), "no lease known: {without}");
        assert_eq!(group["lease_seconds"], 6 * 3600);
        assert_eq!(group["holders"][0]["id"], "fresh");
        assert_eq!(group["holders"][0]["lease_expired"], false);
        assert_eq!(group["holders"][1]["lease_expired"], true);
        assert_eq!(group["holders"][1]["lease_ends_at"], "2025-11-30T11:20:00Z");
    }
}
