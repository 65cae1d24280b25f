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
/// `table` (in memory without one) with these groups and settings (its
/// DynamoDB requests sent to `endpoint` instead of `AWS_ENDPOINT_URL`, when
/// given), logging at warn unless the settings say `RUST_LOG`; returns the
/// child and its address once it prints that it listens.
pub async fn spawn_serve(
    binary: &str,
    table: Option<&str>,
    groups: &str,
    rules: &[(&str, &str)],
    endpoint: Option<&str>,
) -> (Child, String) {
    let mut command = tokio::process::Command::new(binary);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("FLEETLOCK_GROUPS", groups)
        .env("RUST_LOG", "warn")
        .envs(rules.iter().copied())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    // Where a caller chose its log level, the logs go to a file, as the
    // journal or CloudWatch would take them, not to the benchmark's output.
    if rules.iter().any(|(name, _)| *name == "RUST_LOG") {
        let log = std::env::temp_dir().join(format!("fleetlock-serve-{}.log", std::process::id()));
        command.stderr(std::fs::File::create(log).expect("create the server's log file"));
    }
    match table {
        Some(table) => command.env("FLEETLOCK_TABLE", table),
        None => command.env_remove("FLEETLOCK_TABLE"),
    };
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

/// The CPU time a process has used, every thread's, user and system, living
/// or exited (/proc's figure, in clock ticks of 10 ms).
pub fn process_cpu_of(pid: u32) -> std::time::Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses; utime and
    // stime are the 14th and 15th.
    let after = stat.rsplit(')').next().unwrap_or("");
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    std::time::Duration::from_millis(ticks * 10)
}
