//! The settle gate: after a release freed a slot, no new slot until the
//! group's settle time (`FLEETLOCK_SETTLE`) has passed, one period for the
//! whole group.

use super::GroupRecord;
use super::GroupRules;
use super::gates::Gate;
use crate::domain::time::Timestamp;
use crate::domain::time::format_duration;
use std::time::Duration;

impl GroupRecord {
    /// When the group's settle period ends, if it has not yet at `now`. It
    /// runs from the arrival of the latest release that freed a slot; a
    /// request that arrived before that release (its write landed late)
    /// is inside it even with no settle time at all.
    pub(crate) fn settling_until(&self, settle: Duration, now: Timestamp) -> Option<Timestamp> {
        let until = self.last_release?.plus(settle);
        (until > now).then_some(until)
    }
}

/// The settle gate in the list of gates.
pub(crate) struct SettleGate;

impl Gate for SettleGate {
    fn variable(&self) -> &'static str {
        "FLEETLOCK_SETTLE"
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        Some(format!(", settle {}", format_duration(rules.settle)))
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        Some(format!("settle={}", format_duration(rules.settle)))
    }
}
