//! `hosts`, and the hosts behind ids that `status --hosts` shows: from the
//! instances' own tags (the Tagging API) or from a host file.

use std::io::Write;

use aws_config::SdkConfig;
use clap::Args;

use crate::aws;
use crate::config::{self, process_env};
use crate::domain::hosts::{Host, HostMap};

use super::Failure;
use super::context::command_aws;

/// The host behind each id, as status shows them
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Hosts {
    /// The ids (as status, the logs and slot events show them)
    #[arg(value_name = "ID", required = true)]
    pub(crate) ids: Vec<String>,
    /// 'tags' (the instances' own tags) or a host file of 'ID HOST' lines (default: FLEETLOCK_HOSTS)
    #[arg(long, value_name = "tags|FILE")]
    pub(crate) hosts: Option<String>,
    /// As JSON
    #[arg(long)]
    pub(crate) json: bool,
}

impl Hosts {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let Some(asked) = HostsAsked::read(self.hosts)? else {
            return Err(Failure::Input(
                "hosts needs --hosts tags|FILE (or FLEETLOCK_HOSTS)".into(),
            ));
        };
        // AWS only for the tags.
        let lookup = match asked {
            HostsAsked::File(map) => HostLookup::File(map),
            HostsAsked::Tags => asked.lookup(&command_aws().await?),
        };
        hosts(&self.ids, &lookup, self.json, out).await
    }
}

/// What `--hosts` (or `FLEETLOCK_HOSTS`) asks for, checked before anything
/// is asked of AWS: a host file is read now; tags need the AWS configuration.
pub(crate) enum HostsAsked {
    File(HostMap),
    Tags,
}

impl HostsAsked {
    pub(crate) fn read(given: Option<String>) -> Result<Option<Self>, Failure> {
        Ok(match config::host_source(process_env, given) {
            None => None,
            Some(config::HostSource::Tags) => Some(HostsAsked::Tags),
            Some(config::HostSource::File(path)) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| Failure::Input(format!("--hosts {}: {e}", path.display())))?;
                let map = HostMap::parse(&text)
                    .map_err(|why| Failure::Input(format!("--hosts {}: {why}", path.display())))?;
                Some(HostsAsked::File(map))
            }
        })
    }

    pub(crate) fn lookup(self, aws: &SdkConfig) -> HostLookup {
        match self {
            HostsAsked::File(map) => HostLookup::File(map),
            HostsAsked::Tags => HostLookup::Tags(aws::tagging_client(aws)),
        }
    }
}

/// Where the hosts behind ids come from.
pub(crate) enum HostLookup {
    /// A host file, read already.
    File(HostMap),
    /// The instances' own tags, through the Tagging API.
    Tags(aws_sdk_resourcegroupstagging::Client),
}

impl HostLookup {
    /// The hosts of these ids (those known).
    pub(crate) async fn hosts(&self, ids: &[String]) -> Result<HostMap, Failure> {
        match self {
            HostLookup::File(map) => Ok(map.clone()),
            HostLookup::Tags(client) => crate::aws::instance_tags::hosts_of(client, ids)
                .await
                .map_err(|e| Failure::Aws(e.to_string())),
        }
    }
}

/// `hosts`: the host behind each id, or that none is known.
pub(crate) async fn hosts(
    ids: &[String],
    lookup: &HostLookup,
    json: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let map = lookup.hosts(ids).await?;
    if json {
        let rows: Vec<_> = ids.iter().map(|id| host_json(id, map.get(id))).collect();
        say!(out, "{:#}", serde_json::Value::Array(rows));
        return Ok(());
    }
    for id in ids {
        match map.get(id) {
            Some(host) => say!(out, "{id}  {host}"),
            None => say!(
                out,
                "{id}  (unknown: no instance is tagged with it, no line of the host file names it)"
            ),
        }
    }
    Ok(())
}

/// A host as JSON, `{"instance", "name"}` (and `"also"`, the other
/// instances carrying the same id, when there are any), or `null` when
/// unknown.
pub(crate) fn host_value(host: Option<&Host>) -> serde_json::Value {
    host.map_or(serde_json::Value::Null, |h| {
        let mut value = serde_json::json!({ "instance": h.instance, "name": h.name });
        if !h.also.is_empty() {
            value["also"] = serde_json::json!(h.also);
        }
        value
    })
}

/// An id and its host as JSON: `{"id", "host": {"instance", "name"}}`, the
/// host `null` when unknown.
pub(crate) fn host_json(id: &str, host: Option<&Host>) -> serde_json::Value {
    serde_json::json!({ "id": id, "host": host_value(host) })
}
