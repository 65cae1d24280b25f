//! FleetLock over HTTP: the [`router`] both adapters share (with client
//! authentication from [`crate::domain::auth`]), the Lambda adapter
//! ([`lambda`]) and the local server ([`server`]); the edge's own refusals
//! ([`transport`]: no such path or method, no protocol header, a body too
//! large or too slow), beside the service's.

pub mod lambda;
pub(crate) mod router;
pub mod server;
pub mod transport;

pub use router::{Api, MAX_BODY_BYTES, PROTOCOL_HEADER, refusal};
pub use transport::{Refusal, Transport, every_kind};
