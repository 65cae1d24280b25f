//! FleetLock's two operations over a lock store and the configured groups.
//! Knows nothing of HTTP: it takes validated parameters and returns an answer
//! or an [`Error`].

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::domain::agreement::{Recorded, SettingsDigests};
use crate::domain::error::Error;
use crate::domain::groups::GroupSlots;
use crate::domain::input::ClientParams;
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRules;
use crate::domain::lock::window;
use crate::domain::store::Decisions;
use crate::domain::store::StoreError;
use crate::domain::store::{Decided, LockStore};
use crate::domain::time::{Clock, SystemClock};
use crate::domain::windows::Schedule;

mod heard;

pub use heard::{Answer, ExpiredSlot, Grant, Outcome, Returns, drains_overdue, returns};

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
pub(crate) const AGREEMENT_REFRESH: Duration = Duration::from_secs(30);

/// How long a function serves on the last records it read while reading
/// them again fails (a throttled or denied read, a region's outage); past
/// it, every group is refused (503) until a read succeeds. Safe: a region
/// that changes its settings refuses the group itself from its start, so
/// records read late delay only this region's noticing it.
pub(crate) const AGREEMENT_STALE_LIMIT: Duration = Duration::from_secs(300);

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
    #[cfg(test)]
    pub(crate) fn serving_stale_for(mut self, limit: Duration) -> Self {
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

    /// The request as its group's slots see it, and their rules, by the one
    /// reading of a group's name ([`GroupSlots::meaning`]): a zone's group
    /// (`workers.us-east-1a`) asks for a slot of its parent (`workers`),
    /// whose item, settings and windows are its own, with the zone group in
    /// the rules; a name a configured group could mean is refused.
    fn resolve<'a>(
        &self,
        params: &'a ClientParams,
    ) -> Result<(Cow<'a, ClientParams>, GroupRules), Error> {
        let meaning = self.groups.meaning(&params.group)?;
        let mut rules = self.groups.rules_of(&meaning.group);
        rules.zone = meaning.zone;
        if meaning.group == params.group {
            return Ok((Cow::Borrowed(params), rules));
        }
        let params = ClientParams {
            id: params.id.clone(),
            group: meaning.group,
        };
        Ok((Cow::Owned(params), rules))
    }

    /// The group whose slots `group` takes, where it is a zone's group of a
    /// group split by zone: a credential for that group reaches its zones.
    pub fn zone_parent(&self, group: &GroupName) -> Option<GroupName> {
        self.groups.zone_parent(group)
    }

    /// The groups `*` made an item for whose names these settings read
    /// otherwise now (a zone of a group split since, a name a configured
    /// group means), with why: their holders are out of service and
    /// counted in no group's slots, so the start names them. One read, and
    /// only where `*` or a split by zone could have made one.
    pub async fn leftover_groups(&self) -> Result<Vec<(GroupName, String)>, StoreError> {
        if self.groups.others().is_none() && self.groups.zoned().next().is_none() {
            return Ok(Vec::new());
        }
        let made = self.store.wildcard_groups().await?;
        Ok(made
            .into_iter()
            .filter_map(|group| {
                let why = self.groups.no_longer_itself(&group)?;
                Some((group, why))
            })
            .collect())
    }

    /// `v1/pre-reboot`: take a slot, or confirm the one already held. Outside
    /// the group's maintenance windows every node is refused, holders too (they
    /// keep their slot and reboot in the next window), without asking the store
    /// ([`window::admit`]).
    pub async fn pre_reboot(&self, params: &ClientParams) -> Result<Answer, Error> {
        let (params, mut rules) = self.resolve(params)?;
        let params = &params;
        let now = self.clock.now();
        window::admit(&self.windows, &params.group, &mut rules, now)?;
        self.check_agreement(&params.group).await?;
        let Decided { outcome, group, .. } = self
            .store
            .acquire(&params.group, &params.id, rules, now)
            .await
            .map_err(|err| {
                tracing::error!(group = %params.group, error = %err, "lock store failed on pre-reboot");
                Error::from(&err)
            })?;
        Ok(heard::to_pre_reboot(params, rules, now, outcome, group))
    }

    /// `v1/steady-state`: give the slot back; a node holding none hears yes.
    /// Allowed in a paused or settling group: nobody is ever kept holding.
    pub async fn steady_state(&self, params: &ClientParams) -> Result<Answer, Error> {
        let (params, rules) = self.resolve(params)?;
        let params = &params;
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
        Ok(heard::to_steady_state(params, rules, now, outcome, group))
    }
}

#[cfg(test)]
mod tests;
