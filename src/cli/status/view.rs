//! The words `status` uses in its table and its JSON alike: a group's state
//! in one word, its windows, its slots, and durations as people read them.

use crate::config::Config;
use crate::domain::agreement::{Recorded, differing};
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRecord;
use crate::domain::lock::gates::Shown;
use crate::domain::lock::{GroupRules, WaveWait};
use crate::domain::time::Timestamp;
use crate::domain::windows::WindowState;

pub(crate) fn rfc3339(at: Timestamp) -> String {
    at.to_rfc3339()
}

/// What `status --group G` says of a group with no item.
pub(crate) fn unused_group(group: &GroupName, deployed: Option<&Config>) -> String {
    let configured = match deployed {
        None => "pass --function (or set FLEETLOCK_GROUPS as deployed) to see whether it is \
                 configured"
            .into(),
        Some(config) => match config.groups.slots_for(group) {
            Ok(1) => "it is configured with 1 slot".into(),
            Ok(slots) => format!("it is configured with {slots} slots"),
            Err(crate::domain::error::Error::UnknownGroup { meant: None, .. }) => {
                "it is not configured: its nodes are refused (unknown_group)".into()
            }
            Err(err) => format!(
                "it is not configured as a group of its own: its nodes are refused ({}): {}",
                err.kind(),
                err.value()
            ),
        },
    };
    format!("group '{group}' has no holders and has never been used; {configured}")
}

/// Why a stored group is no group of its own under the configuration now
/// (a zone of a group split by zone since `*` made it, a name a configured
/// group means): its holders are counted in no group's slots. `None` for
/// a group the configuration serves as itself, or when it is not known.
pub(crate) fn leftover(name: &GroupName, deployed: Option<&Config>) -> Option<String> {
    let why = deployed?.groups.no_longer_itself(name)?;
    Some(format!(
        "{name} was stored by '*' before the configuration named it otherwise: {why}; \
         whoever holds a slot here is out of service and counted in no group's slots: \
         release each once it is back ('fleetlock release --group {name} --id ID'), then \
         'fleetlock forget --group {name}'"
    ))
}

/// The lines that say which regions serve a global table and where their
/// settings differ; none on a table of one region.
pub(crate) fn regions(recorded: &Recorded) -> Vec<String> {
    if recorded.is_empty() {
        return Vec::new();
    }
    let names: Vec<&str> = recorded.keys().map(String::as_str).collect();
    let mut lines = vec![format!(
        "Regions that serve this table: {} (each recorded its settings at start).",
        names.join(", ")
    )];
    let differ = differing(recorded);
    if differ.is_empty() {
        lines.push("Their settings agree.".into());
    }
    for (group, regions) in differ {
        let group = if group == crate::domain::agreement::OTHERS {
            "the groups only '*' covers".to_owned()
        } else {
            format!("group '{group}'")
        };
        let regions: Vec<&str> = regions.iter().map(String::as_str).collect();
        lines.push(format!(
            "Settings differ for {group} between {}: its nodes are refused (settings_differ) \
             until the same settings are deployed in every region.",
            regions.join(", ")
        ));
    }
    lines
}

pub(crate) fn slots_text(record: &GroupRecord) -> String {
    match record.slots {
        Some(slots) => format!("{}/{slots}", record.holders.len()),
        None => record.holders.len().to_string(),
    }
}

/// The group's rules, if the configuration is known.
pub(crate) fn rules_of(name: &GroupName, deployed: Option<&Config>) -> Option<GroupRules> {
    deployed?.groups.rules_for(name).ok()
}

/// A group as the gates show it in `status`: with the rules and windows of
/// the configuration the function runs with, when known, and no hosts.
pub(crate) fn shown<'a>(
    name: &'a GroupName,
    record: &'a GroupRecord,
    deployed: Option<&'a Config>,
    now: Timestamp,
) -> Shown<'a> {
    Shown {
        name,
        record,
        rules: rules_of(name, deployed),
        deployed: deployed.is_some(),
        windows: deployed.map(|config| &config.windows),
        now,
        host_of: &|_| String::new(),
        host_json: None,
    }
}

/// When the group's settle period ends, if the configuration is known.
pub(crate) fn settles_until(
    name: &GroupName,
    record: &GroupRecord,
    deployed: Option<&Config>,
    now: Timestamp,
) -> Option<Timestamp> {
    record.settling_until(rules_of(name, deployed)?.settle, now)
}

pub(crate) fn window(
    name: &GroupName,
    deployed: Option<&Config>,
    now: Timestamp,
) -> Option<WindowState> {
    deployed.map(|config| config.windows.state(name, now))
}

/// The answer a newcomer would get now, in one word.
pub(crate) fn state(
    name: &GroupName,
    record: &GroupRecord,
    deployed: Option<&Config>,
    now: Timestamp,
) -> &'static str {
    if matches!(
        window(name, deployed, now),
        Some(WindowState::Closed { .. })
    ) {
        "closed"
    } else if record.pause.is_paused() {
        "paused"
    } else if settles_until(name, record, deployed, now).is_some() {
        "settling"
    } else {
        // A canary's wave that keeps the next node waiting, as it hears
        // `waiting_for_wave` (outcome `wave_out` or `baking`).
        let canary = rules_of(name, deployed).and_then(|rules| rules.canary);
        match canary.and_then(|canary| record.rollout_state(canary, now)) {
            Some(state) => match state.waits {
                WaveWait::Out(_) => "wave_out",
                WaveWait::Baking(..) => "baking",
                WaveWait::InWave(_) | WaveWait::NextMayGo(_) => "open",
            },
            None => "open",
        }
    }
}

/// Idle groups (no holder, no pause) listed before the rest are only
/// counted: a table with thousands of groups nobody uses hides the few
/// that matter.
pub(crate) const IDLE_SHOWN: usize = 20;

/// How many groups only `*` covers are counted, and the limit when the
/// configuration is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wildcard {
    pub(crate) counted: usize,
    pub(crate) limit: Option<u32>,
}

pub(crate) fn is_idle(record: &GroupRecord) -> bool {
    record.holders.is_empty() && !record.pause.is_paused() && record.excluded.is_empty()
}
