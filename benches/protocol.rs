//! The FleetLock benchmark, against DynamoDB Local on loopback (started by
//! `./scripts/bench`, which sets `AWS_ENDPOINT_URL`).
//!
//! 1. In process, through the shared router: many simulated nodes cycle
//!    pre-reboot / steady-state on a few slots, concurrently. Reports
//!    operations/s, p50/p99 latency per outcome, and the DynamoDB requests each
//!    protocol call sent (counted by an SDK interceptor).
//! 2. The release binary: size, time from spawn to ready and to its first
//!    answer, and peak RSS after serving a load over loopback HTTP.

use std::sync::Arc;
use std::time::{Duration, Instant};

use fleetlock::domain::auth::Auth;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::{GroupName, NodeId, PauseReason};
use fleetlock::domain::lock::{Acquire, ByPerson, GroupRules, Refusal};
use fleetlock::domain::service::FleetLock;
use fleetlock::domain::time::Timestamp;
use fleetlock::domain::windows::Schedule;
use fleetlock::http::Api;
use fleetlock::store::dynamodb::DynamoStore;
use fleetlock::test_support::{RequestCounter, counted_client};
use lambda_http::http::{HeaderMap, HeaderValue, Method};

const NODES: usize = 400;
const CONCURRENCY: usize = 32;
const SLOTS: u32 = 10;
const HTTP_CALLS: usize = 5_000;

mod support;

use fleetlock::domain::store::Decisions;
use support::{call, connect, memory_kib, process_cpu_of, spawn_serve, zincati_body};

fn body(id: &str) -> Vec<u8> {
    zincati_body(id, "bench")
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1000.0
}

#[derive(Default)]
struct Samples {
    by_outcome: std::collections::BTreeMap<String, Vec<Duration>>,
}

impl Samples {
    fn add(&mut self, outcome: String, took: Duration) {
        self.by_outcome.entry(outcome).or_default().push(took);
    }

    fn report(&mut self) -> Vec<Duration> {
        let mut all = Vec::new();
        println!("| outcome | calls | p50 ms | p99 ms |");
        println!("|---|---:|---:|---:|");
        for (outcome, samples) in &mut self.by_outcome {
            samples.sort();
            println!(
                "| {outcome} | {} | {:.2} | {:.2} |",
                samples.len(),
                percentile(samples, 0.50),
                percentile(samples, 0.99)
            );
            all.extend_from_slice(samples);
        }
        all.sort();
        println!(
            "| all | {} | {:.2} | {:.2} |",
            all.len(),
            percentile(&all, 0.50),
            percentile(&all, 0.99)
        );
        all
    }
}

/// `calls` protocol calls from `concurrency` workers sharing `NODES` nodes.
async fn in_process(concurrency: usize, calls_wanted: usize) {
    let (client, counter) = counted_client().await;
    let store = DynamoStore::new(
        client,
        format!("bench-{}-{concurrency}", std::process::id()),
    );
    store.create_table().await.expect("create the bench table");
    let service = Arc::new(Api::new(
        FleetLock::new(GroupSlots::parse(&format!("bench={SLOTS}")).unwrap(), store),
        Auth::Disabled,
    ));
    let mut headers = HeaderMap::new();
    headers.insert("fleet-lock-protocol", HeaderValue::from_static("true"));
    let headers = Arc::new(headers);

    let requests_before = counter.get();
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let (service, headers) = (Arc::clone(&service), Arc::clone(&headers));
            tokio::spawn(async move {
                let mut samples = Samples::default();
                let mut calls = 0;
                // Each worker plays the nodes worker, worker+C, ...: a node
                // asks for a slot; when granted it "reboots" and releases.
                let nodes: Vec<_> = (worker..NODES).step_by(concurrency).collect();
                'cycle: loop {
                    for node in &nodes {
                        let id = format!("node-{node:04}");
                        let body = body(&id);
                        let t = Instant::now();
                        let r = service
                            .handle(&Method::POST, "/v1/pre-reboot", &headers, &body)
                            .await;
                        let granted = r.status() == 200;
                        let label = if granted {
                            "pre-reboot granted"
                        } else {
                            "pre-reboot refused (423)"
                        };
                        samples.add(label.into(), t.elapsed());
                        calls += 1;
                        if granted {
                            let t = Instant::now();
                            let r = service
                                .handle(&Method::POST, "/v1/steady-state", &headers, &body)
                                .await;
                            assert_eq!(r.status(), 200);
                            samples.add("steady-state released".into(), t.elapsed());
                            calls += 1;
                        }
                        if calls >= calls_wanted / concurrency {
                            break 'cycle;
                        }
                    }
                }
                (calls, samples)
            })
        })
        .collect();
    let mut total_calls = 0;
    let mut samples = Samples::default();
    for worker in workers {
        let (calls, worker_samples) = worker.await.unwrap();
        total_calls += calls;
        for (outcome, durations) in worker_samples.by_outcome {
            samples
                .by_outcome
                .entry(outcome)
                .or_default()
                .extend(durations);
        }
    }
    let elapsed = started.elapsed();
    let requests = counter.get() - requests_before;

    println!(
        "### In process, through the router, against DynamoDB Local: {concurrency} at a time\n"
    );
    println!(
        "{NODES} nodes, {concurrency} concurrent, group of {SLOTS} slots, {total_calls} protocol calls in {:.1} s\n",
        elapsed.as_secs_f64()
    );
    samples.report();
    println!();
    println!(
        "- throughput: {:.0} protocol calls/s",
        total_calls as f64 / elapsed.as_secs_f64()
    );
    println!(
        "- DynamoDB requests: {requests} for {total_calls} protocol calls = {:.3} per call",
        requests as f64 / total_calls as f64
    );
    println!();
}

/// The router over a fresh table, with `groups` and a group `closed` whose
/// only window is never open during the benchmark; its request counter, and
/// the protocol header Zincati sends.
async fn closed_window_api(
    name: &str,
    groups: GroupSlots,
) -> (Api<DynamoStore>, RequestCounter, HeaderMap) {
    let (client, counter) = counted_client().await;
    let store = DynamoStore::new(client, format!("bench-{name}-{}", std::process::id()));
    store.create_table().await.expect("create the table");
    let windows = Schedule::parse(&closed_window_spec(), None, |_| Ok(()), false).unwrap();
    let api = Api::new(
        FleetLock::new(groups, store).with_windows(windows),
        Auth::Disabled,
    );
    let mut headers = HeaderMap::new();
    headers.insert("fleet-lock-protocol", HeaderValue::from_static("true"));
    (api, counter, headers)
}

/// DynamoDB requests and latency of each kind of answer, one caller at a time:
/// the rollout levers must cost no extra request.
async fn requests_per_answer_kind() {
    // Each grant below takes a group of its own (`fresh-N`, named), so that
    // its item stays as small as a group's first use and the figure is the
    // protocol's; `wild-N` are the same for groups only `*` covers.
    const CALLS: usize = 300;
    let fresh: Vec<String> = (0..CALLS).map(|n| format!("fresh-{n}=1")).collect();
    // `leased-N`: one slot, held since a day ago by a node that is gone.
    let leased: Vec<String> = (0..CALLS).map(|n| format!("leased-{n}=1")).collect();
    let leases: Vec<String> = (0..CALLS).map(|n| format!("leased-{n}=6h")).collect();
    // `gated-N`: one slot behind a 15m drain gate; `timed-N` and `held-N`:
    // the same, with a reservation made a day ago, granted or held on timeout.
    let gated: Vec<String> = ["gated", "timed", "held"]
        .iter()
        .flat_map(|kind| (0..CALLS).map(move |n| format!("{kind}-{n}=1")))
        .collect();
    let gates: Vec<String> = (0..CALLS)
        .flat_map(|n| {
            [
                format!("gated-{n}=15m"),
                format!("timed-{n}=15m:grant"),
                format!("held-{n}=15m:hold"),
            ]
        })
        .collect();
    let spec = format!(
        "full=1,paused=1,settling=2,open=500,closed=500,excluding=2,{},{},{},*=1",
        fresh.join(","),
        leased.join(","),
        gated.join(",")
    );
    let groups = GroupSlots::parse(&spec)
        .unwrap()
        .with_setting("FLEETLOCK_SETTLE", "settling=1h")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", &leases.join(","))
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", &gates.join(","))
        .unwrap()
        .with_wildcard_limit("2000")
        .unwrap();
    let (api, counter, headers) = closed_window_api("kinds", groups).await;
    let call = |endpoint: &'static str, id: String, group: String| {
        let (api, headers) = (&api, &headers);
        async move {
            let body = zincati_body(&id, &group);
            api.handle(&Method::POST, endpoint, headers, &body)
                .await
                .status()
        }
    };
    // Set the scene: a full group, a paused one, one settling after a release.
    assert_eq!(
        call("/v1/pre-reboot", "holder".into(), "full".into()).await,
        200
    );
    assert_eq!(
        call("/v1/pre-reboot", "holder".into(), "settling".into()).await,
        200
    );
    assert_eq!(
        call("/v1/steady-state", "holder".into(), "settling".into()).await,
        200
    );
    let pause = ByPerson {
        reason: PauseReason::parse("bench").unwrap(),
        since: Timestamp::now(),
        by: "bench".into(),
    };
    api.service()
        .store()
        .pause(&GroupName::parse("paused").unwrap(), pause.clone())
        .await
        .expect("pause");
    // A group with a holder and the most exclusions it may have: the
    // refusal's write is billed by that item's size.
    assert_eq!(
        call("/v1/pre-reboot", "holder".into(), "excluding".into()).await,
        200
    );
    let excluding = GroupName::parse("excluding").unwrap();
    for n in 0..fleetlock::domain::lock::MAX_EXCLUSIONS {
        let node = fleetlock::domain::input::NodeId::parse(&format!("{n:032x}")).unwrap();
        api.service()
            .store()
            .exclude(&excluding, &node, pause.clone())
            .await
            .expect("exclude");
    }
    let day_ago = Timestamp::now().minus(Duration::from_secs(86_400));
    for n in 0..CALLS {
        let group = GroupName::parse(&format!("leased-{n}")).unwrap();
        let gone = fleetlock::domain::input::NodeId::parse("gone").unwrap();
        let one = GroupRules {
            slots: 1,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: None,
            drain: None,
            return_timeout: None,
            zone: None,
            canary: None,
        };
        let planted = api.service().store().acquire(&group, &gone, one, day_ago);
        assert_eq!(planted.await.expect("plant").outcome, Acquire::Granted);
        // A reservation a day old, by the node that will ask.
        let asker = fleetlock::domain::input::NodeId::parse(&format!("new-{n}")).unwrap();
        for kind in ["timed", "held"] {
            let group = GroupName::parse(&format!("{kind}-{n}")).unwrap();
            let gate = GroupRules {
                drain: Some(fleetlock::domain::lock::DrainRule {
                    timeout: Duration::from_secs(900),
                    on_timeout: fleetlock::domain::lock::OnDrainTimeout::Hold,
                    window_closes: None,
                }),
                ..one
            };
            let planted = api.service().store().acquire(&group, &asker, gate, day_ago);
            assert_eq!(planted.await.expect("plant").outcome, Acquire::Reserves);
        }
    }
    println!("### Requests and latency per kind of answer (1 caller, {CALLS} calls each)\n");
    println!("| answer | status | DynamoDB requests per call | p50 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|");
    let cases: [(&str, &str, &'static str, &'static str, u16); 14] = [
        ("granted", "/v1/pre-reboot", "fresh", "new", 200),
        (
            "granted_expired (the slot of a holder past its 6h lease)",
            "/v1/pre-reboot",
            "leased",
            "new",
            200,
        ),
        (
            "granted, first use of a group only `*` covers",
            "/v1/pre-reboot",
            "wild",
            "new",
            200,
        ),
        (
            "waiting_for_drain: a slot reserved behind a 15m drain gate (outcome reserved)",
            "/v1/pre-reboot",
            "gated",
            "new",
            423,
        ),
        (
            "waiting_for_drain: the reserved node asking again (outcome waiting_for_drain)",
            "/v1/pre-reboot",
            "gated",
            "new",
            423,
        ),
        (
            "waiting_for_drain past the timeout, hold (outcome drain_overdue)",
            "/v1/pre-reboot",
            "held",
            "new",
            423,
        ),
        (
            "granted_drain_timeout (past the timeout, grant)",
            "/v1/pre-reboot",
            "timed",
            "new",
            200,
        ),
        ("already_held", "/v1/pre-reboot", "full", "holder", 200),
        ("semaphore_full", "/v1/pre-reboot", "full", "other", 423),
        ("group_paused", "/v1/pre-reboot", "paused", "other", 423),
        ("settling", "/v1/pre-reboot", "settling", "other", 423),
        (
            "node_excluded (10 exclusions in the group)",
            "/v1/pre-reboot",
            "excluding",
            "00000000000000000000000000000003",
            423,
        ),
        (
            "outside_maintenance_window",
            "/v1/pre-reboot",
            "closed",
            "new",
            423,
        ),
        (
            "not_held (steady-state)",
            "/v1/steady-state",
            "open",
            "nobody",
            200,
        ),
    ];
    for (label, endpoint, group, who, status) in cases {
        let before = counter.get();
        let mut took = Vec::with_capacity(CALLS);
        for n in 0..CALLS {
            let id = if who == "new" {
                format!("new-{n}")
            } else {
                who.to_owned()
            };
            let group = if ["fresh", "wild", "leased", "gated", "timed", "held"].contains(&group) {
                format!("{group}-{n}")
            } else {
                group.to_owned()
            };
            let t = Instant::now();
            assert_eq!(call(endpoint, id, group).await, status, "{label}");
            took.push(t.elapsed());
        }
        took.sort();
        println!(
            "| {label} | {status} | {:.3} | {:.2} | {:.2} |",
            (counter.get() - before) as f64 / CALLS as f64,
            percentile(&took, 0.50),
            percentile(&took, 0.99)
        );
    }
    println!();
}

/// `closed: ...`: a one-minute window a day and a half from now, every day
/// of the week but this one and the next, so the group stays closed for the
/// whole benchmark.
fn closed_window_spec() -> String {
    let names = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
    let now = jiff::tz::TimeZone::UTC.to_datetime(jiff::Timestamp::now());
    let today = usize::from(now.weekday().to_monday_zero_offset() as u8);
    let days: Vec<&str> = (2..7).map(|d| names[(today + d) % 7]).collect();
    format!(
        "closed: days={} start_time=12:00 length_minutes=1",
        days.join(",")
    )
}

/// CPU time this process has used (user + system), from /proc.
fn process_cpu() -> Duration {
    process_cpu_of(std::process::id())
}

/// CPU per call of this process (DynamoDB Local excluded) for a grant and for
/// a refusal outside a maintenance window.
async fn cpu_per_call() {
    // Every grant in a group of its own, named (a group only `*` covers
    // costs two more requests on its first use): the item stays as small as
    // a first use, so the figure is the protocol's, not a growing item's.
    const CALLS: usize = 3_000;
    let named: Vec<String> = (0..CALLS).map(|n| format!("g{n}=1")).collect();
    let groups = GroupSlots::parse(&format!("closed=1,{}", named.join(","))).unwrap();
    let (api, _, headers) = closed_window_api("cpu", groups).await;
    println!("### CPU per call in this process ({CALLS} calls each, DynamoDB Local not counted)\n");
    println!("| answer | CPU per call, µs | wall per call, µs |");
    println!("|---|---:|---:|");
    for (label, closed, status) in [
        ("granted (one DynamoDB request)", false, 200),
        ("outside_maintenance_window (none)", true, 423),
    ] {
        let (cpu, wall) = (process_cpu(), Instant::now());
        for n in 0..CALLS {
            let group = if closed {
                "closed".into()
            } else {
                format!("g{n}")
            };
            let body = zincati_body(&format!("cpu-{n}"), &group);
            let r = api
                .handle(&Method::POST, "/v1/pre-reboot", &headers, &body)
                .await;
            assert_eq!(r.status(), status, "{label}");
        }
        let (cpu, wall) = (process_cpu() - cpu, wall.elapsed());
        println!(
            "| {label} | {:.0} | {:.0} |",
            cpu.as_secs_f64() * 1e6 / CALLS as f64,
            wall.as_secs_f64() * 1e6 / CALLS as f64
        );
    }
    println!();
}

/// Write units per call against the size of the group's item: DynamoDB bills
/// a write by the larger of the item before and after it, in 1 KB steps, and a
/// refused conditional write by the item's size too (it does not report those).
async fn write_units_by_group_size(title: &str, id_of: fn(usize) -> String, report_at: &[usize]) {
    let (client, _) = counted_client().await;
    let table = format!("bench-units-{}-{}", std::process::id(), report_at.len());
    let store = DynamoStore::new(client, table).reporting_write_units();
    store.create_table().await.expect("create the table");
    let group = GroupName::parse("units").unwrap();
    let now = Timestamp::now();
    let open_group = GroupRules {
        slots: fleetlock::domain::groups::MAX_SLOTS,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    };
    println!("### {title}\n");
    println!("| holders after the grant | grant (write units) | its release (write units) |");
    println!("|---:|---:|---:|");
    let most = report_at.iter().copied().max().unwrap_or(0);
    for n in 1..=most {
        let id = NodeId::parse(&id_of(n)).unwrap();
        let granted = store
            .acquire(&group, &id, open_group, now)
            .await
            .expect("grant");
        if !report_at.contains(&n) {
            continue;
        }
        // Release it, read the units, and take the slot back for the next size.
        let released = store
            .release(&group, &id, false, now)
            .await
            .expect("release");
        store
            .acquire(&group, &id, open_group, now)
            .await
            .expect("grant again");
        let units = |u: Option<f64>| u.map_or("?".into(), |u| format!("{u:.1}"));
        println!(
            "| {n} | {} | {} |",
            units(granted.write_units),
            units(released.write_units)
        );
    }
    println!();
}

/// The write units of a take-over past a lease, by holders in the group
/// (32-hex ids): the refused grant before it is billed by the same item but
/// not reported.
async fn take_over_write_units() {
    let (client, _) = counted_client().await;
    let table = format!("bench-take-over-{}", std::process::id());
    let store = DynamoStore::new(client, table).reporting_write_units();
    store.create_table().await.expect("create the table");
    println!("### Write units of a take-over past a lease (32-hex ids)\n");
    println!(
        "| holders (all slots) | grant of the last slot (write units) | take-over (write units) |"
    );
    println!("|---:|---:|---:|");
    let day_ago = Timestamp::now().minus(Duration::from_secs(86_400));
    for slots in [1u32, 10, 24, 100] {
        let group = GroupName::parse(&format!("leased-{slots}")).unwrap();
        let rules = GroupRules {
            slots,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: Some(Duration::from_secs(6 * 3600)),
            drain: None,
            return_timeout: None,
            zone: None,
            canary: None,
        };
        let mut last = None;
        for n in 0..slots {
            let id = NodeId::parse(&format!("{n:032x}")).unwrap();
            let at = day_ago.plus(Duration::from_millis(n.into()));
            last = store
                .acquire(&group, &id, rules, at)
                .await
                .expect("grant")
                .write_units;
        }
        let asker = NodeId::parse(&format!("{:032x}", u32::MAX)).unwrap();
        let taken = store
            .acquire(&group, &asker, rules, Timestamp::now())
            .await
            .expect("take over");
        assert!(
            matches!(taken.outcome, Acquire::TakesExpired { .. }),
            "{taken:?}"
        );
        let units = |u: Option<f64>| u.map_or("?".into(), |u| format!("{u:.1}"));
        println!(
            "| {slots} | {} | {} |",
            units(last),
            units(taken.write_units)
        );
    }
    println!();
}

/// The write units of a reservation behind a drain gate and of its
/// confirmation (`fleetlock drained`, or the drained function), by holders
/// in the group (32-hex ids): each is one request.
async fn drain_write_units() {
    let (client, counter) = counted_client().await;
    let table = format!("bench-drain-{}", std::process::id());
    let store = DynamoStore::new(client, table).reporting_write_units();
    store.create_table().await.expect("create the table");
    println!("### Write units of a reservation and of its confirmation (32-hex ids)\n");
    println!(
        "| holders (all slots) | reservation of the last slot (write units) | confirmation (write units) | requests of the confirmation |"
    );
    println!("|---:|---:|---:|---:|");
    for slots in [1u32, 10, 24, 100] {
        let group = GroupName::parse(&format!("gated-{slots}")).unwrap();
        let rules = GroupRules {
            slots,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: None,
            drain: Some(fleetlock::domain::lock::DrainRule {
                timeout: Duration::from_secs(900),
                on_timeout: fleetlock::domain::lock::OnDrainTimeout::Hold,
                window_closes: None,
            }),
            return_timeout: None,
            zone: None,
            canary: None,
        };
        let mut last = None;
        let mut id = NodeId::parse("0").unwrap();
        for n in 0..slots {
            id = NodeId::parse(&format!("{n:032x}")).unwrap();
            last = store
                .acquire(&group, &id, rules, Timestamp::now())
                .await
                .expect("reserve")
                .write_units;
        }
        let before = counter.get();
        let confirmed = store
            .drained(&group, &id, None, Timestamp::now())
            .await
            .expect("confirm");
        assert_eq!(confirmed.outcome, fleetlock::domain::lock::Drained::Granted);
        let units = |u: Option<f64>| u.map_or("?".into(), |u| format!("{u:.1}"));
        println!(
            "| {slots} | {} | {} | {} |",
            units(last),
            units(confirmed.write_units),
            counter.get() - before
        );
    }
    println!();
}

/// Every write of the return gate (`FLEETLOCK_RETURN`), by holders in the
/// group (32-hex ids, every slot taken): the steady-state that starts a
/// return, a repeated one, the returning node's own pre-reboot, a
/// newcomer's refused pre-reboot, the sweep's stop and the confirmation:
/// the DynamoDB requests each makes, and the write units DynamoDB reports
/// for those that write.
async fn return_write_units() {
    let (client, counter) = counted_client().await;
    let table = format!("bench-return-{}", std::process::id());
    let store = DynamoStore::new(client, table).reporting_write_units();
    store.create_table().await.expect("create the table");
    println!("### The return gate: requests and write units per answer (32-hex ids)\n");
    println!(
        "| holders (all slots) | steady-state, starts the return | steady-state again (`still_returning`) | its own pre-reboot (`waiting_for_return`) | a newcomer (`semaphore_full`) | the sweep's stop | the confirmation |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let units = |u: Option<f64>| u.map_or("refused".into(), |u| format!("{u:.1} WU"));
    for slots in [1u32, 10, 24, 100] {
        let group = GroupName::parse(&format!("returning-{slots}")).unwrap();
        let rules = GroupRules {
            slots,
            settle: Duration::ZERO,
            wildcard_limit: None,
            lease: None,
            drain: None,
            return_timeout: Some(Duration::from_secs(1200)),
            zone: None,
            canary: None,
        };
        let mut id = NodeId::parse("0").unwrap();
        for n in 0..slots {
            id = NodeId::parse(&format!("{n:032x}")).unwrap();
            store
                .acquire(&group, &id, rules, Timestamp::now())
                .await
                .expect("grant");
        }
        let mut cells = Vec::new();
        let mut measured = |requests: u64, write_units: Option<f64>| {
            cells.push(format!("{requests} req, {}", units(write_units)));
        };
        let started = Timestamp::now();
        let before = counter.get();
        let first = store
            .release(&group, &id, true, started)
            .await
            .expect("return");
        assert_eq!(first.outcome, fleetlock::domain::lock::Release::Returning);
        measured(counter.get() - before, first.write_units);
        let before = counter.get();
        let again = store
            .release(&group, &id, true, Timestamp::now())
            .await
            .expect("again");
        assert_eq!(
            again.outcome,
            fleetlock::domain::lock::Release::StillReturning
        );
        measured(counter.get() - before, again.write_units);
        let before = counter.get();
        let own = store
            .acquire(&group, &id, rules, Timestamp::now())
            .await
            .expect("own");
        assert!(matches!(
            own.outcome,
            Acquire::Refused(Refusal::Returning { .. })
        ));
        measured(counter.get() - before, own.write_units);
        let before = counter.get();
        let newcomer = NodeId::parse("new").unwrap();
        let refused = store
            .acquire(&group, &newcomer, rules, Timestamp::now())
            .await
            .expect("new");
        assert_eq!(refused.outcome, Acquire::Refused(Refusal::Full));
        measured(counter.get() - before, refused.write_units);
        let before = counter.get();
        let stop = store
            .stop_rollout(
                &group,
                &id,
                started,
                fleetlock::domain::lock::StopCause::Return,
                Timestamp::now(),
            )
            .await
            .expect("stop");
        assert_eq!(stop.outcome, fleetlock::domain::lock::Stopping::Stopped);
        measured(counter.get() - before, stop.write_units);
        let before = counter.get();
        let confirmed = store
            .returned(&group, &id, Some(started), Timestamp::now())
            .await
            .expect("confirm");
        assert_eq!(confirmed.outcome, fleetlock::domain::lock::Returned::Freed);
        measured(counter.get() - before, confirmed.write_units);
        println!("| {slots} | {} |", cells.join(" | "));
    }
    println!();
}

/// One zone at a time and a canary (`FLEETLOCK_ZONES`, `FLEETLOCK_CANARY`),
/// on one group of 3 slots split into zones `a` and `b` with a canary of
/// `30m:1+3`: every answer of a rollout's start, in the order a fleet meets
/// them, with the DynamoDB requests each makes and the write units DynamoDB
/// reports for those that write (32-hex ids). The clock is the store's
/// argument, so the bake passes without waiting for it.
async fn zones_and_waves_write_units() {
    let (client, counter) = counted_client().await;
    let table = format!("bench-waves-{}", std::process::id());
    let store = DynamoStore::new(client, table).reporting_write_units();
    store.create_table().await.expect("create the table");
    println!(
        "### Zones and a canary: requests and write units per answer (3 slots, zones a and b, canary `30m:1+3`)\n"
    );
    println!("| answer | outcome | DynamoDB requests | write units |");
    println!("|---|---|---:|---:|");
    let group = GroupName::parse("workers").unwrap();
    let canary = fleetlock::domain::lock::parse_canary("30m:1+3").unwrap();
    let in_zone = |zone: &str| GroupRules {
        slots: 3,
        settle: Duration::ZERO,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: None,
        zone: Some(fleetlock::domain::zones::ZoneGroup::of(
            &GroupName::parse(&format!("workers.{zone}")).unwrap(),
        )),
        canary: Some(canary),
    };
    let node = |n: u32| NodeId::parse(&format!("{n:032x}")).unwrap();
    let t0 = Timestamp::now();
    let at = |minutes: u64| t0.plus(Duration::from_secs(minutes * 60));
    let row = |what: &str, outcome: String, requests: u64, units: Option<f64>| {
        println!(
            "| {what} | {outcome} | {requests} | {} |",
            units.map_or("refused".into(), |u| format!("{u:.1}"))
        );
    };
    let steps: [(&str, u32, &str, u64); 7] = [
        ("the canary's pre-reboot (begins the rollout)", 1, "a", 0),
        ("a node of zone b", 2, "b", 1),
        ("a node of zone a, the canary out", 3, "a", 2),
        ("the same, the canary back 10 minutes", 3, "a", 20),
        ("the same, the bake over (begins wave 2)", 3, "a", 41),
        ("the next node of zone a (inside wave 2)", 4, "a", 42),
        ("a node of zone b, zone a out", 2, "b", 43),
    ];
    for (n, (what, id, zone, minutes)) in steps.into_iter().enumerate() {
        let before = counter.get();
        let decided = store
            .acquire(&group, &node(id), in_zone(zone), at(minutes))
            .await
            .expect("pre-reboot");
        let outcome = match decided.outcome {
            Acquire::Granted => "granted",
            Acquire::Refused(Refusal::OtherZone { .. }) => "another_zone_out",
            Acquire::Refused(Refusal::WaveOut { .. }) => "waiting_for_wave (wave_out)",
            Acquire::Refused(Refusal::Baking { .. }) => "waiting_for_wave (baking)",
            _ => "unexpected",
        };
        row(
            what,
            outcome.into(),
            counter.get() - before,
            decided.write_units,
        );
        if n == 2 {
            let before = counter.get();
            let released = store
                .release(&group, &node(1), false, at(10))
                .await
                .expect("steady-state");
            row(
                "the canary's steady-state",
                "released".into(),
                counter.get() - before,
                released.write_units,
            );
        }
    }
    let before = counter.get();
    let stop = store
        .stop_rollout(
            &group,
            &node(3),
            at(41),
            fleetlock::domain::lock::StopCause::Wave,
            at(102),
        )
        .await
        .expect("stop");
    row(
        "the sweep's stop, a wave's node out past 1h",
        format!("{:?}", stop.outcome).to_lowercase(),
        counter.get() - before,
        stop.write_units,
    );
    println!();
}

async fn release_binary() {
    let binary =
        std::env::var("FLEETLOCK_BIN").unwrap_or_else(|_| "target/release/fleetlock".into());
    let size = std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0);
    let table = format!("bench-http-{}", std::process::id());
    let status = std::process::Command::new(&binary)
        .arg("create-table")
        .env("FLEETLOCK_TABLE", &table)
        .output()
        .expect("run fleetlock create-table");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    let spawned = Instant::now();
    let (mut child, addr) =
        spawn_serve(&binary, Some(&table), &format!("bench={SLOTS}"), &[], None).await;
    let ready = spawned.elapsed();
    let pid = child.id().unwrap();

    let mut sender = connect(&addr).await;
    let (first, _) = call(&mut sender, &addr, "steady-state", "warm-up", "bench").await;
    assert_eq!(first, 200);
    let first_answer = spawned.elapsed();
    let rss_idle = memory_kib(pid, "VmHWM:");

    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|worker| {
            let addr = addr.clone();
            tokio::spawn(async move {
                let mut sender = connect(&addr).await;
                let mut calls = 0;
                let mut n = 0;
                while calls < HTTP_CALLS / CONCURRENCY {
                    let id = format!("http-{worker}-{}", n % 8);
                    n += 1;
                    calls += 1;
                    if call(&mut sender, &addr, "pre-reboot", &id, "bench").await.0 == 200 {
                        let (status, _) =
                            call(&mut sender, &addr, "steady-state", &id, "bench").await;
                        assert_eq!(status, 200);
                        calls += 1;
                    }
                }
                calls
            })
        })
        .collect();
    let mut http_calls = 0;
    for task in tasks {
        http_calls += task.await.unwrap();
    }
    let load = started.elapsed();
    let rss_loaded = memory_kib(pid, "VmHWM:");
    child.kill().await.ok();

    println!("### The release binary (`fleetlock serve` on DynamoDB Local)\n");
    println!(
        "- binary size: {:.1} MiB ({size} bytes, {binary})",
        size as f64 / 1048576.0
    );
    println!(
        "- spawn to listening: {:.1} ms",
        ready.as_secs_f64() * 1000.0
    );
    println!(
        "- spawn to first answer (includes the first DynamoDB call): {:.1} ms",
        first_answer.as_secs_f64() * 1000.0
    );
    println!(
        "- peak RSS after the first answer: {} KiB",
        rss_idle.map_or("n/a".into(), |k| k.to_string())
    );
    println!(
        "- peak RSS after {CONCURRENCY} connections sent {http_calls} calls over loopback in {:.1} s ({:.0} calls/s): {} KiB",
        load.as_secs_f64(),
        http_calls as f64 / load.as_secs_f64(),
        rss_loaded.map_or("n/a".into(), |k| k.to_string())
    );
}

#[tokio::main]
async fn main() {
    if std::env::var("AWS_ENDPOINT_URL").is_err() {
        eprintln!("AWS_ENDPOINT_URL is unset: run ./scripts/bench, which starts DynamoDB Local");
        std::process::exit(2);
    }
    // `BENCH_ONLY=returns`: the return gate's table alone.
    if std::env::var("BENCH_ONLY").is_ok_and(|only| only == "returns") {
        return_write_units().await;
        return;
    }
    // `BENCH_ONLY=waves`: zones and the canary's table alone.
    if std::env::var("BENCH_ONLY").is_ok_and(|only| only == "waves") {
        zones_and_waves_write_units().await;
        return;
    }
    // One at a time shows the latency of a call; 32 at a time, throughput.
    in_process(1, 2_000).await;
    in_process(CONCURRENCY, 20_000).await;
    requests_per_answer_kind().await;
    take_over_write_units().await;
    drain_write_units().await;
    return_write_units().await;
    zones_and_waves_write_units().await;
    cpu_per_call().await;
    write_units_by_group_size(
        "Write units per call by holders in the group (32-hex ids, as Zincati's)",
        |n| format!("{n:032x}"),
        &[1, 5, 10, 15, 20, 23, 24, 30, 40, 50, 75, 100],
    )
    .await;
    // The longest id accepted, up to the most slots a group may have: the
    // most a call can cost.
    write_units_by_group_size(
        "Write units per call by holders in the group (128-byte ids, the longest accepted)",
        |n| format!("{n:0128x}"),
        &[1, 7, 8, 50, 100, 250, 500],
    )
    .await;
    slot_events_cpu().await;
    release_binary().await;
}

/// Takes every event and fails none: what the slot-events function spends
/// itself, without EventBridge's round trips.
struct NullSink;

impl fleetlock::domain::events::EventSink for NullSink {
    async fn put(
        &self,
        entries: &[fleetlock::domain::events::Outgoing],
    ) -> Result<Vec<Option<String>>, fleetlock::domain::events::PutFailed> {
        Ok(vec![None; entries.len()])
    }
}

/// CPU of the slot-events handler per stream record: read both images, diff
/// them, build the events. Records as Lambda delivers them, each a grant in a
/// group of `holders` holders.
async fn slot_events_cpu() {
    use serde_json::json;
    const BATCHES: usize = 200;
    const RECORDS: usize = 100;
    println!(
        "### Slot events: CPU per stream record ({BATCHES} batches of {RECORDS}, EventBridge not counted)\n"
    );
    println!("| holders in the item | CPU per record, µs | events per record |");
    println!("|---:|---:|---:|");
    let handler = fleetlock::entry::slot_events::SlotEvents::new(NullSink);
    for holders in [1usize, 10, 50] {
        let image = |count: usize| {
            let mut item = json!({
                "group": { "S": "workers" },
                "holder_count": { "N": count.to_string() },
                "slots": { "N": "50" },
            });
            for n in 0..count {
                item[format!("h:{n:032x}")] = json!({ "N": "1764479529042" });
            }
            item
        };
        let record = |n: usize| {
            json!({
                "eventID": format!("{n:032x}"),
                "eventName": "MODIFY",
                "eventVersion": "1.1",
                "eventSource": "aws:dynamodb",
                "awsRegion": "eu-west-1",
                "dynamodb": {
                    "ApproximateCreationDateTime": 1_764_479_529.0,
                    "Keys": { "group": { "S": "workers" } },
                    "OldImage": image(holders - 1),
                    "NewImage": image(holders),
                    "SequenceNumber": format!("{n:021}"),
                    "SizeBytes": 100 + 42 * holders,
                    "StreamViewType": "NEW_AND_OLD_IMAGES",
                },
                "eventSourceARN": "arn:aws:dynamodb:eu-west-1:123456789012:table/fleetlock/stream/2026-11-30T00:00:00.000",
            })
        };
        let batch = json!({ "Records": (0..RECORDS).map(record).collect::<Vec<_>>() });
        let cpu = process_cpu();
        let mut events = 0;
        for _ in 0..BATCHES {
            let report = handler.handle(&batch).await;
            assert_eq!(report.unreadable_records, 0);
            events += report.events_put;
        }
        let cpu = process_cpu() - cpu;
        let records = (BATCHES * RECORDS) as f64;
        println!(
            "| {holders} | {:.1} | {:.2} |",
            cpu.as_secs_f64() * 1e6 / records,
            events as f64 / records
        );
    }
    println!();
}
