//! The Lambda adapter: API Gateway HTTP API, REST API and Function URL events,
//! decoded by `lambda_http`, answered by the shared router.

use std::sync::Arc;

use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response, service_fn};

use crate::service::FleetLock;
use crate::store::LockStore;

/// Answers one decoded event.
pub async fn handle_event<S: LockStore>(service: &FleetLock<S>, event: Request) -> Response<Body> {
    let path = route_path(&event);
    crate::http::handle(
        service,
        event.method(),
        &path,
        event.headers(),
        event.body().as_ref(),
    )
    .await
}

/// The request path without the API Gateway stage. `lambda_http` puts a named
/// stage in front of the path for REST APIs and HTTP API named stages (never
/// for `$default`); we strip exactly that one segment, so that a base_url of
/// `https://host/Prod/` reaches `/v1/pre-reboot`.
pub fn route_path(event: &Request) -> String {
    let path = event.uri().path();
    let stage = match event.request_context_ref() {
        Some(RequestContext::ApiGatewayV1(context)) => context.stage.as_deref(),
        Some(RequestContext::ApiGatewayV2(context)) => context.stage.as_deref(),
        _ => None,
    };
    match stage {
        Some(stage) if stage != "$default" => path
            .strip_prefix('/')
            .and_then(|p| p.strip_prefix(stage))
            .filter(|rest| rest.starts_with('/'))
            .unwrap_or(path)
            .to_owned(),
        _ => path.to_owned(),
    }
}

/// Serves events from the Lambda runtime until the runtime stops.
pub async fn run<S: LockStore>(service: Arc<FleetLock<S>>) -> Result<(), lambda_http::Error> {
    lambda_http::run(service_fn(move |event: Request| {
        let service = Arc::clone(&service);
        async move { Ok::<_, std::convert::Infallible>(handle_event(&service, event).await) }
    }))
    .await
}
