//! Slot events end to end: Zincati's calls and a person's pause write to a
//! table in DynamoDB Local, whose own stream is read as Lambda would read it
//! and fed to the binary running as the `slot-events` entry point, which puts
//! its events on a stand-in for EventBridge's PutEvents over HTTP.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetlock::aws::dynamodb_client as client;
use fleetlock::aws::load_config;
use fleetlock::domain::auth::Auth;
use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::ByPerson;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::DynamoStore;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use crate::helpers::{
    api, aws_actions, json_lines, local_dynamodb_endpoint, spawn_server, stand_in,
    unique_table_name, zincati,
};
use crate::lambda_runtime::{lambda_command, runtime_api};
use fleetlock::domain::store::Decisions;

/// One call of DynamoDB's JSON API, as the stream's own reader (Lambda) sees
/// the answers. DynamoDB Local checks no signature.
async fn dynamodb(target: &str, body: Value) -> Value {
    let endpoint = local_dynamodb_endpoint();
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/');
    let stream = TcpStream::connect(authority).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::post("/")
        .header("host", authority)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amz-target", target)
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=fleetlock-tests/20261130/us-east-1/dynamodb/aws4_request, \
             SignedHeaders=host, Signature=00",
        )
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let json: Value = serde_json::from_slice(&body).unwrap();
    assert!(status.is_success(), "{target}: {json}");
    json
}

/// A lock table with the stream both templates give it.
async fn table_with_stream() -> (String, String) {
    let table = unique_table_name("events");
    dynamodb(
        "DynamoDB_20120810.CreateTable",
        json!({
            "TableName": table,
            "AttributeDefinitions": [{ "AttributeName": "group", "AttributeType": "S" }],
            "KeySchema": [{ "AttributeName": "group", "KeyType": "HASH" }],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": { "StreamEnabled": true, "StreamViewType": "NEW_AND_OLD_IMAGES" },
        }),
    )
    .await;
    let streams = dynamodb(
        "DynamoDBStreams_20120810.ListStreams",
        json!({ "TableName": table }),
    )
    .await;
    let arn = streams["Streams"][0]["StreamArn"]
        .as_str()
        .unwrap()
        .to_owned();
    (table, arn)
}

/// Every record of the stream so far, shaped as Lambda delivers them.
async fn stream_records(stream_arn: &str) -> Vec<Value> {
    let described = dynamodb(
        "DynamoDBStreams_20120810.DescribeStream",
        json!({ "StreamArn": stream_arn }),
    )
    .await;
    let mut records = Vec::new();
    for shard in described["StreamDescription"]["Shards"].as_array().unwrap() {
        let iterator = dynamodb(
            "DynamoDBStreams_20120810.GetShardIterator",
            json!({
                "StreamArn": stream_arn,
                "ShardId": shard["ShardId"],
                "ShardIteratorType": "TRIM_HORIZON",
            }),
        )
        .await;
        let got = dynamodb(
            "DynamoDBStreams_20120810.GetRecords",
            json!({ "ShardIterator": iterator["ShardIterator"], "Limit": 1000 }),
        )
        .await;
        for mut record in got["Records"].as_array().unwrap().iter().cloned() {
            record["eventSourceARN"] = stream_arn.into();
            records.push(record);
        }
    }
    records
}

/// PutEvents as EventBridge answers it (JSON 1.1), keeping every entry.
/// Entries whose detail names a node in `failing` fail, every time.
#[derive(Clone, Default)]
struct EventBus {
    entries: Arc<Mutex<Vec<Value>>>,
    failing: Arc<Mutex<HashSet<String>>>,
}

impl EventBus {
    async fn start(&self) -> String {
        let bus = self.clone();
        stand_in(move |request, body| {
            assert_eq!(request.headers["x-amz-target"], "AWSEvents.PutEvents");
            let answer = bus.put(&serde_json::from_slice(&body).unwrap());
            (
                200,
                "application/x-amz-json-1.1",
                answer.to_string().into_bytes(),
            )
        })
        .await
    }

    fn put(&self, body: &Value) -> Value {
        let failing = self.failing.lock().unwrap();
        let mut kept = self.entries.lock().unwrap();
        let mut results = Vec::new();
        let mut failed = 0;
        for entry in body["Entries"].as_array().unwrap() {
            let detail: Value = serde_json::from_str(entry["Detail"].as_str().unwrap()).unwrap();
            if detail["id"].as_str().is_some_and(|id| failing.contains(id)) {
                failed += 1;
                results
                    .push(json!({ "ErrorCode": "InternalFailure", "ErrorMessage": "try again" }));
            } else {
                results.push(json!({ "EventId": format!("ev-{}", kept.len()) }));
                kept.push(entry.clone());
            }
        }
        json!({ "FailedEntryCount": failed, "Entries": results })
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.entries.lock().unwrap())
    }
}

fn summary(entries: &[Value]) -> Vec<(String, String, String)> {
    entries
        .iter()
        .map(|entry| {
            let detail: Value = serde_json::from_str(entry["Detail"].as_str().unwrap()).unwrap();
            let subject = detail["id"]
                .as_str()
                .or(detail["alarm"].as_str())
                .or(detail["cause"].as_str())
                .unwrap_or_default()
                .to_owned();
            (
                entry["DetailType"].as_str().unwrap().to_owned(),
                detail["group"].as_str().unwrap().to_owned(),
                subject,
            )
        })
        .collect()
}

fn keys(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|entry| {
            let detail: Value = serde_json::from_str(entry["Detail"].as_str().unwrap()).unwrap();
            detail["idempotency_key"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn the_tables_stream_becomes_events_once_per_change_and_the_same_key_on_redelivery() {
    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let store = DynamoStore::new(client(&aws), &table);
    let server = spawn_server(api("workers=2", store, Auth::Disabled)).await;
    let workers = GroupName::parse("workers").unwrap();
    let operator = DynamoStore::new(client(&aws), &table);

    // Zincati's calls and a person's commands, as they reach the table.
    assert_eq!(
        zincati(server.addr, "pre-reboot", "node-a", "workers")
            .await
            .status,
        200
    );
    assert_eq!(
        zincati(server.addr, "pre-reboot", "node-b", "workers")
            .await
            .status,
        200
    );
    assert_eq!(
        zincati(server.addr, "steady-state", "node-a", "workers")
            .await
            .status,
        200
    );
    let pause = ByPerson {
        reason: PauseReason::parse("kernel 6.18 panics on r7g").unwrap(),
        since: Timestamp::now(),
        by: "ana".into(),
    };
    operator.pause(&workers, pause).await.unwrap();
    operator.resume(&workers).await.unwrap();
    let b = NodeId::parse("node-b").unwrap();
    operator
        .release(&workers, &b, false, Timestamp::now())
        .await
        .unwrap();
    // Answers that change nothing write nothing, so they make no event.
    assert_eq!(
        zincati(server.addr, "steady-state", "node-a", "workers")
            .await
            .status,
        200
    );

    let records = stream_records(&stream_arn).await;
    assert_eq!(records.len(), 6, "one record per change: {records:#?}");
    let batch = json!({ "Records": records }).to_string();

    let bus = EventBus::default();
    let bus_url = bus.start().await;
    let mut runtime = runtime_api().await;
    let mut function = lambda_command(&runtime, "fleetlock-events", "slot-events")
        .env("AWS_ENDPOINT_URL_EVENTBRIDGE", &bus_url)
        .env("FLEETLOCK_EVENT_BUS", "fleet-changes")
        .env("RUST_LOG", "info,fleetlock=debug")
        // None of the API's settings: this entry point must not need them.
        .env_remove("FLEETLOCK_TABLE")
        .spawn()
        .unwrap();
    let mut deliver = async |batch: &str| -> Value {
        runtime.events.send(batch.to_owned()).unwrap();
        let (path, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
            .await
            .expect("the function answered")
            .unwrap();
        assert!(path.ends_with("/response"), "{path}: {answer}");
        answer
    };

    let answer = deliver(&batch).await;
    assert_eq!(answer, json!({ "batchItemFailures": [] }));
    let first = bus.take();
    let expected = [
        ("Slot Granted", "node-a"),
        ("Slot Granted", "node-b"),
        ("Slot Released", "node-a"),
        ("Group Paused", "person"),
        ("Group Resumed", "person"),
        ("Slot Released", "node-b"),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(kind, subject)| (kind.to_string(), "workers".to_owned(), subject.to_string()))
        .collect();
    assert_eq!(summary(&first), expected);
    for entry in &first {
        assert_eq!(entry["Source"], "fleetlock");
        assert_eq!(entry["EventBusName"], "fleet-changes");
        assert!(entry["Time"].is_number(), "{entry}");
    }
    let details: Vec<Value> = first
        .iter()
        .map(|e| serde_json::from_str(e["Detail"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(details[1]["holders"], 2);
    assert_eq!(details[1]["holder_ids"], json!(["node-a", "node-b"]));
    assert_eq!(details[1]["slots"], 2);
    assert_eq!(details[3]["reason"], "kernel 6.18 panics on r7g");
    assert_eq!(details[3]["by"], "ana");
    assert_eq!(details[3]["paused"], true);
    assert_eq!(details[5]["holders"], 0);
    let first_keys = keys(&first);
    assert_eq!(
        first_keys.iter().collect::<HashSet<_>>().len(),
        6,
        "a key per change"
    );

    // Lambda delivers the same batch again: the same events, the same keys.
    assert_eq!(deliver(&batch).await, json!({ "batchItemFailures": [] }));
    let again = bus.take();
    assert_eq!(summary(&again), expected);
    assert_eq!(keys(&again), first_keys);

    // EventBridge keeps refusing node-b's events: the others are put, and
    // the two records that carry node-b's changes are reported for Lambda to
    // retry from the first of them.
    bus.failing.lock().unwrap().insert("node-b".into());
    let answer = deliver(&batch).await;
    let failed: Vec<String> = answer["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap().to_owned())
        .collect();
    let sequence = |i: usize| records_sequence(&batch, i);
    assert_eq!(failed, [sequence(1), sequence(5)]);
    assert_eq!(summary(&bus.take()).len(), 4);

    function.start_kill().unwrap();
    let output = function.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stderr.contains(r#""entry":"slot-events""#),
        "the entry point is named at start: {stderr}"
    );
    // Three tries of node-b's two events, then an error line.
    assert!(
        stderr.contains("events still not put after 3 tries"),
        "{stderr}"
    );
    // Every AWS call it made is one its policy allows, and no other.
    let actions = aws_actions(&stderr);
    let allowed: std::collections::BTreeSet<String> = fleetlock::aws::iam::SLOT_EVENTS_BUS_ACTIONS
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(actions, allowed);
    let metrics: Vec<Value> = json_lines(&stdout)
        .into_iter()
        .filter(|j| j.get("_aws").is_some())
        .collect();
    assert_eq!(metrics.len(), 3);
    let emitted: std::collections::BTreeSet<String> = metrics
        .iter()
        .flat_map(|l| l.as_object().unwrap().keys().cloned())
        .collect();
    let read = crate::helpers::dashboard_fields("slot_events_log_group");
    assert!(read.contains("SlotEventsFailed"), "{read:?}");
    assert!(
        read.is_subset(&emitted),
        "the dashboard reads {read:?}; the lines have {emitted:?}"
    );
    assert_eq!(
        (
            metrics[2]["SlotEventsPut"].clone(),
            metrics[2]["SlotEventsFailed"].clone()
        ),
        (json!(4), json!(2))
    );
}

fn records_sequence(batch: &str, index: usize) -> String {
    let batch: Value = serde_json::from_str(batch).unwrap();
    batch["Records"][index]["dynamodb"]["SequenceNumber"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The events the slot-events function (the binary, under the runtime
/// stand-in) puts for one batch of stream records, every record put.
async fn put_by_the_slot_events_function(records: Vec<Value>) -> Vec<Value> {
    let bus = EventBus::default();
    let bus_url = bus.start().await;
    let mut runtime = runtime_api().await;
    let mut function = lambda_command(&runtime, "fleetlock-events", "slot-events")
        .env("AWS_ENDPOINT_URL_EVENTBRIDGE", &bus_url)
        .env("FLEETLOCK_EVENT_BUS", "fleet-changes")
        .env_remove("FLEETLOCK_TABLE")
        .spawn()
        .unwrap();
    let batch = json!({ "Records": records }).to_string();
    runtime.events.send(batch).unwrap();
    let (_, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
        .await
        .expect("the function answered")
        .unwrap();
    assert_eq!(answer, json!({ "batchItemFailures": [] }));
    function.start_kill().unwrap();
    function.wait().await.unwrap();
    bus.take()
}

/// A lease as Zincati meets it, end to end: a node holds past its lease, the
/// next node to ask takes its slot (200, `granted_expired`), the node that
/// lost it hears a plain 200 at its boot and then a full group; the stream
/// becomes a `Slot Expired` naming both nodes and how long the slot was held,
/// then the new holder's `Slot Granted`, and no `Slot Released`.
#[tokio::test]
async fn a_slot_past_its_lease_is_taken_over_and_evented_as_expired() {
    use fleetlock::domain::groups::GroupSlots;
    use fleetlock::domain::service::FleetLock;
    use fleetlock::http::Api;
    use fleetlock::test_support::ManualClock;

    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "workers=6h")
        .unwrap();
    let clock = ManualClock::at(Timestamp::now());
    let service =
        FleetLock::new(groups, DynamoStore::new(client(&aws), &table)).with_clock(clock.clone());
    let server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    let ask = |endpoint, node| zincati(server.addr, endpoint, node, "workers");

    assert_eq!(ask("pre-reboot", "node-gone").await.status, 200);
    clock.advance(Duration::from_secs(5 * 3600));
    let full = ask("pre-reboot", "node-new").await;
    assert_eq!(
        (full.status, full.kind()),
        (423, "semaphore_full".to_owned())
    );
    let value = full.json()["value"].as_str().unwrap().to_owned();
    assert!(value.contains("6h lease runs out at"), "{value}");
    clock.advance(Duration::from_secs(3600));
    let taken = ask("pre-reboot", "node-new").await;
    assert_eq!(
        (taken.status, taken.json()["outcome"].as_str()),
        (200, Some("granted_expired"))
    );
    let boot = ask("steady-state", "node-gone").await;
    assert_eq!(
        (boot.status, boot.json()["outcome"].as_str()),
        (200, Some("not_held"))
    );
    let again = ask("pre-reboot", "node-gone").await;
    assert_eq!(
        (again.status, again.kind()),
        (423, "slot_taken".to_owned()),
        "never a 200 for the slot it lost"
    );
    let value = again.json()["value"].as_str().unwrap().to_owned();
    assert!(
        value.contains("another node took it over at") && value.contains("6h lease"),
        "{value}"
    );

    let records = stream_records(&stream_arn).await;
    assert_eq!(
        records.len(),
        2,
        "the grant and the take-over: {records:#?}"
    );
    let sent = put_by_the_slot_events_function(records).await;
    let expected: Vec<(String, String, String)> = [
        ("Slot Granted", "node-gone"),
        ("Slot Expired", "node-gone"),
        ("Slot Granted", "node-new"),
    ]
    .iter()
    .map(|(kind, node)| (kind.to_string(), "workers".to_owned(), node.to_string()))
    .collect();
    assert_eq!(summary(&sent), expected);
    let expired: Value = serde_json::from_str(sent[1]["Detail"].as_str().unwrap()).unwrap();
    assert_eq!(expired["taken_by"], "node-new");
    assert_eq!(expired["held_seconds"], 6 * 3600);
    assert_eq!(expired["holders"], 1);
    assert_eq!(expired["holder_ids"], json!(["node-new"]));
}

/// The first sequence of issue 35, as Zincati speaks it: a one-slot group
/// with a 30-minute lease, node A's grant 31 minutes old. A asks again (200,
/// `already_held`, its lease renewed), B asks a second later and is refused:
/// never two 200s. The renewal is a stream record of its own, from which
/// the slot-events function sends no event.
#[tokio::test]
async fn a_live_holder_past_its_lease_keeps_its_slot_and_the_renewal_is_no_event() {
    use fleetlock::domain::groups::GroupSlots;
    use fleetlock::domain::service::FleetLock;
    use fleetlock::http::Api;
    use fleetlock::test_support::ManualClock;

    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let groups = GroupSlots::parse("default=1")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "default=30m")
        .unwrap();
    let clock = ManualClock::at(Timestamp::now());
    let service =
        FleetLock::new(groups, DynamoStore::new(client(&aws), &table)).with_clock(clock.clone());
    let server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    let ask = |endpoint, node| zincati(server.addr, endpoint, node, "default");

    assert_eq!(ask("pre-reboot", "node-a").await.status, 200);
    clock.advance(Duration::from_secs(31 * 60));
    let renewed = ask("pre-reboot", "node-a").await;
    assert_eq!(
        (renewed.status, renewed.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );
    assert_eq!(renewed.json()["lease_seconds"], 1800);
    clock.advance(Duration::from_secs(1));
    let other = ask("pre-reboot", "node-b").await;
    assert_eq!(
        (other.status, other.kind()),
        (423, "semaphore_full".to_owned()),
        "two nodes told to reboot in a one-slot group"
    );
    let value = other.json()["value"].as_str().unwrap().to_owned();
    assert!(value.contains("30m lease runs out at"), "{value}");

    let records = stream_records(&stream_arn).await;
    assert_eq!(records.len(), 2, "the grant and the renewal: {records:#?}");
    let sent = put_by_the_slot_events_function(records).await;
    assert_eq!(
        summary(&sent),
        [(
            "Slot Granted".to_owned(),
            "default".to_owned(),
            "node-a".to_owned()
        )],
        "the renewal is no event"
    );
}

/// The whole drain loop, as Zincati speaks it, with DynamoDB Local's stream:
/// a pre-reboot reserves the slot (423), the stream's `Slot Drain Requested`
/// gives a hook the `reserved_at` it confirms with (the drained entry
/// point's handler, in process), the node's next pre-reboot hears 200, its
/// steady-state releases; the events are the drain request, the grant and
/// the release, in that order. A redelivered drain request confirmed after
/// the node asked again grants nothing.
#[tokio::test]
async fn a_drain_is_requested_confirmed_granted_and_released_through_the_stream() {
    use fleetlock::domain::groups::GroupSlots;
    use fleetlock::domain::service::FleetLock;
    use fleetlock::entry::drained::DrainConfirmer;
    use fleetlock::http::Api;
    use fleetlock::test_support::ManualClock;

    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=15m")
        .unwrap();
    let clock = ManualClock::at(Timestamp::now());
    let service =
        FleetLock::new(groups, DynamoStore::new(client(&aws), &table)).with_clock(clock.clone());
    let server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    let ask = |endpoint, node| zincati(server.addr, endpoint, node, "workers");
    let hook =
        DrainConfirmer::new(DynamoStore::new(client(&aws), &table)).with_clock(clock.clone());

    let reserved = ask("pre-reboot", "node-a").await;
    assert_eq!(
        (reserved.status, reserved.kind()),
        (423, "waiting_for_drain".to_owned())
    );
    let other = ask("pre-reboot", "node-b").await;
    assert_eq!(other.kind(), "semaphore_full", "the reservation counts");

    let detail = |entry: &Value| -> Value {
        serde_json::from_str(entry["Detail"].as_str().unwrap()).unwrap()
    };

    let first = stream_records(&stream_arn).await;
    let sent = put_by_the_slot_events_function(first.clone()).await;
    assert_eq!(
        summary(&sent),
        [(
            "Slot Drain Requested".to_owned(),
            "workers".to_owned(),
            "node-a".to_owned()
        )]
    );
    let request = detail(&sent[0]);
    // The hook drains the node, then confirms the reservation it was told of.
    clock.advance(Duration::from_secs(240));
    let action = json!({
        "action": "drained",
        "group": request["group"],
        "id": request["id"],
        "reserved_at": request["reserved_at"],
    });
    let confirmed = hook.handle(&action).await.unwrap();
    assert_eq!(
        (confirmed["outcome"].as_str(), confirmed["done"].as_bool()),
        (Some("granted"), Some(true))
    );
    clock.advance(Duration::from_secs(75));
    let granted = ask("pre-reboot", "node-a").await;
    assert_eq!(
        (granted.status, granted.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );
    clock.advance(Duration::from_secs(180));
    let released = ask("steady-state", "node-a").await;
    assert_eq!(released.json()["outcome"], "released");

    // The node asks again for its next update; the first drain request is
    // delivered again (at least once) and confirmed late: nothing granted.
    clock.advance(Duration::from_secs(60));
    assert_eq!(
        ask("pre-reboot", "node-a").await.kind(),
        "waiting_for_drain"
    );
    let late = hook.handle(&action).await.unwrap();
    assert_eq!(
        (late["outcome"].as_str(), late["done"].as_bool()),
        (Some("other_reservation"), Some(false))
    );
    assert_eq!(
        ask("pre-reboot", "node-a").await.kind(),
        "waiting_for_drain"
    );

    let records = stream_records(&stream_arn).await;
    let sent = put_by_the_slot_events_function(records[first.len()..].to_vec()).await;
    let expected: Vec<(String, String, String)> = [
        ("Slot Granted", "node-a"),
        ("Slot Released", "node-a"),
        ("Slot Drain Requested", "node-a"),
    ]
    .iter()
    .map(|(kind, node)| (kind.to_string(), "workers".to_owned(), node.to_string()))
    .collect();
    assert_eq!(summary(&sent), expected);
    let grant = detail(&sent[0]);
    assert_eq!(grant["reserved_at"], request["reserved_at"]);
    assert_eq!(grant["waited_seconds"], 240);
    assert_eq!(
        detail(&sent[1]).get("reserved"),
        None,
        "a reboot, not an undrain"
    );
    assert_ne!(detail(&sent[2])["reserved_at"], request["reserved_at"]);
}

/// One lock over two regions (`FLEETLOCK_REGION`), one slot-events function
/// reading the table's stream, as the templates deploy them: every change,
/// whichever region made it, becomes one event, and the regions' settings
/// records (the item `~settings`) become none.
#[tokio::test]
async fn two_regions_writes_reach_the_one_slot_events_reader_once_each() {
    use fleetlock::domain::groups::GroupSlots;
    use fleetlock::domain::service::FleetLock;
    use fleetlock::http::Api;

    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let mut regions = Vec::new();
    for region in ["eu-west-1", "eu-west-2"] {
        let store = DynamoStore::new(client(&aws), &table);
        let service = FleetLock::new(GroupSlots::parse("db=1").unwrap(), store)
            .agreeing(region, Duration::from_secs(30));
        service
            .record_settings()
            .await
            .expect("record the settings");
        regions.push(spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await);
    }
    let (ireland, london) = (regions[0].addr, regions[1].addr);
    for (region, endpoint, node, status) in [
        (ireland, "pre-reboot", "node-a", 200),
        (london, "pre-reboot", "node-b", 423),
        (ireland, "steady-state", "node-a", 200),
        (london, "pre-reboot", "node-b", 200),
        (london, "steady-state", "node-b", 200),
    ] {
        let answer = zincati(region, endpoint, node, "db").await;
        assert_eq!(answer.status, status, "{endpoint} {node}");
    }

    let records = stream_records(&stream_arn).await;
    let events = put_by_the_slot_events_function(records.clone()).await;
    let settings_records = records
        .iter()
        .filter(|r| r["dynamodb"]["Keys"]["group"]["S"] == "~settings")
        .count();
    assert_eq!(
        settings_records, 2,
        "each region recorded its settings: {records:#?}"
    );
    assert_eq!(
        summary(&events),
        [
            ("Slot Granted", "db", "node-a"),
            ("Slot Released", "db", "node-a"),
            ("Slot Granted", "db", "node-b"),
            ("Slot Released", "db", "node-b"),
        ]
        .map(|(kind, group, id)| (kind.to_owned(), group.to_owned(), id.to_owned())),
        "one event per change, from either region; none for the settings"
    );
    let unique: HashSet<String> = keys(&events).into_iter().collect();
    assert_eq!(unique.len(), events.len(), "no change twice");
}

/// A return as the stream tells it, end to end on DynamoDB Local: a node's
/// steady-state behind the return gate is a `Slot Released` marked
/// returning, the hook's confirmation a `Slot Returned` with when the return
/// began and how long it took; a node that never comes back is a `Slot
/// Return Overdue` and a `Group Paused` by the stop when the sweep judges
/// it, and a person's resume a `Group Resumed`.
#[tokio::test]
async fn a_return_is_released_confirmed_overdue_and_resumed_through_the_stream() {
    use fleetlock::domain::groups::GroupSlots;
    use fleetlock::domain::service::FleetLock;
    use fleetlock::entry::drained::DrainConfirmer;
    use fleetlock::http::Api;
    use fleetlock::test_support::ManualClock;

    let (table, stream_arn) = table_with_stream().await;
    let aws = load_config().await;
    let groups = GroupSlots::parse("workers=2")
        .unwrap()
        .with_setting("FLEETLOCK_RETURN", "workers=20m")
        .unwrap();
    let started = Timestamp::now();
    let clock = ManualClock::at(started);
    let service = FleetLock::new(groups.clone(), DynamoStore::new(client(&aws), &table))
        .with_clock(clock.clone());
    let server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    let ask = |endpoint, node| zincati(server.addr, endpoint, node, "workers");
    let hook = DrainConfirmer::new(DynamoStore::new(client(&aws), &table))
        .with_sweep(groups, "fleetlock-api")
        .with_clock(clock.clone());

    for node in ["node-a", "node-b"] {
        assert_eq!(ask("pre-reboot", node).await.status, 200);
    }
    clock.advance(Duration::from_secs(300));
    for node in ["node-a", "node-b"] {
        assert_eq!(
            ask("steady-state", node).await.json()["outcome"],
            "returning"
        );
    }
    clock.advance(Duration::from_secs(120));
    let confirmed = hook
        .handle(&json!({"action": "returned", "group": "workers", "id": "node-a"}))
        .await
        .unwrap();
    assert_eq!(confirmed["outcome"], "returned", "{confirmed}");
    // node-b never comes back: past its 20 minutes, the sweep stops the group.
    clock.advance(Duration::from_secs(20 * 60));
    let swept = hook.handle(&json!({"action": "sweep"})).await.unwrap();
    assert_eq!(swept["stopped"], 1, "{swept}");
    let workers = GroupName::parse("workers").unwrap();
    DynamoStore::new(client(&aws), &table)
        .resume(&workers)
        .await
        .unwrap();

    let sent = put_by_the_slot_events_function(stream_records(&stream_arn).await).await;
    let expected: Vec<(String, String, String)> = [
        ("Slot Granted", "node-a"),
        ("Slot Granted", "node-b"),
        ("Slot Released", "node-a"),
        ("Slot Released", "node-b"),
        ("Slot Returned", "node-a"),
        ("Slot Return Overdue", "node-b"),
        ("Group Paused", "node-b"),
        ("Group Resumed", "node-b"),
    ]
    .iter()
    .map(|(kind, key)| (kind.to_string(), "workers".to_owned(), key.to_string()))
    .collect();
    assert_eq!(summary(&sent), expected);
    let detail =
        |n: usize| -> Value { serde_json::from_str(sent[n]["Detail"].as_str().unwrap()).unwrap() };
    for n in [2, 3] {
        assert_eq!(detail(n)["returning"], true, "{}", detail(n));
    }
    let began = started.plus(Duration::from_secs(300)).to_rfc3339_millis();
    let (back, overdue) = (detail(4), detail(5));
    assert_eq!(
        (
            back["released_at"].as_str(),
            back["returning_seconds"].as_u64()
        ),
        (Some(began.as_str()), Some(120)),
        "{back}"
    );
    // The overdue return is dated by the stream record (DynamoDB Local's
    // wall clock, not the test's); the stop by the sweep that judged it.
    assert_eq!(
        overdue["released_at"].as_str(),
        Some(began.as_str()),
        "{overdue}"
    );
    let judged = started.plus(Duration::from_secs(300 + 120 + 1200));
    let stop = detail(6);
    assert_eq!(
        (stop["at"].as_str(), stop["released_at"].as_str()),
        (
            Some(judged.to_rfc3339_millis().as_str()),
            Some(began.as_str())
        ),
        "{stop}"
    );
}
