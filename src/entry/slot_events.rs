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
use crate::domain::lock::Timestamp;
use crate::metrics::emf_line;
use crate::store::dynamodb::{group_from_keys, record_from_image};

/// Entries in one PutEvents call: EventBridge's limit.
pub const ENTRIES_PER_PUT: usize = 10;
/// Tries of an entry before its record is reported as failed.
pub const PUT_ATTEMPTS: u32 = 3;

pub const EVENTS_PUT: &str = "SlotEventsPut";
pub const EVENTS_FAILED: &str = "SlotEventsFailed";
pub const UNREADABLE_RECORDS: &str = "UnreadableStreamRecords";

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

fn read_record(record: &Value) -> Result<RecordEvents, String> {
    let record =
        StreamRecord::deserialize(record).map_err(|e| format!("not a stream record: {e}"))?;
    let data = &record.dynamodb;
    let at = |what: &str, e: crate::domain::store::StoreError| format!("{what}: {e}");
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
    pub events_failed: usize,
    pub unreadable_records: usize,
    /// Sequence numbers of the records whose events could not all be put.
    pub failed_records: Vec<String>,
}

impl BatchReport {
    /// The answer Lambda reads (`ReportBatchItemFailures`): it checkpoints
    /// before the first failed record and retries from there.
    pub fn response(&self) -> Value {
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
    pub fn metric_line(&self, service: &str, now: Timestamp) -> String {
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
    pub fn with_retry_pause(mut self, pause: Duration) -> Self {
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
pub async fn run() -> ExitCode {
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
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// A sink that keeps what it was sent and fails entries as told:
    /// `fail(entry, call)` is the error of that entry on that call (from 1).
    struct FakeSink<F> {
        calls: Mutex<Vec<Vec<Outgoing>>>,
        fail: F,
    }

    impl<F: Fn(&Outgoing, usize) -> Option<String> + Send + Sync + 'static> EventSink for FakeSink<F> {
        async fn put(&self, entries: &[Outgoing]) -> Result<Vec<Option<String>>, String> {
            let mut calls = self.calls.lock().unwrap();
            calls.push(entries.to_vec());
            let call = calls.len();
            Ok(entries.iter().map(|e| (self.fail)(e, call)).collect())
        }
    }

    fn handler<F>(fail: F) -> SlotEvents<FakeSink<F>>
    where
        F: Fn(&Outgoing, usize) -> Option<String> + Send + Sync + 'static,
    {
        SlotEvents::new(FakeSink {
            calls: Mutex::new(Vec::new()),
            fail,
        })
        .with_retry_pause(Duration::ZERO)
    }

    fn never(_: &Outgoing, _: usize) -> Option<String> {
        None
    }

    fn sent<F>(handler: &SlotEvents<FakeSink<F>>) -> Vec<(String, Value)> {
        handler
            .sink
            .calls
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .map(|e| {
                (
                    e.detail_type.to_owned(),
                    serde_json::from_str(&e.detail).unwrap(),
                )
            })
            .collect()
    }

    /// A stream record as Lambda delivers it, images in DynamoDB's JSON.
    fn record(event_name: &str, sequence: &str, old: Option<Value>, new: Option<Value>) -> Value {
        let mut data = json!({
            "ApproximateCreationDateTime": 1_764_479_529.0,
            "Keys": { "group": { "S": "workers" } },
            "SequenceNumber": sequence,
            "SizeBytes": 120,
            "StreamViewType": "NEW_AND_OLD_IMAGES",
        });
        if let Some(old) = old {
            data["OldImage"] = old;
        }
        if let Some(new) = new {
            data["NewImage"] = new;
        }
        json!({
            "eventID": format!("c81e728d9d4c2f636f067f89cc14862{sequence}"),
            "eventName": event_name,
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "eu-west-1",
            "dynamodb": data,
            "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock/stream/2026-11-30T10:00:00.000",
        })
    }

    fn image(holders: &[(&str, u64)]) -> Value {
        let mut item = json!({
            "group": { "S": "workers" },
            "holder_count": { "N": holders.len().to_string() },
            "slots": { "N": "2" },
        });
        for (id, at) in holders {
            item[format!("h:{id}")] = json!({ "N": at.to_string() });
        }
        item
    }

    fn batch(records: Vec<Value>) -> Value {
        json!({ "Records": records })
    }

    fn summary(sent: &[(String, Value)]) -> Vec<(String, String)> {
        sent.iter()
            .map(|(kind, detail)| {
                let subject = detail["id"].as_str().or(detail["alarm"].as_str());
                let subject = subject.or(detail["cause"].as_str()).unwrap_or_default();
                (kind.clone(), subject.to_owned())
            })
            .collect()
    }

    fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
        expected
            .iter()
            .map(|(kind, subject)| (kind.to_string(), subject.to_string()))
            .collect()
    }

    #[tokio::test]
    async fn insert_and_modify_records_become_grants_and_releases() {
        let events = handler(never);
        // One record with a holder gone and another come: images may show
        // both, though the protocol writes one at a time.
        let mut both = image(&[("b", 2_000), ("c", 9_500)]);
        both["released_at"] = json!({ "N": "9000" });
        let report = events
            .handle(&batch(vec![
                record("INSERT", "1", None, Some(image(&[("a", 1_000)]))),
                record(
                    "MODIFY",
                    "2",
                    Some(image(&[("a", 1_000)])),
                    Some(image(&[("a", 1_000), ("b", 2_000)])),
                ),
                record(
                    "MODIFY",
                    "3",
                    Some(image(&[("a", 1_000), ("b", 2_000)])),
                    Some(both),
                ),
            ]))
            .await;
        assert_eq!(
            report,
            BatchReport {
                events_put: 4,
                ..BatchReport::default()
            }
        );
        assert_eq!(report.response(), json!({ "batchItemFailures": [] }));
        let sent = sent(&events);
        assert_eq!(
            summary(&sent),
            pairs(&[
                ("Slot Granted", "a"),
                ("Slot Granted", "b"),
                ("Slot Released", "a"),
                ("Slot Granted", "c"),
            ])
        );
        assert_eq!(sent[2].1["at"], "1970-01-01T00:00:09.000Z");
        assert_eq!(sent[2].1["held_seconds"], 8);
        assert_eq!(sent[3].1["holders"], 2);
        assert_eq!(sent[3].1["sequence"], "3");
    }

    #[tokio::test]
    async fn a_pause_set_and_cleared_and_a_removed_item() {
        let events = handler(never);
        let mut paused = image(&[("a", 1_000)]);
        paused["paused"] = json!({ "M": {
            "reason": { "S": "bad kernel" }, "since": { "N": "7000" }, "by": { "S": "ana" }
        } });
        paused["alarms"] = json!({ "SS": ["api-5xx"] });
        let report = events
            .handle(&batch(vec![
                record(
                    "MODIFY",
                    "10",
                    Some(image(&[("a", 1_000)])),
                    Some(paused.clone()),
                ),
                record(
                    "MODIFY",
                    "11",
                    Some(paused.clone()),
                    Some(image(&[("a", 1_000)])),
                ),
                record("REMOVE", "12", Some(image(&[("a", 1_000)])), None),
            ]))
            .await;
        assert_eq!(report.events_put, 5);
        let sent = sent(&events);
        assert_eq!(
            summary(&sent),
            pairs(&[
                ("Group Paused", "person"),
                ("Group Paused", "api-5xx"),
                ("Group Resumed", "person"),
                ("Group Resumed", "api-5xx"),
                ("Slot Released", "a"),
            ])
        );
        assert_eq!(sent[0].1["reason"], "bad kernel");
        assert_eq!(sent[0].1["by"], "ana");
        assert_eq!(sent[0].1["at"], "1970-01-01T00:00:07.000Z");
        // Changes the item does not date are dated by the stream record.
        assert_eq!(sent[1].1["at"], "2025-11-30T05:12:09.000Z");
        assert_eq!(sent[4].1["at"], "2025-11-30T05:12:09.000Z");
    }

    #[tokio::test]
    async fn an_unknown_attribute_is_ignored_and_a_corrupt_record_is_skipped_alone() {
        let events = handler(never);
        let mut unknown = image(&[("a", 1_000)]);
        unknown["added_by_a_later_version"] = json!({ "BOOL": true });
        let mut corrupt = image(&[("b", 2_000)]);
        corrupt["holder_count"] = json!({ "N": "7" });
        let report = events
            .handle(&batch(vec![
                record("INSERT", "20", None, Some(unknown)),
                record("MODIFY", "21", Some(image(&[])), Some(corrupt)),
                json!({ "eventID": "no-dynamodb-part" }),
                record(
                    "MODIFY",
                    "22",
                    Some(image(&[("a", 1_000)])),
                    Some(image(&[])),
                ),
            ]))
            .await;
        assert_eq!(
            report,
            BatchReport {
                events_put: 2,
                unreadable_records: 2,
                ..BatchReport::default()
            }
        );
        assert_eq!(
            summary(&sent(&events)),
            pairs(&[("Slot Granted", "a"), ("Slot Released", "a")])
        );
        let metrics: Value = serde_json::from_str(&report.metric_line("fn", Timestamp(1))).unwrap();
        assert_eq!(metrics[UNREADABLE_RECORDS], 2);
        assert_eq!(metrics[EVENTS_PUT], 2);
        assert_eq!(
            metrics["_aws"]["CloudWatchMetrics"][0]["Metrics"],
            json!([{ "Name": UNREADABLE_RECORDS, "Unit": "Count" }])
        );
    }

    #[tokio::test]
    async fn more_than_ten_events_go_in_calls_of_ten() {
        let events = handler(never);
        let holders: Vec<(String, u64)> = (0..23).map(|i| (format!("n{i:02}"), 1_000)).collect();
        let holders: Vec<(&str, u64)> = holders.iter().map(|(id, at)| (id.as_str(), *at)).collect();
        events
            .handle(&batch(vec![record(
                "INSERT",
                "30",
                None,
                Some(image(&holders)),
            )]))
            .await;
        let sizes: Vec<usize> = events
            .sink
            .calls
            .lock()
            .unwrap()
            .iter()
            .map(Vec::len)
            .collect();
        assert_eq!(sizes, [10, 10, 3]);
    }

    #[tokio::test]
    async fn a_failed_entry_is_tried_again_and_then_reported_with_its_record() {
        // "b" fails on every call; "a" only on the first.
        let events = handler(|entry: &Outgoing, call| {
            let id = serde_json::from_str::<Value>(&entry.detail).unwrap()["id"].clone();
            (id == "b" || (id == "a" && call == 1))
                .then(|| "ThrottlingException: slow down".to_owned())
        });
        let report = events
            .handle(&batch(vec![
                record("INSERT", "40", None, Some(image(&[("a", 1_000)]))),
                record(
                    "MODIFY",
                    "41",
                    Some(image(&[("a", 1_000)])),
                    Some(image(&[("a", 1_000), ("b", 2_000)])),
                ),
                record(
                    "MODIFY",
                    "42",
                    Some(image(&[("a", 1_000), ("b", 2_000)])),
                    Some(image(&[("a", 1_000), ("b", 2_000), ("c", 3_000)])),
                ),
            ]))
            .await;
        assert_eq!(report.events_put, 2);
        assert_eq!(report.events_failed, 1);
        assert_eq!(report.failed_records, ["41"]);
        assert_eq!(
            report.response(),
            json!({ "batchItemFailures": [{ "itemIdentifier": "41" }] })
        );
        let calls = events.sink.calls.lock().unwrap();
        assert_eq!(calls.len(), PUT_ATTEMPTS as usize, "one call per try");
        assert_eq!(calls[0].len(), 3);
        assert_eq!(calls[1].len(), 2, "the second try sends only what failed");
        assert_eq!(calls[2].len(), 1);
    }
}
