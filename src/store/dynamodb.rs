//! The DynamoDB adapter: the only module that knows `AttributeValue`.
//!
//! # Item design
//! One item per group, partition key `group` (S):
//!
//! | attribute      | type | meaning                                             |
//! |----------------|------|-----------------------------------------------------|
//! | `group`        | S    | the group name (partition key)                      |
//! | `holder_count` | N    | how many `h:*` attributes the item has              |
//! | `h:<id>`       | N    | one per holder: when it took its slot, epoch ms     |
//! | `slots`        | N    | the slot count applied at the last grant (for people) |
//! | `released_at`  | N    | the arrival of the latest release that freed a slot, epoch ms |
//! | `paused`       | M    | a person's pause: `reason`, `since` (epoch ms), `by` |
//! | `pause_version`| N    | how many times a person paused or resumed the group, or excluded or included a node |
//! | `alarms`       | SS   | the gating alarms in ALARM that pause the group |
//! | `x:<id>`       | M    | one per excluded node: `reason`, `since` (epoch ms), `by` |
//! | `excluded_count` | N  | how many `x:*` attributes the item has (what `forget`'s condition sees) |
//! | `d:<id>`       | N    | one per holder whose slot is reserved, waiting for its drain: since when, epoch ms |
//! | `b:<id>`       | N    | one per holder whose slot is returning (steady-state came, the return is not confirmed): since when, epoch ms |
//! | `o:<id>`       | N    | one per return that passed its timeout and stopped the group: the return's start, epoch ms |
//! | `o:<id>`       | N    | (also) one per node of a canary's wave out past its time, which stopped the group: its grant, epoch ms |
//! | `stopped`      | M    | the server's stop of the rollout: `id`, `returning_since`, `at` (epoch ms), `cause` (`wave`, or absent for a return) |
//! | `zone`         | S    | in a group split by zone: the zone group whose nodes hold its slots |
//! | `wave_grants`  | N    | in a group with a canary: the slots its rollout granted so far |
//! | `rollout_began`| N    | in a group with a canary: when its rollout began, epoch ms |
//!
//! Each holder is a top-level attribute rather than an entry of a map, so the
//! first request of a new group needs no existing parent: `SET h:<id>` and
//! `ADD holder_count 1` both create what is missing. Every protocol call is one
//! conditional `UpdateItem` (a take-over past a lease, and a release landing
//! after a later one, take a second); DynamoDB serialises writes to an item, so the
//! condition sees every earlier grant and no slot is ever given twice. A failed
//! condition returns the item as it was (`ALL_OLD`), from which the pure rules
//! tell a holder asking again (granted) from a full group (refused) without a
//! second request. A retried write is harmless for the same reason: the retry
//! finds the holder already there.
//!
//! Groups that only `*` covers are counted: their names are kept in a string
//! set `names` on one more item, keyed [`WILDCARD_KEY`], which no group name
//! can be (`~` is not allowed in one). The first grant of such a group finds
//! no item (the write asks `attribute_exists(group)`), adds the name to the
//! set under `size(names) < :limit`, then writes again: three requests, once
//! per group; every later call is one request again.
//!
//! A reservation of the drain gate is a holder like any other (`h:<id>`,
//! counted), marked by `d:<id>`: the grant that reserves writes both, so the
//! reservation counts against the slots in the same condition, and the
//! confirmation is one write that removes the mark and dates the slot again
//! (`SET h:<id> = now REMOVE d:<id>`, the count unchanged). A version without
//! the gate reads such an item as it reads any other (the mark is an
//! attribute it ignores) and answers the reserved node as a holder.
//!
//! A returning slot is a holder too (`h:<id>`, counted), marked by
//! `b:<id>`: a steady-state in a group with a return gate writes the mark
//! instead of removing the holder, so the slot keeps counting in the same
//! condition every grant checks, and the confirmation is the one write that
//! removes holder and mark and counts one less. A sweep's stop writes
//! `stopped` (if none) and `o:<id>` in one write, only while `b:<id>` is the
//! return it judged and no `o:<id>` is there. A version without the gate
//! answers a returning node as a holder, and its release frees the slot.
//!
//! Items whose key starts with `~` are not groups (no group name may hold
//! it): `~wildcard-groups` above, and `~settings`, where each region of a
//! global table records the digests of the settings it serves
//! (`s:<region>`, a map of group to digest): see [`crate::domain::agreement`].
//!
//! Versions up to 0.1 named holders `holder:<id>`. The shorter prefix keeps an
//! item of 32-hex ids 5 bytes a holder smaller (a write unit is 1 KB of the
//! item); such holders are still read, kept, counted and released, and every
//! condition checks both names, so a node holding a slot under the old name
//! never gets a second one.

mod admin;
mod codec;
mod conditions;
mod lease_writes;
mod lock_store;
mod person_writes;
mod records;
mod return_writes;
mod stream_image;
mod wildcard_writes;
mod writes;

pub use admin::{Regional, TableProblem, global_table_problem, table_definition};
pub(crate) use stream_image::{group_from_keys, record_from_image};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::error::DisplayErrorContext;
use aws_sdk_dynamodb::types::{
    BillingMode, ConsumedCapacity, ReturnConsumedCapacity, ScalarAttributeType,
};

use crate::domain::store::StoreError;

pub(crate) const KEY_ATTRIBUTE: &str = "group";
pub(super) const KEY_TYPE: ScalarAttributeType = ScalarAttributeType::S;
pub(super) const BILLING_MODE: BillingMode = BillingMode::PayPerRequest;
pub(super) const COUNT_ATTRIBUTE: &str = "holder_count";
pub(super) const SLOTS_ATTRIBUTE: &str = "slots";
pub(super) const PAUSED_ATTRIBUTE: &str = "paused";
pub(super) const ALARMS_ATTRIBUTE: &str = "alarms";
pub(super) const RELEASED_ATTRIBUTE: &str = "released_at";
/// In a group split by zone: the zone group whose nodes hold its slots, as
/// the latest grant wrote it.
pub(super) const ZONE_ATTRIBUTE: &str = "zone";
/// In a group with a canary: the slots the current rollout granted.
pub(super) const WAVE_GRANTS_ATTRIBUTE: &str = "wave_grants";
/// In a group with a canary: when the current rollout began.
pub(super) const ROLLOUT_BEGAN_ATTRIBUTE: &str = "rollout_began";
/// Counts a person's pauses and resumes: each writes only on the count it
/// read, so a late one never undoes a newer one.
pub(super) const PAUSE_VERSION_ATTRIBUTE: &str = "pause_version";
pub(super) const HOLDER_PREFIX: &str = "h:";
/// An excluded node: `x:ID`, a map of who, since when and why.
pub(super) const EXCLUDED_PREFIX: &str = "x:";
/// How many `x:` attributes the item holds: what `forget`'s condition sees.
pub(super) const EXCLUDED_COUNT_ATTRIBUTE: &str = "excluded_count";
/// A holder whose slot waits for its drain: `d:ID`, since when (epoch ms).
pub(super) const DRAIN_PREFIX: &str = "d:";
/// A holder whose slot is returning: `b:ID`, since when (epoch ms).
pub(super) const RETURNING_PREFIX: &str = "b:";
/// A return that passed its timeout and stopped the group: `o:ID`, the
/// return's start (epoch ms).
pub(super) const RETURN_FAILED_PREFIX: &str = "o:";
/// The server's stop of the rollout: a map of `id`, `returning_since`, `at`.
pub(super) const STOPPED_ATTRIBUTE: &str = "stopped";
/// A holder that renewed its lease: `r:ID`, when it last did (epoch ms).
/// Its grant time (`h:ID`) stays, so its age counts from the grant.
pub(super) const RENEWED_PREFIX: &str = "r:";
/// A node whose slot was taken over past its lease: `t:ID`, when.
pub(super) const TAKEN_PREFIX: &str = "t:";
/// The key of the item that lists the groups only `*` covers.
pub(crate) const WILDCARD_KEY: &str = "~wildcard-groups";
/// The key of the item where each region records the digests of the
/// settings it serves (a global table's regions must agree).
pub(crate) const SETTINGS_KEY: &str = "~settings";
/// A region's record on that item: `s:<region>`, a map of group to digest.
pub(super) const SETTINGS_PREFIX: &str = "s:";
pub(super) const WILDCARD_NAMES_ATTRIBUTE: &str = "names";
/// The holder prefix of version 0.1 items: read and released, never written.
pub(super) const LEGACY_HOLDER_PREFIX: &str = "holder:";

/// How long a process takes the list of groups only `*` covers as full once
/// a count was refused: a write to that item is billed by its whole size
/// (about 126 write units with 2,000 names of 64 characters), refused or
/// not, so each further new group in this time is refused without one. A
/// group forgotten meanwhile is seen within this time; nothing is granted
/// on it, so it can only delay a grant, never add one.
pub(crate) const WILDCARD_FULL_REMEMBERED: std::time::Duration = std::time::Duration::from_secs(60);

pub struct DynamoStore {
    client: Client,
    table: String,
    consumed_capacity: ReturnConsumedCapacity,
    /// When a count was last refused (epoch ms; 0: never).
    wildcard_full_at: std::sync::atomic::AtomicU64,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            consumed_capacity: ReturnConsumedCapacity::None,
            wildcard_full_at: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Asks DynamoDB for the write units of every write it lets through
    /// ([`Decided::write_units`]): for the benchmark and the tests. Off in
    /// production, where it would make DynamoDB do more for each call.
    pub fn reporting_write_units(mut self) -> Self {
        self.consumed_capacity = ReturnConsumedCapacity::Total;
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// The write units DynamoDB billed for a write that succeeded. A refused
/// conditional write is billed too, by the same item size, but DynamoDB does
/// not report it.
pub(super) fn write_units(consumed: Option<&ConsumedCapacity>) -> Option<f64> {
    consumed.and_then(|c| c.write_capacity_units.or(c.capacity_units))
}

/// One readable line for people; the SDK's whole error chain goes to the
/// debug log (`RUST_LOG=debug`).
pub(super) fn unavailable<E: std::error::Error + 'static>(err: E) -> StoreError {
    tracing::debug!(error = %DisplayErrorContext(&err), "DynamoDB request failed");
    StoreError::Unavailable(one_line(&err))
}

/// The outermost and the innermost cause of an error, once each: "dispatch
/// failure: Connection refused (os error 111)", "service error:
/// ResourceNotFoundException: …".
pub(super) fn one_line(err: &(dyn std::error::Error + 'static)) -> String {
    let mut root = err;
    while let Some(source) = root.source() {
        root = source;
    }
    let (top, root) = (err.to_string(), root.to_string());
    if top == root || top.contains(&root) {
        top
    } else {
        format!("{top}: {root}")
    }
}
