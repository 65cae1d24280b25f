//! The slot-events entry point: a batch of the lock table's stream records,
//! as Lambda delivers it, becomes EventBridge events ([`crate::domain::events`]).
//!
//! Delivery is at least once. A PutEvents entry that fails is tried again a
//! bounded number of times; what still fails is reported to Lambda as a
//! partial batch failure from its record on, so Lambda retries from there,
//! splits the batch and, past its own retry limit, sends the batch's
//! description to the on-failure queue. Records after a failed one may then
//! be sent twice: `detail.idempotency_key` lets consumers drop the second.
//!
//! A record whose image cannot be read is logged as an error and counted
//! (`UnreadableStreamRecords`); it is not retried, because a retry reads the
//! same image. The rest of the batch goes on.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::aws::{self, eventbridge::EventBridge};
use crate::config::{self, SlotEventsSettings};
use crate::domain::events::{self, EventSink, Origin, Outgoing, SlotEvent};
use crate::domain::time::Timestamp;
use crate::metrics::emf_line;
use crate::store::dynamodb::{group_from_keys, record_from_image};

/// Entries in one PutEvents call: EventBridge's limit.
pub(crate) const ENTRIES_PER_PUT: usize = 10;
/// Tries of an entry before its record is reported as failed.
pub(crate) const PUT_ATTEMPTS: u32 = 3;

pub(crate) const EVENTS_PUT: &str = "SlotEventsPut";
pub(crate) const EVENTS_FAILED: &str = "SlotEventsFailed";
pub(crate) const UNREADABLE_RECORDS: &str = "UnreadableStreamRecords";

/// A stream record as Lambda delivers it; only what the events need.
#[derive(Deserialize)]
struct StreamRecord {
    #[serde(rename = "eventID")]
    event_id: String,
    dynamodb: StreamData,
}

#[derive(Deserialize)]
struct StreamData {
    #[serde(rename = "ApproximateCreationDateTime")]
    created: Option<f64>,
    #[serde(rename = "Keys")]
    keys: Value,
    #[serde(rename = "NewImage")]
    new_image: Option<Value>,
    #[serde(rename = "OldImage")]
    old_image: Option<Value>,
    #[serde(rename = "SequenceNumber")]
    sequence: String,
}

/// The events of one readable record.
struct RecordEvents {
    sequence: String,
    events: Vec<SlotEvent>,
}

/// Why a stream record's events cannot be known.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    #[error("not a stream record: {0}")]
    NotAStreamRecord(serde_json::Error),
    /// A part of the record (`Keys`, `OldImage`, `NewImage`) not read.
    #[error("{part}: {source}")]
    Unread {
        part: &'static str,
        source: crate::domain::store::StoreError,
    },
}

fn read_record(record: &Value) -> Result<RecordEvents, RecordError> {
    let record = StreamRecord::deserialize(record).map_err(RecordError::NotAStreamRecord)?;
    let data = &record.dynamodb;
    let at = |part: &'static str, source| RecordError::Unread { part, source };
    let Some(group) = group_from_keys(&data.keys).map_err(|e| at("Keys", e))? else {
        // The list of groups only `*` covers: no slot changes there.
        return Ok(RecordEvents {
            sequence: data.sequence.clone(),
            events: Vec::new(),
        });
    };
    let old = record_from_image(data.old_image.as_ref()).map_err(|e| at("OldImage", e))?;
    let new = record_from_image(data.new_image.as_ref()).map_err(|e| at("NewImage", e))?;
    // Seconds, with a fraction in Streams' own API; Lambda passes it on.
    let written_at = Timestamp(data.created.map_or(0, |s| (s * 1000.0) as u64));
    let origin = Origin {
        record_id: &record.event_id,
        sequence: &data.sequence,
        written_at,
    };
    Ok(RecordEvents {
        sequence: data.sequence.clone(),
        events: events::changes(&group, &old, &new, origin),
    })
}

/// What one batch came to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub events_put: usize,
    pub(crate) events_failed: usize,
    pub unreadable_records: usize,
    /// Sequence numbers of the records whose events could not all be put.
    pub(crate) failed_records: Vec<String>,
}

impl BatchReport {
    /// The answer Lambda reads (`ReportBatchItemFailures`): it checkpoints
    /// before the first failed record and retries from there.
    pub(crate) fn response(&self) -> Value {
        let failures: Vec<Value> = self
            .failed_records
            .iter()
            .map(|sequence| json!({ "itemIdentifier": sequence }))
            .collect();
        json!({ "batchItemFailures": failures })
    }

    /// One line in the Embedded Metric Format for the batch. Only the count
    /// an alarm watches is a metric (each is billed monthly); the others are
    /// plain properties, for Logs Insights and the dashboard.
    pub(crate) fn metric_line(&self, service: &str, now: Timestamp) -> String {
        emf_line(
            service,
            now,
            &[(UNREADABLE_RECORDS, "Count")],
            json!({
                EVENTS_PUT: self.events_put,
                EVENTS_FAILED: self.events_failed,
                UNREADABLE_RECORDS: self.unreadable_records,
            }),
        )
    }
}

/// Turns stream batches into events on a sink.
pub struct SlotEvents<S> {
    sink: S,
    retry_pause: Duration,
}

impl<S: EventSink> SlotEvents<S> {
    pub fn new(sink: S) -> Self {
        Self {
            sink,
            retry_pause: Duration::from_millis(100),
        }
    }

    /// The first pause between tries of failed entries; it doubles each time.
    #[cfg(test)]
    pub(crate) fn with_retry_pause(mut self, pause: Duration) -> Self {
        self.retry_pause = pause;
        self
    }

    /// Handles one batch: `{"Records": [...]}`.
    pub async fn handle(&self, batch: &Value) -> BatchReport {
        let mut report = BatchReport::default();
        let records = batch
            .get("Records")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        // Each event with the sequence number of the record that carried it.
        let mut outgoing: Vec<(String, Outgoing)> = Vec::new();
        for record in records {
            match read_record(record) {
                Ok(read) => outgoing.extend(
                    read.events
                        .iter()
                        .map(|event| (read.sequence.clone(), Outgoing::from(event))),
                ),
                Err(why) => {
                    report.unreadable_records += 1;
                    let event_id = record.get("eventID").and_then(Value::as_str);
                    tracing::error!(
                        event_id,
                        error = %why,
                        "stream record skipped: its events cannot be known"
                    );
                }
            }
        }

        let failed = self.put_with_retries(&outgoing).await;
        report.events_failed = failed.len();
        report.events_put = outgoing.len() - failed.len();
        // Lambda retries from the first failed record on; naming each failed
        // record is what the contract asks, the earliest is what counts. The
        // failed events come in record order, so a record's repeats are adjacent.
        report.failed_records = failed.iter().map(|&i| outgoing[i].0.clone()).collect();
        report.failed_records.dedup();
        report
    }

    /// Puts every entry, trying failed ones again; returns the indices of
    /// those that failed every try, in ascending order.
    async fn put_with_retries(&self, outgoing: &[(String, Outgoing)]) -> Vec<usize> {
        let mut pending: Vec<usize> = (0..outgoing.len()).collect();
        let mut pause = self.retry_pause;
        for attempt in 1..=PUT_ATTEMPTS {
            let mut failed = Vec::new();
            for chunk in pending.chunks(ENTRIES_PER_PUT) {
                let entries: Vec<Outgoing> = chunk.iter().map(|&i| outgoing[i].1.clone()).collect();
                match self.sink.put(&entries).await {
                    Ok(results) => {
                        for (&index, error) in chunk.iter().zip(results) {
                            if let Some(error) = error {
                                tracing::warn!(attempt, error = %error, "an event was not put");
                                failed.push(index);
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(attempt, error = %error, entries = chunk.len(), "PutEvents failed");
                        failed.extend_from_slice(chunk);
                    }
                }
            }
            pending = failed;
            if pending.is_empty() || attempt == PUT_ATTEMPTS {
                break;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
        if !pending.is_empty() {
            tracing::error!(
                events = pending.len(),
                "events still not put after {PUT_ATTEMPTS} tries; their records are reported \
                 as failed for Lambda to retry"
            );
        }
        pending
    }
}

/// Runs the entry point: the table's stream to EventBridge. Needs no table,
/// no clients and no group settings: only the bus.
pub(crate) async fn run() -> ExitCode {
    let settings = SlotEventsSettings::from_vars(config::process_env);
    tracing::info!(bus = settings.bus, "slot events go to this EventBridge bus");
    let function = settings.function;
    let slot_events = Arc::new(SlotEvents::new(EventBridge::new(
        aws::eventbridge_client(&aws::load_config().await),
        settings.bus,
    )));
    let result = super::run_json(move |batch| {
        let slot_events = Arc::clone(&slot_events);
        let function = function.clone();
        async move {
            let report = slot_events.handle(&batch).await;
            println!("{}", report.metric_line(&function, Timestamp::now()));
            Ok(report.response())
        }
    })
    .await;
    super::runtime_stopped(result)
}

#[cfg(test)]
mod tests;
