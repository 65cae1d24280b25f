//! The client side of FleetLock, as Zincati speaks it: for `fleetlock lock`
//! and `unlock`, and for any tool that wants the same slots. One place builds
//! Zincati-shaped requests: `POST {base_url}v1/pre-reboot` (or
//! `v1/steady-state`) with the `fleet-lock-protocol: true` header, a
//! pretty-printed `{"client_params": {"id", "group"}}` body, no Content-Type,
//! and HTTP Basic credentials taken from the URL's user info. The cases
//! `fleetlock check` holds a server to, sent through it, are in
//! `conformance`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fleetlock::client::ClientError> {
//! use fleetlock::client::{Call, Lock};
//! let lock = Lock::new("https://fleet:SECRET@fleetlock.example.com/")?;
//! let answer = lock.call(Call::PreReboot, "my-job-id", "workers").await?;
//! println!("{answer:?}");
//! # Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::domain::input::printable;

// The ids: Zincati's for a machine, and a job's of its own.
pub(crate) mod conformance;
mod ids;
use crate::http::PROTOCOL_HEADER;
pub use ids::{
    NotAMachineId, ZINCATI_APP_ID, app_specific_id, job_id, parse_machine_id, zincati_id,
};

/// How long one request may take, connection and TLS included.
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Which of the two calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Take a slot (`v1/pre-reboot`).
    PreReboot,
    /// Give it back (`v1/steady-state`).
    SteadyState,
}

impl Call {
    fn path(self) -> &'static str {
        match self {
            Call::PreReboot => "v1/pre-reboot",
            Call::SteadyState => "v1/steady-state",
        }
    }
}

/// What the server answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// A 2xx: the slot is taken (or given back). This server's body says
    /// how (`outcome`: `granted`, `already_held`, ...) and, in a group with
    /// a lease, how long the slot is held without asking again; another
    /// server's 2xx may say neither.
    Yes {
        outcome: Option<String>,
        lease: Option<Duration>,
    },
    /// 423: a refusal of the lock itself (full, paused, settling, outside a
    /// window), or 429 (throttled); asking again later may succeed.
    Refused { kind: String, value: String },
    /// Any other 4xx: a mistake in what was sent (credentials, group, path),
    /// which asking again will not mend.
    Rejected {
        status: u16,
        kind: String,
        value: String,
    },
}

/// Why no answer came: the server could not be reached, or failed (5xx).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientError {
    /// The URL cannot be used; nothing was sent.
    Url(String),
    /// No connection or no TLS: nothing was sent, so nothing was taken.
    NotSent(String),
    /// Sent, but no answer came in time or the connection broke: the
    /// server may have acted on it.
    Unreachable(String),
    /// A 5xx, or an answer that is not HTTP.
    Server { status: u16, detail: String },
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Url(why) => write!(f, "the FleetLock URL cannot be used: {why}"),
            ClientError::NotSent(why) | ClientError::Unreachable(why) => {
                write!(f, "the FleetLock server cannot be reached: {why}")
            }
            ClientError::Server { status, detail } => {
                write!(f, "the FleetLock server failed ({status}): {detail}")
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A FleetLock server as Zincati's `base_url` names it.
#[derive(Clone)]
pub struct Lock {
    base: url::Url,
    authorization: Option<String>,
    tls: Arc<rustls::ClientConfig>,
    /// How long a request may take, answer read whole: [`REQUEST_TIMEOUT`].
    timeout: Duration,
}

impl fmt::Debug for Lock {
    /// Never the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lock")
            .field("base", &redacted(&self.base))
            .finish()
    }
}

/// The URL with its password replaced, for messages.
pub(crate) fn redacted(url: &url::Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("***"));
    }
    shown.to_string()
}

impl Lock {
    /// A server from a `base_url` exactly as Zincati reads one: `http` or
    /// `https`, user info as Basic credentials, paths joined by URL rules (a
    /// base with a path must end with `/`, or its last segment is dropped).
    pub fn new(base_url: &str) -> Result<Self, ClientError> {
        let base = url::Url::parse(base_url.trim()).map_err(|e| {
            ClientError::Url(format!(
                "not a URL ({e}); expected https://NAME:SECRET@host/"
            ))
        })?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(ClientError::Url(format!(
                "the scheme is {}, not http or https",
                base.scheme()
            )));
        }
        if base.host_str().is_none_or(str::is_empty) {
            return Err(ClientError::Url("there is no host".into()));
        }
        let authorization = (!base.username().is_empty()).then(|| {
            let decode = |s: &str| {
                percent_encoding::percent_decode_str(s)
                    .decode_utf8_lossy()
                    .into_owned()
            };
            let pair = format!(
                "{}:{}",
                decode(base.username()),
                decode(base.password().unwrap_or(""))
            );
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        });
        Ok(Self {
            base,
            authorization,
            tls: Arc::new(tls_config()),
            timeout: REQUEST_TIMEOUT,
        })
    }

    /// The same server with another request timeout (a test's, in
    /// milliseconds).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The URL a call goes to, without credentials.
    pub(crate) fn url_of(&self, call: Call) -> Result<url::Url, ClientError> {
        let mut url = self
            .base
            .join(call.path())
            .map_err(|e| ClientError::Url(e.to_string()))?;
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Ok(url)
    }

    /// One call, as Zincati makes it.
    pub(crate) async fn call(
        &self,
        call: Call,
        id: &str,
        group: &str,
    ) -> Result<Reply, ClientError> {
        let (status, body) = self.send(&Probe::zincati(call, id, group)).await?;
        reply_of(status, &body)
    }

    /// One request, Zincati's or a deliberate variation of it (for
    /// `fleetlock check`): the status and the body the server answered.
    pub(crate) async fn send(&self, probe: &Probe) -> Result<(u16, Vec<u8>), ClientError> {
        let url = self.url_of(probe.call)?;
        let exchange = self.exchange(&url, probe);
        tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                ClientError::Unreachable(format!(
                    "no answer within {}",
                    crate::domain::time::human_duration(self.timeout)
                ))
            })?
    }

    async fn exchange(&self, url: &url::Url, probe: &Probe) -> Result<(u16, Vec<u8>), ClientError> {
        let host = url.host_str().unwrap_or_default().to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let tcp = TcpStream::connect((host.trim_matches(['[', ']']), port))
            .await
            .map_err(|e| ClientError::NotSent(format!("{host}:{port}: {e}")))?;
        let mut request = Request::builder()
            .method(probe.method.clone())
            .uri(url.as_str())
            .header(hyper::header::HOST, host_header(url))
            .header(hyper::header::ACCEPT, "*/*");
        if probe.protocol_header {
            request = request.header(PROTOCOL_HEADER, "true");
        }
        if let Some(content_type) = probe.content_type {
            request = request.header(hyper::header::CONTENT_TYPE, content_type);
        }
        if let Some(authorization) = self.authorization.as_ref().filter(|_| probe.credentials) {
            request = request.header(hyper::header::AUTHORIZATION, authorization);
        }
        let request = request
            .body(Full::new(Bytes::from(probe.body.clone())))
            .map_err(|e| ClientError::Url(e.to_string()))?;
        if url.scheme() == "https" {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|e| ClientError::Url(format!("{host}: {e}")))?;
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(&self.tls))
                .connect(name, tcp)
                .await
                .map_err(|e| ClientError::NotSent(format!("TLS with {host}: {e}")))?;
            send(TokioIo::new(tls), request).await
        } else {
            send(TokioIo::new(tcp), request).await
        }
    }

    /// Whether the URL carries credentials (sent as HTTP Basic).
    pub(crate) fn has_credentials(&self) -> bool {
        self.authorization.is_some()
    }

    /// A warning when the URL would send its credentials in the clear:
    /// `http://` with a user part to a host other than this machine's
    /// loopback. Warned, not refused: Zincati accepts such a URL, and a
    /// private network may mean it.
    pub(crate) fn cleartext_warning(&self) -> Option<String> {
        if self.base.scheme() != "http" || self.authorization.is_none() {
            return None;
        }
        let loopback = match self.base.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
            None => false,
        };
        (!loopback).then(|| {
            format!(
                "warning: the URL sends its credentials unencrypted (http://) to {}: anyone on \
                 the way can read the secret; use https://",
                self.base.host_str().unwrap_or_default()
            )
        })
    }

    /// The base URL, password hidden.
    pub(crate) fn shown(&self) -> String {
        redacted(&self.base)
    }

    /// The path of the base URL (Zincati drops its last segment unless it
    /// ends with `/`).
    pub(crate) fn base_path(&self) -> &str {
        self.base.path()
    }
}

/// One request to a FleetLock server: Zincati's by default
/// ([`Probe::zincati`]), with every part a test may vary.
#[derive(Clone, Debug)]
pub(crate) struct Probe {
    pub(crate) call: Call,
    pub(crate) method: hyper::Method,
    pub(crate) body: Vec<u8>,
    pub(crate) protocol_header: bool,
    pub(crate) content_type: Option<&'static str>,
    /// Send the URL's credentials (when it has any).
    pub(crate) credentials: bool,
}

impl Probe {
    /// Exactly what Zincati sends: POST, the protocol header, a
    /// pretty-printed body, no Content-Type, the URL's credentials.
    pub(crate) fn zincati(call: Call, id: &str, group: &str) -> Self {
        let body = serde_json::to_string_pretty(&serde_json::json!({
            "client_params": { "id": id, "group": group }
        }))
        .expect("a JSON value serializes");
        Self {
            call,
            method: hyper::Method::POST,
            body: body.into_bytes(),
            protocol_header: true,
            content_type: None,
            credentials: true,
        }
    }
}

fn host_header(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

async fn send<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<(u16, Vec<u8>), ClientError>
where
    IO: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let unreachable = |e: hyper::Error| ClientError::Unreachable(e.to_string());
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(unreachable)?;
    tokio::spawn(connection);
    let response = sender.send_request(request).await.map_err(unreachable)?;
    let status = response.status().as_u16();
    // A server streaming an endless body must not fill this process's
    // memory: past the cap, the answer is refused.
    let body = http_body_util::Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| match e.downcast::<http_body_util::LengthLimitError>() {
            Ok(_) => ClientError::Server {
                status,
                detail: format!(
                    "the answer's body is larger than {} KiB, more than any FleetLock answer",
                    MAX_ANSWER_BYTES / 1024
                ),
            },
            Err(other) => ClientError::Unreachable(other.to_string()),
        })?
        .to_bytes()
        .to_vec();
    Ok((status, body))
}

/// The most of an answer's body this client reads: a FleetLock answer is a
/// few hundred bytes.
pub(crate) const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// The most of a server's text a line shows.
const SHOWN_MOST: usize = 500;

/// The answer a status and body make: 2xx yes, 423 refused, other 4xx
/// rejected, anything else a server fault.
pub(crate) fn reply_of(status: u16, body: &[u8]) -> Result<Reply, ClientError> {
    let code = StatusCode::from_u16(status).map_err(|_| ClientError::Server {
        status,
        detail: "not an HTTP status".into(),
    })?;
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    if code.is_success() {
        let field = |name: &str| parsed.as_ref().and_then(|json| json.get(name));
        return Ok(Reply::Yes {
            outcome: field("outcome")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned),
            lease: field("lease_seconds")
                .and_then(serde_json::Value::as_u64)
                .map(Duration::from_secs),
        });
    }
    let field = |name: &str| {
        parsed
            .as_ref()
            .and_then(|json| json.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    // As Zincati names a body that is not {kind, value}. Whatever the server
    // wrote reaches a terminal only escaped.
    let kind = field("kind").map_or_else(
        || format!("generic_http_{status}"),
        |k| printable(&k, SHOWN_MOST),
    );
    let value = field("value").map_or_else(
        || {
            let text = String::from_utf8_lossy(body);
            let text: String = text.chars().take(200).collect();
            format!(
                "the server answered {status} without a FleetLock body: {}",
                printable(&text, SHOWN_MOST)
            )
        },
        |v| printable(&v, SHOWN_MOST),
    );
    match status {
        // 429: API Gateway's throttling, with no FleetLock body; asking again
        // later mends it, as it mends a full group.
        423 | 429 => Ok(Reply::Refused { kind, value }),
        400..=499 => Ok(Reply::Rejected {
            status,
            kind,
            value,
        }),
        _ => Err(ClientError::Server {
            status,
            detail: value,
        }),
    }
}

fn tls_config() -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    // A certificate the system cannot parse is skipped, as curl does.
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("the provider supports TLS 1.2 and 1.3")
    .with_root_certificates(roots)
    .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::ids::hmac_sha256;
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2 of RFC 4231.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let hex: String = mac.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn zincatis_id_is_systemds_app_specific_id() {
        // Computed apart from this code, with Python's hmac module:
        // hmac.new(bytes.fromhex(MACHINE), bytes.fromhex(ZINCATI_APP), sha256),
        // cut to 16 bytes, byte 6 = (b & 0x0f) | 0x40, byte 8 = (b & 0x3f) | 0x80.
        let machine = parse_machine_id("e0f3745b108f471cbd4883c6fbed8cdd").unwrap();
        assert_eq!(zincati_id(&machine), "8f040e49ad9a45a8b0c617313becf153");
        // And by systemd itself, on a Debian host with that machine id:
        // `systemd-id128 machine-id --app-specific=de35106b6ec24688b63afddaa156679b`.
        let machine = parse_machine_id("3d1219c7c4c5404aaa1f6d2a48adfda4").unwrap();
        assert_eq!(zincati_id(&machine), "975228d46dc94622b9bbe16671e2b58d");
    }

    /// The node-side unit that tags an instance computes the same id, with
    /// the same application id, and puts it in the tag `status` reads.
    #[test]
    fn the_tagging_unit_uses_zincatis_application_id_and_the_tag_read() {
        let script = include_str!("../contrib/systemd/fleetlock-id-tag");
        let app: String = ZINCATI_APP_ID.iter().map(|b| format!("{b:02x}")).collect();
        assert!(script.contains(&format!("--app-specific={app}")), "{app}");
        let tag = crate::aws::instance_tags::ID_TAG;
        assert!(script.contains(&format!("Key={tag},")), "{tag}");
    }

    #[test]
    fn job_ids_are_uuid_shaped_and_never_zincatis() {
        let machine = parse_machine_id("e0f3745b108f471cbd4883c6fbed8cdd\n").unwrap();
        let zincati = zincati_id(&machine);
        let backup = job_id(&machine, "backup");
        let podman = job_id(&machine, "podman-auto-update");
        for id in [&zincati, &backup, &podman] {
            assert_eq!(id.len(), 32);
            assert_eq!(&id[12..13], "4", "version 4: {id}");
            assert!("89ab".contains(&id[16..17]), "variant: {id}");
        }
        assert_ne!(backup, zincati);
        assert_ne!(podman, zincati);
        assert_ne!(backup, podman);
        // The same machine and name: the same id, on every run.
        assert_eq!(job_id(&machine, "backup"), backup);
        let other = parse_machine_id("00000000000000000000000000000001").unwrap();
        assert_ne!(job_id(&other, "backup"), backup);
        for bad in [
            "",
            "xyz",
            "e0f3745b108f471cbd4883c6fbed8cd",
            "g0f3745b108f471cbd4883c6fbed8cdd",
        ] {
            assert!(parse_machine_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn urls_join_as_zincati_joins_them_and_credentials_stay_out_of_them() {
        let with_slash = Lock::new("https://fleet:s%40cret@h.example/Prod/").unwrap();
        assert_eq!(
            with_slash.url_of(Call::PreReboot).unwrap().as_str(),
            "https://h.example/Prod/v1/pre-reboot"
        );
        assert_eq!(
            with_slash.authorization.as_deref(),
            Some("Basic ZmxlZXQ6c0BjcmV0"),
            "fleet:s@cret, percent-decoded"
        );
        assert!(!format!("{with_slash:?}").contains("cret"));
        let without = Lock::new("http://h.example:8080/Prod").unwrap();
        assert_eq!(
            without.url_of(Call::SteadyState).unwrap().as_str(),
            "http://h.example:8080/v1/steady-state"
        );
        assert!(without.authorization.is_none());
        for bad in ["", "h.example", "ftp://h.example/", "https://"] {
            assert!(
                matches!(Lock::new(bad), Err(ClientError::Url(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn answers_are_yes_refused_rejected_or_a_server_fault() {
        let body = br#"{"kind":"semaphore_full","value":"all 1 slot(s) are taken"}"#;
        assert_eq!(
            reply_of(200, b"{}").unwrap(),
            Reply::Yes {
                outcome: None,
                lease: None
            }
        );
        assert_eq!(
            reply_of(200, br#"{"outcome":"already_held","lease_seconds":1800}"#).unwrap(),
            Reply::Yes {
                outcome: Some("already_held".into()),
                lease: Some(Duration::from_secs(1800))
            }
        );
        assert_eq!(
            reply_of(423, body).unwrap(),
            Reply::Refused {
                kind: "semaphore_full".into(),
                value: "all 1 slot(s) are taken".into()
            }
        );
        assert!(matches!(
            reply_of(401, b"{\"kind\":\"unauthorized\",\"value\":\"v\"}").unwrap(),
            Reply::Rejected { status: 401, .. }
        ));
        let warned = |url: &str| Lock::new(url).unwrap().cleartext_warning().is_some();
        assert!(warned("http://fleet:s@fleetlock.internal/"));
        assert!(!warned("https://fleet:s@fleetlock.internal/"));
        assert!(!warned("http://fleet:s@127.0.0.1:8080/"));
        assert!(!warned("http://fleet:s@[::1]:8080/"));
        assert!(
            !warned("http://fleetlock.internal/"),
            "no credentials, nothing to leak"
        );
        // A server's text cannot forge a line on the terminal.
        let forged = br#"{"kind":"semaphore_full\u001b[2K","value":"full\r\nfleetlock: took a slot of group 'workers'"}"#;
        let Reply::Refused { kind, value } = reply_of(423, forged).unwrap() else {
            panic!()
        };
        assert_eq!(kind, "semaphore_full\\u{1b}[2K");
        assert!(!value.contains('\n') && !value.contains('\r'), "{value}");
        assert!(value.contains("full\\r\\nfleetlock: took"), "{value}");
        // API Gateway's throttling: asked again, like a full group.
        assert!(matches!(
            reply_of(429, b"Too Many Requests").unwrap(),
            Reply::Refused { ref kind, .. } if kind == "generic_http_429"
        ));
        assert!(matches!(
            reply_of(503, body),
            Err(ClientError::Server { status: 503, .. })
        ));
    }
}
