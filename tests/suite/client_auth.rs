//! Client credentials as a stock Zincati sends them: HTTP Basic, from the
//! userinfo of its base_url.

use std::sync::Arc;

use fleetlock::domain::auth::{Auth, Clients, new_credential};
use fleetlock::domain::store::LockStore;
use fleetlock::store::memory::MemoryStore;

use crate::helpers::{api, basic_auth, send, spawn_server, zincati_body};

struct Fleet {
    fleet_secret: String,
    workers_secret: String,
    clients: Clients,
}

/// One fleet-wide credential and one scoped to the group `workers`.
fn fleet() -> Fleet {
    let fleet = new_credential("fleet", "*").unwrap();
    let workers = new_credential("workers", "workers").unwrap();
    Fleet {
        clients: Clients::parse(&format!("{}\n{}", fleet.entry, workers.entry)).unwrap(),
        fleet_secret: fleet.secret,
        workers_secret: workers.secret,
    }
}

async fn post(
    addr: std::net::SocketAddr,
    endpoint: &str,
    authorization: Option<&str>,
    id: &str,
    group: &str,
) -> crate::helpers::HttpResponse {
    let mut headers = vec![("fleet-lock-protocol", "true")];
    if let Some(value) = authorization {
        headers.push(("authorization", value));
    }
    send(
        addr,
        "POST",
        &format!("/v1/{endpoint}"),
        &headers,
        zincati_body(id, group),
    )
    .await
}

#[tokio::test]
async fn credentials_gate_every_call_and_scope_groups() {
    let fleet = fleet();
    let api = api(
        "default=1,workers=1",
        MemoryStore::default(),
        Auth::Required(fleet.clients.clone()),
    );
    let server = spawn_server(Arc::clone(&api)).await;
    let addr = server.addr;
    let fleet_auth = basic_auth("fleet", &fleet.fleet_secret);
    let workers_auth = basic_auth("workers", &fleet.workers_secret);

    // Without, or with wrong credentials: 401 with a challenge, nothing stored.
    for (what, authorization) in [
        ("none", None),
        ("wrong secret", Some(basic_auth("fleet", "not-the-secret"))),
        (
            "unknown name",
            Some(basic_auth("intruder", &fleet.fleet_secret)),
        ),
        (
            "swapped secrets",
            Some(basic_auth("workers", &fleet.fleet_secret)),
        ),
        ("not basic", Some("Bearer abc".to_string())),
    ] {
        for endpoint in ["pre-reboot", "steady-state"] {
            let r = post(addr, endpoint, authorization.as_deref(), "n1", "default").await;
            assert_eq!(
                (r.status, r.kind()),
                (401, "unauthorized".to_string()),
                "{what}"
            );
            assert_eq!(
                r.headers["www-authenticate"], "Basic realm=\"fleetlock\", charset=\"UTF-8\"",
                "{what}"
            );
        }
    }
    assert!(api.service().store().groups(None).await.unwrap().is_empty());

    // The fleet-wide credential works on every group.
    let r = post(addr, "pre-reboot", Some(&fleet_auth), "n1", "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );

    // The workers credential can neither take nor release a slot of 'default'.
    for endpoint in ["pre-reboot", "steady-state"] {
        let r = post(addr, endpoint, Some(&workers_auth), "n1", "default").await;
        assert_eq!(
            (r.status, r.kind()),
            (403, "forbidden_group".to_string()),
            "{endpoint}"
        );
    }
    let groups = api.service().store().groups(None).await.unwrap();
    assert_eq!(groups[0].1.holders.len(), 1, "n1 still holds its slot");

    // ...but works on its own group.
    let r = post(addr, "pre-reboot", Some(&workers_auth), "w1", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
}

#[tokio::test]
async fn authentication_comes_before_anything_else_is_revealed() {
    let fleet = fleet();
    let api = api(
        "default=1",
        MemoryStore::default(),
        Auth::Required(fleet.clients),
    );
    let server = spawn_server(api).await;
    // An unknown group, a bad body, a missing header: all 401 without credentials.
    for (headers, body) in [
        (
            vec![("fleet-lock-protocol", "true")],
            zincati_body("n", "secret-group"),
        ),
        (
            vec![("fleet-lock-protocol", "true")],
            "not json".to_string(),
        ),
        (vec![], zincati_body("n", "default")),
    ] {
        let r = send(server.addr, "POST", "/v1/pre-reboot", &headers, body).await;
        assert_eq!((r.status, r.kind()), (401, "unauthorized".to_string()));
    }
    // Nor which paths and methods exist.
    for (method, path) in [
        ("GET", "/v1/pre-reboot"),
        ("GET", "/"),
        ("POST", "/v2/pre-reboot"),
        ("DELETE", "/admin"),
    ] {
        let r = send(server.addr, method, path, &[], "").await;
        assert_eq!(
            (r.status, r.kind()),
            (401, "unauthorized".to_string()),
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn with_credentials_a_wrong_path_or_method_is_named() {
    let fleet = fleet();
    let api = api(
        "default=1",
        MemoryStore::default(),
        Auth::Required(fleet.clients),
    );
    let server = spawn_server(api).await;
    let auth = basic_auth("fleet", &fleet.fleet_secret);
    let headers = [("authorization", auth.as_str())];
    let r = send(server.addr, "GET", "/v1/pre-reboot", &headers, "").await;
    assert_eq!(
        (r.status, r.kind()),
        (405, "method_not_allowed".to_string())
    );
    let r = send(server.addr, "POST", "/v2/pre-reboot", &headers, "").await;
    assert_eq!((r.status, r.kind()), (404, "not_found".to_string()));
}

/// What a node's journal shows of a 401: no credentials and refused ones read
/// differently, and a wrong secret reads exactly as an unknown name does.
#[tokio::test]
async fn a_refused_credential_is_told_apart_from_none_without_naming_names() {
    let fleet = fleet();
    let api = api(
        "default=1",
        MemoryStore::default(),
        Auth::Required(fleet.clients),
    );
    let server = spawn_server(api).await;
    let value = |r: &crate::helpers::HttpResponse| {
        r.json()["value"].as_str().unwrap_or_default().to_owned()
    };
    let none = post(server.addr, "pre-reboot", None, "n1", "default").await;
    assert!(
        value(&none)
            .starts_with("valid client credentials are required: put them in Zincati's base_url"),
        "{}",
        value(&none)
    );
    let wrong_secret = basic_auth("fleet", "not-the-secret");
    let unknown_name = basic_auth("intruder", &fleet.fleet_secret);
    let wrong = post(
        server.addr,
        "pre-reboot",
        Some(&wrong_secret),
        "n1",
        "default",
    )
    .await;
    let unknown = post(
        server.addr,
        "pre-reboot",
        Some(&unknown_name),
        "n1",
        "default",
    )
    .await;
    assert_eq!((wrong.status, unknown.status), (401, 401));
    assert!(
        value(&wrong).starts_with("the credentials in base_url were not accepted"),
        "{}",
        value(&wrong)
    );
    assert_eq!(
        value(&wrong),
        value(&unknown),
        "a name's existence shows in the answer"
    );
}
