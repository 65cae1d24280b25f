//! `fleetlock lock` and `unlock` as a job would run them, against `fleetlock
//! serve` (embedded, and on DynamoDB Local) and against stand-ins, over real
//! HTTP on loopback.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use crate::helpers::{
    basic_auth, send, served_address, stand_in, table_made_by_the_binary, zincati_body,
};

const MACHINE_ID: &str = "e0f3745b108f471cbd4883c6fbed8cdd";

/// A machine-id file of its own for each test.
fn machine_id_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!(
        "fleetlock-machine-id-{name}-{}",
        std::process::id()
    ));
    std::fs::write(&path, format!("{MACHINE_ID}\n")).unwrap();
    path
}

/// `fleetlock serve` with one group `jobs` of one slot and a client `fleet`;
/// on DynamoDB Local with a table. Returns it, its address and the URL with
/// the client's secret.
async fn server(table: Option<&str>) -> (Child, std::net::SocketAddr, String, String) {
    let credential = fleetlock::domain::auth::new_credential("fleet", "jobs").unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FLEETLOCK_GROUPS", "jobs=1")
        .env("FLEETLOCK_CLIENTS", &credential.entry)
        .env_remove("FLEETLOCK_TABLE")
        .env_remove("FLEETLOCK_AUTH")
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    if let Some(table) = table {
        command.env("FLEETLOCK_TABLE", table);
    }
    let mut child = command.spawn().unwrap();
    let (_, addr) = served_address(child.stdout.take().unwrap()).await;
    let url = format!("http://fleet:{}@{addr}/", credential.secret);
    (child, addr, url, basic_auth("fleet", &credential.secret))
}

/// `fleetlock ARGS` as a job runs it: the URL from FLEETLOCK_URL.
fn fleetlock(url: &str, machine: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fleetlock"));
    command
        .args(args)
        .env("FLEETLOCK_URL", url)
        .env("FLEETLOCK_MACHINE_ID_FILE", machine)
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

struct Ran {
    code: i32,
    stderr: String,
}

async fn ran(command: &mut Command) -> Ran {
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("it ends by itself")
        .unwrap();
    Ran {
        code: output.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Takes and gives back the same slot Zincati takes, on either store.
async fn a_job_shares_the_slots_zincati_takes(table: Option<&str>) {
    let (_server, addr, url, authorization) = server(table).await;
    let machine = machine_id_file(table.unwrap_or("embedded"));
    let lock = |app: &str| fleetlock(&url, &machine, &["lock", "--group", "jobs", "--app", app]);
    let r = ran(&mut lock("backup")).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("took a slot of group 'jobs'"),
        "{}",
        r.stderr
    );
    // Zincati, and another job, find the one slot taken.
    let zincati = send(
        addr,
        "POST",
        "/v1/pre-reboot",
        &[
            ("fleet-lock-protocol", "true"),
            ("authorization", &authorization),
        ],
        zincati_body("node-1", "jobs"),
    )
    .await;
    assert_eq!(
        (zincati.status, zincati.kind()),
        (423, "semaphore_full".into())
    );
    let r = ran(&mut lock("other-job")).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("refused: the only reboot slot of group 'jobs' is taken (1 holder)"),
        "{}",
        r.stderr
    );
    // Asking again while holding is fine: the same slot.
    assert_eq!(ran(&mut lock("backup")).await.code, 0);
    let r = ran(&mut fleetlock(
        &url,
        &machine,
        &["unlock", "--group", "jobs", "--app", "backup"],
    ))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("gave back"), "{}", r.stderr);
    assert_eq!(
        ran(&mut lock("other-job")).await.code,
        0,
        "the slot is free again"
    );
}

#[tokio::test]
async fn a_job_shares_the_slots_on_the_embedded_store() {
    a_job_shares_the_slots_zincati_takes(None).await;
}

#[tokio::test]
async fn a_job_shares_the_slots_on_dynamodb_local() {
    let table = table_made_by_the_binary("lock-client").await;
    a_job_shares_the_slots_zincati_takes(Some(&table)).await;
}

/// Reads a child's stderr on a task, lines kept for the test to look at.
fn collect_stderr(child: &mut Child) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let mut reader = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let kept = Arc::clone(&lines);
    tokio::spawn(async move {
        while let Ok(Some(line)) = reader.next_line().await {
            kept.lock().unwrap().push(line);
        }
    });
    lines
}

async fn until_said(lines: &Arc<Mutex<Vec<String>>>, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lines.lock().unwrap().iter().any(|l| l.contains(what)) {
        assert!(
            Instant::now() < deadline,
            "never said {what:?}: {:?}",
            lines.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `lock --wait`'s loop (paced in milliseconds here; tests/suite/lock_retries.rs
/// drives it through every kind of answer) against the real server: refused
/// while another job holds the only slot, it takes the slot once that is
/// given back.
#[tokio::test]
async fn waiting_takes_the_slot_once_it_frees() {
    use fleetlock::cli::lock::{Checked, Identity, Pacing, Request, UrlSource};
    let (_server, _, url, _) = server(None).await;
    let machine = machine_id_file("wait");
    let holder = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "holder"],
    ))
    .await;
    assert_eq!(holder.code, 0, "{}", holder.stderr);
    let checked = Checked {
        lock: fleetlock::client::Lock::new(&url).unwrap(),
        group: fleetlock::domain::input::GroupName::parse("jobs").unwrap(),
        id: fleetlock::domain::input::NodeId::parse("waiter").unwrap(),
        pacing: Pacing {
            floor: Duration::from_millis(50),
            ceiling: Duration::from_millis(200),
        },
    };
    let request = Request {
        call: fleetlock::client::Call::PreReboot,
        group: "jobs".into(),
        identity: Identity::Id("waiter".into()),
        url: UrlSource::Environment,
        wait: Some(Some(Duration::from_secs(60))),
    };
    let said = Arc::new(Mutex::new(Vec::<String>::new()));
    let heard = Arc::clone(&said);
    let mut say = |l: &str| heard.lock().unwrap().push(l.to_owned());
    let waiter = fleetlock::cli::lock::run(&checked, &request, std::future::pending(), &mut say);
    let unlocker = async {
        until_said(&said, "refused: the only reboot slot").await;
        until_said(&said, "asking again in").await;
        let unlocked = ran(&mut fleetlock(
            &url,
            &machine,
            &["unlock", "--group", "jobs", "--id", "holder"],
        ))
        .await;
        assert_eq!(unlocked.code, 0);
    };
    let (ended, ()) = tokio::join!(waiter, unlocker);
    assert_eq!(
        ended,
        fleetlock::cli::lock::Ended::Done,
        "{:?}",
        said.lock().unwrap()
    );
    until_said(&said, "took a slot of group 'jobs' as waiter").await;
    // The slot is the waiter's now: another job is refused.
    let other = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "other"],
    ))
    .await;
    assert_eq!(other.code, 1, "{}", other.stderr);
}

#[tokio::test]
async fn a_wait_ends_at_its_timeout_and_a_signal_ends_it_with_no_slot_taken() {
    let (_server, _, url, _) = server(None).await;
    let machine = machine_id_file("timeout");
    assert_eq!(
        ran(&mut fleetlock(
            &url,
            &machine,
            &["lock", "--group", "jobs", "--id", "holder"]
        ))
        .await
        .code,
        0
    );
    let started = Instant::now();
    let r = ran(&mut fleetlock(
        &url,
        &machine,
        &[
            "lock",
            "--group",
            "jobs",
            "--id",
            "late",
            "--wait",
            "--timeout",
            "3s",
        ],
    ))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("giving up"), "{}", r.stderr);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(30),
        "{took:?}"
    );

    for signal in ["INT", "TERM"] {
        let mut waiter = fleetlock(
            &url,
            &machine,
            &["lock", "--group", "jobs", "--id", "stopped", "--wait"],
        )
        .spawn()
        .unwrap();
        let said = collect_stderr(&mut waiter);
        until_said(&said, "asking again in").await;
        // The command paces as a fleet's endpoint needs: 60 s and up to a
        // tenth more before the second try.
        let announced = said
            .lock()
            .unwrap()
            .iter()
            .find_map(|l| l.split("asking again in ").nth(1))
            .map(|rest| fleetlock::domain::groups::parse_duration(rest.trim()))
            .expect("a pause announced")
            .expect("a pause written as the settings are")
            .as_secs();
        assert!((60..=66).contains(&announced), "{announced} s");
        let killed = std::process::Command::new("kill")
            .args([format!("-{signal}"), waiter.id().unwrap().to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let status = tokio::time::timeout(Duration::from_secs(10), waiter.wait())
            .await
            .expect("a signal stops the wait at once")
            .unwrap();
        assert_eq!(status.code(), Some(1), "{signal}");
        until_said(&said, "stopped while waiting; no slot was taken").await;
    }
    // Nothing left behind: once the holder gives its slot back, the group is
    // empty (the waiters never held one).
    assert_eq!(
        ran(&mut fleetlock(
            &url,
            &machine,
            &["unlock", "--group", "jobs", "--id", "holder"]
        ))
        .await
        .code,
        0
    );
    let free = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "next"],
    ))
    .await;
    assert_eq!(free.code, 0, "{}", free.stderr);
}

/// A request as a stand-in saw it: path, headers, body.
type Seen = (String, Vec<(String, String)>, String);

#[tokio::test]
async fn it_speaks_zincatis_wire_format_and_joins_paths_as_zincati_does() {
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let recorder = Arc::clone(&seen);
    let base = stand_in(move |parts, body| {
        let headers = parts
            .headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_owned()))
            .collect();
        recorder.lock().unwrap().push((
            parts.uri.path().to_owned(),
            headers,
            String::from_utf8_lossy(&body).into_owned(),
        ));
        (
            200,
            "application/json",
            br#"{"outcome":"granted"}"#.to_vec(),
        )
    })
    .await;
    let machine = machine_id_file("wire");
    let host = base.trim_start_matches("http://");
    for (url, path) in [
        (
            format!("http://fleet:s3cret@{host}/Prod/"),
            "/Prod/v1/pre-reboot",
        ),
        (format!("http://fleet:s3cret@{host}/Prod"), "/v1/pre-reboot"),
    ] {
        let r = ran(&mut fleetlock(
            &url,
            &machine,
            &["lock", "--group", "jobs", "--app", "backup"],
        ))
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        let (seen_path, headers, body) = seen.lock().unwrap().pop().unwrap();
        assert_eq!(seen_path, path);
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("fleet-lock-protocol").as_deref(), Some("true"));
        assert_eq!(header("content-type"), None, "Zincati sends none");
        assert_eq!(header("user-agent"), None, "Zincati sends none");
        // fleet:s3cret
        assert_eq!(
            header("authorization").as_deref(),
            Some("Basic ZmxlZXQ6czNjcmV0")
        );
        let expected_id = fleetlock::client::job_id(
            &fleetlock::client::parse_machine_id(MACHINE_ID).unwrap(),
            "backup",
        );
        assert_eq!(
            body,
            serde_json::to_string_pretty(&serde_json::json!({
                "client_params": { "id": expected_id, "group": "jobs" }
            }))
            .unwrap(),
            "pretty JSON, as Zincati's serde_json::to_string_pretty"
        );
        assert_ne!(
            expected_id,
            fleetlock::client::zincati_id(
                &fleetlock::client::parse_machine_id(MACHINE_ID).unwrap()
            )
        );
    }
}

#[tokio::test]
async fn every_failure_has_its_exit_code_and_one_line() {
    let machine = machine_id_file("failures");
    let failing = stand_in(|_, _| {
        (
            503,
            "application/json",
            br#"{"kind":"store_unavailable","value":"the lock store is unavailable; nothing was decided, try again later"}"#
                .to_vec(),
        )
    })
    .await;
    let (_server, _, url, _) = server(None).await;
    let wrong_secret = url.replacen("fleet:", "fleet:x", 1);
    let zincati_id =
        fleetlock::client::zincati_id(&fleetlock::client::parse_machine_id(MACHINE_ID).unwrap());
    for (url, args, code, says) in [
        (
            "http://127.0.0.1:1/".to_owned(),
            vec!["lock", "--group", "jobs"],
            3,
            "cannot be reached",
        ),
        (
            format!("{failing}/"),
            vec!["lock", "--group", "jobs"],
            3,
            "failed (503)",
        ),
        (
            wrong_secret,
            vec!["lock", "--group", "jobs"],
            2,
            "refused (401)",
        ),
        (
            url.clone(),
            vec!["lock", "--group", "other"],
            2,
            "refused (403)",
        ),
        (url.clone(), vec!["lock", "--group", "a b"], 2, "--group: "),
        (
            url.clone(),
            vec!["lock", "--group", "jobs", "--id", &zincati_id],
            2,
            "the id Zincati uses",
        ),
        (
            "not a url".to_owned(),
            vec!["lock", "--group", "jobs"],
            2,
            "not a URL",
        ),
        (
            url.clone(),
            vec!["lock", "--group", "jobs", "--wait", "--timeout", "nope"],
            2,
            "--timeout: ",
        ),
    ] {
        let r = ran(&mut fleetlock(&url, &machine, &args)).await;
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    // No URL at all, and a URL with its secret on the command line.
    let mut bare = fleetlock("", &machine, &["lock", "--group", "jobs"]);
    bare.env_remove("FLEETLOCK_URL");
    let r = ran(&mut bare).await;
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("set FLEETLOCK_URL or give --url-file"),
        "{}",
        r.stderr
    );
    let mut visible = fleetlock("", &machine, &["lock", "--group", "jobs", "--url", &url]);
    visible.env_remove("FLEETLOCK_URL");
    let r = ran(&mut visible).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("visible in ps and in shell history"),
        "{}",
        r.stderr
    );
    // From a file: the secret stays off the command line.
    let file = std::env::temp_dir().join(format!("fleetlock-url-{}", std::process::id()));
    std::fs::write(&file, format!("{url}\n")).unwrap();
    let mut from_file = fleetlock(
        "",
        &machine,
        &[
            "unlock",
            "--group",
            "jobs",
            "--url-file",
            file.to_str().unwrap(),
        ],
    );
    from_file.env_remove("FLEETLOCK_URL");
    let r = ran(&mut from_file).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("visible in ps"), "{}", r.stderr);
    let _ = std::fs::remove_file(file);
}

/// A TLS server on loopback with a certificate for `localhost` made here,
/// answering every request 200 and counting them.
async fn tls_stand_in(dir: &std::path::Path) -> (u16, std::path::PathBuf, Arc<Mutex<u32>>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, cert.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert.cert.der().clone()], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = Arc::new(Mutex::new(0u32));
    let count = Arc::clone(&served);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, count) = (acceptor.clone(), Arc::clone(&count));
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |_request| {
                    *count.lock().unwrap() += 1;
                    async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(hyper::body::Bytes::from_static(b"{}")),
                        ))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, ca_file, served)
}

#[tokio::test]
async fn https_is_checked_against_the_systems_roots() {
    let dir = std::env::temp_dir().join(format!("fleetlock-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (port, ca_file, served) = tls_stand_in(&dir).await;
    let machine = machine_id_file("tls");
    let url = format!("https://fleet:s3cret@localhost:{port}/");
    // A certificate no root vouches for: refused before anything is sent.
    let r = ran(&mut fleetlock(&url, &machine, &["lock", "--group", "jobs"])).await;
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("TLS with localhost"), "{}", r.stderr);
    assert_eq!(*served.lock().unwrap(), 0);
    // With it among the roots (SSL_CERT_FILE, as for curl): the request goes.
    let mut trusting = fleetlock(&url, &machine, &["lock", "--group", "jobs"]);
    trusting.env("SSL_CERT_FILE", &ca_file);
    let r = ran(&mut trusting).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(*served.lock().unwrap(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lock -- COMMAND` on both stores: the slot is held while the command
/// runs (another job is refused), given back when it ends, and the
/// command's exit code is the command's.
async fn a_command_holds_its_slot_for_its_whole_run(table: Option<&str>) {
    let (_server, _, url, _) = server(table).await;
    let machine = machine_id_file(&format!("hold-{}", table.is_some()));
    let dir = std::env::temp_dir().join(format!(
        "fleetlock-hold-{}-{}",
        table.is_some(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (started, finish) = (dir.join("started"), dir.join("finish"));
    let script = format!(
        "touch {}; while [ ! -e {} ]; do sleep 0.05; done; exit 7",
        started.display(),
        finish.display()
    );
    let mut job = fleetlock(
        &url,
        &machine,
        &[
            "lock", "--group", "jobs", "--app", "backup", "--wait", "--", "sh", "-c", &script,
        ],
    )
    .spawn()
    .unwrap();
    let said = collect_stderr(&mut job);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(Instant::now() < deadline, "{:?}", said.lock().unwrap());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let other = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "other"],
    ))
    .await;
    assert_eq!(
        other.code, 1,
        "the job holds the one slot: {}",
        other.stderr
    );
    std::fs::write(&finish, "").unwrap();
    let status = tokio::time::timeout(Duration::from_secs(30), job.wait())
        .await
        .expect("the job ends with its command")
        .unwrap();
    assert_eq!(status.code(), Some(7), "{:?}", said.lock().unwrap());
    until_said(&said, "gave back the slot of group 'jobs'").await;
    let after = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "other"],
    ))
    .await;
    assert_eq!(after.code, 0, "the slot is free again: {}", after.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_command_holds_its_slot_on_the_embedded_store() {
    a_command_holds_its_slot_for_its_whole_run(None).await;
}

#[tokio::test]
async fn a_command_holds_its_slot_on_dynamodb_local() {
    let table = table_made_by_the_binary("hold").await;
    a_command_holds_its_slot_for_its_whole_run(Some(&table)).await;
}

/// A FleetLock server with a 3-second lease (shorter than any this server
/// accepts, to see renewals in real time): it grants, answers the holder's
/// renewals `already_held` while `taken_after` of them have not yet come,
/// then `slot_taken`; every pre-reboot's instant and every steady-state are
/// recorded.
async fn leasing_stand_in(taken_after: usize) -> (String, Arc<Mutex<Vec<(String, Instant)>>>) {
    let calls = Arc::new(Mutex::new(Vec::<(String, Instant)>::new()));
    let seen = Arc::clone(&calls);
    let endpoint = stand_in(move |parts, _| {
        let mut calls = seen.lock().unwrap();
        let path = parts.uri.path().to_owned();
        calls.push((path.clone(), Instant::now()));
        let asks = calls
            .iter()
            .filter(|(p, _)| p.ends_with("pre-reboot"))
            .count();
        let json = "application/json";
        if path.ends_with("steady-state") {
            return (200, json, br#"{"outcome":"released"}"#.to_vec());
        }
        match asks {
            1 => (
                200,
                json,
                br#"{"outcome":"granted","lease_seconds":3}"#.to_vec(),
            ),
            n if n <= taken_after + 1 => (
                200,
                json,
                br#"{"outcome":"already_held","lease_seconds":3}"#.to_vec(),
            ),
            _ => (
                423,
                json,
                br#"{"kind":"slot_taken","value":"another node took it over"}"#.to_vec(),
            ),
        }
    })
    .await;
    (format!("{endpoint}/"), calls)
}

/// A stand-in that never takes the slot over.
const NEVER_TAKEN: usize = usize::MAX - 1;

/// `fleetlock lock --group jobs --app APP -- COMMAND...` against `url`,
/// with a machine id of its own.
fn lock_around(url: &str, app: &str, command: &[&str]) -> Command {
    let mut args = vec!["lock", "--group", "jobs", "--app", app, "--"];
    args.extend_from_slice(command);
    fleetlock(url, &machine_id_file(app), &args)
}

/// Whether the last call the stand-in saw was a steady-state: the slot
/// given back at the end.
fn gave_back_last(calls: &Mutex<Vec<(String, Instant)>>) -> bool {
    calls
        .lock()
        .unwrap()
        .last()
        .is_some_and(|(path, _)| path.ends_with("steady-state"))
}

#[tokio::test]
async fn a_command_outlives_its_lease_with_renewals_well_inside_it() {
    let (url, calls) = leasing_stand_in(NEVER_TAKEN).await;
    let job = ran(&mut lock_around(
        &url,
        "long",
        &["sh", "-c", "sleep 5; exit 3"],
    ))
    .await;
    assert_eq!(job.code, 3, "the command's own code: {}", job.stderr);
    let asks: Vec<Instant> = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path.ends_with("pre-reboot"))
        .map(|(_, at)| *at)
        .collect();
    assert!(
        asks.len() >= 4,
        "a grant and renewals over 5 s: {}",
        asks.len()
    );
    // A third of the 3 s lease apart (1 s), with room for a busy machine:
    // a renewal scheduled late in the lease, let alone past it, fails.
    for pair in asks.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap < Duration::from_secs(2),
            "a renewal {gap:?} after the last, late in a 3 s lease"
        );
    }
    assert!(gave_back_last(&calls), "the slot given back at the end");
}

#[tokio::test]
async fn a_lost_slot_stops_the_command_with_its_own_exit_code() {
    let (url, calls) = leasing_stand_in(1).await;
    let started = Instant::now();
    let job = ran(&mut lock_around(&url, "lost", &["sleep", "60"])).await;
    assert_eq!(job.code, 4, "{}", job.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "stopped, not run out"
    );
    assert!(
        job.stderr
            .contains("was lost (another node took it over): the command is stopped"),
        "{}",
        job.stderr
    );
    assert!(gave_back_last(&calls), "{:?}", calls.lock().unwrap());
}

#[tokio::test]
async fn a_signal_reaches_the_command_and_the_slot_is_given_back_after_it() {
    let (url, calls) = leasing_stand_in(NEVER_TAKEN).await;
    let trap = "trap 'exit 9' TERM; while :; do sleep 0.05; done";
    let mut job = lock_around(&url, "signalled", &["sh", "-c", trap])
        .spawn()
        .unwrap();
    let said = collect_stderr(&mut job);
    until_said(&said, "took a slot of group 'jobs'").await;
    // The shell sets its trap as it starts: give it that moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = job.id().unwrap() as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(30), job.wait())
        .await
        .expect("it ends after its command")
        .unwrap();
    assert_eq!(status.code(), Some(9), "{:?}", said.lock().unwrap());
    until_said(&said, "gave back the slot").await;
    assert!(gave_back_last(&calls), "{:?}", calls.lock().unwrap());
}

#[tokio::test]
async fn a_command_that_cannot_start_exits_127_and_gives_the_slot_back() {
    let (url, calls) = leasing_stand_in(NEVER_TAKEN).await;
    let job = ran(&mut lock_around(&url, "missing", &["/nonexistent/job"])).await;
    assert_eq!(job.code, 127, "{}", job.stderr);
    assert!(
        job.stderr.contains("cannot run /nonexistent/job"),
        "{}",
        job.stderr
    );
    assert!(gave_back_last(&calls), "{:?}", calls.lock().unwrap());
}

/// A pre-reboot answered 503 (its write may have landed): `lock` gives back
/// what it may have taken and says so; where that give-back fails too, the
/// line says the slot may be held and what to run.
#[tokio::test]
async fn a_pre_reboot_never_heard_is_given_back_or_named() {
    for steady_state in [200u16, 503] {
        let calls = Arc::new(Mutex::new(Vec::<String>::new()));
        let seen = Arc::clone(&calls);
        let endpoint = stand_in(move |parts, _| {
            let path = parts.uri.path().to_owned();
            seen.lock().unwrap().push(path.clone());
            let status = if path.ends_with("steady-state") {
                steady_state
            } else {
                503
            };
            (
                status,
                "application/json",
                br#"{"kind":"store_unavailable","value":"down"}"#.to_vec(),
            )
        })
        .await;
        let machine = machine_id_file(&format!("unheard-{steady_state}"));
        let job = ran(&mut fleetlock(
            &format!("{endpoint}/"),
            &machine,
            &["lock", "--group", "jobs", "--id", "job-1"],
        ))
        .await;
        assert_eq!(job.code, 3, "{}", job.stderr);
        assert_eq!(
            *calls.lock().unwrap(),
            ["/v1/pre-reboot", "/v1/steady-state"],
            "a give-back after the unheard pre-reboot"
        );
        if steady_state == 200 {
            assert!(
                job.stderr
                    .contains("no answer was heard; any slot that request took was given back"),
                "{}",
                job.stderr
            );
        } else {
            assert!(
                job.stderr
                    .contains("it may be held; run 'fleetlock unlock --group jobs --id job-1'"),
                "{}",
                job.stderr
            );
            assert!(!job.stderr.contains("was given back"), "{}", job.stderr);
        }
    }
}

/// A closed port: nothing was sent, so nothing can be held, and `lock`
/// says so instead of advising an unlock.
#[tokio::test]
async fn a_closed_port_takes_nothing_and_lock_says_no_slot_can_be_held() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let machine = machine_id_file("closed-port");
    let job = ran(&mut fleetlock(
        &format!("http://{closed}/"),
        &machine,
        &["lock", "--group", "jobs", "--id", "job-1"],
    ))
    .await;
    assert_eq!(job.code, 3, "{}", job.stderr);
    assert!(
        job.stderr
            .contains("the FleetLock server cannot be reached"),
        "{}",
        job.stderr
    );
    assert!(!job.stderr.contains("may be held"), "{}", job.stderr);
    assert!(!job.stderr.contains("given back"), "{}", job.stderr);
}

/// A server that streams a chunked 423 without end: `lock` reads 64 KiB of
/// it at most, and ends with a line, instead of filling its memory.
#[tokio::test]
async fn an_endless_answer_is_cut_off_with_a_line() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 4096];
                let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut request).await;
                let head = "HTTP/1.1 423 Locked\r\ncontent-type: application/json\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                while stream.write_all(chunk.as_bytes()).await.is_ok() {}
            });
        }
    });
    let machine = machine_id_file("endless");
    let started = Instant::now();
    let job = ran(&mut fleetlock(
        &format!("http://{addr}/"),
        &machine,
        &["lock", "--group", "jobs", "--id", "job-1"],
    ))
    .await;
    assert_eq!(job.code, 3, "{}", job.stderr);
    assert!(job.stderr.contains("larger than 64 KiB"), "{}", job.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// `lock -- COMMAND` stops the whole job: the command runs in a process
/// group of its own, SIGTERM reaches its grandchildren too, and the slot is
/// given back only once none of them runs. The job never sees the node's
/// secret in its environment.
#[tokio::test]
async fn lock_stops_the_whole_job_and_keeps_the_secret_out_of_it() {
    let (_server, _, url, _) = server(None).await;
    let machine = machine_id_file("whole-job");
    let dir = std::env::temp_dir().join(format!("fleetlock-job-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("grandchild");
    let seen_env = dir.join("env");
    // A shell that runs a grandchild in the foreground, as a job would.
    let script = format!(
        "env > {env}; sh -c 'echo $$ > {marker}; exec sleep 23' ; echo finished",
        env = seen_env.display(),
        marker = marker.display()
    );
    let mut job = fleetlock(
        &url,
        &machine,
        &[
            "lock", "--group", "jobs", "--id", "job", "--", "sh", "-c", &script,
        ],
    )
    .spawn()
    .unwrap();
    let said = collect_stderr(&mut job);
    let grandchild: i32 = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if let Some(pid) = std::fs::read_to_string(&marker)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the job started");
    let env = std::fs::read_to_string(&seen_env).unwrap();
    assert!(!env.contains("FLEETLOCK_URL"), "{env}");
    assert!(!env.contains(url.as_str()));
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &job.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(20), job.wait())
        .await
        .expect("the job ends well before its sleep")
        .unwrap();
    // The grandchild is gone (or a zombie awaiting its reaper), not running
    // on with the slot given back.
    let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.split(' ').nth(2) == Some("Z"),
        "sleep 23 still runs: {state}"
    );
    assert_ne!(status.code(), Some(0), "{:?}", said.lock().unwrap());
    // The slot was given back: another node takes it at once.
    let next = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "next"],
    ))
    .await;
    assert_eq!(next.code, 0, "{}", next.stderr);
    std::fs::remove_dir_all(&dir).ok();
}

/// `lock --keep-url -- COMMAND`: the job asked for the URL, and has it.
#[tokio::test]
async fn lock_keep_url_leaves_the_url_to_a_job_that_asks_for_it() {
    let (_server, _, url, _) = server(None).await;
    let machine = machine_id_file("keep-url");
    let seen = std::env::temp_dir().join(format!("fleetlock-keep-url-{}", std::process::id()));
    let script = format!("printf %s \"$FLEETLOCK_URL\" > {}", seen.display());
    let job = ran(&mut fleetlock(
        &url,
        &machine,
        &[
            "lock",
            "--group",
            "jobs",
            "--id",
            "keeps",
            "--keep-url",
            "--",
            "sh",
            "-c",
            &script,
        ],
    ))
    .await;
    assert_eq!(job.code, 0, "{}", job.stderr);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), url);
    std::fs::remove_file(&seen).ok();
    // Without a command there is nothing to keep it for.
    let alone = ran(&mut fleetlock(
        &url,
        &machine,
        &["lock", "--group", "jobs", "--id", "keeps", "--keep-url"],
    ))
    .await;
    assert_eq!(alone.code, 2, "{}", alone.stderr);
}
