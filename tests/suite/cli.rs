//! The `fleetlock` binary as operators and the docs use it.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetlock::aws::iam;
use fleetlock::domain::store::LockStore;

use tokio::process::{Child, Command};

use crate::helpers::{local_dynamodb_endpoint, served_address, unique_table_name, zincati};
use fleetlock::domain::store::Decisions;

fn fleetlock() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .env_remove("FLEETLOCK_TABLE")
        .env_remove("FLEETLOCK_GROUPS")
        .env_remove("FLEETLOCK_SETTLE")
        .env_remove("FLEETLOCK_ZONES")
        .env_remove("FLEETLOCK_CANARY")
        .env_remove("FLEETLOCK_MAX_WILDCARD_GROUPS")
        .env_remove("FLEETLOCK_WINDOWS")
        .env_remove("FLEETLOCK_TIME_ZONE")
        .env_remove("FLEETLOCK_FUNCTION")
        // Hermetic: nothing of the developer's own settings.
        .env_remove("FLEETLOCK_CLIENTS")
        .env_remove("FLEETLOCK_AUTH")
        .env_remove("FLEETLOCK_ALARM_PAUSES")
        .env_remove("FLEETLOCK_EVENT_BUS")
        .env_remove("FLEETLOCK_URL")
        .env_remove("FLEETLOCK_MACHINE_ID_FILE")
        .env_remove("_HANDLER")
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .kill_on_drop(true);
    command
}

struct Run {
    ok: bool,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `fleetlock` on the lock table `table`.
fn on_table(table: &str) -> Command {
    let mut command = fleetlock();
    command.env("FLEETLOCK_TABLE", table);
    command
}

async fn run(command: &mut Command) -> Run {
    crate::helpers::under_cli_role(command);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("fleetlock finished within a minute")
        .unwrap();
    Run {
        ok: output.status.success(),
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into(),
        stderr: String::from_utf8_lossy(&output.stderr).into(),
    }
}

/// Starts `fleetlock serve` on a port the OS picks and returns its address.
async fn serve(command: &mut Command) -> (Child, std::net::SocketAddr) {
    command.args(["serve", "--listen", "127.0.0.1:0"]);
    crate::helpers::under_cli_role(command);
    let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
    let (_, addr) = served_address(child.stdout.take().unwrap()).await;
    (child, addr)
}

#[tokio::test]
async fn no_arguments_prints_help() {
    let r = run(&mut fleetlock()).await;
    assert!(r.ok);
    assert!(
        r.stdout.contains("Usage: fleetlock [COMMAND]"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("  release        Release a slot by hand"));
    assert!(r.stdout.contains("ENVIRONMENT:"));
}

#[tokio::test]
async fn a_wrong_command_fails_with_usage() {
    let r = run(fleetlock().arg("unlok")).await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("unknown command 'unlok' (did you mean 'unlock'?)"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn status_and_release_say_what_is_missing_without_a_table() {
    for args in [
        &["status"][..],
        &["release", "--group", "default", "--id", "a"],
    ] {
        let r = run(fleetlock().args(args)).await;
        assert!(!r.ok, "{args:?}");
        assert!(
            r.stderr.contains("FLEETLOCK_TABLE, which is unset"),
            "{}",
            r.stderr
        );
    }
}

/// `fleetlock drained` as an operator runs it against the table: a node
/// served with a drain gate waits (status says how to confirm it), the
/// command grants its slot, the node's next pre-reboot hears 200; a
/// confirmation of nothing, of an older reservation, or of a mistyped group
/// is refused with a line that says why, and a bad time never reaches AWS.
#[tokio::test]
async fn operators_confirm_a_drain_with_fleetlock_drained() {
    local_dynamodb_endpoint();
    let table = unique_table_name("cli-drained");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    let (mut child, addr) = serve(
        with_table()
            .env("FLEETLOCK_GROUPS", "workers=1")
            .env("FLEETLOCK_DRAIN", "workers=15m"),
    )
    .await;
    let r = zincati(addr, "pre-reboot", "n1", "workers").await;
    assert_eq!((r.status, r.kind()), (423, "waiting_for_drain".to_owned()));

    let status = run(with_table()
        .env("FLEETLOCK_GROUPS", "workers=1")
        .env("FLEETLOCK_DRAIN", "workers=15m")
        .args(["status", "--group", "workers"]))
    .await;
    assert!(status.ok, "{}", status.stderr);
    let line = status
        .stdout
        .lines()
        .find(|l| l.starts_with("workers: 'n1' waits for its drain since"))
        .unwrap_or_else(|| panic!("{}", status.stdout));
    let reserved_at = line
        .rsplit("--reserved-at ")
        .next()
        .unwrap()
        .trim_end_matches('\'')
        .to_owned();
    assert!(status.stdout.contains("draining"), "{}", status.stdout);

    let typo = run(with_table().args(["drained", "--group", "wrokers", "--id", "n1"])).await;
    assert!(
        !typo.ok && typo.stderr.contains("did you mean 'workers'"),
        "{}",
        typo.stderr
    );
    let bad = run(with_table().args([
        "drained",
        "--group",
        "workers",
        "--id",
        "n1",
        "--reserved-at",
        "soon",
    ]))
    .await;
    assert!(
        !bad.ok && bad.stderr.contains("'soon' is not a time"),
        "{}",
        bad.stderr
    );
    let older = run(with_table().args([
        "drained",
        "--group",
        "workers",
        "--id",
        "n1",
        "--reserved-at",
        "2025-01-01T00:00:00.000Z",
    ]))
    .await;
    assert!(!older.ok, "{}", older.stdout);
    assert!(older.stderr.contains("waits since"), "{}", older.stderr);
    let none = run(with_table().args(["drained", "--group", "workers", "--id", "n2"])).await;
    assert!(
        !none.ok
            && none
                .stderr
                .contains("'n2' has no reservation in group 'workers'"),
        "{}",
        none.stderr
    );

    let r = run(with_table().args([
        "drained",
        "--group",
        "workers",
        "--id",
        "n1",
        "--reserved-at",
        &reserved_at,
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("confirmed the drain of 'n1' in group 'workers'"),
        "{}",
        r.stdout
    );
    let r = zincati(addr, "pre-reboot", "n1", "workers").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("already_held"))
    );
    let again = run(with_table().args(["drained", "--group", "workers", "--id", "n1"])).await;
    assert!(
        again.ok
            && again
                .stdout
                .contains("holds its slot in group 'workers' already")
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn malformed_groups_stop_start_up() {
    let r = run(fleetlock()
        .env("FLEETLOCK_GROUPS", "default=1,default=2")
        .arg("serve"))
    .await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("FLEETLOCK_GROUPS: group 'default' is listed twice"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn under_lambda_it_refuses_to_start_without_a_table() {
    let r = run(fleetlock().env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")).await;
    assert!(!r.ok);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("FLEETLOCK_TABLE"))
        .expect("a log line");
    let log: serde_json::Value = serde_json::from_str(line).expect("JSON logs under Lambda");
    assert_eq!(log["level"], "ERROR");
}

#[tokio::test]
async fn serve_on_the_embedded_default_answers_zincati() {
    let (mut child, addr) = serve(&mut fleetlock()).await;
    let r = zincati(addr, "pre-reboot", "laptop-node", "default").await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    // The default is one slot for group 'default'.
    let r = zincati(addr, "pre-reboot", "second-node", "default").await;
    assert_eq!((r.status, r.kind()), (423, "semaphore_full".to_string()));
    child.kill().await.unwrap();
}

#[tokio::test]
async fn operators_see_and_release_holders_in_dynamodb() {
    local_dynamodb_endpoint();
    let table = unique_table_name("cli");
    let with_table = || on_table(&table);
    let r = run(with_table().arg("create-table")).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains(&format!("table created {table}")),
        "{}",
        r.stdout
    );
    let r = run(with_table().arg("create-table")).await;
    assert!(r.ok && r.stdout.contains("already exists"), "{}", r.stdout);

    let (mut child, addr) =
        serve(with_table().env("FLEETLOCK_GROUPS", "default=1,workers=2")).await;
    for (node, group) in [
        ("stuck-node", "default"),
        ("w1", "workers"),
        ("w2", "workers"),
    ] {
        assert_eq!(zincati(addr, "pre-reboot", node, group).await.status, 200);
    }
    child.kill().await.unwrap();

    let r = run(with_table().args(["status", "--json"])).await;
    assert!(r.ok, "{}", r.stderr);
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let groups = status["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["group"], "default");
    assert_eq!(groups[0]["slots"], 1);
    assert_eq!(groups[0]["holders"][0]["id"], "stuck-node");
    assert!(
        groups[0]["holders"][0]["acquired_at"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    assert_eq!(groups[1]["holders"].as_array().unwrap().len(), 2);

    let r = run(with_table().args(["status", "--group", "default"])).await;
    assert!(r.ok);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(
        lines[0].starts_with("GROUP") && lines[0].contains("SINCE (UTC)"),
        "{}",
        r.stdout
    );
    assert!(
        lines[1].starts_with("default")
            && lines[1].contains("1/1")
            && lines[1].contains("stuck-node")
    );
    assert_eq!(lines.len(), 2, "only the group asked for");

    // The wrong group: nothing changes, and it says where the node holds one.
    let r = run(with_table().args(["release", "--group", "workers", "--id", "stuck-node"])).await;
    assert!(!r.ok, "{}", r.stdout);
    assert!(
        r.stderr.contains("holds one in: default")
            && r.stderr
                .contains("fleetlock release --group default --id stuck-node"),
        "{}",
        r.stderr
    );
    let r = run(with_table().args(["release", "--group", "default", "--id", "stuck-node"])).await;
    assert!(
        r.ok && r.stdout.contains("released 'stuck-node'"),
        "{}",
        r.stdout
    );
    let r = run(with_table().args(["release", "--group", "default", "--id", "stuck-node"])).await;
    assert!(
        r.ok && r.stdout.contains("holds none in any group"),
        "{}",
        r.stdout
    );
    let r = run(with_table().args(["status", "--group", "nope"])).await;
    assert!(
        r.ok && r.stdout.contains("group 'nope' has no holders")
            && r.stdout.contains("pass --function"),
        "{}",
        r.stdout
    );
    let r = run(with_table()
        .env("FLEETLOCK_GROUPS", "default=1")
        .args(["status", "--group", "nope"]))
    .await;
    assert!(r.stdout.contains("it is not configured"), "{}", r.stdout);
    let r = run(with_table().args(["status", "--json", "--group", "default"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(status["groups"][0]["holders"], serde_json::json!([]));
}

#[tokio::test]
async fn under_lambda_it_refuses_to_start_without_client_credentials() {
    let r = run(fleetlock()
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("FLEETLOCK_TABLE", "fleetlock-locks"))
    .await;
    assert!(!r.ok);
    assert!(r.stderr.contains("FLEETLOCK_CLIENTS"), "{}", r.stderr);
}

#[tokio::test]
async fn serve_refuses_an_open_non_loopback_address() {
    let r = run(fleetlock().args(["serve", "--listen", "0.0.0.0:0"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("reachable from other machines"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_credential_from_the_cli_opens_the_server_to_its_holder_only() {
    let r = run(fleetlock().args(["credential", "--name", "fleet", "--groups", "*"])).await;
    assert!(r.ok, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().map(str::trim).collect();
    let entry = lines[1];
    let url = lines[3];
    let secret = url
        .strip_prefix("https://fleet:")
        .and_then(|rest| rest.strip_suffix("@YOUR-API-HOST/"))
        .unwrap_or_else(|| panic!("unexpected {url:?}"));
    assert!(!entry.contains(secret), "the entry holds no secret");

    let (mut child, addr) = serve(
        fleetlock()
            .env("FLEETLOCK_CLIENTS", entry)
            .env("FLEETLOCK_GROUPS", "default=1,db=1")
            .stderr(Stdio::piped()),
    )
    .await;
    let body = crate::helpers::zincati_body("n1", "default");
    let good = crate::helpers::basic_auth("fleet", secret);
    let headers = [
        ("fleet-lock-protocol", "true"),
        ("authorization", good.as_str()),
    ];
    let r = crate::helpers::send(addr, "POST", "/v1/pre-reboot", &headers, body.clone()).await;
    assert_eq!(
        (r.status, r.json()["outcome"].as_str()),
        (200, Some("granted"))
    );
    let r = zincati(addr, "pre-reboot", "n2", "default").await;
    assert_eq!((r.status, r.kind()), (401, "unauthorized".to_string()));
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(
        !logs.contains('\u{1b}'),
        "no colour codes in a pipe: {logs}"
    );
    let decision = logs.lines().find(|l| l.contains("decision")).unwrap();
    let latency = decision.split("latency_ms=").nth(1).unwrap();
    let latency = latency.split_whitespace().next().unwrap();
    assert!(
        latency.split('.').nth(1).is_none_or(|d| d.len() <= 3),
        "microseconds at most: {decision}"
    );

    // A refusal made after the body was read names group, id and client.
    let scoped = run(fleetlock().args(["credential", "--name", "dbs", "--groups", "db"])).await;
    let scoped_lines: Vec<&str> = scoped.stdout.lines().map(str::trim).collect();
    let scoped_secret = scoped_lines[3]
        .strip_prefix("https://dbs:")
        .and_then(|rest| rest.strip_suffix("@YOUR-API-HOST/"))
        .unwrap();
    let (mut child, addr) = serve(
        fleetlock()
            .env("FLEETLOCK_CLIENTS", scoped_lines[1])
            .env("FLEETLOCK_GROUPS", "default=1,db=1")
            .stderr(Stdio::piped()),
    )
    .await;
    let scoped_auth = crate::helpers::basic_auth("dbs", scoped_secret);
    let headers = [
        ("fleet-lock-protocol", "true"),
        ("authorization", scoped_auth.as_str()),
    ];
    let r = crate::helpers::send(addr, "POST", "/v1/pre-reboot", &headers, body.clone()).await;
    assert_eq!((r.status, r.kind()), (403, "forbidden_group".to_string()));
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let logs = String::from_utf8_lossy(&output.stderr);
    let refusal = logs
        .lines()
        .find(|l| l.contains("refusal") && l.contains("forbidden_group"))
        .unwrap();
    for field in [r#"group="default""#, r#"id="n1""#, r#"client="dbs""#] {
        assert!(refusal.contains(field), "{field} in {refusal}");
    }

    // Hashing an existing secret gives another (salted) entry that also works.
    let mut hashing = fleetlock();
    hashing
        .args([
            "credential",
            "--name",
            "fleet",
            "--groups",
            "default",
            "--secret-stdin",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = hashing.spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{secret}\n").as_bytes())
        .await
        .unwrap();
    let output = child.wait_with_output().await.unwrap();
    let second = String::from_utf8(output.stdout).unwrap();
    let clients = fleetlock::domain::auth::Clients::parse(second.trim()).unwrap();
    // The same name, another salt: the secret still opens it, as that name.
    let who = clients.authenticate(Some(good.as_bytes())).unwrap();
    assert_eq!(who.name, "fleet");
    assert_ne!(second.trim(), entry);
}

/// The AWS actions a run of the binary sent, from its debug log.
fn operations(stderr: &str) -> BTreeSet<String> {
    stderr
        .lines()
        .filter(|l| l.contains("aws request"))
        .filter_map(|l| l.split("action=").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_owned())
        .collect()
}

#[tokio::test]
async fn the_iam_policies_list_exactly_what_the_commands_call() {
    local_dynamodb_endpoint();
    let table = unique_table_name("iam");
    let with_table = || {
        let mut command = on_table(&table);
        command.env("RUST_LOG", "fleetlock=debug");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);

    // The function: serve takes and gives back a slot.
    let mut serving = with_table();
    serving.stderr(Stdio::piped());
    let (mut child, addr) = serve(&mut serving).await;
    assert_eq!(
        zincati(addr, "pre-reboot", "n1", "default").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "steady-state", "n1", "default").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "pre-reboot", "n1", "default").await.status,
        200
    );
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let function: BTreeSet<String> = operations(&String::from_utf8_lossy(&output.stderr));
    let mut expected: BTreeSet<String> = iam::FUNCTION_ACTIONS
        .iter()
        .map(|a| a.to_string())
        .collect();
    // GetItem reads the regions' records, on a global table only (the
    // regions' tests run it under the enforced role).
    assert!(expected.remove("dynamodb:GetItem"));
    assert_eq!(function, expected);

    // The operator: every command that touches the table or the function.
    let (lambda_url, _) =
        lambda_api_stand_in(serde_json::json!({"FLEETLOCK_GROUPS": "default=1"})).await;
    let mut operator = BTreeSet::new();
    let r = run(with_table()
        .env("AWS_ENDPOINT_URL_LAMBDA", &lambda_url)
        .args(["status", "--function", "fleetlock"]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    operator.extend(operations(&r.stderr));
    for args in [
        vec!["status"],
        vec!["status", "--json", "--group", "default"],
        vec!["release", "--group", "workers", "--id", "n1"],
        vec!["release", "--group", "default", "--id", "n1"],
        vec!["pause", "--group", "default", "--reason", "test"],
        vec!["pause", "--all", "--reason", "test"],
        vec!["resume", "--group", "default"],
        vec!["resume", "--all"],
        vec!["forget", "--group", "default"],
        vec![
            "exclude", "--group", "default", "--id", "n1", "--reason", "test",
        ],
        vec!["include", "--group", "default", "--id", "n1"],
        vec!["begin-rollout", "--group", "default"],
    ] {
        let r = run(with_table().args(&args)).await;
        operator.extend(operations(&r.stderr));
    }
    let (tagging, _) = tagging_stand_in(&[]).await;
    let r = run(with_table()
        .env("AWS_ENDPOINT_URL_RESOURCE_GROUPS_TAGGING_API", &tagging)
        .args([
            "hosts",
            "8f040e49ad9a45a8b0c617313becf153",
            "--hosts",
            "tags",
        ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    operator.extend(operations(&r.stderr));
    let expected: BTreeSet<String> = iam::OPERATOR_TABLE_ACTIONS
        .iter()
        .chain(iam::OPERATOR_FUNCTION_ACTIONS)
        .chain(iam::OPERATOR_TAG_ACTIONS)
        .map(|a| a.to_string())
        .collect();
    assert_eq!(operator, expected);

    // And the command that prints the policy prints those lists.
    let r = run(fleetlock().args([
        "iam-policy",
        "--table-arn",
        "arn:aws:dynamodb:x:1:table/t",
        "--function-arn",
        "arn:aws:lambda:x:1:function:f",
    ]))
    .await;
    let policy: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let statements = &policy["Statement"];
    assert_eq!(
        statements[0]["Action"],
        serde_json::json!(iam::OPERATOR_TABLE_ACTIONS)
    );
    assert_eq!(statements[0]["Resource"], "arn:aws:dynamodb:x:1:table/t");
    assert_eq!(
        statements[1]["Action"],
        serde_json::json!(iam::OPERATOR_FUNCTION_ACTIONS)
    );
    assert_eq!(statements[1]["Resource"], "arn:aws:lambda:x:1:function:f");
    assert_eq!(
        statements[2]["Action"],
        serde_json::json!(iam::OPERATOR_TAG_ACTIONS)
    );
}

#[tokio::test]
async fn a_missing_table_stops_the_start_with_a_clear_message() {
    local_dynamodb_endpoint();
    let missing = unique_table_name("missing");
    let r = run(fleetlock().env("FLEETLOCK_TABLE", &missing).args([
        "serve",
        "--listen",
        "127.0.0.1:0",
    ]))
    .await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains(&format!("table '{missing}' does not exist")),
        "{}",
        r.stderr
    );
    // Under Lambda too, as one JSON error line, before any event is asked for.
    let entry = fleetlock::domain::auth::new_credential("fleet", "*")
        .unwrap()
        .entry;
    let r = run(fleetlock()
        .env("AWS_LAMBDA_RUNTIME_API", "127.0.0.1:9")
        .env("FLEETLOCK_CLIENTS", entry)
        .env("FLEETLOCK_TABLE", &missing))
    .await;
    assert!(!r.ok);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("does not exist"))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    let log: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(log["level"], "ERROR");
}

#[tokio::test]
async fn store_errors_are_one_readable_line() {
    // Nothing listens on the discard port.
    let r = run(fleetlock()
        .env("FLEETLOCK_TABLE", "fleetlock")
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .arg("status"))
    .await;
    assert!(!r.ok);
    let text = r.stderr.trim();
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(
        text.starts_with("fleetlock: lock store unavailable:"),
        "{text}"
    );
    assert!(text.len() < 300, "{text}");
}

#[tokio::test]
async fn operators_pause_and_resume_groups_live() {
    local_dynamodb_endpoint();
    let table = unique_table_name("pause");
    let with_table = || {
        let mut command = on_table(&table);
        command
            .env("FLEETLOCK_GROUPS", "default=1,workers=2")
            .env("FLEETLOCK_SETTLE", "workers=10m")
            .env("USER", "alice");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    let (mut child, addr) = serve(&mut with_table()).await;
    assert_eq!(
        zincati(addr, "pre-reboot", "w1", "workers").await.status,
        200
    );

    let r = run(with_table().args([
        "pause",
        "--group",
        "workers",
        "--group",
        "db",
        "--reason",
        "kernel regression",
        // 'db' is neither configured nor stored yet: asked for explicitly.
        "--create",
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("paused 'workers'") && r.stdout.contains("paused 'db'"),
        "{}",
        r.stdout
    );
    // Live: the running server refuses newcomers at once, keeps the holder.
    let r = zincati(addr, "pre-reboot", "w2", "workers").await;
    assert_eq!((r.status, r.kind()), (423, "group_paused".to_string()));
    assert!(r.json()["value"].as_str().unwrap().contains("by alice"));
    assert_eq!(
        zincati(addr, "pre-reboot", "w1", "workers").await.status,
        200
    );

    let r = run(with_table().args(["status"])).await;
    assert!(
        r.stdout.contains("workers is paused by alice since"),
        "{}",
        r.stdout
    );
    let row = r.stdout.lines().find(|l| l.starts_with("workers")).unwrap();
    assert!(row.contains("paused") && row.contains("w1"), "{row}");
    let r = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let workers = &status["groups"][0];
    assert_eq!(workers["state"], "paused");
    assert_eq!(workers["paused_by_person"]["reason"], "kernel regression");
    assert_eq!(workers["paused_by_person"]["by"], "alice");

    // The holder's steady-state releases while paused; resume opens the
    // group, which then settles after that release.
    assert_eq!(
        zincati(addr, "steady-state", "w1", "workers").await.status,
        200
    );
    let r = run(with_table().args(["resume", "--all"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("group(s) stored") && r.stdout.contains("never"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("resumed 'workers'") && r.stdout.contains("resumed 'db'"),
        "{}",
        r.stdout
    );
    let r = zincati(addr, "pre-reboot", "w2", "workers").await;
    assert_eq!((r.status, r.kind()), (423, "settling".to_string()));
    let r = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(status["groups"][0]["state"], "settling");
    assert_eq!(status["groups"][0]["settle_seconds"], 600);
    assert!(
        status["groups"][0]["settles_until"]
            .as_str()
            .unwrap()
            .ends_with('Z')
    );
    let r = run(with_table().args(["resume", "--group", "workers"])).await;
    assert_eq!(
        r.stdout,
        "'workers' was not paused by a person: it grants reboot slots again\n"
    );

    // A person's resume does not lift an alarm's pause, and says so.
    let store = fleetlock::store::dynamodb::DynamoStore::new(
        fleetlock::aws::dynamodb_client(&fleetlock::aws::load_config().await),
        &table,
    );
    let db = fleetlock::domain::input::GroupName::parse("db").unwrap();
    fleetlock::domain::store::Decisions::pause_for_alarm(&store, &db, "api-5xx")
        .await
        .unwrap();
    assert!(
        run(with_table().args(["pause", "--group", "db", "--reason", "x"]))
            .await
            .ok
    );
    let r = run(with_table().args(["resume", "--group", "db"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "resumed 'db' (cleared the pause by alice); still paused while alarm(s) api-5xx are in ALARM\n"
    );
    child.kill().await.unwrap();
}

/// `begin-rollout` as an operator runs it, against the server a stock
/// Zincati calls: the canary goes alone, the rest go; begun again, the next
/// node is a canary once the nodes out are back; a typo is refused.
#[tokio::test]
async fn operators_begin_a_rollout_and_the_next_node_is_a_canary() {
    local_dynamodb_endpoint();
    let table = unique_table_name("rollout");
    let with_table = || {
        let mut command = on_table(&table);
        command
            .env("FLEETLOCK_GROUPS", "default=1,workers=3")
            .env("FLEETLOCK_CANARY", "workers=1m");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    let r = run(with_table().args(["begin-rollout", "--group", "workers"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("no node has taken a slot of 'workers' yet"),
        "{}",
        r.stdout
    );
    let r = run(with_table().args(["begin-rollout", "--group", "wrokers"])).await;
    assert!(!r.ok);
    assert!(r.stderr.contains("did you mean 'workers'"), "{}", r.stderr);

    let (mut child, addr) = serve(&mut with_table()).await;
    assert_eq!(
        zincati(addr, "pre-reboot", "c", "workers").await.status,
        200
    );
    let r = zincati(addr, "pre-reboot", "a", "workers").await;
    assert_eq!((r.status, r.kind()), (423, "waiting_for_wave".to_string()));
    let r = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    assert!(r.ok, "{}", r.stderr);
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(status["groups"][0]["rollout"]["wave_out"], "the canary");
    assert_eq!(status["groups"][0]["rollout"]["grants"], 1);

    let r = run(with_table().args(["begin-rollout", "--group", "workers"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("began a new rollout of 'workers'")
            && r.stdout.contains("the 1m bake")
            && r.stdout.contains("the 1 node out now is back"),
        "{}",
        r.stdout
    );
    let r = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(status["groups"][0]["rollout"]["grants"], 0);
    assert_eq!(
        status["groups"][0]["rollout"]["wave_out"],
        "what was out before this rollout began"
    );
    let r = zincati(addr, "pre-reboot", "a", "workers").await;
    assert!(
        r.json()["value"]
            .as_str()
            .unwrap()
            .contains("what was out before this rollout began is not back in service yet"),
        "{}",
        r.json()
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_mistyped_group_is_refused_with_the_closest_name_and_nothing_is_created() {
    local_dynamodb_endpoint();
    let table = unique_table_name("typo");
    let with_table = || {
        let mut command = on_table(&table);
        command
            .env("FLEETLOCK_GROUPS", "default=1,workers=2")
            .env("USER", "alice");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    let r = run(with_table().args(["pause", "--group", "wrokers", "--reason", "x"])).await;
    assert!(!r.ok);
    assert_eq!(
        r.stderr.trim_end(),
        format!(
            "fleetlock: group 'wrokers' is neither stored in table '{table}' nor configured \
             (did you mean 'workers'?); nothing changed: to pause a group no node has used yet, \
             add --create"
        )
    );
    let r = run(with_table().args(["resume", "--group", "wrokers"])).await;
    assert!(
        !r.ok && r.stderr.contains("nothing is paused there"),
        "{}",
        r.stderr
    );
    // A configured group that no node has used yet is paused as asked.
    let r = run(with_table().args(["pause", "--group", "workers", "--reason", "x"])).await;
    assert!(r.ok, "{}", r.stderr);
    let r = run(with_table().arg("status")).await;
    assert!(!r.stdout.contains("wrokers"), "{}", r.stdout);
    // A release in a group no node ever held a slot in is a typo too (the
    // pause above stored 'workers').
    let r = run(with_table().args(["release", "--group", "wrokers", "--id", "n1"])).await;
    assert!(!r.ok);
    assert_eq!(
        r.stderr.trim_end(),
        format!(
            "fleetlock: group 'wrokers' is not stored in table '{table}': no node has held a \
             slot there (did you mean 'workers'?); nothing changed: check the group with \
             'fleetlock status'"
        )
    );
    // Without the configuration, only a stored group is taken as known.
    let r = run(on_table(&table).args(["pause", "--group", "default", "--reason", "x"])).await;
    assert!(
        !r.ok
            && r.stderr
                .contains("the configuration was not read (pass --function NAME"),
        "{}",
        r.stderr
    );
    let r = run(on_table(&table)
        .env("USER", "alice")
        .args(["pause", "--group", "new-one", "--reason", "x", "--create"]))
    .await;
    assert!(
        r.ok && r.stdout.contains("paused 'new-one'"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn bad_pause_input_is_refused_and_changes_nothing() {
    local_dynamodb_endpoint();
    let table = unique_table_name("bad-pause");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    let long = "x".repeat(201);
    for (args, says) in [
        (
            vec!["pause", "--group", "default", "--reason", ""],
            "the reason is empty",
        ),
        (
            vec!["pause", "--group", "default", "--reason", "   "],
            "the reason is empty",
        ),
        (
            vec!["pause", "--group", "default", "--reason", &long],
            "longer than 200",
        ),
        (
            vec!["pause", "--group", "default", "--reason", "a\nb"],
            "control character",
        ),
        (
            vec!["pause", "--group", "bad_group", "--reason", "x"],
            "group",
        ),
        (
            vec!["pause", "--group", "default", "--reason", "x", "--by", ""],
            "--by",
        ),
        (vec!["pause", "--reason", "x"], "needs --group"),
        (vec!["resume", "--group", "no/slash"], "group"),
    ] {
        let r = run(with_table().args(&args)).await;
        assert!(!r.ok, "{args:?} should fail");
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    let r = run(with_table().arg("status")).await;
    assert!(
        r.stdout.contains("no group has been used yet"),
        "{}",
        r.stdout
    );
    // And a bad settle time stops the server before it serves.
    let r = run(fleetlock()
        .env("FLEETLOCK_SETTLE", "default=soon")
        .arg("serve"))
    .await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("FLEETLOCK_SETTLE: 'default'"),
        "{}",
        r.stderr
    );
}

/// A stand-in for the Lambda API on loopback: answers GetFunctionConfiguration
/// with these environment variables, and records the paths asked.
async fn lambda_api_stand_in(variables: serde_json::Value) -> (String, Arc<Mutex<Vec<String>>>) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let asked = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&asked);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (variables, seen) = (variables.clone(), Arc::clone(&seen));
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        seen.lock().unwrap().push(request.uri().path().to_owned());
                        let body = serde_json::json!({
                            "FunctionName": "fleetlock",
                            "FunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:fleetlock",
                            "Environment": { "Variables": variables.clone() },
                        });
                        async move {
                            let mut response =
                                hyper::Response::new(Full::new(Bytes::from(body.to_string())));
                            response
                                .headers_mut()
                                .insert("content-type", "application/json".parse().unwrap());
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (url, asked)
}

#[tokio::test]
async fn status_reads_the_deployed_configuration_and_shows_windows() {
    local_dynamodb_endpoint();
    let table = unique_table_name("deployed");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    // Items for two groups: one with windows, one settling.
    let (mut child, addr) =
        serve(with_table().env("FLEETLOCK_GROUPS", "default=1,workers=2")).await;
    assert_eq!(
        zincati(addr, "pre-reboot", "d1", "default").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "pre-reboot", "w1", "workers").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "steady-state", "w1", "workers").await.status,
        200
    );
    child.kill().await.unwrap();

    let every_day = "Mon,Tue,Wed,Thu,Fri,Sat,Sun";
    let (url, asked) = lambda_api_stand_in(serde_json::json!({
        "FLEETLOCK_TABLE": table,
        "FLEETLOCK_GROUPS": "default=1,workers=2",
        "FLEETLOCK_SETTLE": "workers=1h",
        "FLEETLOCK_WINDOWS": format!("default: days={every_day} start_time=23:00 length_minutes=1"),
        "FLEETLOCK_TIME_ZONE": "Europe/Berlin",
        "FLEETLOCK_CLIENTS": "",
    }))
    .await;
    let r = run(with_table().env("AWS_ENDPOINT_URL_LAMBDA", &url).args([
        "status",
        "--function",
        "fleetlock",
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        asked.lock().unwrap().as_slice(),
        ["/2015-03-31/functions/fleetlock/configuration"]
    );
    assert!(r.stdout.contains("workers settles until"), "{}", r.stdout);
    let windows = r
        .stdout
        .lines()
        .find(|l| l.starts_with("default windows (Europe/Berlin)"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        windows.contains("start_time=23:00 length_minutes=1"),
        "{windows}"
    );
    // 23:00 in Berlin is 22:00 (CET) or 21:00 (CEST) UTC: the zone database
    // is the binary's own, whatever the host has.
    assert!(
        windows.contains("T22:0") || windows.contains("T21:0"),
        "{windows}"
    );

    // The window is open only from 23:00 to 23:01 in Berlin, every day.
    let berlin_state = || {
        let local = jiff::ZonedDateTime::now().in_tz("Europe/Berlin").unwrap();
        if (local.hour(), local.minute()) == (23, 0) {
            ("open", "23:01")
        } else {
            ("closed", "23:00")
        }
    };
    let before = berlin_state();
    let r = run(with_table()
        .env("AWS_ENDPOINT_URL_LAMBDA", &url)
        .env("FLEETLOCK_FUNCTION", "fleetlock")
        .args(["status", "--json", "--group", "default"]))
    .await;
    let after = berlin_state();
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let group = &status["groups"][0];
    assert_eq!(group["configured_slots"], 1);
    assert_eq!(group["maintenance_windows"]["time_zone"], "Europe/Berlin");
    let state = group["maintenance_windows"]["state"].as_str().unwrap();
    let changes_at = group["maintenance_windows"]["changes_at_local"]
        .as_str()
        .unwrap();
    assert!(changes_at.ends_with("Europe/Berlin"), "{changes_at}");
    // Unless the call straddled 23:00 or 23:01, the state is the one the
    // clock gives, and it changes at the window's next edge.
    if before == after {
        let (expected_state, next_edge) = before;
        assert_eq!(state, expected_state, "{}", r.stdout);
        assert!(
            changes_at.contains(&format!(" {next_edge} Europe/Berlin")),
            "{changes_at}"
        );
    }
}

#[tokio::test]
async fn the_zone_database_is_the_binarys_own_not_the_hosts() {
    local_dynamodb_endpoint();
    // A host database whose Europe/Berlin is really UTC: were the binary to
    // read the host's zoneinfo, 23:00 Berlin would come out as 23:00 UTC.
    let fake = std::env::temp_dir().join(format!("fake-zoneinfo-{}", std::process::id()));
    std::fs::create_dir_all(fake.join("Europe")).unwrap();
    std::fs::write(fake.join("Europe/Berlin"), UTC_TZIF).unwrap();
    std::fs::write(fake.join("UTC"), UTC_TZIF).unwrap();
    let table = unique_table_name("tzdb");
    let with_table = || {
        let mut command = on_table(&table);
        command
            .env("TZDIR", &fake)
            .env("FLEETLOCK_GROUPS", "default=1")
            .env("FLEETLOCK_TIME_ZONE", "Europe/Berlin")
            .env(
                "FLEETLOCK_WINDOWS",
                "default: days=Mon,Tue,Wed,Thu,Fri,Sat,Sun start_time=23:00 length_minutes=1",
            );
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    assert!(
        run(with_table().args(["pause", "--group", "default", "--reason", "x"]))
            .await
            .ok
    );
    let r = run(with_table().arg("status")).await;
    let windows = r
        .stdout
        .lines()
        .find(|l| l.starts_with("default windows"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(
        windows.contains("T22:0") || windows.contains("T21:0"),
        "{windows}"
    );
    assert!(
        !windows.contains("T23:0"),
        "the host's (fake) zoneinfo was used: {windows}"
    );
    std::fs::remove_dir_all(&fake).ok();
}

/// A minimal TZif (version 1) file for UTC: no transitions, one type, "UTC".
const UTC_TZIF: &[u8] = &[
    b'T', b'Z', b'i', b'f', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, //
    0, 0, 0, 0, // isutcnt
    0, 0, 0, 0, // isstdcnt
    0, 0, 0, 0, // leapcnt
    0, 0, 0, 0, // timecnt
    0, 0, 0, 1, // typecnt
    0, 0, 0, 4, // charcnt
    0, 0, 0, 0, 0, 0, // ttinfo: utoff 0, isdst 0, desigidx 0
    b'U', b'T', b'C', 0,
];

#[tokio::test]
async fn a_slot_count_one_item_cannot_hold_stops_serve_at_start() {
    let r = run(fleetlock()
        .env("FLEETLOCK_GROUPS", "default=1,big=501")
        .args(["serve", "--listen", "127.0.0.1:0"]))
    .await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("FLEETLOCK_GROUPS: slot count 501 of 'big' is above 500"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn operators_forget_groups_nobody_uses_and_see_every_id_as_it_is() {
    local_dynamodb_endpoint();
    let table = unique_table_name("forget");
    let with_table = || on_table(&table);
    // The configuration as deployed, in the shell: status and forget read it.
    let configured = || {
        let mut command = with_table();
        command
            .env("FLEETLOCK_GROUPS", "default=1,*=1")
            .env("FLEETLOCK_MAX_WILDCARD_GROUPS", "2");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    let (client, _) = fleetlock::test_support::counted_client().await;
    // Holders an older version granted: an id with a zero-width space, and
    // one of 200 bytes in a group only '*' covers.
    let long_id = "l".repeat(200);
    for (group, holder) in [
        ("default", "node\u{200b}-1".to_owned()),
        ("legacy", long_id.clone()),
    ] {
        client
            .put_item()
            .table_name(&table)
            .item(
                "group",
                aws_sdk_dynamodb::types::AttributeValue::S(group.into()),
            )
            .item(
                "holder_count",
                aws_sdk_dynamodb::types::AttributeValue::N("1".into()),
            )
            .item(
                format!("h:{holder}"),
                aws_sdk_dynamodb::types::AttributeValue::N("1000".into()),
            )
            .send()
            .await
            .unwrap();
    }

    let (mut child, addr) = serve(configured().stderr(Stdio::piped())).await;
    let answer = |r: crate::helpers::HttpResponse| (r.status, r.kind());
    assert_eq!(
        zincati(addr, "pre-reboot", "a1", "junk-a").await.status,
        200
    );
    assert_eq!(
        zincati(addr, "pre-reboot", "b1", "junk-b").await.status,
        200
    );
    assert_eq!(
        answer(zincati(addr, "pre-reboot", "c1", "junk-c").await),
        (403, "too_many_groups".into())
    );
    // Such an id is no longer taken anew, but its holder can give it back.
    assert_eq!(
        answer(zincati(addr, "pre-reboot", "node\u{200b}-2", "default").await),
        (400, "invalid_id".into())
    );
    assert_eq!(
        answer(zincati(addr, "pre-reboot", &long_id, "legacy").await),
        (400, "invalid_id".into())
    );
    let r = zincati(addr, "steady-state", &long_id, "legacy").await;
    assert_eq!(
        (r.status, r.json()["outcome"].clone()),
        (200, "released".into())
    );

    // status: the invisible character escaped, the count of '*' groups.
    let r = run(configured().arg("status")).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("node\\u{200b}-1"), "{}", r.stdout);
    assert!(!r.stdout.contains('\u{200b}'), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("2 of 2 allowed group(s) exist that only '*' covers"),
        "{}",
        r.stdout
    );
    let r = run(configured().args(["status", "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(
        status["wildcard_groups"],
        serde_json::json!({"counted": 2, "limit": 2})
    );
    assert_eq!(status["groups"][0]["holders"][0]["id"], "node\u{200b}-1");
    assert_eq!(
        status["groups"][0]["holders"][0]["id_shown"],
        "node\\u{200b}-1"
    );
    // And release takes the id as status shows it.
    let r =
        run(with_table().args(["release", "--group", "default", "--id", "node\\u{200b}-1"])).await;
    assert!(
        r.ok && r.stdout.contains("released 'node\\u{200b}-1'"),
        "{}{}",
        r.stdout,
        r.stderr
    );

    // forget: refused while a slot is held, for a named group, for a typo.
    let r = run(configured().args(["forget", "--group", "junk-a"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("group 'junk-a' was kept: it holds 1 slot (a1): release it first"),
        "{}",
        r.stderr
    );
    let r = run(configured().args(["forget", "--group", "default"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr
            .contains("is named in the function's FLEETLOCK_GROUPS"),
        "{}",
        r.stderr
    );
    let r = run(configured().args(["forget", "--group", "junk-x"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("group 'junk-x' is not stored in table"),
        "{}",
        r.stderr
    );

    assert_eq!(
        zincati(addr, "steady-state", "a1", "junk-a").await.status,
        200
    );
    let r = run(configured().args(["forget", "--group", "junk-a"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout.trim(),
        "forgot group 'junk-a': its item is removed, and it no longer counts toward \
         FLEETLOCK_MAX_WILDCARD_GROUPS"
    );
    // Its place is free for a new group: at once in a process that has not
    // seen the list full; a process that refused a group takes the list as
    // full for a minute (WILDCARD_FULL_REMEMBERED) rather than pay for a
    // write to it on every refused call.
    assert_eq!(
        zincati(addr, "pre-reboot", "c1", "junk-c").await.kind(),
        "too_many_groups"
    );
    let (mut fresh, fresh_addr) = serve(&mut configured()).await;
    assert_eq!(
        zincati(fresh_addr, "pre-reboot", "c1", "junk-c")
            .await
            .status,
        200
    );
    fresh.kill().await.unwrap();
    // A steady-state still takes an id under 0.2's rule, bidi controls
    // and all; its log line shows the id escaped, never reordering the
    // text of the line around it.
    let r = zincati(addr, "steady-state", "\u{202e}1-edon", "default").await;
    assert_eq!(r.status, 200);
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let logs = String::from_utf8_lossy(&output.stderr);
    assert!(logs.contains("\\u{202e}1-edon"), "{logs}");
    assert!(!logs.contains('\u{202e}'), "{logs}");

    // Past 20 idle groups, status counts the rest; --all lists them.
    let store = fleetlock::store::dynamodb::DynamoStore::new(client, &table);
    for n in 0..25 {
        let name = fleetlock::domain::input::GroupName::parse(&format!("idle{n:02}")).unwrap();
        let node = fleetlock::domain::input::NodeId::parse("n").unwrap();
        let rules = fleetlock::domain::lock::GroupRules {
            slots: 1,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: None,
            drain: None,
            return_timeout: None,
            zone: None,
            canary: None,
        };
        let at = fleetlock::domain::time::Timestamp(1_000);
        store.acquire(&name, &node, rules, at).await.unwrap();
        store.release(&name, &node, false, at).await.unwrap();
    }
    let r = run(with_table().arg("status")).await;
    assert!(
        r.stdout.contains("junk-b") && r.stdout.contains("junk-c"),
        "{}",
        r.stdout
    );
    let hidden = r
        .stdout
        .lines()
        .find(|l| l.starts_with("... and "))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    // 25 idle groups, 'default' and 'legacy' idle too: 27, of which 20 shown.
    assert!(
        hidden.starts_with("... and 7 more group(s) that hold nothing"),
        "{hidden}"
    );
    let r = run(with_table().args(["status", "--all"])).await;
    assert!(
        r.stdout.contains("idle24") && !r.stdout.contains("... and "),
        "{}",
        r.stdout
    );
}

#[tokio::test]
async fn config_check_refuses_a_bad_setting_before_anything_is_deployed() {
    let r = run(fleetlock()
        .env("FLEETLOCK_GROUPS", "default=1,*=2")
        .env("FLEETLOCK_MAX_WILDCARD_GROUPS", "5")
        .env("FLEETLOCK_ALARM_PAUSES", "api-5xx=*")
        .args(["config", "check"]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(r.stdout.contains("at most 5 such groups"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("alarms that pause groups while in ALARM: api-5xx"),
        "{}",
        r.stdout
    );
    for (name, value, says) in [
        ("FLEETLOCK_GROUPS", "default=501", "above 500"),
        ("FLEETLOCK_MAX_WILDCARD_GROUPS", "0", "not from 1 to 2000"),
        (
            "FLEETLOCK_ALARM_PAUSES",
            "no-groups",
            "FLEETLOCK_ALARM_PAUSES",
        ),
    ] {
        let r = run(fleetlock().env(name, value).args(["config", "check"])).await;
        assert!(!r.ok, "{name}={value} passed");
        assert!(
            r.stderr.contains("invalid configuration") && r.stderr.contains(says),
            "{}",
            r.stderr
        );
    }
}

/// `config check --samconfig` reads what `sam deploy` would deploy: the
/// overrides of the config-env over the template's defaults; a typo in a
/// parameter's name, or a value the function would refuse, stops it with
/// the parameter named, before anything reaches AWS.
#[tokio::test]
async fn config_check_reads_a_samconfig_as_sam_deploy_would() {
    let dir = std::env::temp_dir().join(format!("fleetlock-samconfig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let samconfig = dir.join("samconfig.toml");
    let client = "fleet:default,db:00112233445566778899aabbccddeeff:\
                  0000000000000000000000000000000000000000000000000000000000000000";
    std::fs::write(
        &samconfig,
        format!(
            "version = 0.1\n\
             [default.deploy.parameters]\n\
             parameter_overrides = \"Groups=\\\"default=1,db=1\\\" Clients={client} \
             MaintenanceWindows=\\\"db: days=Sat start_time=22:00 length_minutes=120\\\"\"\n\
             [typo.deploy.parameters]\n\
             parameter_overrides = [\"Group=db=1\"]\n\
             [wrong.deploy.parameters]\n\
             parameter_overrides = [\"Settle=db=soon\", \"Groups=db=1\", \"Lease=db=10m\"]\n\
             [leased.deploy.parameters]\n\
             parameter_overrides = [\"Groups=db=1\", \"Lease=db=6h\", \"Clients={client}\"]\n\
             [undrained.deploy.parameters]\n\
             parameter_overrides = [\"Groups=db=1\", \"Drain=db=15m\", \"Clients={client}\"]\n\
             [drained.deploy.parameters]\n\
             parameter_overrides = [\"Groups=db=1\", \"Drain=db=15m:grant\", \"SlotEvents=true\", \"Clients={client}\"]\n\
             [returning.deploy.parameters]\n\
             parameter_overrides = [\"Groups=db=1\", \"Return=db=20m\", \"SlotEvents=true\", \"Clients={client}\"]\n\
             [unreturned.deploy.parameters]\n\
             parameter_overrides = [\"Groups=db=1\", \"Return=db=20m\", \"Clients={client}\"]\n"
        ),
    )
    .unwrap();
    let path = samconfig.to_str().unwrap();
    let good = run(fleetlock().args([
        "config",
        "check",
        "--samconfig",
        path,
        "--from",
        "2026-03-27T12:00:00Z",
    ]))
    .await;
    assert!(good.ok, "{}", good.stderr);
    for line in [
        format!("configuration {path} [default] deploys: valid"),
        "set there: Groups, Clients, MaintenanceWindows; the rest are the defaults".to_owned(),
        "  db: 1 slot, settle 0s, reboots only in days=Sat start_time=22:00 \
         length_minutes=120 (UTC): closed, next opens 2026-03-28T22:00:00Z"
            .to_owned(),
        "clients: fleet".to_owned(),
    ] {
        assert!(
            good.stdout.lines().any(|l| l == line),
            "{line:?} not in\n{}",
            good.stdout
        );
    }
    let typo = run(fleetlock().args([
        "config",
        "check",
        "--samconfig",
        path,
        "--config-env",
        "typo",
    ]))
    .await;
    assert!(!typo.ok);
    assert!(
        typo.stderr.contains(
            "sets 'Group', which the template has no parameter of (did you mean 'Groups'?)"
        ),
        "{}",
        typo.stderr
    );
    let wrong = run(fleetlock().args([
        "config",
        "check",
        "--samconfig",
        path,
        "--config-env",
        "wrong",
    ]))
    .await;
    assert!(!wrong.ok);
    assert!(wrong.stderr.contains(", 3 errors:"), "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains(
            "\n  parameter Lease (FLEETLOCK_LEASE): 'db': lease '10m' is shorter than 30m"
        ),
        "{}",
        wrong.stderr
    );
    assert!(
        wrong
            .stderr
            .contains("\n  parameter Settle (FLEETLOCK_SETTLE): "),
        "{}",
        wrong.stderr
    );
    assert!(
        wrong
            .stderr
            .contains("\n  parameter Clients (FLEETLOCK_CLIENTS) is empty"),
        "{}",
        wrong.stderr
    );
    let leased = run(fleetlock().args([
        "config",
        "check",
        "--samconfig",
        path,
        "--config-env",
        "leased",
        "--env",
    ]))
    .await;
    assert!(leased.ok, "{}", leased.stderr);
    assert!(
        leased
            .stdout
            .lines()
            .any(|l| l == "FLEETLOCK_LEASE='db=6h'"),
        "{}",
        leased.stdout
    );
    // A drain gate without slot events: the rule would refuse the deploy.
    let config_env = |name: &'static str| {
        let mut command = fleetlock();
        command.args(["config", "check", "--samconfig", path, "--config-env", name]);
        command
    };
    let undrained = run(&mut config_env("undrained")).await;
    assert!(!undrained.ok);
    assert!(
        undrained
            .stderr
            .contains("parameter Drain needs SlotEvents=true"),
        "{}",
        undrained.stderr
    );
    let drained = run(&mut config_env("drained")).await;
    assert!(drained.ok, "{}", drained.stderr);
    assert!(
        drained.stdout.contains(
            "db: 1 slot, settle 0s, drain gate 15m then grant (a slot is granted once its \
             node's drain is confirmed)"
        ),
        "{}",
        drained.stdout
    );
    // A return gate: the same rule, and the summary says what it does.
    let unreturned = run(&mut config_env("unreturned")).await;
    assert!(
        !unreturned.ok
            && unreturned
                .stderr
                .contains("parameter Return needs SlotEvents=true"),
        "{}",
        unreturned.stderr
    );
    let returning = run(&mut config_env("returning")).await;
    assert!(returning.ok, "{}", returning.stderr);
    assert!(
        returning.stdout.contains(
            "db: 1 slot, settle 0s, return gate 20m (a released slot is free once its node's \
             return is confirmed; past the timeout the group stops)"
        ),
        "{}",
        returning.stdout
    );
    // Nothing of it touched AWS: no region, no credentials were needed.
    let mixed = run(fleetlock().args(["config", "check", "--config-env", "typo"])).await;
    assert!(!mixed.ok);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A stand-in for the Resource Groups Tagging API: the instances tagged
/// with a Zincati id, answered for the ids a GetResources asks about; the
/// request bodies it was sent.
async fn tagging_stand_in(
    tagged: &'static [(&'static str, &'static str, &'static str)],
) -> (String, Arc<Mutex<Vec<serde_json::Value>>>) {
    let asked: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let url = crate::helpers::stand_in(move |parts, body| {
        let target = parts.headers.get("x-amz-target").and_then(|v| v.to_str().ok());
        assert_eq!(target, Some("ResourceGroupsTaggingAPI_20170126.GetResources"));
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
        seen.lock().unwrap().push(request.clone());
        let wanted: Vec<&str> = request["TagFilters"][0]["Values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        let mappings: Vec<_> = tagged
            .iter()
            .filter(|(id, _, _)| wanted.contains(id))
            .map(|(id, instance, name)| {
                serde_json::json!({
                    "ResourceARN": format!("arn:aws:ec2:eu-west-1:123456789012:instance/{instance}"),
                    "Tags": [
                        {"Key": "Name", "Value": name},
                        {"Key": "fleetlock:zincati-id", "Value": id},
                    ],
                })
            })
            .collect();
        let answer = serde_json::json!({"ResourceTagMappingList": mappings, "PaginationToken": ""});
        (200, "application/x-amz-json-1.1", answer.to_string().into_bytes())
    })
    .await;
    (url, asked)
}

/// `status --hosts` names the host behind each holder's id: from the
/// instances' own tags (one GetResources for the holders' ids, nothing on
/// the protocol's path) or from a host file; `hosts ID` does the same for
/// an id read in a log line or a slot event.
#[tokio::test]
async fn status_and_hosts_name_the_host_behind_each_id() {
    let (store, _) = crate::helpers::dynamo_store("hosts").await;
    let rules = crate::helpers::rules(3, Duration::ZERO);
    let workers = fleetlock::domain::input::GroupName::parse("workers").unwrap();
    for id in [
        "8f040e49ad9a45a8b0c617313becf153",
        "975228d46dc94622b9bbe16671e2b58d",
    ] {
        let node = fleetlock::domain::input::NodeId::parse(id).unwrap();
        store
            .acquire(
                &workers,
                &node,
                rules,
                fleetlock::domain::time::Timestamp::now(),
            )
            .await
            .unwrap();
    }
    let (tagging, asked) = tagging_stand_in(&[(
        "8f040e49ad9a45a8b0c617313becf153",
        "i-0123456789abcdef0",
        "worker-7",
    )])
    .await;
    let status = |args: &[&str]| {
        let mut command = fleetlock();
        command
            .env("FLEETLOCK_TABLE", store.table())
            .env("AWS_ENDPOINT_URL_RESOURCE_GROUPS_TAGGING_API", &tagging)
            .env("RUST_LOG", "fleetlock=debug")
            .args(args);
        command
    };
    let r = run(&mut status(&["status", "--hosts", "tags"])).await;
    assert!(r.ok, "{}", r.stderr);
    let header = r.stdout.lines().next().unwrap();
    assert_eq!(header.split_whitespace().last(), Some("HOST"), "{header}");
    let row = |id: &str| {
        r.stdout
            .lines()
            .find(|l| l.contains(id))
            .unwrap()
            .to_owned()
    };
    assert!(
        row("8f040e49").ends_with("worker-7 (i-0123456789abcdef0)"),
        "{}",
        r.stdout
    );
    assert!(
        row("975228d4").ends_with("  ?"),
        "an untagged id: {}",
        r.stdout
    );
    assert!(operations(&r.stderr).contains("tag:GetResources"));
    let request = asked.lock().unwrap()[0].clone();
    assert_eq!(
        request["ResourceTypeFilters"],
        serde_json::json!(["ec2:instance"])
    );
    assert_eq!(request["TagFilters"][0]["Key"], "fleetlock:zincati-id");
    assert_eq!(
        request["TagFilters"][0]["Values"].as_array().unwrap().len(),
        2,
        "the holders' ids, once each: {request}"
    );
    // Without --hosts, no tag is read.
    let before = asked.lock().unwrap().len();
    assert!(run(&mut status(&["status"])).await.ok);
    assert_eq!(asked.lock().unwrap().len(), before);

    // A host file, and JSON.
    let file = std::env::temp_dir().join(format!("fleetlock-hosts-{}", std::process::id()));
    std::fs::write(
        &file,
        "# id  host\n975228d46dc94622b9bbe16671e2b58d  db-1.example.com\n",
    )
    .unwrap();
    let r = run(status(&["status", "--json"]).env("FLEETLOCK_HOSTS", &file)).await;
    assert!(r.ok, "{}", r.stderr);
    let json: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let holders = json["groups"][0]["holders"].as_array().unwrap().clone();
    let host_of = |id: &str| {
        holders
            .iter()
            .find(|h| h["id"] == id)
            .map(|h| h["host"].clone())
            .unwrap()
    };
    assert_eq!(
        host_of("975228d46dc94622b9bbe16671e2b58d"),
        serde_json::json!({"instance": null, "name": "db-1.example.com"})
    );
    assert_eq!(
        host_of("8f040e49ad9a45a8b0c617313becf153"),
        serde_json::Value::Null
    );

    // `hosts` for the ids of a log line.
    let r = run(&mut status(&[
        "hosts",
        "8f040e49ad9a45a8b0c617313becf153",
        "00000000000000000000000000000000",
        "--hosts",
        "tags",
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout.lines().next().unwrap(),
        "8f040e49ad9a45a8b0c617313becf153  worker-7 (i-0123456789abcdef0)"
    );
    assert!(
        r.stdout.lines().nth(1).unwrap().contains("(unknown:"),
        "{}",
        r.stdout
    );
    // A host file that is wrong stops the command before AWS is asked.
    std::fs::write(&file, "a b\na c\n").unwrap();
    let r = run(status(&["status", "--hosts"]).arg(&file)).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("line 2: id 'a' is listed twice"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("aws request"), "{}", r.stderr);
    std::fs::remove_file(&file).unwrap();
}

/// `exclude` and `include` as the docs show them: one node sits out, the
/// status says who and why, a typo or bad input changes nothing.
#[tokio::test]
async fn operators_exclude_and_include_a_node() {
    local_dynamodb_endpoint();
    let table = unique_table_name("exclude");
    let with_table = || {
        let mut command = on_table(&table);
        command
            .env("FLEETLOCK_GROUPS", "default=1,workers=3")
            .env("USER", "alice");
        command
    };
    assert!(run(with_table().arg("create-table")).await.ok);
    let id = "8f040e49ad9a45a8b0c617313becf153";
    let r = run(with_table().args([
        "exclude", "--group", "wrokers", "--id", id, "--reason", "disk",
    ]))
    .await;
    assert!(
        !r.ok && r.stderr.contains("(did you mean 'workers'?)"),
        "{}",
        r.stderr
    );
    let r =
        run(with_table().args(["exclude", "--group", "workers", "--id", id, "--reason", ""])).await;
    assert!(!r.ok && r.stderr.contains("--reason: "), "{}", r.stderr);
    let r = run(with_table().args([
        "exclude",
        "--group",
        "workers",
        "--id",
        id,
        "--reason",
        "disk replacement",
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!(
            "excluded '{id}' from group 'workers': it takes no new reboot slot while the rest \
             of the group goes on\n"
        )
    );
    let status = run(with_table().arg("status")).await;
    assert!(
        status.stdout.lines().any(|l| l
            .starts_with(&format!("workers excludes '{id}' by alice since "))
            && l.ends_with(": disk replacement")),
        "{}",
        status.stdout
    );
    let json = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["groups"][0]["excluded"][0]["id"], id);
    assert_eq!(json["groups"][0]["excluded"][0]["by"], "alice");
    let again =
        run(with_table().args(["exclude", "--group", "workers", "--id", id, "--reason", "x"]))
            .await;
    assert!(
        again.ok && again.stdout.contains("was already excluded"),
        "{}",
        again.stdout
    );
    let r = run(with_table().args(["include", "--group", "workers", "--id", id])).await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        format!("included '{id}' in group 'workers' again: it may take reboot slots\n")
    );
    let r = run(with_table().args(["include", "--group", "workers", "--id", id])).await;
    assert!(
        r.ok && r.stdout.contains("was not excluded"),
        "{}",
        r.stdout
    );
    let status = run(with_table().arg("status")).await;
    assert!(!status.stdout.contains("excludes"), "{}", status.stdout);

    // At the limit: exit 1, one line that says why and what to do, and the
    // group as it was.
    for n in 0..10 {
        let r = run(with_table().args([
            "exclude",
            "--group",
            "workers",
            "--id",
            &format!("node-{n}"),
            "--reason",
            "rack move",
        ]))
        .await;
        assert!(r.ok, "{}", r.stderr);
    }
    let full = run(with_table().args([
        "exclude", "--group", "workers", "--id", id, "--reason", "disk",
    ]))
    .await;
    assert_eq!(full.code, Some(1), "{}", full.stderr);
    assert_eq!(
        full.stderr,
        "fleetlock: group 'workers' already excludes 10 nodes, the most it may; nothing \
         changed: include one of them first\n"
    );
    let json = run(with_table().args(["status", "--json", "--group", "workers"])).await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let excluded = json["groups"][0]["excluded"].as_array().unwrap();
    assert_eq!(excluded.len(), 10);
    assert!(excluded.iter().all(|e| e["id"] != id), "{excluded:?}");
}

/// `fleetlock id` prints what Zincati sends for a machine id, and refuses a
/// machine id that is not one in one line.
#[tokio::test]
async fn id_prints_the_id_zincati_sends() {
    // Known answers: Python's hmac, and systemd-id128 on a Debian host.
    for (machine, zincati) in [
        (
            "e0f3745b108f471cbd4883c6fbed8cdd",
            "8f040e49ad9a45a8b0c617313becf153",
        ),
        (
            "3d1219c7c4c5404aaa1f6d2a48adfda4",
            "975228d46dc94622b9bbe16671e2b58d",
        ),
    ] {
        let r = run(fleetlock().args(["id", "--machine-id", machine])).await;
        assert!(r.ok, "{}", r.stderr);
        assert_eq!(r.stdout, format!("{zincati}\n"));
    }
    let file = std::env::temp_dir().join(format!("fleetlock-id-{}", std::process::id()));
    std::fs::write(&file, "e0f3745b108f471cbd4883c6fbed8cdd\n").unwrap();
    let from_file = run(fleetlock()
        .env("FLEETLOCK_MACHINE_ID_FILE", &file)
        .arg("id"))
    .await;
    assert_eq!(from_file.stdout, "8f040e49ad9a45a8b0c617313becf153\n");
    let job = run(fleetlock()
        .args(["id", "--app", "backup", "--machine-id-file"])
        .arg(&file))
    .await;
    // Computed apart from this code: python3 -c "import hmac, hashlib;
    // d = bytearray(hmac.new(bytes.fromhex('e0f3745b108f471cbd4883c6fbed8cdd'),
    // hashlib.sha256(b'fleetlock lock --app backup').digest()[:16],
    // hashlib.sha256).digest()[:16]); d[6] = d[6] & 15 | 64; d[8] = d[8] & 63 | 128;
    // print(d.hex())"
    assert!(job.ok, "{}", job.stderr);
    assert_eq!(job.stdout, "ee72771354c2431d977a13b522ea6e81\n");
    std::fs::remove_file(&file).unwrap();
    let bad = run(fleetlock().args(["id", "--machine-id", "not-hex"])).await;
    assert!(!bad.ok);
    assert_eq!(
        bad.stderr,
        "fleetlock: --machine-id: a machine id is 32 hexadecimal digits (see /etc/machine-id)\n"
    );
}

/// With `AWS_ENDPOINT_URL_DYNAMODB` (what docs/operating.md recommends),
/// `serve` uses and names that endpoint, not `AWS_ENDPOINT_URL`'s.
#[tokio::test]
async fn serve_names_the_dynamodb_endpoint_it_really_uses() {
    let dynamodb = local_dynamodb_endpoint();
    let table = crate::helpers::table_made_by_the_binary("serve-endpoint").await;
    let mut command = on_table(&table);
    command
        .env("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
        .env("AWS_ENDPOINT_URL_DYNAMODB", &dynamodb)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped());
    // It starts only once its table check reached DynamoDB Local.
    let (mut child, addr) = serve(&mut command).await;
    let r = zincati(addr, "pre-reboot", "endpoint-node", "default").await;
    assert_eq!(r.status, 200, "{:?}", r.json());
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let said = stderr
        .lines()
        .find(|l| l.contains("locks live in DynamoDB"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(said.contains(&dynamodb), "{said}");
    assert!(
        !said.contains("127.0.0.1:9 ") && !said.contains("127.0.0.1:9\""),
        "{said}"
    );
}

/// `serve` says at start where the locks live and warns when Zincati's
/// default group is not configured.
#[tokio::test]
async fn serve_says_where_the_locks_live_and_warns_without_default() {
    local_dynamodb_endpoint();
    let table = unique_table_name("serve-log");
    assert!(run(on_table(&table).arg("create-table")).await.ok);
    for (table, groups, says, warns) in [
        (
            None,
            "default=1",
            "no FLEETLOCK_TABLE: locks live in this process",
            false,
        ),
        (
            Some(table.as_str()),
            "workers=2",
            "locks live in DynamoDB",
            true,
        ),
    ] {
        let mut command = fleetlock();
        command
            .env("FLEETLOCK_GROUPS", groups)
            .env("RUST_LOG", "info")
            .stderr(Stdio::piped());
        if let Some(table) = table {
            command.env("FLEETLOCK_TABLE", table);
        }
        let (mut child, _) = serve(&mut command).await;
        child.start_kill().unwrap();
        let output = child.wait_with_output().await.unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{stderr}");
        if let Some(table) = table {
            assert!(
                stderr.contains(table) && stderr.contains("http://127.0.0.1:"),
                "the table and the endpoint are named: {stderr}"
            );
        }
        assert_eq!(
            stderr.contains("no 'default' group is configured"),
            warns,
            "{stderr}"
        );
    }
}

/// Commands that call AWS, each of a different family.
const AWS_COMMANDS: &[&[&str]] = &[
    &["status"],
    &["create-table"],
    &["release", "--group", "default", "--id", "a"],
    &["pause", "--group", "default", "--reason", "x", "--create"],
    &[
        "hosts",
        "--hosts",
        "tags",
        "0b5c2d9e7f1a4c3b8e6d5f4a3b2c1d0e",
    ],
];

/// Runs each of [`AWS_COMMANDS`] with a home of its own, no AWS profile and
/// `environment` applied, and checks that it fails with `line` alone on
/// stderr: one plain line before any request.
async fn each_aws_command_says(name: &str, environment: impl Fn(&mut Command), line: &str) {
    let home = std::env::temp_dir().join(format!("fleetlock-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    for args in AWS_COMMANDS {
        let mut command = fleetlock();
        command
            .env("FLEETLOCK_TABLE", "locks")
            .env("HOME", &home)
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_CONFIG_FILE")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .args(*args);
        environment(&mut command);
        let r = run(&mut command).await;
        assert!(!r.ok, "{args:?}");
        assert_eq!(r.stderr, format!("fleetlock: {line}\n"), "{args:?}");
    }
    let _ = std::fs::remove_dir_all(&home);
}

/// Without a region a command says so in one line: it never asks the
/// instance metadata service, which on a laptop is seconds of retries and
/// three long warnings before any answer (stderr holds the one line only).
#[tokio::test]
async fn a_command_without_a_region_says_so_in_one_line() {
    each_aws_command_says(
        "no-region",
        |command| {
            command
                .env_remove("AWS_REGION")
                .env_remove("AWS_DEFAULT_REGION");
        },
        "no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or use a profile that has \
         one (AWS_PROFILE)",
    )
    .await;
}

/// With a region but no credentials anywhere, every command that calls AWS
/// says so in one plain line, before any request, instead of the SDK's
/// dispatch failure.
#[tokio::test]
async fn a_command_without_aws_credentials_says_so_in_one_line() {
    each_aws_command_says(
        "no-credentials",
        |command| {
            command
                .env("AWS_REGION", "eu-west-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env_remove("AWS_SESSION_TOKEN")
                .env_remove("AWS_CONTAINER_CREDENTIALS_FULL_URI")
                .env_remove("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
                .env_remove("AWS_WEB_IDENTITY_TOKEN_FILE");
        },
        fleetlock::aws::NO_CREDENTIALS,
    )
    .await;
}

/// `fleetlock completions bash | head -3`: a reader that closed its end
/// ends nothing badly; no panic, exit 0.
#[tokio::test]
async fn completions_into_a_closed_pipe_do_not_panic() {
    let mut child = fleetlock()
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Closed before the script is written: every write meets a closed pipe.
    drop(child.stdout.take());
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

/// A CreateTable answered after 6 s, as a DynamoDB Local just started
/// answers its first: longer than a lock decision may take, and still one
/// call that says it created the table, not a timeout (or "already exists"
/// from its retry).
#[tokio::test]
async fn a_slow_first_create_table_is_waited_for_and_reported_created() {
    let upstream: std::net::SocketAddr = local_dynamodb_endpoint()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = crate::fault_proxy::FaultProxy::start(upstream).await;
    proxy.next(
        crate::fault_proxy::Fault::DelayAnswer(Duration::from_secs(6)),
        1,
    );
    let table = unique_table_name("slow-create");
    let r = run(on_table(&table)
        .env("AWS_ENDPOINT_URL", proxy.url())
        .arg("create-table"))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.stdout, format!("table created {table} (active)\n"));
}

/// The operator's laptop two hours ahead of AWS (the proxy moves the Date of
/// DynamoDB Local's answers two hours back): every command that writes a
/// time stops with a line that says why, and nothing is written; with the
/// clocks agreeing, the same commands go through the same proxy.
#[tokio::test]
async fn an_operator_clock_hours_off_writes_no_time() {
    let upstream: std::net::SocketAddr = local_dynamodb_endpoint()
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let proxy = crate::fault_proxy::FaultProxy::start(upstream).await;
    let table = unique_table_name("skew");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    let (mut child, addr) = serve(with_table().env("FLEETLOCK_GROUPS", "default=1")).await;
    assert_eq!(
        zincati(addr, "pre-reboot", "stuck-node", "default")
            .await
            .status,
        200
    );
    child.kill().await.unwrap();

    proxy.shift_dates(-2 * 3600);
    let through_proxy = |args: &[&str]| {
        let mut command = with_table();
        command.env("AWS_ENDPOINT_URL", proxy.url()).args(args);
        command
    };
    for args in [
        &["release", "--group", "default", "--id", "stuck-node"][..],
        &["drained", "--group", "default", "--id", "stuck-node"],
        &["pause", "--group", "default", "--reason", "x"],
        &[
            "exclude", "--group", "default", "--id", "other", "--reason", "x",
        ],
    ] {
        let r = run(&mut through_proxy(args)).await;
        assert!(!r.ok, "{args:?}: {}", r.stdout);
        // About two hours: the header's second and the request's way there
        // and back blur the last digit.
        let said = r
            .stderr
            .split("this machine's clock is about ")
            .nth(1)
            .and_then(|rest| rest.split(" s ahead of AWS's").next())
            .and_then(|seconds| seconds.parse::<i64>().ok());
        assert!(
            said.is_some_and(|seconds| (7190..=7210).contains(&seconds)),
            "{args:?}: {}",
            r.stderr
        );
    }
    let r = run(with_table().args(["status", "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let group = &status["groups"][0];
    assert_eq!(
        group["holders"][0]["id"], "stuck-node",
        "still held: {status}"
    );
    assert!(group["paused_by_person"].is_null(), "not paused: {status}");

    proxy.shift_dates(0);
    let r = run(&mut through_proxy(&[
        "release",
        "--group",
        "default",
        "--id",
        "stuck-node",
    ]))
    .await;
    assert!(
        r.ok && r.stdout.contains("released 'stuck-node'"),
        "{}",
        r.stderr
    );
}

/// `hosts` against a Tagging API that pages (one mapping a page, with a
/// token to the next) for 25 ids: two calls' worth of ids (20 a call), every
/// page followed, and an id two instances carry flagged.
#[tokio::test]
async fn hosts_follows_every_page_and_splits_ids_twenty_a_call() {
    let asked: Arc<Mutex<Vec<serde_json::Value>>> = Arc::default();
    let seen = Arc::clone(&asked);
    let ids: Vec<String> = (0..25).map(|n| format!("{n:032x}")).collect();
    let tagging = crate::helpers::stand_in(move |_, body| {
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
        seen.lock().unwrap().push(request.clone());
        let wanted: Vec<String> = request["TagFilters"][0]["Values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        // Every id has its instance; id 0 has a second one.
        let mut instances: Vec<(String, String)> = wanted
            .iter()
            .map(|id| (id.clone(), format!("i-{:0>17}", &id[24..])))
            .collect();
        if wanted.iter().any(|id| id == &format!("{:032x}", 0)) {
            instances.push((format!("{:032x}", 0), "i-0ffffffffffffffff".into()));
        }
        let page: usize = request["PaginationToken"]
            .as_str()
            .and_then(|t| t.strip_prefix("page-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let (id, instance) = &instances[page];
        let next = if page + 1 < instances.len() {
            format!("page-{}", page + 1)
        } else {
            String::new()
        };
        let answer = serde_json::json!({
            "ResourceTagMappingList": [{
                "ResourceARN": format!("arn:aws:ec2:eu-west-1:123456789012:instance/{instance}"),
                "Tags": [{"Key": "fleetlock:zincati-id", "Value": id}],
            }],
            "PaginationToken": next,
        });
        (
            200,
            "application/x-amz-json-1.1",
            answer.to_string().into_bytes(),
        )
    })
    .await;
    let mut command = fleetlock();
    command
        .env("AWS_ENDPOINT_URL_RESOURCE_GROUPS_TAGGING_API", &tagging)
        .env("AWS_REGION", "eu-west-1")
        .args(["hosts", "--hosts", "tags", "--json"])
        .args(&ids);
    let r = run(&mut command).await;
    assert!(r.ok, "{}", r.stderr);
    let hosts: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let hosts = hosts.as_array().unwrap();
    assert_eq!(hosts.len(), 25);
    for (n, host) in hosts.iter().enumerate() {
        assert!(!host["host"].is_null(), "id {n} found on its page: {host}");
    }
    assert_eq!(
        hosts[0]["host"]["also"],
        serde_json::json!(["i-0ffffffffffffffff"]),
        "the second instance carrying id 0"
    );
    let asked = asked.lock().unwrap();
    let first_call: Vec<_> = asked
        .iter()
        .filter(|r| r["PaginationToken"].is_null())
        .map(|r| r["TagFilters"][0]["Values"].as_array().unwrap().len())
        .collect();
    assert_eq!(first_call, [20, 5], "20 ids a call");
    assert_eq!(
        asked.len(),
        21 + 5,
        "a page for each mapping, every token followed"
    );
}

/// A region taken out of service: its settings record would refuse every
/// group it served differently forever; `forget --region` removes it, as
/// the operator's policy allows, and refuses a region one typo off.
#[tokio::test]
async fn operators_forget_a_region_taken_out_of_service() {
    local_dynamodb_endpoint();
    let table = unique_table_name("forget-region");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    let client = crate::helpers::client_as(&format!("function.{table}")).await;
    let store = fleetlock::store::dynamodb::DynamoStore::new(client, &table);
    let mut digests = fleetlock::domain::agreement::Digests::new();
    digests.insert("workers".into(), "0123".into());
    store
        .record_settings("eu-central-1", &digests)
        .await
        .unwrap();
    store.record_settings("eu-west-1", &digests).await.unwrap();

    let r = run(with_table().args(["forget", "--region", "eu-cental-1"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains(
            "region 'eu-cental-1' has no settings record in table '{table}': did you mean \
             'eu-central-1'? (recorded: eu-central-1, eu-west-1)"
                .replace("{table}", &table)
                .as_str()
        ),
        "{}",
        r.stderr
    );
    let r = run(with_table().args(["forget", "--region", "EU-west-1"])).await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("is not a region name like eu-west-1"),
        "{}",
        r.stderr
    );
    let r = run(with_table().args(["forget", "--region", "eu-central-1"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout
            .starts_with("forgot region eu-central-1's settings record"),
        "{}",
        r.stdout
    );
    let left = store.recorded_settings().await.unwrap();
    assert_eq!(left.keys().collect::<Vec<_>>(), ["eu-west-1"]);
    let r = run(with_table().args(["forget", "--region", "eu-west-1", "--group", "g"])).await;
    assert!(!r.ok, "one or the other");
}

/// A person ends returns through the binary, on DynamoDB Local, as
/// docs/operating.md says: `returned --released-at` frees only the return
/// begun then (status shows that time), and `release` frees a returning slot
/// at once, unconfirmed; Zincati's next nodes take both slots.
#[tokio::test]
async fn a_person_confirms_one_return_and_releases_another_through_the_binary() {
    local_dynamodb_endpoint();
    let table = unique_table_name("cli-returns");
    let with_table = || on_table(&table);
    assert!(run(with_table().arg("create-table")).await.ok);
    let (mut child, addr) = serve(
        with_table()
            .env("FLEETLOCK_GROUPS", "workers=2")
            .env("FLEETLOCK_RETURN", "workers=20m"),
    )
    .await;
    for node in ["a", "b"] {
        assert_eq!(
            zincati(addr, "pre-reboot", node, "workers").await.status,
            200
        );
        let back = zincati(addr, "steady-state", node, "workers").await;
        assert_eq!(
            (back.status, back.json()["outcome"].as_str()),
            (200, Some("returning")),
            "{node}"
        );
    }
    let full = zincati(addr, "pre-reboot", "c", "workers").await;
    assert_eq!(full.kind(), "semaphore_full", "both slots still count");
    let status = run(with_table().args(["status", "--group", "workers", "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let released_at = status["groups"][0]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .find(|holder| holder["id"] == "a")
        .and_then(|holder| holder["released_at"].as_str())
        .expect("status shows when a's return began")
        .to_owned();

    // Another return's time: refused, nothing changed.
    let r = run(with_table().args([
        "returned",
        "--group",
        "workers",
        "--id",
        "a",
        "--released-at",
        "2020-01-01T00:00:00Z",
    ]))
    .await;
    assert!(!r.ok, "{}", r.stdout);
    assert_eq!(
        zincati(addr, "pre-reboot", "c", "workers").await.kind(),
        "semaphore_full"
    );
    // Its own: freed, and c takes the slot.
    let r = run(with_table().args([
        "returned",
        "--group",
        "workers",
        "--id",
        "a",
        "--released-at",
        &released_at,
    ]))
    .await;
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        zincati(addr, "pre-reboot", "c", "workers").await.status,
        200
    );
    // b's return, released by hand: freed unconfirmed, and the line says so.
    let r = run(with_table().args(["release", "--group", "workers", "--id", "b"])).await;
    assert!(r.ok, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("unconfirmed"), "{}", r.stdout);
    assert_eq!(
        zincati(addr, "pre-reboot", "d", "workers").await.status,
        200
    );
    let status = run(with_table().args(["status", "--group", "workers", "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    let holders: Vec<&str> = status["groups"][0]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|holder| holder["id"].as_str().unwrap())
        .collect();
    assert_eq!(holders, ["c", "d"], "{status}");
    child.kill().await.unwrap();
}

/// Issue 64: while nodes hold slots as `workers.us-east-1a`, every command
/// takes the names the nodes use. A command on one node acts on it in the
/// split group's item; a command on the whole group refuses a zone's name,
/// naming the group, so that nothing says it paused what no node feels.
#[tokio::test]
async fn operators_name_a_zones_group_as_its_nodes_do() {
    local_dynamodb_endpoint();
    let table = unique_table_name("zone-names");
    let configured = || {
        let mut command = on_table(&table);
        command
            .env("FLEETLOCK_GROUPS", "workers=2,*=1")
            .env("FLEETLOCK_ZONES", "workers");
        command
    };
    assert!(run(configured().arg("create-table")).await.ok);
    let (mut child, addr) = serve(&mut configured()).await;
    let first = zincati(addr, "pre-reboot", "n1", "workers.us-east-1a").await;
    assert_eq!(first.status, 200);

    let r = run(configured().args(["status", "--group", "workers.us-east-1a"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("'workers' is split by zone")
            && r.stdout.contains("workers  1/2")
            && r.stdout.contains("n1"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("never been used"), "{}", r.stdout);

    let r = run(configured().args([
        "pause",
        "--group",
        "workers.us-east-1b",
        "--reason",
        "zone b's kernel",
    ]))
    .await;
    assert!(!r.ok, "{}", r.stdout);
    assert!(
        r.stderr
            .contains("is zone 'us-east-1b' of group 'workers', which is split by zone")
            && r.stderr.contains("name --group workers"),
        "{}",
        r.stderr
    );
    let r = run(configured().args(["status", "--json"])).await;
    let status: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = status["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["workers"], "the refused pause made no item");
    assert_eq!(status["groups"][0]["state"], "open");
    assert_eq!(status["groups"][0]["zone_out"], "us-east-1a");

    let r = run(configured().args([
        "exclude",
        "--group",
        "workers.us-east-1b",
        "--id",
        "n3",
        "--reason",
        "bad disk",
    ]))
    .await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("excluded 'n3' from group 'workers'"),
        "{}",
        r.stdout
    );
    let excluded = zincati(addr, "pre-reboot", "n3", "workers.us-east-1b").await;
    assert_eq!(excluded.kind(), "node_excluded", "the node feels it");

    for refused in [
        vec!["begin-rollout", "--group", "workers.us-east-1a"],
        vec!["resume", "--group", "workers.us-east-1a"],
    ] {
        let r = run(configured().args(&refused)).await;
        assert!(!r.ok, "{refused:?}: {}", r.stdout);
        assert!(r.stderr.contains("name --group workers"), "{}", r.stderr);
    }

    let r =
        run(configured().args(["release", "--group", "workers.us-east-1a", "--id", "n1"])).await;
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stdout.contains("released 'n1' from group 'workers'"),
        "{}",
        r.stdout
    );
    // Without the configuration, the name is not taken for the group's,
    // and the refusal names the stored group and how to read it.
    assert_eq!(
        zincati(addr, "pre-reboot", "n2", "workers.us-east-1a")
            .await
            .status,
        200
    );
    let r = run(on_table(&table).args(["release", "--group", "workers.us-east-1a", "--id", "n2"]))
        .await;
    assert!(!r.ok, "{}", r.stdout);
    assert!(
        r.stderr.contains("if 'workers' is split by zone") && r.stderr.contains("--function NAME"),
        "{}",
        r.stderr
    );
    // A case twin is refused with the name the nodes ask with.
    let r = run(configured().args([
        "exclude",
        "--group",
        "Workers.us-east-1a",
        "--id",
        "n4",
        "--reason",
        "x",
    ]))
    .await;
    assert!(!r.ok);
    assert!(
        r.stderr.contains("did you mean 'workers.us-east-1a'?"),
        "{}",
        r.stderr
    );
    child.kill().await.unwrap();
}
