//! The time the lock decides by: milliseconds since the Unix epoch, and the
//! clock they are read from (the system's, or one a test moves).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch: when a holder took its slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub u64);

impl Timestamp {
    pub fn now() -> Self {
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Self(u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX))
    }

    /// How long before `now` this was; zero if the clocks disagree.
    pub(crate) fn age_at(self, now: Timestamp) -> Duration {
        Duration::from_millis(now.0.saturating_sub(self.0))
    }

    /// `2026-11-30T05:12:09Z`: UTC, whole seconds, always the same width.
    pub(crate) fn to_rfc3339(self) -> String {
        let seconds = i64::try_from(self.0 / 1000).unwrap_or(i64::MAX);
        match jiff::Timestamp::from_second(seconds) {
            Ok(at) => at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            Err(_) => self.0.to_string(),
        }
    }

    /// `2026-11-30T05:12:09.042Z`: UTC to the millisecond, for events.
    pub fn to_rfc3339_millis(self) -> String {
        let millis = i64::try_from(self.0).unwrap_or(i64::MAX);
        match jiff::Timestamp::from_millisecond(millis) {
            Ok(at) => at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
            Err(_) => self.0.to_string(),
        }
    }

    pub fn plus(self, span: Duration) -> Timestamp {
        let millis = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(millis))
    }

    pub fn minus(self, span: Duration) -> Timestamp {
        let millis = u64::try_from(span.as_millis()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_sub(millis))
    }
}

/// Where the service reads the time: the system clock in production, a clock
/// the tests move, so that no test sleeps through a settle time.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A text that is not a duration in `h`, `m`, `s` units.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not a duration like 90s, 10m, 1h or 1h30m")]
pub struct NotADuration(pub String);

/// A duration in `h`, `m`, `s` units, of any length.
pub(crate) fn parse_span(text: &str) -> Result<Duration, NotADuration> {
    let explain = || NotADuration(text.to_owned());
    let mut rest = text.trim();
    if rest.is_empty() {
        return Err(explain());
    }
    let mut total = 0u64;
    let mut units_left = "hms";
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .ok_or_else(explain)?;
        if digits == 0 {
            return Err(explain());
        }
        let value: u64 = rest[..digits].parse().map_err(|_| explain())?;
        let unit = rest[digits..].chars().next().ok_or_else(explain)?;
        let at = units_left.find(unit).ok_or_else(explain)?;
        units_left = &units_left[at + 1..];
        let scale = match unit {
            'h' => 3600,
            'm' => 60,
            _ => 1,
        };
        total = value
            .checked_mul(scale)
            .and_then(|s| total.checked_add(s))
            .ok_or_else(explain)?;
        rest = &rest[digits + 1..];
    }
    Ok(Duration::from_secs(total))
}

/// A setting's duration exactly, in the syntax [`parse_span`] reads: `1h30m`,
/// `90s`, `0s`.
pub(crate) fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let mut out = String::new();
    for (value, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if value > 0 {
            out.push_str(&format!("{value}{unit}"));
        }
    }
    if out.is_empty() { "0s".into() } else { out }
}

/// A duration for people, written as the settings write one (and `d` for
/// days), to its two largest units: `45s`, `2m5s`, `3h12m`, `2d1h`; below a
/// second, `250ms` (what a test sets). Settings themselves are shown exactly,
/// by [`format_duration`].
pub(crate) fn human_duration(duration: Duration) -> String {
    if duration < Duration::from_secs(1) {
        return format!("{}ms", duration.as_millis());
    }
    let secs = duration.as_secs();
    let units = [
        (secs / 86_400, 'd'),
        (secs / 3600 % 24, 'h'),
        (secs / 60 % 60, 'm'),
        (secs % 60, 's'),
    ];
    let first = units.iter().position(|(value, _)| *value > 0).unwrap_or(3);
    units[first..]
        .iter()
        .take(2)
        .filter(|(value, _)| *value > 0)
        .map(|(value, unit)| format!("{value}{unit}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_settings_write_them_to_two_units() {
        let secs = Duration::from_secs;
        assert_eq!(human_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(human_duration(secs(45)), "45s");
        assert_eq!(human_duration(secs(60)), "1m");
        assert_eq!(human_duration(secs(125)), "2m5s");
        assert_eq!(human_duration(secs(3 * 3600 + 12 * 60 + 5)), "3h12m");
        assert_eq!(human_duration(secs(3600 + 5)), "1h");
        assert_eq!(human_duration(secs(2 * 86_400 + 3600)), "2d1h");
    }
}
