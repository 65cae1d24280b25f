//! `fleetlock-kube-agent`, the real binary, against the stand-in for the
//! Kubernetes API (tests/suite/kube_stand_in.rs) and DynamoDB Local, signing
//! as the role the templates give it (the IAM enforcer judges each call);
//! the server as a stock Zincati calls it. Every pass is a new process run
//! with `--once`: each one is an agent restarted, which carries on from the
//! table and the nodes' annotations alone.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fleetlock::client::{parse_machine_id, zincati_id};
use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::time::Timestamp;
use fleetlock::entry::drained::DrainConfirmer;
use fleetlock::http::Api;
use fleetlock::store::dynamodb::DynamoStore;
use serde_json::{Value, json};

use crate::helpers::{dynamo_store, group, spawn_server, stored, zincati};
use crate::kube_stand_in::{Budget, Cluster, kubeconfig, rules_of_manifest, serve};

const MACHINE_A: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
const MACHINE_B: &str = "1f1e2d3c4b5a69788796a5b4c3d2e1f1";

/// The manifest the docs deploy the agent with.
fn manifest() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib/kubernetes/fleetlock-kube-agent.yaml")
}

fn node_id(machine: &str) -> String {
    zincati_id(&parse_machine_id(machine).unwrap())
}

struct World {
    cluster: Arc<Mutex<Cluster>>,
    dir: tempdir::Dir,
    url: String,
    table: String,
    server: crate::helpers::TestServer,
    groups: GroupSlots,
}

/// A cluster of two Ready nodes: on node-a a Deployment's pod (a budget
/// keeps one of its two), a DaemonSet's pod and the agent's own pod; the
/// server with a drain and a return gate on `workers` (one slot).
async fn world(prefix: &str) -> World {
    let (store, _) = dynamo_store(prefix).await;
    let table = store.table().to_owned();
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=15m")
        .unwrap()
        .with_setting("FLEETLOCK_RETURN", "workers=20m")
        .unwrap();
    let api = Arc::new(Api::new(
        FleetLock::new(groups.clone(), store),
        Auth::Disabled,
    ));
    let server = spawn_server(api).await;
    let mut cluster = Cluster::default();
    cluster.add_node("node-a", MACHINE_A, "boot-a1");
    cluster.add_node("node-b", MACHINE_B, "boot-b1");
    cluster.add_pod("shop", "web-1", "node-a", "app=web", "ReplicaSet");
    cluster.add_pod("shop", "web-2", "node-b", "app=web", "ReplicaSet");
    cluster.add_pod("kube-system", "logs-a", "node-a", "app=logs", "DaemonSet");
    cluster.add_pod("fleetlock", "agent-0", "node-a", "app=agent", "ReplicaSet");
    cluster.budgets.push(Budget {
        label: ("app".into(), "web".into()),
        min_available: 1,
    });
    // The agent's ServiceAccount may do what the shipped manifest grants.
    cluster.rbac = Some(rules_of_manifest(&manifest()));
    let cluster = Arc::new(Mutex::new(cluster));
    let url = serve(Arc::clone(&cluster)).await;
    World {
        cluster,
        dir: tempdir::Dir::new(),
        url,
        table,
        server,
        groups,
    }
}

/// A store on the world's table, on the harness key (the test's own reads).
async fn table(world: &World) -> DynamoStore {
    let client = fleetlock::test_support::counted_client().await.0;
    DynamoStore::new(client, &world.table)
}

/// The agent as pod `pod` of namespace fleetlock, on the world's cluster
/// and table, signing as the role the templates give it; `args` first.
fn agent(world: &World, pod: &str, args: &[&str]) -> tokio::process::Command {
    let config = kubeconfig(world.dir.path(), &world.url);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_fleetlock-kube-agent"));
    command
        .args(args)
        .arg("--kubeconfig")
        .arg(&config)
        .env("FLEETLOCK_TABLE", &world.table)
        .env("POD_NAME", pod)
        .env("POD_NAMESPACE", "fleetlock")
        .kill_on_drop(true);
    crate::helpers::under_role(&mut command, "kube-agent");
    command
}

/// One pass of the agent as pod `pod`: its report.
async fn pass(world: &World, pod: &str) -> Value {
    let mut command = agent(world, pod, &["--group", "workers", "--once"]);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("a pass ends within a minute")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn said<'a>(report: &'a Value, node: &str) -> &'a str {
    report["nodes"][node].as_str().unwrap_or("")
}

#[tokio::test]
async fn a_reserved_node_is_cordoned_drained_confirmed_and_uncordoned_when_back() {
    let world = world("kube-cycle").await;
    let a = node_id(MACHINE_A);
    let ask = |endpoint: &'static str| {
        let a = a.clone();
        let addr = world.server.addr;
        async move { zincati(addr, endpoint, &a, "workers").await }
    };
    let reserved = ask("pre-reboot").await;
    assert_eq!(reserved.kind(), "waiting_for_drain");

    let report = pass(&world, "agent-0").await;
    assert_eq!(report["leading"], true);
    assert!(said(&report, "node-a").contains("cordoned"), "{report}");
    assert!(world.cluster.lock().unwrap().unschedulable("node-a"));
    assert!(
        report["nodes"].get("node-b").is_none(),
        "node-b holds nothing"
    );

    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-a").contains("evicted 1 pod(s)"),
        "{report}"
    );
    {
        let cluster = world.cluster.lock().unwrap();
        // The DaemonSet's pod stays, and the agent's own goes last.
        assert_eq!(cluster.pods_on("node-a"), ["agent-0", "logs-a"]);
    }
    // Not confirmed before every pod is gone: the node still waits.
    assert_eq!(ask("pre-reboot").await.kind(), "waiting_for_drain");

    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-a").contains("drain confirmed: Granted"),
        "{report}"
    );
    assert_eq!(ask("pre-reboot").await.status, 200, "granted: it reboots");

    let report = pass(&world, "agent-0").await;
    assert!(said(&report, "node-a").contains("evicted last"), "{report}");
    assert_eq!(world.cluster.lock().unwrap().pods_on("node-a"), ["logs-a"]);

    // It reboots: NotReady on a new boot id. Zincati's steady-state at
    // start begins its return; the cordon stays while it is not Ready.
    world
        .cluster
        .lock()
        .unwrap()
        .reboot("node-a", "boot-a2", false);
    assert_eq!(ask("steady-state").await.json()["outcome"], "returning");
    let report = pass(&world, "agent-1").await;
    assert_eq!(said(&report, "node-a"), "nothing to do", "{report}");
    assert!(world.cluster.lock().unwrap().unschedulable("node-a"));

    world
        .cluster
        .lock()
        .unwrap()
        .reboot("node-a", "boot-a2", true);
    let report = pass(&world, "agent-1").await;
    assert!(said(&report, "node-a").contains("uncordoned"), "{report}");
    {
        let cluster = world.cluster.lock().unwrap();
        assert!(!cluster.unschedulable("node-a"));
        assert!(
            cluster.annotations("node-a").is_empty(),
            "its marks are gone"
        );
    }
    let report = pass(&world, "agent-1").await;
    assert!(
        said(&report, "node-a").contains("return confirmed: Freed"),
        "{report}"
    );
    let record = stored(&table(&world).await, &group("workers")).await;
    assert!(record.holders.is_empty(), "{record:?}");
    // The next node may go.
    let b = node_id(MACHINE_B);
    let next = zincati(world.server.addr, "pre-reboot", &b, "workers").await;
    assert_eq!(next.kind(), "waiting_for_drain");
    // Every rule the manifest grants was needed on the way: none is spare.
    let cluster = world.cluster.lock().unwrap();
    for rule in cluster.rbac.as_ref().unwrap() {
        for verb in &rule.verbs {
            let used = cluster
                .allowed
                .iter()
                .any(|(group, resource, asked, namespace)| {
                    rule.groups.contains(group)
                        && rule.resources.contains(resource)
                        && asked == verb
                        && (rule.namespace.is_none() || rule.namespace == *namespace)
                });
            assert!(
                used,
                "the manifest grants {verb} {rule:?}, and the agent never asked it"
            );
        }
    }
}

/// The manifest's RBAC is what the stand-in enforces: without the Role on
/// leases, the agent cannot act at all, and says why.
#[tokio::test]
async fn without_its_role_on_leases_the_agent_acts_on_nothing() {
    let world = world("kube-rbac").await;
    world
        .cluster
        .lock()
        .unwrap()
        .rbac
        .as_mut()
        .unwrap()
        .retain(|rule| rule.namespace.is_none());
    let a = node_id(MACHINE_A);
    zincati(world.server.addr, "pre-reboot", &a, "workers").await;
    let mut command = agent(&world, "agent-0", &["--group", "workers", "--once"]);
    let output = command.output().await.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("cannot get resource \"leases\""),
        "{stderr}"
    );
    assert!(!world.cluster.lock().unwrap().unschedulable("node-a"));
}

#[tokio::test]
async fn a_budget_that_allows_no_disruption_holds_the_drain_and_nothing_is_forced() {
    let world = world("kube-budget").await;
    // The Deployment's other pod is gone: its budget allows no eviction.
    world
        .cluster
        .lock()
        .unwrap()
        .pods
        .remove(&("shop".into(), "web-2".into()));
    let a = node_id(MACHINE_A);
    let ask = || zincati(world.server.addr, "pre-reboot", &a, "workers");
    assert_eq!(ask().await.kind(), "waiting_for_drain");
    pass(&world, "agent-0").await;
    for _ in 0..3 {
        let report = pass(&world, "agent-0").await;
        assert!(
            said(&report, "node-a")
                .contains("held by a PodDisruptionBudget (tried again): shop/web-1"),
            "{report}"
        );
    }
    assert!(
        world
            .cluster
            .lock()
            .unwrap()
            .pods_on("node-a")
            .contains(&"web-1".to_owned())
    );
    assert_eq!(ask().await.kind(), "waiting_for_drain", "never confirmed");
    // The budget allows it once a replica runs elsewhere.
    world
        .cluster
        .lock()
        .unwrap()
        .add_pod("shop", "web-3", "node-b", "app=web", "ReplicaSet");
    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-a").contains("evicted 1 pod(s)"),
        "{report}"
    );
}

#[tokio::test]
async fn only_what_the_agent_cordoned_is_uncordoned() {
    let world = world("kube-cordon").await;
    let b = node_id(MACHINE_B);
    // A person cordoned node-b before its reservation.
    {
        let mut cluster = world.cluster.lock().unwrap();
        let node = cluster.nodes.get_mut("node-b").unwrap();
        node.spec.as_mut().unwrap().unschedulable = Some(true);
        cluster.budgets.clear();
    }
    let ask = |endpoint| zincati(world.server.addr, endpoint, &b, "workers");
    assert_eq!(ask("pre-reboot").await.kind(), "waiting_for_drain");
    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-b").contains("not by this agent"),
        "{report}"
    );
    pass(&world, "agent-0").await;
    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-b").contains("drain confirmed"),
        "{report}"
    );
    assert_eq!(ask("pre-reboot").await.status, 200);
    world
        .cluster
        .lock()
        .unwrap()
        .reboot("node-b", "boot-b2", true);
    assert_eq!(ask("steady-state").await.json()["outcome"], "returning");
    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-b").contains("a person's, and stays"),
        "{report}"
    );
    assert!(world.cluster.lock().unwrap().unschedulable("node-b"));
    // Still cordoned by its person: the node is not back in service, and
    // its return is not confirmed by the agent.
    let report = pass(&world, "agent-0").await;
    assert_eq!(said(&report, "node-b"), "nothing to do", "{report}");
}

#[tokio::test]
async fn a_node_that_never_comes_back_keeps_its_slot_and_the_sweep_stops_the_group() {
    let world = world("kube-gone").await;
    world.cluster.lock().unwrap().budgets.clear();
    let a = node_id(MACHINE_A);
    let ask = |endpoint| zincati(world.server.addr, endpoint, &a, "workers");
    ask("pre-reboot").await;
    for _ in 0..3 {
        pass(&world, "agent-0").await;
    }
    assert_eq!(ask("pre-reboot").await.status, 200);
    // Rebooted, it sends steady-state, and never becomes Ready.
    world
        .cluster
        .lock()
        .unwrap()
        .reboot("node-a", "boot-a2", false);
    assert_eq!(ask("steady-state").await.json()["outcome"], "returning");
    for _ in 0..2 {
        let report = pass(&world, "agent-0").await;
        assert_eq!(said(&report, "node-a"), "nothing to do", "{report}");
    }
    assert!(world.cluster.lock().unwrap().unschedulable("node-a"));
    // Past the return timeout, the sweep stops the group.
    let later = Timestamp::now().plus(Duration::from_secs(21 * 60));
    let sweep = DrainConfirmer::new(table(&world).await)
        .with_sweep(world.groups.clone(), "fleetlock-api")
        .with_clock(fleetlock::test_support::ManualClock::at(later));
    let swept = sweep.handle(&json!({"action": "sweep"})).await.unwrap();
    assert_eq!(swept["stopped"], 1, "{swept}");
    let record = stored(&table(&world).await, &group("workers")).await;
    assert_eq!(record.holders.len(), 1, "the slot stays the node's");
    assert!(record.pause.stop.is_some());
    let b = node_id(MACHINE_B);
    let next = zincati(world.server.addr, "pre-reboot", &b, "workers").await;
    assert_eq!(next.kind(), "group_paused");
}

#[tokio::test]
async fn two_agents_never_act_at_once_and_the_lock_still_bounds_nodes_out() {
    let world = world("kube-two").await;
    world.cluster.lock().unwrap().budgets.clear();
    let (a, b) = (node_id(MACHINE_A), node_id(MACHINE_B));
    let ask = |id: &str, endpoint| {
        let id = id.to_owned();
        let addr = world.server.addr;
        async move { zincati(addr, endpoint, &id, "workers").await }
    };
    ask(&a, "pre-reboot").await;
    // One slot: node-b hears the group is full, whichever agent runs.
    assert_eq!(ask(&b, "pre-reboot").await.kind(), "semaphore_full");
    let first = pass(&world, "agent-0").await;
    let second = pass(&world, "agent-1").await;
    assert_eq!(first["leading"], true);
    assert_eq!(second["leading"], false, "{second}");
    assert_eq!(second["nodes"], json!({}), "the second did nothing");
    // The leader's Lease lapses (its pod is gone): the other takes over
    // and carries on with the drain where it stopped.
    {
        let mut cluster = world.cluster.lock().unwrap();
        let lease = cluster
            .leases
            .get_mut(&("fleetlock".into(), "fleetlock-kube-agent".into()))
            .unwrap();
        let spec = lease.spec.as_mut().unwrap();
        spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
    }
    let taken = pass(&world, "agent-1").await;
    assert_eq!(taken["leading"], true);
    assert!(said(&taken, "node-a").contains("evicted"), "{taken}");
    assert_eq!(pass(&world, "agent-0").await["leading"], false);
    let holders = stored(&table(&world).await, &group("workers"))
        .await
        .holders;
    assert_eq!(holders.len(), 1, "one slot, one node out");
    let leases = world.cluster.lock().unwrap().leases.clone();
    let spec = leases.values().next().unwrap().spec.clone().unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("agent-1"));
    assert_eq!(spec.lease_transitions, Some(1));
}

/// A drain a budget holds past the gate's timeout does what the gate says:
/// with `grant`, the server grants the node undrained and the agent stops
/// evicting (it forces nothing), keeps its cordon, and lifts it once the
/// node is back.
#[tokio::test]
async fn past_a_grant_gates_timeout_the_agent_stops_evicting_and_uncordons_when_back() {
    let mut world = world("kube-grant").await;
    let clock = fleetlock::test_support::ManualClock::at(Timestamp::now());
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=1m:grant")
        .unwrap();
    let service = FleetLock::new(groups, table(&world).await).with_clock(clock.clone());
    world.server = spawn_server(Arc::new(Api::new(service, Auth::Disabled))).await;
    world
        .cluster
        .lock()
        .unwrap()
        .pods
        .remove(&("shop".into(), "web-2".into()));
    let a = node_id(MACHINE_A);
    let ask = |endpoint| zincati(world.server.addr, endpoint, &a, "workers");
    assert_eq!(ask("pre-reboot").await.kind(), "waiting_for_drain");
    pass(&world, "agent-0").await;
    let report = pass(&world, "agent-0").await;
    assert!(
        said(&report, "node-a").contains("PodDisruptionBudget"),
        "{report}"
    );
    clock.advance(Duration::from_secs(120));
    assert_eq!(
        ask("pre-reboot").await.status,
        200,
        "granted on the timeout"
    );
    let asked = world.cluster.lock().unwrap().asked.len();
    let report = pass(&world, "agent-0").await;
    assert!(said(&report, "node-a").contains("evicted last"), "{report}");
    let evictions: Vec<String> = world.cluster.lock().unwrap().asked[asked..]
        .iter()
        .filter(|a| a.ends_with("/eviction"))
        .cloned()
        .collect();
    assert_eq!(
        evictions,
        ["POST /api/v1/namespaces/fleetlock/pods/agent-0/eviction"]
    );
    assert!(world.cluster.lock().unwrap().unschedulable("node-a"));
    world
        .cluster
        .lock()
        .unwrap()
        .reboot("node-a", "boot-a2", true);
    assert_eq!(ask("steady-state").await.json()["outcome"], "released");
    let report = pass(&world, "agent-1").await;
    assert!(said(&report, "node-a").contains("uncordoned"), "{report}");
}

/// The agent refuses its own bad settings before it asks anything of AWS
/// or the cluster, and a group that is not stored as a likely typo.
#[tokio::test]
async fn bad_settings_are_refused_before_any_call() {
    let world = world("kube-settings").await;
    let run = |args: Vec<&str>| {
        let mut command = agent(&world, "agent-0", &args);
        async move { command.output().await.unwrap() }
    };
    let asked_before = world.cluster.lock().unwrap().asked.len();
    for (args, says) in [
        (vec!["--group", "work_ers", "--once"], "--group"),
        (
            vec!["--group", "workers", "--lease", "agent", "--once"],
            "NAMESPACE/NAME",
        ),
        (
            vec!["--group", "workers", "--interval", "1s", "--once"],
            "5s to 5m",
        ),
    ] {
        let output = run(args.clone()).await;
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    assert_eq!(world.cluster.lock().unwrap().asked.len(), asked_before);
    // A node asked once, so `workers` is stored: its zone's name is refused
    // naming it; a group no node asked in yet is said, and served.
    zincati(
        world.server.addr,
        "pre-reboot",
        &node_id(MACHINE_A),
        "workers",
    )
    .await;
    let output = run(vec!["--group", "workers.us-east-1a", "--once"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("name --group workers"), "{stderr}");
    let output = run(vec!["--group", "wrokers", "--once"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("group 'wrokers' has no item yet"),
        "{stderr}"
    );
}

/// The reference client against the stand-in: `kubectl drain` cordons,
/// leaves the DaemonSet's pod, evicts through the Eviction API and waits
/// the pods out; a budget that allows no disruption holds it until its
/// timeout, the pod untouched; `kubectl uncordon` lifts the cordon.
#[tokio::test]
async fn kubectl_drains_and_uncordons_a_node_of_the_stand_in() {
    let world = world("kube-kubectl").await;
    // kubectl as a cluster admin, not as the agent.
    world.cluster.lock().unwrap().rbac = None;
    let config = kubeconfig(world.dir.path(), &world.url);
    let kubectl = |args: &[&str]| {
        let mut command = tokio::process::Command::new(kubectl_path());
        command
            .arg("--kubeconfig")
            .arg(&config)
            .arg("--cache-dir")
            .arg(world.dir.path().join("cache"))
            .args(args)
            .kill_on_drop(true);
        async move {
            let output = tokio::time::timeout(Duration::from_secs(90), command.output())
                .await
                .expect("kubectl ends")
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            (output.status.success(), text)
        }
    };
    world.cluster.lock().unwrap().add_pod(
        "kube-system",
        "logs-b",
        "node-b",
        "app=logs",
        "DaemonSet",
    );
    let (ok, said) = kubectl(&["drain", "node-b", "--ignore-daemonsets", "--timeout=60s"]).await;
    assert!(ok, "{said}");
    {
        let cluster = world.cluster.lock().unwrap();
        assert!(cluster.unschedulable("node-b"), "{said}");
        assert_eq!(cluster.pods_on("node-b"), ["logs-b"], "{said}");
    }
    let (ok, said) = kubectl(&["uncordon", "node-b"]).await;
    assert!(ok, "{said}");
    assert!(!world.cluster.lock().unwrap().unschedulable("node-b"));
    // web-1's budget keeps one of app=web, and web-2 is gone: no eviction.
    let (ok, said) = kubectl(&["drain", "node-a", "--ignore-daemonsets", "--timeout=8s"]).await;
    assert!(!ok, "{said}");
    assert!(said.contains("disruption budget"), "{said}");
    assert!(
        world
            .cluster
            .lock()
            .unwrap()
            .pods_on("node-a")
            .contains(&"web-1".to_owned())
    );
    // Without --ignore-daemonsets kubectl refuses, as against a real cluster.
    let (ok, said) = kubectl(&["drain", "node-a", "--timeout=8s"]).await;
    assert!(!ok && said.contains("DaemonSet"), "{said}");
}

/// kubectl: on PATH, else the one the machine's Cloud SDK carries.
fn kubectl_path() -> std::path::PathBuf {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|candidate| candidate.is_file())
    });
    on_path
        .or_else(|| {
            let sdk = std::path::Path::new("/usr/lib/google-cloud-sdk/bin/kubectl");
            sdk.is_file().then(|| sdk.to_path_buf())
        })
        .expect("kubectl is installed (scripts/test installs it where it is missing)")
}

/// A temporary directory, removed when dropped.
mod tempdir {
    pub struct Dir(std::path::PathBuf);

    impl Dir {
        pub fn new() -> Self {
            let path = std::env::temp_dir().join(format!(
                "fleetlock-kube-{}-{}",
                std::process::id(),
                crate::helpers::unique_table_name("d")
            ));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }

        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
