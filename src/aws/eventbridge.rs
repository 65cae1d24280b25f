//! Slot events' sink in production: PutEvents on one EventBridge bus.

use aws_sdk_eventbridge::Client;
use aws_sdk_eventbridge::primitives::DateTime;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;

use crate::domain::events::{EventSink, Outgoing, PutFailed, SOURCE};

/// PutEvents on one bus.
pub(crate) struct EventBridge {
    client: Client,
    bus: String,
}

impl EventBridge {
    pub(crate) fn new(client: Client, bus: impl Into<String>) -> Self {
        Self {
            client,
            bus: bus.into(),
        }
    }
}

impl EventSink for EventBridge {
    async fn put(&self, entries: &[Outgoing]) -> Result<Vec<Option<String>>, PutFailed> {
        let entries: Vec<PutEventsRequestEntry> = entries
            .iter()
            .map(|entry| {
                PutEventsRequestEntry::builder()
                    .source(SOURCE)
                    .detail_type(entry.detail_type)
                    .detail(&entry.detail)
                    .event_bus_name(&self.bus)
                    .time(DateTime::from_millis(
                        i64::try_from(entry.time.0).unwrap_or(i64::MAX),
                    ))
                    .build()
            })
            .collect();
        let sent = entries.len();
        let output = self
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
            .map_err(|err| {
                PutFailed(aws_sdk_eventbridge::error::DisplayErrorContext(err).to_string())
            })?;
        let results = output.entries();
        if results.len() != sent {
            return Err(PutFailed(format!(
                "PutEvents answered {} results for {sent} entries",
                results.len()
            )));
        }
        Ok(results
            .iter()
            .map(|result| {
                result
                    .error_code()
                    .map(|code| format!("{code}: {}", result.error_message().unwrap_or_default()))
            })
            .collect())
    }
}
