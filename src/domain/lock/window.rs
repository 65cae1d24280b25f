//! The window gate: outside a group's maintenance windows
//! (`FLEETLOCK_WINDOWS`) every node is refused, holders too (they keep their
//! slot and reboot in the next window), without asking the store; inside,
//! a drain begins only if the window stays open until it would time out.
//! Its check before the store, its refusal and its status line. The
//! calendar and its parse are `domain/windows.rs`'s; the windows are no
//! setting of a group's rules, so nothing in the summary or the digest of
//! its rules (the regions' digest takes the calendars apart).

use super::GroupRules;
use super::gates::{Gate, Shown};
use crate::domain::error::Error;
use crate::domain::input::GroupName;
use crate::domain::time::{Timestamp, format_duration};
use crate::domain::windows::{Schedule, WindowState};
use serde_json::{Value, json};
use std::time::Duration;

/// Whether `group` may ask the store at `now`: refused outside its windows;
/// inside, `rules`' drain learns when the window closes, where it closes
/// before a drain begun now would time out (a drained node is not left
/// out of service to the next window).
pub(crate) fn admit(
    schedule: &Schedule,
    group: &GroupName,
    rules: &mut GroupRules,
    now: Timestamp,
) -> Result<(), Error> {
    match schedule.state(group, now) {
        WindowState::Closed { opens } => {
            return Err(Error::OutsideMaintenanceWindow {
                group: group.to_string(),
                // In UTC the zone's clock says the same again: once is enough.
                opens: opens.map(|at| {
                    let local = (!schedule.is_utc()).then(|| schedule.local_text(at));
                    (at.to_rfc3339(), local)
                }),
            });
        }
        // A drain begins only if the window stays open until it times
        // out: a drained node is not left out of service to the next one.
        WindowState::Open {
            until: Some(closes),
        } => {
            if let Some(drain) = rules.drain.as_mut()
                && closes < now.plus(drain.timeout)
            {
                drain.window_closes = Some(closes);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Refuses a group with a drain gate whose windows never stay open for its
/// drain timeout (`drains`: each gate's timeout, by group, `None` for `*`):
/// no drain would ever begin there (one begins only while the window stays
/// open until it would time out), so none of its nodes would ever reboot.
pub(crate) fn drains_fit<'a>(
    schedule: &Schedule,
    drains: impl Iterator<Item = (Option<&'a GroupName>, Duration)>,
) -> Result<(), DrainNeverBegins> {
    for (group, timeout) in drains {
        let calendar = match group {
            Some(group) => schedule.calendar_for(group),
            None => schedule.others_calendar(),
        };
        let Some(calendar) = calendar else { continue };
        let open = calendar.longest_open_minutes();
        if u64::from(open) * 60 <= timeout.as_secs() {
            return Err(DrainNeverBegins {
                who: group.map_or_else(|| "'*'".to_owned(), |group| format!("group '{group}'")),
                open,
                timeout: format_duration(timeout),
            });
        }
    }
    Ok(())
}

/// A group whose windows are never open as long as its drain timeout.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{who}: its longest window, {open} minutes, is not longer than its drain timeout \
     ({timeout}): a drain begins only in a window that stays open until it would time out, \
     so none would begin and no node of it would reboot; lengthen the window or shorten \
     FLEETLOCK_DRAIN"
)]
pub(crate) struct DrainNeverBegins {
    who: String,
    open: u32,
    timeout: String,
}

/// The window gate in the list of gates.
pub(crate) struct WindowGate;

impl Gate for WindowGate {
    /// The group's windows and whether one is open, where it has any.
    fn status(&self, group: &Shown) -> Vec<String> {
        let Some(schedule) = group.windows else {
            return Vec::new();
        };
        let Some(calendar) = schedule.calendar_for(group.name) else {
            return Vec::new();
        };
        let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
        let at = |t: Timestamp| format!("{} ({})", t.to_rfc3339(), schedule.local_text(t));
        let state = match schedule.state(group.name, group.now) {
            WindowState::Open { until: Some(until) } => format!("open until {}", at(until)),
            WindowState::Open { until: None } => "open all week".into(),
            WindowState::Closed { opens: Some(opens) } => format!("closed; opens {}", at(opens)),
            WindowState::Closed { opens: None } => "closed; no window can happen".into(),
            WindowState::AlwaysOpen => return Vec::new(),
        };
        vec![format!(
            "{} windows ({}): {}; {state}",
            group.name,
            schedule.zone_name(),
            list.join("; ")
        )]
    }

    /// The group's windows, whether one is open, and when that changes;
    /// `null` without a known configuration or windows of the group's own.
    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let windows = group.windows.and_then(|schedule| {
            let calendar = schedule.calendar_for(group.name)?;
            let (state, at) = match schedule.state(group.name, group.now) {
                WindowState::Open { until } => ("open", until),
                WindowState::Closed { opens } => ("closed", opens),
                WindowState::AlwaysOpen => ("always_open", None),
            };
            Some(json!({
                "time_zone": schedule.zone_name(),
                "windows": calendar.windows().iter().map(ToString::to_string).collect::<Vec<_>>(),
                "state": state,
                "changes_at": at.map(Timestamp::to_rfc3339),
                "changes_at_local": at.map(|t| schedule.local_text(t)),
            }))
        });
        vec![("maintenance_windows", json!(windows))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::lock::OnDrainTimeout;
    use crate::domain::lock::drain::drain_rule;

    /// Sunday 2025-11-30, 12:00 UTC, and one window on Sundays 11:00 to
    /// 13:00 in `zone`.
    const NOON: Timestamp = Timestamp(1_764_504_000_000);

    fn sundays(zone: &str) -> Schedule {
        let spec = "workers: days=Sun start_time=11:00 length_minutes=120";
        Schedule::parse(spec, Some(zone), |_| Ok(()), false).unwrap()
    }

    fn draining(minutes: u64) -> GroupRules {
        GroupRules {
            slots: 1,
            drain: Some(drain_rule((
                Duration::from_secs(minutes * 60),
                OnDrainTimeout::Hold,
            ))),
            ..GroupRules::default()
        }
    }

    #[test]
    fn outside_its_window_a_group_is_refused_with_when_the_next_opens() {
        let workers = GroupName::parse("workers").unwrap();
        let two_pm = NOON.plus(Duration::from_secs(2 * 3600));
        let mut rules = draining(15);
        let refused = admit(&sundays("UTC"), &workers, &mut rules, two_pm).unwrap_err();
        assert_eq!(
            refused,
            Error::OutsideMaintenanceWindow {
                group: "workers".into(),
                opens: Some(("2025-12-07T11:00:00Z".into(), None)),
            },
            "in UTC the zone's time is not said twice"
        );
        let berlin = admit(&sundays("Europe/Berlin"), &workers, &mut rules, two_pm).unwrap_err();
        let Error::OutsideMaintenanceWindow { opens, .. } = berlin else {
            panic!("{berlin:?}");
        };
        let (utc, local) = opens.unwrap();
        assert_eq!(utc, "2025-12-07T10:00:00Z", "11:00 in Berlin");
        assert!(local.is_some_and(|local| local.contains("11:00")));
    }

    #[test]
    fn inside_it_a_drain_begins_only_if_the_window_stays_open_for_it() {
        let workers = GroupName::parse("workers").unwrap();
        let mut short = draining(15);
        admit(&sundays("UTC"), &workers, &mut short, NOON).unwrap();
        assert_eq!(
            short.drain.unwrap().window_closes,
            None,
            "13:00 is past 12:15"
        );
        let mut long = draining(90);
        admit(&sundays("UTC"), &workers, &mut long, NOON).unwrap();
        assert_eq!(
            long.drain.unwrap().window_closes,
            Some(NOON.plus(Duration::from_secs(3600))),
            "13:00 is before 13:30"
        );
    }
}
