//! The soak run behind BENCHMARKS.md (`./scripts/soak [SECONDS]`): hundreds of
//! simulated nodes cycle pre-reboot / reboot / steady-state with random delays
//! against `fleetlock serve` (release build) on DynamoDB Local, over loopback
//! HTTP, for a bounded time. Meanwhile:
//! - every answer is checked: a 200 never reports more holders than slots (the
//!   figures come from the item the conditional write returned);
//! - every node that was granted a slot must hear `released` when it gives it
//!   back (anything else is a lost release);
//! - an independent reader scans the table with strongly consistent reads and
//!   checks that no group ever holds more than its slots;
//! - the server's resident memory is sampled;
//! - rollout control: an operator task pauses and resumes `PAUSED_GROUP` every
//!   few seconds, and `SETTLE_GROUP` has a settle time. A grant answered while
//!   a pause was certainly in force (the pause was stored before the request
//!   was sent, the resume not yet sent when the answer came) is a violation;
//!   so is a holder the reader sees that took its slot less than the settle
//!   time after a release the reader had already seen stored (both times are
//!   the server's), and so is a group's release time that moves backwards;
//! - exclusions: an operator task excludes and includes `EXCLUDED_NODE` every
//!   few seconds. A grant to it answered while it was certainly excluded is a
//!   violation, and so is one the reader sees taken (server time) after the
//!   reader had already seen that same exclusion stored, which is still
//!   stored;
//! - leases: `LEASED_GROUP` has a lease, and a task plants a holder that took
//!   its slot a day ago (a node that never came back) whenever the group has
//!   room, with the grant's own condition on the count. The next node to find
//!   the group full takes that slot over. A take-over answered for a holder
//!   that was not such a ghost is a violation (a real node's slot taken
//!   inside its lease also shows as a lost release);
//! - drains: `DRAIN_GROUP` has a drain gate, and a hook task reads the table
//!   and confirms each reservation it sees after a random delay (sometimes
//!   twice, the second time late, as an event delivered again), naming the
//!   reservation it confirms. It notes each confirmation before it sends it.
//!   A 200 to a node of that group whose reservation the hook never set out
//!   to confirm is an undrained grant, and so is a holder the reader sees
//!   granted (not reserved) that the hook never set out to confirm; a
//!   confirmation that grants a reservation other than the one it named is
//!   a violation too. Its nodes sometimes send steady-state while they wait
//!   (Zincati restarted), which ends the reservation;
//! - returns: `RETURN_GROUP` has a return gate, so a node's steady-state
//!   leaves its slot counted as returning; a return hook task confirms each
//!   return it sees after a random delay (sometimes again, late, which must
//!   free nothing twice), but never the first return of `LOST_NODE`: past
//!   the return timeout a sweeper task (the drained function's rule) stops
//!   the group, and an operator task sees the stop and runs the real CLI,
//!   `fleetlock returned` then `fleetlock resume`, whose line must say it
//!   cleared the server's stop. The reader counts the group's nodes out of
//!   service (reserved, holding and returning: every `h:` attribute) and
//!   checks them against the slots like every other group's;
//! - zones: `ZONED_GROUP` (3 slots) is split by zone (`FLEETLOCK_ZONES`),
//!   its nodes asking as `zoned.z0`, `zoned.z1` and `zoned.z2`. A node that
//!   hears it was granted while a node of another zone is down (heard its
//!   grant, has not begun its steady-state) is a violation, and so is a scan
//!   that finds nodes of two zones holding the group's slots;
//! - the nodes count themselves: one that heard it was granted counts as down
//!   until it sends steady-state, and more nodes down in a group than its
//!   slots is a violation, although the table may never have held more.
//!
//! With `SOAK_FAULTS=1` (`./scripts/soak SECONDS faults`) the server's
//! DynamoDB requests go through the tests' fault proxy, which holds some back
//! so that they land late (past the SDK's attempt timeout too, so that its
//! retry lands first), drops answers after the write landed, and delays
//! others: every invariant above must hold under retries as well.
//!
//! Exits non-zero on any violation.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fleetlock::aws::load_config;
use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::{ByPerson, Drained, Returned};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::DynamoStore;
use tokio::sync::RwLock;

mod support;

#[path = "../tests/suite/fault_proxy.rs"]
#[allow(dead_code)] // the soak uses the proxy's chaos, not its every plan
mod fault_proxy;

use fault_proxy::{Fault, FaultProxy};

use fleetlock::domain::store::Decisions;
use support::{call, connect, memory_kib, process_cpu_of, spawn_serve};

const GROUPS: &[(&str, u32)] = &[
    ("default", 2),
    ("workers", 5),
    ("db", 1),
    ("drained", 2),
    ("returning", 2),
    ("zoned", 3),
];
const NODES: usize = 300;
const PAUSED_GROUP: &str = "workers";
const SETTLE_GROUP: &str = "db";
const SETTLE: Duration = Duration::from_secs(2);
/// Node 0, of the group `default`: excluded and included by a task of its own.
const EXCLUDED_NODE: &str = "soak-node-0000";
/// The group with a lease, where expired holders are planted.
const LEASED_GROUP: &str = "default";
const LEASE: &str = "30m";
/// A leased group of one slot no soak node uses: a task plants a holder
/// granted a day ago there, then sends that holder's pre-reboot (its
/// renewal) and a newcomer's at the same instant, again and again.
const RENEW_GROUP: &str = "renewing";
/// The planted holders' ids: nodes that took a slot a day ago and are gone.
const GHOST_PREFIX: &str = "soak-ghost-";
/// The group behind a drain gate, and its timeout (longer than any of the
/// hook's delays: every grant there is a confirmed one).
const DRAIN_GROUP: &str = "drained";
const DRAIN: &str = "1m";
/// The group behind a return gate, and its timeout (the shortest allowed).
const RETURN_GROUP: &str = "returning";
const RETURN_TIMEOUT: Duration = Duration::from_secs(60);
/// The node of `RETURN_GROUP` whose first return the hook never confirms.
const LOST_NODE: &str = "soak-node-0004";
/// The group split by zone (`FLEETLOCK_ZONES`): its nodes ask as
/// `zoned.z0`, `zoned.z1` or `zoned.z2`, and share its 3 slots.
const ZONED_GROUP: &str = "zoned";
const ZONES: usize = 3;

/// The zone of soak node `n`, where its group is split by zone.
fn zone_of(n: usize) -> Option<usize> {
    (GROUPS[n % GROUPS.len()].0 == ZONED_GROUP).then_some((n / GROUPS.len()) % ZONES)
}

/// The zone of the soak node named `id` (`soak-node-NNNN`), if it has one.
fn zone_of_id(id: &str) -> Option<usize> {
    id.strip_prefix("soak-node-")?
        .parse()
        .ok()
        .and_then(zone_of)
}

/// The reservations the hook set out to confirm: (node, reserved at), noted
/// before each confirmation is sent.
#[derive(Default)]
struct Confirming(std::sync::Mutex<std::collections::BTreeSet<(String, u64)>>);

impl Confirming {
    fn note(&self, node: &str, reserved_at: Timestamp) {
        self.0
            .lock()
            .unwrap()
            .insert((node.to_owned(), reserved_at.0));
    }

    /// Whether the hook set out to confirm a reservation of `node` made at
    /// `since` or later.
    fn any_since(&self, node: &str, since: Timestamp) -> bool {
        self.0
            .lock()
            .unwrap()
            .iter()
            .any(|(id, at)| id == node && *at >= since.0)
    }
}

/// When the operator task's pauses were in force, as the nodes can tell:
/// from the end of the pause write to the start of the resume write.
#[derive(Default)]
struct Pauses {
    /// (pause stored, resume sent); the last one may still be open.
    intervals: Vec<(Instant, Option<Instant>)>,
}

impl Pauses {
    /// A grant whose request went out after a pause was stored and whose
    /// answer came before its resume was sent was certainly made while paused.
    fn certainly_paused(&self, sent: Instant, answered: Instant) -> bool {
        self.intervals
            .iter()
            .any(|(from, to)| *from < sent && to.is_none_or(|to| answered < to))
    }
}
#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    granted: AtomicU64,
    already_held: AtomicU64,
    full: AtomicU64,
    released: AtomicU64,
    not_held: AtomicU64,
    over_grants: AtomicU64,
    lost_releases: AtomicU64,
    unexpected: AtomicU64,
    /// 503 `store_unavailable`: DynamoDB Local stalled past the SDK's
    /// timeouts. The right answer then (nothing was decided, or the decision
    /// is unknown to the node); the node retries as Zincati would.
    store_unavailable: AtomicU64,
    /// A call that found the effect of an earlier timed-out one (ours, or the
    /// SDK's own retry inside the server): a slot already held, or a release
    /// that had landed (`not_held` after a 503).
    answers_found_on_retry: AtomicU64,
    reads: AtomicU64,
    reads_over_slots: AtomicU64,
    paused: AtomicU64,
    settling: AtomicU64,
    grants_while_paused: AtomicU64,
    grants_inside_settle: AtomicU64,
    /// A scan that shows a group's last release earlier than one seen before.
    release_time_moved_back: AtomicU64,
    /// More nodes of a group down at once (granted, steady-state not yet
    /// sent) than its slots.
    down_over_slots: AtomicU64,
    /// A node of one zone heard granted while a node of another was down.
    two_zones_down: AtomicU64,
    /// Scans that found nodes of two zones holding slots of the split group.
    reader_two_zones: AtomicU64,
    /// `another_zone_out` answers, and grants heard in the split group.
    other_zone: AtomicU64,
    zoned_grants: AtomicU64,
    /// `settling` in a group without a settle time: the pre-reboot arrived
    /// before a release whose write landed first.
    raced_a_later_release: AtomicU64,
    /// Expired holders planted in `LEASED_GROUP`, and `granted_expired`
    /// answers (take-overs the nodes heard of).
    ghosts_planted: AtomicU64,
    /// Planted holders that came back and asked again past their lease, as
    /// a live holder does: renewed (200 `already_held`, then their own
    /// steady-state), or refused once taken over (423: `slot_taken`, or
    /// `paused` or `settling`, which a non-holder hears first).
    ghosts_renewed: AtomicU64,
    ghosts_told_taken: AtomicU64,
    /// Rounds in `RENEW_GROUP`: the holder's renewal won (200
    /// `already_held`, the newcomer refused), the newcomer's take-over won
    /// (200 `granted_expired`, the holder refused), or both or neither had a
    /// 200 (a violation).
    renewals_won: AtomicU64,
    take_overs_won: AtomicU64,
    renewal_rounds_wrong: AtomicU64,
    /// Rounds where a call heard 503 (the store stalled under faults) and
    /// no two 200s: nothing to judge; each node gives back what it may
    /// hold, as at its next boot.
    renewal_rounds_undecided: AtomicU64,
    take_overs: AtomicU64,
    pause_flips: AtomicU64,
    exclusion_flips: AtomicU64,
    /// `node_excluded` answers to `EXCLUDED_NODE`.
    excluded: AtomicU64,
    grants_while_excluded: AtomicU64,
    /// Holders of `EXCLUDED_NODE` the reader saw taken after it had seen
    /// the exclusion, still stored, that was in force.
    reader_grants_while_excluded: AtomicU64,
    /// `waiting_for_drain` answers in `DRAIN_GROUP`, confirmations the hook
    /// sent / that granted, repeated late ones refused, reservations ended
    /// by a waiting node's steady-state.
    waiting_for_drain: AtomicU64,
    confirmations_sent: AtomicU64,
    confirmations_granted: AtomicU64,
    late_confirmations_refused: AtomicU64,
    reservations_ended: AtomicU64,
    /// 200s in `DRAIN_GROUP` after a confirmation.
    drained_grants: AtomicU64,
    /// 200s to a node of `DRAIN_GROUP` the hook never set out to confirm, and
    /// granted holders the reader saw there that it never set out to confirm.
    undrained_grants: AtomicU64,
    reader_undrained_grants: AtomicU64,
    /// A repeated confirmation that granted the reservation its first
    /// attempt had granted already.
    late_confirmations_granted: AtomicU64,
    /// In `RETURN_GROUP`: steady-states answered `returning`, pre-reboots
    /// refused `waiting_for_return`, returns the hook confirmed, late
    /// repeats refused / that freed a slot a second time (a violation),
    /// stops written by the sweeper, stops the operator cleared through the
    /// CLI / CLI runs that failed or did not say so (a violation), returns
    /// confirmed after the run, the most returning slots and nodes out of
    /// service (reserved + holding + returning) the reader saw at once.
    returns_started: AtomicU64,
    waiting_for_return: AtomicU64,
    returns_confirmed: AtomicU64,
    late_returns_refused: AtomicU64,
    late_returns_freed: AtomicU64,
    stops: AtomicU64,
    stops_cleared_by_cli: AtomicU64,
    cli_failures: AtomicU64,
    returns_confirmed_after: AtomicU64,
    most_returning: AtomicU64,
    most_out_of_service: AtomicU64,
}

/// How many nodes of each group are down (heard granted, not yet back), and
/// of each zone of the group split by zone.
#[derive(Default)]
struct Down(BTreeMap<&'static str, AtomicI64>, [AtomicI64; ZONES]);

impl Down {
    fn new() -> Self {
        Self(
            GROUPS
                .iter()
                .map(|(g, _)| (*g, AtomicI64::new(0)))
                .chain([(RENEW_GROUP, AtomicI64::new(0))])
                .collect(),
            Default::default(),
        )
    }

    /// A node of `zone` heard it was granted: a node of another zone still
    /// down (it heard its grant and has not begun its steady-state, so the
    /// server still counts it out) is a violation.
    fn zone_goes_down(&self, zone: usize, tally: &Tally) {
        self.1[zone].fetch_add(1, Ordering::SeqCst);
        let others: Vec<i64> = (0..ZONES)
            .filter(|z| *z != zone)
            .map(|z| self.1[z].load(Ordering::SeqCst))
            .collect();
        if others.iter().any(|down| *down > 0) {
            tally.two_zones_down.fetch_add(1, Ordering::Relaxed);
            eprintln!("zone z{zone} granted while nodes of another zone are down: {others:?}");
        }
    }

    fn zone_comes_back(&self, zone: usize) {
        self.1[zone].fetch_sub(1, Ordering::SeqCst);
    }

    /// A node heard it was granted; more down than slots is a violation.
    fn goes_down(&self, group: &str, slots: u32, tally: &Tally) {
        let now = self.0[group].fetch_add(1, Ordering::SeqCst) + 1;
        if now > i64::from(slots) {
            tally.down_over_slots.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Before its steady-state: the node is back.
    fn comes_back(&self, group: &str) {
        self.0[group].fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts an answer the soak did not expect, and says which (the first few).
fn unexpected(tally: &Tally, what: &str, status: u16, json: &serde_json::Value) {
    if tally.unexpected.fetch_add(1, Ordering::Relaxed) < 20 {
        eprintln!("unexpected answer to {what}: {status} {json}");
    }
}

/// xorshift64*: enough randomness for delays, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A hook as slot events drive it, on the table instead of the stream:
/// it reads `group` every 100 ms and confirms each entry `waiting` finds
/// (a reservation, a return) once, after a random delay (0 to 1.5 s); one
/// in four is confirmed again 2 s later, as an event delivered again.
struct TableHook {
    group: &'static str,
    seed: u64,
    /// A node whose first entry is never confirmed.
    lost: Option<&'static str>,
    waiting: fn(fleetlock::domain::lock::GroupRecord) -> BTreeMap<NodeId, Timestamp>,
    /// A confirmation that took effect; a repeat that took effect too (one
    /// entry confirmed twice: a violation); a repeat refused.
    confirmed: fn(&Tally) -> &AtomicU64,
    twice: fn(&Tally) -> &AtomicU64,
    late_refused: fn(&Tally) -> &AtomicU64,
}

impl TableHook {
    /// Runs the hook until `deadline` and its confirmations to their end.
    /// `confirm(id, since, first)` says whether its call took effect.
    fn spawn<C, F>(
        self,
        store: Arc<DynamoStore>,
        tally: Arc<Tally>,
        deadline: Instant,
        confirm: C,
    ) -> tokio::task::JoinHandle<()>
    where
        C: Fn(NodeId, Timestamp, bool) -> F + Clone + Send + Sync + 'static,
        F: std::future::Future<Output = Result<bool, fleetlock::domain::store::StoreError>>
            + Send
            + 'static,
    {
        tokio::spawn(async move {
            let group = GroupName::parse(self.group).unwrap();
            let mut handled = std::collections::BTreeSet::new();
            let mut lost_once = false;
            let mut rng = Rng(self.seed);
            let mut confirmations = Vec::new();
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let Ok(groups) = store.groups(Some(&group)).await else {
                    continue;
                };
                for (_, record) in groups {
                    for (id, since) in (self.waiting)(record) {
                        if !handled.insert((id.to_string(), since.0)) {
                            continue;
                        }
                        if Some(id.as_str()) == self.lost && !lost_once {
                            lost_once = true;
                            continue;
                        }
                        let (delay, again) = (rng.below(1_500), rng.below(4) == 0);
                        let (tally, confirm) = (Arc::clone(&tally), confirm.clone());
                        let (confirmed, twice, late_refused) =
                            (self.confirmed, self.twice, self.late_refused);
                        confirmations.push(tokio::spawn(async move {
                            tokio::time::sleep(Duration::from_millis(delay)).await;
                            let first = confirm(id.clone(), since, true).await == Ok(true);
                            if first {
                                confirmed(&tally).fetch_add(1, Ordering::Relaxed);
                            }
                            if !again {
                                return;
                            }
                            tokio::time::sleep(Duration::from_secs(2)).await;
                            let counter = match confirm(id, since, false).await {
                                Ok(true) if first => twice,
                                // The first one failed (a fault): this one
                                // is the confirmation.
                                Ok(true) => confirmed,
                                Ok(false) => late_refused,
                                Err(_) => return,
                            };
                            counter(&tally).fetch_add(1, Ordering::Relaxed);
                        }));
                    }
                }
            }
            for confirmation in confirmations {
                let _ = confirmation.await;
            }
        })
    }
}

/// Whether `id` holds a slot of `group` in the table (a consistent read).
async fn holds(table: &DynamoStore, group: &str, id: &str) -> bool {
    let group = GroupName::parse(group).unwrap();
    let id = fleetlock::domain::input::NodeId::parse(id).unwrap();
    let groups = table.groups(Some(&group)).await.expect("consistent read");
    groups.iter().any(|(_, record)| record.holders.holds(&id))
}

async fn node(
    n: usize,
    addr: String,
    deadline: Instant,
    tally: Arc<Tally>,
    (pauses, exclusions): (Arc<RwLock<Pauses>>, Arc<RwLock<Pauses>>),
    (down, table, confirming): (Arc<Down>, Arc<DynamoStore>, Arc<Confirming>),
) {
    let (group, slots) = GROUPS[n % GROUPS.len()];
    let id = format!("soak-node-{n:04}");
    // A node of the group split by zone asks as its zone's group.
    let zone = zone_of(n);
    let asked = match zone {
        Some(zone) => format!("{group}.z{zone}"),
        None => group.to_owned(),
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (n as u64 + 1).wrapping_mul(0x1000_0001));
    let mut sender = connect(&addr).await;
    let unavailable = |status: u16, json: &serde_json::Value| {
        status == 503 && json["kind"] == "store_unavailable"
    };
    // After a 503 pre-reboot the node may hold a slot it never heard of.
    let mut maybe_holding = false;
    // In `DRAIN_GROUP`: when this node began asking for its current slot,
    // and whether it waits for a drain.
    let mut asking_since: Option<Timestamp> = None;
    let mut waiting = false;
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
        // Sometimes a node that holds nothing sends steady-state (every boot does).
        if rng.below(10) == 0 {
            let (status, json) = call(&mut sender, &addr, "steady-state", &id, &asked).await;
            tally.calls.fetch_add(1, Ordering::Relaxed);
            match (status, json["outcome"].as_str()) {
                (200, Some("not_held")) => {
                    tally.not_held.fetch_add(1, Ordering::Relaxed);
                }
                // Zincati's steady-state at every start, while its slot returns.
                (200, Some("still_returning")) if group == RETURN_GROUP => {
                    tally.not_held.fetch_add(1, Ordering::Relaxed);
                }
                (200, Some("returning")) if maybe_holding && group == RETURN_GROUP => {
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                    maybe_holding = false;
                }
                (200, Some("released")) if maybe_holding => {
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                    maybe_holding = false;
                    waiting = false;
                }
                // Zincati restarted while its node waited: the reservation ends.
                (200, Some("released")) if waiting => {
                    tally.reservations_ended.fetch_add(1, Ordering::Relaxed);
                    waiting = false;
                    asking_since = None;
                }
                _ if unavailable(status, &json) => {
                    tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
                }
                _ => unexpected(&tally, "a boot's steady-state", status, &json),
            }
        }
        let sent = Instant::now();
        if asking_since.is_none() {
            asking_since = Some(Timestamp::now());
        }
        let (status, json) = call(&mut sender, &addr, "pre-reboot", &id, &asked).await;
        let answered = Instant::now();
        tally.calls.fetch_add(1, Ordering::Relaxed);
        match (status, json["outcome"].as_str(), json["kind"].as_str()) {
            (423, _, Some("waiting_for_drain")) if group == DRAIN_GROUP => {
                tally.waiting_for_drain.fetch_add(1, Ordering::Relaxed);
                waiting = true;
                continue;
            }
            (200, _, _) if group == DRAIN_GROUP => {
                // Only ever the grant of a confirmed reservation: the gate's
                // timeout is longer than the hook ever takes.
                let since = asking_since.unwrap_or(Timestamp(0));
                if confirming.any_since(&id, since.minus(Duration::from_secs(1))) {
                    tally.drained_grants.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.undrained_grants.fetch_add(1, Ordering::Relaxed);
                    eprintln!("undrained grant to {id}: {json}");
                }
                if json["holders"].as_u64().unwrap_or(u64::MAX) > u64::from(slots) {
                    tally.over_grants.fetch_add(1, Ordering::Relaxed);
                }
                down.goes_down(group, slots, &tally);
                if let Some(zone) = zone {
                    down.zone_goes_down(zone, &tally);
                    tally.zoned_grants.fetch_add(1, Ordering::Relaxed);
                }
            }
            (200, Some(outcome @ ("granted" | "granted_expired")), _) => {
                if outcome == "granted_expired" {
                    tally.take_overs.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.granted.fetch_add(1, Ordering::Relaxed);
                }
                down.goes_down(group, slots, &tally);
                if let Some(zone) = zone {
                    down.zone_goes_down(zone, &tally);
                    tally.zoned_grants.fetch_add(1, Ordering::Relaxed);
                }
                if json["holders"].as_u64().unwrap_or(u64::MAX) > u64::from(slots) {
                    tally.over_grants.fetch_add(1, Ordering::Relaxed);
                }
                if group == PAUSED_GROUP && pauses.read().await.certainly_paused(sent, answered) {
                    tally.grants_while_paused.fetch_add(1, Ordering::Relaxed);
                }
                if id == EXCLUDED_NODE && exclusions.read().await.certainly_paused(sent, answered) {
                    tally.grants_while_excluded.fetch_add(1, Ordering::Relaxed);
                }
            }
            (423, _, Some("waiting_for_return")) if group == RETURN_GROUP => {
                tally.waiting_for_return.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            // The sweeper stopped the group: a return passed its timeout.
            (423, _, Some("group_paused")) if group == RETURN_GROUP => {
                tally.paused.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("node_excluded")) if id == EXCLUDED_NODE => {
                tally.excluded.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("another_zone_out")) if zone.is_some() => {
                tally.other_zone.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("semaphore_full")) => {
                tally.full.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("group_paused")) if group == PAUSED_GROUP => {
                tally.paused.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("settling")) if group == SETTLE_GROUP => {
                tally.settling.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (423, _, Some("settling")) => {
                tally.raced_a_later_release.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            (200, Some("already_held"), _) => {
                // A call whose write landed but whose answer was lost: after
                // our 503 (maybe_holding), or inside the server when the SDK
                // retried a timed-out attempt. The node holds the slot: go on
                // as granted.
                tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                if json["holders"].as_u64().unwrap_or(u64::MAX) > u64::from(slots) {
                    tally.over_grants.fetch_add(1, Ordering::Relaxed);
                }
                down.goes_down(group, slots, &tally);
                if let Some(zone) = zone {
                    down.zone_goes_down(zone, &tally);
                    tally.zoned_grants.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ if unavailable(status, &json) => {
                tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
                maybe_holding = true;
                continue;
            }
            _ => {
                unexpected(&tally, "pre-reboot", status, &json);
                continue;
            }
        }
        // Holding: sometimes ask again (Zincati does when users are logged in).
        if rng.below(4) == 0 {
            let (status, json) = call(&mut sender, &addr, "pre-reboot", &id, &asked).await;
            tally.calls.fetch_add(1, Ordering::Relaxed);
            if (status, json["outcome"].as_str()) == (200, Some("already_held")) {
                tally.already_held.fetch_add(1, Ordering::Relaxed);
            } else if unavailable(status, &json) {
                tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
            } else {
                unexpected(&tally, "a holder's pre-reboot", status, &json);
            }
        }
        maybe_holding = false;
        waiting = false;
        asking_since = None;
        // "Reboot", then give the slot back: it must still be ours. Retried
        // on 503 like Zincati; `not_held` after a 503 means the timed-out
        // release had landed.
        tokio::time::sleep(Duration::from_millis(50 + rng.below(300))).await;
        down.comes_back(group);
        if let Some(zone) = zone {
            down.zone_comes_back(zone);
        }
        let mut timed_out = false;
        for _ in 0..20 {
            let (status, json) = call(&mut sender, &addr, "steady-state", &id, &asked).await;
            tally.calls.fetch_add(1, Ordering::Relaxed);
            match (status, json["outcome"].as_str()) {
                (200, Some("released")) if group != RETURN_GROUP => {
                    tally.released.fetch_add(1, Ordering::Relaxed);
                }
                (200, Some("returning")) if group == RETURN_GROUP => {
                    tally.released.fetch_add(1, Ordering::Relaxed);
                    tally.returns_started.fetch_add(1, Ordering::Relaxed);
                }
                // A retry whose first attempt had started the return.
                (200, Some("still_returning")) if group == RETURN_GROUP => {
                    tally.released.fetch_add(1, Ordering::Relaxed);
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                }
                (200, Some("not_held")) if timed_out => {
                    tally.released.fetch_add(1, Ordering::Relaxed);
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                }
                // The SDK's own retry inside the server, after an answer
                // lost on the way back: the first attempt had released. Only
                // a slot still held is a lost release.
                (200, Some("not_held")) if !holds(&table, group, &id).await => {
                    tally.released.fetch_add(1, Ordering::Relaxed);
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                }
                _ if unavailable(status, &json) => {
                    tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
                    timed_out = true;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                _ => {
                    tally.lost_releases.fetch_add(1, Ordering::Relaxed);
                }
            }
            break;
        }
    }
    // The run ended right after a 503 pre-reboot whose write may have
    // landed, or while the node waited for its drain: the node's next boot
    // sends steady-state, as Zincati's does, until it is answered.
    if maybe_holding || waiting {
        for _ in 0..20 {
            let (status, json) = call(&mut sender, &addr, "steady-state", &id, &asked).await;
            tally.calls.fetch_add(1, Ordering::Relaxed);
            match (status, json["outcome"].as_str()) {
                (200, Some("released" | "returning")) => {
                    tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                }
                (200, Some("not_held" | "still_returning")) => {}
                _ if unavailable(status, &json) => {
                    tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
                _ => unexpected(&tally, "a boot's steady-state", status, &json),
            }
            break;
        }
    }
}

/// The person on call clears a stop with the command line: `fleetlock
/// returned` for the node the stop names (its return, as status shows it),
/// then `fleetlock resume`, whose line must say it cleared the server's
/// stop. `false` when either fails or the line does not say so.
async fn clear_stop(
    binary: &str,
    table: &str,
    stop: &fleetlock::domain::lock::RolloutStop,
) -> bool {
    let run = |args: Vec<String>| {
        tokio::process::Command::new(binary)
            .args(args)
            .env("FLEETLOCK_TABLE", table)
            .env("RUST_LOG", "warn")
            .output()
    };
    let released_at = stop.returning_since.to_rfc3339_millis();
    let returned = run(vec![
        "returned".into(),
        "--group".into(),
        RETURN_GROUP.into(),
        "--id".into(),
        stop.id.to_string(),
        "--released-at".into(),
        released_at,
    ])
    .await;
    // Refused is fine: the node came back on its own meanwhile.
    let Ok(returned) = returned else {
        return false;
    };
    if !returned.status.success() && returned.status.code() != Some(1) {
        eprintln!(
            "fleetlock returned: {}",
            String::from_utf8_lossy(&returned.stderr)
        );
        return false;
    }
    let resume = run(vec!["resume".into(), "--group".into(), RETURN_GROUP.into()]).await;
    match resume {
        Ok(out) if out.status.success() => {
            let line = String::from_utf8_lossy(&out.stdout);
            let said = line.contains("cleared the server's stop")
                || line.contains("was not paused by a person");
            if !said {
                eprintln!("fleetlock resume said: {line}");
            }
            said
        }
        Ok(out) => {
            eprintln!("fleetlock resume: {}", String::from_utf8_lossy(&out.stderr));
            false
        }
        Err(_) => false,
    }
}

fn leased_slots() -> u32 {
    GROUPS
        .iter()
        .find(|(group, _)| *group == LEASED_GROUP)
        .map_or(0, |(_, slots)| *slots)
}

#[tokio::main]
async fn main() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        eprintln!("AWS_ENDPOINT_URL is unset: run ./scripts/soak, which starts DynamoDB Local");
        std::process::exit(2);
    }
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    let binary =
        std::env::var("FLEETLOCK_BIN").unwrap_or_else(|_| "target/release/fleetlock".into());
    let table = format!("soak-{}", std::process::id());
    let groups_spec = GROUPS
        .iter()
        .map(|(g, n)| format!("{g}={n}"))
        .chain([format!("{RENEW_GROUP}=1")])
        .collect::<Vec<_>>()
        .join(",");

    let reader = DynamoStore::new(aws_sdk_dynamodb::Client::new(&load_config().await), &table);
    reader.create_table().await.expect("create the soak table");

    let settle_spec = format!("{SETTLE_GROUP}={}s", SETTLE.as_secs());
    let lease_spec = format!("{LEASED_GROUP}={LEASE},{RENEW_GROUP}={LEASE}");
    let drain_spec = format!("{DRAIN_GROUP}={DRAIN}");
    let return_spec = format!("{RETURN_GROUP}={}s", RETURN_TIMEOUT.as_secs());
    let faults = std::env::var("SOAK_FAULTS").is_ok_and(|v| v == "1");
    // A global table in multi-Region strong consistency: one write in four
    // meets a write of another Region and is refused, not applied.
    let conflicts = std::env::var("SOAK_FAULTS").is_ok_and(|v| v == "conflicts");
    let proxy = if conflicts {
        let upstream = std::env::var("AWS_ENDPOINT_URL").unwrap();
        let proxy =
            FaultProxy::start(upstream.trim_start_matches("http://").parse().unwrap()).await;
        proxy.chaos_on_writes(0xC0FF, &[(250, Fault::ReplicatedWriteConflict)]);
        // And every request waits for another Region, as an MRSC write does.
        proxy.latency(Duration::from_millis(30));
        Some(proxy)
    } else if faults {
        let upstream = std::env::var("AWS_ENDPOINT_URL").unwrap();
        let proxy =
            FaultProxy::start(upstream.trim_start_matches("http://").parse().unwrap()).await;
        // One request in twenty meets a fault: held back past the SDK's 2 s
        // attempt timeout (its retry lands first) or within it (no retry, a
        // late landing), an answer dropped after the write, or delayed.
        proxy.chaos(
            0x5EED,
            &[
                (15, Fault::DelayForward(Duration::from_millis(2_500))),
                (15, Fault::DelayForward(Duration::from_millis(1_200))),
                (10, Fault::DropAnswer),
                (10, Fault::DelayAnswer(Duration::from_millis(2_500))),
            ],
        );
        Some(proxy)
    } else {
        None
    };
    let endpoint = proxy.as_ref().map(FaultProxy::url);
    let (mut server, addr) = spawn_serve(
        &binary,
        Some(&table),
        &groups_spec,
        &[
            ("FLEETLOCK_SETTLE", settle_spec.as_str()),
            ("FLEETLOCK_LEASE", lease_spec.as_str()),
            ("FLEETLOCK_DRAIN", drain_spec.as_str()),
            ("FLEETLOCK_RETURN", return_spec.as_str()),
            ("FLEETLOCK_ZONES", ZONED_GROUP),
        ],
        endpoint.as_deref(),
    )
    .await;
    let pid = server.id().unwrap();

    let tally = Arc::new(Tally::default());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let pauses = Arc::new(RwLock::new(Pauses::default()));
    let exclusions = Arc::new(RwLock::new(Pauses::default()));
    let down = Arc::new(Down::new());
    let confirming = Arc::new(Confirming::default());
    let table_reader = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&load_config().await),
        &table,
    ));
    let nodes: Vec<_> = (0..NODES)
        .map(|n| {
            let tally = Arc::clone(&tally);
            let control = (Arc::clone(&pauses), Arc::clone(&exclusions));
            let checks = (
                Arc::clone(&down),
                Arc::clone(&table_reader),
                Arc::clone(&confirming),
            );
            tokio::spawn(node(n, addr.clone(), deadline, tally, control, checks))
        })
        .collect();

    // The operator: pause for 3 s, resume for 3 s, until the end; then resume
    // so that every node can give its slot back and finish.
    let operator = {
        let (tally, pauses) = (Arc::clone(&tally), Arc::clone(&pauses));
        let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&load_config().await), &table);
        tokio::spawn(async move {
            let group = GroupName::parse(PAUSED_GROUP).unwrap();
            let reason = PauseReason::parse("soak: paused by the operator task").unwrap();
            while Instant::now() + Duration::from_secs(6) < deadline {
                tokio::time::sleep(Duration::from_secs(3)).await;
                let pause = ByPerson {
                    reason: reason.clone(),
                    since: Timestamp::now(),
                    by: "soak".into(),
                };
                store.pause(&group, pause).await.expect("pause");
                pauses.write().await.intervals.push((Instant::now(), None));
                tally.pause_flips.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(3)).await;
                if let Some(last) = pauses.write().await.intervals.last_mut() {
                    last.1 = Some(Instant::now());
                }
                store.resume(&group).await.expect("resume");
            }
        })
    };

    // Ghosts: whenever `LEASED_GROUP` has room, a holder that took its slot a
    // day ago, written with the grant's own condition on the count.
    // Every other ghost comes back a moment later and asks again as the
    // holder, past its lease: renewed, it counts as down (told to reboot)
    // until its own steady-state, so a take-over of its slot in between
    // would show as more nodes down than slots.
    let planter = {
        let (tally, down) = (Arc::clone(&tally), Arc::clone(&down));
        let client = aws_sdk_dynamodb::Client::new(&load_config().await);
        let (table, slots) = (table.clone(), leased_slots());
        let addr = addr.clone();
        tokio::spawn(async move {
            use aws_sdk_dynamodb::types::AttributeValue;
            let n = |v: u64| AttributeValue::N(v.to_string());
            let mut next = 0u64;
            while Instant::now() + Duration::from_secs(3) < deadline {
                tokio::time::sleep(Duration::from_millis(700)).await;
                let long_ago = Timestamp::now().minus(Duration::from_secs(86_400));
                let planted = client
                    .update_item()
                    .table_name(&table)
                    .key("group", AttributeValue::S(LEASED_GROUP.into()))
                    .update_expression("SET #ghost = :at ADD holder_count :one")
                    .condition_expression("attribute_exists(#key) AND holder_count < :slots")
                    .expression_attribute_names("#ghost", format!("h:{GHOST_PREFIX}{next}"))
                    .expression_attribute_names("#key", "group")
                    .expression_attribute_values(":at", n(long_ago.0))
                    .expression_attribute_values(":one", n(1))
                    .expression_attribute_values(":slots", n(slots.into()))
                    .send()
                    .await;
                if planted.is_ok() {
                    let ghost = format!("{GHOST_PREFIX}{next}");
                    next += 1;
                    tally.ghosts_planted.fetch_add(1, Ordering::Relaxed);
                    if next.is_multiple_of(2) {
                        continue;
                    }
                    // At once, racing the nodes that find the group full
                    // and the ghost expired: of its renewal and their
                    // take-over one wins. A connection of its own each
                    // time: the server closes an idle one.
                    let mut sender = connect(&addr).await;
                    let (status, json) =
                        call(&mut sender, &addr, "pre-reboot", &ghost, LEASED_GROUP).await;
                    tally.calls.fetch_add(1, Ordering::Relaxed);
                    match (status, json["outcome"].as_str(), json["kind"].as_str()) {
                        (200, Some("already_held"), _) => {
                            tally.ghosts_renewed.fetch_add(1, Ordering::Relaxed);
                            down.goes_down(LEASED_GROUP, slots, &tally);
                            // Rebooting, while the nodes keep asking.
                            tokio::time::sleep(Duration::from_millis(300)).await;
                            down.comes_back(LEASED_GROUP);
                            // Retried on 503 as Zincati retries; `not_held`
                            // after a 503 means the timed-out release landed.
                            let mut timed_out = false;
                            for _ in 0..20 {
                                let (status, json) =
                                    call(&mut sender, &addr, "steady-state", &ghost, LEASED_GROUP)
                                        .await;
                                tally.calls.fetch_add(1, Ordering::Relaxed);
                                match (status, json["outcome"].as_str()) {
                                    (200, Some("released")) => {}
                                    (200, Some("not_held")) if timed_out => {
                                        tally
                                            .answers_found_on_retry
                                            .fetch_add(1, Ordering::Relaxed);
                                    }
                                    (503, _) if json["kind"] == "store_unavailable" => {
                                        tally.store_unavailable.fetch_add(1, Ordering::Relaxed);
                                        timed_out = true;
                                        tokio::time::sleep(Duration::from_millis(500)).await;
                                        continue;
                                    }
                                    _ => unexpected(
                                        &tally,
                                        "a renewed ghost's steady-state",
                                        status,
                                        &json,
                                    ),
                                }
                                break;
                            }
                        }
                        // Taken over in between: refused (slot_taken, or first
                        // what a non-holder hears before it: paused, settling).
                        (423, _, Some(_)) => {
                            tally.ghosts_told_taken.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => unexpected(&tally, "a ghost asking again", status, &json),
                    }
                }
            }
        })
    };

    // Renewals racing take-overs: a holder granted a day ago in RENEW_GROUP
    // asks again while a newcomer asks; exactly one of them may hear 200.
    let renewer = {
        let (tally, down) = (Arc::clone(&tally), Arc::clone(&down));
        let client = aws_sdk_dynamodb::Client::new(&load_config().await);
        let (table, addr) = (table.clone(), addr.clone());
        let store = DynamoStore::new(client.clone(), &table);
        tokio::spawn(async move {
            use aws_sdk_dynamodb::types::AttributeValue;
            let n = |v: u64| AttributeValue::N(v.to_string());
            let mut round = 0u64;
            while Instant::now() + Duration::from_secs(3) < deadline {
                tokio::time::sleep(Duration::from_millis(200)).await;
                let (holder, asker) = (format!("renewer-{round}"), format!("newcomer-{round}"));
                round += 1;
                let long_ago = Timestamp::now().minus(Duration::from_secs(86_400));
                let planted = client
                    .update_item()
                    .table_name(&table)
                    .key("group", AttributeValue::S(RENEW_GROUP.into()))
                    .update_expression("SET #holder = :at ADD holder_count :one")
                    .condition_expression(
                        "attribute_not_exists(holder_count) OR holder_count < :one",
                    )
                    .expression_attribute_names("#holder", format!("h:{holder}"))
                    .expression_attribute_values(":at", n(long_ago.0))
                    .expression_attribute_values(":one", n(1))
                    .send()
                    .await;
                if planted.is_err() {
                    continue;
                }
                let (mut a, mut b) = (connect(&addr).await, connect(&addr).await);
                let (renewal, take_over) = tokio::join!(
                    call(&mut a, &addr, "pre-reboot", &holder, RENEW_GROUP),
                    call(&mut b, &addr, "pre-reboot", &asker, RENEW_GROUP),
                );
                tally.calls.fetch_add(2, Ordering::Relaxed);
                let yes = |answer: &(u16, serde_json::Value)| answer.0 == 200;
                for answer in [&renewal, &take_over] {
                    if yes(answer) {
                        down.goes_down(RENEW_GROUP, 1, &tally);
                    }
                }
                let winner = match (yes(&renewal), yes(&take_over)) {
                    (true, false) if renewal.1["outcome"] == "already_held" => {
                        tally.renewals_won.fetch_add(1, Ordering::Relaxed);
                        Some((&mut a, &holder))
                    }
                    // With faults, a take-over whose answer was lost hears
                    // `already_held` on its retry; the holder's `slot_taken`
                    // says the take-over landed.
                    (false, true)
                        if take_over.1["outcome"] == "granted_expired"
                            || (faults
                                && take_over.1["outcome"] == "already_held"
                                && renewal.1["kind"] == "slot_taken") =>
                    {
                        tally.take_overs_won.fetch_add(1, Ordering::Relaxed);
                        Some((&mut b, &asker))
                    }
                    // With faults, a 503 (nothing known: the store stalled)
                    // leaves the round undecided, unless both were told 200.
                    (false, false) | (true, false) | (false, true)
                        if renewal.0 == 503 || take_over.0 == 503 =>
                    {
                        tally
                            .renewal_rounds_undecided
                            .fetch_add(1, Ordering::Relaxed);
                        None
                    }
                    _ => {
                        tally.renewal_rounds_wrong.fetch_add(1, Ordering::Relaxed);
                        eprintln!("renewal round {round}: {renewal:?} / {take_over:?}");
                        None
                    }
                };
                // The one told to reboot is back: it gives the slot back,
                // asking again after a 503 (nothing decided) as Zincati does.
                if let Some((sender, node)) = winner {
                    down.comes_back(RENEW_GROUP);
                    let mut tries = 0;
                    let (status, json) = loop {
                        let (status, json) =
                            call(sender, &addr, "steady-state", node, RENEW_GROUP).await;
                        tally.calls.fetch_add(1, Ordering::Relaxed);
                        tries += 1;
                        if status != 503 || tries == 10 {
                            break (status, json);
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    };
                    // After a 503, or the SDK's own retry inside the server
                    // after an answer lost on its way back, the release had
                    // landed: `not_held`, and the slot is free.
                    let landed_before = (status, json["outcome"].as_str())
                        == (200, Some("not_held"))
                        && (tries > 1 || !holds(&store, RENEW_GROUP, node).await);
                    if landed_before {
                        tally.answers_found_on_retry.fetch_add(1, Ordering::Relaxed);
                    } else if (status, json["outcome"].as_str()) != (200, Some("released")) {
                        unexpected(
                            &tally,
                            "a renewal round's winner giving back",
                            status,
                            &json,
                        );
                    }
                }
                // A node whose call had no answer (503) may hold the slot
                // all the same: it gives back whatever it holds at its next
                // boot, as Zincati does, asking again while the store stalls.
                for (answer, sender, node) in
                    [(&renewal, &mut a, &holder), (&take_over, &mut b, &asker)]
                {
                    if answer.0 != 503 {
                        continue;
                    }
                    for _ in 0..10 {
                        let (status, json) =
                            call(sender, &addr, "steady-state", node, RENEW_GROUP).await;
                        tally.calls.fetch_add(1, Ordering::Relaxed);
                        match (status, json["outcome"].as_str()) {
                            (200, Some("released" | "not_held")) => break,
                            (503, _) => tokio::time::sleep(Duration::from_millis(100)).await,
                            _ => {
                                unexpected(&tally, "an undecided round's boot", status, &json);
                                break;
                            }
                        }
                    }
                }
            }
        })
    };

    // Exclusions: exclude EXCLUDED_NODE for 2 s, include it for 2 s, until
    // the end; then include it so that it can finish.
    let excluder = {
        let (tally, exclusions) = (Arc::clone(&tally), Arc::clone(&exclusions));
        let store = DynamoStore::new(aws_sdk_dynamodb::Client::new(&load_config().await), &table);
        tokio::spawn(async move {
            let group = GroupName::parse(GROUPS[0].0).unwrap();
            let node = fleetlock::domain::input::NodeId::parse(EXCLUDED_NODE).unwrap();
            let reason = PauseReason::parse("soak: excluded by the operator task").unwrap();
            while Instant::now() + Duration::from_secs(4) < deadline {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let exclusion = ByPerson {
                    reason: reason.clone(),
                    since: Timestamp::now(),
                    by: "soak".into(),
                };
                store
                    .exclude(&group, &node, exclusion)
                    .await
                    .expect("exclude");
                exclusions
                    .write()
                    .await
                    .intervals
                    .push((Instant::now(), None));
                tally.exclusion_flips.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(2)).await;
                if let Some(last) = exclusions.write().await.intervals.last_mut() {
                    last.1 = Some(Instant::now());
                }
                store.include(&group, &node).await.expect("include");
            }
        })
    };

    // The drain hook confirms each reservation of `DRAIN_GROUP`, noting it
    // first for the reader (a grant it never set out to confirm is one
    // that skipped the drain).
    let hook = {
        let store = Arc::new(DynamoStore::new(
            aws_sdk_dynamodb::Client::new(&load_config().await),
            &table,
        ));
        let (reader, group) = (Arc::clone(&store), GroupName::parse(DRAIN_GROUP).unwrap());
        let (confirm_tally, confirming) = (Arc::clone(&tally), Arc::clone(&confirming));
        let confirm = move |id: NodeId, since: Timestamp, first: bool| {
            let (store, group) = (Arc::clone(&store), group.clone());
            if first {
                confirming.note(id.as_str(), since);
                confirm_tally
                    .confirmations_sent
                    .fetch_add(1, Ordering::Relaxed);
            }
            async move {
                let decided = store.drained(&group, &id, Some(since), Timestamp::now());
                decided.await.map(|d| d.outcome == Drained::Granted)
            }
        };
        let reservations = TableHook {
            group: DRAIN_GROUP,
            seed: 0xD8A1_4E5D,
            lost: None,
            waiting: |record| record.draining,
            confirmed: |t| &t.confirmations_granted,
            twice: |t| &t.late_confirmations_granted,
            late_refused: |t| &t.late_confirmations_refused,
        };
        reservations.spawn(reader, Arc::clone(&tally), deadline, confirm)
    };

    // The return hook confirms each return of `RETURN_GROUP`, except the
    // first of `LOST_NODE`: that node "never came back".
    let return_store = Arc::new(DynamoStore::new(
        aws_sdk_dynamodb::Client::new(&load_config().await),
        &table,
    ));
    let return_hook = {
        let (store, group) = (
            Arc::clone(&return_store),
            GroupName::parse(RETURN_GROUP).unwrap(),
        );
        let confirm = move |id: NodeId, since: Timestamp, _first: bool| {
            let (store, group) = (Arc::clone(&store), group.clone());
            async move {
                let decided = store.returned(&group, &id, Some(since), Timestamp::now());
                decided.await.map(|d| d.outcome == Returned::Freed)
            }
        };
        let returns = TableHook {
            group: RETURN_GROUP,
            seed: 0x8E7B_12A9,
            lost: Some(LOST_NODE),
            waiting: |record| record.returning,
            confirmed: |t| &t.returns_confirmed,
            twice: |t| &t.late_returns_freed,
            late_refused: |t| &t.late_returns_refused,
        };
        returns.spawn(
            Arc::clone(&return_store),
            Arc::clone(&tally),
            deadline,
            confirm,
        )
    };

    // The sweeper: what the drained function's schedule does, every 2 s
    // here instead of 5 minutes: each return past the timeout stops the
    // group, once.
    let sweeper = {
        let (tally, store) = (Arc::clone(&tally), Arc::clone(&return_store));
        tokio::spawn(async move {
            let group = GroupName::parse(RETURN_GROUP).unwrap();
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_secs(2)).await;
                let Ok(groups) = store.groups(Some(&group)).await else {
                    continue;
                };
                let now = Timestamp::now();
                for (_, record) in groups {
                    for (id, since) in record.returns_overdue(RETURN_TIMEOUT, now) {
                        let stopped = store
                            .stop_rollout(
                                &group,
                                &id,
                                since,
                                fleetlock::domain::lock::StopCause::Return,
                                now,
                            )
                            .await;
                        if stopped.map(|d| d.outcome)
                            == Ok(fleetlock::domain::lock::Stopping::Stopped)
                        {
                            tally.stops.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    };

    // The person on call: sees the stop in the table, and clears it with
    // the real command line, as the docs say (the node is back: confirm its
    // return, then resume).
    let on_call = {
        let (tally, store) = (Arc::clone(&tally), Arc::clone(&return_store));
        let (binary, table) = (binary.clone(), table.clone());
        tokio::spawn(async move {
            let group = GroupName::parse(RETURN_GROUP).unwrap();
            while Instant::now() < deadline {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Ok(mut groups) = store.groups(Some(&group)).await else {
                    continue;
                };
                let Some((_, record)) = groups.pop() else {
                    continue;
                };
                let Some(stop) = record.pause.stop else {
                    continue;
                };
                if clear_stop(&binary, &table, &stop).await {
                    tally.stops_cleared_by_cli.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.cli_failures.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    // The independent reader: strongly consistent scans, all the time.
    let stop = Arc::new(AtomicBool::new(false));
    let reading = {
        let (stop, tally) = (Arc::clone(&stop), Arc::clone(&tally));
        let confirming = Arc::clone(&confirming);
        tokio::spawn(async move {
            let slots: BTreeMap<&str, u32> =
                GROUPS.iter().copied().chain([(RENEW_GROUP, 1)]).collect();
            let mut most: BTreeMap<String, usize> = BTreeMap::new();
            // Per group: the latest release time seen stored, and the
            // holders seen in the previous scan.
            let mut latest_release: BTreeMap<String, Timestamp> = BTreeMap::new();
            let mut seen: BTreeMap<String, Vec<(String, Timestamp)>> = BTreeMap::new();
            let mut first_scan = true;
            // Each exclusion (node, its `since`) and when the reader first
            // saw it stored, by the reader's clock after that scan.
            let mut exclusion_seen: BTreeMap<(String, u64), Timestamp> = BTreeMap::new();
            while !stop.load(Ordering::Relaxed) {
                let groups = reader.groups(None).await.expect("consistent scan");
                let scanned = Timestamp::now();
                tally.reads.fetch_add(1, Ordering::Relaxed);
                for (name, record) in &groups {
                    for (id, exclusion) in &record.excluded {
                        let key = (id.to_string(), exclusion.since.0);
                        let seen_at = *exclusion_seen.entry(key).or_insert(scanned);
                        if let Some(held_since) = record.holders.held_since(id)
                            && held_since > seen_at
                        {
                            tally
                                .reader_grants_while_excluded
                                .fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    let name = name.to_string();
                    if name == DRAIN_GROUP {
                        for (id, at) in record.holders.holders() {
                            // Granted (not reserved): its reservation, made
                            // before `at`, must be one the hook set out to
                            // confirm (within a drain timeout of it).
                            let granted_since = at.minus(Duration::from_secs(60));
                            if !record.draining.contains_key(id)
                                && !confirming.any_since(id.as_str(), granted_since)
                            {
                                tally
                                    .reader_undrained_grants
                                    .fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    let before = latest_release.get(&name).copied();
                    // A holder new since the last scan landed after every
                    // release seen until then: it must have taken its slot
                    // (server time) at least the settle time after them.
                    if name == SETTLE_GROUP
                        && let Some(released) = before
                        && !first_scan
                    {
                        let known = seen.get(&name).cloned().unwrap_or_default();
                        let early = record
                            .holders
                            .holders()
                            .filter(|(id, at)| !known.contains(&(id.to_string(), *at)))
                            .filter(|(_, at)| *at < released.plus(SETTLE))
                            .count();
                        tally
                            .grants_inside_settle
                            .fetch_add(early as u64, Ordering::Relaxed);
                    }
                    if let Some(released) = record.last_release {
                        if before.is_some_and(|before| released < before) {
                            tally
                                .release_time_moved_back
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        let latest = before.map_or(released, |b| b.max(released));
                        latest_release.insert(name.clone(), latest);
                    }
                    seen.insert(
                        name.clone(),
                        record
                            .holders
                            .holders()
                            .map(|(id, at)| (id.to_string(), at))
                            .collect(),
                    );
                    let held = record.holders.len();
                    let entry = most.entry(name.clone()).or_default();
                    *entry = (*entry).max(held);
                    if name == RETURN_GROUP {
                        // Out of service: reserved, holding and returning,
                        // every one an `h:` attribute of the item.
                        let out = record.holders.len() as u64;
                        tally.most_out_of_service.fetch_max(out, Ordering::Relaxed);
                        let returning = record.returning.len() as u64;
                        tally.most_returning.fetch_max(returning, Ordering::Relaxed);
                    }
                    if held > slots[name.as_str()] as usize {
                        tally.reads_over_slots.fetch_add(1, Ordering::Relaxed);
                    }
                    if name == ZONED_GROUP {
                        // Out of service (every `h:`): all of one zone.
                        let zones: std::collections::BTreeSet<_> = record
                            .holders
                            .holders()
                            .filter_map(|(id, _)| zone_of_id(id.as_str()))
                            .collect();
                        if zones.len() > 1 {
                            tally.reader_two_zones.fetch_add(1, Ordering::Relaxed);
                            eprintln!("the reader saw zones {zones:?} out in {ZONED_GROUP}");
                        }
                    }
                }
                first_scan = false;
            }
            (reader, most)
        })
    };

    let mut rss = Vec::new();
    while Instant::now() < deadline {
        rss.push((
            started.elapsed().as_secs(),
            memory_kib(pid, "VmRSS:").unwrap_or(0),
        ));
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    operator.await.unwrap();
    excluder.await.unwrap();
    planter.await.unwrap();
    renewer.await.unwrap();
    hook.await.unwrap();
    return_hook.await.unwrap();
    sweeper.await.unwrap();
    on_call.await.unwrap();
    for task in nodes {
        task.await.unwrap();
    }
    // Nodes that gave their slot back after the return hook stopped: their
    // returns are confirmed now, and a stop left is cleared by the CLI, so
    // that every slot is free at the end.
    {
        let group = GroupName::parse(RETURN_GROUP).unwrap();
        let stored = return_store.groups(Some(&group)).await.unwrap();
        for (_, record) in stored {
            if let Some(stop) = &record.pause.stop {
                if clear_stop(&binary, &table, stop).await {
                    tally.stops_cleared_by_cli.fetch_add(1, Ordering::Relaxed);
                } else {
                    tally.cli_failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            for (id, since) in record.returning {
                let done = return_store
                    .returned(&group, &id, Some(since), Timestamp::now())
                    .await;
                if done.is_ok_and(|d| d.outcome == fleetlock::domain::lock::Returned::Freed) {
                    tally
                        .returns_confirmed_after
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
    rss.push((
        started.elapsed().as_secs(),
        memory_kib(pid, "VmRSS:").unwrap_or(0),
    ));
    stop.store(true, Ordering::Relaxed);
    let (reader, most) = reading.await.unwrap();
    let stored = reader.groups(None).await.unwrap();
    let is_ghost = |id: &fleetlock::domain::input::NodeId| id.as_str().starts_with(GHOST_PREFIX);
    let holders_left = || stored.iter().flat_map(|(_, r)| r.holders.holders());
    let left: Vec<String> = holders_left()
        .filter(|(id, _)| !is_ghost(id))
        .map(|(id, _)| id.to_string())
        .collect();
    let ghosts_left = holders_left().filter(|(id, _)| is_ghost(id)).count() as u64;
    // Its start included: a few milliseconds against a soak's minutes.
    let server_cpu = process_cpu_of(pid);
    server.kill().await.ok();

    let t = &tally;
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let elapsed = started.elapsed().as_secs_f64();
    let under = if faults {
        ", DynamoDB behind the fault proxy"
    } else if conflicts {
        ", every request 30 ms slower and one write in four refused by the proxy as \
         ReplicatedWriteConflictException"
    } else {
        ""
    };
    println!("### Soak: {NODES} nodes, groups {groups_spec}, {elapsed:.0} s{under}\n");
    println!("| figure | value |");
    println!("|---|---:|");
    println!(
        "| protocol calls | {} ({:.0}/s) |",
        get(&t.calls),
        get(&t.calls) as f64 / elapsed
    );
    println!(
        "| the server's CPU per protocol call, ms | {:.3} |",
        server_cpu.as_secs_f64() * 1000.0 / get(&t.calls).max(1) as f64
    );
    println!(
        "| granted / already held / full (423) | {} / {} / {} |",
        get(&t.granted),
        get(&t.already_held),
        get(&t.full)
    );
    println!(
        "| released / not held | {} / {} |",
        get(&t.released),
        get(&t.not_held)
    );
    println!(
        "| consistent table scans by the reader | {} |",
        get(&t.reads)
    );
    println!("| most holders seen by the reader | {most:?} |");
    println!(
        "| **scans with more holders than slots** | **{}** |",
        get(&t.reads_over_slots)
    );
    println!(
        "| **grants whose returned item had more holders than slots** | **{}** |",
        get(&t.over_grants)
    );
    println!(
        "| **lost releases** (a granted node not hearing `released`) | **{}** |",
        get(&t.lost_releases)
    );
    println!(
        "| pauses of `{PAUSED_GROUP}` by the operator task / `group_paused` answers | {} / {} |",
        get(&t.pause_flips),
        get(&t.paused)
    );
    println!(
        "| **grants to `{PAUSED_GROUP}` answered while certainly paused** | **{}** |",
        get(&t.grants_while_paused)
    );
    println!(
        "| exclusions of `{EXCLUDED_NODE}` by the operator task / `node_excluded` answers | {} / {} |",
        get(&t.exclusion_flips),
        get(&t.excluded)
    );
    println!(
        "| **grants to `{EXCLUDED_NODE}` answered while certainly excluded / seen by the reader taken after its exclusion** | **{} / {}** |",
        get(&t.grants_while_excluded),
        get(&t.reader_grants_while_excluded)
    );
    println!(
        "| grants heard in `{ZONED_GROUP}` ({ZONES} zones, 3 slots, `FLEETLOCK_ZONES`) / `another_zone_out` answers | {} / {} |",
        get(&t.zoned_grants),
        get(&t.other_zone)
    );
    println!(
        "| **nodes of `{ZONED_GROUP}` granted while a node of another zone was down / scans with two zones out** | **{} / {}** |",
        get(&t.two_zones_down),
        get(&t.reader_two_zones)
    );
    println!(
        "| `settling` answers in `{SETTLE_GROUP}` (settle {}s) | {} |",
        SETTLE.as_secs(),
        get(&t.settling)
    );
    println!(
        "| **holders of `{SETTLE_GROUP}` seen taken within the settle time after a release seen stored** | **{}** |",
        get(&t.grants_inside_settle)
    );
    println!(
        "| **scans whose last release is earlier than one seen before** | **{}** |",
        get(&t.release_time_moved_back)
    );
    println!(
        "| **times more nodes of a group were down than its slots** | **{}** |",
        get(&t.down_over_slots)
    );
    println!(
        "| `settling` in groups without a settle time (the request arrived before a release that landed first) | {} |",
        get(&t.raced_a_later_release)
    );
    if let Some(proxy) = &proxy {
        let (seen, forwarded) = proxy.counts();
        println!(
            "| DynamoDB requests through the fault proxy / forwarded | {seen} / {forwarded} |"
        );
    }
    println!(
        "| `503 store_unavailable` while DynamoDB Local stalled / answers found on retry | {} / {} |",
        get(&t.store_unavailable),
        get(&t.answers_found_on_retry)
    );
    // Planted, minus those left, minus those that renewed and gave back.
    let ghosts_taken = get(&t.ghosts_planted) - ghosts_left - get(&t.ghosts_renewed);
    // With faults, a take-over's answer may be lost and its retry heard as
    // `already_held`: fewer answers than slots taken is fine, more is not.
    let take_overs_of_the_living = get(&t.take_overs).saturating_sub(ghosts_taken);
    println!(
        "| expired holders planted in `{LEASED_GROUP}` (lease {LEASE}) / taken over (stored) / `granted_expired` answers | {} / {ghosts_taken} / {} |",
        get(&t.ghosts_planted),
        get(&t.take_overs)
    );
    println!(
        "| **take-overs answered beyond the expired holders taken** | **{take_overs_of_the_living}** |"
    );
    println!(
        "| holders granted a day ago in `{RENEW_GROUP}` (1 slot, lease {LEASE}) renewing while a newcomer asks: renewal won / take-over won / undecided, a 503 / **both or neither told 200** | {} / {} / {} / **{}** |",
        get(&t.renewals_won),
        get(&t.take_overs_won),
        get(&t.renewal_rounds_undecided),
        get(&t.renewal_rounds_wrong)
    );
    println!(
        "| planted holders asking again past their lease: renewed (then released) / refused, taken over before (423) | {} / {} |",
        get(&t.ghosts_renewed),
        get(&t.ghosts_told_taken)
    );
    println!(
        "| `waiting_for_drain` answers in `{DRAIN_GROUP}` (drain {DRAIN}) / confirmations sent / granted / 200s after a confirmation | {} / {} / {} / {} |",
        get(&t.waiting_for_drain),
        get(&t.confirmations_sent),
        get(&t.confirmations_granted),
        get(&t.drained_grants)
    );
    println!(
        "| reservations ended by a waiting node's steady-state / late confirmations refused | {} / {} |",
        get(&t.reservations_ended),
        get(&t.late_confirmations_refused)
    );
    println!(
        "| **undrained grants: answered 200 / seen by the reader / a reservation granted twice** | **{} / {} / {}** |",
        get(&t.undrained_grants),
        get(&t.reader_undrained_grants),
        get(&t.late_confirmations_granted)
    );
    println!(
        "| returns started in `{RETURN_GROUP}` (return timeout {}s) / `waiting_for_return` answers / confirmed by the hook / late repeats refused / confirmed after the run | {} / {} / {} / {} / {} |",
        RETURN_TIMEOUT.as_secs(),
        get(&t.returns_started),
        get(&t.waiting_for_return),
        get(&t.returns_confirmed),
        get(&t.late_returns_refused),
        get(&t.returns_confirmed_after)
    );
    println!(
        "| most nodes of `{RETURN_GROUP}` out of service at once in a scan (reserved + holding + returning) / of them returning | {} of {} slots / {} |",
        get(&t.most_out_of_service),
        GROUPS
            .iter()
            .find(|(g, _)| *g == RETURN_GROUP)
            .map_or(0, |(_, n)| *n),
        get(&t.most_returning)
    );
    println!(
        "| rollouts stopped by a return past its timeout / cleared with `fleetlock returned` and `fleetlock resume` | {} / {} |",
        get(&t.stops),
        get(&t.stops_cleared_by_cli)
    );
    println!(
        "| **a return freed twice / CLI runs that failed or did not say what they cleared** | **{} / {}** |",
        get(&t.late_returns_freed),
        get(&t.cli_failures)
    );
    println!("| unexpected answers | {} |", get(&t.unexpected));
    println!(
        "| holders left after every node stopped (expired holders not taken over apart) | {} ({ghosts_left}) {left:?} |",
        left.len()
    );
    let samples: Vec<String> = rss
        .iter()
        .map(|(s, k)| format!("{s}s: {:.1}", *k as f64 / 1024.0))
        .collect();
    println!("| server RSS, MiB | {} |", samples.join(", "));
    let violations = get(&t.reads_over_slots)
        + get(&t.grants_while_paused)
        + get(&t.grants_while_excluded)
        + get(&t.reader_grants_while_excluded)
        + get(&t.grants_inside_settle)
        + get(&t.release_time_moved_back)
        + get(&t.down_over_slots)
        + get(&t.two_zones_down)
        + get(&t.reader_two_zones)
        + get(&t.over_grants)
        + get(&t.lost_releases)
        + get(&t.unexpected)
        + get(&t.undrained_grants)
        + get(&t.reader_undrained_grants)
        + get(&t.late_confirmations_granted)
        + get(&t.renewal_rounds_wrong)
        + get(&t.late_returns_freed)
        + get(&t.cli_failures)
        + take_overs_of_the_living
        + left.len() as u64;
    if violations > 0 {
        eprintln!("soak FAILED: {violations} violation(s)");
        std::process::exit(1);
    }
}
