//! `status --json`: the same facts as the table, for scripts.

use crate::cli::hosts::host_value;
use crate::config::Config;
use crate::domain::agreement::{Recorded, differing};
use crate::domain::hosts::HostMap;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::gates::{self, Shown};
use crate::domain::time::Timestamp;
use serde_json::{Value, json};

use super::view::{Wildcard, rfc3339, shown, state};

pub(crate) fn render(
    groups: &[(GroupName, GroupRecord)],
    deployed: Option<&Config>,
    now: Timestamp,
    wildcard: Wildcard,
    never_used: &[GroupName],
    hosts: Option<&HostMap>,
) -> Value {
    let groups: Vec<_> = groups
        .iter()
        .map(|(name, record)| {
            let never_used = never_used.contains(name);
            group_json(name, record, never_used, deployed, now, hosts)
        })
        .collect();
    json!({
        "groups": groups,
        "wildcard_groups": { "counted": wildcard.counted, "limit": wildcard.limit },
    })
}

/// One group: its slots, state, holders, pauses, exclusions, rules and
/// windows.
fn group_json(
    name: &GroupName,
    record: &GroupRecord,
    never_used: bool,
    deployed: Option<&Config>,
    now: Timestamp,
    hosts: Option<&HostMap>,
) -> Value {
    let host_json = |id: &NodeId| host_value(hosts.and_then(|hosts| hosts.get(id.as_str())));
    let shown = Shown {
        host_json: hosts.map(|_| &host_json as &dyn Fn(&NodeId) -> Value),
        ..shown(name, record, deployed, now)
    };
    let holders: Vec<_> = (record.holders.holders())
        .map(|(id, at)| holder_json(&shown, id, at))
        .collect();
    let mut group = json!({
        "group": name.as_str(),
        "never_used": never_used,
        "leftover": (!never_used).then(|| super::view::leftover(name, deployed)).flatten(),
        "slots": record.slots,
        "configured_slots": shown.rules.map(|r| r.slots),
        "state": state(name, record, deployed, now),
        "holders": holders,
    });
    if let Value::Object(object) = &mut group {
        gates::status_fields(&shown, object);
    }
    group
}

/// A holder: since when and for how long, each gate's fields, its host.
fn holder_json(group: &Shown, id: &NodeId, at: Timestamp) -> Value {
    let mut holder = json!({
        "id": id.as_str(),
        "id_shown": id.shown(),
        "acquired_at": rfc3339(at),
        "acquired_at_ms": at.0,
        "held_for_seconds": at.age_at(group.now).as_secs(),
    });
    if let Value::Object(object) = &mut holder {
        gates::holder_fields(group, id, at, object);
    }
    if let Some(host_json) = group.host_json {
        holder["host"] = host_json(id);
    }
    holder
}

/// The regions of a global table and the groups whose settings differ
/// between them; `null` on a table of one region.
pub(crate) fn regions(recorded: &Recorded) -> Value {
    if recorded.is_empty() {
        return Value::Null;
    }
    json!({
        "recorded": recorded.keys().collect::<Vec<_>>(),
        "settings_differ": differing(recorded),
    })
}
