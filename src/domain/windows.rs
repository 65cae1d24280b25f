//! Maintenance windows: when a group may reboot, in the words of Zincati's
//! `periodic` strategy (`days`, `start_time`, `length_minutes`), so a window an
//! operator already has on the nodes carries over unchanged.
//!
//! A week is minutes from Monday 00:00 (0) to the next Monday (10080); each
//! window is a half-open interval of those minutes, possibly past the end of
//! the week (it wraps). Like Zincati, windows are wall-clock time in one zone:
//! the zone's local minute of the week decides, so a window in an hour that a
//! daylight-saving change skips does not happen that day, and one in a
//! repeated hour happens twice. The zone database is the copy bundled in the
//! binary (jiff's `tzdb-bundle-always`), never the host's.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use crate::domain::input::GroupName;
use crate::domain::names::did_you_mean;
// Why a window may not name a group, as the caller's `known` says.
pub use crate::domain::names::Unnameable;
use crate::domain::time::Timestamp;

pub(crate) const MINUTES_PER_WEEK: u32 = 7 * 24 * 60;

/// One window, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    days: BTreeSet<Day>,
    start_hour: u8,
    start_minute: u8,
    length_minutes: u32,
}

/// A weekday, Monday first, as Zincati spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Day(u8);

const DAY_NAMES: [(&str, &str); 7] = [
    ("Mon", "Monday"),
    ("Tue", "Tuesday"),
    ("Wed", "Wednesday"),
    ("Thu", "Thursday"),
    ("Fri", "Friday"),
    ("Sat", "Saturday"),
    ("Sun", "Sunday"),
];

/// Why a window (`days=Sat,Sun start_time=22:30 length_minutes=60`) was
/// refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("'{0}' is not a day (Mon to Sun, or Monday to Sunday)")]
    Day(String),
    #[error("'{0}' is not KEY=VALUE")]
    NotKeyValue(String),
    #[error("unknown key '{0}' (days, start_time, length_minutes)")]
    UnknownKey(String),
    #[error("'{0}' is given twice")]
    Twice(String),
    #[error("{0}= is missing (e.g. {0}={1})")]
    Missing(&'static str, &'static str),
    #[error("start_time '{0}' is not HH:MM from 00:00 to 23:59")]
    Start(String),
    #[error("length_minutes '{0}' is not a whole number from 1 to {MINUTES_PER_WEEK} (a week)")]
    Length(String),
}

impl Day {
    fn parse(text: &str) -> Result<Self, WindowError> {
        DAY_NAMES
            .iter()
            .position(|(short, long)| {
                text.eq_ignore_ascii_case(short) || text.eq_ignore_ascii_case(long)
            })
            .map(|i| Day(i as u8))
            .ok_or_else(|| WindowError::Day(text.to_owned()))
    }

    fn name(self) -> &'static str {
        DAY_NAMES[usize::from(self.0)].0
    }
}

impl Window {
    /// `days=Sat,Sun start_time=22:30 length_minutes=60`, every key once.
    pub(crate) fn parse(text: &str) -> Result<Self, WindowError> {
        let (mut days, mut start, mut length) = (None, None, None);
        for pair in text.split_whitespace() {
            let (key, value) =
                (pair.split_once('=')).ok_or_else(|| WindowError::NotKeyValue(pair.to_owned()))?;
            let slot = match key {
                "days" => &mut days,
                "start_time" => &mut start,
                "length_minutes" => &mut length,
                other => return Err(WindowError::UnknownKey(other.to_owned())),
            };
            if slot.replace(value).is_some() {
                return Err(WindowError::Twice(key.to_owned()));
            }
        }
        let days = days.ok_or(WindowError::Missing("days", "Sat,Sun"))?;
        let days = days
            .split(',')
            .map(Day::parse)
            .collect::<Result<BTreeSet<_>, _>>()?;
        let (start_hour, start_minute) =
            parse_start(start.ok_or(WindowError::Missing("start_time", "22:30"))?)?;
        let length = length.ok_or(WindowError::Missing("length_minutes", "60"))?;
        let length_minutes: u32 = length
            .parse()
            .ok()
            .filter(|n| (1..=MINUTES_PER_WEEK).contains(n))
            .ok_or_else(|| WindowError::Length(length.to_owned()))?;
        Ok(Self {
            days,
            start_hour,
            start_minute,
            length_minutes,
        })
    }

    /// Half-open intervals of minutes of the week, one per day.
    fn intervals(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let start_of_day = u32::from(self.start_hour) * 60 + u32::from(self.start_minute);
        self.days.iter().map(move |day| {
            let start = u32::from(day.0) * 1440 + start_of_day;
            (start, start + self.length_minutes)
        })
    }
}

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let days: Vec<&str> = self.days.iter().map(|d| d.name()).collect();
        write!(
            f,
            "days={} start_time={:02}:{:02} length_minutes={}",
            days.join(","),
            self.start_hour,
            self.start_minute,
            self.length_minutes
        )
    }
}

/// `HH:MM`, 24 h, two digits each.
fn parse_start(text: &str) -> Result<(u8, u8), WindowError> {
    let bad = || WindowError::Start(text.to_owned());
    let (h, m) = text.split_once(':').ok_or_else(bad)?;
    if h.len() != 2 || m.len() != 2 || !(h.chars().chain(m.chars())).all(|c| c.is_ascii_digit()) {
        return Err(bad());
    }
    let (h, m): (u8, u8) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
    if h > 23 || m > 59 {
        return Err(bad());
    }
    Ok((h, m))
}

/// Why a time zone or `FLEETLOCK_WINDOWS` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "'localtime' is refused: a server has no meaningful local zone; use UTC or an IANA name \
         such as Europe/Berlin"
    )]
    Localtime,
    /// The name, and the closest known one as a sentence's end.
    #[error("'{0}' is not a time zone of the IANA database{1}")]
    Zone(String, String),
    #[error(
        "empty entry in '{0}'; expected e.g. 'workers: days=Sat,Sun start_time=22:30 \
         length_minutes=60'"
    )]
    EmptyEntry(String),
    #[error("'{0}' does not start with 'GROUP:'")]
    NoGroup(String),
    #[error("'{group}': {why}")]
    Window { group: String, why: WindowError },
    #[error("'*' has windows but FLEETLOCK_GROUPS has no '*'")]
    NoWildcard,
    #[error("group '{name}': {why}")]
    GroupName { name: String, why: String },
    /// A group the configuration does not give slots, as it says so.
    #[error(transparent)]
    NotConfigured(#[from] Unnameable),
}

/// A group's windows; possibly overlapping, possibly past the week's end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Calendar {
    windows: Vec<Window>,
}

impl Calendar {
    pub(crate) fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Whether minute `m` of the week (0 = Monday 00:00) is inside a window.
    pub(crate) fn contains(&self, m: u32) -> bool {
        self.windows
            .iter()
            .flat_map(Window::intervals)
            .any(|(start, end)| {
                (start..end).contains(&m) || (end > MINUTES_PER_WEEK && m < end - MINUTES_PER_WEEK)
            })
    }

    /// The longest the group stays open at a stretch, in minutes: the
    /// windows that overlap or touch count as one, across the week's end
    /// too; the whole week when they cover it.
    pub(crate) fn longest_open_minutes(&self) -> u32 {
        let open: Vec<bool> = (0..MINUTES_PER_WEEK).map(|m| self.contains(m)).collect();
        if open.iter().all(|o| *o) {
            return MINUTES_PER_WEEK;
        }
        // From a closed minute on, once around the week: no stretch is cut.
        let first_closed = open.iter().position(|o| !o).unwrap_or(0);
        let (mut longest, mut run) = (0, 0);
        for step in 1..=MINUTES_PER_WEEK as usize {
            if open[(first_closed + step) % open.len()] {
                run += 1;
                longest = longest.max(run);
            } else {
                run = 0;
            }
        }
        longest
    }

    /// Every minute of the week at which a window starts or ends.
    fn boundaries(&self) -> BTreeSet<u32> {
        self.windows
            .iter()
            .flat_map(Window::intervals)
            .flat_map(|(start, end)| [start % MINUTES_PER_WEEK, end % MINUTES_PER_WEEK])
            .collect()
    }
}

/// Whether a group may reboot now, and until or from when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowState {
    /// The group has no windows.
    AlwaysOpen,
    /// Inside a window; `until` is when the last overlapping one closes
    /// (`None` if the windows cover the whole week).
    Open { until: Option<Timestamp> },
    /// Outside every window; `opens` is `None` only if no window can ever
    /// happen (all of them in skipped hours).
    Closed { opens: Option<Timestamp> },
}

/// The windows of every group, in one zone.
#[derive(Clone, Debug)]
pub struct Schedule {
    zone: TimeZone,
    zone_name: String,
    groups: BTreeMap<GroupName, Calendar>,
    /// `*`: groups without windows of their own.
    others: Option<Calendar>,
}

impl Default for Schedule {
    fn default() -> Self {
        Self {
            zone: TimeZone::UTC,
            zone_name: "UTC".into(),
            groups: BTreeMap::new(),
            others: None,
        }
    }
}

impl Schedule {
    /// No windows yet, every group always open, in the zone of
    /// `FLEETLOCK_TIME_ZONE`: `UTC` (also when unset) or an IANA name.
    pub(crate) fn in_zone(name: Option<&str>) -> Result<Self, ScheduleError> {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("UTC");
        if name.eq_ignore_ascii_case("localtime") {
            return Err(ScheduleError::Localtime);
        }
        let zone = TimeZone::get(name).map_err(|_| {
            let names: Vec<String> = jiff::tz::db()
                .available()
                .map(|zone| zone.to_string())
                .collect();
            let closest = did_you_mean(name, names.iter().map(String::as_str));
            ScheduleError::Zone(name.to_owned(), closest)
        })?;
        Ok(Schedule {
            zone,
            zone_name: name.to_owned(),
            ..Schedule::default()
        })
    }

    /// `FLEETLOCK_WINDOWS` in the zone named: see [`Schedule::with_windows`].
    pub fn parse(
        spec: &str,
        zone: Option<&str>,
        known: impl Fn(&GroupName) -> Result<(), Unnameable>,
        wildcard_known: bool,
    ) -> Result<Self, ScheduleError> {
        Self::in_zone(zone)?.with_windows(spec, known, wildcard_known)
    }

    /// Adds `FLEETLOCK_WINDOWS`: windows separated by `;`, each `GROUP: days=...
    /// start_time=HH:MM length_minutes=N`; a group may have several; `*`
    /// gives windows to every group without its own. `known` refuses a
    /// group that is not configured, with the reason.
    pub(crate) fn with_windows(
        mut self,
        spec: &str,
        known: impl Fn(&GroupName) -> Result<(), Unnameable>,
        wildcard_known: bool,
    ) -> Result<Self, ScheduleError> {
        for entry in spec.split(';').map(str::trim) {
            if entry.is_empty() {
                return Err(ScheduleError::EmptyEntry(spec.to_owned()));
            }
            // The group is what comes before the first ':' (start_time has one too).
            let (name, window) = entry
                .split_once(':')
                .filter(|(name, _)| !name.contains(|c: char| c == '=' || c.is_whitespace()))
                .ok_or_else(|| ScheduleError::NoGroup(entry.to_owned()))?;
            let name = name.trim();
            let window = Window::parse(window).map_err(|why| ScheduleError::Window {
                group: name.to_owned(),
                why,
            })?;
            let calendar = if name == "*" {
                if !wildcard_known {
                    return Err(ScheduleError::NoWildcard);
                }
                self.others.get_or_insert_default()
            } else {
                let group = GroupName::parse(name).map_err(|e| ScheduleError::GroupName {
                    name: name.to_owned(),
                    why: e.value(),
                })?;
                known(&group)?;
                self.groups.entry(group).or_default()
            };
            calendar.windows.push(window);
        }
        Ok(self)
    }

    pub(crate) fn zone_name(&self) -> &str {
        &self.zone_name
    }

    /// The windows of every group only `*` covers.
    pub(crate) fn others_calendar(&self) -> Option<&Calendar> {
        self.others.as_ref()
    }

    /// The group's windows; `None`: it may reboot at any time.
    pub(crate) fn calendar_for(&self, group: &GroupName) -> Option<&Calendar> {
        self.groups.get(group).or(self.others.as_ref())
    }

    fn local(&self, at: Timestamp) -> DateTime {
        let millis = i64::try_from(at.0).unwrap_or(i64::MAX);
        let instant = jiff::Timestamp::from_millisecond(millis).unwrap_or(jiff::Timestamp::MAX);
        self.zone.to_datetime(instant)
    }

    /// The zone's wall-clock minute of the week at `at`.
    fn minute_of_week(&self, at: Timestamp) -> u32 {
        let local = self.local(at);
        u32::from(local.weekday().to_monday_zero_offset() as u8) * 1440
            + u32::from(local.hour() as u8) * 60
            + u32::from(local.minute() as u8)
    }

    /// Whether the windows are in UTC, where a local time adds nothing.
    pub(crate) fn is_utc(&self) -> bool {
        ["UTC", "Etc/UTC"]
            .iter()
            .any(|utc| self.zone_name.eq_ignore_ascii_case(utc))
    }

    /// `Sat 2026-12-05 23:00 Europe/Berlin`: a time as the zone's clock shows it.
    pub(crate) fn local_text(&self, at: Timestamp) -> String {
        format!(
            "{} {}",
            self.local(at).strftime("%a %Y-%m-%d %H:%M"),
            self.zone_name
        )
    }

    pub fn state(&self, group: &GroupName, now: Timestamp) -> WindowState {
        let Some(calendar) = self.calendar_for(group) else {
            return WindowState::AlwaysOpen;
        };
        if calendar.contains(self.minute_of_week(now)) {
            WindowState::Open {
                until: self.next_change(calendar, now, true),
            }
        } else {
            WindowState::Closed {
                opens: self.next_change(calendar, now, false),
            }
        }
    }

    /// The first instant after `now` at which the calendar is no longer
    /// `open`. The zone's local minute moves with real time except at its
    /// transitions, so only window boundaries and transitions are visited.
    fn next_change(&self, calendar: &Calendar, now: Timestamp, open: bool) -> Option<Timestamp> {
        let boundaries = calendar.boundaries();
        let mut at = now;
        // Eight days of boundaries and transitions is more than enough.
        let horizon = now.plus(std::time::Duration::from_secs(8 * 86_400));
        while at < horizon {
            let minute = self.minute_of_week(at);
            let local = self.local(at);
            let into_minute = u64::from(local.second() as u8) * 1000
                + u64::try_from(local.subsec_nanosecond() / 1_000_000).unwrap_or(0);
            let minute_start = Timestamp(at.0 - into_minute.min(at.0));
            let to_boundary = boundaries
                .iter()
                .map(|b| (b + MINUTES_PER_WEEK - minute) % MINUTES_PER_WEEK)
                .map(|d| if d == 0 { MINUTES_PER_WEEK } else { d })
                .min()?;
            let boundary = Timestamp(minute_start.0 + u64::from(to_boundary) * 60_000);
            let instant = jiff::Timestamp::from_millisecond(at.0 as i64).ok()?;
            // The next transition after `at`; bounded, whatever the zone data.
            let transition = self
                .zone
                .following(instant)
                .take(2)
                .filter_map(|t| u64::try_from(t.timestamp().as_millisecond()).ok())
                .map(Timestamp)
                .find(|t| *t > at);
            at = match transition {
                Some(t) if t < boundary => t,
                _ => boundary,
            };
            if calendar.contains(self.minute_of_week(at)) != open {
                return Some(at);
            }
        }
        None
    }

    /// The next `count` times the calendar opens (`true`) or closes
    /// (`false`) after `from`, in order: what `fleetlock windows` lists.
    pub(crate) fn changes(
        &self,
        calendar: &Calendar,
        from: Timestamp,
        count: usize,
    ) -> Vec<(bool, Timestamp)> {
        let mut changes = Vec::with_capacity(count);
        let mut at = from;
        while changes.len() < count {
            let open = calendar.contains(self.minute_of_week(at));
            let Some(next) = self.next_change(calendar, at, open) else {
                break;
            };
            changes.push((!open, next));
            at = next;
        }
        changes
    }

    /// Every configured calendar, for `status` and the logs.
    pub(crate) fn calendars(&self) -> impl Iterator<Item = (Option<&GroupName>, &Calendar)> {
        self.groups
            .iter()
            .map(|(g, c)| (Some(g), c))
            .chain(self.others.iter().map(|c| (None, c)))
    }
}

#[cfg(test)]
mod tests;
