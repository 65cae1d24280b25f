//! Every state a group can reach within the bounds, breadth first, and the
//! promise checked on every step: a violation comes back as the shortest
//! sequence of steps that reaches it.

use std::collections::{BTreeSet, HashSet};
use std::hash::{Hash, Hasher};

use fleetlock::domain::input::NodeId;

use crate::world::{Heard, Request, START, State, Step, UNIT, World, takes_a_slot};

/// Past this many states a run stops: its bounds are wider than a test's
/// (about 1.7 KB a state: two deep bounds at once stay under 17 GB).
const MOST_STATES: usize = 5_000_000;

/// What a run covered.
#[derive(Debug, Default)]
pub struct Explored {
    pub states: usize,
    pub steps: usize,
    /// The deepest state, in steps from the start.
    pub depth: usize,
    /// Steps in which a node told yes lost its slot by design: a lease's
    /// take-over or a person's release. Counted apart, never as a breach.
    pub displaced: usize,
    /// The longest a fair run took to grant every node, in steps.
    pub longest_fair_run: usize,
}

/// A broken promise, and how to get there.
#[derive(Debug)]
pub struct Violation {
    pub check: &'static str,
    pub why: String,
    pub trace: Vec<String>,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}: {}", self.check, self.why)?;
        for (n, line) in self.trace.iter().enumerate() {
            writeln!(f, "  {:>2}. {line}", n + 1)?;
        }
        Ok(())
    }
}

/// How a run ends: the checks to make, and whether liveness is one.
#[derive(Clone, Copy, Debug)]
pub struct Checks {
    pub liveness: bool,
}

/// Explores every state reachable from the start within the world's bounds.
pub fn explore(world: &World, checks: Checks) -> Result<Explored, Box<Violation>> {
    let mut explored = Explored::default();
    let mut seen = HashSet::new();
    // Fair runs known to grant everyone, by their position (state, granted,
    // refused this unit): a run that reaches one stops there.
    let mut live = HashSet::new();
    // Each state once, with the state it was first reached from and how.
    let mut reached: Vec<(State, usize, Option<Step>, usize)> = Vec::new();
    let initial = world.initial();
    seen.insert(fingerprint(&initial));
    reached.push((initial, 0, None, 0));
    let mut next = 0;
    while next < reached.len() {
        let (state, depth) = (reached[next].0.clone(), reached[next].3);
        explored.depth = explored.depth.max(depth);
        if checks.liveness {
            match everyone_granted(world, &state, &mut live) {
                Ok(steps) => explored.longest_fair_run = explored.longest_fair_run.max(steps),
                Err((check, why, fair)) => {
                    let mut trace = trace_to(world, &reached, next);
                    trace.push("-- from here on every node and hook behaves:".into());
                    trace.extend(fair);
                    return Err(Box::new(Violation { check, why, trace }));
                }
            }
        }
        let steps = match depth < world.bounds.depth {
            true => world.steps(&state),
            false => Vec::new(),
        };
        for step in steps {
            let (after, heard) = world.apply(&state, step);
            explored.steps += 1;
            match check_step(world, &state, step, &heard, &after) {
                Ok(displaced) => explored.displaced += usize::from(displaced),
                Err((check, why)) => {
                    let mut trace = trace_to(world, &reached, next);
                    trace.push(describe(world, &state, step, &heard));
                    return Err(Box::new(Violation { check, why, trace }));
                }
            }
            if seen.insert(fingerprint(&after)) {
                reached.push((after, next, Some(step), depth + 1));
            }
        }
        next += 1;
        if std::env::var_os("FLEETLOCK_MODEL_PROGRESS").is_some() && next % 2_000 == 0 {
            eprintln!("{next} explored, {} reached, depth {depth}", reached.len());
        }
        if reached.len() > MOST_STATES {
            panic!(
                "over {MOST_STATES} states after {next} explored (depth {depth}): bounds too wide"
            );
        }
    }
    explored.states = reached.len();
    Ok(explored)
}

/// A 128-bit fingerprint of a state: states are kept once each, by it.
fn fingerprint(state: &impl Hash) -> u128 {
    let mut first = std::collections::hash_map::DefaultHasher::new();
    state.hash(&mut first);
    let mut second = std::collections::hash_map::DefaultHasher::new();
    0xF1EE_710Cu32.hash(&mut second);
    state.hash(&mut second);
    (u128::from(first.finish()) << 64) | u128::from(second.finish())
}

/// The promise, on one step from `before` to `after`. `Ok(true)`: a node
/// told yes lost its slot by design in this step.
fn check_step(
    world: &World,
    before: &State,
    step: Step,
    heard: &Heard,
    after: &State,
) -> Result<bool, (&'static str, String)> {
    let slots = world.slots(before.settings) as usize;
    let (was, is) = (before.record.holders.len(), after.record.holders.len());
    // Past the slots only where a lowered count found more nodes out of
    // service already (reserved ones granted): nobody more goes down.
    let told = after.told_yes.len();
    if told > before.told_yes.len() && told > slots && told > was {
        return Err((
            "told_yes",
            format!(
                "{} nodes told yes that have not given their slot back, with {slots} slots",
                after.told_yes.len()
            ),
        ));
    }
    if is > was && is > slots {
        return Err((
            "out_of_service",
            format!("{is} nodes reserved, holding or returning with {slots} slots"),
        ));
    }
    // One zone at a time: while the settings split the group, no step
    // brings a node out (reserved, holding or returning) beside a node of
    // another zone. Zones are where the nodes are, whatever the record
    // says (a slot taken before the split recorded none). A state where
    // the zones were switched on over nodes of two zones out is no
    // violation until a step adds one more.
    if world.zones(before.settings) {
        let zones_out = |state: &State| -> (BTreeSet<usize>, BTreeSet<String>, BTreeSet<String>) {
            let position = |id: &NodeId| world.nodes.iter().position(|node| node == id);
            let held: BTreeSet<usize> = state
                .record
                .holders
                .holders()
                .filter_map(|(id, _)| position(id))
                .collect();
            let reserved = state.record.draining.keys().filter_map(position);
            let out: BTreeSet<usize> = state.told_yes.iter().copied().chain(reserved).collect();
            let in_zones =
                |nodes: &BTreeSet<usize>| nodes.iter().filter_map(|n| world.zone_of(*n)).collect();
            let (recorded, out_zones) = (in_zones(&held), in_zones(&out));
            (out.union(&held).copied().collect(), recorded, out_zones)
        };
        let (was_out, ..) = zones_out(before);
        let (is_out, recorded, out) = zones_out(after);
        if !is_out.is_subset(&was_out) {
            for zones in [recorded, out] {
                if zones.len() > 1 {
                    return Err(("one_zone", format!("nodes of {zones:?} out at once")));
                }
            }
        }
    }
    // When the request this step carries was sent, in the times of
    // `before` (those of `after` are renumbered).
    let sent = match (step, before.late) {
        (Step::LateWrite, Some((_, at))) => at,
        _ => fleetlock::domain::time::Timestamp(before.now.0 + 1),
    };
    match heard {
        Heard::PreReboot(n, Ok(answer)) => {
            let id = &world.nodes[*n];
            let record = &after.record;
            if answer.refusal.is_none() {
                if !world.window_open(sent) {
                    return Err(("grant_allowed", "a 2xx outside the window".into()));
                }
                // A returning slot counts as held; only with the return gate
                // in force does its node hear that it waits for its return.
                if !record.holders.holds(id)
                    || record.draining.contains_key(id)
                    || (record.returning.contains_key(id) && world.returns(before.settings))
                {
                    return Err((
                        "yes_holds",
                        format!(
                            "a 2xx ({}) to a node that holds no granted slot",
                            heard.word()
                        ),
                    ));
                }
            }
            if takes_a_slot(&answer.outcome) {
                let why = if before.record.pause.is_paused() {
                    Some("paused or stopped")
                } else if before.record.excluded.contains_key(id) {
                    Some("excluded")
                } else if !world.window_open(sent) {
                    Some("outside the window")
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err((
                        "grant_allowed",
                        format!("{} while the group was {why}", heard.word()),
                    ));
                }
            }
            if let (true, Some(canary)) =
                (takes_a_slot(&answer.outcome), world.canary(before.settings))
            {
                // Every wave before the rest is one node (world::CANARY):
                // such a grant finds no other node out; and a wave after
                // the canary begins a bake after the last slot came back.
                let grants = after.record.wave_grants.unwrap_or(0);
                let others = before
                    .record
                    .holders
                    .holders()
                    .filter(|(holder, _)| *holder != id)
                    .count();
                if canary.wave_of(grants).index.is_some() && others > 0 {
                    return Err((
                        "wave_alone",
                        format!(
                            "{} in a wave of one (rollout grant {grants}) while {others} \
                             other nodes were out",
                            heard.word()
                        ),
                    ));
                }
                let baked = before
                    .record
                    .last_release
                    .is_none_or(|at| at.plus(canary.bake) <= sent);
                if grants >= 2 && canary.is_wave_start(grants - 1) && !baked {
                    return Err((
                        "wave_bake",
                        format!("{} began a wave before the bake was over", heard.word()),
                    ));
                }
            }
            if answer.refusal.as_ref().map(|r| r.kind()) == Some("slot_taken")
                && record.holders.holds(id)
            {
                return Err(("slot_taken", "a node told slot_taken holds a slot".into()));
            }
        }
        Heard::Drained(n, fleetlock::domain::lock::Drained::Granted) => {
            let id = &world.nodes[*n];
            if before.record.pause.is_paused() || before.record.excluded.contains_key(id) {
                return Err((
                    "grant_allowed",
                    "a drain confirmed into a slot while paused, stopped or excluded".into(),
                ));
            }
        }
        _ => {}
    }
    // Beside the record: every node out of service holds its slot there
    // (reserved, holding or returning), whatever the record did.
    for n in &after.told_yes {
        if !after.record.holders.holds(&world.nodes[*n]) {
            return Err((
                "lost_slot",
                format!(
                    "{} is out of service and its slot is counted nowhere",
                    world.nodes[*n]
                ),
            ));
        }
    }
    // A node told yes leaves that count only by giving its slot back (its
    // steady-state), or by design (a lease's take-over, a person's release).
    let mut displaced = false;
    for n in before.told_yes.difference(&after.told_yes) {
        let request = match (step, before.late) {
            (Step::Send { request, .. }, _) => Some(request),
            (Step::LateWrite, Some((request, _))) => Some(request),
            _ => None,
        };
        let taken_over = matches!(heard, Heard::PreReboot(_, Ok(answer))
            if answer.expired.as_ref().is_some_and(|e| e.holder == world.nodes[*n]));
        match request {
            // Its own steady-state, sent after it was granted: a late one
            // from before the grant gives back nothing.
            Some(Request::SteadyState(m))
                if m == *n && before.record.holders.held_since(&world.nodes[m]) <= Some(sent) => {}
            // Its return confirmed: back in service.
            Some(Request::Returned(m, _)) if m == *n => {}
            Some(Request::Release(m)) if m == *n => displaced = true,
            _ if taken_over => displaced = true,
            _ => {
                return Err((
                    "lost_slot",
                    format!(
                        "{} was told yes and lost its slot without giving it back",
                        world.nodes[*n]
                    ),
                ));
            }
        }
    }
    Ok(displaced)
}

/// From `start`, with every node and hook behaving, no pause, exclusion or
/// stop lasting, the settings as configured and time passing: every node
/// must be granted (hear a 2xx to its pre-reboot) and give its slot back.
/// `Ok`: the steps it took; `Err`: the check that failed (`liveness`, or
/// a safety check on one of its steps: every step of a fair run is checked
/// as the exploration's are), why, and the steps taken.
pub fn everyone_granted(
    world: &World,
    start: &State,
    live: &mut HashSet<u128>,
) -> Result<usize, (&'static str, String, Vec<String>)> {
    // With a drain gate a window may grant one node a day (the drain must
    // fit in what is left of it): a day per node, a day to reach the first
    // window and a day of slack.
    let most_units = (world.nodes.len() as u64 + 2) * 48;
    let most_steps = 1_500 * world.nodes.len();
    let mut state = start.clone();
    let mut granted = BTreeSet::new();
    let mut refused_now = BTreeSet::new();
    let mut trace = Vec::new();
    let mut positions = Vec::new();
    let deadline = state.now.0 + most_units * UNIT;
    let mut steps = 0;
    // A fair run that takes steps without moving time on is stuck too.
    while state.now.0 < deadline && steps < most_steps {
        let position = fingerprint(&(&state, &granted, &refused_now));
        let done = granted.len() == world.served() && state.record.holders.is_empty();
        if done || live.contains(&position) {
            live.extend(positions);
            return Ok(steps);
        }
        positions.push(position);
        let step = fair_step(world, &state, &granted, &refused_now);
        let (after, heard) = world.apply(&state, step);
        trace.push(describe(world, &state, step, &heard));
        steps += 1;
        if let Err((check, why)) = check_step(world, &state, step, &heard, &after) {
            return Err((check, why, trace));
        }
        match (&heard, step) {
            (Heard::PreReboot(n, Ok(answer)), _) if answer.refusal.is_none() => {
                granted.insert(*n);
            }
            (Heard::PreReboot(n, _), _) => {
                refused_now.insert(*n);
            }
            (_, Step::Tick) => refused_now.clear(),
            _ => {}
        }
        state = after;
    }
    let waiting: Vec<String> = (0..world.served())
        .filter(|n| !granted.contains(n))
        .map(|n| world.nodes[n].to_string())
        .collect();
    Err((
        "liveness",
        format!(
            "after {steps} well-behaved steps ({} units), not granted: {}; holding: {}",
            (state.now.0 - start.now.0) / UNIT,
            waiting.join(", "),
            state.record.holders.len()
        ),
        trace,
    ))
}

/// The next step of a well-behaved world: a late write lands, a person
/// resumes and lets every node in, the settings are as configured, each node
/// told yes reboots and reports steady-state, hooks confirm returns and
/// drains, every node not yet granted asks; when nothing else is left, time
/// passes.
fn fair_step(
    world: &World,
    state: &State,
    granted: &BTreeSet<usize>,
    refused_now: &BTreeSet<usize>,
) -> Step {
    let record = &state.record;
    let send = |request| Step::Send {
        request,
        heard: true,
        late: false,
    };
    if state.late.is_some() {
        return Step::LateWrite;
    }
    if record.pause.person.is_some() || record.pause.stop.is_some() {
        return Step::Resume;
    }
    if let Some(id) = record.excluded.keys().next() {
        let n = world.nodes.iter().position(|node| node == id).unwrap();
        return Step::Include(n);
    }
    if state.settings != 0 {
        return Step::Settings(0);
    }
    // A node out that has not said it is back says so; one returning
    // waits for its confirmation, below.
    let out = state
        .told_yes
        .iter()
        .find(|&&n| !record.returning.contains_key(&world.nodes[n]));
    if let Some(&n) = out {
        return send(Request::SteadyState(n));
    }
    for (n, id) in world.nodes.iter().enumerate() {
        if let Some(&since) = record.returning.get(id) {
            return send(Request::Returned(n, Some(since)));
        }
        if let Some(&since) = record.draining.get(id) {
            return send(Request::Drained(n, Some(since)));
        }
    }
    for n in 0..world.nodes.len() {
        let holds = record.holders.holds(&world.nodes[n]);
        if (!granted.contains(&n) || holds) && !refused_now.contains(&n) {
            return send(Request::PreReboot(n));
        }
    }
    Step::Tick
}

/// The steps from the start to the state reached `index`-th, each with what
/// was heard.
fn trace_to(
    world: &World,
    reached: &[(State, usize, Option<Step>, usize)],
    index: usize,
) -> Vec<String> {
    let mut path = Vec::new();
    let mut at = index;
    while let Some(step) = reached[at].2 {
        path.push(step);
        at = reached[at].1;
    }
    path.reverse();
    let mut state = world.initial();
    let mut trace = Vec::new();
    for step in path {
        let (after, heard) = world.apply(&state, step);
        trace.push(describe(world, &state, step, &heard));
        state = after;
    }
    trace
}

/// One step as a line of a trace: the time (units since the start, and the
/// step's order within its unit), who did what, and what was heard.
fn describe(world: &World, before: &State, step: Step, heard: &Heard) -> String {
    let at = |t: fleetlock::domain::time::Timestamp| {
        format!("{}u+{}", (t.0 - START) / UNIT, (t.0 - START) % UNIT)
    };
    let node = |n: usize| world.nodes[n].to_string();
    let since = |s: Option<fleetlock::domain::time::Timestamp>| match s {
        None => "by a person".to_owned(),
        Some(s) if s.0 < START => "for an ended one".to_owned(),
        Some(s) => format!("for {}", at(s)),
    };
    let request = |request: Request| match request {
        Request::PreReboot(n) => format!("{} pre-reboot", node(n)),
        Request::SteadyState(n) => format!("{} steady-state", node(n)),
        Request::Drained(n, s) => format!("drain of {} confirmed {}", node(n), since(s)),
        Request::Returned(n, s) => format!("return of {} confirmed {}", node(n), since(s)),
        Request::Release(n) => format!("{}'s slot released by a person", node(n)),
    };
    let what = match step {
        Step::Send {
            request: r,
            heard: h,
            late,
        } => format!(
            "{}{}{}",
            request(r),
            if h { "" } else { " (answer lost)" },
            if late {
                " (its retry will land late)"
            } else {
                ""
            }
        ),
        Step::LateWrite => match before.late {
            Some((r, sent)) => format!("late: {} sent at {} lands", request(r), at(sent)),
            None => "late write".into(),
        },
        Step::Pause => "a person pauses".into(),
        Step::Resume => "a person resumes".into(),
        Step::Exclude(n) => format!("a person excludes {}", node(n)),
        Step::Include(n) => format!("a person includes {}", node(n)),
        Step::Sweep => "the sweep runs".into(),
        Step::BeginRollout => "a person begins a rollout".into(),
        Step::Forget => "a person forgets the group".into(),
        Step::Settings(0) => "settings as configured".into(),
        Step::Settings(1) => format!("settings: {} slots", world.slots(1)),
        Step::Settings(_) => "settings: no gate, no canary, no zones".into(),
        Step::Tick => "a unit of time passes".into(),
    };
    let word = heard.word();
    let when = at(before.now);
    match word.is_empty() {
        true => format!("[{when}] {what}"),
        false => format!("[{when}] {what} -> {word}"),
    }
}
