//! `fleetlock-kube-agent`: its settings, checked before it touches AWS or
//! the cluster, then a pass every interval (or one, with `--once`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use super::Agent;
use super::cluster::{Cluster, Identity};
use crate::agent::PassError;
use crate::cli::context::{Known, command_aws, dynamo_store, group_named};
use crate::config::{self, process_env};
use crate::domain::groups::parse_duration;
use crate::domain::input::GroupName;
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;
use crate::store::dynamodb::DynamoStore;

/// Drain the Kubernetes nodes whose FleetLock slot is reserved, and
/// uncordon them when they are back (see docs/kubernetes.md)
#[derive(Parser, Debug)]
#[command(name = "fleetlock-kube-agent", version)]
struct Args {
    /// A group whose nodes this agent drains, as stored in the table
    /// (repeatable); the table is FLEETLOCK_TABLE's
    #[arg(long = "group", value_name = "GROUP", required = true)]
    groups: Vec<String>,
    /// The cluster's kubeconfig (default: in the cluster, its service
    /// account; else KUBECONFIG or ~/.kube/config)
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<std::path::PathBuf>,
    /// The Lease that lets one agent act at a time, NAMESPACE/NAME
    /// (default: the pod's namespace, or kube-system, /fleetlock-kube-agent)
    #[arg(long, value_name = "NAMESPACE/NAME")]
    lease: Option<String>,
    /// How long between passes (5s to 5m)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = interval)]
    interval: Duration,
    /// One pass, its report as JSON, then stop
    #[arg(long)]
    once: bool,
}

/// Why the agent did not start, or its one pass (`--once`) failed.
#[derive(Debug, thiserror::Error)]
enum AgentError {
    #[error(transparent)]
    Duration(#[from] crate::domain::lock::settle::DurationError),
    #[error("'{0}' is not from 5s to 5m")]
    Interval(String),
    #[error("--group: {0}")]
    Group(String),
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("--lease: '{0}' is not NAMESPACE/NAME")]
    Lease(String),
    #[error("--kubeconfig {path}: {source}")]
    Kubeconfig {
        path: String,
        source: kube::config::KubeconfigError,
    },
    #[error("no cluster found (in-cluster, KUBECONFIG, ~/.kube/config): {0}")]
    NoCluster(kube::config::InferConfigError),
    #[error("the Kubernetes client could not be built: {0}")]
    Client(kube::Error),
    /// AWS, or the table, as a command says it.
    #[error("{0}")]
    Command(String),
    #[error("the lock table could not be read for group '{group}': {source}")]
    Table {
        group: String,
        source: crate::domain::store::StoreError,
    },
    #[error(
        "--group {group}: not stored in table '{table}', and '{parent}' is: if '{parent}' is \
         split by zone (FLEETLOCK_ZONES), its zones' nodes hold slots of '{parent}'; name \
         --group {parent}"
    )]
    ZoneOfStored {
        group: String,
        table: String,
        parent: String,
    },
    #[error(transparent)]
    Pass(#[from] PassError),
}

fn interval(text: &str) -> Result<Duration, AgentError> {
    let every = parse_duration(text)?;
    if !(Duration::from_secs(5)..=Duration::from_secs(300)).contains(&every) {
        return Err(AgentError::Interval(text.to_owned()));
    }
    Ok(every)
}

/// How long a Lease holds without renewal: three passes, and 30 s at the
/// least, so that the agent acting renews it well inside and a successor
/// waits no longer than that for one that is gone.
fn lease_seconds(interval: Duration) -> i32 {
    let three = interval.as_secs().saturating_mul(3).max(30);
    i32::try_from(three).unwrap_or(i32::MAX)
}

/// Runs the agent with these arguments (the program's name first).
pub async fn run(args: Vec<String>) -> ExitCode {
    let args = match Args::try_parse_from(args) {
        Ok(args) => args,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() { 2 } else { 0 });
        }
    };
    crate::logging::init(false);
    match serve(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("fleetlock-kube-agent: {why}");
            ExitCode::FAILURE
        }
    }
}

/// The Lease's namespace and name: given, or the pod's namespace.
fn lease_of(
    given: Option<&str>,
    pod_namespace: Option<&str>,
) -> Result<(String, String), AgentError> {
    match given {
        Some(text) => match text.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
                Ok((namespace.into(), name.into()))
            }
            _ => Err(AgentError::Lease(text.to_owned())),
        },
        None => Ok((
            pod_namespace.unwrap_or("kube-system").into(),
            "fleetlock-kube-agent".into(),
        )),
    }
}

async fn serve(args: Args) -> Result<(), AgentError> {
    // Its own settings first: nothing is asked of AWS or the cluster with
    // a bad one.
    let groups: Vec<GroupName> = args
        .groups
        .iter()
        .map(|g| group_named(g).map_err(|e| AgentError::Group(e.to_string())))
        .collect::<Result<_, _>>()?;
    let table = config::command_table(process_env, "kube-agent")?;
    let pod_name = std::env::var("POD_NAME").ok().filter(|v| !v.is_empty());
    let pod_namespace = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|v| !v.is_empty());
    let lease = lease_of(args.lease.as_deref(), pod_namespace.as_deref())?;
    let holder = pod_name.clone().unwrap_or_else(|| {
        std::env::var("HOSTNAME")
            .unwrap_or_else(|_| format!("fleetlock-kube-agent-{}", std::process::id()))
    });
    let identity = Identity {
        holder,
        pod: pod_namespace.zip(pod_name),
        lease,
        lease_seconds: lease_seconds(args.interval),
    };
    let kube_config = match &args.kubeconfig {
        Some(path) => {
            let bad = |source| AgentError::Kubeconfig {
                path: path.display().to_string(),
                source,
            };
            let file = kube::config::Kubeconfig::read_from(path).map_err(bad)?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .map_err(bad)?
        }
        None => kube::Config::infer().await.map_err(AgentError::NoCluster)?,
    };
    // No retry inside a pass: a budget's 429 would hold the pass for
    // minutes. The next pass, an interval later, is the retry.
    let mut kube_config = kube_config;
    kube_config.default_retry = false;
    let client = kube::Client::try_from(kube_config).map_err(AgentError::Client)?;
    let aws = command_aws()
        .await
        .map_err(|e| AgentError::Command(e.to_string()))?;
    let store = dynamo_store(&aws, table);
    vet_groups(&store, &groups).await?;
    let agent = Agent::new(store, Cluster::new(client, identity), groups);
    loop {
        let pass = agent.pass(Timestamp::now()).await;
        match (pass, args.once) {
            (Ok(pass), true) => {
                println!(
                    "{}",
                    serde_json::json!({"leading": pass.leading, "nodes": pass.done})
                );
                return Ok(());
            }
            (Err(why), true) => return Err(why.into()),
            (Ok(pass), false) => {
                for (node, said) in &pass.done {
                    tracing::info!(node, leading = pass.leading, "{said}");
                }
            }
            (Err(why), false) => tracing::warn!(error = %why, "the pass failed; trying again"),
        }
        tokio::time::sleep(args.interval).await;
    }
}

/// A zone's group is refused naming the group whose item holds its slots;
/// a group not stored yet is said (no node asked there yet, or a typo) and
/// served all the same: the agent may start before the first node asks.
/// GetItems only: the agent's policy has no Scan to list the groups.
async fn vet_groups(store: &DynamoStore, groups: &[GroupName]) -> Result<(), AgentError> {
    let known = Known::new(store, store.table(), None);
    for group in groups {
        let stored = store
            .groups(Some(group))
            .await
            .map_err(|source| AgentError::Table {
                group: group.to_string(),
                source,
            })?;
        if !stored.is_empty() {
            continue;
        }
        if let Some(parent) = known
            .stored_parent(group)
            .await
            .map_err(|e| AgentError::Command(e.to_string()))?
        {
            return Err(AgentError::ZoneOfStored {
                group: group.to_string(),
                table: store.table().to_owned(),
                parent: parent.to_string(),
            });
        }
        tracing::warn!(
            group = %group,
            "group '{group}' has no item yet in table '{}': no node has asked in it (or the \
             name is a typo: 'fleetlock status' lists the groups); serving it all the same",
            store.table()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lease_is_named_or_the_pods_namespace() {
        assert_eq!(
            lease_of(Some("ops/agent"), None).unwrap(),
            ("ops".into(), "agent".into())
        );
        assert_eq!(
            lease_of(None, Some("fleetlock")).unwrap(),
            ("fleetlock".into(), "fleetlock-kube-agent".into())
        );
        assert!(
            lease_of(Some("agent"), None)
                .unwrap_err()
                .to_string()
                .contains("NAMESPACE/NAME")
        );
        assert!(interval("1s").is_err());
        assert_eq!(lease_seconds(Duration::from_secs(10)), 30);
        assert_eq!(lease_seconds(Duration::from_secs(300)), 900);
        assert_eq!(interval("30s").unwrap(), Duration::from_secs(30));
    }
}
