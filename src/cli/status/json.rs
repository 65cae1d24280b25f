//! `status --json`: the same facts as the table, for scripts.

use crate::cli::hosts::host_value;
use crate::config::Config;
use crate::domain::agreement::{Recorded, differing};
use crate::domain::hosts::HostMap;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::{GroupRecord, GroupRules};
use crate::domain::time::Timestamp;
use crate::domain::windows::WindowState;
use serde_json::{Value, json};

use super::view::{Wildcard, rfc3339, rules_of, settles_until, state};

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
    let rules = rules_of(name, deployed);
    let holders: Vec<_> = record
        .holders
        .holders()
        .map(|(id, at)| holder_json(id, at, record, rules, now, hosts))
        .collect();
    let person = record.pause.person.as_ref().map(|p| {
        json!({
            "reason": p.reason.as_str(),
            "by": p.by,
            "since": rfc3339(p.since),
            "since_ms": p.since.0,
        })
    });
    let excluded: Vec<_> = record
        .excluded
        .iter()
        .map(|(id, e)| {
            let mut exclusion = json!({
                "id": id.as_str(),
                "id_shown": id.shown(),
                "reason": e.reason.as_str(),
                "by": e.by,
                "since": rfc3339(e.since),
                "since_ms": e.since.0,
            });
            if let Some(hosts) = hosts {
                exclusion["host"] = host_value(hosts.get(id.as_str()));
            }
            exclusion
        })
        .collect();
    let drain = rules.and_then(|rules| rules.drain);
    json!({
        "group": name.as_str(),
        "never_used": never_used,
        "leftover": (!never_used).then(|| super::view::leftover(name, deployed)).flatten(),
        "slots": record.slots,
        "configured_slots": rules.map(|r| r.slots),
        "state": state(name, record, deployed, now),
        "holders": holders,
        "paused_by_person": person,
        "excluded": excluded,
        "paused_by_alarms": record.pause.alarms,
        "stopped": record.pause.stop.as_ref().map(|stop| json!({
            "id": stop.id.as_str(),
            "id_shown": stop.id.shown(),
            "cause": match stop.cause {
                crate::domain::lock::StopCause::Return => "return",
                crate::domain::lock::StopCause::Wave => "wave",
            },
            // A return's stop: when the slot was given back; a wave's: when
            // it was granted (the node never gave it back).
            "released_at": (stop.cause == crate::domain::lock::StopCause::Return)
                .then(|| stop.returning_since.to_rfc3339_millis()),
            "granted_at": (stop.cause == crate::domain::lock::StopCause::Wave)
                .then(|| stop.returning_since.to_rfc3339_millis()),
            "since": rfc3339(stop.at),
            "since_ms": stop.at.0,
        })),
        "last_release_at": record.last_release.map(rfc3339),
        // The zone out of service, and the zone group its nodes asked as.
        "zone_out": super::view::zone_out(record).and_then(|(zone, _)| zone),
        "zone_group_out": record.zone_out(),
        "rollout": rules.and_then(|r| r.canary).map(|canary| rollout_json(record, canary, now)),
        "settle_seconds": rules.map(|r| r.settle.as_secs()),
        "lease_seconds": rules.and_then(|r| r.lease).map(|l| l.as_secs()),
        "drain_timeout_seconds": drain.map(|d| d.timeout.as_secs()),
        "drain_on_timeout": drain.map(|d| d.on_timeout.as_str()),
        "return_timeout_seconds": rules.and_then(|r| r.return_timeout).map(|t| t.as_secs()),
        "settles_until": settles_until(name, record, deployed, now).map(rfc3339),
        "maintenance_windows": windows_json(name, deployed, now),
    })
}

/// One holder: since when, and where its lease, drain or return stands.
fn holder_json(
    id: &NodeId,
    at: Timestamp,
    record: &GroupRecord,
    rules: Option<GroupRules>,
    now: Timestamp,
    hosts: Option<&HostMap>,
) -> Value {
    let reserved = record.draining.get(id).copied();
    let returning = record.returning.get(id).copied();
    let ends = rules
        .and_then(|rules| rules.lease)
        .filter(|_| reserved.is_none() && returning.is_none())
        .map(|lease| at.plus(lease));
    let return_until = returning
        .zip(rules.and_then(|rules| rules.return_timeout))
        .map(|(since, timeout)| since.plus(timeout));
    let drain_until = reserved
        .zip(rules.and_then(|rules| rules.drain))
        .map(|(since, drain)| since.plus(drain.timeout));
    let mut holder = json!({
        "id": id.as_str(),
        "id_shown": id.shown(),
        "acquired_at": rfc3339(at),
        "acquired_at_ms": at.0,
        "held_for_seconds": at.age_at(now).as_secs(),
        "lease_ends_at": ends.map(rfc3339),
        "lease_expired": ends.map(|ends| ends <= now),
        "waiting_for_drain": reserved.is_some(),
        "reserved_at": reserved.map(Timestamp::to_rfc3339_millis),
        "drain_until": drain_until.map(rfc3339),
        "drain_overdue": drain_until.map(|until| until <= now),
        "returning": returning.is_some(),
        "released_at": returning.map(Timestamp::to_rfc3339_millis),
        "returning_for_seconds": returning.map(|since| since.age_at(now).as_secs()),
        "return_until": return_until.map(rfc3339),
        "return_overdue": return_until.map(|until| until <= now),
    });
    if let Some(hosts) = hosts {
        holder["host"] = host_value(hosts.get(id.as_str()));
    }
    holder
}

/// A group's windows, whether they are open, and when that changes; `null`
/// without a deployed configuration or windows of the group's own.
fn windows_json(name: &GroupName, deployed: Option<&Config>, now: Timestamp) -> Value {
    let Some(config) = deployed else {
        return Value::Null;
    };
    let Some(calendar) = config.windows.calendar_for(name) else {
        return Value::Null;
    };
    let (state, at) = match config.windows.state(name, now) {
        WindowState::Open { until } => ("open", until),
        WindowState::Closed { opens } => ("closed", opens),
        WindowState::AlwaysOpen => ("always_open", None),
    };
    json!({
        "time_zone": config.windows.zone_name(),
        "windows": calendar.windows().iter().map(ToString::to_string).collect::<Vec<_>>(),
        "state": state,
        "changes_at": at.map(rfc3339),
        "changes_at_local": at.map(|t| config.windows.local_text(t)),
    })
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

/// Where a canary rollout stands: whether one runs, since when, its grants,
/// the wave out or baking (and until when), the wave the next grant joins.
fn rollout_json(
    record: &GroupRecord,
    canary: crate::domain::canary::CanaryRule,
    now: Timestamp,
) -> Value {
    use crate::domain::canary::wave_phrase;
    use crate::domain::lock::WaveWait;
    let Some(state) = record.rollout_state(canary, now) else {
        return json!({"runs": false, "canary": canary.setting()});
    };
    // A wave is out until it is back; then it bakes: never both.
    let (wave_out, baking, bake_until, next) = match state.waits {
        WaveWait::InWave(wave) | WaveWait::NextMayGo(wave) => {
            (None, None, None, Some(wave_phrase(wave)))
        }
        WaveWait::Out(wave) => (Some(wave_phrase(wave)), None, None, None),
        WaveWait::Baking(wave, until) => {
            (None, Some(wave_phrase(wave)), Some(rfc3339(until)), None)
        }
    };
    json!({
        "runs": true,
        "canary": canary.setting(),
        "began": state.began.map(rfc3339),
        "grants": state.grants,
        "wave_out": wave_out,
        "wave_baking": baking,
        "bake_until": bake_until,
        "next_grant_in": next,
    })
}
