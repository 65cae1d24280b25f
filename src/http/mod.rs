//! FleetLock over HTTP: the [`router`] both adapters share (with client
//! authentication from [`crate::domain::auth`]), the Lambda adapter
//! ([`lambda`]) and the local server ([`server`]).

pub mod lambda;
pub(crate) mod router;
pub mod server;

pub use router::{Api, MAX_BODY_BYTES, PROTOCOL_HEADER, refusal};
