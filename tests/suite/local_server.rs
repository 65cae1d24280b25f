//! The service over real HTTP, called as Zincati calls it.

use std::sync::Arc;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::store::LockStore;

use crate::helpers::{
    ZINCATI_ID, api, dynamo_store, memory_api, send, spawn_server, zincati, zincati_body,
};

/// The life of two nodes sharing one slot, as the wire shows it.
async fn two_nodes_share_one_slot(addr: std::net::SocketAddr) {
    let (a, b) = (ZINCATI_ID, "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d0e");

    // Both boot: steady-state from nodes that hold nothing succeeds.
    for node in [a, b] {
        let r = zincati(addr, "steady-state", node, "default").await;
        assert_eq!(
            (r.status, r.json()["outcome"].as_str()),
            (200, Some("not_held"))
        );
    }
    let r = zincati(addr, "pre-reboot", a, "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );

    // B must wait: a 423 with a FleetLock body, not a 5xx.
    let r = zincati(addr, "pre-reboot", b, "default").await;
    assert_eq!(r.status, 423);
    assert_eq!(r.kind(), "semaphore_full");
    assert_eq!(r.headers["content-type"], "application/json");

    // A asks again (logged-in users delay it): still its one slot.
    let r = zincati(addr, "pre-reboot", a, "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );

    // A is back and healthy; B's next try goes through.
    let r = zincati(addr, "steady-state", a, "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("released"))
    );
    let r = zincati(addr, "pre-reboot", b, "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
}

#[tokio::test]
async fn zincati_cycle_on_the_embedded_store() {
    let server = spawn_server(memory_api("default=1")).await;
    two_nodes_share_one_slot(server.addr).await;
}

#[tokio::test]
async fn zincati_cycle_on_dynamodb_local() {
    let (store, _) = dynamo_store("http-cycle").await;
    let api = api("default=1", store, Auth::Disabled);
    let server = spawn_server(Arc::clone(&api)).await;
    two_nodes_share_one_slot(server.addr).await;
    let groups = api.service().store().groups(None).await.unwrap();
    let holders: Vec<_> = groups[0]
        .1
        .holders
        .holders()
        .map(|(id, _)| id.to_string())
        .collect();
    assert_eq!(holders, vec!["0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d0e"]);
}

/// name, method, path, headers, body, expected status, expected kind
type Case<'a> = (
    &'a str,
    &'a str,
    &'a str,
    &'a [(&'a str, &'a str)],
    Vec<u8>,
    u16,
    &'a str,
);

#[tokio::test]
async fn bad_requests_over_http_get_their_status_and_kind_and_change_nothing() {
    let api = memory_api("default=1");
    let server = spawn_server(Arc::clone(&api)).await;
    // One node holds the slot; no bad request may disturb that.
    assert_eq!(
        zincati(server.addr, "pre-reboot", ZINCATI_ID, "default")
            .await
            .status,
        200
    );
    let before = api.service().store().groups(None).await.unwrap();

    let protocol = [("fleet-lock-protocol", "true")];
    let body = zincati_body("other", "default");
    let huge = "x".repeat(1 << 20);
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("GET", "GET", "/v1/pre-reboot", &protocol, vec![], 405, "method_not_allowed"),
        ("PUT", "PUT", "/v1/steady-state", &protocol, body.clone().into(), 405, "method_not_allowed"),
        ("unknown path", "POST", "/v2/pre-reboot", &protocol, body.clone().into(), 404, "not_found"),
        ("root", "GET", "/", &[], vec![], 404, "not_found"),
        ("lost stage", "POST", "/pre-reboot", &protocol, body.clone().into(), 404, "not_found"),
        ("no header", "POST", "/v1/pre-reboot", &[], body.clone().into(), 400, "missing_protocol_header"),
        ("wrong header", "POST", "/v1/pre-reboot", &[("fleet-lock-protocol", "yes")], body.clone().into(), 400, "missing_protocol_header"),
        ("empty body", "POST", "/v1/pre-reboot", &protocol, vec![], 400, "invalid_body"),
        ("huge body", "POST", "/v1/pre-reboot", &protocol, huge.into(), 413, "body_too_large"),
        ("non-UTF-8", "POST", "/v1/pre-reboot", &protocol, vec![0xff, 0xfe, 0x7b], 400, "invalid_body"),
        ("non-JSON", "POST", "/v1/pre-reboot", &protocol, b"id=other&group=default".to_vec(), 400, "invalid_body"),
        ("missing id", "POST", "/v1/pre-reboot", &protocol, br#"{"client_params":{"group":"default"}}"#.to_vec(), 400, "invalid_body"),
        ("wrong type", "POST", "/v1/pre-reboot", &protocol, br#"{"client_params":{"id":["a"],"group":"default"}}"#.to_vec(), 400, "invalid_body"),
        ("empty id", "POST", "/v1/pre-reboot", &protocol, zincati_body("", "default").into(), 400, "invalid_id"),
        ("control char id", "POST", "/v1/pre-reboot", &protocol, zincati_body("a\u{1b}[2J", "default").into(), 400, "invalid_id"),
        ("oversize id", "POST", "/v1/steady-state", &protocol, zincati_body(&"i".repeat(300), "default").into(), 400, "invalid_id"),
        ("invalid group", "POST", "/v1/pre-reboot", &protocol, zincati_body("other", "../etc").into(), 400, "invalid_group"),
        ("unknown group", "POST", "/v1/pre-reboot", &protocol, zincati_body("other", "workers").into(), 403, "unknown_group"),
        // Someone else's release attempt is fine and changes nothing.
        ("release by non-holder", "POST", "/v1/steady-state", &protocol, body.clone().into(), 200, "not_held"),
        // Extra fields are ignored; the group is full, so this is a refusal.
        ("extra fields", "POST", "/v1/pre-reboot", &protocol,
            br#"{"client_params":{"id":"other","group":"default","stream":"stable"},"v":2}"#.to_vec(), 423, "semaphore_full"),
    ];
    for (name, method, path, headers, body, status, kind) in cases {
        let r = send(server.addr, method, path, headers, body).await;
        assert_eq!(r.status, status, "{name}");
        if status == 200 {
            assert_eq!(r.json()["outcome"], kind, "{name}");
        } else {
            assert_eq!(r.kind(), kind, "{name}");
            let value = r.json()["value"].as_str().unwrap_or_default().to_owned();
            assert!(
                !value.is_empty() && !value.contains("Error {"),
                "{name}: {value}"
            );
        }
        if status == 405 {
            assert_eq!(r.headers["allow"], "POST", "{name}");
        }
        assert_eq!(
            api.service().store().groups(None).await.unwrap(),
            before,
            "{name} changed stored state"
        );
    }
}

#[tokio::test]
async fn a_content_type_is_neither_needed_nor_harmful() {
    let api = memory_api("default=2");
    let server = spawn_server(Arc::clone(&api)).await;
    let with_type = send(
        server.addr,
        "POST",
        "/v1/pre-reboot",
        &[
            ("fleet-lock-protocol", "true"),
            ("content-type", "text/plain"),
        ],
        zincati_body("typed", "default"),
    )
    .await;
    assert_eq!(
        (with_type.status, with_type.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    let without = zincati(server.addr, "pre-reboot", "untyped", "default").await;
    assert_eq!(
        (without.status, without.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    // Both were read as Zincati's body and hold a slot each.
    let stored = api.service().store().groups(None).await.unwrap();
    let held: Vec<String> = stored[0]
        .1
        .holders
        .holders()
        .map(|(id, _)| id.to_string())
        .collect();
    assert_eq!(held, ["typed", "untyped"]);
}
