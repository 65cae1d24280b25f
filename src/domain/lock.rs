//! The rules of the reboot lock, with no HTTP and no AWS in sight.
//!
//! A group is a counting semaphore: at most `slots` nodes hold it at once. The
//! lock is recursive (a holder asking again keeps its one slot) and release is
//! idempotent (a node that holds nothing may release, and nothing changes),
//! because Zincati repeats both calls until it gets a 2xx.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::domain::input::{NodeId, PauseReason};

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
    pub fn age_at(self, now: Timestamp) -> Duration {
        Duration::from_millis(now.0.saturating_sub(self.0))
    }

    /// `2026-11-30T05:12:09Z`: UTC, whole seconds, always the same width.
    pub fn to_rfc3339(self) -> String {
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
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A pause set by a person with `fleetlock pause`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersonPause {
    pub reason: PauseReason,
    pub since: Timestamp,
    /// Who paused, as they gave it (`--by`, or their login name).
    pub by: String,
}

/// A node kept out of its group's rollout by a person (`fleetlock
/// exclude`): it takes no new slot while the rest of the group goes on.
/// Who, since when and why, as a person's pause records them.
pub type Exclusion = PersonPause;

/// How many nodes of one group may be excluded at once. Every call on the
/// group is billed by its item's size: ten exclusions of a 32-hex id with a
/// short reason add about 1 KB, one write unit, to each call (and at the
/// longest, 128-byte ids and 200-character reasons, about 4 KB).
pub const MAX_EXCLUSIONS: usize = 10;

/// Who keeps a group from granting new slots. A person's pause and alarms'
/// pauses are kept apart, so that a person's `resume` leaves an alarm's pause
/// in place and an alarm clearing leaves a person's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pause {
    pub person: Option<PersonPause>,
    /// CloudWatch alarms in ALARM that gate this group.
    pub alarms: BTreeSet<String>,
}

impl Pause {
    pub fn is_paused(&self) -> bool {
        self.person.is_some() || !self.alarms.is_empty()
    }
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
    /// How long a holder keeps its slot for sure (`FLEETLOCK_LEASE`). Past
    /// it, the slot goes to the next node that asks while the group is full;
    /// nobody loses a slot while nobody needs it. `None`: held until given
    /// back, FleetLock's own rule.
    pub lease: Option<Duration>,
}

/// A group as stored: the state that decides a request for a slot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub holders: Semaphore,
    pub pause: Pause,
    /// When a slot of this group was last given back.
    pub last_release: Option<Timestamp>,
    /// The slot count applied at the last grant, for people reading `fleetlock
    /// status`; decisions use the configured count.
    pub slots: Option<u32>,
    /// Nodes a person keeps out of the rollout.
    pub excluded: BTreeMap<NodeId, Exclusion>,
}

impl Group {
    /// When the group's settle period ends, if it has not yet at `now`. It
    /// runs from the arrival of the latest release that freed a slot; a
    /// request that arrived before that release (its write landed late)
    /// is inside it even with no settle time at all.
    pub fn settling_until(&self, settle: Duration, now: Timestamp) -> Option<Timestamp> {
        let until = self.last_release?.plus(settle);
        (until > now).then_some(until)
    }

    /// What a request for a slot gets, without changing anything. Which
    /// answer wins when several apply: a holder always hears yes (it keeps its
    /// slot, whatever else holds); then an excluded node, then paused, then
    /// settling, then a free slot, then a slot whose lease ran out, then full.
    pub fn decide_acquire(&self, id: &NodeId, rules: GroupRules, now: Timestamp) -> Acquire {
        if self.holders.holds(id) {
            Acquire::AlreadyHeld
        } else if self.excluded.contains_key(id) {
            Acquire::Excluded
        } else if self.pause.is_paused() {
            Acquire::Paused
        } else if let Some(until) = self.settling_until(rules.settle, now) {
            Acquire::Settling { until }
        } else {
            match self.holders.decide_acquire(id, rules.slots) {
                Acquire::Full => rules
                    .lease
                    .and_then(|lease| self.holders.expired(lease, rules.slots, now))
                    .map_or(Acquire::Full, |(holder, since)| Acquire::TakesExpired {
                        holder: holder.clone(),
                        since,
                    }),
                outcome => outcome,
            }
        }
    }

    pub fn acquire(&mut self, id: &NodeId, rules: GroupRules, now: Timestamp) -> Acquire {
        let outcome = self.decide_acquire(id, rules, now);
        match &outcome {
            Acquire::Granted => {
                self.holders.acquire(id, rules.slots, now);
            }
            Acquire::TakesExpired { holder, .. } => self.holders.hand_over(holder, id, now),
            _ => return outcome,
        }
        self.slots = Some(rules.slots);
        outcome
    }

    /// A release that arrived at `now` frees the node's slot only if it was
    /// granted no later than that: a release whose write lands late never
    /// frees a newer grant of the same node. A release that frees a slot
    /// starts the group's settle period again, and never moves its start
    /// backwards: a late write of an older release leaves the newer time.
    pub fn release(&mut self, id: &NodeId, now: Timestamp) -> Release {
        match self.holders.held_since(id) {
            Some(granted) if granted <= now => {
                self.holders.release(id);
                self.last_release = Some(self.last_release.map_or(now, |last| last.max(now)));
                Release::Released
            }
            _ => Release::NotHeld,
        }
    }
}

/// The answer to a request for a slot.
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
    /// Every slot is taken by other nodes.
    Full,
    /// A person keeps this node out of the rollout.
    Excluded,
    /// A person or an alarm paused the group.
    Paused,
    /// A slot was given back less than the settle time ago.
    Settling { until: Timestamp },
    /// The group has no item yet, only `*` covers it, and as many such
    /// groups as allowed exist already: nothing was stored.
    TooManyGroups { limit: u32 },
}

/// The answer to a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    Released,
    /// The node held nothing; that is fine and nothing changed.
    NotHeld,
}

/// One group's holders and when each took its slot. Kept sorted by id so that
/// listings are stable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Semaphore {
    holders: BTreeMap<NodeId, Timestamp>,
}

impl Semaphore {
    pub fn from_holders(holders: impl IntoIterator<Item = (NodeId, Timestamp)>) -> Self {
        Self {
            holders: holders.into_iter().collect(),
        }
    }

    /// What a request for a slot gets, without changing anything. `slots` is
    /// the group's count as configured now, so a lowered count blocks new
    /// holders at once and never evicts the ones there.
    pub fn decide_acquire(&self, id: &NodeId, slots: u32) -> Acquire {
        if self.holders.contains_key(id) {
            Acquire::AlreadyHeld
        } else if self.holders.len() < slots as usize {
            Acquire::Granted
        } else {
            Acquire::Full
        }
    }

    pub fn acquire(&mut self, id: &NodeId, slots: u32, now: Timestamp) -> Acquire {
        let outcome = self.decide_acquire(id, slots);
        if outcome == Acquire::Granted {
            self.holders.insert(id.clone(), now);
        }
        outcome
    }

    /// `to` takes the slot of `from`, at `now`: one holder for another.
    fn hand_over(&mut self, from: &NodeId, to: &NodeId, now: Timestamp) {
        if self.holders.remove(from).is_some() {
            self.holders.insert(to.clone(), now);
        }
    }

    pub fn release(&mut self, id: &NodeId) -> Release {
        match self.holders.remove(id) {
            Some(_) => Release::Released,
            None => Release::NotHeld,
        }
    }

    pub fn holds(&self, id: &NodeId) -> bool {
        self.holders.contains_key(id)
    }

    /// When `id` took its slot, if it holds one.
    pub fn held_since(&self, id: &NodeId) -> Option<Timestamp> {
        self.holders.get(id).copied()
    }

    pub fn len(&self) -> usize {
        self.holders.len()
    }

    pub fn is_empty(&self) -> bool {
        self.holders.is_empty()
    }

    pub fn holders(&self) -> impl Iterator<Item = (&NodeId, Timestamp)> {
        self.holders.iter().map(|(id, at)| (id, *at))
    }

    /// The holder that has kept its slot longest: after a failed update it is
    /// the node that blocks its group.
    pub fn oldest(&self) -> Option<(&NodeId, Timestamp)> {
        self.holders().min_by_key(|(_, at)| *at)
    }

    /// The holder whose slot a newcomer may take at `now`: the oldest, if it
    /// has held for at least `lease`, and only while the group holds no more
    /// than `slots` (after the count was lowered, taking a slot over would
    /// keep more holders than slots).
    pub fn expired(
        &self,
        lease: Duration,
        slots: u32,
        now: Timestamp,
    ) -> Option<(&NodeId, Timestamp)> {
        if self.holders.len() > slots as usize {
            return None;
        }
        self.oldest().filter(|(_, since)| since.plus(lease) <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> NodeId {
        NodeId::parse(s).unwrap()
    }

    #[test]
    fn an_excluded_node_is_refused_unless_it_holds_a_slot() {
        let mut group = Group::default();
        let open = GroupRules {
            slots: 2,
            ..GroupRules::default()
        };
        let sick = NodeId::parse("sick").unwrap();
        let holder = NodeId::parse("holder").unwrap();
        assert_eq!(group.acquire(&holder, open, Timestamp(1)), Acquire::Granted);
        let exclusion = PersonPause {
            reason: PauseReason::parse("disk").unwrap(),
            since: Timestamp(2),
            by: "alice".into(),
        };
        group.excluded.insert(sick.clone(), exclusion.clone());
        group.excluded.insert(holder.clone(), exclusion);
        assert_eq!(group.acquire(&sick, open, Timestamp(3)), Acquire::Excluded);
        assert!(!group.holders.holds(&sick), "nothing was taken");
        // A holder keeps its slot: yes, and its release frees it.
        assert_eq!(
            group.decide_acquire(&holder, open, Timestamp(3)),
            Acquire::AlreadyHeld
        );
        assert_eq!(group.release(&holder, Timestamp(4)), Release::Released);
        assert_eq!(
            group.decide_acquire(&holder, open, Timestamp(5)),
            Acquire::Excluded
        );
        // The exclusion wins over a pause and a full group, for that node.
        group.pause.alarms.insert("x".into());
        assert_eq!(
            group.decide_acquire(&sick, open, Timestamp(5)),
            Acquire::Excluded
        );
        let other = NodeId::parse("other").unwrap();
        assert_eq!(
            group.decide_acquire(&other, open, Timestamp(5)),
            Acquire::Paused
        );
    }

    #[test]
    fn grants_up_to_slots_then_refuses() {
        let mut sem = Semaphore::default();
        assert_eq!(sem.acquire(&id("a"), 2, Timestamp(1)), Acquire::Granted);
        assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
        assert_eq!(sem.acquire(&id("c"), 2, Timestamp(3)), Acquire::Full);
        assert_eq!(sem.len(), 2);
    }

    #[test]
    fn holder_asking_again_keeps_one_slot_and_its_first_time() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(10));
        assert_eq!(
            sem.acquire(&id("a"), 1, Timestamp(20)),
            Acquire::AlreadyHeld
        );
        assert_eq!(sem.len(), 1);
        assert_eq!(sem.oldest(), Some((&id("a"), Timestamp(10))));
    }

    #[test]
    fn a_semaphore_with_a_holder_is_not_empty() {
        let mut sem = Semaphore::default();
        assert!(sem.is_empty());
        sem.acquire(&id("a"), 1, Timestamp(1));
        assert!(!sem.is_empty());
    }

    #[test]
    fn release_by_non_holder_changes_nothing() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(1));
        let before = sem.clone();
        assert_eq!(sem.release(&id("b")), Release::NotHeld);
        assert_eq!(sem, before);
        assert_eq!(sem.release(&id("a")), Release::Released);
        assert_eq!(sem.release(&id("a")), Release::NotHeld);
        assert!(sem.is_empty());
    }

    #[test]
    fn lowered_count_blocks_new_holders_but_evicts_nobody() {
        let mut sem = Semaphore::default();
        for (i, name) in ["a", "b", "c"].iter().enumerate() {
            assert_eq!(
                sem.acquire(&id(name), 3, Timestamp(i as u64)),
                Acquire::Granted
            );
        }
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Full);
        assert_eq!(sem.acquire(&id("b"), 1, Timestamp(9)), Acquire::AlreadyHeld);
        assert_eq!(sem.len(), 3);
        sem.release(&id("a"));
        sem.release(&id("b"));
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Full);
        sem.release(&id("c"));
        assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Granted);
    }

    #[test]
    fn raised_count_applies_at_once() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("a"), 1, Timestamp(1));
        assert_eq!(sem.acquire(&id("b"), 1, Timestamp(2)), Acquire::Full);
        assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
    }

    #[test]
    fn zero_slots_freezes_a_group_but_a_holder_still_hears_yes() {
        let mut sem = Semaphore::default();
        assert_eq!(sem.acquire(&id("a"), 0, Timestamp(1)), Acquire::Full);
        sem.acquire(&id("b"), 1, Timestamp(1));
        assert_eq!(sem.acquire(&id("b"), 0, Timestamp(2)), Acquire::AlreadyHeld);
    }

    fn reason(s: &str) -> PauseReason {
        PauseReason::parse(s).unwrap()
    }

    const TEN_MIN: Duration = Duration::from_secs(600);

    fn rules(slots: u32, settle: Duration) -> GroupRules {
        GroupRules {
            slots,
            settle,
            wildcard_limit: None,
            lease: None,
        }
    }

    const HOUR: Duration = Duration::from_secs(3600);

    fn leased(slots: u32, lease: Duration) -> GroupRules {
        GroupRules {
            lease: Some(lease),
            ..rules(slots, Duration::ZERO)
        }
    }

    #[test]
    fn a_full_group_gives_the_slot_of_a_holder_past_its_lease_to_the_next_asker() {
        let mut group = Group::default();
        let r = leased(2, HOUR);
        group.acquire(&id("old"), r, Timestamp(0));
        group.acquire(&id("young"), r, Timestamp(1_800_000));
        // Not yet: the oldest has held 59m59.999s.
        let almost = Timestamp(0).plus(HOUR).minus(Duration::from_millis(1));
        assert_eq!(group.acquire(&id("new"), r, almost), Acquire::Full);
        let at = Timestamp(0).plus(HOUR);
        assert_eq!(
            group.acquire(&id("new"), r, at),
            Acquire::TakesExpired {
                holder: id("old"),
                since: Timestamp(0)
            }
        );
        assert_eq!(group.holders.len(), 2, "the count is unchanged");
        assert!(group.holders.holds(&id("new")) && !group.holders.holds(&id("old")));
        assert_eq!(group.holders.held_since(&id("new")), Some(at));
        // The evicted node's steady-state is a plain "held nothing", its
        // next pre-reboot a newcomer's request.
        assert_eq!(group.release(&id("old"), at), Release::NotHeld);
        assert_eq!(group.decide_acquire(&id("old"), r, at), Acquire::Full);
    }

    #[test]
    fn a_lease_never_evicts_while_a_slot_is_free_nor_without_an_asker() {
        let mut group = Group::default();
        let r = leased(2, HOUR);
        group.acquire(&id("old"), r, Timestamp(0));
        let late = Timestamp(0).plus(HOUR * 10);
        // A free slot is taken first; the expired holder keeps its own.
        assert_eq!(group.acquire(&id("b"), r, late), Acquire::Granted);
        assert!(group.holders.holds(&id("old")));
        // Asking again never renews: the holder hears yes, keeps its time.
        assert_eq!(group.acquire(&id("old"), r, late), Acquire::AlreadyHeld);
        assert_eq!(group.holders.held_since(&id("old")), Some(Timestamp(0)));
    }

    #[test]
    fn every_other_refusal_wins_over_an_expired_slot() {
        let r = leased(1, HOUR);
        let mut group = Group::default();
        group.acquire(&id("old"), r, Timestamp(0));
        let now = Timestamp(0).plus(HOUR * 2);
        let takes = Acquire::TakesExpired {
            holder: id("old"),
            since: Timestamp(0),
        };
        assert_eq!(group.decide_acquire(&id("b"), r, now), takes);

        let mut paused = group.clone();
        paused.pause.alarms.insert("x".into());
        assert_eq!(paused.decide_acquire(&id("b"), r, now), Acquire::Paused);

        let mut excluded = group.clone();
        excluded.excluded.insert(
            id("b"),
            PersonPause {
                reason: reason("disk"),
                since: Timestamp(1),
                by: "ana".into(),
            },
        );
        assert_eq!(excluded.decide_acquire(&id("b"), r, now), Acquire::Excluded);

        let mut settling = group.clone();
        settling.last_release = Some(now.minus(Duration::from_secs(60)));
        let settle = GroupRules {
            settle: TEN_MIN,
            ..r
        };
        assert!(matches!(
            settling.decide_acquire(&id("b"), settle, now),
            Acquire::Settling { .. }
        ));
        // No lease: FleetLock's rule, held until given back.
        assert_eq!(
            group.decide_acquire(&id("b"), rules(1, Duration::ZERO), now),
            Acquire::Full
        );
    }

    #[test]
    fn after_slots_were_lowered_an_expired_slot_is_never_taken_over() {
        let mut group = Group::default();
        let three = leased(3, HOUR);
        for name in ["a", "b", "c"] {
            group.acquire(&id(name), three, Timestamp(0));
        }
        let now = Timestamp(0).plus(HOUR * 5);
        // Three holders of two slots: a swap would keep three.
        assert_eq!(group.acquire(&id("d"), leased(2, HOUR), now), Acquire::Full);
        group.release(&id("c"), Timestamp(1));
        // Two of two: one expired slot changes hands, the count stays two.
        assert!(matches!(
            group.acquire(&id("d"), leased(2, HOUR), now),
            Acquire::TakesExpired { .. }
        ));
        assert_eq!(group.holders.len(), 2);
    }

    #[test]
    fn a_paused_group_refuses_newcomers_but_keeps_its_holders() {
        let mut group = Group::default();
        assert_eq!(
            group.acquire(&id("a"), rules(3, Duration::ZERO), Timestamp(1)),
            Acquire::Granted
        );
        group.pause.person = Some(PersonPause {
            reason: reason("kernel regression"),
            since: Timestamp(2),
            by: "alice".into(),
        });
        let open = rules(3, Duration::ZERO);
        assert_eq!(group.acquire(&id("b"), open, Timestamp(3)), Acquire::Paused);
        assert_eq!(
            group.acquire(&id("a"), open, Timestamp(3)),
            Acquire::AlreadyHeld
        );
        assert_eq!(group.release(&id("a"), Timestamp(4)), Release::Released);
        group.pause.person = None;
        group.pause.alarms.insert("etcd-quorum".into());
        assert_eq!(group.acquire(&id("b"), open, Timestamp(5)), Acquire::Paused);
        group.pause.alarms.clear();
        assert_eq!(
            group.acquire(&id("b"), open, Timestamp(6)),
            Acquire::Granted
        );
    }

    #[test]
    fn one_settle_period_for_the_whole_group_after_any_release() {
        let mut group = Group::default();
        let settle = rules(2, TEN_MIN);
        let t0 = Timestamp(1_000_000);
        assert_eq!(group.acquire(&id("a"), settle, t0), Acquire::Granted);
        assert_eq!(
            group.acquire(&id("b"), settle, t0),
            Acquire::Granted,
            "no release yet"
        );
        group.release(&id("a"), t0.plus(Duration::from_secs(60)));
        let until = t0.plus(Duration::from_secs(660));
        // A free slot, but the group settles: for everyone, holders excepted.
        assert_eq!(
            group.acquire(&id("c"), settle, t0.plus(Duration::from_secs(120))),
            Acquire::Settling { until }
        );
        assert_eq!(
            group.acquire(&id("b"), settle, t0.plus(Duration::from_secs(120))),
            Acquire::AlreadyHeld
        );
        assert_eq!(
            group.acquire(&id("c"), settle, until.minus(Duration::from_millis(1))),
            Acquire::Settling { until }
        );
        assert_eq!(group.acquire(&id("c"), settle, until), Acquire::Granted);
        // A zero settle time never holds anyone back.
        group.release(&id("c"), until);
        assert_eq!(
            group.acquire(&id("d"), rules(2, Duration::ZERO), until),
            Acquire::Granted
        );
    }

    #[test]
    fn held_wins_then_paused_then_settling_then_full() {
        let mut group = Group::default();
        let r = rules(1, TEN_MIN);
        group.acquire(&id("a"), r, Timestamp(0));
        group.last_release = Some(Timestamp(10));
        group.pause.alarms.insert("x".into());
        let now = Timestamp(20);
        assert_eq!(group.decide_acquire(&id("a"), r, now), Acquire::AlreadyHeld);
        assert_eq!(group.decide_acquire(&id("b"), r, now), Acquire::Paused);
        group.pause.alarms.clear();
        assert!(matches!(
            group.decide_acquire(&id("b"), r, now),
            Acquire::Settling { .. }
        ));
        group.last_release = None;
        assert_eq!(group.decide_acquire(&id("b"), r, now), Acquire::Full);
    }

    #[test]
    fn a_late_release_never_moves_the_settle_period_back_nor_frees_a_newer_grant() {
        let r = rules(3, TEN_MIN);
        let mut group = Group::default();
        group.acquire(&id("a"), r, Timestamp(0));
        group.acquire(&id("b"), r, Timestamp(0));
        // b's release arrived at 200 and landed first; a's arrived at 100
        // and lands after it.
        assert_eq!(group.release(&id("b"), Timestamp(200)), Release::Released);
        assert_eq!(group.release(&id("a"), Timestamp(100)), Release::Released);
        assert_eq!(group.last_release, Some(Timestamp(200)));
        let until = Timestamp(200).plus(TEN_MIN);
        assert_eq!(
            group.decide_acquire(&id("c"), r, until.minus(Duration::from_millis(1))),
            Acquire::Settling { until }
        );
        // a is granted again later; a release of a's that arrived a second
        // before that grant, landing now, frees nothing.
        group.acquire(&id("a"), rules(3, Duration::ZERO), until.plus(TEN_MIN));
        let regranted = until.plus(TEN_MIN);
        assert_eq!(
            group.release(&id("a"), regranted.minus(Duration::from_secs(1))),
            Release::NotHeld
        );
        assert!(group.holders.holds(&id("a")));
        assert_eq!(group.last_release, Some(Timestamp(200)), "unmoved");
    }

    #[test]
    fn a_request_that_arrived_before_the_latest_release_is_refused_even_without_settle() {
        let mut group = Group::default();
        let open = rules(2, Duration::ZERO);
        group.acquire(&id("a"), open, Timestamp(10));
        group.release(&id("a"), Timestamp(50));
        // a's own pre-reboot of 40, landing after its release of 50: no
        // holder nobody knows about.
        assert_eq!(
            group.acquire(&id("a"), open, Timestamp(40)),
            Acquire::Settling {
                until: Timestamp(50)
            }
        );
        assert!(group.holders.is_empty());
        assert_eq!(
            group.acquire(&id("a"), open, Timestamp(50)),
            Acquire::Granted
        );
    }

    #[test]
    fn timestamps_print_as_utc_seconds() {
        assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp(1_764_479_529_999).to_rfc3339(),
            "2025-11-30T05:12:09Z"
        );
        assert_eq!(
            Timestamp(951_782_400_000).to_rfc3339(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            Timestamp(4_102_444_799_000).to_rfc3339(),
            "2099-12-31T23:59:59Z"
        );
    }

    #[test]
    fn event_timestamps_keep_the_milliseconds() {
        assert_eq!(
            Timestamp(1_764_479_529_042).to_rfc3339_millis(),
            "2025-11-30T05:12:09.042Z"
        );
        assert_eq!(Timestamp(0).to_rfc3339_millis(), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn oldest_is_the_earliest_taker_not_the_smallest_id() {
        let mut sem = Semaphore::default();
        sem.acquire(&id("z"), 3, Timestamp(5));
        sem.acquire(&id("a"), 3, Timestamp(7));
        assert_eq!(sem.oldest(), Some((&id("z"), Timestamp(5))));
        assert_eq!(
            Timestamp(5).age_at(Timestamp(7_005)),
            Duration::from_secs(7)
        );
        assert_eq!(Timestamp(9).age_at(Timestamp(1)), Duration::ZERO);
    }
}
