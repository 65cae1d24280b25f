//! The settle gate: after a release freed a slot, no new slot until the
//! group's settle time (`FLEETLOCK_SETTLE`) has passed, one period for the
//! whole group. Its setting's parse, its rule over the group's record, its
//! refusal, and its words in `config check` and the regions' digest.

use std::time::Duration;

use super::gates::{Gate, GroupSetting, Shown};
use super::{GroupRecord, GroupRules, Refusal};
use crate::domain::error::Error;
use crate::domain::input::ClientParams;
use crate::domain::time::{NotADuration, Timestamp, format_duration, parse_span};
use serde_json::{Value, json};

/// The longest settle time: past a day, pausing the group says it better.
pub(crate) const MAX_SETTLE: Duration = Duration::from_secs(24 * 3600);

/// `90s`, `10m`, `1h`, `1h30m`, `0s`: whole numbers with units h, m, s, in
/// that order, up to [`MAX_SETTLE`]. A settle time, and every other
/// duration of up to a day a setting or a command takes.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let duration = parse_span(text)?;
    if duration > MAX_SETTLE {
        return Err(DurationError::LongerThanADay(text.to_owned()));
    }
    Ok(duration)
}

/// Why a duration of up to a day was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error(transparent)]
    NotADuration(#[from] NotADuration),
    #[error("'{0}' is longer than 24h; pause the group instead")]
    LongerThanADay(String),
}

impl GroupRecord {
    /// When the group's settle period ends, if it has not yet at `now`. It
    /// runs from the arrival of the latest release that freed a slot; a
    /// request that arrived before that release (its write landed late)
    /// is inside it even with no settle time at all.
    pub(crate) fn settling_until(&self, settle: Duration, now: Timestamp) -> Option<Timestamp> {
        let until = self.last_release?.plus(settle);
        (until > now).then_some(until)
    }

    /// The settle gate's refusal, while the period runs.
    pub(super) fn settle_refusal(&self, settle: Duration, now: Timestamp) -> Option<Refusal> {
        let until = self.settling_until(settle, now)?;
        Some(Refusal::Settling { until })
    }
}

/// The settle gate in the list of gates.
pub(crate) struct SettleGate;

impl SettleGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_SETTLE";
}

/// How `SettleGate::VARIABLE` sets a group's rules.
static SETTING: GroupSetting = GroupSetting {
    variable: SettleGate::VARIABLE,
    what: "a settle time",
    example: "workers=10m,*=2m",
    read: |text, rules| {
        rules.settle = parse_duration(text)?;
        Ok(())
    },
    copy: |from, to| to.settle = from.settle,
};

impl Gate for SettleGate {
    fn setting(&self) -> Option<&'static GroupSetting> {
        Some(&SETTING)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        Some(format!(", settle {}", format_duration(rules.settle)))
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        Some(format!("settle={}", format_duration(rules.settle)))
    }

    /// While the group settles, until when (once the configuration is
    /// known: the settle time is the deployed one).
    fn status(&self, group: &Shown) -> Vec<String> {
        let until =
            (group.rules).and_then(|rules| group.record.settling_until(rules.settle, group.now));
        until
            .map(|until| {
                format!(
                    "{} settles until {} (last release {})",
                    group.name,
                    until.to_rfc3339(),
                    group
                        .record
                        .last_release
                        .map_or("-".into(), Timestamp::to_rfc3339)
                )
            })
            .into_iter()
            .collect()
    }

    /// The settle time, the latest release, and the period's end.
    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let record = group.record;
        let until = (group.rules).and_then(|rules| record.settling_until(rules.settle, group.now));
        vec![
            (
                "settle_seconds",
                json!(group.rules.map(|r| r.settle.as_secs())),
            ),
            (
                "last_release_at",
                json!(record.last_release.map(Timestamp::to_rfc3339)),
            ),
            ("settles_until", json!(until.map(Timestamp::to_rfc3339))),
        ]
    }
}

/// What a node hears while its group settles: until when, and the settle
/// time.
pub(crate) fn refusal(params: &ClientParams, rules: GroupRules, until: Timestamp) -> Error {
    Error::Settling {
        group: params.group.to_string(),
        until: until.to_rfc3339(),
        settle: format_duration(rules.settle),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::input::{GroupName, NodeId};

    #[test]
    fn a_settle_time_is_at_most_a_day() {
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("24h"), Ok(MAX_SETTLE));
        let refused = parse_duration("24h1s").unwrap_err();
        assert_eq!(refused, DurationError::LongerThanADay("24h1s".into()));
        assert_eq!(
            refused.to_string(),
            "'24h1s' is longer than 24h; pause the group instead"
        );
        assert_eq!(
            parse_duration("1d").unwrap_err().to_string(),
            "'1d' is not a duration like 90s, 10m, 1h or 1h30m"
        );
    }

    #[test]
    fn the_period_runs_from_the_latest_release_and_holds_an_earlier_request_back() {
        let mut record = GroupRecord::default();
        let minute = Duration::from_secs(60);
        assert_eq!(record.settling_until(minute, Timestamp(1_000)), None);
        record.last_release = Some(Timestamp(1_000));
        assert_eq!(
            record.settling_until(minute, Timestamp(1_000)),
            Some(Timestamp(61_000))
        );
        assert_eq!(record.settling_until(minute, Timestamp(61_000)), None);
        // A request that arrived before the release (its write landed
        // late) is inside the period even with no settle time at all.
        assert_eq!(
            record.settling_until(Duration::ZERO, Timestamp(999)),
            Some(Timestamp(1_000))
        );
    }

    #[test]
    fn the_refusal_says_until_when_and_the_settle_time() {
        let params = ClientParams {
            id: NodeId::parse("n1").unwrap(),
            group: GroupName::parse("workers").unwrap(),
        };
        let rules = GroupRules {
            settle: Duration::from_secs(600),
            ..GroupRules::default()
        };
        let refused = refusal(&params, rules, Timestamp(61_000));
        assert_eq!(refused.kind(), "settling");
        assert_eq!(
            refused,
            Error::Settling {
                group: "workers".into(),
                until: Timestamp(61_000).to_rfc3339(),
                settle: "10m".into(),
            }
        );
    }
}
