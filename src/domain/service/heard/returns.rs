//! What an answer carries of the return gate: a group's returning slots
//! after the decision (the refusal of a returning node is the gate's,
//! `lock::returns::refusal`).

use crate::domain::lock::GroupRecord;
use crate::domain::lock::GroupRules;
use crate::domain::time::Timestamp;
use std::time::Duration;

/// A group's returning slots as a decision left them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Returns {
    pub(crate) returning: usize,
    /// How long the oldest return has waited for its confirmation.
    pub(crate) oldest: Option<Duration>,
    /// How many returns waited past the group's return timeout.
    pub(crate) overdue: usize,
}

/// The returning slots of a group with a return gate at `now`; `None`
/// without a gate.
pub fn returns(group: &GroupRecord, rules: GroupRules, now: Timestamp) -> Option<Returns> {
    let timeout = rules.return_timeout?;
    Some(Returns {
        returning: group.returning.len(),
        oldest: group
            .returning
            .values()
            .min()
            .map(|since| since.age_at(now)),
        overdue: group
            .returning
            .values()
            .filter(|since| since.plus(timeout) <= now)
            .count(),
    })
}
