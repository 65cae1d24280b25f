//! What a node hears of the drain gate: its slot reserved (worded by the
//! gate, `lock::drain::refusal`), the timeout that granted it, and how
//! many reserved slots are overdue.

use super::Outcome;
use crate::domain::error::Error;
use crate::domain::input::ClientParams;
use crate::domain::lock::GroupRecord;
use crate::domain::lock::GroupRules;
use crate::domain::time::Timestamp;
use std::time::Duration;

/// A slot reserved since `since`: the node waits for its drain.
pub(super) fn reserved(
    params: &ClientParams,
    rules: GroupRules,
    since: Timestamp,
) -> (Outcome, Option<Error>) {
    tracing::info!(
        group = %params.group,
        id = %params.id.shown(),
        "slot reserved: the node waits for its drain to be confirmed"
    );
    (
        Outcome::Reserved,
        Some(crate::domain::lock::drain::refusal(
            params, rules, since, true, false,
        )),
    )
}

/// A grant on a drain's timeout: the node reboots undrained, and the
/// operator finds it in the log.
pub(super) fn log_drain_timed_out(params: &ClientParams, waited: Duration) {
    tracing::warn!(
        group = %params.group,
        id = %params.id.shown(),
        waited_s = waited.as_secs(),
        "drain timed out: nobody confirmed the node's drain in time, and the group \
         grants on timeout; the node reboots undrained"
    );
}

/// How many reservations of a group with a drain gate waited past its
/// timeout at `now`; `None` without a gate.
pub fn drains_overdue(group: &GroupRecord, rules: GroupRules, now: Timestamp) -> Option<usize> {
    let drain = rules.drain?;
    Some(
        group
            .draining
            .values()
            .filter(|since| since.plus(drain.timeout) <= now)
            .count(),
    )
}
