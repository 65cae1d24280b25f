//! `fleetlock serve`: the FleetLock API over HTTP, on the embedded default
//! (locks in memory) or on a DynamoDB table.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::config::{self, Config};
use crate::domain::auth::Auth;
use crate::domain::groups::parse_duration;
use crate::domain::service::FleetLock;
use crate::domain::store::LockStore;
use crate::http::Api;
use crate::http::server::{self, Limits};
use crate::store::memory::MemoryStore;

use super::Failure;
use super::context::command_aws;

pub(crate) const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// Serve FleetLock over HTTP (default 127.0.0.1:8080); headers, body and the
/// taking of each answer within 10s (also the idle keep-alive time), at most
/// 512 connections at once
///
/// Without FLEETLOCK_TABLE the locks live in this process and end with it.
/// Without FLEETLOCK_CLIENTS it listens on loopback only.
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Serve {
    /// The address to listen on
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN, value_parser = listen_address)]
    pub(crate) listen: SocketAddr,
    /// Time to send the headers, and the idle keep-alive time (1s to 10m)
    #[arg(long, value_name = "D", default_value = "10s", value_parser = serve_timeout)]
    pub(crate) header_timeout: Duration,
    /// Time to send the body (1s to 10m)
    #[arg(long, value_name = "D", default_value = "10s", value_parser = serve_timeout)]
    pub(crate) body_timeout: Duration,
    /// Time for the client to take an answer once it stops reading (1s to 10m)
    #[arg(long, value_name = "D", default_value = "10s", value_parser = serve_timeout)]
    pub(crate) write_timeout: Duration,
    /// Connections at once (1 to 65535)
    #[arg(long, value_name = "N", default_value = "512", value_parser = max_connections)]
    pub(crate) max_connections: usize,
}

impl Serve {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            header_timeout: self.header_timeout,
            body_timeout: self.body_timeout,
            write_timeout: self.write_timeout,
            max_connections: self.max_connections,
        }
    }

    pub(crate) async fn run(self) -> Result<(), Failure> {
        let (listen, limits) = (self.listen, self.limits());
        let config = Config::from_env()?;
        config.log_mismatches();
        let auth = match config.auth {
            Some(auth) => auth,
            // Open on loopback only: nothing off this machine can reach it.
            None if listen.ip().is_loopback() => Auth::Disabled,
            None => {
                return Err(Failure::Refused(format!(
                    "{listen} is reachable from other machines: set FLEETLOCK_CLIENTS \
                     (see 'fleetlock credential') or, on a private network, FLEETLOCK_AUTH=disabled"
                )));
            }
        };
        // Nodes without `[identity] group` in Zincati's config ask for
        // `default`: say it once, at start, rather than in every refusal.
        if !config.groups.covers_default() {
            tracing::warn!(
                groups = %config::process_env("FLEETLOCK_GROUPS").unwrap_or_default(),
                "no 'default' group is configured: nodes without [identity] group in \
                 Zincati's config will be refused (unknown_group)"
            );
        }
        match config.table {
            Some(table) => {
                let aws = command_aws().await?;
                tracing::info!(
                    table,
                    endpoint = crate::aws::dynamodb_endpoint(&aws)
                        .unwrap_or_else(|| "the region's DynamoDB".into()),
                    region = aws.region().map(|r| r.to_string()),
                    "locks live in DynamoDB"
                );
                let regional = crate::store::dynamodb::Regional::Yes(config.region.as_deref());
                let store = crate::entry::checked_store(&aws, table, regional)
                    .await
                    .map_err(|e| Failure::Refused(e.to_string()))?;
                let service = FleetLock::new(config.groups, store).with_windows(config.windows);
                let service = crate::entry::agreeing(service, config.region)
                    .await
                    .map_err(|e| Failure::Refused(e.to_string()))?;
                crate::entry::name_leftovers(&service).await;
                serve(listen, Api::new(service, auth), limits).await?;
            }
            None => {
                tracing::info!("no FLEETLOCK_TABLE: locks live in this process and end with it");
                let store = MemoryStore::default();
                let service = FleetLock::new(config.groups, store).with_windows(config.windows);
                serve(listen, Api::new(service, auth), limits).await?;
            }
        }
        Ok(())
    }
}

/// Why a value of `serve` was refused (clap puts the option before it).
#[derive(Debug, thiserror::Error)]
enum ServeValueError {
    #[error("'{0}' is not an address like 127.0.0.1:8080")]
    NotAnAddress(String),
    #[error(transparent)]
    NotADuration(#[from] crate::domain::lock::settle::DurationError),
    #[error("'{0}' is not from 1s to 10m")]
    TimeoutOutOfRange(String),
    #[error("'{0}' is not a number from 1 to 65535")]
    NotAConnectionCount(String),
}

fn listen_address(text: &str) -> Result<SocketAddr, ServeValueError> {
    text.parse()
        .map_err(|_| ServeValueError::NotAnAddress(text.to_owned()))
}

/// A timeout of `serve`: from 1 s to 10 min.
fn serve_timeout(text: &str) -> Result<Duration, ServeValueError> {
    let duration = parse_duration(text)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&duration) {
        return Err(ServeValueError::TimeoutOutOfRange(text.to_owned()));
    }
    Ok(duration)
}

fn max_connections(text: &str) -> Result<usize, ServeValueError> {
    text.parse()
        .ok()
        .filter(|n| (1..=65_535).contains(n))
        .ok_or_else(|| ServeValueError::NotAConnectionCount(text.to_owned()))
}

async fn serve<S: LockStore>(
    listen: std::net::SocketAddr,
    api: Api<S>,
    limits: server::Limits,
) -> Result<(), Failure> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| Failure::Serve(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failure::Serve(e.to_string()))?;
    // Printed on stdout so scripts and tests can learn a port chosen by the OS.
    // Whoever reads it may close the pipe after the first line: the lines
    // after it must not stop the server.
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "fleetlock listening on http://{addr}/");
    if api.auth() == &Auth::Disabled {
        let _ = writeln!(
            stdout,
            "no client authentication: anyone who can reach {addr} may take and release \
             reboot slots"
        );
    }
    let _ = writeln!(
        stdout,
        "limits: headers within {}, body within {}, each answer taken within {}, at most {} \
         connections at once",
        crate::domain::time::format_duration(limits.header_timeout),
        crate::domain::time::format_duration(limits.body_timeout),
        crate::domain::time::format_duration(limits.write_timeout),
        limits.max_connections
    );
    let _ = stdout.flush();
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    server::serve(listener, Arc::new(api), limits, shutdown)
        .await
        .map_err(|e| Failure::Serve(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults the help shows are the server's own.
    #[test]
    fn the_defaults_are_the_servers_limits() {
        let serve = crate::cli::parse(&["serve".to_owned()]).unwrap();
        let Some(crate::cli::Sub::Serve(serve)) = serve else {
            panic!("{serve:?}")
        };
        assert_eq!(serve.limits(), Limits::default());
        assert_eq!(serve.listen, DEFAULT_LISTEN.parse().unwrap());
    }
}
