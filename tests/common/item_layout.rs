//! A group's record as docs/design.md's table says it is stored, attribute
//! by attribute: the item the memory store's record must be written as.
//! The conformance test holds the DynamoDB store's raw items to it (two
//! items that decode alike but differ, a mark left behind or a count gone
//! stale, are told apart), and the model check seeds DynamoDB Local with
//! the states it explores through it. Shared by tests/suite and tests/model.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use fleetlock::domain::input::NodeId;
use fleetlock::domain::lock::{ByPerson, GroupRecord, StopCause};
use fleetlock::domain::time::Timestamp;

pub type Json = serde_json::Value;

/// An attribute as JSON, a set sorted: two items that hold the same are
/// equal JSON.
pub fn json_of(value: &AttributeValue) -> Json {
    match value {
        AttributeValue::N(n) => Json::from(n.parse::<u64>().expect("a whole number")),
        AttributeValue::S(s) => Json::from(s.clone()),
        AttributeValue::Ss(set) => {
            let mut set = set.clone();
            set.sort();
            Json::from(set)
        }
        AttributeValue::M(map) => Json::Object(
            map.iter()
                .map(|(name, value)| (name.clone(), json_of(value)))
                .collect(),
        ),
        other => {
            panic!("an attribute the item layout (docs/design.md) has no place for: {other:?}")
        }
    }
}

/// The attribute JSON [`json_of`] gives back: numbers `N`, text `S`, a list
/// (the alarms) `SS`, an object `M`.
pub fn attribute_of(value: &Json) -> AttributeValue {
    match value {
        Json::Number(n) => AttributeValue::N(n.to_string()),
        Json::String(s) => AttributeValue::S(s.clone()),
        Json::Array(set) => AttributeValue::Ss(
            set.iter()
                .map(|v| v.as_str().expect("a set of strings").to_owned())
                .collect(),
        ),
        Json::Object(map) => AttributeValue::M(
            map.iter()
                .map(|(name, value)| (name.clone(), attribute_of(value)))
                .collect(),
        ),
        other => panic!("no attribute of the item layout is {other}"),
    }
}

/// The item of `group` holding `record`, as DynamoDB would store it.
pub fn item_for(group: &str, record: &GroupRecord) -> HashMap<String, AttributeValue> {
    let mut item: HashMap<String, AttributeValue> = match item_of(record) {
        Json::Object(attributes) => attributes
            .iter()
            .map(|(name, value)| (name.clone(), attribute_of(value)))
            .collect(),
        _ => unreachable!("an item is an object"),
    };
    item.insert("group".into(), AttributeValue::S(group.into()));
    item
}

/// The item's attributes as JSON, without what only DynamoDB keeps: the
/// key, `pause_version` (the version a person's pause is written against)
/// and a count at zero, the rest of an `ADD`.
pub fn as_written(item: HashMap<String, AttributeValue>) -> Json {
    let mut attributes = serde_json::Map::new();
    for (name, value) in item {
        let value = json_of(&value);
        let zero_count = matches!(name.as_str(), "holder_count" | "excluded_count")
            && value == serde_json::json!(0);
        if name != "group" && name != "pause_version" && !zero_count {
            attributes.insert(name, value);
        }
    }
    Json::Object(attributes)
}

/// The item docs/design.md's table says a group's record is stored as:
/// what the memory store's record must be written as, attribute by
/// attribute, so that two items that decode alike but differ (a mark left
/// behind, a count gone stale) are told apart.
pub fn item_of(record: &GroupRecord) -> Json {
    use serde_json::json;
    let mut item = serde_json::Map::new();
    let person = |pause: &ByPerson| json!({ "reason": pause.reason.to_string(), "since": pause.since.0, "by": pause.by });
    let mut marks = |prefix: &str, of: &BTreeMap<NodeId, Timestamp>| {
        for (id, at) in of {
            item.insert(format!("{prefix}{id}"), json!(at.0));
        }
    };
    marks("d:", &record.draining);
    marks("r:", &record.renewed);
    marks("t:", &record.taken);
    marks("b:", &record.returning);
    marks("o:", &record.returns_failed);
    for (id, since) in record.holders.holders() {
        item.insert(format!("h:{id}"), json!(since.0));
    }
    if !record.holders.is_empty() {
        item.insert("holder_count".into(), json!(record.holders.len()));
    }
    for (id, pause) in &record.excluded {
        item.insert(format!("x:{id}"), person(pause));
    }
    if !record.excluded.is_empty() {
        item.insert("excluded_count".into(), json!(record.excluded.len()));
    }
    if let Some(pause) = &record.pause.person {
        item.insert("paused".into(), person(pause));
    }
    if !record.pause.alarms.is_empty() {
        item.insert("alarms".into(), json!(record.pause.alarms));
    }
    if let Some(stop) = &record.pause.stop {
        let mut value = json!({
            "id": stop.id.to_string(),
            "returning_since": stop.returning_since.0,
            "at": stop.at.0,
        });
        if stop.cause == StopCause::Wave {
            value["cause"] = json!("wave");
        }
        item.insert("stopped".into(), value);
    }
    let mut number = |name: &str, value: Option<u64>| {
        if let Some(value) = value {
            item.insert(name.into(), json!(value));
        }
    };
    number("slots", record.slots.map(u64::from));
    number("released_at", record.last_release.map(|at| at.0));
    number("wave_grants", record.wave_grants.map(u64::from));
    number("rollout_began", record.rollout_began.map(|at| at.0));
    if let Some(zone) = &record.zone {
        item.insert("zone".into(), json!(zone));
    }
    Json::Object(item)
}
