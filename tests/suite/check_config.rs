//! The check-config entry point as a deploy meets it: the function binary in
//! Lambda mode, invoked with `{"action": "check-config"}`, against DynamoDB
//! Local and a CloudWatch stand-in. It answers what the settings give, or
//! fails the invocation with every reason the functions would not start or
//! would guard nothing, and it writes nothing.

use serde_json::json;
use tokio::process::Child;

use crate::alarm_pauses::Alarms;
use crate::helpers::{table_made_by_the_binary, unique_table_name};
use crate::lambda_runtime::{RuntimeApi, invoked as invoke, lambda_command, runtime_api};

const CHECK: &str = r#"{"action": "check-config"}"#;

/// The check function with `settings` (FLEETLOCK_* variables), its
/// CloudWatch at `alarms_url`.
fn checker(runtime: &RuntimeApi, settings: &[(&str, &str)], alarms_url: &str) -> Child {
    let mut command = lambda_command(runtime, "fleetlock-check-config", "check-config");
    command.env("AWS_ENDPOINT_URL_CLOUDWATCH", alarms_url);
    for (name, value) in settings {
        command.env(name, value);
    }
    command.spawn().unwrap()
}

#[tokio::test]
async fn good_settings_check_out_and_each_kind_of_bad_one_fails_the_invocation() {
    let table = table_made_by_the_binary("check-config").await;
    let alarms = Alarms::default();
    alarms.set("api-5xx", "OK");
    let alarms_url = alarms.start().await;
    let credential = fleetlock::domain::auth::new_credential("fleet", "*").unwrap();
    let good: Vec<(&str, &str)> = vec![
        ("FLEETLOCK_TABLE", table.as_str()),
        ("FLEETLOCK_GROUPS", "default=1,workers=3"),
        ("FLEETLOCK_SETTLE", "workers=10m"),
        ("FLEETLOCK_CLIENTS", credential.entry.as_str()),
        ("FLEETLOCK_ALARM_PAUSES", "api-5xx=workers"),
    ];
    let mut runtime = runtime_api().await;
    let _function = checker(&runtime, &good, &alarms_url);
    let answer = invoke(&mut runtime, CHECK)
        .await
        .expect("good settings pass");
    assert_eq!(
        answer,
        json!({"ok": true, "table": table, "groups": ["default=1", "workers=3"], "alarms": ["api-5xx"], "warnings": []})
    );
    // Anything else is refused: the function serves nothing.
    let other = invoke(&mut runtime, r#"{"action": "drained"}"#)
        .await
        .unwrap_err();
    assert!(
        other["errorMessage"]
            .as_str()
            .unwrap()
            .contains(r#"{"action": "check-config"}"#),
        "{other}"
    );

    // Each a setting that slips past an offline check, or that none can see.
    let missing_table = unique_table_name("check-config-none");
    let typo_credential =
        fleetlock::domain::auth::entry_for("fleet", "default,wrokers", "secret").unwrap();
    for (name, change, says) in [
        (
            "a typo'd group",
            ("FLEETLOCK_SETTLE", "wrokers=10m"),
            "FLEETLOCK_SETTLE: group 'wrokers' is not configured by FLEETLOCK_GROUPS (did you mean 'workers'?)",
        ),
        (
            "a malformed credential",
            ("FLEETLOCK_CLIENTS", "fleet:*:not-a-salt:00"),
            "FLEETLOCK_CLIENTS",
        ),
        (
            "a table that does not exist",
            ("FLEETLOCK_TABLE", missing_table.as_str()),
            missing_table.as_str(),
        ),
        (
            "an alarm that does not exist",
            ("FLEETLOCK_ALARM_PAUSES", "api-5xx=workers;api-5xxx=default"),
            "alarm 'api-5xxx' (FLEETLOCK_ALARM_PAUSES) does not exist in this region",
        ),
        (
            "a credential's group one typo from a configured one",
            ("FLEETLOCK_CLIENTS", typo_credential.as_str()),
            "credential 'fleet' (FLEETLOCK_CLIENTS) names group 'wrokers', which \
             FLEETLOCK_GROUPS does not configure (did you mean 'workers'?)",
        ),
        (
            "an alarm pause of a group not configured",
            ("FLEETLOCK_ALARM_PAUSES", "api-5xx=wrokers"),
            "pauses group 'wrokers'",
        ),
    ] {
        let settings: Vec<(&str, &str)> = good
            .iter()
            .map(|&(var, value)| {
                if var == change.0 {
                    change
                } else {
                    (var, value)
                }
            })
            .collect();
        let mut runtime = runtime_api().await;
        let _function = checker(&runtime, &settings, &alarms_url);
        let refused = invoke(&mut runtime, CHECK)
            .await
            .expect_err(&format!("{name} must fail the check"));
        let message = refused["errorMessage"].as_str().unwrap();
        assert!(
            message.starts_with("the functions would refuse these settings: ")
                && message.contains(says),
            "{name}: {message}"
        );
    }
    // A credential's group far from every configured one may be meant: a
    // warning in the answer, and the deploy goes on.
    let far =
        fleetlock::domain::auth::entry_for("fleet", "default,workers,frontend", "secret").unwrap();
    let mut runtime = runtime_api().await;
    let _function = checker(
        &runtime,
        &[
            ("FLEETLOCK_TABLE", table.as_str()),
            ("FLEETLOCK_GROUPS", "default=1,workers=3"),
            ("FLEETLOCK_CLIENTS", far.as_str()),
        ],
        &alarms_url,
    );
    let warned = invoke(&mut runtime, CHECK).await.expect("a warning passes");
    let warnings = warned["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warned}");
    assert!(
        warnings[0].as_str().unwrap().contains("group 'frontend'"),
        "{warned}"
    );
    // Two problems at once are both listed.
    let mut runtime = runtime_api().await;
    let _function = checker(
        &runtime,
        &[
            ("FLEETLOCK_TABLE", table.as_str()),
            ("FLEETLOCK_GROUPS", "default=1"),
            ("FLEETLOCK_LEASE", "db=6h"),
            ("FLEETLOCK_TIME_ZONE", "Europe/Berlln"),
            ("FLEETLOCK_CLIENTS", credential.entry.as_str()),
        ],
        &alarms_url,
    );
    let both = invoke(&mut runtime, CHECK).await.unwrap_err();
    let message = both["errorMessage"].as_str().unwrap();
    assert!(
        message.contains("group 'db' is not configured") && message.contains("'Europe/Berlln'"),
        "{message}"
    );
}

/// The deploy's check on a table DynamoDB describes as a global table (the
/// fault proxy answers its DescribeTable so): eventual consistency fails the
/// deploy, and so does strong consistency without the function's region;
/// strong consistency with it passes.
#[tokio::test]
async fn a_deploy_onto_a_global_table_needs_strong_consistency_and_the_region() {
    use crate::fault_proxy::Fault;
    let (proxy, store) = crate::helpers::proxied_store("check-config-global").await;
    let alarms_url = Alarms::default().start().await;
    let credential = fleetlock::domain::auth::new_credential("fleet", "*").unwrap();
    let dynamodb = proxy.url();
    for (consistency, region, refused) in [
        (
            "EVENTUAL",
            Some("eu-west-1"),
            Some("global table in multi-Region eventual consistency"),
        ),
        (
            "STRONG",
            None,
            Some("is a global table and FLEETLOCK_REGION is not set"),
        ),
        ("STRONG", Some("eu-west-1"), None),
    ] {
        proxy.next(Fault::DescribeGlobalTable(consistency), 1);
        let mut settings = vec![
            ("FLEETLOCK_TABLE", store.table()),
            ("FLEETLOCK_GROUPS", "default=1"),
            ("FLEETLOCK_CLIENTS", credential.entry.as_str()),
            ("AWS_ENDPOINT_URL_DYNAMODB", dynamodb.as_str()),
        ];
        if let Some(region) = region {
            settings.push(("FLEETLOCK_REGION", region));
        }
        let mut runtime = runtime_api().await;
        let _function = checker(&runtime, &settings, &alarms_url);
        let answer = invoke(&mut runtime, CHECK).await;
        match refused {
            Some(says) => {
                let error = answer.expect_err(&format!("{consistency} {region:?} must fail"));
                let message = error["errorMessage"].as_str().unwrap();
                assert!(
                    message.contains(says),
                    "{consistency} {region:?}: {message}"
                );
            }
            None => {
                let answer = answer.expect("MRSC with the region passes");
                assert_eq!(answer["ok"], true, "{answer}");
            }
        }
    }
}
