//! The HTTP edge shared by the Lambda adapter and the local server: routes a
//! request, validates it, asks the service, and writes the FleetLock answer.

use std::time::Instant;

use lambda_http::Body;
use lambda_http::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};

use crate::domain::auth::Auth;
use crate::domain::error::Error;
use crate::domain::input::printable;
use crate::domain::input::{ClientParams, IdRule};
use crate::domain::service::{Answer, FleetLock};
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;
use crate::http::transport::{Refusal, Transport};
use crate::metrics::{EmbeddedMetrics, UNSERVABLE_KINDS};

/// Largest body read. Zincati's is about 100 bytes; an id is at most 256
/// (the stored rule, which a steady-state is read under).
pub const MAX_BODY_BYTES: usize = 4096;

pub const PROTOCOL_HEADER: &str = "fleet-lock-protocol";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    PreReboot,
    SteadyState,
}

impl Endpoint {
    fn as_str(self) -> &'static str {
        match self {
            Endpoint::PreReboot => "pre-reboot",
            Endpoint::SteadyState => "steady-state",
        }
    }

    fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/pre-reboot" => Some(Endpoint::PreReboot),
            "/v1/steady-state" => Some(Endpoint::SteadyState),
            _ => None,
        }
    }
}

/// The HTTP face of the service: client authentication in front of it.
pub struct Api<S> {
    service: FleetLock<S>,
    auth: Auth,
    metrics: Option<EmbeddedMetrics>,
}

/// A refusal before the service was asked, with the request once its body was
/// read (boxed: the error is large and the happy path should not carry it).
type Refused = Box<(Refusal, Option<Checked>)>;

/// A request that passed every check, and who sent it.
struct Checked {
    params: ClientParams,
    client: Option<String>,
}

impl<S: LockStore> Api<S> {
    pub fn new(service: FleetLock<S>, auth: Auth) -> Self {
        Self {
            service,
            auth,
            metrics: None,
        }
    }

    /// Also print CloudWatch embedded metrics for each decision (under Lambda).
    pub(crate) fn with_metrics(mut self, metrics: EmbeddedMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    pub fn service(&self) -> &FleetLock<S> {
        &self.service
    }

    pub(crate) fn auth(&self) -> &Auth {
        &self.auth
    }

    /// Answers one request. `path` is the path after any API Gateway stage. A
    /// body longer than [`MAX_BODY_BYTES`] is refused, so callers may pass the
    /// first `MAX_BODY_BYTES + 1` bytes of a longer one.
    pub async fn handle(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Response<Body> {
        let started = Instant::now();
        let endpoint = Endpoint::from_path(path);
        let (request, decided) = match self.check(path, method, headers, body) {
            Err(refused) => {
                let (err, request) = *refused;
                (request, Err(err))
            }
            Ok((endpoint, request)) => {
                let decided = match endpoint {
                    Endpoint::PreReboot => self.service.pre_reboot(&request.params).await,
                    Endpoint::SteadyState => self.service.steady_state(&request.params).await,
                };
                (Some(request), decided.map_err(Refusal::Service))
            }
        };
        // Full, paused and settling are decisions like the others, answered
        // as refusals.
        let answer = decided.as_ref().ok();
        let verdict = match &decided {
            Ok(answer) => answer.heard().map_err(|err| Refusal::Service(err.clone())),
            Err(err) => Err(err.clone()),
        };
        let (group, client) = request.as_ref().map_or(("", ""), |r| {
            (r.params.group.as_str(), r.client.as_deref().unwrap_or(""))
        });
        // As a person's screen shows it: a steady-state may still carry an
        // id stored under 0.2's rule, bidi controls and all.
        let id = request.as_ref().map(|r| r.params.id.shown());
        let id = id.as_deref().unwrap_or("");
        if let (Some(metrics), Some(answer), Some(request)) = (&self.metrics, answer, &request) {
            // Stdout, where CloudWatch takes embedded metrics from.
            let line = metrics.line(&request.params.group, answer, Timestamp::now());
            println!("{line}");
        }
        // Who a refused caller claimed to be, for the operator; never in the
        // answer, which does not say whether a name exists.
        let presented_client = match verdict {
            Err(Refusal::Service(Error::Unauthorized(_))) => headers
                .get(header::AUTHORIZATION)
                .and_then(|v| self.auth.presented_client(v.as_bytes()))
                .map(|name| printable(&name, ECHOED_MOST)),
            _ => None,
        };
        // A refusal asking again cannot mend, counted for its alarm: a
        // group or credential mistake on the node. An unauthorized call
        // counts only when it presented Basic credentials, as every node
        // does: a probe without them pages nobody.
        if let (Some(metrics), Err(err)) = (&self.metrics, &verdict) {
            let unauthorized = matches!(err, Refusal::Service(Error::Unauthorized(_)));
            if UNSERVABLE_KINDS.contains(&err.kind())
                && (!unauthorized || presented_client.is_some())
            {
                let client = presented_client.as_deref().unwrap_or(client);
                println!(
                    "{}",
                    metrics.unservable_line(err.kind(), group, client, Timestamp::now())
                );
            }
        }
        log_decision(
            endpoint,
            path,
            presented_client,
            (group, id, client),
            answer,
            &verdict,
            started,
        );
        match verdict {
            Ok(answer) => success(answer),
            Err(err) => refusal(&err),
        }
    }

    /// Credentials, path, method, protocol header, body, group scope: in that
    /// order, so a caller without credentials learns nothing about the rest,
    /// not even which paths exist. A refusal made once the body was read
    /// carries the request, so its log line names group, id and client.
    fn check(
        &self,
        path: &str,
        method: &Method,
        headers: &HeaderMap,
        body: &[u8],
    ) -> Result<(Endpoint, Checked), Refused> {
        let caller = match &self.auth {
            Auth::Required(clients) => Some(
                clients
                    .authenticate(headers.get(header::AUTHORIZATION).map(|v| v.as_bytes()))
                    .map_err(|err| Box::new((err.into(), None)))?,
            ),
            Auth::Disabled => None,
        };
        let Some(endpoint) = Endpoint::from_path(path) else {
            return Err(Box::new((
                Transport::NotFound(printable(path, ECHOED_MOST)).into(),
                None,
            )));
        };
        if method != Method::POST {
            return Err(Box::new((
                Transport::MethodNotAllowed(printable(method.as_str(), ECHOED_MOST)).into(),
                None,
            )));
        }
        let protocol = headers
            .get(PROTOCOL_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        if !protocol.is_some_and(|v| v.eq_ignore_ascii_case("true")) {
            return Err(Box::new((Transport::MissingProtocolHeader.into(), None)));
        }
        if body.len() > MAX_BODY_BYTES {
            return Err(Box::new((
                Transport::BodyTooLarge {
                    limit: MAX_BODY_BYTES,
                }
                .into(),
                None,
            )));
        }
        // Taking a slot needs an id of today's rule; giving one back takes
        // any id a slot may be held under.
        let rule = match endpoint {
            Endpoint::PreReboot => IdRule::New,
            Endpoint::SteadyState => IdRule::Stored,
        };
        let params =
            ClientParams::from_body(body, rule).map_err(|err| Box::new((err.into(), None)))?;
        // A credential for a group split by zone reaches its zones' groups.
        let scope = caller.as_ref().map_or(Ok(()), |c| {
            c.may_use(&params.group).or_else(|refused| {
                match self.service.zone_parent(&params.group) {
                    Some(parent) => c.may_use(&parent).map_err(|_| refused),
                    None => Err(refused),
                }
            })
        });
        let checked = Checked {
            params,
            client: caller.map(|c| c.name),
        };
        match scope {
            Ok(()) => Ok((endpoint, checked)),
            Err(err) => Err(Box::new((err.into(), Some(checked)))),
        }
    }
}

/// The one log line of a request: what was decided (or refused), for whom,
/// and the group as it stands.
fn log_decision(
    endpoint: Option<Endpoint>,
    path: &str,
    presented_client: Option<String>,
    (group, id, client): (&str, &str, &str),
    answer: Option<&Answer>,
    verdict: &Result<&Answer, Refusal>,
    started: Instant,
) {
    tracing::info!(
        endpoint = endpoint.map_or("", Endpoint::as_str),
        // Only where no endpoint matched: a decision's line stays as short
        // as the cost table counts it.
        path = endpoint.is_none().then(|| printable(path, ECHOED_MOST)),
        presented_client,
        group,
        id,
        client,
        outcome = answer.map_or("refused", |a| a.outcome.as_str()),
        status = verdict.as_ref().err().map_or(200, Refusal::status),
        kind = verdict.as_ref().err().map(Refusal::kind),
        holders = answer.map(|a| a.holders),
        slots = answer.map(|a| a.slots),
        oldest_holder_age_s = answer
            .and_then(|a| a.oldest_holder_age)
            .map(|age| age.as_secs()),
        // Only in a group with a drain gate.
        drains_overdue = answer.and_then(|a| a.drains_overdue),
        // Only in a group with a return gate.
        returning = answer.and_then(|a| a.returns).map(|r| r.returning),
        returns_overdue = answer.and_then(|a| a.returns).map(|r| r.overdue),
        oldest_return_s = answer
            .and_then(|a| a.returns)
            .and_then(|r| r.oldest)
            .map(|age| age.as_secs()),
        latency_ms = round_to_micros(started.elapsed()),
        "{}",
        if answer.is_some() {
            "decision"
        } else {
            "refusal"
        }
    );
}

/// Milliseconds with three decimals: finer than that is noise in a log.
fn round_to_micros(elapsed: std::time::Duration) -> f64 {
    elapsed.as_micros() as f64 / 1000.0
}

/// The most of a request's text echoed in an answer or a log.
const ECHOED_MOST: usize = 128;

fn json_response(status: u16, body: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Body::Text(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A 2xx: Zincati reads only the status; `fleetlock lock` reads the
/// outcome, and in a group with a lease how long it may go without asking
/// again (`lease_seconds`), to renew well inside it.
fn success(answer: &Answer) -> Response<Body> {
    let mut body = serde_json::json!({
        "outcome": answer.outcome.as_str(),
        "holders": answer.holders,
        "slots": answer.slots,
    });
    if let Some(lease) = answer.lease {
        body["lease_seconds"] = lease.as_secs().into();
    }
    json_response(200, &body)
}

pub fn refusal(refused: &Refusal) -> Response<Body> {
    let mut response = json_response(refused.status(), &refused.body());
    match refused {
        Refusal::Transport(Transport::MethodNotAllowed(_)) => {
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
        }
        Refusal::Service(Error::Unauthorized(_)) => {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"fleetlock\", charset=\"UTF-8\""),
            );
        }
        _ => {}
    }
    response
}
