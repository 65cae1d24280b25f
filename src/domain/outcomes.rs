//! What the lock answers: to a request for a slot, to a drain's
//! confirmation, to a release.

use crate::domain::canary::Wave;
use crate::domain::input::NodeId;
use crate::domain::time::Timestamp;

/// The answer to a request for a slot: what happened to it, or the one
/// refusal of the gate that held the node back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Acquire {
    /// The node took a free slot.
    Granted,
    /// The group was full, and `holder`, holding since `since`, had kept
    /// its slot past the group's lease: the node took that slot in its place
    /// (the count unchanged).
    TakesExpired { holder: NodeId, since: Timestamp },
    /// The node already held a slot; it keeps that one.
    AlreadyHeld,
    /// A free slot, in a group with a drain gate: the node reserved it and
    /// waits for its drain to be confirmed.
    Reserves,
    /// The node's reservation, since `since`, passed its drain timeout in a
    /// group that grants on timeout (or whose drain gate was removed): the
    /// node takes its slot undrained.
    DrainTimedOut { since: Timestamp },
    /// The node took no slot: the gate's refusal.
    Refused(Refusal),
}

/// Why a node took no slot: the one type every gate refuses with, from its
/// rule over the record to the outcome word the log line and the metric
/// carry ([`Refusal::word`]). The sentence the node hears is built from it
/// at the service's edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Every slot is taken by other nodes.
    Full,
    /// A person keeps this node out of the rollout.
    Excluded,
    /// A person or an alarm paused the group.
    Paused,
    /// A slot was given back less than the settle time ago.
    Settling { until: Timestamp },
    /// The node's slot is reserved since `since` and waits for its drain,
    /// until `until`; `overdue` past it, when the group holds on timeout.
    Draining {
        since: Timestamp,
        until: Timestamp,
        overdue: bool,
    },
    /// A slot is free (or expired), but the group's maintenance window
    /// closes at `closes`, before a drain begun now would time out.
    WindowTooShort { closes: Timestamp },
    /// The node's slot is returning since `since`: its steady-state came,
    /// its return is not confirmed. It takes no slot again until it is
    /// (due by `until`; `overdue` past it).
    Returning {
        since: Timestamp,
        until: Timestamp,
        overdue: bool,
    },
    /// In a group split by zone: a slot is free (or expired), but nodes of
    /// another zone group, `zone`, are out of service ("" where no grant
    /// recorded which).
    OtherZone { zone: String },
    /// In a group with a canary: the grant would begin the next wave, but
    /// `wave` (the canary, or the wave before) is not back in service yet.
    WaveOut { wave: Wave },
    /// In a group with a canary: `wave` is back, and the next one begins
    /// once its bake is over, at `until`.
    Baking { wave: Wave, until: Timestamp },
    /// The group has no item yet, only `*` covers it, and as many such
    /// groups as allowed exist already: nothing was stored.
    TooManyGroups { limit: u32 },
}

impl Refusal {
    /// The outcome word of the refusal, as the log line and the `Outcome`
    /// metric carry it (a reservation past its drain timeout, in a group
    /// that holds on timeout, is counted apart for the alarm).
    pub fn word(&self) -> &'static str {
        match self {
            Refusal::Full => "full",
            Refusal::Paused => "paused",
            Refusal::Excluded => "excluded",
            Refusal::Settling { .. } => "settling",
            Refusal::OtherZone { .. } => "other_zone",
            Refusal::WaveOut { .. } => "wave_out",
            Refusal::Baking { .. } => "baking",
            Refusal::TooManyGroups { .. } => "too_many_groups",
            Refusal::Draining { overdue: false, .. } => "waiting_for_drain",
            Refusal::Draining { overdue: true, .. } => "drain_overdue",
            Refusal::WindowTooShort { .. } => "window_closing",
            Refusal::Returning { .. } => "waiting_for_return",
        }
    }
}

/// The answer to a confirmation that a node was drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drained {
    /// The reservation is now the node's slot.
    Granted,
    /// The node holds its slot already (confirmed before, or granted on
    /// timeout): nothing changed.
    AlreadyGranted,
    /// The node rebooted already and its slot is returning (since
    /// `since`) until its return is confirmed: the drain confirmed is of a
    /// reservation that ended. Nothing changed.
    Returning { since: Timestamp },
    /// The node holds no reservation: it never asked, or its reservation
    /// ended (its steady-state, a release). Nothing changed.
    NoReservation,
    /// The node waits since `since`, not since the time confirmed: this
    /// confirmation is of an earlier reservation that has ended.
    OtherReservation { since: Timestamp },
    /// A person keeps the node out of the rollout: the reservation stays.
    Excluded,
    /// The group is paused: the reservation stays, confirm again after.
    Paused,
}

/// The answer to a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Released,
    /// The node held nothing; that is fine and nothing changed.
    NotHeld,
    /// In a group with a return gate: the slot now counts as returning,
    /// until the node's return is confirmed.
    Returning,
    /// The node's slot was returning already: nothing changed (Zincati
    /// reports steady-state at every start).
    StillReturning,
}

/// The answer to a confirmation that a node is back in service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returned {
    /// The return is over: the slot is free.
    Freed,
    /// The node's slot is not returning: it still holds it (`holds`: no
    /// steady-state yet), or it has none (confirmed before, or released).
    /// Nothing changed.
    NotReturning { holds: bool },
    /// The node returns since `since`, not since the time confirmed: this
    /// confirmation is of an earlier return. Nothing changed.
    OtherReturn { since: Timestamp },
}
