//! One lock table, the functions of three regions (`FLEETLOCK_REGION`): each
//! records the digests of its deciding settings at start, and refuses a
//! group another region serves with other settings. On DynamoDB Local, as
//! Zincati calls each region's API, and through `fleetlock serve` started
//! with the variable.

use std::sync::Arc;
use std::time::Duration;

use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::http::Api;
use fleetlock::store::dynamodb::DynamoStore;

use crate::fault_proxy::Fault;
use crate::helpers::{
    dynamo_store, proxied_store, send, served_address, spawn_server, zincati_body,
};

/// A gate one region's function is deployed with, as its variable reads.
enum Gate<'a> {
    Return(&'a str),
    Drain(&'a str),
    Zones(&'a str),
    Canary(&'a str),
}

/// A region's function over the shared table: its settings recorded, the
/// others' read again every `refresh`.
async fn region(
    table: &str,
    name: &str,
    groups: &str,
    gate: Option<Gate<'_>>,
    refresh: Duration,
) -> Arc<Api<DynamoStore>> {
    // The API function's role, as the templates give it.
    let client = crate::helpers::client_as(&format!("function.{table}")).await;
    let mut slots = GroupSlots::parse(groups).unwrap();
    match gate {
        Some(Gate::Return(spec)) => slots = slots.with_setting("FLEETLOCK_RETURN", spec).unwrap(),
        Some(Gate::Drain(spec)) => slots = slots.with_setting("FLEETLOCK_DRAIN", spec).unwrap(),
        Some(Gate::Zones(spec)) => slots = slots.with_zones(spec).unwrap(),
        Some(Gate::Canary(spec)) => slots = slots.with_setting("FLEETLOCK_CANARY", spec).unwrap(),
        None => {}
    }
    let service = FleetLock::new(slots, DynamoStore::new(client, table)).agreeing(name, refresh);
    service
        .record_settings()
        .await
        .expect("record the settings");
    Arc::new(Api::new(service, Auth::Disabled))
}

async fn ask(
    api: &Arc<Api<DynamoStore>>,
    endpoint: &str,
    id: &str,
    group: &str,
) -> (u16, serde_json::Value) {
    let server = spawn_server(Arc::clone(api)).await;
    let answer = send(
        server.addr,
        "POST",
        &format!("/v1/{endpoint}"),
        &[("fleet-lock-protocol", "true")],
        zincati_body(id, group),
    )
    .await;
    (answer.status, answer.json())
}

#[tokio::test]
async fn a_group_configured_differently_in_another_region_is_refused_in_both_until_they_agree() {
    let (store, _) = dynamo_store("regions").await;
    let table = store.table().to_owned();
    let fresh = Duration::ZERO;
    let west = region(&table, "eu-west-1", "workers=3,db=1", None, fresh).await;
    let central = region(&table, "eu-central-1", "workers=1,db=1", None, fresh).await;
    // The same settings for db: both regions serve it, on one semaphore.
    assert_eq!(ask(&west, "pre-reboot", "a", "db").await.0, 200);
    let (status, body) = ask(&central, "pre-reboot", "b", "db").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (423, Some("semaphore_full"))
    );
    // workers: 3 slots in one, 1 in the other: neither decides anything.
    for (api, other) in [(&west, "eu-central-1"), (&central, "eu-west-1")] {
        for endpoint in ["pre-reboot", "steady-state"] {
            let (status, body) = ask(api, endpoint, "n", "workers").await;
            assert_eq!(
                (status, body["kind"].as_str()),
                (500, Some("settings_differ")),
                "{endpoint}"
            );
            let value = body["value"].as_str().unwrap();
            assert!(
                value.contains(&format!(
                    "group 'workers' is configured differently in region {other}"
                )),
                "{value}"
            );
        }
    }
    let stored = store.groups(None).await.unwrap();
    assert!(
        stored.iter().all(|(g, _)| g.as_str() != "workers"),
        "nothing stored for workers"
    );
    // A third region that serves workers like the west one still meets the
    // central one's record: refused too.
    let north = region(&table, "eu-north-1", "workers=3,db=1", None, fresh).await;
    let (status, body) = ask(&north, "pre-reboot", "n", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ"))
    );
    assert!(body["value"].as_str().unwrap().contains("eu-central-1"));
    // The central region is deployed again with the same settings: every
    // region serves workers again, on one semaphore of 3 slots.
    let central = region(&table, "eu-central-1", "workers=3,db=1", None, fresh).await;
    let mut granted = 0;
    for (api, id) in [
        (&west, "w1"),
        (&central, "c1"),
        (&north, "n1"),
        (&central, "c2"),
    ] {
        let (status, body) = ask(api, "pre-reboot", id, "workers").await;
        match status {
            200 => granted += 1,
            _ => assert_eq!(body["kind"], "semaphore_full", "{id}: {body}"),
        }
    }
    assert_eq!(granted, 3, "one semaphore across the regions");
    // A return gate in one region only is a deciding setting as well.
    let gated = region(
        &table,
        "eu-west-1",
        "workers=3,db=1",
        Some(Gate::Return("workers=20m")),
        fresh,
    )
    .await;
    let (status, body) = ask(&gated, "steady-state", "w1", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ"))
    );
}

#[tokio::test]
async fn two_regions_whose_drain_gates_differ_only_in_what_a_timeout_does_disagree() {
    // One region holds a node whose drain is overdue, the other lets it
    // reboot undrained: over one semaphore that is two rules, so neither
    // decides until they agree.
    let (store, _) = dynamo_store("regions").await;
    let table = store.table().to_owned();
    let fresh = Duration::ZERO;
    let holds = region(
        &table,
        "eu-west-1",
        "workers=2",
        Some(Gate::Drain("workers=15m")),
        fresh,
    )
    .await;
    let grants = region(
        &table,
        "eu-central-1",
        "workers=2",
        Some(Gate::Drain("workers=15m:grant")),
        fresh,
    )
    .await;
    for (api, other) in [(&holds, "eu-central-1"), (&grants, "eu-west-1")] {
        let (status, body) = ask(api, "pre-reboot", "a", "workers").await;
        assert_eq!(
            (status, body["kind"].as_str()),
            (500, Some("settings_differ")),
            "{body}"
        );
        assert!(body["value"].as_str().unwrap().contains(other), "{body}");
    }
    assert!(
        store.groups(None).await.unwrap().is_empty(),
        "nothing stored"
    );
    // Deployed again to hold as well: the first ask reserves the slot.
    let holds_too = region(
        &table,
        "eu-central-1",
        "workers=2",
        Some(Gate::Drain("workers=15m")),
        fresh,
    )
    .await;
    for api in [&holds, &holds_too] {
        let (status, body) = ask(api, "pre-reboot", "a", "workers").await;
        assert_eq!(
            (status, body["kind"].as_str()),
            (423, Some("waiting_for_drain")),
            "{body}"
        );
    }
}

/// A group split by zone in one region and not in the other, or with
/// canaries that differ in one part: over one item that is two rules, so
/// neither region decides until they agree, and nothing is stored.
#[tokio::test]
async fn two_regions_that_differ_in_a_zone_or_a_canary_setting_disagree() {
    let fresh = Duration::ZERO;
    for (here, there) in [
        (Gate::Zones("workers"), None),
        (
            Gate::Canary("workers=30m:1+3"),
            Some(Gate::Canary("workers=30m:1+3:2h")),
        ),
        (Gate::Canary("workers=30m"), None),
    ] {
        let (store, _) = dynamo_store("regions-waves").await;
        let table = store.table().to_owned();
        let one = region(&table, "eu-west-1", "workers=3", Some(here), fresh).await;
        let other = region(&table, "eu-central-1", "workers=3", there, fresh).await;
        for (api, region) in [(&one, "eu-central-1"), (&other, "eu-west-1")] {
            let (status, body) = ask(api, "pre-reboot", "a", "workers").await;
            assert_eq!(
                (status, body["kind"].as_str()),
                (500, Some("settings_differ")),
                "{body}"
            );
            assert!(body["value"].as_str().unwrap().contains(region), "{body}");
        }
        assert!(
            store.groups(None).await.unwrap().is_empty(),
            "nothing stored"
        );
    }
    // The same canary in both: they agree, and the first node is its canary.
    let (store, _) = dynamo_store("regions-waves").await;
    let table = store.table().to_owned();
    let spec = "workers=30m:1+3";
    let one = region(
        &table,
        "eu-west-1",
        "workers=3",
        Some(Gate::Canary(spec)),
        fresh,
    )
    .await;
    let other = region(
        &table,
        "eu-central-1",
        "workers=3",
        Some(Gate::Canary(spec)),
        fresh,
    )
    .await;
    assert_eq!(ask(&one, "pre-reboot", "a", "workers").await.0, 200);
    let (status, body) = ask(&other, "pre-reboot", "b", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (423, Some("waiting_for_wave")),
        "{body}"
    );
}

#[tokio::test]
async fn a_region_that_changes_its_settings_is_refused_elsewhere_within_the_refresh() {
    let (store, _) = dynamo_store("regions-refresh").await;
    let table = store.table().to_owned();
    let (client, requests) = crate::helpers::counted_client_as(&format!("function.{table}")).await;
    let service = FleetLock::new(
        GroupSlots::parse("workers=2").unwrap(),
        DynamoStore::new(client, &table),
    )
    .agreeing("eu-west-1", Duration::from_secs(3600));
    service.record_settings().await.unwrap();
    let west = Arc::new(Api::new(service, Auth::Disabled));
    // While the records it read are fresh, a call is one request: the
    // settings' read is not on every call.
    let before = requests.get();
    assert_eq!(ask(&west, "pre-reboot", "a", "workers").await.0, 200);
    assert_eq!(ask(&west, "steady-state", "a", "workers").await.0, 200);
    assert_eq!(requests.get() - before, 2, "one request per call");
    // Another region starts with other settings: it refuses at once (its
    // own start read the west's record); the west, whose read is an hour
    // fresh, goes on until its refresh.
    let east = region(
        &table,
        "eu-central-1",
        "workers=5",
        None,
        Duration::from_secs(3600),
    )
    .await;
    let (status, body) = ask(&east, "pre-reboot", "e", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ"))
    );
    let west_again = region(&table, "eu-west-1", "workers=2", None, Duration::ZERO).await;
    let (status, body) = ask(&west_again, "pre-reboot", "b", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ")),
        "after a read"
    );
}

#[tokio::test]
async fn fleetlock_serve_records_its_region_and_refuses_a_bad_region_name() {
    let (store, _) = dynamo_store("regions-serve").await;
    let table = store.table().to_owned();
    let other = region(&table, "eu-central-1", "workers=1", None, Duration::ZERO).await;
    let binary = env!("CARGO_BIN_EXE_fleetlock");
    let mut serve = tokio::process::Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("AWS_ACCESS_KEY_ID", format!("function.{table}"))
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_GROUPS", "workers=3")
        .env("FLEETLOCK_REGION", "eu-west-1")
        .env("RUST_LOG", "error")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_, addr) = served_address(serve.stdout.take().unwrap()).await;
    let answer = send(
        addr,
        "POST",
        "/v1/pre-reboot",
        &[("fleet-lock-protocol", "true")],
        zincati_body("a", "workers"),
    )
    .await;
    assert_eq!(
        (answer.status, answer.kind()),
        (500, "settings_differ".to_owned())
    );
    let (status, body) = ask(&other, "pre-reboot", "b", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ")),
        "the other region refuses too, having read the new record: {body}"
    );
    serve.kill().await.ok();
    let refused = tokio::process::Command::new(binary)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FLEETLOCK_TABLE", &table)
        .env("FLEETLOCK_REGION", "EU West")
        .output()
        .await
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("FLEETLOCK_REGION: 'EU West' is not a region name like eu-west-1"),
        "{stderr}"
    );
}

/// `fleetlock serve` on a table the proxy describes as a global table:
/// (whether it started, its stderr).
async fn serve_on_a_global_table(
    consistency: &'static str,
    region: Option<&str>,
) -> (bool, String) {
    let (proxy, store) = proxied_store("regions-global").await;
    proxy.next(Fault::DescribeGlobalTable(consistency), 1);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("AWS_ACCESS_KEY_ID", format!("function.{}", store.table()))
        .env("FLEETLOCK_TABLE", store.table())
        .env("FLEETLOCK_GROUPS", "workers=1")
        .env("AWS_ENDPOINT_URL_DYNAMODB", proxy.url())
        .env_remove("FLEETLOCK_REGION")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(region) = region {
        command.env("FLEETLOCK_REGION", region);
    }
    let mut serve = command.spawn().unwrap();
    let started = tokio::time::timeout(Duration::from_secs(30), async {
        use tokio::io::AsyncBufReadExt;
        let mut lines = tokio::io::BufReader::new(serve.stdout.take().unwrap()).lines();
        lines.next_line().await.unwrap().is_some()
    })
    .await
    .expect("serve starts or stops within 30 s");
    serve.kill().await.ok();
    let output = serve.wait_with_output().await.unwrap();
    (
        started,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_global_table_is_served_only_in_strong_consistency_and_with_the_functions_region() {
    let (started, stderr) = serve_on_a_global_table("STRONG", Some("eu-west-1")).await;
    assert!(started, "MRSC with its region serves: {stderr}");

    let (started, stderr) = serve_on_a_global_table("STRONG", None).await;
    assert!(!started, "without FLEETLOCK_REGION it must not serve");
    assert!(
        stderr.contains("is a global table and FLEETLOCK_REGION is not set")
            && stderr.contains("more slots than a group has"),
        "{stderr}"
    );

    let (started, stderr) = serve_on_a_global_table("EVENTUAL", Some("eu-west-1")).await;
    assert!(!started, "eventual consistency must not serve");
    assert!(
        stderr.contains("global table in multi-Region eventual consistency")
            && stderr.contains("could each grant the last slot"),
        "{stderr}"
    );
}

/// A person's `fleetlock status` from any region names the regions that
/// serve the table and the groups they serve differently (text and JSON);
/// on a table of one region it says nothing of regions.
#[tokio::test]
async fn status_names_the_regions_and_the_groups_they_serve_differently() {
    let (store, _) = dynamo_store("regions-status").await;
    let table = store.table().to_owned();
    let status = |args: &'static [&'static str]| {
        let table = table.clone();
        async move {
            let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetlock"))
                .arg("status")
                .args(args)
                .env("AWS_ACCESS_KEY_ID", format!("operator.{table}"))
                .env("FLEETLOCK_TABLE", &table)
                .output()
                .await
                .unwrap();
            assert!(
                output.status.success(),
                "{}",
                String::from_utf8_lossy(&output.stderr)
            );
            String::from_utf8(output.stdout).unwrap()
        }
    };
    assert!(
        !status(&[]).await.contains("Regions"),
        "one region: no word of regions"
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&status(&["--json"]).await).unwrap()["regions"],
        serde_json::Value::Null
    );

    region(&table, "eu-west-1", "db=1,workers=3", None, Duration::ZERO).await;
    region(&table, "eu-west-2", "db=1,workers=3", None, Duration::ZERO).await;
    let agreeing = status(&[]).await;
    assert!(
        agreeing.contains("Regions that serve this table: eu-west-1, eu-west-2")
            && agreeing.contains("Their settings agree."),
        "{agreeing}"
    );

    region(&table, "eu-west-3", "db=2,workers=3", None, Duration::ZERO).await;
    let differing = status(&[]).await;
    assert!(
        differing.contains(
            "Settings differ for group 'db' between eu-west-1, eu-west-2, eu-west-3: its nodes \
             are refused (settings_differ)"
        ) && !differing.contains("group 'workers' between"),
        "{differing}"
    );
    let json: serde_json::Value = serde_json::from_str(&status(&["--json"]).await).unwrap();
    assert_eq!(
        json["regions"],
        serde_json::json!({
            "recorded": ["eu-west-1", "eu-west-2", "eu-west-3"],
            "settings_differ": {"db": ["eu-west-1", "eu-west-2", "eu-west-3"]},
        })
    );
}

/// `~settings` as written by hand (or by a bug): one region's record that
/// is no map, and one digest that is no string.
async fn corrupt_settings(
    table: &str,
    region: &str,
    value: aws_sdk_dynamodb::types::AttributeValue,
) {
    let (client, _) = fleetlock::test_support::counted_client().await;
    client
        .update_item()
        .table_name(table)
        .key(
            "group",
            aws_sdk_dynamodb::types::AttributeValue::S("~settings".into()),
        )
        .update_expression("SET #r = :v")
        .expression_attribute_names("#r", format!("s:{region}"))
        .expression_attribute_values(":v", value)
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_malformed_record_stops_only_what_it_concerns() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let (store, _) = dynamo_store("regions-malformed").await;
    let table = store.table().to_owned();
    let fresh = Duration::ZERO;
    // A whole region's record of the wrong type: every region still starts
    // and serves every group (that region is compared again once it
    // records again).
    corrupt_settings(&table, "eu-north-1", AttributeValue::N("7".into())).await;
    let west = region(&table, "eu-west-1", "workers=1,db=1", None, fresh).await;
    assert_eq!(ask(&west, "pre-reboot", "a", "workers").await.0, 200);
    assert_eq!(ask(&west, "pre-reboot", "b", "db").await.0, 200);
    // One digest of the wrong type refuses that group only, naming the
    // region whose record it is.
    let central_record = AttributeValue::M(
        [("workers".to_owned(), AttributeValue::N("1".into()))]
            .into_iter()
            .collect(),
    );
    corrupt_settings(&table, "eu-central-1", central_record).await;
    let (status, body) = ask(&west, "steady-state", "a", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ"))
    );
    assert!(
        body["value"].as_str().unwrap().contains("eu-central-1"),
        "{body}"
    );
    assert_eq!(ask(&west, "steady-state", "b", "db").await.0, 200);
    // The region itself records again at its start: all is served.
    let _central = region(&table, "eu-central-1", "workers=1,db=1", None, fresh).await;
    assert_eq!(ask(&west, "steady-state", "a", "workers").await.0, 200);
}

#[tokio::test]
async fn two_stacks_in_one_region_on_one_table_are_compared() {
    let (store, _) = dynamo_store("regions-two-stacks").await;
    let table = store.table().to_owned();
    let stack = |slots: &'static str, name: &'static str| {
        let table = table.clone();
        async move {
            let client = crate::helpers::client_as(&format!("function.{table}")).await;
            let service = FleetLock::new(
                GroupSlots::parse(slots).unwrap(),
                DynamoStore::new(client, &table),
            )
            .agreeing("eu-west-1", Duration::ZERO)
            .recorded_as(name);
            service.record_settings().await.unwrap();
            Arc::new(Api::new(service, Auth::Disabled))
        }
    };
    // The same settings: both serve, one semaphore.
    let first = stack("workers=1", "stack-a-Function").await;
    let second = stack("workers=1", "stack-b-Function").await;
    assert_eq!(ask(&first, "pre-reboot", "a", "workers").await.0, 200);
    assert_eq!(ask(&second, "pre-reboot", "b", "workers").await.0, 423);
    assert_eq!(ask(&first, "steady-state", "a", "workers").await.0, 200);
    // A third stack records other settings over the region's record: the
    // stacks whose record it wrote over refuse the group and name it.
    let third = stack("workers=3", "stack-c-Function").await;
    let (status, body) = ask(&first, "pre-reboot", "a", "workers").await;
    assert_eq!(
        (status, body["kind"].as_str()),
        (500, Some("settings_differ"))
    );
    assert!(
        body["value"]
            .as_str()
            .unwrap()
            .contains("eu-west-1 (stack-c-Function)"),
        "{body}"
    );
    assert_eq!(ask(&second, "pre-reboot", "b", "workers").await.0, 500);
    // The last one serves with its settings: at no moment do two stacks
    // grant the group with different slots.
    assert_eq!(ask(&third, "pre-reboot", "c", "workers").await.0, 200);
}
