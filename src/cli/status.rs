//! `status`: who holds a slot, since when, and each group's state and rules;
//! [`table`] renders it for people, [`json`] for scripts, from the words
//! both share ([`view`]).

pub(crate) mod json;
pub(crate) mod text;
pub(crate) mod view;

use std::io::Write;

use clap::Args;

use crate::config::{self, Config, process_env};
use crate::domain::input::GroupName;
use crate::domain::lock::GroupRecord;
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;

use super::Failure;
use super::context::{Known, command_aws, deployed_config, dynamo_store, group_named};
use super::hosts::{HostLookup, HostsAsked};

/// Show who holds a slot, since when, and each group's pause, settle time and
/// windows (read from the deployed function's configuration with --function);
/// past 20 idle groups, the rest are counted (--all lists them); --hosts: each
/// holder's host, from the instances' tags or a file of 'ID HOST' lines
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Status {
    /// Only this group
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: Option<String>,
    /// As JSON
    #[arg(long)]
    pub(crate) json: bool,
    /// Read the rules from this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
    /// List every idle group too
    #[arg(long)]
    pub(crate) all: bool,
    /// Show each holder's host: 'tags' (the instances' own tags) or a host file (default: FLEETLOCK_HOSTS)
    #[arg(long, value_name = "tags|FILE")]
    pub(crate) hosts: Option<String>,
}

impl Status {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let group = self.group.as_deref().map(group_named).transpose()?;
        let table = config::command_table(process_env, "status")?;
        let hosts = HostsAsked::read(self.hosts)?;
        // One configuration for the table and the function's settings.
        let aws = command_aws().await?;
        let store = dynamo_store(&aws, table);
        let deployed = deployed_config(&aws, self.function).await?;
        // A zone's group shows its split group, which holds its slots.
        let (group, note) = match group {
            Some(group) => {
                let known = Known::new(&store, store.table(), deployed.as_ref());
                let (shown, note) = known.shown(&group).await?;
                (Some(shown), note)
            }
            None => (None, None),
        };
        if let Some(note) = note.filter(|_| !self.json) {
            say!(out, "{note}");
        }
        let lookup = hosts.map(|asked| asked.lookup(&aws));
        let view = StatusView {
            json: self.json,
            all: self.all,
            hosts: lookup.as_ref(),
        };
        status(
            &store,
            group.as_ref(),
            deployed.as_ref(),
            Timestamp::now(),
            view,
            out,
        )
        .await
    }
}

/// How `status` shows the groups.
#[derive(Clone, Copy)]
pub(crate) struct StatusView<'a> {
    pub(crate) json: bool,
    /// Every idle group too.
    pub(crate) all: bool,
    /// Where the holders' hosts come from, if asked.
    pub(crate) hosts: Option<&'a HostLookup>,
}

/// `status`: who holds a slot, and each group's state and rules.
pub(crate) async fn status<S: LockStore>(
    store: &S,
    group: Option<&GroupName>,
    deployed: Option<&Config>,
    now: Timestamp,
    view: StatusView<'_>,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let mut groups = store.groups(group).await?;
    let used = groups.len();
    // Every configured group, those no node has used yet too (a group whose
    // window has not opened yet would otherwise be invisible).
    let mut never_used = Vec::new();
    if let (None, Some(config)) = (group, deployed) {
        for (name, _) in config.groups.listed() {
            if !groups.iter().any(|(stored, _)| stored == name) {
                groups.push((name.clone(), GroupRecord::default()));
                never_used.push(name.clone());
            }
        }
    }
    let hosts = match view.hosts {
        Some(lookup) => {
            // The holders' hosts, and the excluded nodes'.
            let ids: Vec<String> = groups
                .iter()
                .flat_map(|(_, record)| {
                    let holders = record.holders.holders().map(|(id, _)| id);
                    holders.chain(record.excluded.keys())
                })
                .map(|id| id.as_str().to_owned())
                .collect();
            Some(lookup.hosts(&ids).await?)
        }
        None => None,
    };
    // On a global table: which regions serve it, and where they disagree.
    let regions = store.recorded_settings().await?;
    let wildcard = store.wildcard_groups().await?;
    let wildcard = view::Wildcard {
        counted: wildcard.len(),
        limit: deployed.map(|config| config.groups.wildcard_limit()),
    };
    if view.json {
        let mut rendered = json::render(
            &groups,
            deployed,
            now,
            wildcard,
            &never_used,
            hosts.as_ref(),
        );
        rendered["regions"] = json::regions(&regions);
        say!(out, "{rendered:#}");
        return Ok(());
    }
    let idle_shown = (!view.all).then_some(view::IDLE_SHOWN);
    let _ = write!(
        out,
        "{}",
        text::render(
            &groups,
            deployed,
            now,
            idle_shown,
            wildcard,
            &never_used,
            hosts.as_ref()
        )
    );
    match (group, used == 0) {
        (_, false) => {}
        (None, true) => say!(out, "(no group has been used yet)"),
        (Some(group), true) => say!(out, "{}", view::unused_group(group, deployed)),
    }
    for line in view::regions(&regions) {
        say!(out, "{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{config, group, node, printed, rules};
    use crate::domain::store::Decisions;
    use crate::store::memory::MemoryStore;

    #[tokio::test]
    async fn status_lists_holders_and_says_when_nothing_was_used() {
        let store = MemoryStore::default();
        let mut empty = Vec::new();
        let view = StatusView {
            json: false,
            all: false,
            hosts: None,
        };
        status(&store, None, None, Timestamp(10), view, &mut empty)
            .await
            .unwrap();
        assert!(printed(empty).ends_with("(no group has been used yet)\n"));
        store
            .acquire(
                &group("default"),
                &node("node-7"),
                rules(1),
                Timestamp(1_000),
            )
            .await
            .unwrap();
        let mut out = Vec::new();
        let json = StatusView {
            json: true,
            all: false,
            hosts: None,
        };
        status(
            &store,
            None,
            Some(&config("default=1")),
            Timestamp(61_000),
            json,
            &mut out,
        )
        .await
        .unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let text = listed.to_string();
        assert!(
            text.contains("node-7") && text.contains("default"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn status_shows_every_configured_group_those_never_used_too() {
        let store = MemoryStore::default();
        store
            .acquire(&group("default"), &node("n1"), rules(1), Timestamp(1_000))
            .await
            .unwrap();
        let configured = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("default=1,workers=2".into()),
            "FLEETLOCK_WINDOWS" => {
                Some("workers: days=Mon start_time=00:00 length_minutes=1".into())
            }
            _ => None,
        })
        .unwrap();
        // Tuesday 2026-12-01 12:00 UTC: the workers' window is closed.
        let now = Timestamp(1_796_126_400_000);
        let view = StatusView {
            json: false,
            all: false,
            hosts: None,
        };
        let mut out = Vec::new();
        status(&store, None, Some(&configured), now, view, &mut out)
            .await
            .unwrap();
        let text = printed(out);
        let row = text
            .lines()
            .find(|l| l.starts_with("workers"))
            .unwrap_or_else(|| panic!("{text}"));
        // Columns are two spaces apart at least.
        let cells: Vec<&str> = row
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            cells,
            ["workers", "0/2", "closed", "(never used)", "-", "-"],
            "{text}"
        );
        assert!(text.contains("workers windows"), "{text}");
        let mut out = Vec::new();
        let json = StatusView {
            json: true,
            all: false,
            hosts: None,
        };
        status(&store, None, Some(&configured), now, json, &mut out)
            .await
            .unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let never: Vec<(&str, bool)> = listed["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                (
                    g["group"].as_str().unwrap(),
                    g["never_used"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(never, [("default", false), ("workers", true)]);
        // Nothing was stored by looking.
        assert_eq!(store.groups(None).await.unwrap().len(), 1);
    }
}
