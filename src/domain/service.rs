//! FleetLock's two operations over a lock store and the configured groups.
//! Knows nothing of HTTP: it takes validated parameters and returns an answer
//! or an [`Error`].

use std::sync::Arc;
use std::time::Duration;

use crate::domain::agreement::{Recorded, SettingsDigests};
use crate::domain::error::Error;
use crate::domain::groups::{GroupSlots, format_duration};
use crate::domain::input::GroupName;
use crate::domain::input::{ClientParams, NodeId};
use crate::domain::lock::{Acquire, Clock, GroupRules, Pause, Release, SystemClock, Timestamp};
use crate::domain::store::StoreError;
use crate::domain::store::{Decided, GroupRecord, LockStore};
use crate::domain::windows::{Schedule, WindowState};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Granted,
    /// Granted the slot of a holder past the group's lease, in its place.
    GrantedExpired,
    AlreadyHeld,
    /// Every slot is taken: a decision like the others, refused at the edge.
    Full,
    /// A person or an alarm paused the group: refused at the edge.
    Paused,
    /// A person keeps the node out of the rollout: refused at the edge.
    Excluded,
    /// The group settles after a release: refused at the edge.
    Settling,
    /// A new group only `*` covers, past the limit: refused at the edge.
    TooManyGroups,
    /// A slot was reserved for the node, which waits for its drain: refused
    /// at the edge (`waiting_for_drain`), never a 2xx before the drain.
    Reserved,
    /// The node's reserved slot still waits for its drain: refused.
    WaitingForDrain,
    /// The node's reserved slot waited past its drain timeout, and the
    /// group holds on timeout: refused, and counted for the alarm.
    DrainOverdue,
    /// The node's reserved slot waited past its drain timeout, and the
    /// group grants on timeout: granted undrained.
    GrantedDrainTimeout,
    /// The maintenance window closes before a drain begun now would end:
    /// refused, no drain begins.
    WindowClosing,
    /// The node's slot is returning (its steady-state came, its return is
    /// not confirmed): refused.
    WaitingForReturn,
    Released,
    NotHeld,
    /// In a group with a return gate: the steady-state left the slot
    /// counted as returning until the node's return is confirmed.
    Returning,
    /// A steady-state of a node whose slot was returning already: nothing
    /// changed.
    StillReturning,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Granted => "granted",
            Outcome::GrantedExpired => "granted_expired",
            Outcome::AlreadyHeld => "already_held",
            Outcome::Full => "full",
            Outcome::Paused => "paused",
            Outcome::Excluded => "excluded",
            Outcome::Settling => "settling",
            Outcome::TooManyGroups => "too_many_groups",
            Outcome::Reserved => "reserved",
            Outcome::WaitingForDrain => "waiting_for_drain",
            Outcome::DrainOverdue => "drain_overdue",
            Outcome::GrantedDrainTimeout => "granted_drain_timeout",
            Outcome::WindowClosing => "window_closing",
            Outcome::WaitingForReturn => "waiting_for_return",
            Outcome::Released => "released",
            Outcome::NotHeld => "not_held",
            Outcome::Returning => "returning",
            Outcome::StillReturning => "still_returning",
        }
    }
}

/// A decision, with the group as it stands after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Answer {
    pub outcome: Outcome,
    pub holders: usize,
    pub slots: u32,
    /// How long the longest holder has kept its slot: a stuck node shows here.
    pub oldest_holder_age: Option<Duration>,
    /// For a decision that grants nothing (full, paused, settling): the
    /// refusal Zincati hears, non-2xx with its own kind.
    pub refusal: Option<Error>,
    /// For [`Outcome::GrantedExpired`] (and a [`Outcome::Reserved`] that
    /// took an expired slot): whose slot it was, and how long it had been
    /// held.
    pub expired: Option<ExpiredSlot>,
    /// In a group with a drain gate: how many of its reservations waited
    /// past their drain timeout, after this decision (what the alarm on
    /// drains nobody confirmed reads). `None` in a group without one.
    pub drains_overdue: Option<usize>,
    /// For a pre-reboot in a group with a lease: how long the lease of a
    /// slot held now runs (from this answer, for a holder that renewed).
    pub lease: Option<Duration>,
    /// In a group with a return gate: its returning slots after this
    /// decision. `None` in a group without one.
    pub returns: Option<Returns>,
}

/// A group's returning slots as a decision left them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Returns {
    pub returning: usize,
    /// How long the oldest return has waited for its confirmation.
    pub oldest: Option<Duration>,
    /// How many returns waited past the group's return timeout.
    pub overdue: usize,
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

/// A slot that passed from a holder past its lease to the node that asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpiredSlot {
    pub holder: NodeId,
    pub held: Duration,
}

pub struct FleetLock<S> {
    groups: GroupSlots,
    store: S,
    clock: Arc<dyn Clock>,
    windows: Schedule,
    agreement: Option<Agreement>,
}

/// On a global table: the region this function serves, the digests of its
/// settings, who records them, and the regions' records as last read (at
/// most `refresh` ago while reads succeed).
struct Agreement {
    region: String,
    ours: SettingsDigests,
    /// This function's name in its record ([`crate::domain::agreement::BY`]);
    /// empty: none.
    by: String,
    refresh: Duration,
    stale_limit: Duration,
    seen: std::sync::Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// The records and when they were read.
    read: Option<(std::time::Instant, Arc<Recorded>)>,
    /// The last read tried, successful or not.
    tried: Option<std::time::Instant>,
}

impl Agreement {
    /// Keeps the regions' records as read now.
    fn remember(&self, recorded: Arc<Recorded>) {
        let now = std::time::Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.read = Some((now, recorded));
        seen.tried = Some(now);
    }

    /// This region's record as written: the digests and who wrote them.
    fn record(&self) -> crate::domain::agreement::Digests {
        let mut record = self.ours.as_map().clone();
        if !self.by.is_empty() {
            record.insert(crate::domain::agreement::BY.to_owned(), self.by.clone());
        }
        record
    }
}

/// How long a function trusts the regions' records it read: a region that
/// changes its settings is refused here within this long (and refuses
/// itself at once, from its own start).
pub const AGREEMENT_REFRESH: Duration = Duration::from_secs(30);

/// How long a function serves on the last records it read while reading
/// them again fails (a throttled or denied read, a region's outage); past
/// it, every group is refused (503) until a read succeeds. Safe: a region
/// that changes its settings refuses the group itself from its start, so
/// records read late delay only this region's noticing it.
pub const AGREEMENT_STALE_LIMIT: Duration = Duration::from_secs(300);

/// After a failed read, the next is tried no sooner than this: a failing
/// read does not add a request to every call.
const AGREEMENT_RETRY: Duration = Duration::from_secs(5);

impl<S: LockStore> FleetLock<S> {
    pub fn new(groups: GroupSlots, store: S) -> Self {
        Self {
            groups,
            store,
            clock: Arc::new(SystemClock),
            windows: Schedule::default(),
            agreement: None,
        }
    }

    /// The same service on a global table: it serves a group only while no
    /// other region recorded other deciding settings for it, read again at
    /// most every `refresh`. [`Self::record_settings`] records this
    /// region's.
    pub fn agreeing(mut self, region: impl Into<String>, refresh: Duration) -> Self {
        self.agreement = Some(Agreement {
            region: region.into(),
            ours: SettingsDigests::of(&self.groups, &self.windows),
            by: String::new(),
            refresh,
            stale_limit: AGREEMENT_STALE_LIMIT,
            seen: std::sync::Mutex::new(Seen::default()),
        });
        self
    }

    /// Who this function is in its region's record (the function's name):
    /// a second stack in the same region on the same table that records
    /// over it is then compared with it, as another region is.
    pub fn recorded_as(mut self, by: impl Into<String>) -> Self {
        if let Some(agreement) = &mut self.agreement {
            agreement.by = by.into();
        }
        self
    }

    /// How long the last records read serve while reading them again
    /// fails ([`AGREEMENT_STALE_LIMIT`] unless set).
    pub fn serving_stale_for(mut self, limit: Duration) -> Self {
        if let Some(agreement) = &mut self.agreement {
            agreement.stale_limit = limit;
        }
        self
    }

    /// Records this region's settings in the table (one write, at start)
    /// and keeps every region's record as it read it back; the regions
    /// whose settings differ from these, by group, for the start's log.
    pub async fn record_settings(&self) -> Result<Vec<(String, String)>, StoreError> {
        let Some(agreement) = &self.agreement else {
            return Ok(Vec::new());
        };
        let recorded = self
            .store
            .record_settings(&agreement.region, &agreement.record())
            .await?;
        let differing = agreement.ours.disagreements(&agreement.region, &recorded);
        agreement.remember(Arc::new(recorded));
        Ok(differing)
    }

    /// On a global table: refused when another region recorded other
    /// deciding settings for `group`. The records are read again (one
    /// consistent read) when older than the refresh period.
    async fn check_agreement(&self, group: &GroupName) -> Result<(), Error> {
        let Some(agreement) = &self.agreement else {
            return Ok(());
        };
        let recorded = self.regions_records(agreement, group).await?;
        let recorded =
            crate::domain::agreement::compared(&agreement.region, &agreement.by, &recorded);
        match agreement
            .ours
            .disagreeing(&agreement.region, &recorded, group)
        {
            Some(region) => {
                tracing::error!(
                    group = %group,
                    region,
                    "settings differ: another region serves this group with other settings on \
                     the same table; deploy the same settings in every region"
                );
                Err(Error::SettingsDiffer {
                    group: group.to_string(),
                    region: region.to_owned(),
                })
            }
            None => Ok(()),
        }
    }

    /// The regions' records: as last read while younger than the refresh;
    /// else read again (one consistent read), and this region's record
    /// written again if it is missing (forgotten, or malformed and left
    /// out). A failed read serves on the last records up to
    /// [`AGREEMENT_STALE_LIMIT`], trying again every [`AGREEMENT_RETRY`].
    async fn regions_records(
        &self,
        agreement: &Agreement,
        group: &GroupName,
    ) -> Result<Arc<Recorded>, Error> {
        let (last, may_try) = {
            let seen = agreement.seen.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, recorded)) = &seen.read
                && at.elapsed() < agreement.refresh
            {
                return Ok(Arc::clone(recorded));
            }
            let retry = AGREEMENT_RETRY.min(agreement.refresh);
            let may_try = seen.tried.is_none_or(|at| at.elapsed() >= retry);
            (seen.read.clone(), may_try)
        };
        let usable = last
            .filter(|(at, _)| at.elapsed() < agreement.stale_limit)
            .map(|(_, recorded)| recorded);
        if !may_try && let Some(recorded) = usable {
            return Ok(recorded);
        }
        agreement
            .seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .tried = Some(std::time::Instant::now());
        let read = match self.store.recorded_settings().await {
            Ok(read) if !read.contains_key(&agreement.region) => {
                tracing::warn!(
                    region = agreement.region,
                    "this region's settings record is missing (forgotten, or unreadable): \
                     recording it again"
                );
                self.store
                    .record_settings(&agreement.region, &agreement.record())
                    .await
            }
            other => other,
        };
        match read {
            Ok(read) => {
                let read = Arc::new(read);
                agreement.remember(Arc::clone(&read));
                Ok(read)
            }
            Err(err) => match usable {
                Some(recorded) => {
                    tracing::warn!(
                        group = %group,
                        error = %err,
                        "the regions' settings could not be read again: serving on the last \
                         read, for at most 5 minutes after it"
                    );
                    Ok(recorded)
                }
                None => {
                    tracing::error!(
                        group = %group,
                        error = %err,
                        "lock store failed on the regions' settings, and the last read is \
                         over 5 minutes old: refusing until a read succeeds"
                    );
                    Err(Error::from(&err))
                }
            },
        }
    }

    /// The same service with maintenance windows (on a global table, in
    /// the digests it compares too, whichever was set first).
    pub fn with_windows(mut self, windows: Schedule) -> Self {
        self.windows = windows;
        if let Some(agreement) = &mut self.agreement {
            agreement.ours = SettingsDigests::of(&self.groups, &self.windows);
        }
        self
    }

    /// The same service reading the time from `clock` (tests move it).
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// `v1/pre-reboot`: take a slot, or confirm the one already held. Outside
    /// the group's maintenance windows every node is refused, holders too (they
    /// keep their slot and reboot in the next window), without asking the store.
    pub async fn pre_reboot(&self, params: &ClientParams) -> Result<Answer, Error> {
        let mut rules = self.groups.rules_for(&params.group)?;
        let now = self.clock.now();
        match self.windows.state(&params.group, now) {
            WindowState::Closed { opens } => {
                return Err(Error::OutsideMaintenanceWindow {
                    group: params.group.to_string(),
                    // In UTC the zone's clock says the same again: once is enough.
                    opens: opens.map(|at| {
                        let local = (!self.windows.is_utc()).then(|| self.windows.local_text(at));
                        (at.to_rfc3339(), local)
                    }),
                });
            }
            // A drain begins only if the window stays open until it times
            // out: a drained node is not left out of service to the next one.
            WindowState::Open {
                until: Some(closes),
            } => {
                if let Some(drain) = rules.drain.as_mut()
                    && closes < now.plus(drain.timeout)
                {
                    drain.window_closes = Some(closes);
                }
            }
            _ => {}
        }
        self.check_agreement(&params.group).await?;
        let Decided { outcome, group, .. } = self
            .store
            .acquire(&params.group, &params.id, rules, now)
            .await
            .map_err(|err| {
                tracing::error!(group = %params.group, error = %err, "lock store failed on pre-reboot");
                Error::from(&err)
            })?;
        let name = params.group.to_string();
        let mut expired = None;
        let (outcome, refusal) = match outcome {
            Acquire::Granted => (Outcome::Granted, None),
            Acquire::TakesExpired { holder, since } => {
                let held = since.age_at(now);
                // The one decision that takes a slot from a node: the
                // operator finds it in the log, as the event's consumers do.
                tracing::warn!(
                    group = %params.group,
                    id = %params.id.shown(),
                    expired = %holder.shown(),
                    held_s = held.as_secs(),
                    lease = %rules.lease.map(format_duration).unwrap_or_default(),
                    "slot expired: a holder kept its slot past the group's lease, and the \
                     node that asked took it"
                );
                expired = Some(ExpiredSlot { holder, held });
                match group.draining.get(&params.id) {
                    // In a group with a drain gate the slot is reserved.
                    Some(&since) => (
                        Outcome::Reserved,
                        Some(waiting_for_drain(params, rules, since, true, false)),
                    ),
                    None => (Outcome::GrantedExpired, None),
                }
            }
            Acquire::Reserves => {
                let since = group.draining.get(&params.id).copied().unwrap_or(now);
                tracing::info!(
                    group = %params.group,
                    id = %params.id.shown(),
                    "slot reserved: the node waits for its drain to be confirmed"
                );
                (
                    Outcome::Reserved,
                    Some(waiting_for_drain(params, rules, since, true, false)),
                )
            }
            Acquire::Draining { since, overdue, .. } => (
                if overdue {
                    Outcome::DrainOverdue
                } else {
                    Outcome::WaitingForDrain
                },
                Some(waiting_for_drain(params, rules, since, false, overdue)),
            ),
            Acquire::DrainTimedOut { since } => {
                tracing::warn!(
                    group = %params.group,
                    id = %params.id.shown(),
                    waited_s = since.age_at(now).as_secs(),
                    "drain timed out: nobody confirmed the node's drain in time, and the group \
                     grants on timeout; the node reboots undrained"
                );
                (Outcome::GrantedDrainTimeout, None)
            }
            Acquire::WindowTooShort { closes } => (
                Outcome::WindowClosing,
                Some(Error::WindowClosesBeforeDrain {
                    group: name,
                    closes: closes.to_rfc3339(),
                    timeout: rules
                        .drain
                        .map(|drain| format_duration(drain.timeout))
                        .unwrap_or_default(),
                }),
            ),
            Acquire::Returning {
                since,
                until,
                overdue,
            } => (
                Outcome::WaitingForReturn,
                Some(Error::WaitingForReturn {
                    group: name,
                    id: params.id.shown(),
                    since: since.to_rfc3339(),
                    until: until.to_rfc3339(),
                    overdue,
                }),
            ),
            Acquire::AlreadyHeld => (Outcome::AlreadyHeld, None),
            // A node whose slot was taken over hears so: it was told yes,
            // and must learn that it holds nothing now.
            Acquire::Full => match group.taken.get(&params.id) {
                Some(taken_at) => (
                    Outcome::Full,
                    Some(Error::SlotTaken {
                        group: name,
                        id: params.id.shown(),
                        taken_at: taken_at.to_rfc3339(),
                        lease: rules.lease.map(format_duration),
                    }),
                ),
                None => (
                    Outcome::Full,
                    Some(Error::SemaphoreFull {
                        group: name,
                        holders: group.holders.len(),
                        slots: rules.slots,
                        lease_ends: lease_ends(&group, rules),
                    }),
                ),
            },
            Acquire::Paused => (
                Outcome::Paused,
                Some(Error::GroupPaused {
                    group: name,
                    why: paused_because(&group.pause),
                }),
            ),
            Acquire::Excluded => (
                Outcome::Excluded,
                Some(Error::NodeExcluded {
                    group: name,
                    id: params.id.shown(),
                    why: group
                        .excluded
                        .get(&params.id)
                        .map_or_else(|| "(no longer)".into(), excluded_because),
                }),
            ),
            Acquire::TooManyGroups { limit } => (
                Outcome::TooManyGroups,
                Some(Error::TooManyGroups { group: name, limit }),
            ),
            Acquire::Settling { until } => (
                Outcome::Settling,
                Some(Error::Settling {
                    group: name,
                    until: until.to_rfc3339(),
                    settle: format_duration(rules.settle),
                }),
            ),
        };
        Ok(Answer {
            expired,
            drains_overdue: drains_overdue(&group, rules, now),
            returns: returns(&group, rules, now),
            lease: rules.lease,
            ..answer(outcome, &group, rules.slots, now, refusal)
        })
    }

    /// `v1/steady-state`: give the slot back; a node holding none hears yes.
    /// Allowed in a paused or settling group: nobody is ever kept holding.
    pub async fn steady_state(&self, params: &ClientParams) -> Result<Answer, Error> {
        let rules = self.groups.rules_for(&params.group)?;
        self.check_agreement(&params.group).await?;
        let now = self.clock.now();
        let Decided { outcome, group, .. } = self
            .store
            .release(
                &params.group,
                &params.id,
                rules.return_timeout.is_some(),
                now,
            )
            .await
            .map_err(|err| {
                tracing::error!(group = %params.group, error = %err, "lock store failed on steady-state");
                Error::from(&err)
            })?;
        let outcome = match outcome {
            Release::Released => Outcome::Released,
            Release::NotHeld => Outcome::NotHeld,
            Release::Returning => {
                tracing::info!(
                    group = %params.group,
                    id = %params.id.shown(),
                    "slot returning: it counts until the node's return is confirmed"
                );
                Outcome::Returning
            }
            Release::StillReturning => Outcome::StillReturning,
        };
        Ok(Answer {
            drains_overdue: drains_overdue(&group, rules, now),
            returns: returns(&group, rules, now),
            ..answer(outcome, &group, rules.slots, now, None)
        })
    }
}

/// The refusal of a node whose slot is reserved since `since`.
fn waiting_for_drain(
    params: &ClientParams,
    rules: GroupRules,
    since: Timestamp,
    reserved_now: bool,
    overdue: bool,
) -> Error {
    let timeout = rules.drain.map_or(Duration::ZERO, |drain| drain.timeout);
    Error::WaitingForDrain {
        group: params.group.to_string(),
        id: params.id.shown(),
        since: since.to_rfc3339(),
        until: since.plus(timeout).to_rfc3339(),
        reserved_now,
        overdue,
    }
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

/// When a full group's longest-held slot may change hands, with its lease:
/// only with a lease, and not while the group holds more than its slots.
fn lease_ends(group: &GroupRecord, rules: GroupRules) -> Option<(String, String)> {
    let lease = rules.lease?;
    let (_, _, start) = group.longest_leased(rules.slots)?;
    Some((start.plus(lease).to_rfc3339(), format_duration(lease)))
}

/// "by alice since 2026-11-30T05:12:09Z: kernel regression", the alarms,
/// and the server's own stop.
pub fn paused_because(pause: &Pause) -> String {
    let person = pause
        .person
        .as_ref()
        .map(|p| format!("by {} since {}: {}", p.by, p.since.to_rfc3339(), p.reason));
    let alarms = (!pause.alarms.is_empty()).then(|| {
        let names: Vec<&str> = pause.alarms.iter().map(String::as_str).collect();
        format!("while alarm(s) {} are in ALARM", names.join(", "))
    });
    let stop = pause.stop.as_ref().map(|stop| {
        format!(
            "by the server since {}: node '{}' gave its slot back at {} and its return to \
             service was not confirmed within the return timeout",
            stop.at.to_rfc3339(),
            stop.id.shown(),
            stop.returning_since.to_rfc3339()
        )
    });
    let causes: Vec<String> = [person, alarms, stop].into_iter().flatten().collect();
    match causes.len() {
        0 => "(no longer)".into(),
        1 => causes[0].clone(),
        n => format!("{}, and {}", causes[..n - 1].join(", "), causes[n - 1]),
    }
}

/// Who excluded a node, when and why, as the refusal says it.
pub fn excluded_because(exclusion: &crate::domain::lock::ByPerson) -> String {
    format!(
        "by {} since {}: {}",
        exclusion.by,
        exclusion.since.to_rfc3339(),
        exclusion.reason
    )
}

fn answer(
    outcome: Outcome,
    group: &GroupRecord,
    slots: u32,
    now: Timestamp,
    refusal: Option<Error>,
) -> Answer {
    Answer {
        outcome,
        holders: group.holders.len(),
        slots,
        oldest_holder_age: group.holders.oldest().map(|(_, at)| at.age_at(now)),
        refusal,
        expired: None,
        drains_overdue: None,
        lease: None,
        returns: None,
    }
}

#[cfg(test)]
mod tests;
