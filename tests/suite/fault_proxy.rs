//! A fault-injecting HTTP/1.1 proxy between the SDK and DynamoDB Local: it
//! forwards real requests to the real server and, on command, resets a
//! connection, delays or drops an answer after the write landed, holds a
//! request back so that it lands late, or answers with a throttling or
//! server error instead of forwarding. The soak run uses it too, with faults
//! drawn at random.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Forward and answer normally.
    None,
    /// Close the connection without forwarding: nothing reaches DynamoDB.
    Reset,
    /// Forward (the write lands), then close without answering.
    DropAnswer,
    /// Forward, then hold the answer this long before passing it on.
    DelayAnswer(Duration),
    /// Hold the request this long, then forward it: its write lands late,
    /// after requests sent later went through.
    #[allow(dead_code)] // the soak run's chaos (benches/soak.rs); the suite holds instead
    DelayForward(Duration),
    /// Hold the request until the test lets it go ([`FaultProxy::release`]),
    /// then forward it; at most [`HOLD_AT_MOST`], inside the SDK's attempt
    /// timeout, so that it lands late and is never retried. The test waits
    /// for it to arrive ([`FaultProxy::until_held`]), never a guessed time.
    Hold,
    /// Answer `400 ThrottlingException` without forwarding.
    Throttle,
    /// Answer `500 InternalServerError` without forwarding.
    ServerError,
    /// Answer `400 ReplicatedWriteConflictException` without forwarding, as
    /// a global table in multi-Region strong consistency answers a write
    /// that raced one from another Region: not applied.
    ReplicatedWriteConflict,
    /// Answer a `DescribeTable` without forwarding, as DynamoDB describes a
    /// global table of two more replicas in this consistency mode
    /// (`STRONG`, or `EVENTUAL`), which DynamoDB Local cannot make.
    #[allow(dead_code)] // the suite's regions tests; not the soak's chaos
    DescribeGlobalTable(&'static str),
}

/// The longest a held request waits for its release: under the SDK's 2 s
/// attempt timeout.
pub const HOLD_AT_MOST: Duration = Duration::from_millis(1_800);

#[derive(Default)]
struct Gates {
    /// A held request has arrived.
    arrived: tokio::sync::Notify,
    /// The test lets the held request go.
    released: tokio::sync::Notify,
}

#[derive(Default)]
struct Plan {
    next: VecDeque<Fault>,
    /// Faults for the next writes (UpdateItem, PutItem, DeleteItem) only,
    /// before `next`: reads pass by them.
    next_writes: VecDeque<Fault>,
    otherwise: Option<Fault>,
    /// Faults drawn at random for requests nothing else plans for.
    chaos: Option<Chaos>,
    /// The chaos meets writes only (UpdateItem, PutItem, DeleteItem).
    chaos_on_writes: bool,
    requests: u64,
    forwarded: u64,
    /// Seconds added to the `Date` of every answer passed on: a clock of
    /// AWS's that disagrees with this machine's.
    date_shift: i64,
    /// Added to every request before it is forwarded or answered: the round
    /// trip a global table's write waits for between two Regions.
    latency: Duration,
}

/// Each fault with its chance in a thousand; `None` otherwise.
struct Chaos {
    faults: Vec<(u64, Fault)>,
    state: u64,
}

impl Chaos {
    fn draw(&mut self) -> Fault {
        // xorshift64*: enough to scatter faults, and the same for a seed.
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let mut roll = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1000;
        for (per_mille, fault) in &self.faults {
            if roll < *per_mille {
                return *fault;
            }
            roll -= per_mille;
        }
        Fault::None
    }
}

pub struct FaultProxy {
    pub addr: SocketAddr,
    plan: Arc<Mutex<Plan>>,
    gates: Arc<Gates>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    pub async fn start(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let plan = Arc::new(Mutex::new(Plan::default()));
        let gates = Arc::new(Gates::default());
        let (shared, shared_gates) = (Arc::clone(&plan), Arc::clone(&gates));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(serve_connection(
                    client,
                    upstream,
                    Arc::clone(&shared),
                    Arc::clone(&shared_gates),
                ));
            }
        });
        Self {
            addr,
            plan,
            gates,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `times` requests meet `fault`, then the standing behaviour.
    pub fn next(&self, fault: Fault, times: usize) {
        let mut plan = self.plan.lock().unwrap();
        plan.next.extend(std::iter::repeat_n(fault, times));
    }

    /// The next `times` writes (UpdateItem, PutItem, DeleteItem) meet
    /// `fault`; reads in between go on as planned otherwise.
    pub fn next_writes(&self, fault: Fault, times: usize) {
        let mut plan = self.plan.lock().unwrap();
        plan.next_writes.extend(std::iter::repeat_n(fault, times));
    }

    /// Every request meets `fault` until changed (`Fault::None` heals).
    pub fn always(&self, fault: Fault) {
        let mut plan = self.plan.lock().unwrap();
        plan.next.clear();
        plan.otherwise = Some(fault);
    }

    /// Every request nothing else plans for meets one of `faults`, each with
    /// its chance in a thousand, drawn from `seed`.
    #[allow(dead_code)] // the soak run's (benches/soak.rs), not the suite's
    pub fn chaos(&self, seed: u64, faults: &[(u64, Fault)]) {
        let mut plan = self.plan.lock().unwrap();
        plan.chaos = Some(Chaos {
            faults: faults.to_vec(),
            state: seed | 1,
        });
    }

    /// As [`FaultProxy::chaos`], for writes only: reads always pass.
    #[allow(dead_code)] // the soak run's (benches/soak.rs), not the suite's
    pub fn chaos_on_writes(&self, seed: u64, faults: &[(u64, Fault)]) {
        self.chaos(seed, faults);
        self.plan.lock().unwrap().chaos_on_writes = true;
    }

    /// Every answer's `Date` header from now on says `seconds` later than
    /// DynamoDB's (earlier when negative).
    /// Every request from now on waits `each` before it is forwarded or
    /// answered, as an MRSC write waits for another Region.
    pub fn latency(&self, each: Duration) {
        self.plan.lock().unwrap().latency = each;
    }

    pub fn shift_dates(&self, seconds: i64) {
        self.plan.lock().unwrap().date_shift = seconds;
    }

    /// Waits until a request planned to meet [`Fault::Hold`] is held.
    pub async fn until_held(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.gates.arrived.notified())
            .await
            .expect("the held request arrived");
    }

    /// Lets the held request go on to DynamoDB.
    pub fn release(&self) {
        self.gates.released.notify_one();
    }

    /// (requests seen, requests forwarded to DynamoDB)
    pub fn counts(&self) -> (u64, u64) {
        let plan = self.plan.lock().unwrap();
        (plan.requests, plan.forwarded)
    }
}

/// Whether `request` is a DynamoDB write, by its `X-Amz-Target`.
fn is_write(request: &[u8]) -> bool {
    let head_end = request
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(request.len());
    let head = String::from_utf8_lossy(&request[..head_end]).to_ascii_lowercase();
    head.lines()
        .filter_map(|line| line.strip_prefix("x-amz-target:"))
        .any(|target| {
            let operation = target.trim().rsplit('.').next().unwrap_or_default();
            matches!(operation, "updateitem" | "putitem" | "deleteitem")
        })
}

fn take_fault(plan: &Mutex<Plan>, write: bool) -> Fault {
    let mut plan = plan.lock().unwrap();
    plan.requests += 1;
    let for_writes = if write {
        plan.next_writes.pop_front()
    } else {
        None
    };
    let planned = for_writes
        .or_else(|| plan.next.pop_front())
        .or(plan.otherwise);
    let chaos_applies = write || !plan.chaos_on_writes;
    let fault = match (planned, plan.chaos.as_mut().filter(|_| chaos_applies)) {
        (Some(fault), _) => fault,
        (None, Some(chaos)) => chaos.draw(),
        (None, None) => Fault::None,
    };
    if matches!(
        fault,
        Fault::None
            | Fault::DropAnswer
            | Fault::DelayAnswer(_)
            | Fault::DelayForward(_)
            | Fault::Hold
    ) {
        plan.forwarded += 1;
    }
    fault
}

async fn serve_connection(
    mut client: TcpStream,
    upstream: SocketAddr,
    plan: Arc<Mutex<Plan>>,
    gates: Arc<Gates>,
) {
    let mut server: Option<TcpStream> = None;
    let mut client_buffer = Vec::new();
    let mut server_buffer = Vec::new();
    loop {
        let Some(request) = read_message(&mut client, &mut client_buffer).await else {
            return;
        };
        let fault = take_fault(&plan, is_write(&request));
        let latency = plan.lock().unwrap().latency;
        if !latency.is_zero() {
            tokio::time::sleep(latency).await;
        }
        match fault {
            Fault::Reset => return,
            Fault::Throttle => {
                let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#;
                if write_canned(&mut client, 400, "Bad Request", body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Fault::ServerError => {
                let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}"#;
                if write_canned(&mut client, 500, "Internal Server Error", body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Fault::ReplicatedWriteConflict => {
                let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException","message":"One or more items in this request are being modified by a request in another Region."}"#;
                if write_canned(&mut client, 400, "Bad Request", body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Fault::DescribeGlobalTable(consistency) => {
                let body = format!(
                    r#"{{"Table":{{"TableName":"locks","TableStatus":"ACTIVE","KeySchema":[{{"AttributeName":"group","KeyType":"HASH"}}],"AttributeDefinitions":[{{"AttributeName":"group","AttributeType":"S"}}],"Replicas":[{{"RegionName":"eu-west-2","ReplicaStatus":"ACTIVE"}},{{"RegionName":"eu-west-3","ReplicaStatus":"ACTIVE"}}],"MultiRegionConsistency":"{consistency}"}}}}"#
                );
                if write_canned(&mut client, 200, "OK", &body).await.is_err() {
                    return;
                }
            }
            fault => {
                if let Fault::DelayForward(delay) = fault {
                    tokio::time::sleep(delay).await;
                }
                if let Fault::Hold = fault {
                    gates.arrived.notify_one();
                    let _ = tokio::time::timeout(HOLD_AT_MOST, gates.released.notified()).await;
                }
                if server.is_none() {
                    server = TcpStream::connect(upstream).await.ok();
                }
                let Some(upstream_conn) = server.as_mut() else {
                    return;
                };
                if upstream_conn.write_all(&request).await.is_err() {
                    return;
                }
                let Some(answer) = read_message(upstream_conn, &mut server_buffer).await else {
                    return;
                };
                match fault {
                    Fault::DropAnswer => return,
                    Fault::DelayAnswer(delay) => tokio::time::sleep(delay).await,
                    _ => {}
                }
                let shift = plan.lock().unwrap().date_shift;
                let answer = if shift == 0 {
                    answer
                } else {
                    shifted_date(answer, shift)
                };
                if client.write_all(&answer).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// `answer` with its `Date` header moved by `seconds`; the body untouched.
fn shifted_date(answer: Vec<u8>, seconds: i64) -> Vec<u8> {
    let Some(end) = answer.windows(4).position(|w| w == b"\r\n\r\n") else {
        return answer;
    };
    let head = String::from_utf8_lossy(&answer[..end]).into_owned();
    let lines: Vec<String> = head
        .split("\r\n")
        .map(|line| match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("date") => {
                match jiff::fmt::rfc2822::parse(value.trim()) {
                    Ok(at) => {
                        let moved = at.timestamp() + jiff::SignedDuration::from_secs(seconds);
                        format!("{name}: {}", moved.strftime("%a, %d %b %Y %H:%M:%S GMT"))
                    }
                    Err(_) => line.to_owned(),
                }
            }
            _ => line.to_owned(),
        })
        .collect();
    let mut shifted = lines.join("\r\n").into_bytes();
    shifted.extend_from_slice(&answer[end..]);
    shifted
}

async fn write_canned(
    client: &mut TcpStream,
    status: u16,
    reason: &str,
    body: &str,
) -> std::io::Result<()> {
    let answer = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/x-amz-json-1.0\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    );
    client.write_all(answer.as_bytes()).await
}

/// Reads one HTTP/1.1 message (headers and a Content-Length or chunked body)
/// from `stream`; bytes past it stay in `buffer` for the next call.
async fn read_message(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Vec<u8>> {
    loop {
        if let Some(length) = complete_message_length(buffer) {
            let rest = buffer.split_off(length);
            return Some(std::mem::replace(buffer, rest));
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
}

fn complete_message_length(buffer: &[u8]) -> Option<usize> {
    let head_end = buffer.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let header = |name: &str| {
        head.lines()
            .find_map(|line| line.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    if header("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        let body = &buffer[head_end..];
        let end = body.windows(5).position(|w| w == b"0\r\n\r\n")?;
        return Some(head_end + end + 5);
    }
    let length: usize = header("content-length:")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    (buffer.len() >= head_end + length).then_some(head_end + length)
}
