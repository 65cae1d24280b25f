//! `fleetlock serve` builds side by side: the server process's CPU per call
//! under 50 Zincati-shaped nodes, on its embedded store (the README's first
//! command) and on DynamoDB Local, as Zincati calls (a new connection each
//! time, the server logging at its default level) and on the decision path
//! alone (keep-alive, quiet).
//!
//! `FLEETLOCK_BIN` is the build measured; `FLEETLOCK_AGAINST` adds others as
//! `label=path;label=path` (`BENCH_AGAINST` in ./scripts/bench builds them
//! from commits). The builds take turns, round after round, so that a
//! machine's drift in the minutes of a run falls on all of them alike: an
//! absolute figure from another day cannot tell the machine from the code.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod support;

use support::{call, connect, memory_kib, process_cpu_of, spawn_serve};

/// Nodes, each on its own keep-alive connection, as many Zincatis would be.
const NODES: usize = 50;
/// The group's slots: most pre-reboots are refused, as in a real rollout.
const SLOTS: u32 = 5;
const ROUNDS: usize = 3;

/// Where the server keeps its locks, and how the nodes reach it.
#[derive(Clone, Copy)]
enum Setup {
    /// As a fleet of stock Zincatis: a call every few minutes from each node
    /// is a new connection every call, and the server logs at its default
    /// level (info: a line per decision), here to a file.
    EmbeddedAsZincati,
    /// The decision path alone: keep-alive connections, warnings only.
    EmbeddedKeepAliveQuiet,
    /// Zincati's shape again, each decision one DynamoDB request.
    DynamoDbLocalAsZincati,
}

impl Setup {
    const ALL: [Setup; 3] = [
        Setup::EmbeddedAsZincati,
        Setup::EmbeddedKeepAliveQuiet,
        Setup::DynamoDbLocalAsZincati,
    ];

    fn label(self) -> &'static str {
        match self {
            Setup::EmbeddedAsZincati => "embedded, a connection per call, logs at info",
            Setup::EmbeddedKeepAliveQuiet => "embedded, keep-alive, logs at warn",
            Setup::DynamoDbLocalAsZincati => "DynamoDB Local, a connection per call, logs at info",
        }
    }

    fn embedded(self) -> bool {
        !matches!(self, Setup::DynamoDbLocalAsZincati)
    }

    fn new_connection_per_call(self) -> bool {
        !matches!(self, Setup::EmbeddedKeepAliveQuiet)
    }

    /// The server's default filter, spelled out so that every build logs the
    /// same lines whatever its own default.
    fn log_filter(self) -> &'static str {
        match self {
            Setup::EmbeddedKeepAliveQuiet => "warn",
            _ => "info,aws_config=warn,aws_smithy_runtime=warn",
        }
    }

    /// Enough calls for the CPU clock's 10 ms ticks to be under 1 % of the
    /// figure, and few enough for DynamoDB Local's pace.
    fn calls(self) -> usize {
        match self {
            Setup::EmbeddedAsZincati => 60_000,
            Setup::EmbeddedKeepAliveQuiet => 300_000,
            Setup::DynamoDbLocalAsZincati => 6_000,
        }
    }
}

struct Run {
    calls: usize,
    cpu: Duration,
    wall: Duration,
    p50_ms: f64,
    peak_rss_kib: u64,
}

/// The id Zincati sends: 32 hex digits derived from the machine id.
fn node_id(n: usize) -> String {
    format!("{:032x}", (n as u128 + 1) * 0x9e37_79b9_7f4a_7c15)
}

/// One run: a fresh server from `binary`, 50 nodes that ask for a slot until
/// granted, then report steady state (the reboot is instant), until `calls`
/// calls are answered; the server's CPU over the load, not its start.
async fn run(binary: &str, setup: Setup, table: &str) -> Run {
    if !setup.embedded() {
        let made = std::process::Command::new(binary)
            .arg("create-table")
            .env("FLEETLOCK_TABLE", table)
            .output()
            .expect("run fleetlock create-table");
        assert!(
            made.status.success(),
            "{binary} create-table: {}",
            String::from_utf8_lossy(&made.stderr)
        );
    }
    let table = (!setup.embedded()).then_some(table);
    let groups = format!("default={SLOTS}");
    let logs = [("RUST_LOG", setup.log_filter())];
    let (mut child, addr) = spawn_serve(binary, table, &groups, &logs, None).await;
    let pid = child.id().expect("the server runs");
    // Every node's first call is the steady-state Zincati sends at boot.
    let mut senders = Vec::new();
    for n in 0..NODES {
        let mut sender = connect(&addr).await;
        let (status, _) = call(&mut sender, &addr, "steady-state", &node_id(n), "default").await;
        assert_eq!(status, 200, "{binary}: steady-state at boot");
        senders.push(sender);
    }

    let wanted = setup.calls();
    let fresh = setup.new_connection_per_call();
    let answered = Arc::new(AtomicUsize::new(0));
    let (cpu, wall) = (process_cpu_of(pid), Instant::now());
    let nodes: Vec<_> = senders
        .into_iter()
        .enumerate()
        .map(|(n, mut sender)| {
            let (addr, answered) = (addr.clone(), answered.clone());
            tokio::spawn(async move {
                let id = node_id(n);
                let mut took = Vec::new();
                while answered.fetch_add(1, Ordering::Relaxed) < wanted {
                    let sent = Instant::now();
                    if fresh {
                        sender = connect(&addr).await;
                    }
                    let (status, answer) =
                        call(&mut sender, &addr, "pre-reboot", &id, "default").await;
                    took.push(sent.elapsed());
                    match status {
                        200 => {
                            answered.fetch_add(1, Ordering::Relaxed);
                            let sent = Instant::now();
                            if fresh {
                                sender = connect(&addr).await;
                            }
                            let (status, _) =
                                call(&mut sender, &addr, "steady-state", &id, "default").await;
                            took.push(sent.elapsed());
                            assert_eq!(status, 200, "steady-state after a grant");
                        }
                        // Full, or a release landed after this call arrived
                        // (the late-write guard): Zincati asks again.
                        _ if answer["kind"] == "semaphore_full" || answer["kind"] == "settling" => {
                        }
                        other => panic!("pre-reboot answered {other}: {answer}"),
                    }
                }
                took
            })
        })
        .collect();
    let mut took = Vec::new();
    for node in nodes {
        took.extend(node.await.expect("a node's task"));
    }
    let (cpu, wall) = (process_cpu_of(pid) - cpu, wall.elapsed());
    let peak_rss_kib = memory_kib(pid, "VmHWM:").unwrap_or(0);
    child.kill().await.ok();
    took.sort();
    Run {
        calls: took.len(),
        cpu,
        wall,
        p50_ms: took[took.len() / 2].as_secs_f64() * 1000.0,
        peak_rss_kib,
    }
}

fn builds() -> Vec<(String, String)> {
    let today =
        std::env::var("FLEETLOCK_BIN").unwrap_or_else(|_| "target/release/fleetlock".into());
    let mut builds = Vec::new();
    for pair in std::env::var("FLEETLOCK_AGAINST")
        .unwrap_or_default()
        .split(';')
        .filter(|p| !p.is_empty())
    {
        let (label, path) = pair
            .split_once('=')
            .expect("FLEETLOCK_AGAINST is label=path;label=path");
        builds.push((label.to_owned(), path.to_owned()));
    }
    builds.push(("this build".into(), today));
    builds
}

#[tokio::main]
async fn main() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        eprintln!("AWS_ENDPOINT_URL is unset: run ./scripts/bench, which starts DynamoDB Local");
        std::process::exit(2);
    }
    let builds = builds();
    println!(
        "### `fleetlock serve` side by side: {NODES} Zincati-shaped nodes, {SLOTS} slots, {ROUNDS} rounds taken in turn\n"
    );
    println!(
        "Each node reports steady state at boot, then asks for a slot until granted (the refusals `semaphore_full`, or `settling` where a release landed after the call arrived), then reports steady state again; the server's CPU (user and system, every thread, from /proc) over the load, per call answered, and the latency a node sees, connection included. Median of the rounds; in brackets the lowest and highest.\n"
    );
    println!("| build | setup | CPU per call, ms | calls/s | p50 ms | peak RSS, KiB |");
    println!("|---|---|---:|---:|---:|---:|");
    // FLEETLOCK_SERVE_SETUPS=keep-alive (any words of the labels) runs only
    // the setups it names, for a profile of one of them.
    let only = std::env::var("FLEETLOCK_SERVE_SETUPS").unwrap_or_default();
    for setup in Setup::ALL {
        if !only.is_empty() && !setup.label().contains(only.as_str()) {
            continue;
        }
        let mut runs: Vec<Vec<Run>> = builds.iter().map(|_| Vec::new()).collect();
        for round in 0..ROUNDS {
            for (n, (label, binary)) in builds.iter().enumerate() {
                let table = format!("bench-serve-{}-{n}-{round}", std::process::id());
                let measured = run(binary, setup, &table).await;
                eprintln!(
                    "{label}, {}, round {round}: {:.4} ms CPU per call",
                    setup.label(),
                    measured.cpu.as_secs_f64() * 1000.0 / measured.calls as f64
                );
                runs[n].push(measured);
            }
        }
        for ((label, _), runs) in builds.iter().zip(&runs) {
            let median = |f: &dyn Fn(&Run) -> f64| {
                let mut v: Vec<f64> = runs.iter().map(f).collect();
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[0], v[v.len() - 1])
            };
            let (cpu, low, high) = median(&|r| r.cpu.as_secs_f64() * 1000.0 / r.calls as f64);
            let (rate, _, _) = median(&|r| r.calls as f64 / r.wall.as_secs_f64());
            let (p50, _, _) = median(&|r| r.p50_ms);
            let (rss, _, _) = median(&|r| r.peak_rss_kib as f64);
            println!(
                "| {label} | {} | {cpu:.4} ({low:.4} to {high:.4}) | {rate:.0} | {p50:.2} | {rss:.0} |",
                setup.label()
            );
        }
    }
    println!();
}
