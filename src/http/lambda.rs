//! The Lambda adapter: API Gateway HTTP API, REST API and Function URL events,
//! decoded by `lambda_http`, answered by the shared router.

use std::sync::Arc;

use lambda_http::http::HeaderValue;
use lambda_http::request::{LambdaRequest, RequestContext};
use lambda_http::{Body, Request, RequestExt, Response, service_fn};

use crate::domain::store::LockStore;
use crate::http::Api;

/// Answers one decoded event.
pub async fn handle_event<S: LockStore>(api: &Api<S>, event: Request) -> Response<Body> {
    if event.headers().contains_key(UNDECODABLE_BODY) {
        let undecodable = crate::domain::error::Error::InvalidBody(
            "the request body is marked base64-encoded and is not valid base64; nothing was \
             decided"
                .into(),
        );
        return crate::http::router::refusal(&undecodable.into());
    }
    let path = route_path(&event);
    api.handle(
        event.method(),
        &path,
        event.headers(),
        event.body().as_ref(),
    )
    .await
}

/// The request path without the API Gateway stage, so that a base_url of
/// `https://host/Prod/` reaches `/v1/pre-reboot`. `lambda_http` puts a named
/// stage in front of the URI path, and cannot tell a stage from a path that
/// merely starts like one (a stage named `v1`), so read the event itself: a
/// REST API event's `path` never holds the stage; an HTTP API event's
/// `rawPath` holds a named stage (never `$default`) as its first segment.
pub fn route_path(event: &Request) -> String {
    match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(_)) => event.raw_http_path().to_owned(),
        Some(RequestContext::ApiGatewayV2(context)) => {
            let raw = event.raw_http_path();
            match context.stage.as_deref() {
                Some(stage) if stage != "$default" => raw
                    .strip_prefix('/')
                    .and_then(|p| p.strip_prefix(stage))
                    .filter(|rest| rest.starts_with('/'))
                    .unwrap_or(raw)
                    .to_owned(),
                _ => raw.to_owned(),
            }
        }
        _ => event.uri().path().to_owned(),
    }
}

/// The header that carries, from [`vetted`] to the handler, that the
/// event's body was marked base64 and was not: any a caller sent is removed
/// first, so only the vetting sets it.
const UNDECODABLE_BODY: &str = "x-fleetlock-undecodable-body";

/// The event with a body marked base64 that does not decode made safe to
/// convert (`lambda_http` panics on it): the body dropped, and the header
/// [`UNDECODABLE_BODY`] set, for the handler to refuse it as bad input.
/// API Gateway never sends such an event; a panic would still be no answer.
pub fn vetted(mut payload: LambdaRequest) -> LambdaRequest {
    use base64::Engine;
    let (body, base64, headers) = match &mut payload {
        LambdaRequest::ApiGatewayV1(event) => {
            event.multi_value_headers.remove(UNDECODABLE_BODY);
            (
                &mut event.body,
                &mut event.is_base64_encoded,
                &mut event.headers,
            )
        }
        LambdaRequest::ApiGatewayV2(event) => (
            &mut event.body,
            &mut event.is_base64_encoded,
            &mut event.headers,
        ),
        _ => return payload,
    };
    headers.remove(UNDECODABLE_BODY);
    let undecodable = *base64
        && body.as_deref().is_some_and(|text| {
            base64::engine::general_purpose::STANDARD
                .decode(text)
                .is_err()
        });
    if undecodable {
        *body = None;
        *base64 = false;
        headers.insert(UNDECODABLE_BODY, HeaderValue::from_static("true"));
    }
    payload
}

/// An event's JSON as the runtime reads it ([`vetted`]), for tests and
/// benchmarks that feed the handler events of their own.
pub fn event_from_str(json: &str) -> Result<Request, serde_json::Error> {
    let payload: LambdaRequest = serde_json::from_str(json)?;
    Ok(vetted(payload).into())
}

/// Serves events from the Lambda runtime until the runtime stops: each
/// vetted ([`vetted`]), then decoded and answered as `lambda_http` does.
pub(crate) async fn run<S: LockStore>(api: Arc<Api<S>>) -> Result<(), lambda_http::Error> {
    let answer = service_fn(move |event: Request| {
        let api = Arc::clone(&api);
        async move { Ok::<_, std::convert::Infallible>(handle_event(&api, event).await) }
    });
    let mut adapter = lambda_http::Adapter::from(answer);
    lambda_http::lambda_runtime::run(service_fn(
        move |event: lambda_http::LambdaEvent<LambdaRequest>| {
            let event = lambda_http::LambdaEvent {
                payload: vetted(event.payload),
                context: event.context,
            };
            lambda_http::tower::Service::call(&mut adapter, event)
        },
    ))
    .await
}
