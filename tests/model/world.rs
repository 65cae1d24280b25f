//! One group and the world around it: the service itself over the memory
//! store, a clock the model moves, and every step the world may take. A state
//! is the group's record, the time, the settings in force, what each node was
//! told and a retried write still to land; [`World::apply`] takes one step
//! from a state and says what happened.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use fleetlock::domain::error::Error;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::{ClientParams, GroupName, IdRule, NodeId, PauseReason};
use fleetlock::domain::lock::{
    ByPerson, Drained, GroupRecord, OnDrainTimeout, Pause, Returned, RolloutStop, Semaphore,
};
use fleetlock::domain::service::{Answer, FleetLock, Grant, Outcome};
use fleetlock::domain::store::Decisions;
use fleetlock::domain::store::LockStore;
use fleetlock::domain::time::Timestamp;
use fleetlock::domain::windows::{Schedule, WindowState};
use fleetlock::store::memory::MemoryStore;
use fleetlock::test_support::ManualClock;

/// The model's unit of time: every timeout is a whole number of them (the
/// shortest lease the server takes is 30 minutes). Between two steps in one
/// unit the clock moves by a millisecond.
pub const UNIT: u64 = 30 * 60 * 1000;
/// Monday 2026-11-30T00:00:00Z: the day the window below opens on.
pub const START: u64 = 1_795_996_800_000;
/// What the settings give each feature, in units: a settle time of one, a
/// lease, a drain timeout and a return timeout of two.
const SETTLE: &str = "30m";
const TIMEOUT: &str = "1h";
/// A canary, then a wave of one, then the rest: a bake of one unit, a
/// wave's node back within two.
pub const CANARY: &str = "30m:1+1:1h";
/// The window, when a bound has one, of [`WINDOW_MINUTES`]: 00:30 to 02:00
/// UTC every day, units 1 to 3 of the day: closed at the start, open a unit
/// later, too short for a drain begun from its second unit on, closed again
/// from the fourth.
const WINDOW: &str = "workers: days=Mon,Tue,Wed,Thu,Fri,Sat,Sun start_time=00:30";
pub const WINDOW_MINUTES: u32 = 90;
/// A confirmation a hook sends for a reservation or a return that has ended:
/// the rules compare the time it names with the one stored, and no stored
/// time is ever this one.
const ENDED: Timestamp = Timestamp(1);

/// Which features the group has, and which of the world's moves are allowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    pub lease: bool,
    pub drain: Option<OnDrainTimeout>,
    pub returns: bool,
    pub settle: bool,
    /// The window's length in minutes, if the group has one.
    pub window: Option<u32>,
    /// A person pauses and resumes the group.
    pub pause: bool,
    /// A person excludes a node and lets it in again.
    pub exclusion: bool,
    /// The settings change while the service runs: the slots, and the gates
    /// removed.
    pub live_changes: bool,
    /// An answer is lost on its way to the node.
    pub lost_answers: bool,
    /// A write's retry lands late, after newer writes.
    pub late_writes: bool,
    /// A person releases a slot by hand, or confirms a drain or a return.
    pub person: bool,
    /// The group is split by zone: node n asks as `workers.z{n % 2}`.
    pub zones: bool,
    /// The group has a canary ([`CANARY`]; a gate the settings may remove).
    pub canary: bool,
    /// A `*` beside the group, and the last node asks with a name the
    /// group could mean ([`World::asked_group`]): never a group of its own.
    pub twins: bool,
}

/// How far the exploration goes: the group, its features, and how many units
/// of time may pass.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub nodes: usize,
    pub slots: u32,
    pub features: Features,
    /// Units of time that may pass.
    pub horizon: u64,
    /// Steps from the start: states further away are not explored.
    pub depth: usize,
}

/// A write a node or a hook sent whose answer was lost, and whose retry (or
/// first attempt) lands later than newer writes: what it was and when it was
/// sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    PreReboot(usize),
    SteadyState(usize),
    Drained(usize, Option<Timestamp>),
    Returned(usize, Option<Timestamp>),
    Release(usize),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub record: GroupRecord,
    pub now: Timestamp,
    /// Which settings are in force: 0 as configured, 1 with the slots
    /// changed, 2 without the gates and without the zones (switched on
    /// again over the slots taken meanwhile).
    pub settings: usize,
    /// Nodes out of service: told 2xx to a pre-reboot, and not back in
    /// service yet (with a return gate, until their return is confirmed).
    /// Kept from what the nodes heard and did, not read from the record.
    pub told_yes: BTreeSet<usize>,
    /// A write still to land, sent at the time given.
    pub late: Option<(Request, Timestamp)>,
}

/// One move of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A node's request; `heard`: the answer reached it; `late`: a copy of
    /// the write lands again later (an SDK retry after a lost answer).
    Send {
        request: Request,
        heard: bool,
        late: bool,
    },
    /// The write kept back lands now, with the time it was sent; nobody
    /// hears its answer.
    LateWrite,
    Pause,
    Resume,
    Exclude(usize),
    Include(usize),
    /// The drained function's sweep: overdue returns stop the group.
    Sweep,
    /// A person's `fleetlock begin-rollout` (a group with a canary).
    BeginRollout,
    /// A person's `fleetlock forget`: the group's item deleted, unless it
    /// holds a slot, a pause or a stop.
    Forget,
    Settings(usize),
    /// A unit of time passes.
    Tick,
}

/// What a step did, as the checks read it.
#[derive(Clone, Debug)]
pub enum Heard {
    PreReboot(usize, Result<Answer, Error>),
    SteadyState(Result<Answer, Error>),
    Drained(usize, Drained),
    Returned(Returned),
    Released(bool),
    Other,
}

impl Heard {
    /// The answer's word: an outcome, a refusal's kind, or what a hook heard.
    pub fn word(&self) -> String {
        match self {
            Heard::PreReboot(_, Ok(answer)) | Heard::SteadyState(Ok(answer)) => {
                match &answer.refusal {
                    Some(refusal) => refusal.kind().to_owned(),
                    None => answer.outcome.as_str().to_owned(),
                }
            }
            Heard::PreReboot(_, Err(err)) | Heard::SteadyState(Err(err)) => err.kind().to_owned(),
            Heard::Drained(_, outcome) => format!("{outcome:?}"),
            Heard::Returned(outcome) => format!("{outcome:?}"),
            Heard::Released(freed) => if *freed { "released" } else { "not held" }.into(),
            Heard::Other => String::new(),
        }
    }
}

/// A store the model puts each state it explores into before a step, and
/// reads the group back from after it: the memory store, or the DynamoDB
/// store on DynamoDB Local (tests/model/dynamodb.rs).
pub trait ModelStore: LockStore {
    fn put(&self, group: &GroupName, record: &GroupRecord) -> impl Future<Output = ()>;
    fn get(&self, group: &GroupName) -> impl Future<Output = GroupRecord>;
}

impl ModelStore for MemoryStore {
    async fn put(&self, group: &GroupName, record: &GroupRecord) {
        self.put_record(group, record.clone());
    }

    async fn get(&self, group: &GroupName) -> GroupRecord {
        self.record(group)
    }
}

pub struct World<S: ModelStore = MemoryStore> {
    pub bounds: Bounds,
    pub group: GroupName,
    pub nodes: Vec<NodeId>,
    clock: ManualClock,
    /// One service per settings: as configured, slots changed, no gates.
    services: Vec<FleetLock<S>>,
    windows: Schedule,
    runtime: tokio::runtime::Runtime,
}

impl World {
    pub fn new(bounds: Bounds) -> Self {
        World::on(bounds, MemoryStore::default)
    }
}

impl<S: ModelStore> World<S> {
    /// The world of `bounds`, each of its services on a store `store` makes.
    pub fn on(bounds: Bounds, store: impl Fn() -> S) -> Self {
        let features = bounds.features;
        let clock = ManualClock::at(Timestamp(START));
        let windows = || match features.window {
            Some(minutes) => {
                let spec = format!("{WINDOW} length_minutes={minutes}");
                Schedule::parse(&spec, Some("UTC"), |_| Ok(()), false).unwrap()
            }
            None => Schedule::default(),
        };
        let service = |slots: u32, gates: bool| {
            let spec = match features.twins {
                true => format!("workers={slots},*={slots}"),
                false => format!("workers={slots}"),
            };
            let mut groups = GroupSlots::parse(&spec).unwrap();
            if features.settle {
                groups = groups
                    .with_setting("FLEETLOCK_SETTLE", &format!("workers={SETTLE}"))
                    .unwrap();
            }
            if features.lease {
                groups = groups
                    .with_setting("FLEETLOCK_LEASE", &format!("workers={TIMEOUT}"))
                    .unwrap();
            }
            if let (true, Some(on_timeout)) = (gates, features.drain) {
                let spec = format!("workers={TIMEOUT}:{}", on_timeout.as_str());
                groups = groups.with_setting("FLEETLOCK_DRAIN", &spec).unwrap();
            }
            if gates && features.returns {
                groups = groups
                    .with_setting("FLEETLOCK_RETURN", &format!("workers={TIMEOUT}"))
                    .unwrap();
            }
            if gates && features.canary {
                groups = groups
                    .with_setting("FLEETLOCK_CANARY", &format!("workers={CANARY}"))
                    .unwrap();
            }
            if gates && features.zones {
                groups = groups.with_zones("workers").unwrap();
            }
            FleetLock::new(groups, store())
                .with_windows(windows())
                .with_clock(clock.clone())
        };
        let changed = if bounds.slots > 1 {
            bounds.slots - 1
        } else {
            2
        };
        let services = vec![
            service(bounds.slots, true),
            service(changed, true),
            service(bounds.slots, false),
        ];
        Self {
            bounds,
            group: GroupName::parse("workers").unwrap(),
            nodes: (1..=bounds.nodes)
                .map(|n| NodeId::parse(&format!("n{n}")).unwrap())
                .collect(),
            clock,
            services,
            windows: windows(),
            // Timers and I/O for the DynamoDB store's client.
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    pub fn initial(&self) -> State {
        State {
            record: GroupRecord::default(),
            now: Timestamp(START),
            settings: 0,
            told_yes: BTreeSet::new(),
            late: None,
        }
    }

    /// The slots of the settings in force.
    pub fn slots(&self, settings: usize) -> u32 {
        match settings {
            1 if self.bounds.slots > 1 => self.bounds.slots - 1,
            1 => 2,
            _ => self.bounds.slots,
        }
    }

    /// The canary of the settings in force, if they have one.
    pub fn canary(&self, settings: usize) -> Option<fleetlock::domain::canary::CanaryRule> {
        (self.bounds.features.canary && settings != 2)
            .then(|| fleetlock::domain::lock::parse_canary(CANARY).unwrap())
    }

    /// The zone node `n` is in, as its zone group, in a world with zones
    /// (whether or not the settings in force split the group).
    pub fn zone_of(&self, n: usize) -> Option<String> {
        self.bounds
            .features
            .zones
            .then(|| format!("workers.z{}", n % 2))
    }

    /// Whether the settings in force split the group by zone.
    pub fn zones(&self, settings: usize) -> bool {
        self.bounds.features.zones && settings != 2
    }

    /// Whether the settings in force have a return gate.
    pub fn returns(&self, settings: usize) -> bool {
        self.bounds.features.returns && settings != 2
    }

    /// Whether the group's window is open at `at`.
    pub fn window_open(&self, at: Timestamp) -> bool {
        !matches!(
            self.windows.state(&self.group, at),
            WindowState::Closed { .. }
        )
    }

    /// Every step the world may take from `state` within the bounds.
    pub fn steps(&self, state: &State) -> Vec<Step> {
        let f = self.bounds.features;
        let mut steps = Vec::new();
        let heard: &[bool] = if f.lost_answers {
            &[true, false]
        } else {
            &[true]
        };
        let late: &[bool] = if f.late_writes && state.late.is_none() {
            &[false, true]
        } else {
            &[false]
        };
        let send = |steps: &mut Vec<Step>, request: Request, only_heard: bool| {
            for &heard in heard.iter().filter(|h| **h || !only_heard) {
                for &late in late {
                    steps.push(Step::Send {
                        request,
                        heard,
                        late,
                    });
                }
            }
        };
        for (n, node) in self.nodes.iter().enumerate() {
            send(&mut steps, Request::PreReboot(n), false);
            // A lost answer to a steady-state changes nothing the node knows.
            send(&mut steps, Request::SteadyState(n), true);
            if let Some(&since) = state.record.draining.get(node) {
                send(&mut steps, Request::Drained(n, Some(since)), true);
                send(&mut steps, Request::Drained(n, Some(ENDED)), true);
                if f.person {
                    send(&mut steps, Request::Drained(n, None), true);
                }
            }
            if let Some(&since) = state.record.returning.get(node) {
                send(&mut steps, Request::Returned(n, Some(since)), true);
                send(&mut steps, Request::Returned(n, Some(ENDED)), true);
                if f.person {
                    send(&mut steps, Request::Returned(n, None), true);
                }
            }
            if f.person && state.record.holders.holds(node) {
                send(&mut steps, Request::Release(n), true);
            }
            if f.exclusion {
                steps.push(match state.record.excluded.contains_key(node) {
                    true => Step::Include(n),
                    false => Step::Exclude(n),
                });
            }
        }
        if state.late.is_some() {
            steps.push(Step::LateWrite);
        }
        if f.pause {
            steps.push(match state.record.pause.person.is_some() {
                true => Step::Resume,
                false => Step::Pause,
            });
        }
        if state.record.pause.stop.is_some() {
            steps.push(Step::Resume);
        }
        if f.returns || f.canary {
            steps.push(Step::Sweep);
        }
        if f.person {
            steps.push(Step::Forget);
            if f.canary {
                steps.push(Step::BeginRollout);
            }
        }
        if f.live_changes {
            steps.extend((0..3).filter(|s| *s != state.settings).map(Step::Settings));
        }
        if (state.now.0 - START) / UNIT < self.bounds.horizon {
            steps.push(Step::Tick);
        }
        steps
    }

    /// Takes `step` from `state`: the state after it, and what was heard.
    pub fn apply(&self, state: &State, step: Step) -> (State, Heard) {
        let mut next = state.clone();
        if step == Step::Tick {
            let tick = (state.now.0 - START) / UNIT + 1;
            next.now = Timestamp(START + tick * UNIT);
            return (next, Heard::Other);
        }
        // Every step happens a millisecond after the one before.
        next.now = Timestamp(state.now.0 + 1);
        let heard = match step {
            Step::Send {
                request,
                heard,
                late,
            } => {
                if late {
                    next.late = Some((request, next.now));
                }
                let (record, answer) =
                    self.request(&state.record, state.settings, request, next.now);
                next.record = record;
                if heard
                    && let Heard::PreReboot(n, Ok(answer)) = &answer
                    && answer.refusal.is_none()
                {
                    next.told_yes.insert(*n);
                }
                answer
            }
            Step::LateWrite => {
                let (request, sent) = next.late.take().expect("a late write to land");
                let (record, answer) = self.request(&state.record, state.settings, request, sent);
                next.record = record;
                answer
            }
            Step::Settings(settings) => {
                next.settings = settings;
                Heard::Other
            }
            _ => {
                next.record = self.person(&state.record, step, next.now);
                Heard::Other
            }
        };
        // The nodes out of service, as the nodes live it, not as the record
        // says: a node told yes is out until it is back in service. Back:
        // its steady-state, sent after its grant, landed and did not leave
        // its slot returning; or its return was confirmed; or, by design, a
        // person released its slot or another node took it over past its
        // lease. The checks hold the record to these nodes.
        let landed = match step {
            Step::Send { request, .. } => Some((request, next.now)),
            Step::LateWrite => state.late,
            _ => None,
        };
        let freed = |n: usize| !next.record.holders.holds(&self.nodes[n]);
        let back = match landed {
            // With the return gate in force, its steady-state says it
            // booted, not that it is back in service: that takes the
            // confirmation, whatever the record did with the slot.
            Some((Request::SteadyState(n), sent)) => {
                let granted = state.record.holders.held_since(&self.nodes[n]);
                (granted.is_some_and(|at| at <= sent) && !self.returns(state.settings)).then_some(n)
            }
            Some((Request::Returned(n, _) | Request::Release(n), _)) if freed(n) => Some(n),
            _ => None,
        };
        if let Some(n) = back {
            next.told_yes.remove(&n);
        }
        if let Heard::PreReboot(_, Ok(answer)) = &heard
            && let Some(expired) = &answer.expired
            && let Some(m) = self.nodes.iter().position(|node| *node == expired.holder)
        {
            next.told_yes.remove(&m);
        }
        (next.canonical(), heard)
    }

    /// A request through the service (or, for a hook and a person, through
    /// the store as the drained function and the CLI call it), at `at`.
    fn request(
        &self,
        record: &GroupRecord,
        settings: usize,
        request: Request,
        at: Timestamp,
    ) -> (GroupRecord, Heard) {
        let service = &self.services[settings];
        let store = service.store();
        self.clock.set(at);
        let group = &self.group;
        self.runtime.block_on(async {
            store.put(group, record).await;
            let heard = match request {
                Request::PreReboot(n) => {
                    Heard::PreReboot(n, service.pre_reboot(&self.params(n, settings)).await)
                }
                Request::SteadyState(n) => {
                    Heard::SteadyState(service.steady_state(&self.params(n, settings)).await)
                }
                Request::Drained(n, since) => {
                    let decided = store.drained(group, &self.nodes[n], since, at).await;
                    Heard::Drained(n, decided.unwrap().outcome)
                }
                Request::Returned(n, since) => {
                    let decided = store.returned(group, &self.nodes[n], since, at).await;
                    Heard::Returned(decided.unwrap().outcome)
                }
                Request::Release(n) => {
                    let decided = store.release(group, &self.nodes[n], false, at).await;
                    let outcome = decided.unwrap().outcome;
                    Heard::Released(outcome == fleetlock::domain::lock::Release::Released)
                }
            };
            (store.get(group).await, heard)
        })
    }

    /// A person's pause, resume, exclusion, inclusion, begin-rollout or
    /// forget, or the sweep.
    fn person(&self, record: &GroupRecord, step: Step, at: Timestamp) -> GroupRecord {
        let store = self.services[0].store();
        let group = &self.group;
        let who = || ByPerson {
            reason: PauseReason::parse("model").unwrap(),
            since: at,
            by: "model".into(),
        };
        self.runtime.block_on(async {
            store.put(group, record).await;
            match step {
                Step::Pause => drop(store.pause(group, who()).await.unwrap()),
                Step::Resume => drop(store.resume(group).await.unwrap()),
                Step::Exclude(n) => {
                    drop(store.exclude(group, &self.nodes[n], who()).await.unwrap())
                }
                Step::Include(n) => drop(store.include(group, &self.nodes[n]).await.unwrap()),
                Step::BeginRollout => drop(store.begin_rollout(group, at).await.unwrap()),
                Step::Forget => drop(store.forget(group).await.unwrap()),
                Step::Sweep => {
                    // As the drained function's sweep: each canary's wave
                    // and each return overdue and not yet judged stops the
                    // group, one write each.
                    if let Some(canary) = self.canary(0) {
                        for (id, granted) in record.waves_overdue(canary, at) {
                            store
                                .stop_rollout(
                                    group,
                                    &id,
                                    granted,
                                    fleetlock::domain::lock::StopCause::Wave,
                                    at,
                                )
                                .await
                                .unwrap();
                        }
                    }
                    let record = store.get(group).await;
                    let timeout = Duration::from_millis(2 * UNIT);
                    for (id, since) in record.returns_overdue(timeout, at) {
                        store
                            .stop_rollout(
                                group,
                                &id,
                                since,
                                fleetlock::domain::lock::StopCause::Return,
                                at,
                            )
                            .await
                            .unwrap();
                    }
                }
                _ => unreachable!("not a person's step: {step:?}"),
            }
            store.get(group).await
        })
    }

    /// How many nodes the server serves, the first ones: a twin (the last
    /// node of a world with twins) is refused by design, and liveness asks
    /// only that the others are granted.
    pub fn served(&self) -> usize {
        self.nodes.len() - usize::from(self.bounds.features.twins)
    }

    /// The group name node `n` asks with under `settings`: its zone group
    /// where they split the group by zone (its zone unit keeps it in step),
    /// else the group's; for the last node of a world with twins, a name
    /// the group could mean beside its `*`: its zone group's case twin, or
    /// a zone of the group when it is not split.
    pub fn asked_group(&self, n: usize, settings: usize) -> String {
        let twin = self.bounds.features.twins && n + 1 == self.bounds.nodes;
        let zone = self.zone_of(n).filter(|_| self.zones(settings));
        match (zone, twin) {
            (Some(zone), true) => zone.replacen("workers", "Workers", 1),
            (None, true) => format!("workers.z{}", n % 2),
            (Some(zone), false) => zone,
            (None, false) => "workers".into(),
        }
    }

    fn params(&self, n: usize, settings: usize) -> ClientParams {
        let group = self.asked_group(n, settings);
        let body = format!(
            "{{\"client_params\": {{\"id\": \"{}\", \"group\": \"{group}\"}}}}",
            self.nodes[n]
        );
        ClientParams::from_body(body.as_bytes(), IdRule::New).unwrap()
    }
}

impl State {
    /// The same state with its times renumbered: within each unit, the
    /// distinct times keep their order and become 1, 2, 3... (a unit's
    /// start stays 0). Every rule compares times with each other or with
    /// whole units, so two states that differ only there decide alike.
    pub fn canonical(mut self) -> State {
        let mut times = BTreeSet::new();
        retime(&self.record, &mut |at| {
            times.insert(at);
            at
        });
        times.insert(self.now);
        if let Some((_, at)) = self.late {
            times.insert(at);
        }
        let mut renumbered = BTreeMap::new();
        let mut last_unit = None;
        let mut rank = 0;
        for at in times {
            if at.0 < START {
                renumbered.insert(at, at);
                continue;
            }
            let (unit, offset) = ((at.0 - START) / UNIT, (at.0 - START) % UNIT);
            if last_unit != Some(unit) {
                last_unit = Some(unit);
                rank = 0;
            }
            if offset > 0 {
                rank += 1;
            }
            renumbered.insert(at, Timestamp(START + unit * UNIT + rank));
        }
        let map = |at: Timestamp| renumbered[&at];
        self.record = retime(&self.record, &mut |at| map(at));
        // Times no rule reads within the bounds (they are shown to people, or
        // age out after a day) are all the start: states that differ only
        // there decide alike.
        let shown = |p: &mut ByPerson| p.since = Timestamp(START);
        self.record.pause.person.as_mut().map(shown);
        self.record.excluded.values_mut().for_each(shown);
        if let Some(stop) = self.record.pause.stop.as_mut() {
            stop.at = Timestamp(START);
        }
        self.record
            .taken
            .values_mut()
            .for_each(|at| *at = Timestamp(START));
        self.now = map(self.now);
        if let Some((request, at)) = self.late {
            self.late = Some((request, map(at)));
        }
        self
    }
}

/// The record with every time in it passed through `f`. Written out field by
/// field, so that a new field of a group fails to compile here until the
/// model knows it.
fn retime(record: &GroupRecord, f: &mut impl FnMut(Timestamp) -> Timestamp) -> GroupRecord {
    let GroupRecord {
        holders,
        pause,
        last_release,
        slots,
        excluded,
        draining,
        renewed,
        taken,
        returning,
        returns_failed,
        zone,
        wave_grants,
        rollout_began,
    } = record;
    let mut times = |map: &BTreeMap<NodeId, Timestamp>| -> BTreeMap<NodeId, Timestamp> {
        map.iter().map(|(id, at)| (id.clone(), f(*at))).collect()
    };
    let (draining, renewed, taken, returning, returns_failed) = (
        times(draining),
        times(renewed),
        times(taken),
        times(returning),
        times(returns_failed),
    );
    let holders = Semaphore::from_holders(holders.holders().map(|(id, at)| (id.clone(), f(at))));
    let mut person = |p: &ByPerson| ByPerson {
        since: f(p.since),
        ..p.clone()
    };
    let excluded = excluded
        .iter()
        .map(|(id, exclusion)| (id.clone(), person(exclusion)))
        .collect();
    let pause = Pause {
        person: pause.person.as_ref().map(&mut person),
        alarms: pause.alarms.clone(),
        stop: pause.stop.as_ref().map(|stop| RolloutStop {
            id: stop.id.clone(),
            returning_since: f(stop.returning_since),
            at: f(stop.at),
            cause: stop.cause,
        }),
    };
    GroupRecord {
        holders,
        pause,
        last_release: last_release.map(&mut *f),
        slots: *slots,
        excluded,
        draining,
        renewed,
        taken,
        returning,
        returns_failed,
        zone: zone.clone(),
        wave_grants: *wave_grants,
        rollout_began: rollout_began.map(&mut *f),
    }
}

/// The outcomes that give a node a slot it did not hold: what no pause,
/// exclusion or closed window may let through.
pub fn takes_a_slot(outcome: &Outcome) -> bool {
    matches!(
        outcome,
        Outcome::Granted(Grant::Free)
            | Outcome::TakenOver
            | Outcome::Granted(Grant::DrainTimedOut)
            | Outcome::Reserved
    )
}
