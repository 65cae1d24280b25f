//! A stored item the server cannot read (written by hand, or by a tool that
//! got the format wrong): every answer is `500 internal`, no node is told it
//! may reboot, and a grant whose write landed on such an item is taken back,
//! so the answer "no slot was granted" is true.

use std::collections::HashMap;
use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use fleetlock::domain::auth::Auth;
use fleetlock::domain::input::{GroupName, NodeId};
use fleetlock::domain::lock::GroupRules;
use fleetlock::domain::store::{LockStore, StoreError};
use fleetlock::domain::time::Timestamp;
use fleetlock::test_support::counted_client;

use crate::helpers::{RoleStore, api, dynamo_store, raw_item, rules, spawn_server, zincati};
use fleetlock::domain::store::Decisions;

type Item = HashMap<String, AttributeValue>;

fn n(value: &str) -> AttributeValue {
    AttributeValue::N(value.into())
}

/// Group `default` as stored: one holder, `x`, but a holder count of 0
/// (which the write's condition cannot see), and one slot.
fn miscounted() -> Item {
    HashMap::from([
        ("group".to_owned(), AttributeValue::S("default".into())),
        ("holder_count".to_owned(), n("0")),
        ("slots".to_owned(), n("1")),
        ("h:x".to_owned(), n("1000")),
    ])
}

/// Group `default` paused, but its pause is not the map this version writes.
fn bad_pause() -> Item {
    HashMap::from([
        ("group".to_owned(), AttributeValue::S("default".into())),
        ("holder_count".to_owned(), n("0")),
        ("paused".to_owned(), AttributeValue::S("yes".into())),
    ])
}

async fn seeded(prefix: &str, item: Item) -> (RoleStore, aws_sdk_dynamodb::Client) {
    let (store, _) = dynamo_store(prefix).await;
    let (client, _) = counted_client().await;
    client
        .put_item()
        .table_name(store.table())
        .set_item(Some(item))
        .send()
        .await
        .unwrap();
    (store, client)
}

async fn stored(client: &aws_sdk_dynamodb::Client, table: &str) -> Item {
    raw_item(client, table, "default").await
}

fn one_slot() -> GroupRules {
    rules(1, std::time::Duration::ZERO)
}

#[tokio::test]
async fn a_grant_written_on_an_unreadable_item_is_taken_back() {
    let (store, client) = seeded("corrupt-grant", miscounted()).await;
    let g = GroupName::parse("default").unwrap();
    let y = NodeId::parse("y").unwrap();
    // The condition passes (count 0 < 1 slot), the write lands, the item it
    // leaves cannot be read: the answer is an error, and y holds nothing.
    let result = store.acquire(&g, &y, one_slot(), Timestamp(2000)).await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
    assert_eq!(stored(&client, store.table()).await, miscounted());
    // Again, as Zincati retries: the same, and nothing piles up.
    let result = store.acquire(&g, &y, one_slot(), Timestamp(3000)).await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
    assert_eq!(stored(&client, store.table()).await, miscounted());
}

#[tokio::test]
async fn a_refused_write_on_an_unreadable_item_changes_nothing() {
    let (store, client) = seeded("corrupt-refused", bad_pause()).await;
    let g = GroupName::parse("default").unwrap();
    let y = NodeId::parse("y").unwrap();
    let result = store.acquire(&g, &y, one_slot(), Timestamp(2000)).await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
    let result = store.release(&g, &y, false, Timestamp(2000)).await;
    assert!(matches!(result, Err(StoreError::Corrupt(_))), "{result:?}");
    assert_eq!(stored(&client, store.table()).await, bad_pause());
    // What `fleetlock status` says: which group's item, in which table.
    let listed = store.groups(None).await.unwrap_err().to_string();
    assert_eq!(
        listed,
        format!(
            "lock store holds inconsistent data: the item of group 'default' in table {}: \
             paused is not a map",
            store.table()
        )
    );
}

#[tokio::test]
async fn zincati_hears_500_internal_and_the_sentence_says_what_happened() {
    let (store, client) = seeded("corrupt-http", miscounted()).await;
    let table = store.table().to_owned();
    let api = api("default=1", store, Auth::Disabled);
    let server = spawn_server(Arc::clone(&api)).await;
    let r = zincati(server.addr, "pre-reboot", "y", "default").await;
    assert_eq!((r.status, r.kind()), (500, "internal".to_string()));
    assert_eq!(
        r.json()["value"],
        "the server cannot read this group's stored state, so no slot was granted; \
         an operator must repair the group, try again later"
    );
    assert_eq!(stored(&client, &table).await, miscounted());
    // The holder's steady-state lands (x's slot is free, which is all it
    // asked), but the item it leaves is as unreadable: a 500 all the same,
    // so that the 5xx alarm brings a person to repair the group.
    let r = zincati(server.addr, "steady-state", "x", "default").await;
    assert_eq!((r.status, r.kind()), (500, "internal".to_string()));
    assert!(!stored(&client, &table).await.contains_key("h:x"));
}

/// A reservation mark `d:y` left without its holder `h:y` (written by hand):
/// a drain confirmation for `y` writes no holder the count does not know.
/// The item cannot be read, so the answer is an error either way; what
/// matters is what the table holds afterwards.
#[tokio::test]
async fn a_leftover_reservation_mark_never_becomes_an_uncounted_holder() {
    let item = HashMap::from([
        ("group".to_owned(), AttributeValue::S("default".into())),
        ("holder_count".to_owned(), n("0")),
        ("slots".to_owned(), n("1")),
        ("d:y".to_owned(), n("1000")),
    ]);
    let (store, client) = seeded("leftover-drain", item).await;
    let g = GroupName::parse("default").unwrap();
    let y = NodeId::parse("y").unwrap();
    let confirmed = store.drained(&g, &y, None, Timestamp(2000)).await;
    assert!(confirmed.is_err(), "{confirmed:?}");
    let after = stored(&client, store.table()).await;
    assert!(!after.contains_key("h:y"), "an uncounted holder: {after:?}");
    assert_eq!(after.get("holder_count"), Some(&n("0")));
}
