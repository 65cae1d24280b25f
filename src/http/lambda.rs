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
pub async fn run<S: LockStore>(api: Arc<Api<S>>) -> Result<(), lambda_http::Error> {
    lambda_http::run(service_fn(move |event: Request| {
        let api = Arc::clone(&api);
        async move { Ok::<_, std::convert::Infallible>(handle_event(&api, event).await) }
    }))
    .await
}

/// What a Lambda function built from this binary does, from its handler name
/// (`_HANDLER`): chosen before anything else, since each entry point needs
/// its own settings and clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryPoint {
    /// The FleetLock API (`api`, or `bootstrap`, the name of 0.1 stacks).
    Api,
    /// Slot events from the table's stream (`slot-events`).
    SlotEvents,
    /// Pauses from CloudWatch alarms (`alarm-pauses`).
    AlarmPauses,
}

impl EntryPoint {
    pub const NAMES: [&str; 3] = ["api", "slot-events", "alarm-pauses"];

    pub fn from_handler(handler: Option<&str>) -> Result<Self, String> {
        match handler.map(str::trim) {
            None | Some("" | "api" | "bootstrap") => Ok(EntryPoint::Api),
            Some("slot-events") => Ok(EntryPoint::SlotEvents),
            Some("alarm-pauses") => Ok(EntryPoint::AlarmPauses),
            Some(other) => Err(format!(
                "unknown Lambda handler {other:?}; the handler names the entry point: {}",
                Self::NAMES.join(", ")
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            EntryPoint::Api => "api",
            EntryPoint::SlotEvents => "slot-events",
            EntryPoint::AlarmPauses => "alarm-pauses",
        }
    }
}

/// Serves events of any other shape: `handle` gets each event's JSON and
/// answers JSON, or an error that Lambda reports as the invocation's.
pub async fn run_json<F, Fut>(handle: F) -> Result<(), lambda_http::Error>
where
    F: Fn(serde_json::Value) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<serde_json::Value, String>> + Send,
{
    let handle = Arc::new(handle);
    lambda_http::lambda_runtime::run(service_fn(
        move |event: lambda_http::LambdaEvent<serde_json::Value>| {
            let handle = Arc::clone(&handle);
            async move {
                handle(event.payload)
                    .await
                    .map_err(lambda_http::Error::from)
            }
        },
    ))
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handler_name_chooses_the_entry_point() {
        assert_eq!(EntryPoint::from_handler(None), Ok(EntryPoint::Api));
        assert_eq!(
            EntryPoint::from_handler(Some("bootstrap")),
            Ok(EntryPoint::Api)
        );
        for name in EntryPoint::NAMES {
            assert_eq!(
                EntryPoint::from_handler(Some(name)).map(EntryPoint::name),
                Ok(name)
            );
        }
        let unknown = EntryPoint::from_handler(Some("events")).unwrap_err();
        assert!(unknown.contains("slot-events"), "{unknown}");
    }
}
