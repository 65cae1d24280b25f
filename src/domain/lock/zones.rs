//! The zones gate: its setting's parse (`FLEETLOCK_ZONES`, the groups split
//! by zone; [`crate::domain::groups`] checks them against the groups), and
//! over a group's record the zone whose nodes hold its slots, and a zone
//! other than the asking one still out.

use std::collections::BTreeSet;

use super::GroupRules;
use super::gates::{Gate, Shown};
use super::{GroupRecord, Refusal};
use crate::domain::error::Error;
use crate::domain::input::{ClientParams, GroupName, NodeId};
use crate::domain::names::zone_phrase;
use crate::domain::zones::ZoneGroup;
use serde_json::{Value, json};

/// Why `FLEETLOCK_ZONES` was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ZonesError {
    #[error(
        "'*' cannot be split by zone: name each group whose nodes go out one zone at a time, \
         as FLEETLOCK_GROUPS names it"
    )]
    Star,
    #[error("group '{name}': {why}")]
    BadName { name: String, why: String },
    /// A group the configuration does not give slots of its own.
    #[error("{0}; a group split by zone is named there with its slots")]
    NotListed(String),
    #[error("group '{0}' is listed twice")]
    Twice(String),
}

/// The groups split by zone, as `FLEETLOCK_ZONES` lists them (`workers,db`):
/// each a group name, never `*`, at most once, and none that `unlisted`
/// says is not given slots of its own (its words say why).
pub(crate) fn parse_zones(
    spec: &str,
    unlisted: impl Fn(&GroupName) -> Option<String>,
) -> Result<BTreeSet<GroupName>, ZonesError> {
    let mut zoned = BTreeSet::new();
    for name in spec.split(',').map(str::trim) {
        if name == "*" {
            return Err(ZonesError::Star);
        }
        let group = GroupName::parse(name).map_err(|e| ZonesError::BadName {
            name: name.to_owned(),
            why: e.value(),
        })?;
        if let Some(why) = unlisted(&group) {
            return Err(ZonesError::NotListed(why));
        }
        if !zoned.insert(group) {
            return Err(ZonesError::Twice(name.to_owned()));
        }
    }
    Ok(zoned)
}

impl GroupRecord {
    /// A slot taken: the zone group it was taken with. Not split now, this
    /// node's zone is not known, so none is recorded (the zones, switched on
    /// again, wait for every slot).
    pub(super) fn record_zone(&mut self, zone: Option<ZoneGroup>) {
        self.zone = zone.map(|zone| zone.as_str().to_owned());
    }

    /// In a group split by zone, the zone group whose nodes are out of
    /// service now: the one recorded, while any node holds a slot.
    pub(crate) fn zone_out(&self) -> Option<&str> {
        self.zone.as_deref().filter(|_| !self.holders.is_empty())
    }

    /// In a group split by zone, the zone group out of service that keeps
    /// a node of `zone` waiting, if any: the recorded one while any node
    /// holds a slot (but `replaced`, whose slot the node would take over),
    /// "" where no grant recorded one (slots held from before the split).
    /// The same as the grant's condition on DynamoDB: none held, or the
    /// recorded zone group is the node's.
    fn other_zone_out(&self, zone: ZoneGroup, replaced: Option<&NodeId>) -> Option<String> {
        let others_hold = self
            .holders
            .holders()
            .any(|(holder, _)| Some(holder) != replaced);
        match &self.zone {
            _ if !others_hold => None,
            Some(out) if out == zone.as_str() => None,
            out => Some(out.clone().unwrap_or_default()),
        }
    }

    /// The zones gate's refusal: another zone group is out.
    pub(super) fn zone_refusal(
        &self,
        zone: ZoneGroup,
        replaced: Option<&NodeId>,
    ) -> Option<Refusal> {
        let zone = self.other_zone_out(zone, replaced)?;
        Some(Refusal::OtherZone { zone })
    }
}

/// The zones gate in the list of gates: a group's rules name the zone
/// group only where the group is split.
pub(crate) struct ZonesGate;

impl ZonesGate {
    pub(crate) const VARIABLE: &'static str = "FLEETLOCK_ZONES";
}

impl Gate for ZonesGate {
    fn variable(&self) -> Option<&'static str> {
        Some(Self::VARIABLE)
    }

    fn summary(&self, rules: &GroupRules) -> Option<String> {
        rules.zone.map(|group| {
            format!(
                ", one zone at a time (its nodes ask as '{group}.ZONE', and while one zone's \
                 nodes are out the other zones wait)"
            )
        })
    }

    fn digest(&self, rules: &GroupRules) -> Option<String> {
        rules.zone.map(|_| "one_zone_at_a_time".to_owned())
    }

    /// The zone group out while any node holds a slot (whatever the
    /// configuration: the record says which).
    fn status(&self, group: &Shown) -> Vec<String> {
        (group.record.zone_out())
            .map(|zone| {
                format!(
                    "{} has nodes out in {} (group '{zone}'): the other zones wait until \
                     they are back",
                    group.name,
                    zone_phrase(zone)
                )
            })
            .into_iter()
            .collect()
    }

    /// The zone out and its zone group's name.
    fn status_fields(&self, group: &Shown) -> Vec<(&'static str, Value)> {
        let out = group.record.zone_out();
        let zone = out.and_then(|group| group.rsplit_once('.').map(|(_, zone)| zone));
        vec![("zone_out", json!(zone)), ("zone_group_out", json!(out))]
    }
}

/// The refusal of a node of zone group `rules.zone` while `out`'s nodes
/// are out.
pub(crate) fn refusal(params: &ClientParams, rules: GroupRules, out: &str) -> Error {
    Error::OtherZoneOut {
        group: params.group.to_string(),
        out: out.to_owned(),
        asked: rules.zone.map_or_else(String::new, |z| z.to_string()),
    }
}
