//! `fleetlock serve`: the same router over plain HTTP/1.1, for a laptop or a
//! private network. One task per connection; bodies are read up to the cap.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::error::Error;
use crate::http::{Api, MAX_BODY_BYTES, refusal};
use crate::store::LockStore;

/// Accepts connections on `listener` until `shutdown` completes.
pub async fn serve<S: LockStore>(
    listener: TcpListener,
    api: Arc<Api<S>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    // Out of file descriptors and the like: keep serving.
                    tracing::warn!(error = %err, "accept failed");
                    continue;
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let api = Arc::clone(&api);
        tokio::spawn(async move {
            let answer = service_fn(move |request| {
                let api = Arc::clone(&api);
                async move { Ok::<_, Infallible>(answer(&api, request).await) }
            });
            if let Err(err) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), answer)
                .await
            {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        });
    }
}

async fn answer<S: LockStore>(api: &Api<S>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let response = match read_capped(body).await {
        Ok(body) => {
            api.handle(&parts.method, parts.uri.path(), &parts.headers, &body)
                .await
        }
        Err(err) => refusal(&err),
    };
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, Full::new(Bytes::copy_from_slice(body.as_ref())))
}

/// Reads at most one byte more than the cap, so the router can refuse an
/// oversize body without this process buffering all of it.
async fn read_capped(mut body: Incoming) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    while bytes.len() <= MAX_BODY_BYTES {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let room = MAX_BODY_BYTES + 1 - bytes.len();
                    bytes.extend_from_slice(&data[..data.len().min(room)]);
                }
            }
            // Never decide on part of a body: the client may not be there.
            Some(Err(_)) => {
                return Err(Error::InvalidBody(
                    "the request body could not be read".into(),
                ));
            }
            None => break,
        }
    }
    Ok(bytes)
}
