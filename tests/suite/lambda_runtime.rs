//! The real binary in Lambda mode, fed by a stand-in for the Lambda Runtime API
//! (the HTTP interface a `provided.al2023` function polls), with DynamoDB Local
//! behind it: start-up checks, the runtime loop, JSON logs and the embedded
//! metric line, end to end.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::process::Command;
use tokio::sync::{Mutex, mpsc};

use fleetlock::domain::input::{GroupName, NodeId};
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;

use crate::helpers::{basic_auth, table_made_by_the_binary, zincati_body};
use fleetlock::domain::store::Decisions;

const HTTP_API: &str = include_str!("../fixtures/http_api_v2_default_stage.json");

pub(crate) struct RuntimeApi {
    pub(crate) addr: std::net::SocketAddr,
    pub(crate) events: mpsc::UnboundedSender<String>,
    pub(crate) answers: mpsc::UnboundedReceiver<(String, Value)>,
}

/// Serves `invocation/next` from a queue and collects `invocation/{id}/response`.
pub(crate) async fn runtime_api() -> RuntimeApi {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (events, queue) = mpsc::unbounded_channel::<String>();
    let (answer, answers) = mpsc::unbounded_channel::<(String, Value)>();
    let queue = Arc::new(Mutex::new(queue));
    tokio::spawn(async move {
        let mut next_id = 0u32;
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (queue, answer) = (Arc::clone(&queue), answer.clone());
            next_id += 1000;
            let base = next_id;
            tokio::spawn(async move {
                let count = Arc::new(std::sync::atomic::AtomicU32::new(base));
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (queue, answer, count) =
                        (Arc::clone(&queue), answer.clone(), Arc::clone(&count));
                    async move {
                        let path = request.uri().path().to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let response = if path.ends_with("/invocation/next") {
                            let event = queue.lock().await.recv().await.unwrap_or_default();
                            let id = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            Response::builder()
                                .header("lambda-runtime-aws-request-id", format!("req-{id}"))
                                .header("lambda-runtime-deadline-ms", "99999999999999")
                                .header(
                                    "lambda-runtime-invoked-function-arn",
                                    "arn:aws:lambda:eu-west-1:123456789012:function:fleetlock",
                                )
                                .header(
                                    "lambda-runtime-trace-id",
                                    "Root=1-00000000-000000000000000000000000",
                                )
                                .body(Full::new(Bytes::from(event)))
                                .unwrap()
                        } else {
                            let json = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let _ = answer.send((path, json));
                            Response::builder()
                                .status(202)
                                .body(Full::new(Bytes::new()))
                                .unwrap()
                        };
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    RuntimeApi {
        addr,
        events,
        answers,
    }
}

/// The function's binary (`fleetlock-lambda`, the zip's `bootstrap`) as
/// Lambda starts it: polling `runtime`, as the function named `function`
/// with the handler `handler`, its output piped, no client settings unless
/// the caller adds them.
pub(crate) fn lambda_command(runtime: &RuntimeApi, function: &str, handler: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock-lambda"));
    command
        .env("AWS_LAMBDA_RUNTIME_API", runtime.addr.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", function)
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("_HANDLER", handler)
        // The handler's own role, as the templates give it.
        .env("AWS_ACCESS_KEY_ID", handler_principal(handler))
        .env_remove("FLEETLOCK_CLIENTS")
        .env_remove("FLEETLOCK_AUTH")
        // Hermetic: nothing of the developer's own settings.
        .env_remove("FLEETLOCK_GROUPS")
        .env_remove("FLEETLOCK_SETTLE")
        .env_remove("FLEETLOCK_LEASE")
        .env_remove("FLEETLOCK_DRAIN")
        .env_remove("FLEETLOCK_RETURN")
        .env_remove("FLEETLOCK_REGION")
        .env_remove("FLEETLOCK_WINDOWS")
        .env_remove("FLEETLOCK_TIME_ZONE")
        .env_remove("FLEETLOCK_ALARM_PAUSES")
        .env_remove("FLEETLOCK_EVENT_BUS")
        .env_remove("FLEETLOCK_MAX_WILDCARD_GROUPS")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// The principal a handler runs as (tests/iac/shipped_policies.py): the API
/// function is `function`, every other handler the role of its name.
pub(crate) fn handler_principal(handler: &str) -> &str {
    match handler {
        "api" | "bootstrap" => "function",
        other => other,
    }
}

/// One invocation of the function polling `runtime`: its answer, or the
/// error Lambda records.
pub(crate) async fn invoked(runtime: &mut RuntimeApi, event: &str) -> Result<Value, Value> {
    runtime.events.send(event.to_owned()).unwrap();
    let (path, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
        .await
        .expect("the function answered")
        .unwrap();
    if path.ends_with("/response") {
        Ok(answer)
    } else {
        Err(answer)
    }
}

/// The function stopped, with all it printed.
async fn stopped(mut function: tokio::process::Child) -> std::process::Output {
    function.start_kill().unwrap();
    function.wait_with_output().await.unwrap()
}

/// The first EMF line a function printed.
fn metric_line(stdout: &str) -> Value {
    crate::helpers::json_lines(stdout)
        .into_iter()
        .find(|j| j.get("_aws").is_some())
        .unwrap_or_else(|| panic!("no metric line: {stdout}"))
}

/// A fresh table made by the binary, and a client credential scoped to `*`
/// with the `Authorization` header Zincati would send for it.
async fn table_and_credential(
    prefix: &str,
) -> (String, fleetlock::domain::auth::NewCredential, String) {
    let table = table_made_by_the_binary(prefix).await;
    let credential = fleetlock::domain::auth::new_credential("fleet", "*").unwrap();
    let authorization = basic_auth("fleet", &credential.secret);
    (table, credential, authorization)
}

fn event(body: String, authorization: Option<&str>) -> String {
    let mut json: Value = serde_json::from_str(HTTP_API).unwrap();
    json["body"] = body.into();
    if let Some(value) = authorization {
        json["headers"]["authorization"] = value.into();
    }
    json.to_string()
}

#[tokio::test]
async fn the_binary_serves_lambda_events_with_json_logs_and_metrics() {
    let (table, credential, authorization) = table_and_credential("lambda").await;

    let mut runtime = runtime_api().await;
    // The handler name the templates give the API function.
    let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "default=1")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .spawn()
        .unwrap();

    let wrong = basic_auth("fleet", "not-the-secret");
    let calls = [
        (
            zincati_body("node-a", "default"),
            Some(authorization.as_str()),
        ),
        (
            zincati_body("node-b", "default"),
            Some(authorization.as_str()),
        ),
        (zincati_body("node-a", "default"), None),
        (zincati_body("node-a", "default"), Some(wrong.as_str())),
        (
            zincati_body("node-a", "default"),
            Some(authorization.as_str()),
        ),
        // An id 0.2 stored may still give its slot back, bidi control and all.
        (
            zincati_body("\u{202e}1-edon", "default"),
            Some(authorization.as_str()),
        ),
    ];
    let mut answers = Vec::new();
    for (i, (body, auth)) in calls.into_iter().enumerate() {
        let mut event: Value = serde_json::from_str(&event(body, auth)).unwrap();
        if i == 4 {
            event["rawPath"] = "/fleet/v1/pre-reboot".into();
            event["requestContext"]["http"]["path"] = "/fleet/v1/pre-reboot".into();
        }
        if i == 5 {
            event["rawPath"] = "/v1/steady-state".into();
            event["requestContext"]["http"]["path"] = "/v1/steady-state".into();
        }
        runtime.events.send(event.to_string()).unwrap();
        let (path, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
            .await
            .expect("the function answered")
            .unwrap();
        assert!(path.ends_with("/response"), "{path}: {answer}");
        answers.push(answer);
    }
    let status = |a: &Value| a["statusCode"].as_u64().unwrap();
    let body = |a: &Value| -> Value { serde_json::from_str(a["body"].as_str().unwrap()).unwrap() };
    assert_eq!(
        (status(&answers[0]), body(&answers[0])["outcome"].clone()),
        (200, "granted".into())
    );
    assert_eq!(
        (status(&answers[1]), body(&answers[1])["kind"].clone()),
        (423, "semaphore_full".into())
    );
    assert_eq!(
        (status(&answers[2]), body(&answers[2])["kind"].clone()),
        (401, "unauthorized".into())
    );
    assert_eq!(
        answers[2]["headers"]["www-authenticate"],
        "Basic realm=\"fleetlock\", charset=\"UTF-8\""
    );
    assert_eq!(
        (status(&answers[3]), body(&answers[3])["kind"].clone()),
        (401, "unauthorized".into())
    );

    let output = stopped(function).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);

    // One embedded-metric line per decision (the 401s decided nothing)...
    let lines: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|j| j.get("_aws").is_some())
        .collect();
    let (metrics, unservable): (Vec<Value>, Vec<Value>) = lines
        .into_iter()
        .partition(|line| line.get("Outcome").is_some());
    assert_eq!(metrics.len(), 3, "{stdout}");
    // ...and one for the wrong secret under a client's name, which asking
    // again cannot mend; the call without credentials at all is no node's.
    assert_eq!(unservable.len(), 1, "{stdout}");
    assert_eq!(
        (
            &unservable[0]["UnservableRequests"],
            &unservable[0]["Kind"],
            &unservable[0]["Client"],
            &unservable[0]["Group"]
        ),
        (
            &1.into(),
            &"unauthorized".into(),
            &"fleet".into(),
            &"".into()
        )
    );
    assert_eq!(metrics[0]["Service"], "fleetlock-test");
    assert_eq!(metrics[1]["Outcome"], "full");
    assert!(metrics[1]["OldestHolderAgeSeconds"].is_u64());

    // JSON logs, a line per request, no secrets.
    let logs: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let messages: Vec<&str> = logs.iter().filter_map(|l| l["message"].as_str()).collect();
    assert_eq!(
        messages
            .iter()
            .filter(|m| ["decision", "refusal"].contains(m))
            .count(),
        6,
        "{stderr}"
    );
    // A refused credential's log line names who it claimed to be; the
    // secret is nowhere.
    assert!(
        logs.iter().any(|l| l["message"] == "refusal"
            && l["presented_client"] == "fleet"
            && l["endpoint"] == "pre-reboot"),
        "{stderr}"
    );
    assert!(!stderr.contains("not-the-secret"), "{stderr}");
    // The bidi control reaches the log escaped, as status shows it.
    assert_eq!(
        (status(&answers[5]), body(&answers[5])["outcome"].clone()),
        (200, "not_held".into())
    );
    assert!(
        logs.iter().any(|l| l["id"] == "\\u{202e}1-edon"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{202e}'), "{stderr}");
    // A path under a prefix: the 404's line names the path, its value the
    // base_url mistake it shows.
    assert_eq!(
        (status(&answers[4]), body(&answers[4])["kind"].clone()),
        (404, "not_found".into())
    );
    let hint = body(&answers[4])["value"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(hint.contains("base_url has a path"), "{hint}");
    assert!(
        logs.iter()
            .any(|l| l["message"] == "refusal" && l["path"] == "/fleet/v1/pre-reboot"),
        "{stderr}"
    );
    assert!(
        logs.iter()
            .any(|l| l["message"] == "decision" && l["id"] == "node-a" && l["client"] == "fleet")
    );

    // Every field the dashboard's queries read from this log group is one
    // these lines carry.
    let emitted: std::collections::BTreeSet<String> = logs
        .iter()
        .filter(|l| ["decision", "refusal"].contains(&l["message"].as_str().unwrap_or_default()))
        .flat_map(|l| l.as_object().unwrap().keys().cloned())
        .collect();
    let read = crate::helpers::dashboard_fields("function_log_group");
    assert!(
        read.contains("outcome") && read.contains("oldest_holder_age_s"),
        "{read:?}"
    );
    // The lease widget's fields come only with a take-over: the lease test
    // below checks them on the line that has them.
    let missing: Vec<&String> = read
        .difference(&emitted)
        // The drain widgets' field, only with a drain gate: the drain test;
        // the return widgets', only with a return gate: the return test.
        .filter(|field| {
            ![
                "expired",
                "held_s",
                "lease",
                "drains_overdue",
                "returning",
                "returns_overdue",
                "oldest_return_s",
            ]
            .contains(&field.as_str())
        })
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard reads fields no line has: {missing:?}"
    );
    assert!(!stderr.contains(&credential.secret) && !stdout.contains(&credential.secret));

    // What a call puts into CloudWatch Logs from the function itself (for
    // the cost table in docs/costs-and-sizing.md): one decision or refusal line, and one metric line
    // for a decision. Printed for BENCHMARKS.md; bounded so it cannot grow
    // unnoticed.
    let request_lines: Vec<usize> = stderr
        .lines()
        .filter(|l| l.contains(r#""message":"decision""#) || l.contains(r#""message":"refusal""#))
        .map(|l| l.len() + 1)
        .collect();
    let metric_lines: Vec<usize> = stdout
        .lines()
        .filter(|l| l.contains(r#""_aws""#))
        .map(|l| l.len() + 1)
        .collect();
    println!("function log bytes: request lines {request_lines:?}, metric lines {metric_lines:?}");
    assert_eq!(request_lines.len(), 6);
    assert!(
        request_lines
            .iter()
            .chain(&metric_lines)
            .all(|&bytes| bytes < 600),
        "a log line grew past 600 bytes: {request_lines:?} {metric_lines:?}"
    );
    assert!(!stderr.contains(authorization.trim_start_matches("Basic ")));
}

/// A slot past its lease as the deployed function meets it: a holder
/// granted a day ago, a lease of 6h, and a node that asks. The answer is a
/// 200, the log a `warn` line naming both nodes, the metric line a
/// `SlotsExpired` point, and the dashboard's lease widget reads fields the
/// line has.
#[tokio::test]
async fn the_binary_takes_a_slot_past_its_lease_and_says_so_in_its_log_and_metrics() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let (table, credential, authorization) = table_and_credential("lambda-lease").await;
    let (client, _) = fleetlock::test_support::counted_client().await;
    let day_ago = fleetlock::domain::time::Timestamp::now().minus(Duration::from_secs(86_400));
    client
        .put_item()
        .table_name(&table)
        .item("group", AttributeValue::S("workers".into()))
        .item("holder_count", AttributeValue::N("1".into()))
        .item("slots", AttributeValue::N("1".into()))
        .item("h:node-gone", AttributeValue::N(day_ago.0.to_string()))
        .send()
        .await
        .unwrap();
    let mut runtime = runtime_api().await;
    let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "workers=1")
        .env("FLEETLOCK_LEASE", "workers=6h")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .spawn()
        .unwrap();
    runtime
        .events
        .send(event(
            zincati_body("node-new", "workers"),
            Some(authorization.as_str()),
        ))
        .unwrap();
    let (_, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
        .await
        .expect("the function answered")
        .unwrap();
    let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        (answer["statusCode"].as_u64(), body["outcome"].as_str()),
        (Some(200), Some("granted_expired"))
    );
    let output = stopped(function).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let logs: Vec<Value> = stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let expired = logs
        .iter()
        .find(|l| {
            l["level"] == "WARN"
                && l["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("slot expired"))
        })
        .unwrap_or_else(|| panic!("no warn line: {stderr}"));
    assert_eq!(expired["expired"], "node-gone");
    assert_eq!(expired["id"], "node-new");
    assert_eq!(expired["group"], "workers");
    assert_eq!(expired["lease"], "6h");
    assert!(expired["held_s"].as_u64().unwrap() >= 86_400, "{expired}");
    let metric = metric_line(&stdout);
    assert_eq!(metric["SlotsExpired"], 1);
    assert_eq!(metric["ExpiredHolder"], "node-gone");
    assert_eq!(metric["Outcome"], "granted_expired");
    let read = crate::helpers::dashboard_fields("function_log_group");
    for field in ["expired", "held_s", "lease"] {
        assert!(read.contains(field), "the dashboard reads {read:?}");
        assert!(expired.get(field).is_some(), "{field} not in {expired}");
    }
}

/// The runtime's next answer: (its path, its body).
async fn answered(runtime: &mut RuntimeApi) -> (String, Value) {
    tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
        .await
        .expect("the function answered")
        .unwrap()
}

/// The drain gate as the deployed functions meet it: the API function
/// reserves a slot and answers 423 with a `DrainsOverdue` point of 0, the
/// drained function reads the slot, confirms it from a JSON action and
/// refuses a mistyped one, with no AWS call its policy does not allow, and
/// the node's next pre-reboot hears 200.
#[tokio::test]
async fn the_binary_reserves_a_slot_and_the_drained_function_grants_it() {
    let (table, credential, authorization) = table_and_credential("lambda-drain").await;
    let ask = || {
        event(
            zincati_body("node-a", "workers"),
            Some(authorization.as_str()),
        )
    };
    let api = |runtime: &RuntimeApi| {
        lambda_command(runtime, "fleetlock-test", "bootstrap")
            .env("FLEETLOCK_TABLE", &table)
            .env("FLEETLOCK_GROUPS", "workers=1")
            .env("FLEETLOCK_DRAIN", "workers=15m")
            .env("FLEETLOCK_CLIENTS", &credential.entry)
            .spawn()
            .unwrap()
    };
    let mut runtime = runtime_api().await;
    let function = api(&runtime);
    runtime.events.send(ask()).unwrap();
    let (_, reserved) = answered(&mut runtime).await;
    let body: Value = serde_json::from_str(reserved["body"].as_str().unwrap()).unwrap();
    assert_eq!(reserved["statusCode"], 423);
    assert_eq!(body["kind"], "waiting_for_drain");
    assert!(
        body["value"]
            .as_str()
            .unwrap()
            .starts_with("a reboot slot is reserved for this node ('node-a')"),
        "{body}"
    );
    let output = stopped(function).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let metric = metric_line(&stdout);
    assert_eq!(metric["DrainsOverdue"], 0);
    assert_eq!(metric["Outcome"], "reserved");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let decision: Value = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"] == "decision")
        .unwrap_or_else(|| panic!("no decision line: {stderr}"));
    assert_eq!(decision["drains_overdue"], 0);
    assert_eq!(decision["kind"], "waiting_for_drain");
    let read = crate::helpers::dashboard_fields("function_log_group");
    assert!(read.contains("drains_overdue"), "{read:?}");

    let mut confirmer = runtime_api().await;
    // A reservation in another group, made 20 minutes ago by a node that
    // never asked again: only the sweep sees it overdue, since nobody calls.
    let (client, _) = fleetlock::test_support::counted_client().await;
    let store = fleetlock::store::dynamodb::DynamoStore::new(client, table.clone());
    let db = GroupName::parse("db").unwrap();
    let quiet_rules = fleetlock::domain::groups::GroupSlots::parse("workers=1,db=1")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=15m,db=15m")
        .unwrap()
        .rules_for(&db)
        .unwrap();
    let twenty_minutes_ago = Timestamp(Timestamp::now().0 - 20 * 60 * 1000);
    let quiet = store
        .acquire(
            &db,
            &NodeId::parse("gone").unwrap(),
            quiet_rules,
            twenty_minutes_ago,
        )
        .await
        .unwrap();
    assert_eq!(quiet.outcome, fleetlock::domain::lock::Acquire::Reserves);
    let drained = lambda_command(&confirmer, "fleetlock-drained", "drained")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "workers=1,db=1")
        .env("FLEETLOCK_DRAIN", "workers=15m,db=15m")
        .env("FLEETLOCK_METRICS_SERVICE", "fleetlock-test")
        .env("RUST_LOG", "info,fleetlock=debug")
        .spawn()
        .unwrap();
    confirmer
        .events
        .send(serde_json::json!({"action": "sweep"}).to_string())
        .unwrap();
    let (_, swept) = answered(&mut confirmer).await;
    assert_eq!(
        (&swept["drains_overdue"], &swept["groups"]),
        (&Value::from(1), &Value::from(2)),
        "{swept}"
    );
    let action = serde_json::json!({"action": "drained", "group": "workers", "id": "node-a"});
    let slot = serde_json::json!({"action": "slot", "group": "workers", "id": "node-a"});
    confirmer.events.send(slot.to_string()).unwrap();
    confirmer.events.send(action.to_string()).unwrap();
    let mut mistyped = action.clone();
    mistyped["action"] = "drain".into();
    confirmer.events.send(mistyped.to_string()).unwrap();
    confirmer.events.send(slot.to_string()).unwrap();
    let (_, waiting) = answered(&mut confirmer).await;
    assert_eq!(
        (&waiting["waiting_for_drain"], &waiting["holds"]),
        (&Value::Bool(true), &Value::Bool(false)),
        "{waiting}"
    );
    let (path, confirmed) = answered(&mut confirmer).await;
    assert!(path.ends_with("/response"), "{path}");
    assert_eq!(confirmed["outcome"], "granted");
    assert_eq!(confirmed["done"], true);
    let (path, refused) = answered(&mut confirmer).await;
    assert!(path.ends_with("/error"), "{path}: {refused}");
    assert!(
        refused["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("unknown action \"drain\"")),
        "{refused}"
    );
    let (_, holds) = answered(&mut confirmer).await;
    assert_eq!(
        (&holds["waiting_for_drain"], &holds["holds"]),
        (&Value::Bool(false), &Value::Bool(true)),
        "{holds}"
    );
    let output = stopped(drained).await;
    // The sweep's metric, on the API function's dimension the alarm watches.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let metric = metric_line(&stdout);
    assert_eq!(
        (&metric["DrainsOverdue"], &metric["Service"]),
        (&Value::from(1), &Value::from("fleetlock-test"))
    );
    assert_eq!(
        metric["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"],
        "DrainsOverdue"
    );
    // Every AWS call it made is one its policy allows, and all of them are.
    let actions = crate::helpers::aws_actions(&String::from_utf8_lossy(&output.stderr));
    let allowed: std::collections::BTreeSet<String> = fleetlock::aws::iam::DRAINED_FUNCTION_ACTIONS
        .iter()
        .map(|a| a.to_string())
        .collect();
    assert_eq!(actions, allowed);

    let mut again = runtime_api().await;
    let _function = api(&again);
    again.events.send(ask()).unwrap();
    let (_, granted) = answered(&mut again).await;
    let body: Value = serde_json::from_str(granted["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        (granted["statusCode"].as_u64(), body["outcome"].as_str()),
        (Some(200), Some("already_held"))
    );
}

#[tokio::test]
async fn an_unknown_handler_or_an_entry_point_without_its_settings_does_not_start() {
    let runtime = runtime_api().await;
    for (handler, unset, says) in [
        ("events", "", "unknown Lambda handler \\\"events\\\""),
        ("alarm-pauses", "FLEETLOCK_ALARM_PAUSES", "names no alarm"),
        (
            "alarm-pauses",
            "FLEETLOCK_TABLE",
            "FLEETLOCK_TABLE is unset",
        ),
        ("drained", "FLEETLOCK_TABLE", "FLEETLOCK_TABLE is unset"),
    ] {
        let mut command = lambda_command(&runtime, "fleetlock", handler);
        command
            .env("FLEETLOCK_TABLE", "fleetlock")
            .env("FLEETLOCK_ALARM_PAUSES", "api-5xx=*");
        if !unset.is_empty() {
            command.env_remove(unset);
        }
        let output = tokio::time::timeout(Duration::from_secs(30), command.output())
            .await
            .expect("it stops by itself")
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{handler}: {stderr}");
        assert!(stderr.contains(says), "{handler} without {unset}: {stderr}");
    }
}

/// DynamoDB unreachable at a cold start is an outage, not a broken
/// deployment: the function starts, says so, answers `503 store_unavailable`
/// (never a 2xx) while it lasts, and grants once DynamoDB answers, with no
/// restart.
#[tokio::test]
async fn a_function_started_while_dynamodb_is_unreachable_serves_once_it_answers() {
    use crate::fault_proxy::Fault;
    let table = table_made_by_the_binary("cold-outage").await;
    let proxy = crate::helpers::dynamodb_local_proxy().await;
    proxy.always(Fault::Reset);
    let mut runtime = runtime_api().await;
    let function = lambda_command(&runtime, "fleetlock", "bootstrap")
        .env("AWS_ENDPOINT_URL", proxy.url())
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_AUTH", "disabled")
        .spawn()
        .unwrap();
    let answer = async |runtime: &mut RuntimeApi| {
        runtime
            .events
            .send(event(zincati_body("n1", "default"), None))
            .unwrap();
        let (_, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
            .await
            .expect("the function answered")
            .unwrap();
        let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        (answer["statusCode"].clone(), body)
    };
    let (status, body) = answer(&mut runtime).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["kind"], "store_unavailable");
    proxy.always(Fault::None);
    let (status, body) = answer(&mut runtime).await;
    assert_eq!((status, &body["outcome"]), (200.into(), &"granted".into()));
    let output = stopped(function).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let warned = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["level"] == "WARN" && l["message"].as_str().unwrap().contains("503"))
        .unwrap_or_else(|| panic!("no warning at start in {stderr}"));
    assert!(
        warned["error"]
            .as_str()
            .unwrap()
            .contains(&format!("could not be reached to check table '{table}'")),
        "{warned}"
    );
}

#[tokio::test]
async fn no_log_level_puts_a_nodes_secret_in_the_logs() {
    let (table, credential, authorization) = table_and_credential("loglevels").await;
    let token = authorization.trim_start_matches("Basic ").to_owned();
    // The templates' LogLevel values, and trace as a person might set it by
    // hand: the binary never logs at trace, whatever RUST_LOG says.
    for level in [
        "error",
        "warn",
        "info",
        "debug",
        "trace",
        "lambda_runtime=trace",
    ] {
        let mut runtime = runtime_api().await;
        // Into a file, read at the end: a pipe nobody reads while the
        // function runs would fill and stop it at the more verbose levels.
        let log_path = std::env::temp_dir().join(format!("{table}-{level}.log"));
        let log_file = std::fs::File::create(&log_path).unwrap();
        let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
            .env("FLEETLOCK_TABLE", &table)
            .env("FLEETLOCK_GROUPS", "default=1")
            .env("FLEETLOCK_CLIENTS", &credential.entry)
            .env("RUST_LOG", level)
            .stderr(log_file)
            .spawn()
            .unwrap();
        runtime
            .events
            .send(event(
                zincati_body("node-a", "default"),
                Some(&authorization),
            ))
            .unwrap();
        let (_, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
            .await
            .expect("the function answered")
            .unwrap();
        assert_eq!(answer["statusCode"], 200, "{level}: {answer}");
        let output = stopped(function).await;
        let stderr = std::fs::read_to_string(&log_path).unwrap();
        let _ = std::fs::remove_file(&log_path);
        let logs = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
        assert!(
            !logs.contains(&credential.secret),
            "{level}: the secret is logged"
        );
        assert!(!logs.contains(&token), "{level}: the Basic token is logged");
        assert!(
            !logs.to_lowercase().contains("authorization"),
            "{level}: the header is logged:\n{logs}"
        );
        let lines = crate::helpers::json_lines(&stderr);
        assert!(
            lines.iter().all(|line| line["level"] != "TRACE"),
            "{level}: a trace line"
        );
        if level == "trace" || level == "debug" {
            // Not a quiet run that proves nothing: debug lines are there.
            assert!(
                lines.iter().any(|line| line["level"] == "DEBUG"),
                "{level}: no debug line at all"
            );
        }
    }
}

/// The return gate under the Lambda runtime: the API function's steady-state
/// leaves the slot returning (its decision line and metric line say so, with
/// the fields the dashboard reads), and the drained function, from JSON
/// actions, reads the slot as returning, confirms the return, and its sweep
/// stops a group whose return is overdue, once.
#[tokio::test]
async fn the_binary_keeps_a_returning_slot_and_the_drained_function_confirms_it_or_stops_the_group()
{
    let (table, credential, authorization) = table_and_credential("lambda-return").await;
    let call = |endpoint: &str| {
        let mut event: Value = serde_json::from_str(&event(
            zincati_body("node-a", "workers"),
            Some(authorization.as_str()),
        ))
        .unwrap();
        event["rawPath"] = format!("/v1/{endpoint}").into();
        event["requestContext"]["http"]["path"] = format!("/v1/{endpoint}").into();
        event.to_string()
    };
    let mut runtime = runtime_api().await;
    let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "workers=1,db=1")
        .env("FLEETLOCK_RETURN", "workers=20m,db=20m")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .spawn()
        .unwrap();
    let mut outcomes = Vec::new();
    for endpoint in ["pre-reboot", "steady-state", "pre-reboot"] {
        runtime.events.send(call(endpoint)).unwrap();
        let (_, answer) = answered(&mut runtime).await;
        let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        outcomes.push((answer["statusCode"].clone(), body));
    }
    assert_eq!(outcomes[0].0, 200);
    assert_eq!(
        (&outcomes[1].0, &outcomes[1].1["outcome"]),
        (&Value::from(200), &Value::from("returning"))
    );
    assert_eq!(
        (&outcomes[2].0, &outcomes[2].1["kind"]),
        (&Value::from(423), &Value::from("waiting_for_return"))
    );
    let output = stopped(function).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let returning_line = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["message"] == "decision" && l["outcome"] == "returning")
        .unwrap_or_else(|| panic!("no returning decision: {stderr}"));
    assert_eq!(
        (
            &returning_line["returning"],
            &returning_line["returns_overdue"]
        ),
        (&Value::from(1), &Value::from(0))
    );
    assert!(
        returning_line["oldest_return_s"].is_u64(),
        "{returning_line}"
    );
    let read = crate::helpers::dashboard_fields("function_log_group");
    for field in ["returning", "returns_overdue", "oldest_return_s"] {
        assert!(
            read.contains(field),
            "the dashboard reads {field}: {read:?}"
        );
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let metric = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["Outcome"] == "returning")
        .unwrap_or_else(|| panic!("no metric line of the return: {stdout}"));
    assert_eq!(
        (&metric["ReturnsOverdue"], &metric["Returning"]),
        (&Value::from(0), &Value::from(1))
    );

    // A return in db, begun 25 minutes ago by a node that never came back.
    let (client, _) = fleetlock::test_support::counted_client().await;
    let store = fleetlock::store::dynamodb::DynamoStore::new(client, table.clone());
    let db = GroupName::parse("db").unwrap();
    let gone = NodeId::parse("gone").unwrap();
    let rules = fleetlock::domain::groups::GroupSlots::parse("workers=1,db=1")
        .unwrap()
        .with_setting("FLEETLOCK_RETURN", "workers=20m,db=20m")
        .unwrap()
        .rules_for(&db)
        .unwrap();
    let long_ago = Timestamp(Timestamp::now().0 - 25 * 60 * 1000);
    store.acquire(&db, &gone, rules, long_ago).await.unwrap();
    store.release(&db, &gone, true, long_ago).await.unwrap();
    let mut confirmer = runtime_api().await;
    let drained = lambda_command(&confirmer, "fleetlock-drained", "drained")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "workers=1,db=1")
        .env("FLEETLOCK_RETURN", "workers=20m,db=20m")
        .env("FLEETLOCK_METRICS_SERVICE", "fleetlock-test")
        .spawn()
        .unwrap();
    let slot = serde_json::json!({"action": "slot", "group": "workers", "id": "node-a"});
    let sweep = serde_json::json!({"action": "sweep"});
    // A drain confirmed after the node rebooted: the slot is returning, the
    // reservation is over, and a hook must not take it for done.
    let late = serde_json::json!({"action": "drained", "group": "workers", "id": "node-a"});
    for action in [late, slot.clone(), sweep.clone(), sweep] {
        confirmer.events.send(action.to_string()).unwrap();
    }
    let (_, late) = answered(&mut confirmer).await;
    assert_eq!(
        (&late["outcome"], &late["done"]),
        (&Value::from("returning"), &Value::from(false)),
        "{late}"
    );
    let (_, read_slot) = answered(&mut confirmer).await;
    assert_eq!(
        (&read_slot["state"], &read_slot["holds"]),
        (&Value::from("returning"), &Value::from(false))
    );
    let (_, first) = answered(&mut confirmer).await;
    let (_, second) = answered(&mut confirmer).await;
    assert_eq!(
        (&first["returns_overdue"], &first["stopped"]),
        (&Value::from(1), &Value::from(1)),
        "{first}"
    );
    assert_eq!(
        (&second["returns_overdue"], &second["stopped"]),
        (&Value::from(1), &Value::from(0)),
        "once: {second}"
    );
    let returned = serde_json::json!({
        "action": "returned", "group": "workers", "id": "node-a",
        "released_at": read_slot["released_at"],
    });
    confirmer.events.send(returned.to_string()).unwrap();
    confirmer.events.send(returned.to_string()).unwrap();
    let (_, confirmed) = answered(&mut confirmer).await;
    let (_, again) = answered(&mut confirmer).await;
    assert_eq!(
        (&confirmed["outcome"], &confirmed["done"]),
        (&Value::from("returned"), &Value::from(true))
    );
    assert_eq!(
        (&again["outcome"], &again["done"]),
        (&Value::from("not_returning"), &Value::from(false))
    );
    stopped(drained).await;
    let stored = store.groups(Some(&db)).await.unwrap();
    let stop = stored[0].1.pause.stop.clone().expect("db stopped");
    assert_eq!((stop.id.as_str(), stop.returning_since), ("gone", long_ago));
    let workers = store
        .groups(Some(&GroupName::parse("workers").unwrap()))
        .await
        .unwrap();
    assert!(
        workers[0].1.holders.is_empty(),
        "the confirmed slot is free"
    );
}

/// A credential whose group is one typo from the configured one: the
/// function still starts (a failed start would answer every node 5xx) and
/// logs the mismatch; each node of the group hears 403 forbidden_group and
/// is counted for the unservable-requests alarm with its group and client.
#[tokio::test]
async fn a_node_that_can_never_be_served_is_logged_at_start_and_counted() {
    let table = table_made_by_the_binary("unservable").await;
    let credential = fleetlock::domain::auth::new_credential("fleet", "default,wrokers").unwrap();
    let authorization = basic_auth("fleet", &credential.secret);
    let mut runtime = runtime_api().await;
    let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "default=1,workers=3")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .spawn()
        .unwrap();
    for group in ["workers", "default"] {
        runtime
            .events
            .send(event(
                zincati_body("0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d0e", group),
                Some(&authorization),
            ))
            .unwrap();
        let (_, answer) = tokio::time::timeout(Duration::from_secs(30), runtime.answers.recv())
            .await
            .expect("the function answered")
            .unwrap();
        let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
        let expected = if group == "workers" {
            (403, Value::from("forbidden_group"))
        } else {
            (200, Value::Null)
        };
        assert_eq!(
            (answer["statusCode"].as_u64().unwrap(), body["kind"].clone()),
            expected
        );
    }
    let output = stopped(function).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let unservable: Vec<Value> = crate::helpers::json_lines(&stdout)
        .into_iter()
        .filter(|line| line.get("UnservableRequests").is_some())
        .collect();
    assert_eq!(unservable.len(), 1, "{stdout}");
    assert_eq!(
        (
            &unservable[0]["Kind"],
            &unservable[0]["Group"],
            &unservable[0]["Client"]
        ),
        (
            &"forbidden_group".into(),
            &"workers".into(),
            &"fleet".into()
        )
    );
    assert!(
        stderr.contains("names group 'wrokers', which FLEETLOCK_GROUPS does not configure (did you mean 'workers'?)"),
        "{stderr}"
    );
}

/// A Function URL event whose body is marked base64 and is not: the binary
/// answers `400 invalid_body` (lambda_http alone panics, an invocation
/// error), and serves the next event as usual.
#[tokio::test]
async fn a_body_marked_base64_that_is_not_is_answered_400_not_a_panic() {
    const FUNCTION_URL: &str = include_str!("../fixtures/function_url_base64_body.json");
    let (table, credential, authorization) = table_and_credential("not-base64").await;
    let mut runtime = runtime_api().await;
    let function = lambda_command(&runtime, "fleetlock-test", "bootstrap")
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "default=1")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .spawn()
        .unwrap();
    let mut bad: Value = serde_json::from_str(FUNCTION_URL).unwrap();
    bad["body"] = zincati_body("node-a", "default").into();
    bad["headers"]["authorization"] = authorization.as_str().into();
    let mut good = bad.clone();
    good["isBase64Encoded"] = false.into();
    let refused = invoked(&mut runtime, &bad.to_string()).await;
    let refused = refused.expect("an answer, not an invocation error");
    assert_eq!(refused["statusCode"], 400, "{refused}");
    let body: Value = serde_json::from_str(refused["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["kind"], "invalid_body", "{body}");
    let granted = invoked(&mut runtime, &good.to_string()).await.unwrap();
    assert_eq!(granted["statusCode"], 200, "{granted}");
    let output = stopped(function).await;
    assert!(
        !String::from_utf8_lossy(&output.stderr).contains("panicked"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
