//! The rules, pure: nothing here speaks HTTP, calls AWS or reads the
//! environment. The adapters at the edges (`http`, `store`, `aws`, `entry`,
//! `cli`) depend on this; it depends on none of them.
//!
//! - [`lock`]: the rules of a group's slots, over its holders
//!   ([`semaphore`]) and the time ([`time`]), and its answers
//!   ([`outcomes`]); [`groups`]: the slots and
//!   settle times of each group; [`windows`]: maintenance windows.
//! - [`auth`]: who may call: client credentials (HTTP Basic against salted
//!   hashes) and the groups each may use; [`coverage`]: those groups read
//!   against the configured ones.
//! - [`input`]: validated node ids, group names and reasons; [`error`]: the
//!   one error type with its `kind` and status.
//! - [`service`]: the two FleetLock operations over a [`store::LockStore`],
//!   the trait every store implements.
//! - [`events`]: slot events from two states of a group, and the sink they go
//!   to; [`alarms`]: pauses that follow alarms, and where their states come
//!   from; [`drain`]: a hook's confirmation that a node was drained, and
//!   what each outcome says; [`agreement`]: settings that agree across
//!   the regions of a global table; [`zones`]: groups whose nodes go out one
//!   zone at a time; [`canary`]: a rollout's canary and waves.

pub mod agreement;
pub(crate) mod alarms;
pub mod auth;
pub mod canary;
pub(crate) mod coverage;
pub mod drain;
pub mod error;
pub mod events;
pub mod groups;
pub(crate) mod hosts;
pub mod input;
pub mod lock;
pub mod meaning;
pub(crate) mod names;
pub(crate) mod outcomes;
pub(crate) mod semaphore;
pub mod service;
pub mod store;
pub mod time;
pub mod windows;
pub mod zones;
