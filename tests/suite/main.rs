//! The integration suite, one crate: Lambda events through the handler, the
//! DynamoDB adapter against DynamoDB Local, the service over real HTTP as
//! Zincati calls it, and the command line. `./scripts/test` starts DynamoDB
//! Local and sets `AWS_ENDPOINT_URL`, and so does `scripts/cargo-runner` under
//! a plain `cargo test`; without it the DynamoDB tests fail.

mod alarm_pauses;
mod canary;
mod check;
mod check_config;
mod cli;
mod client;
mod client_auth;
mod conformance;
mod corrupt_items;
mod drains;
mod dynamodb_faults;
mod dynamodb_store;
mod fault_proxy;
mod function_binary;
mod group_names;
mod helpers;
mod iam;
// Shared with tests/model, which seeds DynamoDB Local with what it reads.
#[allow(dead_code)]
#[path = "../common/item_layout.rs"]
mod item_layout;
mod kube_agent;
mod kube_stand_in;
mod lambda_events;
mod lambda_runtime;
mod late_writes;
mod leases;
mod local_server;
mod lock_retries;
mod regions;
mod returns;
// Shared with tests/model, which also seeds the states it explores.
#[allow(dead_code)]
#[path = "../common/role_store.rs"]
mod role_store;
mod rollout;
mod serve_limits;
mod slot_events;
mod wildcard_groups;
mod windows;
mod write_conflicts;
mod zones;
