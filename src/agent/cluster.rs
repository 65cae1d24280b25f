//! The Kubernetes side of the agent, on `kube`: the nodes and their
//! Zincati ids, the pods a drain evicts, the cordon and its marks, and the
//! Lease that lets one agent act at a time. Nothing here decides: the plan
//! ([`super::plan`]) does.

use std::collections::BTreeMap;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{EvictParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};

use super::plan::{CORDONED_BY_AGENT, DRAIN_BOOT_ID, DRAIN_GROUP, NodeView, PodRef};
use crate::client::{parse_machine_id, zincati_id};

/// Why a call to the cluster failed, in one line.
#[derive(Debug)]
pub enum ClusterError {
    Refused {
        what: String,
        code: u16,
        message: String,
    },
    Unreachable {
        what: String,
        why: String,
    },
}

impl std::fmt::Display for ClusterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClusterError::Refused {
                what,
                code,
                message,
            } => write!(f, "the Kubernetes API refused {what}: {message} ({code})"),
            ClusterError::Unreachable { what, why } => {
                write!(
                    f,
                    "the Kubernetes API could not be reached for {what}: {why}"
                )
            }
        }
    }
}

impl std::error::Error for ClusterError {}

impl ClusterError {
    fn of(what: impl Into<String>, err: kube::Error) -> Self {
        let what = what.into();
        match err {
            kube::Error::Api(status) => ClusterError::Refused {
                what,
                code: status.code,
                message: status.message.clone(),
            },
            other => ClusterError::Unreachable {
                what,
                why: other.to_string(),
            },
        }
    }

    /// A PodDisruptionBudget allows no disruption now (429): tried again.
    pub fn is_budget(&self) -> bool {
        matches!(self, ClusterError::Refused { code: 429, .. })
    }

    fn is(&self, wanted: u16) -> bool {
        matches!(self, ClusterError::Refused { code, .. } if *code == wanted)
    }
}

/// Who this agent is in the cluster: its pod (evicted last) and the Lease
/// it holds to act.
#[derive(Clone, Debug)]
pub struct Identity {
    /// The holder's name in the Lease: the pod's name, or the host's.
    pub holder: String,
    /// This agent's own pod, where it runs in the cluster.
    pub pod: Option<(String, String)>,
    /// The Lease's namespace and name.
    pub lease: (String, String),
    pub lease_seconds: i32,
}

/// The cluster, through one client built at start.
pub struct Cluster {
    client: Client,
    pub identity: Identity,
}

impl Cluster {
    pub fn new(client: Client, identity: Identity) -> Self {
        Self { client, identity }
    }

    /// Every node by its Zincati id (its machine id made app-specific as
    /// Zincati does), with what the plan needs of it.
    pub async fn nodes(&self) -> Result<BTreeMap<String, NodeView>, ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        let listed = nodes
            .list(&ListParams::default())
            .await
            .map_err(|e| ClusterError::of("the list of nodes", e))?;
        let mut by_id = BTreeMap::new();
        for node in listed.items {
            let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
            let Some(machine) = info.and_then(|i| parse_machine_id(&i.machine_id).ok()) else {
                continue;
            };
            let view = view_of(&node);
            by_id.insert(zincati_id(&machine), view);
        }
        Ok(by_id)
    }

    /// The pods a drain of `node` must evict, and whether this agent runs
    /// there: DaemonSet and mirror pods stay (a DaemonSet's pod would come
    /// back at once), finished pods are gone already.
    pub async fn pods_on(&self, view: &mut NodeView) -> Result<(), ClusterError> {
        let pods: Api<Pod> = Api::all(self.client.clone());
        let on_node = ListParams::default().fields(&format!("spec.nodeName={}", view.name));
        let listed = pods
            .list(&on_node)
            .await
            .map_err(|e| ClusterError::of(format!("the pods of node {}", view.name), e))?;
        view.evictable.clear();
        view.runs_the_agent = false;
        for pod in listed.items {
            let namespace = pod.metadata.namespace.clone().unwrap_or_default();
            let name = pod.metadata.name.clone().unwrap_or_default();
            if self.identity.pod.as_ref() == Some(&(namespace.clone(), name.clone())) {
                view.runs_the_agent = true;
                continue;
            }
            if stays(&pod) {
                continue;
            }
            view.evictable.push(PodRef {
                namespace,
                name,
                terminating: pod.metadata.deletion_timestamp.is_some(),
            });
        }
        Ok(())
    }

    /// Marks the drain begun (the boot id now, the group) and cordons the
    /// node where asked, in one patch.
    pub async fn begin_drain(
        &self,
        view: &NodeView,
        group: &str,
        cordon: bool,
    ) -> Result<(), ClusterError> {
        let mut annotations = serde_json::json!({
            DRAIN_BOOT_ID: view.boot_id,
            DRAIN_GROUP: group,
        });
        let mut patch = serde_json::json!({"metadata": {}});
        if cordon {
            annotations[CORDONED_BY_AGENT] = "true".into();
            patch["spec"] = serde_json::json!({"unschedulable": true});
        }
        patch["metadata"]["annotations"] = annotations;
        self.patch_node(&view.name, &patch).await
    }

    /// Lifts the agent's cordon (where it made one) and its marks.
    pub async fn end_drain(&self, view: &NodeView, uncordon: bool) -> Result<(), ClusterError> {
        let mut patch = serde_json::json!({"metadata": {"annotations": {
            DRAIN_BOOT_ID: null,
            DRAIN_GROUP: null,
            CORDONED_BY_AGENT: null,
        }}});
        if uncordon {
            patch["spec"] = serde_json::json!({"unschedulable": false});
        }
        self.patch_node(&view.name, &patch).await
    }

    async fn patch_node(&self, name: &str, patch: &serde_json::Value) -> Result<(), ClusterError> {
        let nodes: Api<Node> = Api::all(self.client.clone());
        nodes
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .map_err(|e| ClusterError::of(format!("a patch of node {name}"), e))?;
        Ok(())
    }

    /// Evicts one pod through the Eviction API, so that its
    /// PodDisruptionBudget holds: a 429 is the budget's "not now", never
    /// forced; a pod already gone is fine.
    pub async fn evict(&self, pod: &PodRef) -> Result<(), ClusterError> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &pod.namespace);
        match pods.evict(&pod.name, &EvictParams::default()).await {
            Ok(_) => Ok(()),
            Err(err) => {
                let err = ClusterError::of(
                    format!("the eviction of pod {}/{}", pod.namespace, pod.name),
                    err,
                );
                if err.is(404) { Ok(()) } else { Err(err) }
            }
        }
    }

    /// Evicts this agent's own pod (its Deployment starts it elsewhere),
    /// having given its Lease up: the next agent acts at once, not a Lease
    /// later.
    pub async fn evict_self(&self) -> Result<(), ClusterError> {
        let Some((namespace, name)) = self.identity.pod.clone() else {
            return Ok(());
        };
        self.give_up_lease().await?;
        self.evict(&PodRef {
            namespace,
            name,
            terminating: false,
        })
        .await
    }

    /// Gives the Lease up where this agent holds it (its holder cleared,
    /// with the version read: a newer holder's write stands).
    async fn give_up_lease(&self) -> Result<(), ClusterError> {
        let (namespace, name) = &self.identity.lease;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), namespace);
        let what = || format!("lease {namespace}/{name}");
        let Some(mut lease) = leases
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::of(what(), e))?
        else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(self.identity.holder.as_str()) {
            return Ok(());
        }
        spec.holder_identity = None;
        match leases.replace(name, &PostParams::default(), &lease).await {
            Ok(_) => Ok(()),
            Err(err) => match ClusterError::of(what(), err) {
                err if err.is(409) => Ok(()),
                err => Err(err),
            },
        }
    }

    /// Whether this agent holds the Lease now: takes it where it is free
    /// or expired, renews it where it is this agent's. Each write carries
    /// the version it read, so of two agents one wins (409 for the other).
    pub async fn lead(&self, now: k8s_openapi::jiff::Timestamp) -> Result<bool, ClusterError> {
        let (namespace, name) = &self.identity.lease;
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), namespace);
        let held = |lease: &Lease| lease.spec.clone().unwrap_or_default();
        let current = leases
            .get_opt(name)
            .await
            .map_err(|e| ClusterError::of(format!("lease {namespace}/{name}"), e))?;
        let me = &self.identity.holder;
        let stamp = MicroTime(now);
        let result = match current {
            None => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        namespace: Some(namespace.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(me.clone()),
                        lease_duration_seconds: Some(self.identity.lease_seconds),
                        acquire_time: Some(stamp.clone()),
                        renew_time: Some(stamp),
                        lease_transitions: Some(0),
                        ..LeaseSpec::default()
                    }),
                };
                leases
                    .create(&PostParams::default(), &lease)
                    .await
                    .map(|_| ())
            }
            Some(mut lease) => {
                let spec = held(&lease);
                let mine = spec.holder_identity.as_deref() == Some(me.as_str());
                // Given up (no holder), or not renewed within its duration.
                let expired = spec.holder_identity.is_none()
                    || spec.renew_time.as_ref().is_none_or(|renewed| {
                        let seconds = spec.lease_duration_seconds.unwrap_or(0);
                        renewed.0 + k8s_openapi::jiff::SignedDuration::from_secs(i64::from(seconds))
                            < now
                    });
                if !mine && !expired {
                    return Ok(false);
                }
                let mut spec = spec;
                if !mine {
                    spec.holder_identity = Some(me.clone());
                    spec.acquire_time = Some(stamp.clone());
                    spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
                }
                spec.lease_duration_seconds = Some(self.identity.lease_seconds);
                spec.renew_time = Some(stamp);
                lease.spec = Some(spec);
                leases
                    .replace(name, &PostParams::default(), &lease)
                    .await
                    .map(|_| ())
            }
        };
        match result.map_err(|e| ClusterError::of(format!("lease {namespace}/{name}"), e)) {
            Ok(()) => Ok(true),
            // Another agent wrote it first: it leads.
            Err(err) if err.is(409) => Ok(false),
            Err(err) => Err(err),
        }
    }
}

/// What the plan needs of a node.
fn view_of(node: &Node) -> NodeView {
    let status = node.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        });
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    NodeView {
        name: node.metadata.name.clone().unwrap_or_default(),
        boot_id: status
            .and_then(|s| s.node_info.as_ref())
            .map(|i| i.boot_id.clone())
            .unwrap_or_default(),
        ready,
        unschedulable: node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
        drain_boot_id: annotations.get(DRAIN_BOOT_ID).cloned(),
        drain_group: annotations.get(DRAIN_GROUP).cloned(),
        cordoned_by_agent: annotations.get(CORDONED_BY_AGENT).map(String::as_str) == Some("true"),
        evictable: Vec::new(),
        runs_the_agent: false,
    }
}

/// Pods a drain leaves: a DaemonSet's (it would come back at once, and
/// `kubectl drain` leaves them too), a mirror pod (the kubelet's own, no
/// API object to evict), and a pod that finished.
fn stays(pod: &Pod) -> bool {
    let of_a_daemon_set = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| owner.kind == "DaemonSet" && owner.controller == Some(true));
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let finished = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|phase| phase == "Succeeded" || phase == "Failed");
    of_a_daemon_set || mirror || finished
}
