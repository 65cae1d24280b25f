//! The rules explored exhaustively: every state one group can reach within
//! small bounds, through the service itself over the memory store with a
//! clock the model moves, checked against the promise in every step
//! (tests/model/explore.rs says which checks). A violation fails with the
//! shortest sequence of steps that reaches it.
//!
//! `cargo test --test model` runs the bounded exploration (part of
//! ./scripts/test); `scripts/model-check` runs it deeper, with
//! `FLEETLOCK_MODEL_DEEP=1`.

mod dynamodb;
mod explore;
#[allow(dead_code)]
#[path = "../common/item_layout.rs"]
mod item_layout;
#[allow(dead_code)]
#[path = "../common/role_store.rs"]
mod role_store;
mod world;

use fleetlock::domain::lock::OnDrainTimeout;

use explore::{Checks, explore};
use world::{Bounds, Features, WINDOW_MINUTES, World};

/// Deeper bounds when asked (`FLEETLOCK_MODEL_DEEP=1`): more time, a third
/// node where the bounded run has two.
fn deep() -> bool {
    std::env::var("FLEETLOCK_MODEL_DEEP").is_ok_and(|v| v == "1")
}

/// Explores `bounds` with every check, and prints what it covered.
fn check(name: &str, bounds: Bounds) {
    let world = World::new(bounds);
    let started = std::time::Instant::now();
    let liveness = std::env::var_os("FLEETLOCK_MODEL_NO_LIVENESS").is_none();
    match explore(&world, Checks { liveness }) {
        Ok(explored) => println!(
            "{name}: {} states, {} steps, depth {}, {} slots lost by design (lease or person), \
             longest fair run {} steps, in {:.1} s",
            explored.states,
            explored.steps,
            explored.depth,
            explored.displaced,
            explored.longest_fair_run,
            started.elapsed().as_secs_f64()
        ),
        Err(violation) => panic!("{name}: the promise is broken\n{violation}"),
    }
}

fn bounds(nodes: usize, slots: u32, horizon: u64, features: Features) -> Bounds {
    let deep = deep();
    Bounds {
        nodes: if deep { nodes + 1 } else { nodes },
        slots,
        features,
        horizon,
        depth: if deep { DEEP_DEPTH } else { DEPTH },
    }
}

/// Steps from the start the bounded run explores (every state within them),
/// and the deep one.
const DEPTH: usize = 6;
const DEEP_DEPTH: usize = 7;

/// Every move of the world on.
fn world_moves() -> Features {
    Features {
        pause: true,
        exclusion: true,
        live_changes: true,
        lost_answers: true,
        late_writes: true,
        person: true,
        ..Features::default()
    }
}

#[test]
fn plain_group_with_settle_and_window() {
    check(
        "plain",
        bounds(
            2,
            1,
            8,
            Features {
                settle: true,
                window: Some(WINDOW_MINUTES),
                ..world_moves()
            },
        ),
    );
}

#[test]
fn lease_with_late_writes_and_a_person() {
    check(
        "lease",
        bounds(
            2,
            1,
            5,
            Features {
                lease: true,
                ..world_moves()
            },
        ),
    );
}

#[test]
fn drain_gate_holding_on_timeout_in_a_window() {
    check(
        "drain-hold",
        bounds(
            2,
            1,
            8,
            Features {
                drain: Some(OnDrainTimeout::Hold),
                window: Some(WINDOW_MINUTES),
                ..world_moves()
            },
        ),
    );
}

#[test]
fn drain_gate_granting_on_timeout_with_a_lease() {
    check(
        "drain-grant",
        bounds(
            2,
            1,
            5,
            Features {
                drain: Some(OnDrainTimeout::Grant),
                lease: true,
                ..world_moves()
            },
        ),
    );
}

#[test]
fn return_gate_with_its_sweep_and_settle() {
    check(
        "return",
        bounds(
            2,
            1,
            5,
            Features {
                returns: true,
                settle: true,
                ..world_moves()
            },
        ),
    );
}

#[test]
fn every_gate_at_once_with_two_slots() {
    check(
        "all",
        bounds(
            2,
            2,
            4,
            Features {
                lease: true,
                drain: Some(OnDrainTimeout::Hold),
                returns: true,
                settle: true,
                ..world_moves()
            },
        ),
    );
}

#[test]
fn zones_with_a_lease_and_late_writes() {
    check(
        "zones",
        bounds(
            2,
            2,
            5,
            Features {
                zones: true,
                lease: true,
                ..world_moves()
            },
        ),
    );
}

#[test]
fn canary_with_a_return_gate_its_sweep_and_zones() {
    check(
        "canary",
        bounds(
            2,
            2,
            5,
            Features {
                canary: true,
                returns: true,
                zones: true,
                ..world_moves()
            },
        ),
    );
}

/// Issue 64: a name the group could mean, beside a `*` (its zone group's
/// case twin; a zone of the group where it is not split), is refused: a
/// node asking with it is never told yes beside the group's full count.
#[test]
fn twin_names_beside_the_wildcard_with_and_without_zones() {
    for zones in [true, false] {
        check(
            if zones { "twins-zones" } else { "twins" },
            bounds(
                2,
                1,
                4,
                Features {
                    twins: true,
                    zones,
                    lease: true,
                    ..world_moves()
                },
            ),
        );
    }
}

#[test]
fn canary_with_a_drain_gate_and_a_lease() {
    check(
        "canary-drain",
        bounds(
            2,
            2,
            5,
            Features {
                canary: true,
                drain: Some(OnDrainTimeout::Hold),
                lease: true,
                ..world_moves()
            },
        ),
    );
}

/// Zones with every gate that holds a slot out of service: a drain gate
/// holding, a return gate with its sweep, a settle time and a window.
#[test]
fn zones_with_a_drain_gate_a_return_gate_settle_and_a_window() {
    check(
        "zones-gates",
        bounds(
            2,
            2,
            4,
            Features {
                zones: true,
                drain: Some(OnDrainTimeout::Hold),
                returns: true,
                settle: true,
                window: Some(WINDOW_MINUTES),
                ..world_moves()
            },
        ),
    );
}

/// The limits reached: three nodes, two of one zone, at a group's two
/// slots, with the zones switched off and on again over the slots taken
/// meanwhile (settings 2), and every move of the world.
#[test]
fn zones_at_their_two_slots_switched_off_and_on() {
    check(
        "zones-full",
        bounds(
            3,
            2,
            3,
            Features {
                zones: true,
                ..world_moves()
            },
        ),
    );
}

/// A whole rollout: the canary, its wave of one, then the rest at the
/// group's two slots with a third node asking (a full group), a person's
/// begin-rollout and forget; nodes that behave, so the depth reaches the
/// rest.
#[test]
fn a_whole_rollout_to_its_rest_at_a_full_group() {
    let deep = deep();
    check(
        "rollout",
        Bounds {
            nodes: 3,
            slots: 2,
            features: Features {
                canary: true,
                person: true,
                ..Features::default()
            },
            horizon: 3,
            depth: if deep { 11 } else { 10 },
        },
    );
}

/// The liveness check against a world it must fail: a window no longer
/// than the drain timeout begins no drain, ever (what it found first; the
/// configuration now refuses such a window at start).
#[test]
fn liveness_fails_where_a_window_is_shorter_than_the_drain() {
    let world = World::new(Bounds {
        depth: 0,
        ..bounds(
            2,
            1,
            0,
            Features {
                drain: Some(OnDrainTimeout::Hold),
                window: Some(60),
                ..Features::default()
            },
        )
    });
    let violation = explore(&world, Checks { liveness: true }).unwrap_err();
    assert_eq!(violation.check, "liveness", "{violation}");
    assert!(
        violation.to_string().contains("window_closes_before_drain")
            || violation.to_string().contains("outside_maintenance_window"),
        "{violation}"
    );
}

/// The model's steps on the DynamoDB store (tests/model/dynamodb.rs): from
/// every state near the start of each bound and along random walks deep
/// into it, every step taken again on DynamoDB Local lands as it does on
/// the memory store.
#[test]
fn every_step_lands_alike_on_dynamodb() {
    let gates = Features {
        lease: true,
        drain: Some(OnDrainTimeout::Hold),
        returns: true,
        settle: true,
        ..world_moves()
    };
    let zones = Features {
        zones: true,
        canary: true,
        returns: true,
        ..world_moves()
    };
    let grant = Features {
        drain: Some(OnDrainTimeout::Grant),
        lease: true,
        window: Some(WINDOW_MINUTES),
        ..world_moves()
    };
    let reach = dynamodb::Reach {
        near: 2,
        walks: if deep() { 60 } else { 8 },
        length: 14,
    };
    for (name, bounds) in [
        ("all", bounds(2, 2, 4, gates)),
        ("canary-zones", bounds(2, 2, 5, zones)),
        ("drain-grant", bounds(2, 1, 5, grant)),
    ]
    .into_iter()
    .filter(|(name, _)| std::env::var("MODEL_ONLY").map_or(true, |only| only == *name))
    {
        let started = std::time::Instant::now();
        match dynamodb::lands_alike(bounds, reach) {
            Ok(steps) => println!(
                "{name} on DynamoDB: {steps} steps alike (every state within {} steps, {} walks \
                 of {}), in {:.1} s",
                reach.near,
                reach.walks,
                reach.length,
                started.elapsed().as_secs_f64()
            ),
            Err(difference) => panic!("{name}: the stores differ\n{difference}"),
        }
    }
}
