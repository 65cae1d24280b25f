//! `fleetlock serve`: the same router over plain HTTP/1.1, for a laptop or a
//! private network. One task per connection, each bounded in time and
//! buffer, and a bounded number of them; bodies are read up to the cap.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONNECTION, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::time::Sleep;

use crate::domain::error::Error;
use crate::domain::store::LockStore;
use crate::http::transport::Transport;
use crate::http::{Api, MAX_BODY_BYTES, refusal};

/// What one client may hold of the server: time, buffer, connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How long a request's headers may take to arrive, counted from the
    /// moment the server waits for them: from the connection's start, and
    /// on a kept-alive connection from the end of the previous answer, so it
    /// is the idle keep-alive timeout too.
    pub(crate) header_timeout: Duration,
    /// How long the body may take once the headers are in.
    pub(crate) body_timeout: Duration,
    /// How long an answer may wait for the client to take it: a client
    /// that sends and never reads (its buffers full) loses its connection
    /// rather than holding a place for ever.
    pub(crate) write_timeout: Duration,
    /// Connections served at once; past it, new ones wait in the kernel's
    /// queue until one closes.
    pub(crate) max_connections: usize,
}

impl Default for Limits {
    /// A Zincati request is one small POST every 5 minutes a node: seconds
    /// are plenty, and 512 connections serve fleets of many thousands.
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
            max_connections: 512,
        }
    }
}

/// The most a connection buffers: a request's headers (Zincati's are about
/// 300 bytes) and a slice of its body. hyper's own floor is 8 KiB.
pub(crate) const MAX_BUFFER_BYTES: usize = 16 * 1024;
/// The most header lines a request may have.
pub(crate) const MAX_HEADERS: usize = 32;
/// Pauses after a failed `accept` (out of descriptors, say): from the first
/// to the longest, doubling, so the loop neither spins nor stalls for long.
const ACCEPT_PAUSE_FIRST: Duration = Duration::from_millis(10);
const ACCEPT_PAUSE_LONGEST: Duration = Duration::from_secs(1);
/// At most one log line about failed accepts in this long.
const ACCEPT_LOG_EVERY: Duration = Duration::from_secs(10);

/// Accepts connections on `listener` until `shutdown` completes.
pub async fn serve<S: LockStore>(
    listener: TcpListener,
    api: Arc<Api<S>>,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    tokio::pin!(shutdown);
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let mut accept_failures = AcceptFailures::default();
    loop {
        // A place first: at the cap, nothing is accepted until one is free.
        let place = tokio::select! {
            place = Arc::clone(&connections).acquire_owned() => {
                place.expect("the semaphore is never closed")
            }
            () = &mut shutdown => return Ok(()),
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    accept_failures.succeeded();
                    stream
                }
                Err(err) => {
                    let pause = accept_failures.failed(&err);
                    tokio::select! {
                        () = tokio::time::sleep(pause) => continue,
                        () = &mut shutdown => return Ok(()),
                    }
                }
            },
            () = &mut shutdown => return Ok(()),
        };
        let api = Arc::clone(&api);
        tokio::spawn(async move {
            let answer = service_fn(move |request| {
                let api = Arc::clone(&api);
                async move { Ok::<_, Infallible>(answer(&api, request, limits.body_timeout).await) }
            });
            let served = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(MAX_BUFFER_BYTES)
                .max_headers(MAX_HEADERS)
                .serve_connection(
                    TokioIo::new(WriteDeadline::new(stream, limits.write_timeout)),
                    answer,
                )
                .await;
            if let Err(err) = served {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(place);
        });
    }
}

/// A connection whose answers must be taken in time: once a write or a
/// flush cannot go on (the client reads nothing and the buffers between are
/// full), it has `limit` to finish, or the connection ends with `TimedOut`.
/// Only a completed flush (the whole answer handed to the kernel) starts the
/// count afresh, so a client that reads a byte now and then gains nothing.
struct WriteDeadline<T> {
    io: T,
    limit: Duration,
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteDeadline<T> {
    fn new(io: T, limit: Duration) -> Self {
        Self {
            io,
            limit,
            deadline: None,
        }
    }

    /// A write that could not go on: pending until the deadline, an error
    /// after it.
    fn blocked<R>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<R>> {
        let limit = self.limit;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match deadline.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client took no answer for {limit:?}"),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write(cx, buf) {
            Poll::Pending => self.blocked(cx),
            written => written,
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match Pin::new(&mut self.io).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.blocked(cx),
            written => written,
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_flush(cx) {
            Poll::Pending => self.blocked(cx),
            Poll::Ready(Ok(())) => {
                self.deadline = None;
                Poll::Ready(Ok(()))
            }
            failed => failed,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.io).poll_shutdown(cx) {
            Poll::Pending => self.blocked(cx),
            done => done,
        }
    }
}

/// Failed accepts in a row: how long to pause, and when to say so.
#[derive(Default)]
struct AcceptFailures {
    in_a_row: u32,
    unlogged: u64,
    logged_at: Option<Instant>,
}

impl AcceptFailures {
    fn succeeded(&mut self) {
        self.in_a_row = 0;
    }

    fn failed(&mut self, err: &std::io::Error) -> Duration {
        self.in_a_row = self.in_a_row.saturating_add(1);
        self.unlogged += 1;
        if self
            .logged_at
            .is_none_or(|at| at.elapsed() >= ACCEPT_LOG_EVERY)
        {
            tracing::warn!(
                error = %err,
                failures = self.unlogged,
                "accept failed; pausing before the next (one line per 10 s at most)"
            );
            self.unlogged = 0;
            self.logged_at = Some(Instant::now());
        }
        let doublings = self.in_a_row.saturating_sub(1).min(16);
        (ACCEPT_PAUSE_FIRST * 2u32.pow(doublings)).min(ACCEPT_PAUSE_LONGEST)
    }
}

async fn answer<S: LockStore>(
    api: &Api<S>,
    request: Request<Incoming>,
    body_timeout: Duration,
) -> Response<Full<Bytes>> {
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(body_timeout, read_capped(body)).await;
    let response = match read {
        Ok(Ok(body)) => {
            api.handle(&parts.method, parts.uri.path(), &parts.headers, &body)
                .await
        }
        Ok(Err(err)) => refusal(&err.into()),
        Err(_) => {
            // Said, then the connection closes: its framing is lost.
            let mut response = refusal(
                &Transport::RequestTimeout {
                    seconds: body_timeout.as_secs(),
                }
                .into(),
            );
            response
                .headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
            response
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_accepts_pause_longer_each_time_up_to_a_second() {
        let mut failures = AcceptFailures::default();
        let err = std::io::Error::from_raw_os_error(24);
        let pauses: Vec<Duration> = (0..10).map(|_| failures.failed(&err)).collect();
        assert_eq!(pauses[0], Duration::from_millis(10));
        assert_eq!(pauses[1], Duration::from_millis(20));
        assert_eq!(pauses[6], Duration::from_millis(640));
        assert_eq!(pauses[7], ACCEPT_PAUSE_LONGEST);
        assert_eq!(pauses[9], ACCEPT_PAUSE_LONGEST);
        // One line said it; the nine after it wait for the next.
        assert_eq!(failures.unlogged, 9);
        failures.succeeded();
        assert_eq!(failures.failed(&err), Duration::from_millis(10));
    }
}
