//! The zones gate over a group's record: the zone whose nodes hold its
//! slots, and a zone other than the asking one still out.

use super::GroupRecord;
use crate::domain::input::NodeId;
use crate::domain::zones::ZoneGroup;

impl GroupRecord {
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
    pub(super) fn other_zone_out(
        &self,
        zone: ZoneGroup,
        replaced: Option<&NodeId>,
    ) -> Option<String> {
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
}
