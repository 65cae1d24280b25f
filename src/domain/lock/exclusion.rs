//! The exclusion gate: a person keeps a node out of its group's rollout
//! (`fleetlock exclude`); the node takes no new slot while the rest of the
//! group goes on. Its limit, its rule, its refusal and its lines in
//! `fleetlock status`; it has no setting of a group's rules.

use super::gates::{Gate, Shown};
use super::{ByPerson, GroupRecord, Refusal};
use crate::domain::error::Error;
use crate::domain::input::{ClientParams, NodeId};
use serde_json::{Value, json};

/// How many nodes of one group may be excluded at once. Every call on the
/// group is billed by its item's size: ten exclusions of a 32-hex id with a
/// short reason add about 1 KB, one write unit, to each call (and at the
/// longest, 128-byte ids and 200-character reasons, about 4 KB).
pub const MAX_EXCLUSIONS: usize = 10;

impl GroupRecord {
    /// A person keeps the node out of the rollout.
    pub(super) fn exclusion_refusal(&self, id: &NodeId) -> Option<Refusal> {
        self.excluded.contains_key(id).then_some(Refusal::Excluded)
    }
}

/// The refusal of an excluded node, with who excluded it and why.
pub(crate) fn refusal(params: &ClientParams, group: &GroupRecord) -> Error {
    Error::NodeExcluded {
        group: params.group.to_string(),
        id: params.id.shown(),
        why: (group.excluded.get(&params.id))
            .map_or_else(|| "(no longer)".into(), excluded_because),
    }
}

/// Who excluded a node, when and why, as the refusal says it.
pub(crate) fn excluded_because(exclusion: &ByPerson) -> String {
    format!(
        "by {} since {}: {}",
        exclusion.by,
        exclusion.since.to_rfc3339(),
        exclusion.reason
    )
}

/// The exclusion gate in the list of gates.
pub(crate) struct ExclusionGate;

impl Gate for ExclusionGate {
    /// Each node excluded, by whom, since when and why.
    fn status(&self, group: &Shown) -> Vec<String> {
        (group.record.excluded.iter())
            .map(|(id, exclusion)| {
                format!(
                    "{} excludes '{}'{} {}",
                    group.name,
                    id.shown(),
                    (group.host_of)(id),
                    excluded_because(exclusion)
                )
            })
            .collect()
    }

    /// Each node excluded, by whom, since when, why (and its host).
    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let excluded: Vec<Value> = (group.record.excluded.iter())
            .map(|(id, e)| {
                let mut exclusion = json!({
                    "id": id.as_str(),
                    "id_shown": id.shown(),
                    "reason": e.reason.as_str(),
                    "by": e.by,
                    "since": e.since.to_rfc3339(),
                    "since_ms": e.since.0,
                });
                if let Some(host_json) = group.host_json {
                    exclusion["host"] = host_json(id);
                }
                exclusion
            })
            .collect();
        vec![("excluded", json!(excluded))]
    }
}
