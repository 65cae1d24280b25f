use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use aws_sdk_dynamodb::config::retry::RetryPartition;
use fleetlock::aws::load_config;
use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::{GroupName, NodeId};
use fleetlock::domain::lock::{GroupRecord, GroupRules};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::store::LockStore;
use fleetlock::http::Api;
use fleetlock::store::dynamodb::DynamoStore;
use fleetlock::store::memory::MemoryStore;
use fleetlock::test_support::{RequestCounter, counted_client};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{HeaderMap, Request};
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use crate::fault_proxy::FaultProxy;
pub use crate::role_store::RoleStore;
use fleetlock::domain::store::Decisions;

/// A node id the test knows to be valid.
pub fn id(s: &str) -> NodeId {
    NodeId::parse(s).unwrap()
}

/// A group name the test knows to be valid.
pub fn group(s: &str) -> GroupName {
    GroupName::parse(s).unwrap()
}

/// The group's record as the store reads it now; the empty record when
/// nothing is stored.
pub async fn stored<S: LockStore>(store: &S, g: &GroupName) -> GroupRecord {
    let mut groups = store.groups(Some(g)).await.unwrap();
    groups.pop().map(|(_, record)| record).unwrap_or_default()
}

/// The rules of a group the configuration names: `slots`, `settle`, not
/// counted among the groups only `*` covers.
pub fn rules(slots: u32, settle: std::time::Duration) -> GroupRules {
    GroupRules {
        slots,
        settle,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

/// What a pre-reboot of `node` in `group` at `at` is answered, by any store.
pub async fn take<S: LockStore>(
    store: &S,
    group: &GroupName,
    node: &str,
    rules: GroupRules,
    at: fleetlock::domain::time::Timestamp,
) -> fleetlock::domain::lock::Acquire {
    let node = NodeId::parse(node).unwrap();
    store
        .acquire(group, &node, rules, at)
        .await
        .unwrap()
        .outcome
}

/// A group's item as DynamoDB holds it, read consistently (empty if none).
pub async fn raw_item(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    group: &str,
) -> std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue> {
    client
        .get_item()
        .table_name(table)
        .key(
            "group",
            aws_sdk_dynamodb::types::AttributeValue::S(group.into()),
        )
        .consistent_read(true)
        .send()
        .await
        .unwrap()
        .item
        .unwrap_or_default()
}

pub const ZINCATI_ID: &str = "e0f3745b108f471cbd4883c6fbed8cdd";

/// The body Zincati sends: `serde_json::to_string_pretty` of its request.
pub fn zincati_body(id: &str, group: &str) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "client_params": { "id": id, "group": group }
    }))
    .unwrap()
}

/// The HTTP face of a service over `store`.
pub fn api<S: LockStore>(groups: &str, store: S, auth: Auth) -> Arc<Api<S>> {
    Arc::new(Api::new(
        FleetLock::new(GroupSlots::parse(groups).unwrap(), store),
        auth,
    ))
}

/// The embedded store, no client authentication.
pub fn memory_api(groups: &str) -> Arc<Api<MemoryStore>> {
    api(groups, MemoryStore::default(), Auth::Disabled)
}

/// `Authorization: Basic ...`, as Zincati derives it from `https://NAME:SECRET@host/`.
pub fn basic_auth(name: &str, secret: &str) -> String {
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{name}:{secret}"));
    format!("Basic {token}")
}

/// The DynamoDB Local endpoint set by `./scripts/test` (or `scripts/cargo-runner`). Lock tests never run
/// against anything but loopback.
pub fn local_dynamodb_endpoint() -> String {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is unset: the DynamoDB tests need DynamoDB Local. \
             Run ./scripts/test (or cargo test, once ./scripts/test has installed it), \
             which starts it and sets the variable."
        )
    });
    assert!(
        endpoint.starts_with("http://127.0.0.1:") || endpoint.starts_with("http://localhost:"),
        "AWS_ENDPOINT_URL={endpoint} is not on loopback; the tests only use DynamoDB Local"
    );
    endpoint
}

pub fn unique_table_name(prefix: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A fresh table in DynamoDB Local (made with the harness's key, as a
/// deployer makes it), and the store on it as production calls it: each
/// operation signed as the role that makes it ([`RoleStore`]); a counter of
/// the HTTP requests the store sends.
pub async fn dynamo_store(prefix: &str) -> (RoleStore, RequestCounter) {
    local_dynamodb_endpoint();
    let (client, _) = counted_client().await;
    let table = unique_table_name(prefix);
    // The name is this run's own: a table found already is the one a retried
    // CreateTable made (its first attempt's answer lost on a cold start).
    DynamoStore::new(client, &table)
        .create_table()
        .await
        .unwrap();
    let counter = RequestCounter::default();
    (RoleStore::new(&table, &counter).await, counter)
}

/// The service on a random loopback port, stopped when dropped.
pub struct TestServer {
    pub addr: SocketAddr,
    _stop: oneshot::Sender<()>,
}

pub async fn spawn_server<S: LockStore>(api: Arc<Api<S>>) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let limits = fleetlock::http::server::Limits::default();
    tokio::spawn(fleetlock::http::server::serve(
        listener,
        api,
        limits,
        async {
            let _ = stopped.await;
        },
    ));
    TestServer { addr, _stop: stop }
}

pub struct HttpResponse {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl HttpResponse {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&self.body)))
    }

    /// What a 2xx answer's `outcome`, or a refusal's `kind`, says.
    pub fn word(&self) -> String {
        self.json()["outcome"]
            .as_str()
            .map_or_else(|| self.kind(), str::to_owned)
    }

    /// The answer's kind, which must be one of the closed set.
    pub fn kind(&self) -> String {
        let kind = self.json()["kind"].as_str().unwrap_or("").to_owned();
        assert!(
            kind.is_empty() || fleetlock::http::every_kind().any(|known| known == kind),
            "kind {kind:?} is not in the closed set"
        );
        kind
    }
}

/// One HTTP/1.1 request with exactly the headers given (plus Host), no
/// Content-Type unless a test adds one.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> HttpResponse {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    HttpResponse {
        status,
        headers,
        body,
    }
}

/// A FleetLock call exactly as Zincati makes it: POST, the protocol header,
/// `accept: */*`, a pretty-printed body, no Content-Type, no User-Agent.
pub async fn zincati(addr: SocketAddr, endpoint: &str, id: &str, group: &str) -> HttpResponse {
    send(
        addr,
        "POST",
        &format!("/v1/{endpoint}"),
        &[("fleet-lock-protocol", "true"), ("accept", "*/*")],
        zincati_body(id, group),
    )
    .await
}

/// The log fields the dashboard's Logs Insights queries read from the log
/// group behind `placeholder` (e.g. `function_log_group`): the fields each
/// query filters, groups or shows, without functions, keywords, aliases and
/// Logs Insights' own `@` fields. The tests check them against the lines the
/// binary really writes.
pub fn dashboard_fields(placeholder: &str) -> std::collections::BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "filter", "stats", "by", "as", "fields", "sort", "desc", "asc", "limit", "and", "or",
        "not", "in",
    ];
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/infra/dashboard.json.tftpl");
    // Placeholders sit inside JSON strings: the template is JSON as it is.
    let body: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let source = format!("SOURCE '${{{placeholder}}}' |");
    let mut fields = std::collections::BTreeSet::new();
    for widget in body["widgets"].as_array().unwrap() {
        let query = widget["properties"]["query"].as_str().unwrap_or_default();
        let Some(query) = query.strip_prefix(&source) else {
            continue;
        };
        // Without string literals, every word with what follows it.
        let mut bare: String = query.split('\'').step_by(2).collect::<Vec<_>>().join(" ");
        bare.push(' ');
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '@';
        let mut previous = "";
        for (at, word) in bare
            .match_indices(|c: char| !is_word(c))
            .scan(0, |start, (at, sep)| {
                let word = &bare[*start..at];
                *start = at + sep.len();
                Some((at, word))
            })
        {
            if word.is_empty() {
                continue;
            }
            let is_function = bare[at..].starts_with('(');
            let is_field = word.starts_with(|c: char| c.is_ascii_alphabetic())
                && !is_function
                && previous != "as"
                && !KEYWORDS.contains(&word);
            if is_field {
                fields.insert(word.to_owned());
            }
            previous = word;
        }
    }
    fields
}

/// A stand-in for an AWS API on a random loopback port: every request's
/// method, path, headers and body go to `answer`, which gives the status, the
/// content type and the body. Returns the endpoint URL.
pub async fn stand_in<F>(answer: F) -> String
where
    F: Fn(&hyper::http::request::Parts, Bytes) -> (u16, &'static str, Vec<u8>)
        + Send
        + Sync
        + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let answer = Arc::new(answer);
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let answer = Arc::clone(&answer);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(move |request: Request<hyper::body::Incoming>| {
                        let answer = Arc::clone(&answer);
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            // As IAM would: a call outside the caller's
                            // shipped policy never reaches the stand-in.
                            let (status, content_type, body) = crate::iam::judge(&parts, &body)
                                .unwrap_or_else(|| answer(&parts, body));
                            let mut response = hyper::Response::builder()
                                .status(status)
                                .header("content-type", content_type);
                            // An RPC v2 answer names its protocol, as the request did.
                            if let Some(protocol) = parts.headers.get("smithy-protocol") {
                                response = response.header("smithy-protocol", protocol);
                            }
                            Ok::<_, std::convert::Infallible>(
                                response.body(Full::new(Bytes::from(body))).unwrap(),
                            )
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// The lines of a log or of stdout that are JSON objects.
pub fn json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(serde_json::Value::is_object)
        .collect()
}

/// The AWS actions a process sent, from its debug log ("aws request" lines).
pub fn aws_actions(stderr: &str) -> std::collections::BTreeSet<String> {
    json_lines(stderr)
        .into_iter()
        .filter(|line| line["message"] == "aws request")
        .map(|line| line["action"].as_str().unwrap().to_owned())
        .collect()
}

/// A fault-injecting proxy in front of DynamoDB Local.
pub async fn dynamodb_local_proxy() -> FaultProxy {
    let upstream = local_dynamodb_endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    FaultProxy::start(upstream).await
}

/// A fresh table in DynamoDB Local (made with the harness's key), the
/// function's store on it talking through a proxy of its own.
pub async fn proxied_store(prefix: &str) -> (FaultProxy, DynamoStore) {
    let proxy = dynamodb_local_proxy().await;
    let table = unique_table_name(prefix);
    let (client, _) = counted_client().await;
    DynamoStore::new(client, &table)
        .create_table()
        .await
        .unwrap();
    let store = store_through(&proxy, &table, &table).await;
    (proxy, store)
}

/// A store of `table` whose client of its own talks through `proxy`: the
/// functions' own client configuration, but for the retry quota's partition
/// (`partition`): the SDK shares one per partition in a process, and a store
/// of its own keeps one test's (or one region's) retries from using up
/// another's. It signs as the function's role, whose calls these are.
pub async fn store_through(proxy: &FaultProxy, table: &str, partition: &str) -> DynamoStore {
    store_through_as(proxy, table, partition, "function").await
}

/// The same, signed as `principal`'s role.
pub async fn store_through_as(
    proxy: &FaultProxy,
    table: &str,
    partition: &str,
    principal: &str,
) -> DynamoStore {
    let credentials = aws_sdk_dynamodb::config::Credentials::new(
        format!("{principal}.{table}"),
        "x",
        None,
        None,
        "fleetlock-tests",
    );
    let config = fleetlock::aws::dynamodb_config(&load_config().await)
        .credentials_provider(credentials)
        .endpoint_url(proxy.url())
        .retry_partition(
            RetryPartition::custom(partition.to_owned())
                .token_bucket(fleetlock::aws::dynamodb_retry_quota())
                .build(),
        )
        .build();
    DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        table.to_owned(),
    )
}

/// The address `fleetlock serve` prints on its first line, and its stdout's
/// further lines.
pub async fn served_address(
    stdout: tokio::process::ChildStdout,
) -> (
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    SocketAddr,
) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .expect("serve printed its address")
        .unwrap()
        .expect("a line");
    let addr = line
        .strip_prefix("fleetlock listening on http://")
        .and_then(|rest| rest.strip_suffix('/'))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    (lines, addr)
}

/// A fresh table in DynamoDB Local, made by the binary's `create-table`.
pub async fn table_made_by_the_binary(prefix: &str) -> String {
    local_dynamodb_endpoint();
    let table = unique_table_name(prefix);
    let created = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetlock"))
        .arg("create-table")
        .env("FLEETLOCK_TABLE", &table)
        .output()
        .await
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    table
}

/// The access key the tests' own hand uses (tables made, items seeded and
/// read back): the one the IAM enforcer lets do anything.
pub const HARNESS_KEY: &str = "fleetlock-tests";

/// The principal a `fleetlock` command runs as on AWS: the deployer makes
/// the table, `serve` runs with the function's role (docs/security.md), and
/// every other command is a person on call with the operator policy.
pub fn cli_principal(args: &[String]) -> &'static str {
    match args.first().map(String::as_str) {
        Some("create-table") => HARNESS_KEY,
        Some("serve") => "function",
        _ => "operator",
    }
}

/// Runs `command` under `principal`'s policy, as the IAM enforcer in front
/// of DynamoDB Local and the stand-ins judge it (scripts/lib.sh): its access
/// key is the principal's name, bound to its table when the command names
/// one. A test that set or removed the key itself keeps its own.
pub fn under_role(command: &mut tokio::process::Command, principal: &str) {
    let std = command.as_std();
    if std.get_envs().any(|(name, _)| name == "AWS_ACCESS_KEY_ID") {
        return;
    }
    let table = std
        .get_envs()
        .find(|(name, _)| *name == "FLEETLOCK_TABLE")
        .and_then(|(_, value)| value)
        .map(|value| value.to_string_lossy().into_owned());
    let key = match table {
        Some(table) if principal != HARNESS_KEY => format!("{principal}.{table}"),
        _ => principal.to_owned(),
    };
    command.env("AWS_ACCESS_KEY_ID", key);
}

/// Runs a `fleetlock` command under the role it has on AWS ([`cli_principal`]).
pub fn under_cli_role(command: &mut tokio::process::Command) {
    // With a Lambda runtime to poll, the binary is the API function.
    if command
        .as_std()
        .get_envs()
        .any(|(name, value)| name == "AWS_LAMBDA_RUNTIME_API" && value.is_some())
    {
        return under_role(command, "function");
    }
    let args: Vec<String> = command
        .as_std()
        .get_args()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    under_role(command, cli_principal(&args));
}

/// A DynamoDB client configured as the functions' own, signing as
/// `principal` (`function.TABLE`, `drained.TABLE`, ...): what it may do is
/// what the templates give that role, as the IAM enforcer judges it.
pub async fn client_as(principal: &str) -> aws_sdk_dynamodb::Client {
    counted_client_as(principal).await.0
}

/// The same, with a counter of the HTTP requests it sends.
pub async fn counted_client_as(principal: &str) -> (aws_sdk_dynamodb::Client, RequestCounter) {
    let counter = RequestCounter::default();
    let client = crate::role_store::client_signed_as(principal, &counter).await;
    (client, counter)
}
