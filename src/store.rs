//! The adapters of [`crate::domain::store::LockStore`]: the in-memory store of
//! a local `serve`, and DynamoDB.

pub mod dynamodb;
pub mod memory;
