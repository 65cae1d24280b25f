//! What each refusal says: the `value` Zincati logs in the node's journal,
//! one sentence for a person that stands alone there.

use super::{Credentials, Error, counted};
use crate::domain::names::{Meant, zone_phrase};

impl Error {
    /// A sentence for the operator reading Zincati's journal.
    pub(crate) fn value(&self) -> String {
        match self {
            Error::Unauthorized(Credentials::Missing) => {
                "valid client credentials are required: put them in Zincati's base_url as \
                 https://NAME:SECRET@host/"
                    .into()
            }
            Error::Unauthorized(Credentials::NotAccepted) => {
                "the credentials in base_url were not accepted: check the name and the secret \
                 against the client's FLEETLOCK_CLIENTS entry ('fleetlock credential' makes one)"
                    .into()
            }
            Error::InvalidBody(why) | Error::InvalidId(why) | Error::InvalidGroup(why) => {
                why.clone()
            }
            Error::UnknownGroup { group, meant } => unknown_group(group, meant.as_ref()),
            Error::ForbiddenGroup(group) => {
                format!("these credentials may not take or release slots of group '{group}'")
            }
            Error::TooManyGroups { group, limit } => format!(
                "group '{group}' is new and only '*' covers it, but the {limit} such groups this \
                 server allows are in use; ask an operator to name the group in \
                 FLEETLOCK_GROUPS or to remove an unused one with 'fleetlock forget'"
            ),
            Error::SemaphoreFull {
                group,
                holders,
                slots,
                lease_ends,
            } => {
                format!(
                "{} of group '{group}' {} taken ({}){}; try again later",
                if *slots == 1 {
                    "the only reboot slot".to_owned()
                } else {
                    format!("all {slots} reboot slots")
                },
                if *slots == 1 { "is" } else { "are" },
                counted(*holders as u64, "holder", "holders"),
                lease_ends.as_ref().map_or(String::new(), |(at, lease)| format!(
                    "; the longest-held slot's {lease} lease runs out at {at}, and then the \
                     next node to ask takes it over"
                )),
            )
            }
            Error::SlotTaken {
                group,
                id,
                taken_at,
                lease,
            } => format!(
                "this node ('{id}') no longer holds its reboot slot of group '{group}': another \
                 node took it over at {taken_at}, after this node kept it past its {} without \
                 asking again, and every slot is taken now; try again later",
                lease
                    .as_ref()
                    .map_or_else(|| "lease".to_owned(), |lease| format!("{lease} lease"))
            ),
            Error::OtherZoneOut { group, out, asked } => format!(
                "group '{group}' has nodes out of service in {} (they reboot one zone at a \
                 time); this node, in {}, waits until they are back; try again later",
                if out.is_empty() {
                    "a zone no grant recorded (slots held from before the group was split \
                     by zone)"
                        .to_owned()
                } else {
                    format!("{}, group '{out}'", zone_phrase(out))
                },
                zone_phrase(asked),
            ),
            Error::GroupPaused { group, why } => format!(
                "group '{group}' is paused {why}; no node takes a new reboot slot until it is \
                 resumed"
            ),
            Error::NodeExcluded { group, id, why } => format!(
                "this node ('{id}') is excluded from group '{group}'s rollout {why}; it takes no \
                 reboot slot until it is included again, while the rest of the group goes on"
            ),
            Error::WaitingForDrain {
                group,
                id,
                since,
                until,
                reserved_now,
                overdue: false,
            } => format!(
                "{} for this node ('{id}') in group '{group}'{}: it reboots once its drain is \
                 confirmed, which is due by {until}; Zincati asks again",
                if *reserved_now {
                    "a reboot slot is reserved"
                } else {
                    "the reserved reboot slot waits for a drain"
                },
                if *reserved_now {
                    String::new()
                } else {
                    format!(" since {since}")
                },
            ),
            Error::WaitingForDrain {
                group,
                id,
                since,
                until,
                ..
            } => format!(
                "this node ('{id}') in group '{group}' has waited for its drain since {since}, \
                 and nobody confirmed it by {until}: it keeps its reserved slot and does not \
                 reboot until an operator confirms the drain ('fleetlock drained') or releases \
                 the slot ('fleetlock release')"
            ),
            Error::WaitingForReturn {
                group,
                id,
                since,
                until,
                overdue: false,
            } => format!(
                "this node ('{id}') in group '{group}' gave its reboot slot back at {since}, and \
                 its return to service is not confirmed yet (due by {until}); it takes no new \
                 slot until it is, and Zincati asks again"
            ),
            Error::WaitingForReturn {
                group,
                id,
                since,
                until,
                ..
            } => format!(
                "this node ('{id}') in group '{group}' gave its reboot slot back at {since}, and \
                 nobody confirmed its return to service by {until}: the group's rollout stops \
                 until an operator confirms the return ('fleetlock returned') or releases the \
                 slot ('fleetlock release') and resumes the group"
            ),
            Error::WindowClosesBeforeDrain {
                group,
                closes,
                timeout,
            } => format!(
                "group '{group}'s maintenance window closes at {closes}, before a drain begun \
                 now ({timeout} at the most) would end; no drain begins, and Zincati asks \
                 again in the next window"
            ),
            Error::WaitingForWave {
                group,
                wave,
                plan,
                bake,
                until: None,
            } => format!(
                "group '{group}' rolls out in waves ({plan}): {wave} is not back in service \
                 yet, and the next wave waits until it is and has stayed back {bake}; try \
                 again later"
            ),
            Error::WaitingForWave {
                group,
                wave,
                plan,
                bake,
                until: Some(until),
            } => format!(
                "group '{group}' rolls out in waves ({plan}): {wave} is back in service, and \
                 the next wave begins once it has stayed back {bake}, at {until}; try again \
                 later"
            ),
            Error::Settling {
                group,
                until,
                settle,
            } if settle == "0s" => format!(
                "a slot of group '{group}' was given back at {until}, by a request that arrived \
                 after this one; nothing was decided, ask again"
            ),
            Error::Settling {
                group,
                until,
                settle,
            } => format!(
                "group '{group}' lets the cluster settle for {settle} after each reboot; the \
                 next slot can be taken from {until}"
            ),
            Error::OutsideMaintenanceWindow { group, opens } => match opens {
                Some((utc, Some(local))) => format!(
                    "group '{group}' reboots only inside its maintenance windows; the next \
                     opens at {utc} ({local})"
                ),
                Some((utc, None)) => format!(
                    "group '{group}' reboots only inside its maintenance windows; the next \
                     opens at {utc}"
                ),
                None => format!(
                    "group '{group}' reboots only inside its maintenance windows, and none of \
                     them can happen (each falls in an hour a daylight-saving change skips)"
                ),
            },
            Error::SettingsDiffer { group, region } => format!(
                "group '{group}' is configured differently in region {region} (its slots, \
                 settle time, lease, drain, return gate or windows) than in this one, on the \
                 same lock table; nothing was decided, and no region grants or gives back a \
                 slot of it until an operator deploys the same settings everywhere"
            ),
            Error::StoreUnavailable => {
                "the lock store is unavailable; nothing was decided, try again later".into()
            }
            Error::Internal => "the server cannot read this group's stored state, so no slot \
                 was granted; an operator must repair the group, try again later"
                .into(),
        }
    }
}

/// The journal's sentence for a group this server does not serve, with the
/// group the node most likely belongs to and what would make it right.
fn unknown_group(group: &str, meant: Option<&Meant>) -> String {
    let belongs = |name: &str| {
        format!(
            "this node most likely belongs to group '{name}'; set that name as group in the \
             [identity] section of its Zincati configuration"
        )
    };
    match meant {
        None => format!("group '{group}' is not configured on this server"),
        Some(Meant::Case(meant)) => format!(
            "group '{group}' is not configured on this server, and group names are \
             case-sensitive: {}",
            belongs(meant)
        ),
        Some(Meant::Separator(meant)) => format!(
            "group '{group}' is not configured on this server: it reads as a zone of a group \
             split by zone, whose zones' groups are named with a dot; {}",
            belongs(meant)
        ),
        Some(Meant::Closest(meant)) => format!(
            "group '{group}' is not configured on this server, and is one or two letters \
             from a group that is: {}",
            belongs(meant)
        ),
        Some(Meant::Unsplit { parent }) => format!(
            "group '{group}' is not configured on this server: its name is under group \
             '{parent}', which is not split by zone, so it would take reboot slots beside \
             those of '{parent}'; set group = \"{parent}\" in the [identity] section of this \
             node's Zincati configuration, or ask an operator to split '{parent}' by zone \
             (FLEETLOCK_ZONES)"
        ),
    }
}
