//! The one error type of the service. Each variant has a bounded `kind` (Zincati
//! uses it as a metrics label) and one HTTP status; `value` is a sentence for a
//! person and never carries internals such as SDK error dumps.

use crate::domain::names::Meant;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No valid client credentials (HTTP Basic, from Zincati's base_url):
    /// none were sent, or those sent were not accepted.
    Unauthorized(Credentials),
    /// The body is not UTF-8 JSON of the FleetLock shape.
    InvalidBody(String),
    InvalidId(String),
    InvalidGroup(String),
    /// A valid group name that this server is not configured to coordinate;
    /// `meant` is the configured group it most likely means
    /// ([`crate::domain::meaning`]: `*` never makes a group of such a name).
    UnknownGroup {
        group: String,
        meant: Option<Meant>,
    },
    /// The client's credential is not scoped to this group.
    ForbiddenGroup(String),
    /// A group only `*` covers, new, while as many such groups as allowed
    /// have an item already.
    TooManyGroups {
        group: String,
        limit: u32,
    },
    /// Every slot of the group is taken: an expected answer, Zincati retries.
    SemaphoreFull {
        group: String,
        holders: usize,
        slots: u32,
        /// With a lease: when the longest-held slot passes to the next
        /// node that asks, and the lease (`2026-11-30T11:12:09Z`, `6h`).
        lease_ends: Option<(String, String)>,
    },
    /// The node's slot was taken over past its lease by another node, and
    /// every slot is taken now: the node does not hold what it was granted.
    SlotTaken {
        group: String,
        id: String,
        /// When its slot was taken, and the lease it had run past.
        taken_at: String,
        lease: Option<String>,
    },
    /// In a group split by zone: a slot is free, but nodes of another zone
    /// are out of service; this node's zone waits until they are back.
    OtherZoneOut {
        group: String,
        /// The zone group out of service ("" where no grant recorded it),
        /// and the node's own.
        out: String,
        asked: String,
    },
    /// A person or an alarm paused the group: no new slots until resumed.
    GroupPaused {
        group: String,
        /// Who paused and since when, as a phrase ("by alice since ...: why").
        why: String,
    },
    /// A person keeps this node out of the rollout (`fleetlock exclude`);
    /// the rest of the group goes on.
    NodeExcluded {
        group: String,
        id: String,
        /// Who excluded it and since when, as a phrase ("by alice since ...: why").
        why: String,
    },
    /// The node's slot is reserved and waits for a hook or a person to
    /// confirm that the node was drained (`FLEETLOCK_DRAIN`): never a 2xx
    /// before that, since Zincati reboots on any 2xx.
    WaitingForDrain {
        group: String,
        id: String,
        /// When the reservation was made, and when its drain times out.
        since: String,
        until: String,
        /// This request made the reservation.
        reserved_now: bool,
        /// Past the timeout, in a group that holds on timeout.
        overdue: bool,
    },
    /// The node's slot is returning (`FLEETLOCK_RETURN`): its steady-state
    /// came, and nobody confirmed yet that it is back in service. It takes
    /// no new slot before that.
    WaitingForReturn {
        group: String,
        id: String,
        /// When the return began, and when it is due.
        since: String,
        until: String,
        /// Past the return timeout: the group's rollout stops.
        overdue: bool,
    },
    /// The group's maintenance window closes before a drain begun now
    /// would time out: no new drain begins (kind `outside_maintenance_window`).
    WindowClosesBeforeDrain {
        group: String,
        closes: String,
        timeout: String,
    },
    /// In a group with a canary (`FLEETLOCK_CANARY`): the grant would begin
    /// the rollout's next wave, and the wave before (`wave`, as a phrase:
    /// "the canary", "wave 2 (3 nodes)") is not back in service yet
    /// (`until` is `None`), or is back and bakes until `until`.
    WaitingForWave {
        group: String,
        wave: String,
        /// The rollout's plan ("the canary, then 3, then the rest").
        plan: String,
        bake: String,
        until: Option<String>,
    },
    /// A slot of the group was given back less than its settle time ago.
    Settling {
        group: String,
        until: String,
        settle: String,
    },
    /// The group reboots only inside its maintenance windows: decided before
    /// the store, for holders too. `opens` is (UTC, the zone's local time,
    /// unless the zone is UTC).
    OutsideMaintenanceWindow {
        group: String,
        opens: Option<(String, Option<String>)>,
    },
    /// On a global table, another region recorded other deciding settings
    /// for this group (`FLEETLOCK_REGION`): no slot is granted or given
    /// back here until every region serves the same.
    SettingsDiffer {
        group: String,
        region: String,
    },
    /// The lock store did not answer in time or failed: someone should look.
    StoreUnavailable,
    /// Stored data cannot be read or broke an invariant; no slot was granted.
    Internal,
}

/// What a request without valid credentials sent: the two get different
/// sentences, neither of which says whether a name exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// No `Authorization` header.
    Missing,
    /// An `Authorization` header that is not a known name with its secret
    /// (or not HTTP Basic at all).
    NotAccepted,
}

/// `1 slot`, `3 slots`: a count with its noun, in the number it takes.
pub(crate) fn counted(count: u64, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

impl Error {
    /// The closed set of kinds, for documentation and tests.
    pub const KINDS: &'static [&'static str] = &[
        "unauthorized",
        "invalid_body",
        "invalid_id",
        "invalid_group",
        "unknown_group",
        "forbidden_group",
        "too_many_groups",
        "semaphore_full",
        "slot_taken",
        "another_zone_out",
        "group_paused",
        "node_excluded",
        "waiting_for_drain",
        "waiting_for_return",
        "waiting_for_wave",
        "settling",
        "outside_maintenance_window",
        "settings_differ",
        "store_unavailable",
        "internal",
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            Error::Unauthorized(_) => "unauthorized",
            Error::InvalidBody(_) => "invalid_body",
            Error::InvalidId(_) => "invalid_id",
            Error::InvalidGroup(_) => "invalid_group",
            Error::UnknownGroup { .. } => "unknown_group",
            Error::ForbiddenGroup(_) => "forbidden_group",
            Error::TooManyGroups { .. } => "too_many_groups",
            Error::SemaphoreFull { .. } => "semaphore_full",
            Error::SlotTaken { .. } => "slot_taken",
            Error::OtherZoneOut { .. } => "another_zone_out",
            Error::GroupPaused { .. } => "group_paused",
            Error::NodeExcluded { .. } => "node_excluded",
            Error::WaitingForDrain { .. } => "waiting_for_drain",
            Error::WaitingForReturn { .. } => "waiting_for_return",
            Error::WaitingForWave { .. } => "waiting_for_wave",
            Error::WindowClosesBeforeDrain { .. } => "outside_maintenance_window",
            Error::Settling { .. } => "settling",
            Error::OutsideMaintenanceWindow { .. } => "outside_maintenance_window",
            Error::SettingsDiffer { .. } => "settings_differ",
            Error::StoreUnavailable => "store_unavailable",
            Error::Internal => "internal",
        }
    }

    pub(crate) fn status(&self) -> u16 {
        match self {
            Error::Unauthorized(_) => 401,
            Error::InvalidBody(_) | Error::InvalidId(_) | Error::InvalidGroup(_) => 400,
            Error::UnknownGroup { .. } | Error::ForbiddenGroup(_) | Error::TooManyGroups { .. } => {
                403
            }
            // 423 Locked: expected and retried by Zincati; not 429, which API
            // Gateway's own throttling uses without a FleetLock body.
            // Paused, settling and outside a window are refusals Zincati
            // retries, like a full group.
            Error::SemaphoreFull { .. }
            | Error::SlotTaken { .. }
            | Error::OtherZoneOut { .. }
            | Error::GroupPaused { .. }
            | Error::NodeExcluded { .. }
            | Error::WaitingForDrain { .. }
            | Error::WaitingForReturn { .. }
            | Error::WaitingForWave { .. }
            | Error::WindowClosesBeforeDrain { .. }
            | Error::Settling { .. }
            | Error::OutsideMaintenanceWindow { .. } => 423,
            Error::StoreUnavailable => 503,
            // A deploy's mistake an operator must mend: the 5xx alarm fires.
            Error::SettingsDiffer { .. } | Error::Internal => 500,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind(), self.value())
    }
}

impl std::error::Error for Error {}

mod sentences;

#[cfg(test)]
mod tests;
