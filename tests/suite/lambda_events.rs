//! Real API Gateway / Function URL event shapes through the Lambda handler.

use fleetlock::domain::store::LockStore;
use fleetlock::http::lambda::{event_from_str, handle_event, route_path};
use lambda_http::Body;
use serde_json::Value;

use crate::helpers::{memory_api, zincati_body};

const HTTP_API: &str = include_str!("../fixtures/http_api_v2_default_stage.json");
const REST_API: &str = include_str!("../fixtures/rest_api_v1_prod_stage.json");
/// The private REST API's event: stage `fleetlock`, the `{api-id}-{vpce-id}`
/// host name, the caller's VPC endpoint and VPC in the identity.
const PRIVATE_REST_API: &str = include_str!("../fixtures/rest_api_private_fleetlock_stage.json");
const FUNCTION_URL: &str = include_str!("../fixtures/function_url_base64_body.json");

fn event(fixture: &str, edit: impl FnOnce(&mut Value)) -> lambda_http::Request {
    let mut json: Value = serde_json::from_str(fixture).unwrap();
    edit(&mut json);
    event_from_str(&json.to_string()).expect("a valid event")
}

struct Answer {
    status: u16,
    json: Value,
}

async fn call(groups: &str, events: Vec<lambda_http::Request>) -> Vec<Answer> {
    let api = memory_api(groups);
    let mut answers = Vec::new();
    for event in events {
        let response = handle_event(&api, event).await;
        let status = response.status().as_u16();
        let json = match response.body() {
            Body::Text(text) => serde_json::from_str(text).unwrap(),
            other => panic!("expected a JSON text body, got {other:?}"),
        };
        answers.push(Answer { status, json });
    }
    answers
}

fn with_id(id: &'static str) -> impl FnOnce(&mut Value) {
    move |json| json["body"] = zincati_body(id, "default").into()
}

#[tokio::test]
async fn http_api_default_stage_grants_then_reports_a_full_group() {
    let answers = call(
        "default=1",
        vec![
            event(HTTP_API, |_| {}),
            event(HTTP_API, with_id("another-node")),
            event(HTTP_API, |_| {}),
        ],
    )
    .await;
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].json["outcome"], "granted");
    assert_eq!(answers[1].status, 423);
    assert_eq!(answers[1].json["kind"], "semaphore_full");
    assert_eq!(answers[2].status, 200);
    assert_eq!(answers[2].json["outcome"], "already_held");
}

#[tokio::test]
async fn rest_api_stage_in_the_path_is_stripped() {
    let rest = event(REST_API, |_| {});
    assert_eq!(
        rest.uri().path(),
        "/Prod/v1/pre-reboot",
        "lambda_http adds the stage"
    );
    assert_eq!(route_path(&rest), "/v1/pre-reboot");
    let answers = call("default=1", vec![rest]).await;
    assert_eq!(
        (answers[0].status, answers[0].json["outcome"].as_str()),
        (200, Some("granted"))
    );
}

/// What Zincati's calls look like through the private REST API: granted
/// under the stage in the URL, and a path neither route of the protocol
/// names (ANY / or ANY /{proxy+}) still answers `{kind, value}`.
#[tokio::test]
async fn private_rest_api_events_are_served_like_the_public_ones() {
    let grant = event(PRIVATE_REST_API, |_| {});
    assert_eq!(grant.uri().path(), "/fleetlock/v1/pre-reboot");
    assert_eq!(route_path(&grant), "/v1/pre-reboot");
    let root = event(PRIVATE_REST_API, |json| {
        json["resource"] = "/".into();
        json["path"] = "/".into();
        json["pathParameters"] = serde_json::Value::Null;
        json["requestContext"]["resourcePath"] = "/".into();
        json["requestContext"]["path"] = "/fleetlock/".into();
    });
    let lost = event(PRIVATE_REST_API, |json| {
        json["path"] = "/pre-reboot".into();
        json["pathParameters"]["proxy"] = "pre-reboot".into();
        json["requestContext"]["path"] = "/fleetlock/pre-reboot".into();
    });
    let answers = call("default=1", vec![grant, root, lost]).await;
    assert_eq!(
        (answers[0].status, answers[0].json["outcome"].as_str()),
        (200, Some("granted"))
    );
    for answer in &answers[1..] {
        assert_eq!(
            (answer.status, answer.json["kind"].as_str()),
            (404, Some("not_found"))
        );
        assert!(
            answer.json["value"]
                .as_str()
                .unwrap()
                .contains("v1/pre-reboot")
        );
    }
}

#[tokio::test]
async fn a_stage_named_like_the_protocol_version_is_stripped_once() {
    let rest = event(REST_API, |json| {
        json["requestContext"]["stage"] = "v1".into()
    });
    assert_eq!(route_path(&rest), "/v1/pre-reboot");
}

#[tokio::test]
async fn http_api_named_stage_is_stripped() {
    let named = event(HTTP_API, |json| {
        json["rawPath"] = "/prod/v1/steady-state".into();
        json["requestContext"]["stage"] = "prod".into();
    });
    assert_eq!(route_path(&named), "/v1/steady-state");
    let answers = call("default=1", vec![named]).await;
    assert_eq!(
        (answers[0].status, answers[0].json["outcome"].as_str()),
        (200, Some("not_held"))
    );
}

#[tokio::test]
async fn function_url_base64_body_is_decoded() {
    let answers = call("default=1", vec![event(FUNCTION_URL, |_| {})]).await;
    assert_eq!(answers[0].status, 200);
    assert_eq!(answers[0].json["outcome"], "granted");
    assert_eq!(answers[0].json["holders"], 1);
}

#[tokio::test]
async fn refusals_through_events_carry_status_and_kind() {
    type Edit = Box<dyn FnOnce(&mut Value)>;
    #[rustfmt::skip]
    let cases: Vec<(&str, &str, Edit, u16, &str)> = vec![
        ("unknown path", HTTP_API, Box::new(|j| j["rawPath"] = "/v1/other".into()), 404, "not_found"),
        ("base_url without trailing slash", REST_API, Box::new(|j| j["path"] = "/v1".into()), 404, "not_found"),
        ("GET", HTTP_API, Box::new(|j| j["requestContext"]["http"]["method"] = "GET".into()), 405, "method_not_allowed"),
        ("GET on REST", REST_API, Box::new(|j| j["httpMethod"] = "GET".into()), 405, "method_not_allowed"),
        ("no protocol header", HTTP_API, Box::new(|j| {
            j["headers"].as_object_mut().unwrap().remove("fleet-lock-protocol");
        }), 400, "missing_protocol_header"),
        ("protocol header false", HTTP_API, Box::new(|j| j["headers"]["fleet-lock-protocol"] = "false".into()), 400, "missing_protocol_header"),
        ("empty body", HTTP_API, Box::new(|j| j["body"] = Value::Null), 400, "invalid_body"),
        ("not JSON", HTTP_API, Box::new(|j| j["body"] = "reboot please".into()), 400, "invalid_body"),
        ("not UTF-8", FUNCTION_URL, Box::new(|j| j["body"] = "//79/A==".into()), 400, "invalid_body"),
        // lambda_http panics on it: an invocation error, not an answer.
        ("marked base64, is not", FUNCTION_URL, Box::new(|j| j["body"] = zincati_body("a", "default").into()), 400, "invalid_body"),
        ("huge", HTTP_API, Box::new(|j| j["body"] = "x".repeat(100_000).into()), 413, "body_too_large"),
        ("missing group", HTTP_API, Box::new(|j| j["body"] = r#"{"client_params":{"id":"a"}}"#.into()), 400, "invalid_body"),
        ("id of wrong type", HTTP_API, Box::new(|j| j["body"] = r#"{"client_params":{"id":7,"group":"default"}}"#.into()), 400, "invalid_body"),
        ("control character id", HTTP_API, Box::new(|j| j["body"] = zincati_body("a\u{7}b", "default").into()), 400, "invalid_id"),
        ("oversize id", HTTP_API, Box::new(|j| j["body"] = zincati_body(&"a".repeat(257), "default").into()), 400, "invalid_id"),
        ("invalid group", HTTP_API, Box::new(|j| j["body"] = zincati_body("a", "no_underscores").into()), 400, "invalid_group"),
        ("unknown group", HTTP_API, Box::new(|j| j["body"] = zincati_body("a", "workers").into()), 403, "unknown_group"),
    ];
    for (name, fixture, edit, status, kind) in cases {
        let api = memory_api("default=1");
        let response = handle_event(&api, event(fixture, edit)).await;
        assert_eq!(response.status().as_u16(), status, "{name}");
        let json: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        assert_eq!(json["kind"], kind, "{name}");
        assert!(
            json["value"].as_str().is_some_and(|v| !v.is_empty()),
            "{name}"
        );
        // Nothing was stored by a refused request.
        assert!(
            api.service().store().groups(None).await.unwrap().is_empty(),
            "{name}"
        );
    }
}

#[tokio::test]
async fn credentials_travel_in_the_event_headers() {
    use fleetlock::domain::auth::{Auth, Clients, new_credential};
    use fleetlock::store::memory::MemoryStore;

    let credential = new_credential("workers", "workers").unwrap();
    let clients = Clients::parse(&credential.entry).unwrap();
    let api = crate::helpers::api("*=1", MemoryStore::default(), Auth::Required(clients));
    let good = crate::helpers::basic_auth("workers", &credential.secret);
    let bad = crate::helpers::basic_auth("workers", "guess");
    for (fixture, authorization, group, status, word) in [
        (HTTP_API, None, "workers", 401, "unauthorized"),
        (REST_API, Some(bad.as_str()), "workers", 401, "unauthorized"),
        (
            FUNCTION_URL,
            Some(good.as_str()),
            "default",
            403,
            "forbidden_group",
        ),
        (REST_API, Some(good.as_str()), "workers", 200, "granted"),
    ] {
        let request = event(fixture, |json| {
            json["body"] = zincati_body("node", group).into();
            json["isBase64Encoded"] = false.into();
            if let Some(value) = authorization {
                json["headers"]["authorization"] = value.into();
                if json.get("multiValueHeaders").is_some() {
                    json["multiValueHeaders"]["authorization"] = serde_json::json!([value]);
                }
            }
        });
        let response = handle_event(&api, request).await;
        let json: Value = serde_json::from_slice(response.body().as_ref()).unwrap();
        let got = json["outcome"]
            .as_str()
            .or(json["kind"].as_str())
            .unwrap_or("");
        assert_eq!(
            (response.status().as_u16(), got),
            (status, word),
            "{authorization:?} {group}"
        );
    }
}

#[tokio::test]
async fn only_the_runtime_marks_a_body_that_did_not_decode() {
    // A caller that sends the marker itself on a good request is served.
    let answers = call(
        "default=1",
        vec![event(HTTP_API, |json| {
            json["headers"]["x-fleetlock-undecodable-body"] = "true".into();
        })],
    )
    .await;
    assert_eq!(answers[0].status, 200, "{}", answers[0].json);
    // A body marked base64 that is not: a sentence Zincati's journal shows.
    let answers = call(
        "default=1",
        vec![event(FUNCTION_URL, |json| json["body"] = "%%%".into())],
    )
    .await;
    assert_eq!(answers[0].status, 400);
    assert_eq!(answers[0].json["kind"], "invalid_body");
    assert_eq!(
        answers[0].json["value"],
        "the request body is marked base64-encoded and is not valid base64; nothing was decided"
    );
}
