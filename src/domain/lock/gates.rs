//! The gates of a group, in one list: the pause and the exclusion (set on
//! the group's record), the gates of its rules, and its windows. A gate is
//! one module beside this one (its setting's parse where it has one, its
//! rule over the group's record, its update of it, its refusal, its words)
//! and one entry of [`GATES`]; the layers that speak of every gate iterate
//! the list: `config check` prints each phrase, the regions' digest takes
//! each part, and `fleetlock status` writes each gate's lines under a
//! group's table and its fields in `--json`. A gate set per group has a
//! [`GroupSetting`]: the configuration reads those in the list's order,
//! after FLEETLOCK_ZONES (the others name a group only through it), and
//! the groups keep what each sets in one [`GroupRules`] per group.
//! `every_gate_is_read_summed_up_and_digested` fails for a gate one of them
//! misses.

use super::canary::CanaryGate;
use super::drain::DrainGate;
use super::exclusion::ExclusionGate;
use super::lease::LeaseGate;
use super::pause::PauseGate;
use super::returns::ReturnGate;
use super::settle::SettleGate;
use super::window::WindowGate;
use super::zones::ZonesGate;
use super::{GroupRecord, GroupRules};
use crate::domain::input::{GroupName, NodeId};
use crate::domain::time::Timestamp;
use crate::domain::windows::Schedule;
use serde_json::{Map, Value};

/// What holds a group's nodes back, and what each layer says of it.
pub(crate) trait Gate: Sync {
    /// The variable that sets it, per group (`FLEETLOCK_LEASE`); none for a
    /// gate that is no setting of a group's rules: set on the group's record
    /// by people and alarms (a pause, an exclusion), or a calendar of its own
    /// (the windows). The configuration reads each by its gate's `VARIABLE`,
    /// in an order of its own; the list's test holds the two together.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "ties the list to the settings in its test")
    )]
    fn variable(&self) -> Option<&'static str> {
        self.setting().map(|setting| setting.variable)
    }

    /// How its variable sets a group's rules, where it is a value per group
    /// (`workers=6h,*=1h`): the configuration reads these in the list's
    /// order.
    fn setting(&self) -> Option<&'static GroupSetting> {
        None
    }

    /// Its phrase in `config check`'s line of a group with `rules` (", lease
    /// 6h (...)"), where the group has it.
    fn summary(&self, _rules: &GroupRules) -> Option<String> {
        None
    }

    /// Its part of the digest of the settings that decide a group's grants
    /// (`lease=6h`). The gates an earlier version digested give theirs
    /// always (`lease=-`), the later ones only where set, so that a group's
    /// digest is the one that version recorded.
    fn digest(&self, _rules: &GroupRules) -> Option<String> {
        None
    }

    /// Its lines in `fleetlock status` under the group's table: what of the
    /// group's record it holds back or waits for, and how to end it.
    fn status(&self, group: &Shown) -> Vec<String>;

    /// Its fields of the group in `fleetlock status --json`.
    fn status_fields(&self, _group: &Shown) -> Vec<(&'static str, Value)> {
        Vec::new()
    }

    /// Its fields of a holder, `id` holding since `at`, in `fleetlock
    /// status --json`.
    fn holder_fields(
        &self,
        _group: &Shown,
        _id: &NodeId,
        _at: Timestamp,
    ) -> Vec<(&'static str, Value)> {
        Vec::new()
    }
}

/// A gate's value per group, as its variable writes it (`GROUP=VALUE`
/// entries, `*` for every group not listed): read into a group's
/// [`GroupRules`] by the gate's own parse. The groups keep one
/// `GroupRules` per group and one for `*` ([`crate::domain::groups`]).
pub(crate) struct GroupSetting {
    /// `FLEETLOCK_LEASE`.
    pub variable: &'static str,
    /// What one value is, in a refusal: "a lease".
    pub what: &'static str,
    /// The variable's example, in a refusal: "workers=6h".
    pub example: &'static str,
    /// Reads one group's value into its rules, or says what is wrong with it.
    pub read: fn(&str, &mut GroupRules) -> Result<(), ReadError>,
    /// Sets the gate's part of the second rules to the first's.
    pub copy: fn(&GroupRules, &mut GroupRules),
}

/// What is wrong with a gate's value, as its own parse says it.
pub(crate) type ReadError = Box<dyn std::error::Error + Send + Sync>;

/// The settings of the gates that have one, in the list's order.
pub(crate) fn settings() -> impl Iterator<Item = &'static GroupSetting> {
    GATES.iter().filter_map(|gate| gate.setting())
}

/// A group as `fleetlock status` shows it, for the gates' lines.
pub(crate) struct Shown<'a> {
    pub name: &'a GroupName,
    pub record: &'a GroupRecord,
    /// The group's rules as deployed, where the configuration is known
    /// (`--function`, or the same variables in the shell).
    pub rules: Option<GroupRules>,
    /// Whether that configuration is known (a group it does not configure
    /// has no rules, but a known configuration says what it lacks).
    pub deployed: bool,
    /// Its maintenance windows, where the configuration is known.
    pub windows: Option<&'a Schedule>,
    pub now: Timestamp,
    /// ` (HOST)` where the host map knows the node's host, else nothing.
    pub host_of: &'a dyn Fn(&NodeId) -> String,
    /// A node's host as JSON, where a host map was asked for.
    pub host_json: Option<&'a dyn Fn(&NodeId) -> Value>,
}

/// Every gate of a group, in the order status, the summary and the digest
/// put them: first those set on the record, then the rules', then the
/// windows.
pub(crate) static GATES: &[&dyn Gate] = &[
    &PauseGate,
    &ExclusionGate,
    &SettleGate,
    &LeaseGate,
    &DrainGate,
    &ReturnGate,
    &ZonesGate,
    &CanaryGate,
    &WindowGate,
];

/// `fleetlock status`'s lines of the gates under a group's table, each
/// gate's in the list's order.
pub(crate) fn status_lines(group: &Shown) -> Vec<String> {
    GATES.iter().flat_map(|gate| gate.status(group)).collect()
}

/// `fleetlock status --json`'s fields of the gates, in a group's object.
pub(crate) fn status_fields(group: &Shown, object: &mut Map<String, Value>) {
    for (key, value) in GATES.iter().flat_map(|gate| gate.status_fields(group)) {
        object.insert(key.to_owned(), value);
    }
}

/// `fleetlock status --json`'s fields of the gates, in a holder's object.
pub(crate) fn holder_fields(
    group: &Shown,
    id: &NodeId,
    at: Timestamp,
    object: &mut Map<String, Value>,
) {
    for (key, value) in GATES
        .iter()
        .flat_map(|gate| gate.holder_fields(group, id, at))
    {
        object.insert(key.to_owned(), value);
    }
}

/// `config check`'s words for a group's rules: its slots, then each gate's
/// phrase.
pub(crate) fn summary(rules: &GroupRules) -> String {
    let mut text = format!(
        "{} slot{}",
        rules.slots,
        if rules.slots == 1 { "" } else { "s" }
    );
    for gate in GATES {
        text.extend(gate.summary(rules));
    }
    text
}

/// The text the regions' digest is taken of: the slots, then each gate's
/// part, `;` between.
pub(crate) fn digest_text(rules: &GroupRules) -> String {
    let mut text = format!("slots={}", rules.slots);
    for part in GATES.iter().filter_map(|gate| gate.digest(rules)) {
        text.push(';');
        text.push_str(&part);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// A value of each gate's variable that sets something for `workers`:
    /// the example its refusals give, for a gate set per group.
    fn example(variable: &str) -> &'static str {
        match settings().find(|setting| setting.variable == variable) {
            Some(setting) => setting.example,
            None if variable == "FLEETLOCK_ZONES" => "workers",
            None => panic!("no example for {variable}: add one for the new gate"),
        }
    }

    /// The configuration of `workers` with three slots, `db` and `*` (which
    /// the examples name) and `vars`.
    fn workers_with(vars: &[(&str, &str)]) -> Config {
        let vars: Vec<(String, String)> = [("FLEETLOCK_GROUPS", "workers=3,db=1,*=1")]
            .iter()
            .chain(vars)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_vars(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()))
            .unwrap()
    }

    fn workers_rules(vars: &[(&str, &str)]) -> GroupRules {
        let workers = GroupName::parse("workers").unwrap();
        workers_with(vars).groups.rules_as_set(&workers).unwrap()
    }

    /// Each gate's variable, with an example value, for the gates the
    /// rules have.
    fn every_rule_set() -> Vec<(&'static str, &'static str)> {
        (GATES.iter())
            .filter_map(|gate| gate.variable())
            .map(|variable| (variable, example(variable)))
            .collect()
    }

    #[test]
    fn every_gate_is_read_summed_up_and_digested() {
        let plain = workers_rules(&[]);
        for variable in GATES.iter().filter_map(|gate| gate.variable()) {
            let gated = workers_rules(&[(variable, example(variable))]);
            assert_ne!(gated, plain, "{variable} is read into the rules");
            assert_ne!(
                summary(&gated),
                summary(&plain),
                "{variable} in config check"
            );
            assert_ne!(
                digest_text(&gated),
                digest_text(&plain),
                "{variable} in the digest"
            );
            assert!(
                crate::config::settings::SETTINGS
                    .iter()
                    .any(|setting| setting.name == variable && setting.rule && setting.function),
                "{variable} is a rule in the one list of settings"
            );
        }
    }

    /// A group every gate has something to say of: a person's pause and an
    /// alarm's, an exclusion, a holder past a 6h lease, a node waiting for
    /// its drain, one returning, a zone out, a release a minute ago; the
    /// lines of the gates the configuration sets, where it is known.
    fn status_of(config: Option<&Config>) -> Vec<String> {
        let name = GroupName::parse("workers").unwrap();
        let rules = config.map(|config| config.groups.rules_as_set(&name).unwrap());
        let now = Timestamp(1_764_504_000_000);
        let ago = |minutes: u64| Timestamp(now.0 - minutes * 60_000);
        let id = |name: &str| NodeId::parse(name).unwrap();
        let record = GroupRecord {
            holders: crate::domain::lock::Semaphore::from_holders([
                (id("a"), ago(7 * 60)),
                (id("b"), ago(2)),
                (id("c"), ago(3)),
            ]),
            draining: [(id("b"), ago(2))].into(),
            returning: [(id("c"), ago(1))].into(),
            last_release: Some(ago(1)),
            zone: Some("workers.zone-a".into()),
            pause: crate::domain::lock::Pause {
                person: Some(by_person("kernel regression", ago(5))),
                alarms: ["errors".to_owned()].into(),
                stop: None,
            },
            excluded: [(id("d"), by_person("disk check", ago(9)))].into(),
            ..GroupRecord::default()
        };
        let shown = Shown {
            name: &name,
            record: &record,
            rules,
            deployed: config.is_some(),
            windows: config.map(|config| &config.windows),
            now,
            host_of: &|_| String::new(),
            host_json: None,
        };
        status_lines(&shown)
    }

    fn by_person(reason: &str, since: Timestamp) -> crate::domain::lock::ByPerson {
        crate::domain::lock::ByPerson {
            reason: crate::domain::input::PauseReason::parse(reason).unwrap(),
            since,
            by: "alice".into(),
        }
    }

    #[test]
    fn every_gate_writes_its_lines_in_status_in_the_lists_order() {
        let mut vars = every_rule_set();
        vars.push((
            "FLEETLOCK_WINDOWS",
            "workers: days=Sun start_time=11:00 length_minutes=120",
        ));
        let lines = status_of(Some(&workers_with(&vars)));
        let starts = [
            "workers is paused by alice since 2025-11-30T11:55:00Z: kernel regression, and \
             while alarm(s) errors are in ALARM",
            "workers excludes 'd' by alice since 2025-11-30T11:51:00Z: disk check",
            "workers settles until ",
            "workers: 'a' is past its 6h lease since ",
            "workers: 'b' waits for its drain since ",
            "workers: 'c' is returning since ",
            "workers has nodes out in zone 'zone-a' (group 'workers.zone-a')",
            "workers rolls out in waves (the canary, then 3, then the rest, each back 30m ",
            "workers windows (UTC): days=Sun start_time=11:00 length_minutes=120; open until \
             2025-11-30T13:00:00Z (Sun 2025-11-30 13:00 UTC)",
        ];
        assert_eq!(lines.len(), GATES.len(), "{lines:#?}");
        for (line, start) in lines.iter().zip(starts) {
            assert!(line.starts_with(start), "{line}\nwanted {start}");
        }
        // Not configured, a gate still shows what the record holds for it
        // (a pause, an exclusion, a drain, a return, a zone out); what the
        // rules decide (the settle period, a lease's end, a rollout) needs
        // them.
        let unknown = status_of(None);
        assert_eq!(unknown.len(), 5, "{unknown:#?}");
        assert!(unknown[0].contains("is paused by alice"));
        assert!(unknown[1].contains("excludes 'd'"));
        assert!(unknown[2].contains("waits for its drain since"));
        assert!(unknown[3].contains("is returning since"));
        assert!(unknown[4].contains("has nodes out in zone"));
    }

    /// The gates' fields of `status --json`, group's and holder's: each
    /// key written by one gate only (a second would overwrite the first),
    /// the same keys as before the gates wrote them.
    #[test]
    fn every_gate_writes_its_own_json_fields() {
        let config = workers_with(&every_rule_set());
        let name = GroupName::parse("workers").unwrap();
        let record = GroupRecord::default();
        let shown = Shown {
            name: &name,
            record: &record,
            rules: Some(config.groups.rules_as_set(&name).unwrap()),
            deployed: true,
            windows: Some(&config.windows),
            now: Timestamp(0),
            host_of: &|_| String::new(),
            host_json: None,
        };
        let id = NodeId::parse("a").unwrap();
        let unique = |mut keys: Vec<&'static str>, what: &str| {
            let written = keys.len();
            keys.sort_unstable();
            keys.dedup();
            assert_eq!(keys.len(), written, "a {what} key written by two gates");
            keys
        };
        let group_keys = unique(
            (GATES.iter())
                .flat_map(|gate| gate.status_fields(&shown))
                .map(|(key, _)| key)
                .collect(),
            "group",
        );
        let holder_keys = unique(
            (GATES.iter())
                .flat_map(|gate| gate.holder_fields(&shown, &id, Timestamp(0)))
                .map(|(key, _)| key)
                .collect(),
            "holder",
        );
        assert_eq!(
            group_keys,
            [
                "drain_on_timeout",
                "drain_timeout_seconds",
                "excluded",
                "last_release_at",
                "lease_seconds",
                "maintenance_windows",
                "paused_by_alarms",
                "paused_by_person",
                "return_timeout_seconds",
                "rollout",
                "settle_seconds",
                "settles_until",
                "stopped",
                "zone_group_out",
                "zone_out",
            ]
        );
        assert_eq!(
            holder_keys,
            [
                "drain_overdue",
                "drain_until",
                "lease_ends_at",
                "lease_expired",
                "released_at",
                "reserved_at",
                "return_overdue",
                "return_until",
                "returning",
                "returning_for_seconds",
                "waiting_for_drain",
            ]
        );
    }

    #[test]
    fn the_digest_of_a_group_without_gates_is_what_earlier_versions_took() {
        assert_eq!(
            digest_text(&workers_rules(&[])),
            "slots=3;settle=0s;lease=-;drain=-;return=-"
        );
        let all = workers_rules(&every_rule_set());
        assert_eq!(
            digest_text(&all),
            "slots=3;settle=10m;lease=6h;drain=15m:hold;return=20m;one_zone_at_a_time;canary=30m:1+3:1h"
        );
    }
}
