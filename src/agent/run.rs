//! `fleetlock-kube-agent`: its settings, checked before it touches AWS or
//! the cluster, then a pass every interval (or one, with `--once`).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use super::Agent;
use super::cluster::{Cluster, Identity};
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

fn interval(text: &str) -> Result<Duration, String> {
    let every = parse_duration(text).map_err(|why| why.to_string())?;
    if !(Duration::from_secs(5)..=Duration::from_secs(300)).contains(&every) {
        return Err(format!("'{text}' is not from 5s to 5m"));
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
fn lease_of(given: Option<&str>, pod_namespace: Option<&str>) -> Result<(String, String), String> {
    match given {
        Some(text) => match text.split_once('/') {
            Some((namespace, name)) if !namespace.is_empty() && !name.is_empty() => {
                Ok((namespace.into(), name.into()))
            }
            _ => Err(format!("--lease: '{text}' is not NAMESPACE/NAME")),
        },
        None => Ok((
            pod_namespace.unwrap_or("kube-system").into(),
            "fleetlock-kube-agent".into(),
        )),
    }
}

async fn serve(args: Args) -> Result<(), String> {
    // Its own settings first: nothing is asked of AWS or the cluster with
    // a bad one.
    let groups: Vec<GroupName> = args
        .groups
        .iter()
        .map(|g| group_named(g).map_err(|e| format!("--group: {e}")))
        .collect::<Result<_, _>>()?;
    let table = config::command_table(process_env, "kube-agent").map_err(|e| e.to_string())?;
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
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("--kubeconfig {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &Default::default())
                .await
                .map_err(|e| format!("--kubeconfig {}: {e}", path.display()))?
        }
        None => kube::Config::infer().await.map_err(|e| {
            format!("no cluster found (in-cluster, KUBECONFIG, ~/.kube/config): {e}")
        })?,
    };
    // No retry inside a pass: a budget's 429 would hold the pass for
    // minutes. The next pass, an interval later, is the retry.
    let mut kube_config = kube_config;
    kube_config.default_retry = false;
    let client = kube::Client::try_from(kube_config)
        .map_err(|e| format!("the Kubernetes client could not be built: {e}"))?;
    let aws = command_aws().await.map_err(|e| e.to_string())?;
    let store = dynamo_store(&aws, table);
    vet_groups(&store, &groups).await?;
    let agent = Agent::new(store, Cluster::new(client, identity), groups);
    loop {
        let pass = agent.pass(Timestamp::now()).await;
        match (&pass, args.once) {
            (Ok(pass), true) => {
                println!(
                    "{}",
                    serde_json::json!({"leading": pass.leading, "nodes": pass.done})
                );
                return Ok(());
            }
            (Err(why), true) => return Err(why.clone()),
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
async fn vet_groups(store: &DynamoStore, groups: &[GroupName]) -> Result<(), String> {
    let known = Known::new(store, store.table(), None);
    for group in groups {
        let stored = store
            .groups(Some(group))
            .await
            .map_err(|e| format!("the lock table could not be read for group '{group}': {e}"))?;
        if !stored.is_empty() {
            continue;
        }
        if let Some(parent) = known
            .stored_parent(group)
            .await
            .map_err(|e| e.to_string())?
        {
            return Err(format!(
                "--group {group}: not stored in table '{}', and '{parent}' is: if '{parent}' is \
                 split by zone (FLEETLOCK_ZONES), its zones' nodes hold slots of '{parent}'; \
                 name --group {parent}",
                store.table()
            ));
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
                .contains("NAMESPACE/NAME")
        );
        assert!(interval("1s").is_err());
        assert_eq!(lease_seconds(Duration::from_secs(10)), 30);
        assert_eq!(lease_seconds(Duration::from_secs(300)), 900);
        assert_eq!(interval("30s").unwrap(), Duration::from_secs(30));
    }
}
