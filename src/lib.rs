//! A FleetLock server: reboot coordination for Fedora CoreOS fleets, with a
//! counting semaphore per group kept in DynamoDB (or in memory, locally).
//!
//! The tree shows the layers, from the inside out:
//! - [`domain`]: the rules, pure (the semaphore, windows, validated input,
//!   the error type, the service, slot events, alarm pauses) and the traits
//!   they need of the world (`LockStore`, `EventSink`, `AlarmStates`).
//! - [`config`]: every setting an entry point or a command reads, read and
//!   validated in one place.
//! - [`store`]: the `LockStore` adapters, in memory and DynamoDB.
//! - [`aws`]: the shared AWS configuration, every SDK client's builder, and
//!   the EventBridge, CloudWatch and function-configuration adapters; the IAM
//!   policies each party needs.
//! - [`http`]: the router, its client authentication, the Lambda adapter and
//!   the local server.
//! - [`entry`]: the five Lambda entry points (api, slot-events,
//!   alarm-pauses, drained, and the deploy's check-config), each booting its
//!   own settings and clients.
//! - [`cli`]: the command line (arguments, one function per command,
//!   rendering); [`client`]: the client side of the protocol, as Zincati
//!   speaks it.
//! - `agent` (feature `kube-agent`, the binary `fleetlock-kube-agent`): a
//!   hook of the drain and return gates for a Kubernetes cluster, on `kube`.
//! - [`logging`] and [`metrics`]: the log format and the Embedded Metric
//!   Format lines every entry point writes.
//! - `test_support` (feature `test-support`, for `tests/` and `benches/`
//!   only): a clock the tests move, a DynamoDB client that counts requests.

// `pub` is the outside (tests/, benches/, the binaries); all else is
// `pub(crate)`, and a `pub` the outside cannot reach is a warning.
#![warn(unreachable_pub)]

#[cfg(feature = "kube-agent")]
pub mod agent;
pub mod aws;
pub mod cli;
pub mod client;
pub mod config;
pub(crate) mod deploy;
pub mod domain;
pub mod entry;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod store;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
