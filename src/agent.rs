//! The Kubernetes agent (`fleetlock kube-agent`): for the groups it is
//! given, it drains the nodes of a cluster whose slot is reserved
//! (`FLEETLOCK_DRAIN`), confirms each drain with the conditional write the
//! hook and the CLI use, and once a node is back (a new boot id, Ready)
//! lifts the cordon it made and confirms the return (`FLEETLOCK_RETURN`).
//! The lock's rules stay the server's: the agent is a hook of the drain and
//! return gates, not a gate of its own.
//!
//! - [`plan`]: what to do next for one node, pure.
//! - [`cluster`]: the Kubernetes API, on `kube`.
//!
//! One agent acts at a time (a `coordination.k8s.io` Lease); every pass
//! starts from the table and the nodes' own annotations, so an agent
//! restarted mid-drain carries on where the last one stopped.

pub mod cluster;
pub mod plan;
pub mod run;

use std::collections::BTreeMap;

use crate::domain::input::{GroupName, NodeId};
use crate::domain::lock::GroupRecord;
use crate::domain::store::LockStore;
use crate::domain::time::Timestamp;

use crate::domain::store::Decisions;
use cluster::{Cluster, ClusterError};
use plan::{NodeView, Slot, Step, next_step};

/// What one pass did, node by node, in words a log line and a test read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// This agent held the Lease and acted.
    pub leading: bool,
    /// Per node name: what was done, or why nothing could be.
    pub done: BTreeMap<String, String>,
}

/// The agent: the table's store, the cluster, and the groups it serves.
pub struct Agent<S> {
    store: S,
    cluster: Cluster,
    groups: Vec<GroupName>,
}

/// Where `id`'s slot stands in a group's record.
fn slot_of(record: &GroupRecord, id: &NodeId) -> Slot {
    if let Some(since) = record.draining.get(id) {
        Slot::Reserved(*since)
    } else if let Some(since) = record.returning.get(id) {
        Slot::Returning(*since)
    } else if record.holders.holds(id) {
        Slot::Held
    } else {
        Slot::Free
    }
}

/// Why a pass did nothing: the cluster or the lock table could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PassError {
    /// The time, beyond what Kubernetes' Lease can say.
    #[error(transparent)]
    Time(#[from] k8s_openapi::jiff::Error),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("the lock table could not be read for group '{group}': {source}")]
    Table {
        group: String,
        source: crate::domain::store::StoreError,
    },
}

impl<S: LockStore> Agent<S> {
    pub fn new(store: S, cluster: Cluster, groups: Vec<GroupName>) -> Self {
        Self {
            store,
            cluster,
            groups,
        }
    }

    /// One pass over every node of the cluster: at most one step each.
    pub async fn pass(&self, now: Timestamp) -> Result<Pass, PassError> {
        let as_k8s = k8s_openapi::jiff::Timestamp::from_millisecond(now.0 as i64)?;
        if !self.cluster.lead(as_k8s).await? {
            return Ok(Pass::default());
        }
        let mut records = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let record =
                (self.store.groups(Some(group)).await).map_err(|source| PassError::Table {
                    group: group.to_string(),
                    source,
                })?;
            let record = record
                .into_iter()
                .next()
                .map(|(_, r)| r)
                .unwrap_or_default();
            records.push((group, record));
        }
        let nodes = self.cluster.nodes().await?;
        let mut pass = Pass {
            leading: true,
            done: BTreeMap::new(),
        };
        for (id, mut view) in nodes {
            let Ok(id) = NodeId::parse(&id) else { continue };
            let held = records.iter().find_map(|(group, record)| {
                let slot = slot_of(record, &id);
                (slot != Slot::Free).then_some((*group, slot))
            });
            // A drain this agent began for one of its groups whose slot is
            // gone ends here too.
            let marked = view
                .drain_group
                .as_deref()
                .and_then(|marked| self.groups.iter().find(|g| g.as_str() == marked));
            let (group, slot) = match (held, marked) {
                (Some(found), _) => found,
                (None, Some(group)) if view.drain_boot_id.is_some() => (group, Slot::Free),
                _ => continue,
            };
            let said = self.act(group, &id, slot, &mut view, now).await;
            pass.done.insert(view.name.clone(), said);
        }
        Ok(pass)
    }

    /// The step for one node, carried out; what happened, in words.
    async fn act(
        &self,
        group: &GroupName,
        id: &NodeId,
        slot: Slot,
        view: &mut NodeView,
        now: Timestamp,
    ) -> String {
        if matches!(slot, Slot::Reserved(_) | Slot::Held)
            && let Err(err) = self.cluster.pods_on(view).await
        {
            return err.to_string();
        }
        let step = next_step(slot, view);
        let done = match &step {
            Step::BeginDrain { cordon } => self
                .cluster
                .begin_drain(view, group.as_str(), *cordon)
                .await
                .map(|()| {
                    if *cordon {
                        "cordoned; the drain begins".to_owned()
                    } else {
                        "already cordoned (not by this agent); the drain begins".to_owned()
                    }
                }),
            Step::Evict(pods) => Ok(self.evict(pods).await),
            Step::WaitForPods(left) => Ok(format!("waiting for {left} pod(s) to go")),
            Step::ConfirmDrained(since) => {
                return match self.store.drained(group, id, Some(*since), now).await {
                    Ok(decided) => format!("drain confirmed: {:?}", decided.outcome),
                    Err(err) => format!("the drain could not be confirmed: {err}"),
                };
            }
            Step::EndDrain { uncordon } => {
                self.cluster
                    .end_drain(view, *uncordon)
                    .await
                    .map(|()| match uncordon {
                        true => "back: uncordoned".to_owned(),
                        false => "back: its cordon is a person's, and stays".to_owned(),
                    })
            }
            Step::ConfirmReturned(since) => {
                return match self.store.returned(group, id, Some(*since), now).await {
                    Ok(decided) => format!("return confirmed: {:?}", decided.outcome),
                    Err(err) => format!("the return could not be confirmed: {err}"),
                };
            }
            Step::EvictSelf => self
                .cluster
                .evict_self()
                .await
                .map(|()| "drained; this agent's own pod evicted last".to_owned()),
            Step::Nothing => Ok("nothing to do".to_owned()),
        };
        done.unwrap_or_else(|err| err.to_string())
    }

    /// Evicts each pod; a PodDisruptionBudget's 429 is waited out.
    async fn evict(&self, pods: &[plan::PodRef]) -> String {
        let mut held: Vec<String> = Vec::new();
        let mut failed = Vec::new();
        let mut evicted = 0;
        for pod in pods {
            match self.cluster.evict(pod).await {
                Ok(()) => evicted += 1,
                Err(err) if err.is_budget() => held.push(format!("{}/{}", pod.namespace, pod.name)),
                Err(err) => failed.push(err.to_string()),
            }
        }
        let mut said = format!("evicted {evicted} pod(s)");
        if !held.is_empty() {
            said.push_str(&format!(
                "; held by a PodDisruptionBudget (tried again): {}",
                held.join(", ")
            ));
        }
        if !failed.is_empty() {
            said.push_str(&format!("; {}", failed.join("; ")));
        }
        said
    }
}
