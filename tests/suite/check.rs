//! `fleetlock check URL` against `fleetlock serve` (embedded and on DynamoDB
//! Local), where every case must pass, and against stand-in servers broken
//! on purpose, one way each, where the case for that mistake must fail: a
//! check that cannot fail proves nothing.

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::process::Command;

use crate::helpers::{served_address, table_made_by_the_binary};

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

fn check(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .arg("check")
        .args(args)
        .env("FLEETLOCK_URL", url)
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

async fn ran(command: &mut Command) -> Ran {
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("the check ends by itself")
        .unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `fleetlock serve` with the check's group, as the docs configure it, and
/// one credential for it; the URL with the secret.
async fn serve(table: Option<&str>) -> (tokio::process::Child, String) {
    let credential =
        fleetlock::domain::auth::new_credential("fleet", "default,fleetlock-check").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env(
            "FLEETLOCK_GROUPS",
            "default=1,workers=3,db=1,fleetlock-check=2,*=1",
        )
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .env_remove("FLEETLOCK_TABLE")
        .env_remove("FLEETLOCK_AUTH")
        .env_remove("FLEETLOCK_SETTLE")
        .env_remove("FLEETLOCK_WINDOWS")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    if let Some(table) = table {
        command
            .env("FLEETLOCK_TABLE", table)
            .env("AWS_ACCESS_KEY_ID", format!("function.{table}"));
    }
    let mut child = command.spawn().unwrap();
    let (_, addr) = served_address(child.stdout.take().unwrap()).await;
    (child, format!("http://fleet:{}@{addr}/", credential.secret))
}

async fn every_case_passes_against_serve(table: Option<&str>) {
    let (_server, url) = serve(table).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .ends_with("18 passed, 0 warned, 0 failed, 0 skipped: the server conforms\n"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains(&url), "the secret is never printed");
    assert!(!r.stderr.contains("secret"), "{}", r.stderr);
    // It gave back every slot: a second run fills the group again.
    let again = ran(&mut check(&url, &["--strict", "--json"])).await;
    assert_eq!(again.code, 0, "{}", again.stdout);
    let report: serde_json::Value = serde_json::from_str(&again.stdout).unwrap();
    assert_eq!(report["conforms"], true);
    assert_eq!(report["left"], serde_json::json!([]));
    assert!(report["url"].as_str().unwrap().contains("***"));
    if let Some(table) = table {
        let status = std::process::Command::new(env!("CARGO_BIN_EXE_fleetlock"))
            .args(["status", "--group", "fleetlock-check", "--json"])
            .env("AWS_ACCESS_KEY_ID", format!("operator.{table}"))
            .env("FLEETLOCK_TABLE", table)
            .output()
            .unwrap();
        let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
        let holders = &status["groups"][0]["holders"];
        assert_eq!(holders, &serde_json::json!([]), "{status}");
    }
}

#[tokio::test]
async fn every_case_passes_against_serve_on_the_embedded_store() {
    every_case_passes_against_serve(None).await;
}

#[tokio::test]
async fn every_case_passes_against_serve_on_dynamodb_local() {
    let table = table_made_by_the_binary("check").await;
    every_case_passes_against_serve(Some(&table)).await;
}

/// How a stand-in server is broken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Broken {
    /// Answers 202 instead of refusing when the group is full.
    AcceptedWhenFull,
    /// Grants every node: no limit at all.
    OverGrants,
    /// Refuses the steady-state of a node that holds nothing.
    RefusesNonHolders,
    /// Refuses with a plain-text body instead of {kind, value}.
    PlainTextRefusals,
    /// Answers any pre-reboot after the first grant only after a minute.
    SlowSecondGrant,
    /// Answers a holder's steady-state 2xx without freeing its slot.
    NeverFrees,
    /// Grants the first pre-reboot at once, and answers it a minute later.
    LateFirstAnswer,
    /// Refuses a body without `Content-Type: application/json` (415).
    DemandsContentType,
    /// Refuses a holder that asks again (423), as a non-re-entrant lock.
    RefusesReentry,
    /// Goes away (stops listening) after its first grant.
    GoesAway,
    /// Refuses every pre-reboot as if the group were full.
    GrantsNothing,
    /// Reads whatever it is sent: any method, no protocol header, any size,
    /// no group or an invalid one, an empty id, a body it cannot parse
    /// (granted to nobody); asks for no credentials. Right otherwise.
    Lax,
    /// Right in every way the check looks at, but that it asks for no
    /// credentials (as every stand-in here).
    Sound,
}

/// A FleetLock server with 2 slots, right but for one mistake; its holders.
async fn stand_in(broken: Broken) -> (String, Arc<Mutex<BTreeSet<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holders: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let held = Arc::clone(&holders);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            if broken == Broken::GoesAway && !held.lock().unwrap().is_empty() {
                // Gone: this connection and every later one refused.
                return;
            }
            let holders = Arc::clone(&held);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request: Request<_>| {
                    let holders = Arc::clone(&holders);
                    async move {
                        let (status, body) = answer(broken, &holders, request).await;
                        let content_type = if broken == Broken::PlainTextRefusals && status == 423 {
                            "text/plain"
                        } else {
                            "application/json"
                        };
                        Ok::<_, std::convert::Infallible>(
                            Response::builder()
                                .status(status)
                                .header("content-type", content_type)
                                .body(Full::new(Bytes::from(body)))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (format!("http://{addr}/"), holders)
}

fn refusal(status: u16, kind: &str) -> (u16, String) {
    let body = serde_json::json!({"kind": kind, "value": format!("refused: {kind}")});
    (status, body.to_string())
}

async fn answer(
    broken: Broken,
    holders: &Mutex<BTreeSet<String>>,
    request: Request<hyper::body::Incoming>,
) -> (u16, String) {
    let (parts, body) = request.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    if broken == Broken::Lax {
        return lax_answer(holders, parts.uri.path(), &body);
    }
    if parts.method != hyper::Method::POST {
        return refusal(405, "method_not_allowed");
    }
    if broken == Broken::DemandsContentType && parts.headers.get("content-type").is_none() {
        return refusal(415, "unsupported_media_type");
    }
    if parts.headers.get("fleet-lock-protocol").is_none() {
        return refusal(400, "missing_protocol_header");
    }
    if body.len() > 4096 {
        return refusal(413, "body_too_large");
    }
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return refusal(400, "invalid_body");
    };
    let field = |name: &str| json["client_params"][name].as_str().map(str::to_owned);
    let (Some(id), Some(group)) = (field("id"), field("group")) else {
        return refusal(400, "invalid_body");
    };
    if id.is_empty() {
        return refusal(400, "invalid_id");
    }
    if !group
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
    {
        return refusal(400, "invalid_group");
    }
    let ok = |outcome: &str| (200, serde_json::json!({ "outcome": outcome }).to_string());
    match parts.uri.path() {
        "/v1/pre-reboot" if broken == Broken::GrantsNothing => refusal(423, "semaphore_full"),
        "/v1/pre-reboot" => {
            if broken == Broken::SlowSecondGrant && !holders.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            if broken == Broken::LateFirstAnswer && holders.lock().unwrap().is_empty() {
                holders.lock().unwrap().insert(id);
                tokio::time::sleep(Duration::from_secs(60)).await;
                return ok("granted");
            }
            let mut holders = holders.lock().unwrap();
            if holders.contains(&id) {
                if broken == Broken::RefusesReentry {
                    return refusal(423, "already_locked");
                }
                return ok("already_held");
            }
            if holders.len() >= 2 && broken != Broken::OverGrants {
                return match broken {
                    Broken::AcceptedWhenFull => (202, "{\"outcome\":\"queued\"}".into()),
                    Broken::PlainTextRefusals => (423, "locked".into()),
                    _ => refusal(423, "semaphore_full"),
                };
            }
            holders.insert(id);
            ok("granted")
        }
        "/v1/steady-state" => {
            let mut holders = holders.lock().unwrap();
            // A server that never frees answers as if it had.
            let freed = if broken == Broken::NeverFrees {
                holders.contains(&id)
            } else {
                holders.remove(&id)
            };
            if freed {
                ok("released")
            } else if broken == Broken::RefusesNonHolders {
                refusal(409, "not_a_holder")
            } else {
                ok("not_held")
            }
        }
        _ => refusal(404, "not_found"),
    }
}

/// The lax stand-in's answer: a grant or a release for whatever id it can
/// find (none: granted to nobody), limited to 2 slots like the others.
fn lax_answer(holders: &Mutex<BTreeSet<String>>, path: &str, body: &[u8]) -> (u16, String) {
    let ok = |outcome: &str| (200, serde_json::json!({ "outcome": outcome }).to_string());
    let id = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|json| json["client_params"]["id"].as_str().map(str::to_owned));
    let mut holders = holders.lock().unwrap();
    match (path, id) {
        ("/v1/pre-reboot", Some(id)) if holders.contains(&id) => ok("already_held"),
        ("/v1/pre-reboot", Some(_)) if holders.len() >= 2 => refusal(423, "semaphore_full"),
        ("/v1/pre-reboot", Some(id)) => {
            holders.insert(id);
            ok("granted")
        }
        ("/v1/pre-reboot", None) => ok("granted"),
        ("/v1/steady-state", Some(id)) if holders.remove(&id) => ok("released"),
        ("/v1/steady-state", _) => ok("not_held"),
        _ => refusal(404, "not_found"),
    }
}

fn failed_case(stdout: &str, case: &str) -> bool {
    verdict_of(stdout, case) == Some("fail")
}

/// Each of `cases` is a warning in the report's text.
fn assert_warned(stdout: &str, cases: &[&str]) {
    for case in cases {
        assert_eq!(verdict_of(stdout, case), Some("warn"), "{case}:\n{stdout}");
    }
}

/// The verdict the report's text gives `case`.
fn verdict_of<'a>(stdout: &'a str, case: &str) -> Option<&'a str> {
    stdout.lines().find_map(|line| {
        let (verdict, rest) = line.split_once("  ")?;
        rest.strip_prefix(case)?.strip_prefix(": ")?;
        Some(verdict)
    })
}

/// A server that goes away mid-run (after its first grant): exit 3, with
/// the line that says so, and the slot it keeps named with the command
/// that frees it.
#[tokio::test]
async fn a_server_gone_mid_run_is_exit_3_and_the_slot_left_is_named() {
    let (url, holders) = stand_in(Broken::GoesAway).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_eq!(r.code, 3, "{}{}", r.stdout, r.stderr);
    let held: Vec<String> = holders.lock().unwrap().iter().cloned().collect();
    assert_eq!(held.len(), 1, "one slot taken: {held:?}");
    assert!(
        r.stdout.contains(held[0].as_str()),
        "the slot left is named: {}",
        r.stdout
    );
    assert!(r.stdout.contains("fleetlock release"), "{}", r.stdout);
}

/// A server that demands a Content-Type refuses Zincati's own request: the
/// case fails and the run stops there, saying why.
#[tokio::test]
async fn a_server_that_demands_a_content_type_fails_at_the_first_probe() {
    let (url, holders) = stand_in(Broken::DemandsContentType).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        failed_case(&r.stdout, "a body without Content-Type is read"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("the server refuses Zincati's own request"),
        "{}",
        r.stdout
    );
    assert!(holders.lock().unwrap().is_empty());
}

/// A server whose steady-state answers 2xx and frees nothing: the check
/// fails on the effect (new nodes find no slot), not on the status line,
/// and says it could not give its slots back (exit 1, never "conforms").
#[tokio::test]
async fn a_server_that_never_frees_a_slot_does_not_conform() {
    let (url, holders) = stand_in(Broken::NeverFrees).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        failed_case(&r.stdout, "steady-state of a holder frees its slot"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("the slots were not freed"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("the server conforms"), "{}", r.stdout);
    assert_eq!(holders.lock().unwrap().len(), 2, "the stand-in keeps both");
}

#[tokio::test]
async fn each_mistake_of_a_broken_server_fails_its_case_and_no_slot_is_left() {
    for (broken, case) in [
        (
            Broken::AcceptedWhenFull,
            "pre-reboot when every slot is taken is refused",
        ),
        (
            Broken::OverGrants,
            "concurrent pre-reboots never over-grant",
        ),
        (
            Broken::RefusesNonHolders,
            "steady-state of a node holding nothing",
        ),
        (
            Broken::RefusesNonHolders,
            "steady-state of a non-holder while the group is full",
        ),
        (
            Broken::PlainTextRefusals,
            "every refusal has a {kind, value} body",
        ),
        (
            Broken::RefusesReentry,
            "pre-reboot of a node that holds a slot",
        ),
    ] {
        let (url, holders) = stand_in(broken).await;
        let r = ran(&mut check(&url, &[])).await;
        assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
        assert!(
            failed_case(&r.stdout, case),
            "{case} did not fail:\n{}",
            r.stdout
        );
        assert!(
            r.stdout.contains("the server does not conform"),
            "{}",
            r.stdout
        );
        assert!(
            holders.lock().unwrap().is_empty(),
            "{case}: left {:?}",
            holders.lock().unwrap()
        );
    }
}

/// A server that reads anything it is sent: each request Zincati never
/// sends is its own warning (the run conforms, but not with `--strict`), and
/// every slot those requests took is given back.
#[tokio::test]
async fn a_server_that_reads_anything_warns_on_each_request_zincati_never_sends() {
    let (url, holders) = stand_in(Broken::Lax).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_warned(
        &r.stdout,
        &[
            "a request without the fleet-lock-protocol header",
            "a GET instead of POST",
            "a malformed body",
            "a body over 64 KiB",
            "a body without a group",
            "an invalid group",
            "an empty id",
        ],
    );
    assert!(
        r.stdout
            .ends_with("10 passed, 7 warned, 0 failed, 1 skipped: the server conforms\n"),
        "{}",
        r.stdout
    );
    assert!(
        holders.lock().unwrap().is_empty(),
        "{:?}",
        holders.lock().unwrap()
    );
    let strict = ran(&mut check(&url, &["--strict"])).await;
    assert_eq!(strict.code, 1, "{}", strict.stdout);
}

/// The URL itself: a path without its last '/' (which Zincati drops) and
/// credentials the server never asks for are warnings, each on its case.
#[tokio::test]
async fn a_base_url_without_its_slash_and_credentials_nobody_asks_for_are_warned() {
    let (url, _) = stand_in(Broken::Sound).await;
    let sound = ran(&mut check(&url, &["--strict"])).await;
    assert_eq!(sound.code, 0, "the baseline conforms: {}", sound.stdout);
    let with_credentials = url.replacen("http://", "http://fleet:secret@", 1);
    let r = ran(&mut check(&format!("{with_credentials}fleetlock"), &[])).await;
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_warned(
        &r.stdout,
        &[
            "base_url ends with '/'",
            "a request without credentials is refused",
        ],
    );
    assert!(
        r.stdout.contains("Zincati would drop its last segment"),
        "{}",
        r.stdout
    );
}

/// A server that grants nothing: the first grant's case cannot pass, and the
/// run stops there saying what the check needs.
#[tokio::test]
async fn a_server_that_grants_nothing_stops_at_the_first_grant() {
    let (url, holders) = stand_in(Broken::GrantsNothing).await;
    let r = ran(&mut check(&url, &[])).await;
    assert_ne!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(
        verdict_of(&r.stdout, "pre-reboot of a node takes a free slot"),
        None,
        "{}",
        r.stdout
    );
    let said = format!("{}{}", r.stdout, r.stderr);
    assert!(said.contains("granted no slot"), "{said}");
    assert!(holders.lock().unwrap().is_empty());
}

/// `check` against a stand-in broken as `broken`, sent SIGTERM once the
/// stand-in holds a slot: its exit code and its report, and the stand-in's
/// holders after it ended.
async fn terminated_once_a_slot_is_held(
    broken: Broken,
) -> (Option<i32>, String, Arc<Mutex<BTreeSet<String>>>) {
    let (url, holders) = stand_in(broken).await;
    let child = check(&url, &[]).spawn().unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while holders.lock().unwrap().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no slot was taken");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = child.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let output = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("it stops at once")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.code(), stdout, holders)
}

#[tokio::test]
async fn a_signal_mid_run_gives_back_the_slot_taken() {
    // The first grant lands, then the re-entrant ask hangs on the stand-in.
    let (code, stdout, holders) = terminated_once_a_slot_is_held(Broken::SlowSecondGrant).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(stdout.contains("stopped: stopped by a signal"), "{stdout}");
    assert!(
        stdout.contains("the check stopped before its end"),
        "{stdout}"
    );
    assert!(
        holders.lock().unwrap().is_empty(),
        "{:?}",
        holders.lock().unwrap()
    );
}

/// SIGTERM while a granted answer is on its way (the stand-in grants, then
/// answers a minute later): the slot is given back all the same.
#[tokio::test]
async fn a_signal_while_a_grant_is_in_flight_gives_that_slot_back() {
    let (code, stdout, holders) = terminated_once_a_slot_is_held(Broken::LateFirstAnswer).await;
    assert_eq!(code, Some(1), "{stdout}");
    assert!(
        holders.lock().unwrap().is_empty(),
        "the grant in flight was not given back: {:?}\n{stdout}",
        holders.lock().unwrap()
    );
}

#[tokio::test]
async fn bad_input_is_one_line_and_exit_2() {
    for (args, url, says) in [
        (vec![], "", "check needs the server's URL"),
        (vec![], "ftp://x/", "the scheme is ftp"),
        (
            vec!["--group", "no spaces"],
            "http://127.0.0.1:1/",
            "--group: ",
        ),
    ] {
        let r = ran(&mut check(url, &args)).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
    }
    let r = ran(&mut check("http://127.0.0.1:1/", &[])).await;
    assert_eq!(r.code, 3, "unreachable: {}", r.stdout);
}
