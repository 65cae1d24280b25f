//! CloudWatch metrics at no extra request: each decision prints one line in the
//! Embedded Metric Format, which CloudWatch Logs turns into metrics. The one
//! that matters is the age of the group's oldest holder: a node whose update
//! failed keeps its slot by design, and then its group stops updating in silence.

use crate::domain::input::GroupName;
use crate::domain::service::Answer;
use crate::domain::time::Timestamp;

pub(crate) const NAMESPACE: &str = "FleetLock";
pub(crate) const OLDEST_HOLDER_AGE: &str = "OldestHolderAgeSeconds";
/// On the line of a grant that took a slot past its lease, and only there:
/// a metric billed only in the hours it has a value.
pub(crate) const SLOTS_EXPIRED: &str = "SlotsExpired";
/// On the lines of groups with a drain gate, and only there: how many of
/// the group's reservations waited past their drain timeout (0 clears the
/// alarm on it).
pub(crate) const DRAINS_OVERDUE: &str = "DrainsOverdue";
/// On the lines of groups with a return gate, and only there: how many of
/// the group's returning slots waited past their return timeout (the sweep
/// stops the group for each, once), and how long the oldest return has
/// waited (0 with none).
pub(crate) const RETURNS_OVERDUE: &str = "ReturnsOverdue";
pub(crate) const OLDEST_RETURN_AGE: &str = "OldestReturnAgeSeconds";

/// On the line of a refusal that asking again cannot mend, and only there:
/// a group no setting serves, a credential not scoped to the group, or
/// credentials that name a client and are not accepted. A node that hears
/// one asks again every 5 minutes for ever, and no other alarm sees it.
pub(crate) const UNSERVABLE_REQUESTS: &str = "UnservableRequests";

/// The kinds [`UNSERVABLE_REQUESTS`] counts.
pub(crate) const UNSERVABLE_KINDS: &[&str] = &["unknown_group", "forbidden_group", "unauthorized"];

/// Emits metrics for one service (its dimension value: the function name).
#[derive(Clone, Debug)]
pub(crate) struct EmbeddedMetrics {
    service: String,
}

impl EmbeddedMetrics {
    pub(crate) fn new(service: impl Into<String>) -> Self {
        Self {
            service: service.into(),
        }
    }

    /// One EMF line. One metric with one dimension (the service), because each
    /// custom metric is billed monthly: the group is a plain property, for Logs
    /// Insights, not a dimension.
    pub(crate) fn line(&self, group: &GroupName, answer: &Answer, now: Timestamp) -> String {
        // An empty group reports 0, so an alarm clears once the holder is gone.
        let oldest = answer.oldest_holder_age.map_or(0, |age| age.as_secs());
        let mut properties = serde_json::json!({
            "Group": group.as_str(),
            OLDEST_HOLDER_AGE: oldest,
            "Holders": answer.holders,
            "Outcome": answer.outcome.as_str(),
        });
        let mut metrics = vec![(OLDEST_HOLDER_AGE, "Seconds")];
        if let Some(expired) = &answer.expired {
            properties[SLOTS_EXPIRED] = 1.into();
            properties["ExpiredHolder"] = expired.holder.as_str().into();
            properties["ExpiredHeldSeconds"] = expired.held.as_secs().into();
            metrics.push((SLOTS_EXPIRED, "Count"));
        }
        if let Some(overdue) = answer.drains_overdue {
            properties[DRAINS_OVERDUE] = overdue.into();
            metrics.push((DRAINS_OVERDUE, "Count"));
        }
        if let Some(returns) = answer.returns {
            properties["Returning"] = returns.returning.into();
            properties[RETURNS_OVERDUE] = returns.overdue.into();
            properties[OLDEST_RETURN_AGE] = returns.oldest.map_or(0, |age| age.as_secs()).into();
            metrics.push((RETURNS_OVERDUE, "Count"));
            metrics.push((OLDEST_RETURN_AGE, "Seconds"));
        }
        emf_line(&self.service, now, &metrics, properties)
    }

    /// The line of a refusal no retry mends ([`UNSERVABLE_KINDS`]), with
    /// what the operator needs to find the node's mistake: the group it
    /// asked for and the client it presented (never a secret).
    pub(crate) fn unservable_line(
        &self,
        kind: &str,
        group: &str,
        client: &str,
        now: Timestamp,
    ) -> String {
        let properties = serde_json::json!({
            UNSERVABLE_REQUESTS: 1,
            "Kind": kind,
            "Group": group,
            "Client": client,
        });
        emf_line(
            &self.service,
            now,
            &[(UNSERVABLE_REQUESTS, "Count")],
            properties,
        )
    }
}

/// One line in the Embedded Metric Format, the one shape every entry point
/// writes: few metrics (`(name, unit)`), one dimension, the service,
/// because each custom metric is billed monthly; `properties` (an object,
/// holding the metrics' values) are plain fields, for Logs Insights and the
/// dashboard.
pub(crate) fn emf_line(
    service: &str,
    now: Timestamp,
    metrics: &[(&str, &str)],
    properties: serde_json::Value,
) -> String {
    let metrics: Vec<serde_json::Value> = metrics
        .iter()
        .map(|(name, unit)| serde_json::json!({ "Name": name, "Unit": unit }))
        .collect();
    let mut line = serde_json::json!({
        "_aws": {
            "Timestamp": now.0,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [["Service"]],
                "Metrics": metrics,
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
    use crate::domain::lock::Refusal;
    use crate::domain::service::Outcome;

    /// An answer with nothing beside its holders: no refusal, expiry, drain,
    /// lease or return.
    fn quiet_answer(
        outcome: Outcome,
        holders: usize,
        slots: u32,
        oldest: Option<Duration>,
    ) -> Answer {
        Answer {
            outcome,
            holders,
            slots,
            oldest_holder_age: oldest,
            refusal: None,
            expired: None,
            drains_overdue: None,
            lease: None,
            returns: None,
        }
    }

    /// A line as JSON, and the names of the metrics its directive declares.
    fn declared(line: &str) -> (serde_json::Value, Vec<String>) {
        let json: serde_json::Value = serde_json::from_str(line).unwrap();
        let names = json["_aws"]["CloudWatchMetrics"][0]["Metrics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["Name"].as_str().unwrap().to_owned())
            .collect();
        (json, names)
    }

    #[test]
    fn a_line_is_valid_emf_with_the_oldest_holder_age() {
        let answer = quiet_answer(
            Outcome::Refused(Refusal::Full),
            2,
            2,
            Some(Duration::from_millis(7_200_900)),
        );
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
    fn a_slot_taken_past_its_lease_is_counted_on_its_own_line_only() {
        use crate::domain::input::NodeId;
        use crate::domain::service::ExpiredSlot;
        let mut answer = Answer {
            expired: Some(ExpiredSlot {
                holder: NodeId::parse("gone").unwrap(),
                held: Duration::from_secs(21_600),
            }),
            ..quiet_answer(Outcome::TakenOver, 1, 1, Some(Duration::ZERO))
        };
        let group = GroupName::parse("workers").unwrap();
        let metrics = EmbeddedMetrics::new("f");
        let (json, names) = declared(&metrics.line(&group, &answer, Timestamp(1)));
        assert_eq!(names, [OLDEST_HOLDER_AGE, SLOTS_EXPIRED]);
        assert_eq!(json[SLOTS_EXPIRED], 1);
        assert_eq!(json["ExpiredHolder"], "gone");
        assert_eq!(json["ExpiredHeldSeconds"], 21_600);
        assert_eq!(json["Outcome"], "granted_expired");
        answer.expired = None;
        let plain = metrics.line(&group, &answer, Timestamp(1));
        assert!(!plain.contains(SLOTS_EXPIRED), "{plain}");
    }

    #[test]
    fn an_unservable_refusal_is_one_count_with_its_group_and_client() {
        let metrics = EmbeddedMetrics::new("fleetlock");
        let line = metrics.unservable_line("forbidden_group", "wrokers", "fleet", Timestamp(5));
        let (json, names) = declared(&line);
        assert_eq!(names, [UNSERVABLE_REQUESTS]);
        assert_eq!(json[UNSERVABLE_REQUESTS], 1);
        assert_eq!(
            (&json["Kind"], &json["Group"], &json["Client"]),
            (
                &serde_json::json!("forbidden_group"),
                &serde_json::json!("wrokers"),
                &serde_json::json!("fleet")
            )
        );
        assert_eq!(json["Service"], "fleetlock");
    }

    #[test]
    fn an_empty_group_reports_zero_age() {
        let answer = quiet_answer(Outcome::Released { held: false }, 0, 1, None);
        let group = GroupName::parse("default").unwrap();
        let line = EmbeddedMetrics::new("f").line(&group, &answer, Timestamp(1));
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(json[OLDEST_HOLDER_AGE], 0);
    }

    #[test]
    fn a_return_gated_group_reports_its_returns_and_only_it() {
        use crate::domain::service::Returns;
        let mut answer = Answer {
            returns: Some(Returns {
                returning: 1,
                oldest: Some(Duration::from_secs(1_500)),
                overdue: 1,
            }),
            ..quiet_answer(
                Outcome::Returning { already: false },
                1,
                1,
                Some(Duration::from_secs(900)),
            )
        };
        let group = GroupName::parse("workers").unwrap();
        let metrics = EmbeddedMetrics::new("f");
        let (json, names) = declared(&metrics.line(&group, &answer, Timestamp(1)));
        assert_eq!(
            names,
            [OLDEST_HOLDER_AGE, RETURNS_OVERDUE, OLDEST_RETURN_AGE]
        );
        assert_eq!(
            (
                &json[RETURNS_OVERDUE],
                &json[OLDEST_RETURN_AGE],
                &json["Returning"]
            ),
            (&1.into(), &1_500.into(), &1.into())
        );
        answer.returns = None;
        let plain = metrics.line(&group, &answer, Timestamp(1));
        assert!(!plain.contains(RETURNS_OVERDUE), "{plain}");
    }
}
