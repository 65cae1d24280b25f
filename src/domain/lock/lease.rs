//! The lease gate: its setting (`FLEETLOCK_LEASE`, a lease per group) and
//! its rules over a group's record: which slots ran past their lease, when
//! a lease began, the marks of slots taken over, and which request renews
//! a lease.

use std::time::Duration;

use super::gates::{Gate, GroupSetting, Shown};
use super::{GroupRecord, GroupRules, MAX_TAKEN, TAKEN_KEPT};
use crate::domain::input::NodeId;
use crate::domain::time::format_duration;
use crate::domain::time::{NotADuration, Timestamp, parse_span};
use serde_json::{Value, json};

/// The shortest lease. A node that took its slot may wait up to 10 minutes
/// for logged-in users before it reboots, then boots and tells the server
/// at Zincati's start, retried every 5 minutes: a shorter lease would give
/// a slot away while its node is still rebooting.
pub(crate) const MIN_LEASE: Duration = Duration::from_secs(30 * 60);

/// The longest lease: a week. Past that, `fleetlock release` says it better.
pub(crate) const MAX_LEASE: Duration = Duration::from_secs(7 * 24 * 3600);

/// A lease, written as [`parse_duration`] reads it, from [`MIN_LEASE`] to
/// [`MAX_LEASE`].
pub(crate) fn parse_lease(text: &str) -> Result<Duration, LeaseError> {
    let lease = parse_span(text)?;
    if lease < MIN_LEASE {
        return Err(LeaseError::TooShort(text.to_owned()));
    }
    if lease > MAX_LEASE {
        return Err(LeaseError::TooLong(text.to_owned()));
    }
    Ok(lease)
}

/// Why a lease was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LeaseError {
    #[error(transparent)]
    NotADuration(#[from] NotADuration),
    #[error(
        "lease '{0}' is shorter than 30m: a node may still be rebooting then, and its slot \
         would go to another node; leave the group out of FLEETLOCK_LEASE for no lease"
    )]
    TooShort(String),
    #[error(
        "lease '{0}' is longer than a week (168h); release a stuck slot with 'fleetlock \
         release' instead"
    )]
    TooLong(String),
}

impl GroupRecord {
    /// The holder whose slot a newcomer may take at `now` past `lease`, and
    /// its grant time: [`Self::longest_leased`], once its lease has run out.
    pub(crate) fn expired(
        &self,
        lease: Duration,
        slots: u32,
        now: Timestamp,
    ) -> Option<(&NodeId, Timestamp)> {
        self.longest_leased(slots)
            .filter(|(_, _, start)| start.plus(lease) <= now)
            .map(|(id, granted, _)| (id, granted))
    }

    /// The granted slot whose lease started longest ago (at its grant, or
    /// at its latest renewal): (holder, grant, lease start). A reservation
    /// is never taken over: its node has not rebooted, and its drain timeout
    /// decides what happens; nor is any slot of a group holding more than
    /// its `slots` (a lowered count).
    pub(crate) fn longest_leased(&self, slots: u32) -> Option<(&NodeId, Timestamp, Timestamp)> {
        if self.holders.len() > slots as usize {
            return None;
        }
        self.holders
            .holders()
            .filter(|(id, _)| !self.draining.contains_key(*id) && !self.returning.contains_key(*id))
            .map(|(id, granted)| (id, granted, self.lease_start(id, granted)))
            .min_by_key(|(_, _, start)| *start)
    }

    /// Where the lease of `id`, granted at `granted`, runs from: its
    /// latest renewal, or its grant.
    pub(crate) fn lease_start(&self, id: &NodeId, granted: Timestamp) -> Timestamp {
        self.renewed
            .get(id)
            .map_or(granted, |renewed| (*renewed).max(granted))
    }

    /// The marks of slots taken over that a take-over at `now` removes as
    /// it adds its own: those older than [`TAKEN_KEPT`], and the oldest
    /// past [`MAX_TAKEN`] - 1, so that the group keeps at most
    /// [`MAX_TAKEN`] with the new one.
    pub(crate) fn stale_taken(&self, now: Timestamp) -> Vec<NodeId> {
        let mut marks: Vec<_> = self.taken.iter().collect();
        marks.sort_by_key(|(_, at)| std::cmp::Reverse(**at));
        marks
            .into_iter()
            .enumerate()
            .filter(|(rank, (_, at))| *rank + 1 >= MAX_TAKEN || at.plus(TAKEN_KEPT) <= now)
            .map(|(_, (id, _))| id.clone())
            .collect()
    }

    /// The slot of `holder`, past its lease, goes to `id` at `now`: the count
    /// unchanged, and `holder` marked as the node whose slot was taken (the
    /// oldest marks dropped).
    pub(super) fn take_over(&mut self, holder: &NodeId, id: &NodeId, now: Timestamp) {
        for stale in self.stale_taken(now) {
            self.taken.remove(&stale);
        }
        self.holders.hand_over(holder, id, now);
        self.renewed.remove(holder);
        self.taken.insert(holder.clone(), now);
    }

    /// A holder's pre-reboot at `now` renews its lease; a late write of an
    /// older renewal never moves it back.
    pub(super) fn renew(&mut self, id: &NodeId, now: Timestamp) {
        let renewed = self.renewed.entry(id.clone()).or_insert(now);
        *renewed = (*renewed).max(now);
    }

    /// Whether a pre-reboot of `id`, which holds its slot, renews its lease:
    /// in a group with a lease, for a granted slot (a reservation waits for
    /// its drain, and is never taken over anyway).
    pub(crate) fn renews(&self, id: &NodeId, rules: GroupRules) -> bool {
        rules.lease.is_some()
            && self.holders.holds(id)
            && !self.draining.contains_key(id)
            && !self.returning.contains_key(id)
    }
}

/// The lease gate in the list of gates.
pub(crate) struct LeaseGate;

impl LeaseGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_LEASE";
}

/// How `LeaseGate::VARIABLE` sets a group's rules.
static SETTING: GroupSetting = GroupSetting {
    variable: LeaseGate::VARIABLE,
    what: "a lease",
    example: "workers=6h",
    read: |text, rules| {
        rules.lease = Some(parse_lease(text)?);
        Ok(())
    },
    copy: |from, to| to.lease = from.lease,
};

impl Gate for LeaseGate {
    fn setting(&self) -> Option<&'static GroupSetting> {
        Some(&SETTING)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        rules.lease.map(|lease| {
            format!(
                ", lease {} (then a full group's next asker takes the oldest slot)",
                format_duration(lease)
            )
        })
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        Some(format!(
            "lease={}",
            rules.lease.map_or("-".into(), format_duration)
        ))
    }

    /// Each holder past its lease (not one waiting for a drain or
    /// returning: the lease does not run for those).
    fn status(&self, group: &Shown) -> Vec<String> {
        let (name, record) = (group.name, group.record);
        let Some(lease) = group.rules.and_then(|rules| rules.lease) else {
            return Vec::new();
        };
        (record.holders.holders())
            .filter(|(id, _)| {
                !record.draining.contains_key(id) && !record.returning.contains_key(id)
            })
            .map(|(id, at)| (id, at.plus(lease)))
            .filter(|&(_, ends)| ends <= group.now)
            .map(|(id, ends)| {
                format!(
                    "{name}: '{}' is past its {} lease since {}: the next node to ask \
                     while the group is full takes its slot",
                    id.shown(),
                    format_duration(lease),
                    ends.to_rfc3339()
                )
            })
            .collect()
    }

    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let lease = group.rules.and_then(|r| r.lease);
        vec![("lease_seconds", json!(lease.map(|l| l.as_secs())))]
    }

    /// When the holder's lease ends (not while it waits for its drain or
    /// returns: the lease does not run then).
    fn holder_fields(
        &self,
        group: &Shown,
        id: &NodeId,
        at: Timestamp,
    ) -> Vec<(&'static str, Value)> {
        let record = group.record;
        let ends = (group.rules.and_then(|rules| rules.lease))
            .filter(|_| !record.draining.contains_key(id) && !record.returning.contains_key(id))
            .map(|lease| at.plus(lease));
        vec![
            ("lease_ends_at", json!(ends.map(Timestamp::to_rfc3339))),
            ("lease_expired", json!(ends.map(|ends| ends <= group.now))),
        ]
    }
}
