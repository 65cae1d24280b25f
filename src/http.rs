//! The HTTP edge shared by the Lambda adapter and the local server: routes a
//! request, validates it, asks the service, and writes the FleetLock answer.

use std::time::Instant;

use lambda_http::Body;
use lambda_http::http::{HeaderMap, HeaderValue, Method, Response, StatusCode, header};

use crate::error::Error;
use crate::input::ClientParams;
use crate::service::{Answer, FleetLock};
use crate::store::LockStore;

/// Largest body read. Zincati's is about 100 bytes; an id is at most 256.
pub const MAX_BODY_BYTES: usize = 4096;

pub const PROTOCOL_HEADER: &str = "fleet-lock-protocol";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    PreReboot,
    SteadyState,
}

impl Endpoint {
    fn from_path(path: &str) -> Option<Self> {
        match path {
            "/v1/pre-reboot" => Some(Endpoint::PreReboot),
            "/v1/steady-state" => Some(Endpoint::SteadyState),
            _ => None,
        }
    }
}

/// Answers one request. `path` is the path after any API Gateway stage. A
/// body longer than [`MAX_BODY_BYTES`] is refused, so callers may pass the
/// first `MAX_BODY_BYTES + 1` bytes of a longer one.
pub async fn handle<S: LockStore>(
    service: &FleetLock<S>,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response<Body> {
    let started = Instant::now();
    let endpoint = Endpoint::from_path(path);
    let mut params = None;
    let result = match endpoint {
        None => Err(Error::NotFound(printable(path))),
        Some(endpoint) => match validate(method, headers, body) {
            Err(err) => Err(err),
            Ok(parsed) => {
                let answer = match endpoint {
                    Endpoint::PreReboot => service.pre_reboot(&parsed).await,
                    Endpoint::SteadyState => service.steady_state(&parsed).await,
                };
                params = Some(parsed);
                answer
            }
        },
    };
    let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
    let (group, id) = match &params {
        Some(p) => (p.group.as_str(), p.id.as_str()),
        None => ("", ""),
    };
    match result {
        Ok(answer) => {
            tracing::info!(
                endpoint = ?endpoint,
                group,
                id,
                outcome = answer.outcome.as_str(),
                holders = answer.holders,
                slots = answer.slots,
                oldest_holder_age_s = answer.oldest_holder_age.map(|age| age.as_secs()),
                latency_ms,
                "decision"
            );
            success(&answer)
        }
        Err(err) => {
            tracing::info!(
                endpoint = ?endpoint,
                group,
                id,
                outcome = "refused",
                kind = err.kind(),
                status = err.status(),
                latency_ms,
                "refusal"
            );
            refusal(&err)
        }
    }
}

fn validate(method: &Method, headers: &HeaderMap, body: &[u8]) -> Result<ClientParams, Error> {
    if method != Method::POST {
        return Err(Error::MethodNotAllowed(printable(method.as_str())));
    }
    let protocol = headers
        .get(PROTOCOL_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    if !protocol.is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(Error::MissingProtocolHeader);
    }
    if body.len() > MAX_BODY_BYTES {
        return Err(Error::BodyTooLarge {
            limit: MAX_BODY_BYTES,
        });
    }
    ClientParams::from_body(body)
}

/// Request text echoed in an answer: bounded and without control characters.
fn printable(text: &str) -> String {
    text.chars()
        .take(128)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

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

fn success(answer: &Answer) -> Response<Body> {
    json_response(
        200,
        &serde_json::json!({
            "outcome": answer.outcome.as_str(),
            "holders": answer.holders,
            "slots": answer.slots,
        }),
    )
}

pub fn refusal(err: &Error) -> Response<Body> {
    let mut response = json_response(err.status(), &err.body());
    if matches!(err, Error::MethodNotAllowed(_)) {
        response
            .headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("POST"));
    }
    response
}
