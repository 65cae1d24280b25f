//! `lock --wait`'s loop, the one the command runs, with a pacing and a
//! request timeout in milliseconds, against a stand-in that answers a script:
//! which answers it asks again after (5xx, 429, no answer in time, a
//! refusal), which it stops at (a 4xx), how its pauses grow, and what it gives
//! back when it ends without having heard a grant.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use fleetlock::cli::lock::{self, Checked, Ended, Identity, Pacing, Request, UrlSource};
use fleetlock::client::{Call, Lock};
use fleetlock::domain::input::{GroupName, NodeId};

/// What the stand-in does with one request.
#[derive(Clone, Copy, Debug)]
enum Reply {
    /// An answer: status and body.
    Says(u16, &'static str),
    /// None: the connection stays open, silent.
    Silent,
}

const UNAVAILABLE: Reply = Reply::Says(503, r#"{"kind":"store_unavailable","value":"down"}"#);
/// API Gateway's throttling answer: no FleetLock body.
const THROTTLED: Reply = Reply::Says(429, r#"{"message":"Too Many Requests"}"#);
const FULL: Reply = Reply::Says(
    423,
    r#"{"kind":"group_full","value":"the only reboot slot is held"}"#,
);
const GRANTED: Reply = Reply::Says(200, r#"{"kind":"granted","value":"granted"}"#);

/// A server that answers pre-reboots from `script` in order (the last one
/// again once it runs out) and every steady-state with `steady_state`; the
/// paths it was asked, in order.
async fn scripted(script: Vec<Reply>, steady_state: Reply) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let asked = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&asked);
    tokio::spawn(async move {
        let mut pre_reboots = 0usize;
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut head = [0u8; 8192];
            let read = stream.read(&mut head).await.unwrap_or(0);
            let text = String::from_utf8_lossy(&head[..read]).into_owned();
            // The client sends the absolute form (`POST http://host/v1/...`).
            let target = text.split(' ').nth(1).unwrap_or("");
            let path = url::Url::parse(target)
                .map_or_else(|_| target.to_owned(), |url| url.path().to_owned());
            seen.lock().unwrap().push(path.clone());
            let reply = if path.ends_with("pre-reboot") {
                pre_reboots += 1;
                script[(pre_reboots - 1).min(script.len() - 1)]
            } else {
                steady_state
            };
            tokio::spawn(async move {
                match reply {
                    Reply::Says(status, body) => {
                        let answer = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                             content-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = stream.write_all(answer.as_bytes()).await;
                    }
                    Reply::Silent => {
                        tokio::time::sleep(Duration::from_secs(30)).await;
                        drop(stream);
                    }
                }
            });
        }
    });
    (format!("http://{addr}/"), asked)
}

/// Pauses from 20 ms doubling to 80 ms; a request has 300 ms.
const QUICK: Pacing = Pacing {
    floor: Duration::from_millis(20),
    ceiling: Duration::from_millis(80),
};

fn checked(url: &str) -> Checked {
    Checked {
        lock: Lock::new(url)
            .unwrap()
            .with_timeout(Duration::from_millis(300)),
        group: GroupName::parse("jobs").unwrap(),
        id: NodeId::parse("job-1").unwrap(),
        pacing: QUICK,
    }
}

fn request(wait: Option<Option<Duration>>) -> Request {
    Request {
        call: Call::PreReboot,
        group: "jobs".into(),
        identity: Identity::Id("job-1".into()),
        url: UrlSource::Environment,
        wait,
    }
}

/// Runs the loop to its end; what it ended with and the lines it said.
async fn waited(checked: &Checked, request: &Request) -> (Ended, Vec<String>) {
    let mut said = Vec::new();
    let ended = lock::run(checked, request, std::future::pending(), &mut |line| {
        said.push(line.to_owned())
    })
    .await;
    (ended, said)
}

/// The pauses the lines announced, in milliseconds.
fn pauses(said: &[String]) -> Vec<u64> {
    said.iter()
        .filter_map(|line| line.strip_prefix("asking again in "))
        .map(|rest| rest.trim_end_matches("ms").parse().unwrap())
        .collect()
}

/// A 503, a 429, a request never answered and a full group are all asked
/// again, after pauses that double from the floor to the ceiling; the grant
/// ends it with the slot taken and nothing given back.
#[tokio::test]
async fn wait_asks_again_after_5xx_429_silence_and_refusals_with_growing_pauses() {
    let script = vec![UNAVAILABLE, THROTTLED, Reply::Silent, FULL, FULL, GRANTED];
    let (url, asked) = scripted(script, GRANTED).await;
    let (ended, said) = waited(&checked(&url), &request(Some(None))).await;
    assert_eq!(ended, Ended::Done, "{said:#?}");
    assert_eq!(
        *asked.lock().unwrap(),
        vec!["/v1/pre-reboot"; 6],
        "six tries, and no give-back of the slot it took"
    );
    assert!(
        said.iter().any(|l| l.contains("no answer within 300ms")),
        "{said:#?}"
    );
    assert!(
        said.iter()
            .any(|l| l.contains("the only reboot slot is held")),
        "{said:#?}"
    );
    assert_eq!(said.last().unwrap(), "took a slot of group 'jobs' as job-1");
    let pauses = pauses(&said);
    assert_eq!(pauses.len(), 5, "{said:#?}");
    // Each within its base and a tenth more: 20, 40, 80, then the ceiling.
    for (pause, base) in pauses.iter().zip([20, 40, 80, 80, 80]) {
        assert!(
            (base..=base + base / 10).contains(pause),
            "pause {pause} ms for a base of {base} ms: {pauses:?}"
        );
    }
}

/// A 4xx that asking again cannot mend (wrong credentials) ends the wait at
/// once with exit 2: one request, no give-back (nothing was granted).
#[tokio::test]
async fn wait_stops_at_an_answer_asking_again_cannot_mend() {
    let wrong = Reply::Says(
        401,
        r#"{"kind":"unauthorized","value":"wrong credentials"}"#,
    );
    let (url, asked) = scripted(vec![wrong], GRANTED).await;
    let (ended, said) = waited(&checked(&url), &request(Some(None))).await;
    assert_eq!(ended, Ended::Usage);
    assert_eq!(ended.code(), 2);
    assert_eq!(*asked.lock().unwrap(), ["/v1/pre-reboot"]);
    assert!(
        said.last().unwrap().contains("asking again would not help"),
        "{said:#?}"
    );
}

/// A wait whose limit passes while the server is down ends with exit 3,
/// and since the last pre-reboot was never heard, a steady-state gives back
/// whatever it may have taken; a limit that passes behind refusals ends
/// with exit 1 and sends nothing more (a refusal took nothing).
#[tokio::test]
async fn a_wait_that_times_out_gives_back_only_what_was_never_heard() {
    let limit = Some(Some(Duration::from_millis(250)));
    let (url, asked) = scripted(vec![UNAVAILABLE], GRANTED).await;
    let (ended, said) = waited(&checked(&url), &request(limit)).await;
    assert_eq!(ended, Ended::Unreachable, "{said:#?}");
    let asked = asked.lock().unwrap().clone();
    assert!(asked.len() >= 2, "asked again before the limit: {asked:?}");
    assert_eq!(asked.last().unwrap(), "/v1/steady-state", "{asked:?}");
    assert_eq!(
        asked.iter().filter(|p| p.ends_with("steady-state")).count(),
        1
    );
    assert!(
        said.last().unwrap().contains(
            "the last request was not answered; any slot that request took was given back"
        ),
        "{said:#?}"
    );

    let (url, asked) = scripted(vec![FULL], GRANTED).await;
    let (ended, said) = waited(&checked(&url), &request(limit)).await;
    assert_eq!(ended, Ended::Refused, "{said:#?}");
    let asked = asked.lock().unwrap().clone();
    assert!(asked.len() >= 2, "{asked:?}");
    assert!(asked.iter().all(|p| p.ends_with("pre-reboot")), "{asked:?}");
    assert!(said.last().unwrap().contains("giving up"), "{said:#?}");
}

/// Stopped (Ctrl-C, SIGTERM) while a pre-reboot is unanswered: the slot it
/// may have taken is given back before the loop ends, and where that
/// give-back fails, the line names the unlock to run.
#[tokio::test]
async fn stopped_mid_request_gives_back_or_names_the_slot() {
    for (steady_state, line) in [
        (
            GRANTED,
            "stopped while asking; any slot that request took was given back",
        ),
        (
            UNAVAILABLE,
            "it may be held; run 'fleetlock unlock --group jobs --id job-1'",
        ),
    ] {
        let (url, asked) = scripted(vec![Reply::Silent], steady_state).await;
        let checked = checked(&url);
        let first_asked = Arc::clone(&asked);
        let stop = async move {
            while first_asked.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        let mut said = Vec::new();
        let ended = lock::run(&checked, &request(Some(None)), stop, &mut |l| {
            said.push(l.to_owned())
        })
        .await;
        assert_eq!(ended, Ended::Refused, "{said:#?}");
        assert_eq!(
            *asked.lock().unwrap(),
            ["/v1/pre-reboot", "/v1/steady-state"]
        );
        assert!(said.last().unwrap().contains(line), "{said:#?}");
    }
}
