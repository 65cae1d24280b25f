//! The rules of the reboot lock, with no HTTP and no AWS in sight.
//!
//! A group is a counting semaphore: at most `slots` nodes hold it at once. The
//! lock is recursive (a holder asking again keeps its one slot) and release is
//! idempotent (a node that holds nothing may release, and nothing changes),
//! because Zincati repeats both calls until it gets a 2xx.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::domain::canary::{CanaryRule, Wave};
use crate::domain::input::{NodeId, PauseReason};
pub use crate::domain::outcomes::{Acquire, Drained, Refusal, Release, Returned};
pub use crate::domain::semaphore::Semaphore;
use crate::domain::time::Timestamp;
use crate::domain::zones::ZoneGroup;

// One file per gate: its rules over the record (and its setting's parse
// where it has one), listed in `gates`; the return gate's also hold the stop
// of a rollout, for a return or a canary's wave past its time.

pub(crate) mod canary;
pub(crate) mod drain;
pub(crate) mod exclusion;
pub(crate) mod gates;
pub(crate) mod lease;
pub(crate) mod pause;
pub(crate) mod returns;
pub(crate) mod settle;
pub(crate) mod window;
pub(crate) mod zones;
pub use canary::parse_canary;
use drain::window_refusal;
pub use exclusion::MAX_EXCLUSIONS;
pub use pause::{Pause, RolloutStop, StopCause};
pub use returns::Stopping;

/// What a person did, as it is recorded: a pause (`fleetlock pause`) or a
/// node kept out of its group's rollout (`fleetlock exclude`, where the node
/// takes no new slot while the rest of the group goes on).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ByPerson {
    pub reason: PauseReason,
    pub since: Timestamp,
    /// Who, as they gave it (`--by`, or their login name).
    pub by: String,
}

/// What happens to a reservation whose drain nobody confirmed in time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnDrainTimeout {
    /// Keep refusing the node, and let the alarm wake someone: a node that
    /// was not drained does not reboot (the default).
    #[default]
    Hold,
    /// Grant the slot at the node's next request: the rollout goes on, the
    /// node reboots undrained.
    Grant,
}

impl OnDrainTimeout {
    pub fn as_str(self) -> &'static str {
        match self {
            OnDrainTimeout::Hold => "hold",
            OnDrainTimeout::Grant => "grant",
        }
    }
}

/// A group's drain gate (`FLEETLOCK_DRAIN`): a node's first request for a
/// free slot reserves it, and the slot is granted only once a hook or a
/// person confirms that the node was drained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainRule {
    /// How long a drain may take.
    pub timeout: Duration,
    pub on_timeout: OnDrainTimeout,
    /// Set by the service for one request: the group's maintenance window
    /// closes at this time, before a drain begun now would time out, so no
    /// new drain begins (a drained node would be left out of service until
    /// the next window).
    pub window_closes: Option<Timestamp>,
}

/// What a group's configuration says about new slots.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupRules {
    pub slots: u32,
    /// After any release, no new slot until this long has passed: one settle
    /// period for the whole group, not one per slot.
    pub settle: Duration,
    /// For a group only `*` covers: how many such groups may have an item.
    /// The store counts them, so that a credential scoped to `*` cannot
    /// fill the table with groups nobody configured. `None` for a group the
    /// configuration names.
    pub wildcard_limit: Option<u32>,
    /// How long a holder keeps its slot for sure (`FLEETLOCK_LEASE`), from
    /// its grant or its latest renewal (a holder's own pre-reboot renews
    /// it). Past it, the slot goes to the next node that asks while the
    /// group is full; nobody loses a slot while nobody needs it. `None`:
    /// held until given back, FleetLock's own rule.
    pub lease: Option<Duration>,
    /// The group's drain gate, if it has one.
    pub drain: Option<DrainRule>,
    /// The group's return gate (`FLEETLOCK_RETURN`), as its return
    /// timeout: a node's steady-state leaves its slot counted as returning
    /// until a hook or a person confirms the node is back in service.
    pub return_timeout: Option<Duration>,
    /// In a group split by zone (`FLEETLOCK_ZONES`), set by the service for
    /// one request: the zone group the node asked with. Its nodes go out
    /// only while no other zone group's are.
    pub zone: Option<ZoneGroup>,
    /// The group's canary and waves (`FLEETLOCK_CANARY`), if it has them.
    pub canary: Option<CanaryRule>,
}

/// A group as stored: the state that decides a request for a slot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupRecord {
    pub holders: Semaphore,
    pub pause: Pause,
    /// When a slot of this group was last given back.
    pub last_release: Option<Timestamp>,
    /// The slot count applied at the last grant, for people reading `fleetlock
    /// status`; decisions use the configured count.
    pub slots: Option<u32>,
    /// Nodes a person keeps out of the rollout.
    pub excluded: BTreeMap<NodeId, ByPerson>,
    /// Holders whose slot is reserved, not yet granted: since when each
    /// waits for its drain. Every one is also in `holders` (the slot counts
    /// against the group from the reservation on).
    pub draining: BTreeMap<NodeId, Timestamp>,
    /// Holders that renewed their lease, and when they last did: the lease
    /// runs from the later of this and the grant. The grant time stays what
    /// it was, so a holder's age (and the alarm on it) counts from the grant.
    pub renewed: BTreeMap<NodeId, Timestamp>,
    /// Nodes whose slot another node took over past its lease, and when:
    /// such a node asking again hears that its slot was taken, not only
    /// that the group is full. At most [`MAX_TAKEN`], none older than
    /// [`TAKEN_KEPT`]; a grant or a release of the node clears its mark.
    pub taken: BTreeMap<NodeId, Timestamp>,
    /// Holders that reported steady-state in a group with a return gate,
    /// and since when: each is still in `holders` (its slot counts) until
    /// its return is confirmed ([`GroupRecord::returned`]).
    pub returning: BTreeMap<NodeId, Timestamp>,
    /// Returns that passed their timeout and stopped the group once (the
    /// return's start): a return stops its group once, so a person's
    /// `resume` is not undone by the next sweep.
    pub returns_failed: BTreeMap<NodeId, Timestamp>,
    /// In a group split by zone: the zone group whose nodes hold its slots,
    /// as the latest grant recorded it. Meaningful while any node holds one
    /// (a release leaves it; the next grant to an empty group writes its own).
    pub zone: Option<String>,
    /// In a group with a canary: how many slots the current rollout has
    /// granted (reservations and take-overs count), which tells its wave.
    pub wave_grants: Option<u32>,
    /// In a group with a canary: when the current rollout began (its
    /// canary's grant, or a person's `fleetlock begin-rollout`).
    pub rollout_began: Option<Timestamp>,
}

/// Where a canary rollout stands ([`GroupRecord::rollout_state`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RolloutState {
    pub began: Option<Timestamp>,
    /// The rollout's grants so far.
    pub grants: u32,
    pub waits: WaveWait,
}

/// What the next grant of a running rollout finds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaveWait {
    /// Inside a wave (or the rest): it goes as the slots allow.
    InWave(Wave),
    /// The wave before is out: it waits until that wave is back.
    Out(Wave),
    /// The wave before is back and bakes until then.
    Baking(Wave, Timestamp),
    /// The wave before is back and baked: the next node begins this wave.
    NextMayGo(Wave),
}

/// How many marks of a slot taken over a group keeps (the newest), and for
/// how long: enough to tell a node that lost its slot why, when it asks
/// again, and bounded, as every byte of the item is billed on every call.
pub(crate) const MAX_TAKEN: usize = 10;
pub(crate) const TAKEN_KEPT: Duration = Duration::from_secs(24 * 60 * 60);

impl GroupRecord {
    /// What a request for a slot gets, without changing anything. Which
    /// answer wins when several apply: a node whose slot is returning hears
    /// that it waits for its return (it is out of service already, and goes
    /// down again only once it was back); a holder always hears yes (it keeps its
    /// slot, whatever else holds); a node waiting for its drain hears that
    /// it is excluded, then paused, then that it waits (or, past the drain
    /// timeout, that it waits still or is granted); then an excluded node,
    /// then paused, then settling, then a free slot, then a slot whose lease
    /// ran out, then full. With a drain gate, a free or expired slot is
    /// reserved rather than granted, and only while the maintenance window
    /// stays open for the drain timeout.
    pub(crate) fn decide_acquire(&self, id: &NodeId, rules: GroupRules, now: Timestamp) -> Acquire {
        if let Some(refusal) = self.return_refusal(id, rules.return_timeout, now) {
            return Acquire::Refused(refusal);
        }
        if let Some(&since) = self.draining.get(id) {
            return self.decide_reserved(id, since, rules, now);
        }
        if self.holders.holds(id) {
            return Acquire::AlreadyHeld;
        }
        let held_back = (self.exclusion_refusal(id))
            .or_else(|| self.pause_refusal())
            .or_else(|| self.settle_refusal(rules.settle, now));
        if let Some(refusal) = held_back {
            return Acquire::Refused(refusal);
        }
        // A slot the count allows: a free one, or one held past its lease.
        let outcome = match self.holders.decide_acquire(id, rules.slots) {
            Acquire::Refused(Refusal::Full) => rules
                .lease
                .and_then(|lease| self.expired(lease, rules.slots, now))
                .map_or(Acquire::Refused(Refusal::Full), |(holder, since)| {
                    Acquire::TakesExpired {
                        holder: holder.clone(),
                        since,
                    }
                }),
            outcome => outcome,
        };
        let replaced = match &outcome {
            Acquire::Granted => None,
            Acquire::TakesExpired { holder, .. } => Some(holder),
            _ => return outcome,
        };
        // The gates on a slot the count allows, in the order of answers.
        let gated = (rules
            .zone
            .and_then(|zone| self.zone_refusal(zone, replaced)))
        .or_else(|| {
            rules
                .canary
                .and_then(|canary| self.wave_refusal(canary, now))
        })
        .or_else(|| rules.drain.and_then(window_refusal));
        match (gated, rules.drain) {
            (Some(refusal), _) => Acquire::Refused(refusal),
            (None, Some(_)) if outcome == Acquire::Granted => Acquire::Reserves,
            (None, _) => outcome,
        }
    }

    pub(crate) fn acquire(&mut self, id: &NodeId, rules: GroupRules, now: Timestamp) -> Acquire {
        let outcome = self.decide_acquire(id, rules, now);
        // Each gate's update on a slot taken, in its own file.
        if matches!(
            outcome,
            Acquire::Granted | Acquire::Reserves | Acquire::TakesExpired { .. }
        ) {
            self.record_zone(rules.zone);
            if let Some(canary) = rules.canary {
                self.count_wave_grant(canary, now);
            }
        }
        match &outcome {
            Acquire::Granted => {
                self.holders.acquire(id, rules.slots, now);
                self.forget_marks(id);
            }
            Acquire::Reserves => {
                self.holders.acquire(id, rules.slots, now);
                self.forget_marks(id);
                self.reserve(id, now);
            }
            Acquire::TakesExpired { holder, .. } => {
                self.take_over(holder, id, now);
                self.forget_marks(id);
                if rules.drain.is_some() {
                    self.reserve(id, now);
                }
            }
            // The reservation recorded the slots it was made under, as a
            // drain's confirmation leaves them.
            Acquire::DrainTimedOut { .. } => {
                self.grant_reserved(id, now);
                return outcome;
            }
            Acquire::AlreadyHeld if self.renews(id, rules) => {
                self.renew(id, now);
                return outcome;
            }
            _ => return outcome,
        }
        self.slots = Some(rules.slots);
        outcome
    }

    /// A node that takes a slot starts afresh: no renewal of an earlier
    /// slot, no mark of a slot taken from it.
    fn forget_marks(&mut self, id: &NodeId) {
        self.renewed.remove(id);
        self.taken.remove(id);
    }

    /// A release that arrived at `now` frees the node's slot only if it was
    /// granted no later than that: a release whose write lands late never
    /// frees a newer grant of the same node. A release that frees a slot
    /// starts the group's settle period again, and never moves its start
    /// backwards: a late write of an older release leaves the newer time.
    ///
    /// With `returns` (a node's steady-state in a group with a return
    /// gate), the slot is not freed: it counts as returning from `now`
    /// until [`GroupRecord::returned`], and a steady-state of a node already
    /// returning changes nothing. Without (a person's `fleetlock release`,
    /// or a group whose gate was removed), a returning slot is freed too.
    pub(crate) fn release(&mut self, id: &NodeId, returns: bool, now: Timestamp) -> Release {
        match self.holders.held_since(id) {
            Some(granted) if granted <= now => {
                if returns {
                    return self.begin_return(id, now);
                }
                self.free(id, now);
                Release::Released
            }
            _ => Release::NotHeld,
        }
    }

    /// The slot of `id` is given back at `now`: no holder, no mark, and the
    /// settle period starts again (never backwards).
    fn free(&mut self, id: &NodeId, now: Timestamp) {
        self.holders.release(id);
        self.draining.remove(id);
        self.returning.remove(id);
        self.returns_failed.remove(id);
        self.forget_marks(id);
        self.last_release = Some(self.last_release.map_or(now, |last| last.max(now)));
    }
}

#[cfg(test)]
mod tests;
