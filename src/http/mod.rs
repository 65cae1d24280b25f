//! FleetLock over HTTP: the [`router`] both adapters share, client
//! authentication ([`auth`]), the Lambda adapter ([`lambda`]) and the local
//! server ([`server`]).

pub mod auth;
pub mod lambda;
pub mod router;
pub mod server;

pub use router::{Api, MAX_BODY_BYTES, PROTOCOL_HEADER, refusal};
