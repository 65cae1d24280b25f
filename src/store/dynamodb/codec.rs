//! Items and attributes: a group's state to and from its DynamoDB item
//! (stream_image.rs reads a stream's image of one into the same).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;

use super::{
    ALARMS_ATTRIBUTE, COUNT_ATTRIBUTE, DRAIN_PREFIX, EXCLUDED_COUNT_ATTRIBUTE, EXCLUDED_PREFIX,
    HOLDER_PREFIX, KEY_ATTRIBUTE, LEGACY_HOLDER_PREFIX, PAUSED_ATTRIBUTE, RELEASED_ATTRIBUTE,
    RENEWED_PREFIX, RETURN_FAILED_PREFIX, RETURNING_PREFIX, ROLLOUT_BEGAN_ATTRIBUTE, SETTINGS_KEY,
    SETTINGS_PREFIX, SLOTS_ATTRIBUTE, STOPPED_ATTRIBUTE, TAKEN_PREFIX, WAVE_GRANTS_ATTRIBUTE,
    ZONE_ATTRIBUTE,
};
use crate::domain::input::{NodeId, PauseReason};
use crate::domain::lock::GroupRecord;
use crate::domain::lock::{ByPerson, Pause, RolloutStop, Semaphore, StopCause};
use crate::domain::store::StoreError;
use crate::domain::time::Timestamp;

pub(super) fn holder_attribute(id: &NodeId) -> String {
    format!("{HOLDER_PREFIX}{id}")
}

pub(super) fn excluded_attribute(id: &NodeId) -> String {
    format!("{EXCLUDED_PREFIX}{id}")
}

pub(super) fn drain_attribute(id: &NodeId) -> String {
    format!("{DRAIN_PREFIX}{id}")
}

pub(super) fn returning_attribute(id: &NodeId) -> String {
    format!("{RETURNING_PREFIX}{id}")
}

pub(super) fn return_failed_attribute(id: &NodeId) -> String {
    format!("{RETURN_FAILED_PREFIX}{id}")
}

pub(super) fn renewed_attribute(id: &NodeId) -> String {
    format!("{RENEWED_PREFIX}{id}")
}

pub(super) fn taken_attribute(id: &NodeId) -> String {
    format!("{TAKEN_PREFIX}{id}")
}

pub(super) fn legacy_holder_attribute(id: &NodeId) -> String {
    format!("{LEGACY_HOLDER_PREFIX}{id}")
}

pub(super) fn number(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

pub(super) fn read_number(
    item: &HashMap<String, AttributeValue>,
    name: &str,
) -> Result<Option<u64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(n)) => n
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("attribute {name} is not a whole number"))),
        Some(_) => Err(StoreError::Corrupt(format!(
            "attribute {name} is not a number"
        ))),
    }
}

type Item = HashMap<String, AttributeValue>;

impl TryFrom<&Item> for GroupRecord {
    type Error = StoreError;

    fn try_from(item: &Item) -> Result<Self, StoreError> {
        let holders = read_holders(item)?;
        let slots =
            read_number(item, SLOTS_ATTRIBUTE)?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
        let excluded = read_excluded(item)?;
        let draining = read_draining(item, &holders)?;
        let Marks {
            mut renewed,
            taken,
            returning,
            mut returns_failed,
        } = read_marks(item)?;
        // A renewal is only ever written on a holder, and removed with it;
        // one that outlived its holder (written by hand) decides nothing.
        renewed.retain(|id, _| holders.iter().any(|(holder, _)| holder == id));
        if let Some(id) = returning
            .keys()
            .find(|id| !holders.iter().any(|(holder, _)| holder == *id))
        {
            return Err(StoreError::Corrupt(format!(
                "{RETURNING_PREFIX}{id} marks a return of a node that holds no slot"
            )));
        }
        // A failed return or a wave's node past its time: only on a holder.
        returns_failed.retain(|id, _| holders.iter().any(|(holder, _)| holder == id));
        let excluded_count = read_number(item, EXCLUDED_COUNT_ATTRIBUTE)?.unwrap_or(0);
        if excluded_count != excluded.len() as u64 {
            return Err(StoreError::Corrupt(format!(
                "{EXCLUDED_COUNT_ATTRIBUTE} is {excluded_count} but {} excluded nodes are stored",
                excluded.len()
            )));
        }
        Ok(GroupRecord {
            holders: Semaphore::from_holders(holders),
            pause: read_pause(item)?,
            last_release: read_number(item, RELEASED_ATTRIBUTE)?.map(Timestamp),
            slots,
            excluded,
            draining,
            renewed,
            taken,
            returning,
            returns_failed,
            zone: match item.get(ZONE_ATTRIBUTE) {
                None => None,
                Some(AttributeValue::S(zone)) => Some(zone.clone()),
                Some(_) => {
                    return Err(StoreError::Corrupt(format!(
                        "attribute {ZONE_ATTRIBUTE} is not a string"
                    )));
                }
            },
            wave_grants: read_number(item, WAVE_GRANTS_ATTRIBUTE)?
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            rollout_began: read_number(item, ROLLOUT_BEGAN_ATTRIBUTE)?.map(Timestamp),
        })
    }
}

/// The holders and when each took its slot, held to the stored count.
fn read_holders(item: &Item) -> Result<Vec<(NodeId, Timestamp)>, StoreError> {
    let mut holders = Vec::new();
    for name in item.keys() {
        let raw_id = name
            .strip_prefix(HOLDER_PREFIX)
            .or_else(|| name.strip_prefix(LEGACY_HOLDER_PREFIX));
        if let Some(raw_id) = raw_id {
            let id = NodeId::stored(raw_id)
                .map_err(|_| StoreError::Corrupt(format!("invalid holder id {raw_id:?}")))?;
            let at = read_number(item, name)?.unwrap_or_default();
            holders.push((id, Timestamp(at)));
        }
    }
    let count = read_number(item, COUNT_ATTRIBUTE)?.unwrap_or(0);
    if count != holders.len() as u64 {
        return Err(StoreError::Corrupt(format!(
            "{COUNT_ATTRIBUTE} is {count} but {} holders are stored",
            holders.len()
        )));
    }
    Ok(holders)
}

fn read_excluded(item: &Item) -> Result<BTreeMap<NodeId, ByPerson>, StoreError> {
    let mut excluded = BTreeMap::new();
    for (name, value) in item {
        if let Some(raw_id) = name.strip_prefix(EXCLUDED_PREFIX) {
            let id = NodeId::parse(raw_id)
                .map_err(|_| StoreError::Corrupt(format!("invalid excluded id {raw_id:?}")))?;
            let AttributeValue::M(exclusion) = value else {
                return Err(StoreError::Corrupt(format!("{name} is not a map")));
            };
            excluded.insert(id, read_person_pause(name, exclusion)?);
        }
    }
    Ok(excluded)
}

/// The reservations waiting for a drain: each of a holder.
fn read_draining(
    item: &Item,
    holders: &[(NodeId, Timestamp)],
) -> Result<BTreeMap<NodeId, Timestamp>, StoreError> {
    let mut draining = BTreeMap::new();
    for name in item.keys() {
        if let Some(raw_id) = name.strip_prefix(DRAIN_PREFIX) {
            let id = NodeId::stored(raw_id)
                .map_err(|_| StoreError::Corrupt(format!("invalid reserved id {raw_id:?}")))?;
            if !holders.iter().any(|(holder, _)| *holder == id) {
                return Err(StoreError::Corrupt(format!(
                    "{name} marks a reservation of a node that holds no slot"
                )));
            }
            let since = read_number(item, name)?.unwrap_or_default();
            draining.insert(id, Timestamp(since));
        }
    }
    Ok(draining)
}

/// The time marks a holder's slot carries, each by node.
#[derive(Default)]
struct Marks {
    renewed: BTreeMap<NodeId, Timestamp>,
    taken: BTreeMap<NodeId, Timestamp>,
    returning: BTreeMap<NodeId, Timestamp>,
    returns_failed: BTreeMap<NodeId, Timestamp>,
}

fn read_marks(item: &Item) -> Result<Marks, StoreError> {
    let mut marks = Marks::default();
    for name in item.keys() {
        let (into, raw_id) = if let Some(raw_id) = name.strip_prefix(RENEWED_PREFIX) {
            (&mut marks.renewed, raw_id)
        } else if let Some(raw_id) = name.strip_prefix(TAKEN_PREFIX) {
            (&mut marks.taken, raw_id)
        } else if let Some(raw_id) = name.strip_prefix(RETURNING_PREFIX) {
            (&mut marks.returning, raw_id)
        } else if let Some(raw_id) = name.strip_prefix(RETURN_FAILED_PREFIX) {
            (&mut marks.returns_failed, raw_id)
        } else {
            continue;
        };
        let id = NodeId::stored(raw_id)
            .map_err(|_| StoreError::Corrupt(format!("invalid id {raw_id:?} in {name}")))?;
        let at = read_number(item, name)?.unwrap_or_default();
        into.insert(id, Timestamp(at));
    }
    Ok(marks)
}

/// A person's pause, the alarms' and the sweep's stop.
fn read_pause(item: &Item) -> Result<Pause, StoreError> {
    let person = match item.get(PAUSED_ATTRIBUTE) {
        None => None,
        Some(AttributeValue::M(pause)) => Some(read_person_pause(PAUSED_ATTRIBUTE, pause)?),
        Some(_) => {
            return Err(StoreError::Corrupt(format!(
                "{PAUSED_ATTRIBUTE} is not a map"
            )));
        }
    };
    let alarms = match item.get(ALARMS_ATTRIBUTE) {
        None => BTreeSet::new(),
        Some(AttributeValue::Ss(names)) => names.iter().cloned().collect(),
        Some(_) => {
            return Err(StoreError::Corrupt(format!(
                "{ALARMS_ATTRIBUTE} is not a string set"
            )));
        }
    };
    let stop = match item.get(STOPPED_ATTRIBUTE) {
        None => None,
        Some(AttributeValue::M(stop)) => Some(read_stop(stop)?),
        Some(_) => {
            return Err(StoreError::Corrupt(format!(
                "{STOPPED_ATTRIBUTE} is not a map"
            )));
        }
    };
    Ok(Pause {
        person,
        alarms,
        stop,
    })
}

/// A person's pause or resume writes only on the pause version it read.
pub(super) const VERSION_AS_READ: &str = "(attribute_not_exists(#version) OR #version = :seen)";

/// The item that lists the groups only `*` covers, and the regions'
/// settings: not groups (their keys start with `~`, which no group name
/// holds).
pub(super) fn is_wildcard_list(item: &HashMap<String, AttributeValue>) -> bool {
    matches!(item.get(KEY_ATTRIBUTE), Some(AttributeValue::S(key)) if key.starts_with('~'))
}

/// Every region's record on the settings item (none: an empty record).
pub(super) fn recorded_of(
    item: Option<&HashMap<String, AttributeValue>>,
) -> Result<crate::domain::agreement::Recorded, StoreError> {
    let mut recorded = crate::domain::agreement::Recorded::new();
    for (name, value) in item.into_iter().flatten() {
        let Some(region) = name.strip_prefix(SETTINGS_PREFIX) else {
            continue;
        };
        // One malformed record stops only what it concerns: a region's
        // record that is no map is left out (that region records again at
        // its next start or refresh), a digest that is no string refuses
        // that group only; each named in a line.
        let AttributeValue::M(digests) = value else {
            tracing::error!(
                record = format!("{SETTINGS_KEY}.{name}"),
                region,
                "a region's settings record is not a map of digests: region {region} is not \
                 compared until it records its settings again (its next start or refresh)"
            );
            continue;
        };
        let digests = digests
            .iter()
            .map(|(group, digest)| match digest {
                AttributeValue::S(digest) => (group.clone(), digest.clone()),
                _ => {
                    tracing::error!(
                        record = format!("{SETTINGS_KEY}.{name}.{group}"),
                        region,
                        group,
                        "a region's digest for a group is not a string: group '{group}' is \
                         refused where region {region}'s settings are compared, until it \
                         records them again"
                    );
                    (
                        group.clone(),
                        crate::domain::agreement::UNREADABLE.to_owned(),
                    )
                }
            })
            .collect();
        recorded.insert(region.to_owned(), digests);
    }
    Ok(recorded)
}

/// A person's decision, a pause or an exclusion, from the map `attribute`.
pub(super) fn read_person_pause(
    attribute: &str,
    pause: &HashMap<String, AttributeValue>,
) -> Result<ByPerson, StoreError> {
    let text = |name: &str| match pause.get(name) {
        Some(AttributeValue::S(text)) => Ok(text.clone()),
        _ => Err(StoreError::Corrupt(format!(
            "{attribute}.{name} is missing or not a string"
        ))),
    };
    let reason = PauseReason::parse(&text("reason")?)
        .map_err(|why| StoreError::Corrupt(format!("{attribute}.reason: {why}")))?;
    let since = read_number(pause, "since")?
        .ok_or_else(|| StoreError::Corrupt(format!("{attribute}.since is missing")))?;
    Ok(ByPerson {
        reason,
        since: Timestamp(since),
        by: text("by")?,
    })
}

fn read_stop(stop: &HashMap<String, AttributeValue>) -> Result<RolloutStop, StoreError> {
    let id = match stop.get("id") {
        Some(AttributeValue::S(id)) => NodeId::stored(id).map_err(|_| {
            StoreError::Corrupt(format!("invalid id {id:?} in {STOPPED_ATTRIBUTE}"))
        })?,
        _ => {
            return Err(StoreError::Corrupt(format!(
                "{STOPPED_ATTRIBUTE}.id is missing or not a string"
            )));
        }
    };
    let time = |name: &str| {
        read_number(stop, name)?
            .map(Timestamp)
            .ok_or_else(|| StoreError::Corrupt(format!("{STOPPED_ATTRIBUTE}.{name} is missing")))
    };
    let cause = match stop.get("cause") {
        None => StopCause::Return,
        Some(AttributeValue::S(cause)) if cause == "wave" => StopCause::Wave,
        Some(_) => {
            return Err(StoreError::Corrupt(format!(
                "{STOPPED_ATTRIBUTE}.cause is not 'wave'"
            )));
        }
    };
    Ok(RolloutStop {
        id,
        returning_since: time("returning_since")?,
        at: time("at")?,
        cause,
    })
}

pub(super) fn stop_value(stop: &RolloutStop) -> AttributeValue {
    let mut value = HashMap::from([
        ("id".to_owned(), AttributeValue::S(stop.id.to_string())),
        ("returning_since".to_owned(), number(stop.returning_since.0)),
        ("at".to_owned(), number(stop.at.0)),
    ]);
    // A return's stop is written as versions before the canary wrote it.
    if stop.cause == StopCause::Wave {
        value.insert("cause".to_owned(), AttributeValue::S("wave".into()));
    }
    AttributeValue::M(value)
}

pub(super) fn person_pause_value(pause: &ByPerson) -> AttributeValue {
    AttributeValue::M(HashMap::from([
        (
            "reason".to_owned(),
            AttributeValue::S(pause.reason.to_string()),
        ),
        ("since".to_owned(), number(pause.since.0)),
        ("by".to_owned(), AttributeValue::S(pause.by.clone())),
    ]))
}

pub(super) fn record_of(
    item: Option<&HashMap<String, AttributeValue>>,
) -> Result<GroupRecord, StoreError> {
    item.map_or_else(|| Ok(GroupRecord::default()), GroupRecord::try_from)
}

#[cfg(test)]
mod tests {

    use super::*;

    fn id(text: &str) -> NodeId {
        NodeId::parse(text).unwrap()
    }

    #[test]
    fn a_pause_written_is_the_pause_read() {
        let pause = ByPerson {
            reason: PauseReason::parse("kernel regression").unwrap(),
            since: Timestamp(42),
            by: "bob".into(),
        };
        let AttributeValue::M(written) = person_pause_value(&pause) else {
            panic!("a pause is written as a map");
        };
        assert_eq!(
            read_person_pause(PAUSED_ATTRIBUTE, &written).unwrap(),
            pause
        );
        assert_eq!(holder_attribute(&id("n1")), "h:n1");
        assert_eq!(legacy_holder_attribute(&id("n1")), "holder:n1");
    }
}
