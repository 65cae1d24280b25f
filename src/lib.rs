//! A FleetLock server: reboot coordination for Fedora CoreOS fleets, with a
//! counting semaphore per group kept in DynamoDB (or in memory, locally).
//!
//! The tree, from the inside out:
//! - [`lock`]: the rules of the semaphore, pure; [`windows`]: maintenance
//!   windows, pure.
//! - [`input`], [`config`], [`error`]: validated inputs, start-up settings,
//!   the one error type with its `kind` and status.
//! - [`service`]: the two FleetLock operations over a [`store::LockStore`].
//! - [`store`]: the storage trait with its in-memory and DynamoDB adapters.
//! - [`http`]: the router shared by [`lambda`] and the local [`server`], with
//!   client authentication from [`auth`].
//! - [`aws`]: the AWS configuration and request log every client shares.
//! - [`cli`]: the command line; [`iam`]: the permissions each party needs.
//! - [`client`]: the client side of the protocol, as Zincati speaks it (for
//!   `fleetlock lock` and `unlock`, and for other tools).
//! - [`events`]: slot events from two states of a group, pure; [`stream`]:
//!   the entry point that reads the table's stream and puts them on EventBridge.
//! - [`alarms`]: pauses that follow CloudWatch alarms, pure; [`alarm_pauses`]:
//!   the entry point that reads the alarms' states and writes the pauses.

pub mod alarm_pauses;
pub mod alarms;
pub mod auth;
pub mod aws;
pub mod cli;
pub mod client;
pub mod client_cli;
pub mod config;
pub mod deployed;
pub mod error;
pub mod events;
pub mod http;
pub mod iam;
pub mod input;
pub mod lambda;
pub mod lock;
pub mod logging;
pub mod metrics;
pub mod server;
pub mod service;
pub mod store;
pub mod stream;
pub mod windows;
