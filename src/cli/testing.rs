//! What the commands' unit tests share: names, rules and output as text.

use std::time::Duration;

use crate::config::Config;
use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRules;
use crate::domain::time::Timestamp;

pub(crate) fn group(name: &str) -> GroupName {
    GroupName::parse(name).unwrap()
}

pub(crate) fn node(id: &str) -> NodeId {
    NodeId::parse(id).unwrap()
}

pub(crate) fn rules(slots: u32) -> GroupRules {
    GroupRules {
        slots,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

pub(crate) fn printed(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap()
}

pub(crate) fn config(groups: &str) -> Config {
    Config::from_vars(|name| (name == "FLEETLOCK_GROUPS").then(|| groups.to_owned())).unwrap()
}

pub(crate) fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: std::collections::BTreeMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

pub(crate) fn instant(text: &str) -> Timestamp {
    let at: jiff::Timestamp = text.parse().unwrap();
    Timestamp(u64::try_from(at.as_millisecond()).unwrap())
}

/// 2026-03-27, a Friday, 12:00 UTC.
pub(crate) const FRIDAY_NOON: Timestamp = Timestamp(1_774_612_800_000);
