//! A stand-in for the Kubernetes API, never more permissive than the real
//! one on what the agent depends on: Nodes (merge and strategic merge
//! patches only, as the API server takes them), Pods by node (the field
//! selector `spec.nodeName`), Evictions that a PodDisruptionBudget refuses
//! with 429 while it allows no disruption, node conditions and boot ids,
//! and Leases whose writes carry the version they read (409 otherwise).
//! Every object is a `k8s-openapi` type, serialized as the API server
//! writes it; enough discovery for `kubectl cordon` and `kubectl drain`.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus, NodeSystemInfo, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// A PodDisruptionBudget, reduced to what an eviction reads: the pods it
/// covers (by one label) and how many of them must stay.
#[derive(Clone, Debug)]
pub struct Budget {
    pub label: (String, String),
    pub min_available: usize,
}

/// One RBAC rule as a Role (namespaced) or a ClusterRole grants it.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The Role's namespace; `None` for a ClusterRole's rule.
    pub namespace: Option<String>,
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

/// The rules the Roles and ClusterRoles of a manifest grant (each bound
/// to the agent's ServiceAccount in the same manifest).
pub fn rules_of_manifest(path: &std::path::Path) -> Vec<Rule> {
    let text = std::fs::read_to_string(path).unwrap();
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    let mut rules = Vec::new();
    for document in &documents {
        let namespace = match document["kind"].as_str() {
            Some("ClusterRole") => None,
            Some("Role") => Some(
                document["metadata"]["namespace"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            _ => continue,
        };
        for rule in document["rules"].as_array().unwrap() {
            rules.push(Rule {
                namespace: namespace.clone(),
                groups: strings(&rule["apiGroups"]),
                resources: strings(&rule["resources"]),
                verbs: strings(&rule["verbs"]),
            });
        }
    }
    rules
}

#[derive(Default)]
pub struct Cluster {
    /// Where set, every request but discovery is judged by these rules, as
    /// the API server's RBAC judges the agent's ServiceAccount (403).
    pub rbac: Option<Vec<Rule>>,
    /// Every request allowed, as (group, resource, verb, namespace).
    pub allowed: Vec<(String, String, String, Option<String>)>,
    pub nodes: BTreeMap<String, Node>,
    pub pods: BTreeMap<(String, String), Pod>,
    pub budgets: Vec<Budget>,
    pub leases: BTreeMap<(String, String), Lease>,
    version: u64,
    /// Every request, as `METHOD path`, for tests that read what was asked.
    pub asked: Vec<String>,
}

impl Cluster {
    fn next_version(&mut self) -> String {
        self.version += 1;
        self.version.to_string()
    }

    /// A Ready node whose machine id and boot id are given.
    pub fn add_node(&mut self, name: &str, machine_id: &str, boot_id: &str) {
        let version = self.next_version();
        self.nodes.insert(
            name.into(),
            Node {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    resource_version: Some(version),
                    uid: Some(format!("uid-{name}")),
                    ..ObjectMeta::default()
                },
                spec: Some(NodeSpec::default()),
                status: Some(NodeStatus {
                    node_info: Some(NodeSystemInfo {
                        machine_id: machine_id.into(),
                        boot_id: boot_id.into(),
                        ..NodeSystemInfo::default()
                    }),
                    conditions: Some(vec![NodeCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        ..NodeCondition::default()
                    }]),
                    ..NodeStatus::default()
                }),
            },
        );
    }

    /// The node reboots: a new boot id, NotReady until `ready`.
    pub fn reboot(&mut self, name: &str, boot_id: &str, ready: bool) {
        let node = self.nodes.get_mut(name).unwrap();
        let status = node.status.as_mut().unwrap();
        status.node_info.as_mut().unwrap().boot_id = boot_id.into();
        status.conditions.as_mut().unwrap()[0].status = if ready { "True" } else { "False" }.into();
        // The pods of a rebooted node are gone, but a DaemonSet's.
        self.pods.retain(|_, pod| {
            pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(name)
                || owned_by(pod, "DaemonSet")
        });
    }

    /// A pod on `node`, with one label, owned by a controller of `kind`.
    pub fn add_pod(&mut self, namespace: &str, name: &str, node: &str, label: &str, kind: &str) {
        let (key, value) = label.split_once('=').unwrap();
        let version = self.next_version();
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(namespace.into()),
                resource_version: Some(version),
                uid: Some(format!("uid-{namespace}-{name}")),
                labels: Some(BTreeMap::from([(key.into(), value.into())])),
                owner_references: Some(vec![OwnerReference {
                    api_version: "apps/v1".into(),
                    kind: kind.into(),
                    name: format!("{kind}-owner").to_lowercase(),
                    uid: "owner".into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
            status: Some(k8s_openapi::api::core::v1::PodStatus {
                phase: Some("Running".into()),
                ..Default::default()
            }),
        };
        self.pods.insert((namespace.into(), name.into()), pod);
    }

    pub fn pods_on(&self, node: &str) -> Vec<String> {
        self.pods
            .values()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    }

    pub fn unschedulable(&self, node: &str) -> bool {
        self.nodes[node]
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
    }

    pub fn annotations(&self, node: &str) -> BTreeMap<String, String> {
        self.nodes[node]
            .metadata
            .annotations
            .clone()
            .unwrap_or_default()
    }

    /// Whether the budgets let `pod` go now: every budget that covers it
    /// keeps at least its minimum of covered pods after the eviction.
    fn budget_allows(&self, pod: &Pod) -> bool {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        self.budgets.iter().all(|budget| {
            let (key, value) = &budget.label;
            if labels.get(key) != Some(value) {
                return true;
            }
            let covered = self
                .pods
                .values()
                .filter(|p| {
                    p.metadata.namespace == pod.metadata.namespace
                        && p.metadata.labels.as_ref().and_then(|l| l.get(key)) == Some(value)
                })
                .count();
            covered > budget.min_available
        })
    }
}

fn owned_by(pod: &Pod, kind: &str) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == kind)
}

/// A Kubernetes `Status` answer.
fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code,
        }),
    )
}

/// RFC 7386's merge patch (a strategic merge patch of these fields, maps
/// and scalars, merges the same way).
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                if value.is_null() {
                    target.remove(key);
                } else {
                    merge(target.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

fn list(kind: &str, api_version: &str, items: Vec<Value>) -> Value {
    json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "1"}, "items": items})
}

fn typed<T: serde::Serialize>(kind: &str, api_version: &str, object: &T) -> Value {
    let mut value = serde_json::to_value(object).unwrap();
    value["kind"] = kind.into();
    value["apiVersion"] = api_version.into();
    value
}

/// Discovery, as much as kubectl reads for `cordon` and `drain`.
fn discovery(path: &str) -> Option<Value> {
    let resource = |name: &str, kind: &str, namespaced: bool, verbs: &[&str]| json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": verbs});
    Some(match path {
        "/api" => json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}),
        "/apis" => json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": "policy", "versions": [{"groupVersion": "policy/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "policy/v1", "version": "v1"}},
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
            {"name": "coordination.k8s.io", "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}}]}),
        "/api/v1" => json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
            resource("nodes", "Node", false, &["get", "list", "patch", "update", "watch"]),
            resource("pods", "Pod", true, &["get", "list", "delete", "watch"]),
            {"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
             "version": "v1", "kind": "Eviction", "verbs": ["create"]}]}),
        "/apis/policy/v1" => {
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "policy/v1", "resources": [
            resource("poddisruptionbudgets", "PodDisruptionBudget", true, &["get", "list"])]})
        }
        "/apis/apps/v1" => {
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
            resource("daemonsets", "DaemonSet", true, &["get", "list"])]})
        }
        "/apis/coordination.k8s.io/v1" => json!({"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": "coordination.k8s.io/v1", "resources": [
            resource("leases", "Lease", true, &["create", "get", "update"])]}),
        _ => return None,
    })
}

/// What RBAC reads of a request: API group, resource (with its
/// subresource), verb and namespace.
fn authorization_attributes(
    method: &str,
    parts: &[&str],
) -> Option<(String, String, String, Option<String>)> {
    let (group, rest) = match parts {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        ["namespaces", namespace, rest @ ..] if !rest.is_empty() => {
            (Some(namespace.to_string()), rest)
        }
        rest => (None, rest),
    };
    let (resource, named) = match rest {
        [resource] => (resource.to_string(), false),
        [resource, _name] => (resource.to_string(), true),
        [resource, _name, sub] => (format!("{resource}/{sub}"), true),
        _ => return None,
    };
    let verb = match (method, named) {
        ("GET", false) => "list",
        ("GET", true) => "get",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", _) => "delete",
        _ => return None,
    };
    Some((group.to_owned(), resource, verb.to_owned(), namespace))
}

/// One request against the cluster: the status and the JSON answered.
fn answer(
    cluster: &mut Cluster,
    method: &str,
    path: &str,
    query: &str,
    content_type: &str,
    body: &[u8],
) -> (u16, Value) {
    cluster.asked.push(format!("{method} {path}"));
    if method == "GET"
        && let Some(found) = discovery(path)
    {
        return (200, found);
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let attributes = authorization_attributes(method, &parts);
    if let Some(rules) = &cluster.rbac {
        let Some((group, resource, verb, namespace)) = attributes.clone() else {
            return status(
                403,
                "Forbidden",
                &format!("{method} {path} is no request RBAC grants"),
            );
        };
        let granted = rules.iter().any(|rule| {
            let within = rule.namespace.is_none() || rule.namespace == namespace;
            within
                && rule.groups.contains(&group)
                && rule.resources.contains(&resource)
                && rule.verbs.contains(&verb)
        });
        if !granted {
            return status(
                403,
                "Forbidden",
                &format!(
                    "{resource} is forbidden: User \"system:serviceaccount:fleetlock:fleetlock-kube-agent\" cannot {verb} resource \"{resource}\" in API group \"{group}\""
                ),
            );
        }
    }
    if let Some(allowed) = attributes {
        cluster.allowed.push(allowed);
    }
    let body_json = || serde_json::from_slice::<Value>(body).ok();
    match (method, parts.as_slice()) {
        ("GET", ["api", "v1", "nodes"]) => {
            let items = cluster
                .nodes
                .values()
                .map(|n| typed("Node", "v1", n))
                .collect();
            (200, list("NodeList", "v1", items))
        }
        ("GET", ["api", "v1", "nodes", name]) => match cluster.nodes.get(*name) {
            Some(node) => (200, typed("Node", "v1", node)),
            None => status(404, "NotFound", &format!("nodes \"{name}\" not found")),
        },
        ("PATCH", ["api", "v1", "nodes", name]) => {
            // The API server takes these patch types, and refuses others.
            let accepted = [
                "application/merge-patch+json",
                "application/strategic-merge-patch+json",
            ];
            if !accepted.contains(&content_type) {
                return status(
                    415,
                    "UnsupportedMediaType",
                    &format!("the body of the request was in an unknown format: {content_type}"),
                );
            }
            let Some(patch) = body_json() else {
                return status(400, "BadRequest", "the patch is not JSON");
            };
            let version = cluster.next_version();
            let Some(node) = cluster.nodes.get_mut(*name) else {
                return status(404, "NotFound", &format!("nodes \"{name}\" not found"));
            };
            let mut value = serde_json::to_value(&*node).unwrap();
            merge(&mut value, &patch);
            let mut patched: Node = match serde_json::from_value(value) {
                Ok(node) => node,
                Err(e) => return status(422, "Invalid", &e.to_string()),
            };
            patched.metadata.resource_version = Some(version);
            *node = patched;
            (200, typed("Node", "v1", node))
        }
        ("GET", ["api", "v1", "pods"]) | ("GET", ["api", "v1", "namespaces", _, "pods"]) => {
            let namespace = match parts.as_slice() {
                [_, _, "namespaces", ns, _] => Some(*ns),
                _ => None,
            };
            let node = query.split('&').find_map(|pair| {
                let pair = percent_encoding::percent_decode_str(pair).decode_utf8_lossy();
                pair.strip_prefix("fieldSelector=spec.nodeName=")
                    .or_else(|| pair.strip_prefix("fieldSelector=spec.nodeName%3D"))
                    .map(str::to_owned)
            });
            let items = cluster
                .pods
                .values()
                .filter(|p| namespace.is_none_or(|ns| p.metadata.namespace.as_deref() == Some(ns)))
                .filter(|p| {
                    node.as_deref().is_none_or(|n| {
                        p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(n)
                    })
                })
                .map(|p| typed("Pod", "v1", p))
                .collect();
            (200, list("PodList", "v1", items))
        }
        ("GET", ["api", "v1", "namespaces", ns, "pods", name]) => {
            match cluster.pods.get(&(ns.to_string(), name.to_string())) {
                Some(pod) => (200, typed("Pod", "v1", pod)),
                None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        // The controller of a DaemonSet's pods (kubectl drain reads it).
        ("GET", ["apis", "apps", "v1", "namespaces", ns, "daemonsets", name]) => {
            let owns = cluster.pods.values().any(|p| {
                p.metadata.namespace.as_deref() == Some(*ns)
                    && p.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.kind == "DaemonSet" && o.name == *name)
            });
            if !owns {
                return status(
                    404,
                    "NotFound",
                    &format!("daemonsets.apps \"{name}\" not found"),
                );
            }
            let daemon_set = k8s_openapi::api::apps::v1::DaemonSet {
                metadata: ObjectMeta {
                    name: Some(name.to_string()),
                    namespace: Some(ns.to_string()),
                    uid: Some("owner".into()),
                    ..ObjectMeta::default()
                },
                ..Default::default()
            };
            (200, typed("DaemonSet", "apps/v1", &daemon_set))
        }
        ("POST", ["api", "v1", "namespaces", ns, "pods", name, "eviction"]) => {
            let key = (ns.to_string(), name.to_string());
            let Some(pod) = cluster.pods.get(&key) else {
                return status(404, "NotFound", &format!("pods \"{name}\" not found"));
            };
            // As the API server decodes it: a missing kind defaults to the
            // Eviction the path names; a named one must be that, for this pod.
            let eviction = body_json().unwrap_or(Value::Null);
            let kind_ok = eviction.get("kind").is_none_or(|kind| kind == "Eviction");
            if !kind_ok || eviction["metadata"]["name"] != *name {
                return status(400, "BadRequest", "the body is not an Eviction of this pod");
            }
            if !cluster.budget_allows(pod) {
                return status(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                );
            }
            cluster.pods.remove(&key);
            (
                201,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
            )
        }
        (
            "GET",
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
                name,
            ],
        ) => match cluster.leases.get(&(ns.to_string(), name.to_string())) {
            Some(lease) => (200, typed("Lease", "coordination.k8s.io/v1", lease)),
            None => status(
                404,
                "NotFound",
                &format!("leases.coordination.k8s.io \"{name}\" not found"),
            ),
        },
        (
            "POST",
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
            ],
        ) => {
            let Some(mut lease) = body_json().and_then(|v| serde_json::from_value::<Lease>(v).ok())
            else {
                return status(400, "BadRequest", "not a Lease");
            };
            let name = lease.metadata.name.clone().unwrap_or_default();
            let key = (ns.to_string(), name.clone());
            if cluster.leases.contains_key(&key) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("leases.coordination.k8s.io \"{name}\" already exists"),
                );
            }
            lease.metadata.resource_version = Some(cluster.next_version());
            lease.metadata.creation_timestamp =
                Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
            cluster.leases.insert(key, lease.clone());
            (201, typed("Lease", "coordination.k8s.io/v1", &lease))
        }
        (
            "PUT",
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
                name,
            ],
        ) => {
            let Some(mut lease) = body_json().and_then(|v| serde_json::from_value::<Lease>(v).ok())
            else {
                return status(400, "BadRequest", "not a Lease");
            };
            let key = (ns.to_string(), name.to_string());
            let Some(stored) = cluster.leases.get(&key) else {
                return status(404, "NotFound", "no such lease");
            };
            // An update carries the version it read: a stale one is refused.
            if lease.metadata.resource_version != stored.metadata.resource_version {
                return status(
                    409,
                    "Conflict",
                    "Operation cannot be fulfilled on leases.coordination.k8s.io: the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            lease.metadata.resource_version = Some(cluster.next_version());
            cluster.leases.insert(key, lease.clone());
            (200, typed("Lease", "coordination.k8s.io/v1", &lease))
        }
        _ => status(
            404,
            "NotFound",
            &format!("the server could not find the requested resource ({method} {path})"),
        ),
    }
}

/// The stand-in on a random loopback port, over `cluster`; its URL.
pub async fn serve(cluster: Arc<Mutex<Cluster>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let cluster = Arc::clone(&cluster);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: hyper::Request<hyper::body::Incoming>| {
                        let cluster = Arc::clone(&cluster);
                        async move {
                            let (parts, body) = request.into_parts();
                            let body = body.collect().await.unwrap().to_bytes();
                            let content_type = parts
                                .headers
                                .get("content-type")
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("")
                                .split(';')
                                .next()
                                .unwrap_or("")
                                .to_owned();
                            let (code, json) = answer(
                                &mut cluster.lock().unwrap(),
                                parts.method.as_str(),
                                parts.uri.path(),
                                parts.uri.query().unwrap_or(""),
                                &content_type,
                                &body,
                            );
                            Ok::<_, Infallible>(
                                hyper::Response::builder()
                                    .status(code)
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(json.to_string())))
                                    .unwrap(),
                            )
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("http://{addr}")
}

/// A kubeconfig for the stand-in, as `kubectl` and the agent read one.
pub fn kubeconfig(dir: &std::path::Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: stand-in\n  cluster:\n    server: {url}\n\
         contexts:\n- name: stand-in\n  context:\n    cluster: stand-in\n    user: agent\n\
         current-context: stand-in\nusers:\n- name: agent\n  user:\n    token: stand-in\n"
    );
    std::fs::write(&path, text).unwrap();
    path
}
