//! A group's state from an image of its item in DynamoDB's JSON, as a
//! stream record carries it: read into items, then as every other item is.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;

use super::KEY_ATTRIBUTE;
use super::codec::record_of;
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRecord;
use crate::domain::store::StoreError;

/// A group's state from an image of its item in DynamoDB's JSON (`{"S": ..}`,
/// `{"N": ..}`), as a stream record carries it; `None` (no image) is a group
/// with no item. The same reading as every other, so a stream sees exactly
/// what a decision saw.
pub(crate) fn record_from_image(
    image: Option<&serde_json::Value>,
) -> Result<GroupRecord, StoreError> {
    let Some(image) = image else {
        return Ok(GroupRecord::default());
    };
    record_of(Some(&item_from_json(image)?))
}

/// The group an image's keys (or the image itself) names; `None` for the
/// item that lists the groups only `*` covers, which is no group.
pub(crate) fn group_from_keys(keys: &serde_json::Value) -> Result<Option<GroupName>, StoreError> {
    match item_from_json(keys)?.get(KEY_ATTRIBUTE) {
        Some(AttributeValue::S(name)) if name.starts_with('~') => Ok(None),
        Some(AttributeValue::S(name)) => GroupName::parse(name)
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("invalid group name {name:?}"))),
        _ => Err(StoreError::Corrupt(format!(
            "the key has no string attribute {KEY_ATTRIBUTE:?}"
        ))),
    }
}

fn item_from_json(item: &serde_json::Value) -> Result<HashMap<String, AttributeValue>, StoreError> {
    let serde_json::Value::Object(item) = item else {
        return Err(StoreError::Corrupt("an image is not a JSON object".into()));
    };
    item.iter()
        .map(|(name, value)| {
            attribute_from_json(value)
                .map(|value| (name.clone(), value))
                .map_err(|why| StoreError::Corrupt(format!("attribute {name}: {why}")))
        })
        .collect()
}

/// Why an attribute in DynamoDB's JSON was not read.
#[derive(Debug, thiserror::Error)]
enum AttributeError {
    #[error("not a typed value")]
    NotTyped,
    #[error("not exactly one type key")]
    NotOneTypeKey,
    #[error("expected a string")]
    NotAString,
    #[error("expected a list")]
    NotAList,
    #[error("invalid base64")]
    NotBase64,
    /// A map whose own attributes were not read.
    #[error(transparent)]
    Map(StoreError),
    #[error("unknown or malformed type {0:?}")]
    UnknownType(String),
}

fn list(value: &serde_json::Value) -> Result<&Vec<serde_json::Value>, AttributeError> {
    value.as_array().ok_or(AttributeError::NotAList)
}

/// One attribute in DynamoDB's JSON: an object with exactly one type key.
fn attribute_from_json(value: &serde_json::Value) -> Result<AttributeValue, AttributeError> {
    use serde_json::Value;
    let Value::Object(typed) = value else {
        return Err(AttributeError::NotTyped);
    };
    let mut entries = typed.iter();
    let (Some((kind, inner)), None) = (entries.next(), entries.next()) else {
        return Err(AttributeError::NotOneTypeKey);
    };
    let text = |v: &Value| {
        v.as_str()
            .map(str::to_owned)
            .ok_or(AttributeError::NotAString)
    };
    let texts = |v: &Value| list(v)?.iter().map(text).collect::<Result<Vec<_>, _>>();
    let blob = |v: &Value| {
        use base64::Engine;
        let raw = text(v)?;
        base64::engine::general_purpose::STANDARD
            .decode(raw)
            .map(aws_sdk_dynamodb::primitives::Blob::new)
            .map_err(|_| AttributeError::NotBase64)
    };
    Ok(match (kind.as_str(), inner) {
        ("S", v) => AttributeValue::S(text(v)?),
        ("N", v) => AttributeValue::N(text(v)?),
        ("B", v) => AttributeValue::B(blob(v)?),
        ("SS", v) => AttributeValue::Ss(texts(v)?),
        ("NS", v) => AttributeValue::Ns(texts(v)?),
        ("BS", v) => AttributeValue::Bs(list(v)?.iter().map(blob).collect::<Result<_, _>>()?),
        ("BOOL", Value::Bool(b)) => AttributeValue::Bool(*b),
        ("NULL", _) => AttributeValue::Null(true),
        ("M", Value::Object(_)) => {
            AttributeValue::M(item_from_json(inner).map_err(AttributeError::Map)?)
        }
        ("L", Value::Array(items)) => AttributeValue::L(
            items
                .iter()
                .map(attribute_from_json)
                .collect::<Result<_, _>>()?,
        ),
        (other, _) => return Err(AttributeError::UnknownType(other.to_owned())),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::domain::input::NodeId;
    use crate::domain::time::Timestamp;
    use crate::store::dynamodb::WILDCARD_KEY;

    fn id(text: &str) -> NodeId {
        NodeId::parse(text).unwrap()
    }

    #[test]
    fn an_image_reads_as_the_item_it_is_with_both_holder_prefixes() {
        let image = json!({
            "group": {"S": "workers"},
            "holder_count": {"N": "2"},
            "h:node-a": {"N": "1000"},
            "holder:node-b": {"N": "2000"},
            "slots": {"N": "3"},
            "released_at": {"N": "900"},
            "alarms": {"SS": ["db-errors"]},
            "paused": {"M": {"reason": {"S": "migration"}, "since": {"N": "500"}, "by": {"S": "ana"}}},
        });
        let record = record_from_image(Some(&image)).unwrap();
        assert!(record.holders.holds(&id("node-a")) && record.holders.holds(&id("node-b")));
        assert_eq!(record.holders.len(), 2);
        assert_eq!(record.slots, Some(3));
        assert_eq!(record.last_release, Some(Timestamp(900)));
        assert!(record.pause.alarms.contains("db-errors"));
        let person = record.pause.person.expect("a person's pause");
        assert_eq!((person.by.as_str(), person.since), ("ana", Timestamp(500)));
        assert_eq!(record_from_image(None).unwrap(), GroupRecord::default());
    }

    #[test]
    fn a_count_that_disagrees_with_the_holders_is_unreadable_not_guessed() {
        let image = json!({"group": {"S": "g"}, "holder_count": {"N": "2"}, "h:a": {"N": "1"}});
        let err = record_from_image(Some(&image)).unwrap_err().to_string();
        assert!(err.contains("holder_count is 2 but 1 holders"), "{err}");
        for bad in [
            json!({"alarms": {"S": "not a set"}}),
            json!({"paused": {"S": "not a map"}}),
            json!({"h:a": {"N": "1"}, "holder_count": {"S": "one"}}),
            json!({"group": "untyped"}),
            json!(["not an object"]),
        ] {
            assert!(
                matches!(record_from_image(Some(&bad)), Err(StoreError::Corrupt(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn keys_name_a_group_or_the_list_of_wildcard_groups() {
        assert_eq!(
            group_from_keys(&json!({"group": {"S": "workers"}})).unwrap(),
            Some(GroupName::parse("workers").unwrap())
        );
        assert_eq!(
            group_from_keys(&json!({"group": {"S": WILDCARD_KEY}})).unwrap(),
            None
        );
        assert!(group_from_keys(&json!({"group": {"S": "no/slash"}})).is_err());
        assert!(group_from_keys(&json!({"group": {"N": "1"}})).is_err());
    }

    #[test]
    fn a_malformed_attribute_is_refused_by_its_name_and_why() {
        for (attribute, says) in [
            (json!("x"), "attribute a: not a typed value"),
            (
                json!({"S": "x", "N": "1"}),
                "attribute a: not exactly one type key",
            ),
            (json!({"S": 1}), "attribute a: expected a string"),
            (json!({"SS": "x"}), "attribute a: expected a list"),
            (json!({"B": "%%"}), "attribute a: invalid base64"),
            (
                json!({"Q": 1}),
                "attribute a: unknown or malformed type \"Q\"",
            ),
            (
                json!({"M": {"b": {"BOOL": "yes"}}}),
                "attribute b: unknown or malformed type \"BOOL\"",
            ),
        ] {
            let image = json!({ "group": {"S": "workers"}, "a": attribute });
            let refused = record_from_image(Some(&image)).unwrap_err().to_string();
            assert!(refused.ends_with(says), "{refused}");
        }
    }
}
