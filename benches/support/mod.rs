//! What the benchmark and the soak run share: the server under test as a
//! child process, keep-alive HTTP/1.1 connections to it, Zincati's calls, and
//! memory figures from /proc.

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

pub type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// The body Zincati sends, pretty-printed.
pub fn zincati_body(id: &str, group: &str) -> Vec<u8> {
    serde_json::to_vec_pretty(&serde_json::json!({"client_params": {"id": id, "group": group}}))
        .unwrap()
}

/// `fleetlock serve` from `binary` on a free loopback port, on DynamoDB table
/// `table` with these groups and settle times (its DynamoDB requests sent to
/// `endpoint` instead of `AWS_ENDPOINT_URL`, when given); returns the child
/// and its address once it prints that it listens.
pub async fn spawn_serve(
    binary: &str,
    table: &str,
    groups: &str,
    rules: &[(&str, &str)],
    endpoint: Option<&str>,
) -> (Child, String) {
    let mut command = tokio::process::Command::new(binary);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FLEETLOCK_TABLE", table)
        .env("FLEETLOCK_GROUPS", groups)
        .envs(rules.iter().copied())
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(endpoint) = endpoint {
        command.env("AWS_ENDPOINT_URL", endpoint);
    }
    let mut child = command.spawn().expect("spawn fleetlock serve");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines
        .next_line()
        .await
        .unwrap()
        .expect("serve prints its address");
    let addr = line
        .trim_start_matches("fleetlock listening on http://")
        .trim_end_matches('/')
        .to_owned();
    (child, addr)
}

/// One keep-alive HTTP/1.1 connection to the server under test.
pub async fn connect(addr: &str) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(conn);
    sender
}

/// A FleetLock call as Zincati makes it; the status and the JSON answer.
pub async fn call(
    sender: &mut Sender,
    addr: &str,
    endpoint: &str,
    id: &str,
    group: &str,
) -> (u16, serde_json::Value) {
    let request = hyper::Request::post(format!("/v1/{endpoint}"))
        .header("host", addr)
        .header("fleet-lock-protocol", "true")
        .body(Full::new(Bytes::from(zincati_body(id, group))))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or_default())
}

/// A `Vm*` figure of a process, in KiB: `VmRSS` now, `VmHWM` its peak.
pub fn memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
