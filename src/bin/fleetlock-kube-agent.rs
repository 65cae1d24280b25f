//! The Kubernetes agent: drains the nodes whose FleetLock slot is reserved
//! and uncordons them when they are back (docs/kubernetes.md). A binary of
//! its own, built with the feature `kube-agent`: neither the function's zip
//! nor the command line carries the Kubernetes client.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    fleetlock::agent::run::run(std::env::args().collect()).await
}
