//! CloudWatch metrics at no extra request: each decision prints one line in the
//! Embedded Metric Format, which CloudWatch Logs turns into metrics. The one
//! that matters is the age of the group's oldest holder: a node whose update
//! failed keeps its slot by design, and then its group stops updating in silence.

use crate::domain::input::GroupName;
use crate::domain::lock::Timestamp;
use crate::domain::service::Answer;

pub const NAMESPACE: &str = "FleetLock";
pub const OLDEST_HOLDER_AGE: &str = "OldestHolderAgeSeconds";

/// Emits metrics for one service (its dimension value: the function name).
#[derive(Clone, Debug)]
pub struct EmbeddedMetrics {
    service: String,
}

impl EmbeddedMetrics {
    pub fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    /// One EMF line. One metric with one dimension (the service), because each
    /// custom metric is billed monthly: the group is a plain property, for Logs
    /// Insights, not a dimension.
    pub fn line(&self, group: &GroupName, answer: &Answer, now: Timestamp) -> String {
        // An empty group reports 0, so an alarm clears once the holder is gone.
        let oldest = answer.oldest_holder_age.map_or(0, |age| age.as_secs());
        emf_line(
            &self.service,
            now,
            (OLDEST_HOLDER_AGE, "Seconds"),
            serde_json::json!({
                "Group": group.as_str(),
                OLDEST_HOLDER_AGE: oldest,
                "Holders": answer.holders,
                "Outcome": answer.outcome.as_str(),
            }),
        )
    }
}

/// One line in the Embedded Metric Format, the one shape every entry point
/// writes: one metric (`(name, unit)`) with one dimension, the service,
/// because each custom metric is billed monthly; `properties` (an object,
/// holding the metric's value) are plain fields, for Logs Insights and the
/// dashboard.
pub fn emf_line(
    service: &str,
    now: Timestamp,
    (metric, unit): (&str, &str),
    properties: serde_json::Value,
) -> String {
    let mut line = serde_json::json!({
        "_aws": {
            "Timestamp": now.0,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["Service"]],
                "Metrics": [{ "Name": metric, "Unit": unit }],
            }],
        },
        "Service": service,
    });
    if let (Some(line), serde_json::Value::Object(properties)) = (line.as_object_mut(), properties)
    {
        line.extend(properties);
    }
    line.to_string()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::service::Outcome;

    #[test]
    fn a_line_is_valid_emf_with_the_oldest_holder_age() {
        let answer = Answer {
            outcome: Outcome::Full,
            holders: 2,
            slots: 2,
            oldest_holder_age: Some(Duration::from_millis(7_200_900)),
            refusal: None,
        };
        let group = GroupName::parse("workers").unwrap();
        let line = EmbeddedMetrics::new("fleetlock").line(&group, &answer, Timestamp(1_000));
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(!line.contains('\n'), "one line");
        let directive = &json["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(json["_aws"]["Timestamp"], 1_000);
        assert_eq!(directive["Namespace"], "FleetLock");
        // Every dimension and metric named in the directive is a root member.
        for dimensions in directive["Dimensions"].as_array().unwrap() {
            for name in dimensions.as_array().unwrap() {
                assert!(json[name.as_str().unwrap()].is_string(), "{name}");
            }
        }
        for metric in directive["Metrics"].as_array().unwrap() {
            assert!(
                json[metric["Name"].as_str().unwrap()].is_number(),
                "{metric}"
            );
        }
        assert_eq!(json[OLDEST_HOLDER_AGE], 7_200);
        assert_eq!(json["Holders"], 2);
        assert_eq!(json["Group"], "workers");
    }

    #[test]
    fn an_empty_group_reports_zero_age() {
        let answer = Answer {
            outcome: Outcome::NotHeld,
            holders: 0,
            slots: 1,
            oldest_holder_age: None,
            refusal: None,
        };
        let group = GroupName::parse("default").unwrap();
        let line = EmbeddedMetrics::new("f").line(&group, &answer, Timestamp(1));
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(json[OLDEST_HOLDER_AGE], 0);
    }
}
