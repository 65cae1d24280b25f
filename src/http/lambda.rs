//! The Lambda adapter: API Gateway HTTP API, REST API and Function URL events,
//! decoded by `lambda_http`, answered by the shared router.

use std::sync::Arc;

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response, service_fn};

use crate::domain::store::LockStore;
use crate::http::Api;

/// Answers one decoded event.
pub async fn handle_event<S: LockStore>(api: &Api<S>, event: Request) -> Response<Body> {
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

/// Serves events from the Lambda runtime until the runtime stops.
pub(crate) async fn run<S: LockStore>(api: Arc<Api<S>>) -> Result<(), lambda_http::Error> {
    lambda_http::run(service_fn(move |event: Request| {
        let api = Arc::clone(&api);
        async move { Ok::<_, std::convert::Infallible>(handle_event(&api, event).await) }
    }))
    .await
}
