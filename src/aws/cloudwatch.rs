//! Alarm states in production: DescribeAlarms, every page, at most 100
//! names a call.

use std::collections::BTreeMap;

use aws_sdk_cloudwatch::types::AlarmType;

use crate::domain::alarms::{AlarmState, AlarmStates, AlarmsUnread};

/// Names per DescribeAlarms call: CloudWatch's limit.
const NAMES_PER_CALL: usize = 100;

pub(crate) struct CloudWatch {
    client: aws_sdk_cloudwatch::Client,
}

impl CloudWatch {
    pub(crate) fn new(client: aws_sdk_cloudwatch::Client) -> Self {
        Self { client }
    }
}

impl AlarmStates for CloudWatch {
    async fn states(&self, names: &[String]) -> Result<BTreeMap<String, AlarmState>, AlarmsUnread> {
        let mut states: BTreeMap<String, AlarmState> = names
            .iter()
            .map(|name| (name.clone(), AlarmState::Missing))
            .collect();
        for chunk in names.chunks(NAMES_PER_CALL) {
            let mut next_token = None;
            loop {
                let page = self
                    .client
                    .describe_alarms()
                    .set_alarm_names(Some(chunk.to_vec()))
                    .alarm_types(AlarmType::MetricAlarm)
                    .alarm_types(AlarmType::CompositeAlarm)
                    .set_next_token(next_token)
                    .send()
                    .await
                    .map_err(|e| {
                        let why = aws_sdk_cloudwatch::error::DisplayErrorContext(e);
                        AlarmsUnread(format!("cannot read the alarms' states (DescribeAlarms), nothing changed: {why}"))
                    })?;
                let metric = page
                    .metric_alarms()
                    .iter()
                    .map(|a| (a.alarm_name(), a.state_value().map(|s| s.as_str())));
                let composite = page
                    .composite_alarms()
                    .iter()
                    .map(|a| (a.alarm_name(), a.state_value().map(|s| s.as_str())));
                for (name, state) in metric.chain(composite) {
                    if let (Some(name), Some(state)) = (name, state) {
                        states.insert(name.to_owned(), AlarmState::parse(state));
                    }
                }
                next_token = page.next_token().map(str::to_owned);
                if next_token.is_none() {
                    break;
                }
            }
        }
        Ok(states)
    }
}
