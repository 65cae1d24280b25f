use std::sync::Mutex;

use crate::domain::events::PutFailed;

use super::*;

/// A sink that keeps what it was sent and fails entries as told:
/// `fail(entry, call)` is the error of that entry on that call (from 1).
struct FakeSink<F> {
    calls: Mutex<Vec<Vec<Outgoing>>>,
    fail: F,
}

impl<F: Fn(&Outgoing, usize) -> Option<String> + Send + Sync + 'static> EventSink for FakeSink<F> {
    async fn put(&self, entries: &[Outgoing]) -> Result<Vec<Option<String>>, PutFailed> {
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
        (id == "b" || (id == "a" && call == 1)).then(|| "ThrottlingException: slow down".to_owned())
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
