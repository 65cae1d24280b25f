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
use crate::domain::lock::Timestamp;
use crate::domain::names::did_you_mean;

pub const MINUTES_PER_WEEK: u32 = 7 * 24 * 60;

/// One window, as configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
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

impl Day {
    fn parse(text: &str) -> Result<Self, String> {
        DAY_NAMES
            .iter()
            .position(|(short, long)| {
                text.eq_ignore_ascii_case(short) || text.eq_ignore_ascii_case(long)
            })
            .map(|i| Day(i as u8))
            .ok_or_else(|| format!("'{text}' is not a day (Mon to Sun, or Monday to Sunday)"))
    }

    fn name(self) -> &'static str {
        DAY_NAMES[usize::from(self.0)].0
    }
}

impl Window {
    /// `days=Sat,Sun start_time=22:30 length_minutes=60`, every key once.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (mut days, mut start, mut length) = (None, None, None);
        for pair in text.split_whitespace() {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("'{pair}' is not KEY=VALUE"))?;
            let slot = match key {
                "days" => &mut days,
                "start_time" => &mut start,
                "length_minutes" => &mut length,
                other => {
                    return Err(format!(
                        "unknown key '{other}' (days, start_time, length_minutes)"
                    ));
                }
            };
            if slot.replace(value).is_some() {
                return Err(format!("'{key}' is given twice"));
            }
        }
        let days = days.ok_or("days= is missing (e.g. days=Sat,Sun)")?;
        let days = days
            .split(',')
            .map(Day::parse)
            .collect::<Result<BTreeSet<_>, _>>()?;
        let (start_hour, start_minute) =
            parse_start(start.ok_or("start_time= is missing (e.g. start_time=22:30)")?)?;
        let length = length.ok_or("length_minutes= is missing (e.g. length_minutes=60)")?;
        let length_minutes: u32 = length
            .parse()
            .ok()
            .filter(|n| (1..=MINUTES_PER_WEEK).contains(n))
            .ok_or_else(|| {
                format!("length_minutes '{length}' is not a whole number from 1 to {MINUTES_PER_WEEK} (a week)")
            })?;
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
fn parse_start(text: &str) -> Result<(u8, u8), String> {
    let bad = || format!("start_time '{text}' is not HH:MM from 00:00 to 23:59");
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

/// A group's windows; possibly overlapping, possibly past the week's end.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Calendar {
    windows: Vec<Window>,
}

impl Calendar {
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Whether minute `m` of the week (0 = Monday 00:00) is inside a window.
    pub fn contains(&self, m: u32) -> bool {
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
    pub fn longest_open_minutes(&self) -> u32 {
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
    pub fn in_zone(name: Option<&str>) -> Result<Self, String> {
        let name = name
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .unwrap_or("UTC");
        if name.eq_ignore_ascii_case("localtime") {
            return Err(
                "'localtime' is refused: a server has no meaningful local zone; use UTC or an \
                 IANA name such as Europe/Berlin"
                    .into(),
            );
        }
        let zone = TimeZone::get(name).map_err(|_| {
            let names: Vec<String> = jiff::tz::db()
                .available()
                .map(|zone| zone.to_string())
                .collect();
            let closest = did_you_mean(name, names.iter().map(String::as_str));
            format!("'{name}' is not a time zone of the IANA database{closest}")
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
        known: impl Fn(&GroupName) -> Result<(), String>,
        wildcard_known: bool,
    ) -> Result<Self, String> {
        Self::in_zone(zone)?.with_windows(spec, known, wildcard_known)
    }

    /// Adds `FLEETLOCK_WINDOWS`: windows separated by `;`, each `GROUP: days=...
    /// start_time=HH:MM length_minutes=N`; a group may have several; `*`
    /// gives windows to every group without its own. `known` refuses a
    /// group that is not configured, with the reason.
    pub fn with_windows(
        mut self,
        spec: &str,
        known: impl Fn(&GroupName) -> Result<(), String>,
        wildcard_known: bool,
    ) -> Result<Self, String> {
        for entry in spec.split(';').map(str::trim) {
            if entry.is_empty() {
                return Err(format!(
                    "empty entry in '{spec}'; expected e.g. 'workers: days=Sat,Sun \
                     start_time=22:30 length_minutes=60'"
                ));
            }
            // The group is what comes before the first ':' (start_time has one too).
            let (name, window) = entry
                .split_once(':')
                .filter(|(name, _)| !name.contains(|c: char| c == '=' || c.is_whitespace()))
                .ok_or_else(|| format!("'{entry}' does not start with 'GROUP:'"))?;
            let name = name.trim();
            let window = Window::parse(window).map_err(|why| format!("'{name}': {why}"))?;
            let calendar = if name == "*" {
                if !wildcard_known {
                    return Err("'*' has windows but FLEETLOCK_GROUPS has no '*'".into());
                }
                self.others.get_or_insert_default()
            } else {
                let group =
                    GroupName::parse(name).map_err(|e| format!("group '{name}': {}", e.value()))?;
                known(&group)?;
                self.groups.entry(group).or_default()
            };
            calendar.windows.push(window);
        }
        Ok(self)
    }

    pub fn zone_name(&self) -> &str {
        &self.zone_name
    }

    /// The windows of every group only `*` covers.
    pub fn others_calendar(&self) -> Option<&Calendar> {
        self.others.as_ref()
    }

    /// The group's windows; `None`: it may reboot at any time.
    pub fn calendar_for(&self, group: &GroupName) -> Option<&Calendar> {
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
    pub fn is_utc(&self) -> bool {
        ["UTC", "Etc/UTC"]
            .iter()
            .any(|utc| self.zone_name.eq_ignore_ascii_case(utc))
    }

    /// `Sat 2026-12-05 23:00 Europe/Berlin`: a time as the zone's clock shows it.
    pub fn local_text(&self, at: Timestamp) -> String {
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
    pub fn changes(
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
    pub fn calendars(&self) -> impl Iterator<Item = (Option<&GroupName>, &Calendar)> {
        self.groups
            .iter()
            .map(|(g, c)| (Some(g), c))
            .chain(self.others.iter().map(|c| (None, c)))
    }
}

/// Refuses a group with a drain gate whose windows never stay open for its
/// drain timeout: no drain would ever begin there (one begins only while
/// the window stays open until it would time out), so none of its nodes
/// would ever reboot.
pub fn windows_fit_drains(
    groups: &crate::domain::groups::GroupSlots,
    windows: &Schedule,
) -> Result<(), String> {
    let listed = groups.listed().filter_map(|(group, _)| {
        let drain = groups.rules_for(group).ok()?.drain?;
        Some((
            format!("group '{group}'"),
            windows.calendar_for(group)?,
            drain.timeout,
        ))
    });
    let others = match (groups.others_drain(), windows.others_calendar()) {
        (Some(timeout), Some(calendar)) => Some(("'*'".to_owned(), calendar, timeout)),
        _ => None,
    };
    for (who, calendar, timeout) in listed.chain(others) {
        let open = calendar.longest_open_minutes();
        if u64::from(open) * 60 <= timeout.as_secs() {
            return Err(format!(
                "{who}: its longest window, {open} minutes, is not longer than its drain \
                 timeout ({}): a drain begins only in a window that stays open until it \
                 would time out, so none would begin and no node of it would reboot; \
                 lengthen the window or shorten FLEETLOCK_DRAIN",
                crate::domain::groups::format_duration(timeout)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(s: &str) -> GroupName {
        GroupName::parse(s).unwrap()
    }

    fn schedule(spec: &str, zone: &str) -> Schedule {
        Schedule::parse(spec, Some(zone), |_| Ok(()), true).unwrap()
    }

    /// An instant from a wall-clock time in UTC.
    fn utc(text: &str) -> Timestamp {
        let ts: jiff::Timestamp = text.parse().unwrap();
        Timestamp(ts.as_millisecond() as u64)
    }

    fn text(at: Timestamp) -> String {
        at.to_rfc3339()
    }

    #[test]
    fn inside_and_outside_a_weekend_night_window() {
        let s = schedule("w: days=Sat,Sun start_time=22:00 length_minutes=120", "UTC");
        let g = group("w");
        // 2026-12-05 is a Saturday.
        assert_eq!(
            s.state(&g, utc("2026-12-05T22:30:00Z")),
            WindowState::Open {
                until: Some(utc("2026-12-06T00:00:00Z"))
            }
        );
        assert_eq!(
            s.state(&g, utc("2026-12-05T21:59:59Z")),
            WindowState::Closed {
                opens: Some(utc("2026-12-05T22:00:00Z"))
            }
        );
        // The window is half-open: its end minute is outside.
        assert_eq!(
            s.state(&g, utc("2026-12-06T00:00:00Z")),
            WindowState::Closed {
                opens: Some(utc("2026-12-06T22:00:00Z"))
            }
        );
        // From Monday, the next one is Saturday.
        assert_eq!(
            s.state(&g, utc("2026-12-07T10:00:00Z")),
            WindowState::Closed {
                opens: Some(utc("2026-12-12T22:00:00Z"))
            }
        );
        assert_eq!(
            s.state(&group("other-without-windows"), utc("2026-12-07T10:00:00Z")),
            WindowState::AlwaysOpen
        );
    }

    #[test]
    fn a_window_crosses_midnight_and_the_end_of_the_week() {
        // Sunday 23:00 for 3 h: into Monday 02:00, past minute 10080.
        let s = schedule("w: days=Sun start_time=23:00 length_minutes=180", "UTC");
        let g = group("w");
        for inside in [
            "2026-12-06T23:00:00Z",
            "2026-12-07T00:00:00Z",
            "2026-12-07T01:59:00Z",
        ] {
            assert!(
                matches!(s.state(&g, utc(inside)), WindowState::Open { .. }),
                "{inside}"
            );
        }
        assert_eq!(
            s.state(&g, utc("2026-12-07T00:30:00Z")),
            WindowState::Open {
                until: Some(utc("2026-12-07T02:00:00Z"))
            }
        );
        assert!(matches!(
            s.state(&g, utc("2026-12-07T02:00:00Z")),
            WindowState::Closed { .. }
        ));
        // Saturday to Sunday across midnight.
        let s = schedule("w: days=Sat start_time=22:00 length_minutes=240", "UTC");
        assert!(matches!(
            s.state(&g, utc("2026-12-06T01:00:00Z")),
            WindowState::Open { .. }
        ));
        assert!(matches!(
            s.state(&g, utc("2026-12-06T02:00:00Z")),
            WindowState::Closed { .. }
        ));
    }

    #[test]
    fn overlapping_windows_join_and_the_last_close_counts() {
        let s = schedule(
            "w: days=Tue start_time=01:00 length_minutes=120; w: days=Tue start_time=02:00 length_minutes=120",
            "UTC",
        );
        // 2026-12-08 is a Tuesday.
        assert_eq!(
            s.state(&group("w"), utc("2026-12-08T01:30:00Z")),
            WindowState::Open {
                until: Some(utc("2026-12-08T04:00:00Z"))
            }
        );
        let always = schedule(
            "w: days=Mon,Tue,Wed,Thu,Fri,Sat,Sun start_time=00:00 length_minutes=1440",
            "UTC",
        );
        assert_eq!(
            always.state(&group("w"), utc("2026-12-08T01:30:00Z")),
            WindowState::Open { until: None }
        );
    }

    #[test]
    fn the_wildcard_serves_groups_without_windows_of_their_own() {
        let s = schedule(
            "db: days=Wed start_time=03:00 length_minutes=60; *: days=Sat start_time=00:00 length_minutes=1440",
            "UTC",
        );
        let saturday = utc("2026-12-05T12:00:00Z");
        assert!(matches!(
            s.state(&group("db"), saturday),
            WindowState::Closed { .. }
        ));
        assert!(matches!(
            s.state(&group("web"), saturday),
            WindowState::Open { .. }
        ));
    }

    #[test]
    fn europe_spring_forward_skips_a_window_in_the_missing_hour() {
        // Berlin, 2027-03-28: 02:00 local jumps to 03:00.
        let s = schedule(
            "w: days=Sun start_time=02:15 length_minutes=30",
            "Europe/Berlin",
        );
        let g = group("w");
        // Sunday 01:59 local (00:59Z): the window does not happen that day;
        // the next is a week later, 02:15 CEST = 00:15Z.
        assert_eq!(
            s.state(&g, utc("2027-03-28T00:59:00Z")),
            WindowState::Closed {
                opens: Some(utc("2027-04-04T00:15:00Z"))
            }
        );
        // A window reaching past the gap opens when the clock lands in it.
        let s = schedule(
            "w: days=Sun start_time=02:30 length_minutes=60",
            "Europe/Berlin",
        );
        assert_eq!(
            s.state(&g, utc("2027-03-28T00:59:00Z")),
            WindowState::Closed {
                opens: Some(utc("2027-03-28T01:00:00Z"))
            }
        );
        assert_eq!(
            s.state(&g, utc("2027-03-28T01:00:00Z")),
            WindowState::Open {
                until: Some(utc("2027-03-28T01:30:00Z"))
            }
        );
    }

    /// The "none of them can happen" answer is a guard: a weekly window
    /// skipped by a clock change (an hour, or Samoa's whole 2011-12-30)
    /// still opens a week later, inside the search horizon. Swept hour by
    /// hour over ten days around each zone's oddest change.
    #[test]
    fn every_window_opens_again_whatever_the_clock_changes() {
        let zones = [
            ("Europe/Berlin", "2027-03-24T00:00:00Z"),
            ("Australia/Lord_Howe", "2026-10-01T00:00:00Z"),
            ("America/Santiago", "2026-09-02T00:00:00Z"),
            ("Pacific/Apia", "2011-12-26T00:00:00Z"),
        ];
        for (zone, from) in zones {
            for day in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] {
                for start in ["00:00", "02:15", "12:00", "23:59"] {
                    let spec = format!("w: days={day} start_time={start} length_minutes=1");
                    let s = schedule(&spec, zone);
                    for hour in 0..240 {
                        let at = utc(from).plus(std::time::Duration::from_secs(hour * 3600));
                        let state = s.state(&group("w"), at);
                        assert!(
                            !matches!(
                                state,
                                WindowState::Closed { opens: None }
                                    | WindowState::Open { until: None }
                            ),
                            "{zone} {spec} at {at:?}: {state:?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn europe_fall_back_repeats_a_window_in_the_doubled_hour() {
        // Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET.
        let s = schedule(
            "w: days=Sun start_time=02:15 length_minutes=30",
            "Europe/Berlin",
        );
        let g = group("w");
        // First pass: 02:15 CEST = 00:15Z, until 00:45Z.
        assert_eq!(
            s.state(&g, utc("2026-10-25T00:20:00Z")),
            WindowState::Open {
                until: Some(utc("2026-10-25T00:45:00Z"))
            }
        );
        // Between the passes it opens again at 02:15 CET = 01:15Z.
        assert_eq!(
            s.state(&g, utc("2026-10-25T00:50:00Z")),
            WindowState::Closed {
                opens: Some(utc("2026-10-25T01:15:00Z"))
            }
        );
        assert!(matches!(
            s.state(&g, utc("2026-10-25T01:20:00Z")),
            WindowState::Open { .. }
        ));
    }

    #[test]
    fn america_changes_skip_and_repeat_too() {
        // New York, 2027-03-14: 02:00 EST jumps to 03:00 EDT.
        let s = schedule(
            "w: days=Sun start_time=02:00 length_minutes=60",
            "America/New_York",
        );
        let g = group("w");
        let before = utc("2027-03-14T06:30:00Z"); // 01:30 EST
        assert_eq!(
            s.state(&g, before),
            WindowState::Closed {
                opens: Some(utc("2027-03-21T06:00:00Z")) // 02:00 EDT a week later
            }
        );
        // 2026-11-01: 02:00 EDT goes back to 01:00 EST; a 01:00 window happens twice.
        let s = schedule(
            "w: days=Sun start_time=01:00 length_minutes=30",
            "America/New_York",
        );
        assert_eq!(
            s.state(&g, utc("2026-11-01T05:10:00Z")), // 01:10 EDT
            WindowState::Open {
                until: Some(utc("2026-11-01T05:30:00Z"))
            }
        );
        assert_eq!(
            s.state(&g, utc("2026-11-01T05:40:00Z")), // 01:40 EDT
            WindowState::Closed {
                opens: Some(utc("2026-11-01T06:00:00Z")) // 01:00 EST
            }
        );
        assert_eq!(text(utc("2026-11-01T06:00:00Z")), "2026-11-01T06:00:00Z");
        assert_eq!(
            s.local_text(utc("2026-11-01T06:00:00Z")),
            "Sun 2026-11-01 01:00 America/New_York"
        );
    }

    #[test]
    fn every_bad_input_is_refused_with_its_reason() {
        let known = |g: &GroupName| {
            if g.as_str() == "unknown" {
                Err(format!("group '{g}' is not configured by FLEETLOCK_GROUPS"))
            } else {
                Ok(())
            }
        };
        for (spec, says) in [
            (
                "w: days=Funday start_time=22:00 length_minutes=60",
                "'Funday' is not a day",
            ),
            (
                "w: days=Sat start_time=25:00 length_minutes=60",
                "start_time '25:00'",
            ),
            (
                "w: days=Sat start_time=7:5 length_minutes=60",
                "start_time '7:5'",
            ),
            (
                "w: days=Sat start_time=22:60 length_minutes=60",
                "start_time '22:60'",
            ),
            (
                "w: days=Sat start_time=22:00 length_minutes=0",
                "length_minutes '0'",
            ),
            (
                "w: days=Sat start_time=22:00 length_minutes=10081",
                "length_minutes '10081'",
            ),
            (
                "w: days=Sat start_time=22:00 length_minutes=-5",
                "length_minutes '-5'",
            ),
            ("w: start_time=22:00 length_minutes=60", "days= is missing"),
            ("w: days=Sat length_minutes=60", "start_time= is missing"),
            ("w: days=Sat start_time=22:00", "length_minutes= is missing"),
            (
                "w: days=Sat days=Sun start_time=22:00 length_minutes=60",
                "given twice",
            ),
            (
                "w: days=Sat start_time=22:00 length=60",
                "unknown key 'length'",
            ),
            (
                "w days=Sat start_time=22:00 length_minutes=60",
                "does not start with 'GROUP:'",
            ),
            (
                "w: days=Sat start_time=22:00 length_minutes=60;",
                "empty entry",
            ),
            (
                "unknown: days=Sat start_time=22:00 length_minutes=60",
                "not configured",
            ),
            (
                "bad_name: days=Sat start_time=22:00 length_minutes=60",
                "group 'bad_name'",
            ),
        ] {
            let err = Schedule::parse(spec, None, known, false).unwrap_err();
            assert!(err.contains(says), "{spec}: {err}");
        }
        let wildcard = Schedule::parse(
            "*: days=Sat start_time=22:00 length_minutes=60",
            None,
            known,
            false,
        );
        assert!(wildcard.unwrap_err().contains("has no '*'"));
        for (zone, says) in [
            ("localtime", "'localtime' is refused"),
            ("Mars/Olympus", "not a time zone"),
            (
                "Europe/Berlln",
                "'Europe/Berlln' is not a time zone of the IANA database (did you mean 'Europe/Berlin'?)",
            ),
        ] {
            let err = Schedule::parse(
                "w: days=Sat start_time=22:00 length_minutes=60",
                Some(zone),
                known,
                false,
            )
            .unwrap_err();
            assert!(err.contains(says), "{zone}: {err}");
        }
    }

    /// The Terraform module refuses at plan time a zone the function would
    /// refuse at start: infra/time_zones.tf lists the bundled database's
    /// names. `FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones` writes it.
    #[test]
    fn the_modules_time_zones_are_the_bundled_database() {
        let mut zones: Vec<String> = jiff::tz::db()
            .available()
            .map(|name| name.to_string())
            .filter(|name| !name.eq_ignore_ascii_case("localtime"))
            .collect();
        zones.sort();
        zones.dedup();
        assert!(zones.len() > 400, "{} zones", zones.len());
        for zone in &zones {
            assert!(
                Schedule::in_zone(Some(zone)).is_ok(),
                "{zone} is listed and refused"
            );
        }
        let mut text = String::from(
            "# Generated from the time zone database the function bundles (jiff's\n\
             # tzdb-bundle-always); src/domain/windows.rs keeps it equal:\n\
             # FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones rewrites it.\n\n\
             locals {\n  time_zones = [\n",
        );
        for zone in &zones {
            text.push_str(&format!("    \"{zone}\",\n"));
        }
        text.push_str("  ]\n}\n");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/infra/time_zones.tf");
        if std::env::var_os("FLEETLOCK_WRITE_DOCS").is_some() {
            std::fs::write(path, &text).unwrap();
            return;
        }
        let module = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            module == text,
            "infra/time_zones.tf is not the bundled database's list: run \
             FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones"
        );
    }

    #[test]
    fn a_zone_without_transitions_answers_too() {
        // Etc/GMT-1 is UTC+1 all year: no transitions to visit.
        let s = schedule("w: days=Sat start_time=23:00 length_minutes=1", "Etc/GMT-1");
        assert_eq!(
            s.state(&group("w"), utc("2026-12-07T10:00:00Z")),
            WindowState::Closed {
                opens: Some(utc("2026-12-12T22:00:00Z"))
            }
        );
    }

    #[test]
    fn days_read_as_zincati_writes_them() {
        let w = Window::parse("days=sat,Sunday,MON start_time=00:00 length_minutes=10080").unwrap();
        assert_eq!(
            w.to_string(),
            "days=Mon,Sat,Sun start_time=00:00 length_minutes=10080"
        );
        assert_eq!(
            Schedule::parse(
                "w: days=Mon start_time=00:00 length_minutes=1",
                None,
                |_| Ok(()),
                false
            )
            .unwrap()
            .zone_name(),
            "UTC"
        );
    }

    #[test]
    fn only_a_utc_schedule_is_utc() {
        assert!(Schedule::in_zone(None).unwrap().is_utc());
        assert!(Schedule::in_zone(Some("Etc/UTC")).unwrap().is_utc());
        assert!(!Schedule::in_zone(Some("Europe/Berlin")).unwrap().is_utc());
    }
}
