//! Alarm pauses end to end: the binary as the `alarm-pauses` entry point, fed
//! real-shaped "CloudWatch Alarm State Change" and schedule events, reading
//! alarm states from a stand-in for CloudWatch's DescribeAlarms (its own wire
//! protocol, Smithy RPC v2 CBOR, over HTTP) and writing pauses to DynamoDB
//! Local.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use aws_smithy_cbor::data::Type;
use aws_smithy_cbor::{Decoder, Encoder};
use fleetlock::aws::dynamodb_client as client;
use fleetlock::aws::load_config;
use fleetlock::domain::input::{GroupName, PauseReason};
use fleetlock::domain::lock::ByPerson;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::store::dynamodb::DynamoStore;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::helpers::{
    aws_actions, json_lines, local_dynamodb_endpoint, stand_in, unique_table_name,
};
use crate::lambda_runtime::{RuntimeApi, lambda_command, runtime_api};
use fleetlock::domain::store::Decisions;

/// CloudWatch's alarms as DescribeAlarms reports them: name to (composite?, state).
#[derive(Clone, Default)]
pub(crate) struct Alarms {
    alarms: Arc<Mutex<BTreeMap<String, (bool, String)>>>,
    calls: Arc<AtomicU32>,
}

impl Alarms {
    pub(crate) fn set(&self, name: &str, state: &str) {
        let composite = name.starts_with("composite-");
        self.alarms
            .lock()
            .unwrap()
            .insert(name.into(), (composite, state.into()));
    }

    fn delete(&self, name: &str) {
        self.alarms.lock().unwrap().remove(name);
    }

    pub(crate) async fn start(&self) -> String {
        let alarms = self.clone();
        stand_in(move |request, body| {
            assert_eq!(
                request.uri.path(),
                "/service/GraniteServiceVersion20100801/operation/DescribeAlarms"
            );
            assert_eq!(request.headers["smithy-protocol"], "rpc-v2-cbor");
            alarms.calls.fetch_add(1, Ordering::Relaxed);
            let (names, next_token) = requested(&body);
            // As CloudWatch: at most 100 names a call.
            if names.len() > MAX_NAMES {
                let mut out = Encoder::new(Vec::new());
                out.map(2)
                    .str("__type")
                    .str("InvalidParameterValue")
                    .str("message")
                    .str("The collection AlarmNames must not have a size greater than 100.");
                return (400, "application/cbor", out.into_writer());
            }
            (200, "application/cbor", alarms.describe(&names, next_token))
        })
        .await
    }

    /// The named alarms that exist, metric and composite apart, a page of
    /// at most 50 (CloudWatch's default MaxRecords) from `next_token` on.
    fn describe(&self, names: &[String], next_token: Option<String>) -> Vec<u8> {
        let alarms = self.alarms.lock().unwrap();
        let found: Vec<(&String, &(bool, String))> = alarms
            .iter()
            .filter(|(name, _)| names.contains(name))
            .collect();
        let from: usize = next_token.map_or(0, |t| t.parse().unwrap());
        let page: Vec<_> = found.iter().skip(from).take(PAGE).cloned().collect();
        let more = from + PAGE < found.len();
        let mut out = Encoder::new(Vec::new());
        out.map(if more { 3 } else { 2 });
        if more {
            out.str("NextToken").str(&(from + PAGE).to_string());
        }
        let found = page;
        for (key, composite) in [("MetricAlarms", false), ("CompositeAlarms", true)] {
            let these: Vec<_> = found.iter().filter(|(_, (c, _))| *c == composite).collect();
            out.str(key).array(these.len());
            for (name, (_, state)) in these {
                out.map(2)
                    .str("AlarmName")
                    .str(name)
                    .str("StateValue")
                    .str(state);
            }
        }
        out.into_writer()
    }
}

/// CloudWatch's limit of names per DescribeAlarms call, and its default page.
const MAX_NAMES: usize = 100;
const PAGE: usize = 50;

/// `AlarmNames` and `NextToken` of a DescribeAlarms request (a CBOR map,
/// maybe of indefinite length).
fn requested(body: &[u8]) -> (Vec<String>, Option<String>) {
    let mut decoder = Decoder::new(body);
    let length = decoder.map().unwrap();
    let mut names = Vec::new();
    let mut next_token = None;
    let mut read = 0;
    while length.is_none_or(|n| read < n) {
        if decoder.datatype().unwrap() == Type::Break {
            break;
        }
        let key = decoder.string().unwrap();
        if key == "AlarmNames" {
            let count = decoder.list().unwrap();
            let mut i = 0;
            while count.is_none_or(|n| i < n) {
                if decoder.datatype().unwrap() == Type::Break {
                    decoder.skip().unwrap();
                    break;
                }
                names.push(decoder.string().unwrap());
                i += 1;
            }
        } else if key == "NextToken" {
            next_token = Some(decoder.string().unwrap().to_string());
        } else {
            decoder.skip().unwrap();
        }
        read += 1;
    }
    (names, next_token)
}

/// An EventBridge "CloudWatch Alarm State Change" event, as the rule delivers it.
fn state_change(alarm: &str, from: &str, to: &str) -> String {
    json!({
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": "2026-11-30T10:00:00Z",
        "region": "eu-west-1",
        "resources": [format!("arn:aws:cloudwatch:eu-west-1:123456789012:alarm:{alarm}")],
        "detail": {
            "alarmName": alarm,
            "state": {
                "value": to,
                "reason": "Threshold Crossed: 1 datapoint [12.0 (30/11/26 09:55:00)] was greater than the threshold (5.0).",
                "timestamp": "2026-11-30T10:00:00.123+0000",
            },
            "previousState": {
                "value": from,
                "reason": "Threshold Crossed: 1 datapoint [0.0 (30/11/26 09:50:00)] was not greater than the threshold (5.0).",
                "timestamp": "2026-11-30T09:55:00.456+0000",
            },
            "configuration": { "description": "5xx answers", "metrics": [] },
        },
    })
    .to_string()
}

/// The schedule rule's event.
fn scheduled() -> String {
    json!({
        "version": "0",
        "id": "89d1a02d-5ec7-412e-82f5-13505f849b41",
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "123456789012",
        "time": "2026-11-30T10:05:00Z",
        "region": "eu-west-1",
        "resources": ["arn:aws:events:eu-west-1:123456789012:rule/fleetlock-alarm-pauses"],
        "detail": {},
    })
    .to_string()
}

struct Function {
    runtime: RuntimeApi,
    process: Child,
}

impl Function {
    async fn start(table: &str, alarms_url: &str) -> Self {
        Self::following(
            table,
            alarms_url,
            "api-5xx=*;db-latency=db,workers;composite-health=db;gone=workers",
        )
        .await
    }

    /// The function following the alarms `gates` names (FLEETLOCK_ALARM_PAUSES).
    async fn following(table: &str, alarms_url: &str, gates: &str) -> Self {
        Self::in_region(table, alarms_url, gates, None).await
    }

    /// The same, on a global table: the function of `region`
    /// (FLEETLOCK_REGION), following that region's alarms.
    async fn in_region(table: &str, alarms_url: &str, gates: &str, region: Option<&str>) -> Self {
        let runtime = runtime_api().await;
        let mut command = lambda_command(&runtime, "fleetlock-alarm-pauses", "alarm-pauses");
        command
            .env("AWS_ENDPOINT_URL_CLOUDWATCH", alarms_url)
            .env("FLEETLOCK_TABLE", table)
            .env("FLEETLOCK_GROUPS", "default=1,workers=2,db=1,*=1")
            .env("FLEETLOCK_ALARM_PAUSES", gates)
            .env("RUST_LOG", "info,fleetlock=debug");
        if let Some(region) = region {
            command.env("FLEETLOCK_REGION", region);
        }
        let process = command.spawn().unwrap();
        Self { runtime, process }
    }

    /// One invocation: the answer, or the error Lambda records.
    async fn invoke(&mut self, event: String) -> Result<Value, Value> {
        crate::lambda_runtime::invoked(&mut self.runtime, &event).await
    }
}

/// Each group's alarm pauses and whether a person paused it, as stored.
async fn pauses(store: &DynamoStore) -> BTreeMap<String, (BTreeSet<String>, bool)> {
    store
        .groups(None)
        .await
        .unwrap()
        .into_iter()
        .map(|(name, record)| {
            let person = record.pause.person.is_some();
            (name.to_string(), (record.pause.alarms, person))
        })
        .collect()
}

fn alarms_of(stored: &BTreeMap<String, (BTreeSet<String>, bool)>, group: &str) -> Vec<String> {
    stored
        .get(group)
        .map(|(alarms, _)| alarms.iter().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn alarms_pause_and_clear_their_groups_from_their_current_state() {
    local_dynamodb_endpoint();
    let table = unique_table_name("alarms");
    let store = DynamoStore::new(client(&load_config().await), &table);
    assert!(store.create_table().await.unwrap());
    // A group the configuration names only through '*', with an item.
    let web = GroupName::parse("web").unwrap();
    store
        .pause(
            &web,
            ByPerson {
                reason: PauseReason::parse("setting up").unwrap(),
                since: Timestamp::now(),
                by: "ops".into(),
            },
        )
        .await
        .unwrap();
    store.resume(&web).await.unwrap();

    let cloudwatch = Alarms::default();
    for name in ["api-5xx", "db-latency", "composite-health", "gone"] {
        cloudwatch.set(name, "OK");
    }
    let url = cloudwatch.start().await;
    let mut function = Function::start(&table, &url).await;

    // ALARM pauses every group '*' covers: the configured ones (an item is
    // made for a group never used) and every stored one.
    cloudwatch.set("api-5xx", "ALARM");
    let answer = function
        .invoke(state_change("api-5xx", "OK", "ALARM"))
        .await
        .unwrap();
    assert_eq!(answer["paused"], 4, "{answer}");
    let stored = pauses(&store).await;
    for group in ["default", "workers", "db", "web"] {
        assert_eq!(alarms_of(&stored, group), ["api-5xx"], "{group}");
    }

    // The same event again changes nothing.
    let again = function
        .invoke(state_change("api-5xx", "OK", "ALARM"))
        .await
        .unwrap();
    assert_eq!(
        (again["paused"].clone(), again["cleared"].clone()),
        (json!(0), json!(0))
    );

    // Two alarms on one group; a person's pause on another.
    let workers = GroupName::parse("workers").unwrap();
    store
        .pause(
            &workers,
            ByPerson {
                reason: PauseReason::parse("watching canaries").unwrap(),
                since: Timestamp::now(),
                by: "ana".into(),
            },
        )
        .await
        .unwrap();
    cloudwatch.set("db-latency", "ALARM");
    function
        .invoke(state_change("db-latency", "OK", "ALARM"))
        .await
        .unwrap();
    let stored = pauses(&store).await;
    assert_eq!(alarms_of(&stored, "db"), ["api-5xx", "db-latency"]);
    assert_eq!(alarms_of(&stored, "workers"), ["api-5xx", "db-latency"]);

    // OK clears that alarm only: db stays paused by the other, workers by
    // its person.
    cloudwatch.set("api-5xx", "OK");
    let answer = function
        .invoke(state_change("api-5xx", "ALARM", "OK"))
        .await
        .unwrap();
    assert_eq!(answer["cleared"], 4, "{answer}");
    let stored = pauses(&store).await;
    assert_eq!(alarms_of(&stored, "db"), ["db-latency"]);
    assert_eq!(alarms_of(&stored, "default"), Vec::<String>::new());
    assert_eq!(
        stored["workers"],
        (BTreeSet::from(["db-latency".to_owned()]), true)
    );

    // Out of order: an old ALARM event arrives after the alarm went back to
    // OK. The current state decides: cleared, not paused.
    cloudwatch.set("db-latency", "OK");
    function
        .invoke(state_change("db-latency", "OK", "ALARM"))
        .await
        .unwrap();
    let stored = pauses(&store).await;
    assert_eq!(alarms_of(&stored, "db"), Vec::<String>::new());
    assert_eq!(
        stored["workers"],
        (BTreeSet::new(), true),
        "the person's pause stays"
    );

    // INSUFFICIENT_DATA does not pause; a composite alarm in ALARM does.
    cloudwatch.set("db-latency", "INSUFFICIENT_DATA");
    cloudwatch.set("composite-health", "ALARM");
    function
        .invoke(state_change("db-latency", "OK", "INSUFFICIENT_DATA"))
        .await
        .unwrap();
    let stored = pauses(&store).await;
    assert_eq!(alarms_of(&stored, "db"), ["composite-health"]);
    assert_eq!(alarms_of(&stored, "workers"), Vec::<String>::new());

    // A lost event: only the schedule sees "gone" in ALARM. Then the alarm
    // is deleted while in ALARM: the next run clears its pause and warns.
    cloudwatch.set("gone", "ALARM");
    function.invoke(scheduled()).await.unwrap();
    assert_eq!(alarms_of(&pauses(&store).await, "workers"), ["gone"]);
    cloudwatch.delete("gone");
    let answer = function.invoke(scheduled()).await.unwrap();
    assert_eq!(answer["alarms"]["gone"], "missing");
    assert_eq!(
        alarms_of(&pauses(&store).await, "workers"),
        Vec::<String>::new()
    );

    // An alarm that gates nothing: ignored without a call to CloudWatch.
    let calls = cloudwatch.calls.load(Ordering::Relaxed);
    let answer = function
        .invoke(state_change("someone-elses", "OK", "ALARM"))
        .await
        .unwrap();
    assert_eq!(answer, json!({ "ignored": "someone-elses" }));
    assert_eq!(cloudwatch.calls.load(Ordering::Relaxed), calls);

    // `fleetlock status` says which alarm holds which group.
    let status = Command::new(env!("CARGO_BIN_EXE_fleetlock"))
        .arg("status")
        .env("AWS_ACCESS_KEY_ID", format!("operator.{table}"))
        .env("FLEETLOCK_TABLE", &table)
        .output()
        .await
        .unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("alarm 'composite-health' is in ALARM and holds: db\n"),
        "{status}"
    );

    function.process.start_kill().unwrap();
    let output = function.process.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(r#""entry":"alarm-pauses""#), "{stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("does not exist") && l.contains(r#""alarm":"gone""#)),
        "a deleted alarm is warned about: {stderr}"
    );
    let emitted: BTreeSet<String> = json_lines(&stderr)
        .into_iter()
        .filter(|l| l["message"] == "alarm pause")
        .flat_map(|l| l.as_object().unwrap().keys().cloned().collect::<Vec<_>>())
        .collect();
    let read = crate::helpers::dashboard_fields("alarm_pauses_log_group");
    assert!(
        read.contains("alarm") && read.contains("action"),
        "{read:?}"
    );
    assert!(
        read.is_subset(&emitted),
        "the dashboard reads {read:?}; the lines have {emitted:?}"
    );
    // Every AWS call it made is one its policy allows, and all of them are.
    let actions = aws_actions(&stderr);
    let allowed: BTreeSet<String> = fleetlock::aws::iam::ALARM_PAUSES_TABLE_ACTIONS
        .iter()
        .chain(fleetlock::aws::iam::ALARM_PAUSES_ALARM_ACTIONS)
        .map(|a| a.to_string())
        .collect();
    assert_eq!(actions, allowed);
}

#[tokio::test]
async fn when_cloudwatch_cannot_be_read_nothing_changes_and_lambda_hears_an_error() {
    local_dynamodb_endpoint();
    let table = unique_table_name("alarms");
    let store = DynamoStore::new(client(&load_config().await), &table);
    assert!(store.create_table().await.unwrap());
    // A pause an alarm set earlier: a reconcile that cannot read the alarm
    // must not take it for OK and clear it.
    let db = GroupName::parse("db").unwrap();
    store.pause_for_alarm(&db, "db-latency").await.unwrap();
    let before = pauses(&store).await;
    assert_eq!(alarms_of(&before, "db"), vec!["db-latency"]);
    // Port 9 (discard): nothing answers there.
    let mut function = Function::start(&table, "http://127.0.0.1:9").await;
    let failed = function.invoke(scheduled()).await.unwrap_err();
    assert!(
        failed["errorMessage"]
            .as_str()
            .unwrap()
            .starts_with("cannot read the alarms' states (DescribeAlarms), nothing changed"),
        "{failed}"
    );
    assert_eq!(pauses(&store).await, before, "nothing was written");
}

/// 150 gating alarms: two DescribeAlarms calls (CloudWatch takes at most 100
/// names), the first read in two pages; an alarm on each later page pauses.
#[tokio::test]
async fn more_alarms_than_one_call_can_name_are_all_read() {
    local_dynamodb_endpoint();
    let table = unique_table_name("alarms-paged");
    let store = DynamoStore::new(client(&load_config().await), &table);
    assert!(store.create_table().await.unwrap());
    let cloudwatch = Alarms::default();
    let names: Vec<String> = (0..150).map(|n| format!("alarm-{n:03}")).collect();
    for name in &names {
        cloudwatch.set(name, "OK");
    }
    // On the first call's second page, and in the second call.
    cloudwatch.set("alarm-060", "ALARM");
    cloudwatch.set("alarm-149", "ALARM");
    let url = cloudwatch.start().await;
    let gates: Vec<String> = names.iter().map(|n| format!("{n}=db")).collect();
    let mut function = Function::following(&table, &url, &gates.join(";")).await;
    let answer = function.invoke(scheduled()).await.unwrap();
    assert_eq!(answer["paused"], 2, "{answer}");
    assert_eq!(
        alarms_of(&pauses(&store).await, "db"),
        vec!["alarm-060", "alarm-149"]
    );
    assert_eq!(cloudwatch.calls.load(Ordering::Relaxed), 3);
}

/// Three regions' alarm-pauses functions on one global table, each following
/// its own region's alarms: each writes and clears only its own pauses
/// (stored as `REGION/ALARM`), so a region whose alarm is OK never clears
/// the pause of a region whose alarm fires, and a group is paused while any
/// region's gating alarm is in ALARM.
#[tokio::test]
async fn each_regions_function_clears_only_its_own_pauses_on_one_table() {
    local_dynamodb_endpoint();
    let table = unique_table_name("alarms-regions");
    let store = DynamoStore::new(client(&load_config().await), &table);
    assert!(store.create_table().await.unwrap());
    let mut regions = Vec::new();
    for region in ["eu-west-1", "eu-central-1", "eu-north-1"] {
        let cloudwatch = Alarms::default();
        cloudwatch.set("api-5xx", "OK");
        let url = cloudwatch.start().await;
        let function = Function::in_region(&table, &url, "api-5xx=db", Some(region)).await;
        regions.push((region, cloudwatch, function));
    }
    let db = |stored: &BTreeMap<String, (BTreeSet<String>, bool)>| alarms_of(stored, "db");
    // The west's alarm fires: its function pauses db under its name.
    regions[0].1.set("api-5xx", "ALARM");
    let answer = regions[0]
        .2
        .invoke(state_change("api-5xx", "OK", "ALARM"))
        .await
        .unwrap();
    assert_eq!(answer["paused"], 1, "{answer}");
    assert_eq!(db(&pauses(&store).await), ["eu-west-1/api-5xx"]);
    // The other regions' schedules, their alarms OK: nothing of the west's
    // is cleared.
    for (region, _, function) in regions.iter_mut().skip(1) {
        let answer = function.invoke(scheduled()).await.unwrap();
        assert_eq!(
            (answer["paused"].clone(), answer["cleared"].clone()),
            (json!(0), json!(0)),
            "{region}"
        );
    }
    assert_eq!(db(&pauses(&store).await), ["eu-west-1/api-5xx"]);
    // The central alarm fires too, then the west's clears: db stays paused
    // by the central one alone.
    regions[1].1.set("api-5xx", "ALARM");
    regions[1].2.invoke(scheduled()).await.unwrap();
    regions[0].1.set("api-5xx", "OK");
    let answer = regions[0]
        .2
        .invoke(state_change("api-5xx", "ALARM", "OK"))
        .await
        .unwrap();
    assert_eq!(answer["cleared"], 1, "{answer}");
    assert_eq!(db(&pauses(&store).await), ["eu-central-1/api-5xx"]);
    let record = store
        .groups(Some(&GroupName::parse("db").unwrap()))
        .await
        .unwrap();
    assert!(record[0].1.pause.is_paused());
}
