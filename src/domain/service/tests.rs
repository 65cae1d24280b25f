use super::*;
use crate::domain::input::NodeId;
use crate::domain::lock::{GroupRules, Refusal};
use crate::domain::time::Timestamp;
use crate::store::memory::MemoryStore;

fn params(id: &str, group: &str) -> ClientParams {
    ClientParams::from_body(
        format!(r#"{{"client_params":{{"id":"{id}","group":"{group}"}}}}"#).as_bytes(),
        crate::domain::input::IdRule::New,
    )
    .unwrap()
}

fn service(groups: &str) -> FleetLock<MemoryStore> {
    FleetLock::new(GroupSlots::parse(groups).unwrap(), MemoryStore::default())
}

#[test]
fn a_global_tables_service_compares_its_windows_whichever_was_set_first() {
    let windows = || {
        let spec = "workers: days=Sat start_time=22:00 length_minutes=120";
        Schedule::parse(spec, Some("UTC"), |_| Ok(()), false).unwrap()
    };
    let digests = |svc: FleetLock<MemoryStore>| svc.agreement.unwrap().ours;
    let windows_first = service("workers=2")
        .with_windows(windows())
        .agreeing("eu-west-1", AGREEMENT_REFRESH);
    let windows_last = service("workers=2")
        .agreeing("eu-west-1", AGREEMENT_REFRESH)
        .with_windows(windows());
    let none = service("workers=2").agreeing("eu-west-1", AGREEMENT_REFRESH);
    let (first, last) = (digests(windows_first), digests(windows_last));
    assert_eq!(first, last);
    assert_ne!(first, digests(none), "the windows are in the digests");
}

#[tokio::test]
async fn a_failing_read_of_the_regions_records_serves_on_the_last_for_a_bounded_time() {
    let svc = service("workers=1")
        .agreeing("eu-west-1", Duration::from_millis(20))
        .serving_stale_for(Duration::from_millis(200));
    svc.record_settings().await.unwrap();
    let node = params("a", "workers");
    svc.steady_state(&node).await.unwrap();
    // Denied from now on, as a role without GetItem is.
    svc.store.refuse_settings_reads(true);
    tokio::time::sleep(Duration::from_millis(40)).await;
    assert!(
        svc.steady_state(&node).await.is_ok(),
        "served on the last read"
    );
    tokio::time::sleep(Duration::from_millis(220)).await;
    assert_eq!(
        svc.steady_state(&node).await.unwrap_err().kind(),
        "store_unavailable",
        "past the bound: refused"
    );
    // Not wedged: the first read that succeeds serves again.
    svc.store.refuse_settings_reads(false);
    tokio::time::sleep(Duration::from_millis(25)).await;
    assert!(svc.steady_state(&node).await.is_ok());
}

#[tokio::test]
async fn a_forgotten_regions_record_is_written_again_at_its_next_refresh() {
    let svc = service("workers=1")
        .agreeing("eu-west-1", Duration::from_millis(10))
        .recorded_as("fleetlock-api");
    svc.record_settings().await.unwrap();
    assert!(svc.store.forget_region("eu-west-1").await.unwrap());
    assert!(svc.store.recorded_settings().await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(20)).await;
    svc.steady_state(&params("a", "workers")).await.unwrap();
    let recorded = svc.store.recorded_settings().await.unwrap();
    assert_eq!(
        recorded["eu-west-1"].get(crate::domain::agreement::BY),
        Some(&"fleetlock-api".to_owned())
    );
    assert!(recorded["eu-west-1"].contains_key("workers"));
}

#[tokio::test]
async fn a_full_group_is_a_decision_like_the_others() {
    let svc = service("default=1");
    let first = svc.pre_reboot(&params("a", "default")).await.unwrap();
    assert_eq!(
        (first.outcome, first.holders, first.slots),
        (Outcome::Granted(Grant::Free), 1, 1)
    );
    let full = svc.pre_reboot(&params("b", "default")).await.unwrap();
    assert_eq!(
        (full.outcome, full.holders),
        (Outcome::Refused(Refusal::Full), 1)
    );
    assert!(
        full.oldest_holder_age.is_some(),
        "the blocking holder's age is known"
    );
    let again = svc.pre_reboot(&params("a", "default")).await.unwrap();
    assert_eq!(again.outcome, Outcome::Held);
    let released = svc.steady_state(&params("a", "default")).await.unwrap();
    assert_eq!(
        (released.outcome, released.holders),
        (Outcome::Released { held: true }, 0)
    );
    assert_eq!(
        svc.pre_reboot(&params("b", "default"))
            .await
            .unwrap()
            .outcome,
        Outcome::Granted(Grant::Free)
    );
}

#[tokio::test]
async fn steady_state_from_a_non_holder_succeeds_while_another_holds() {
    let svc = service("default=1");
    svc.pre_reboot(&params("a", "default")).await.unwrap();
    let answer = svc.steady_state(&params("b", "default")).await.unwrap();
    assert_eq!(
        (answer.outcome, answer.holders),
        (Outcome::Released { held: false }, 1)
    );
}

#[tokio::test]
async fn unknown_groups_are_refused_on_both_calls_and_nothing_is_stored() {
    let svc = service("default=1");
    for err in [
        svc.pre_reboot(&params("a", "other")).await.unwrap_err(),
        svc.steady_state(&params("a", "other")).await.unwrap_err(),
    ] {
        assert_eq!((err.kind(), err.status()), ("unknown_group", 403));
    }
    assert!(svc.store().groups(None).await.unwrap().is_empty());
}

/// A clock that says what the test set, for the lease's boundaries.
#[derive(Clone)]
struct At(Arc<std::sync::Mutex<Timestamp>>);

impl Clock for At {
    fn now(&self) -> Timestamp {
        *self.0.lock().unwrap()
    }
}

#[tokio::test]
async fn a_take_over_names_whose_slot_it_was_and_a_full_refusal_when_the_lease_ends() {
    let t0 = Timestamp(1_764_480_000_000);
    let clock = At(Arc::new(std::sync::Mutex::new(t0)));
    let groups = GroupSlots::parse("workers=1,db=2")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "workers=6h,db=6h")
        .unwrap();
    let svc = FleetLock::new(groups, MemoryStore::default()).with_clock(clock.clone());
    let at = |t: Timestamp| *clock.0.lock().unwrap() = t;
    svc.pre_reboot(&params("gone", "workers")).await.unwrap();
    at(t0.plus(Duration::from_secs(3600)));
    let full = svc.pre_reboot(&params("new", "workers")).await.unwrap();
    assert_eq!(full.outcome, Outcome::Refused(Refusal::Full));
    let value = full.refusal.unwrap().value();
    assert!(
        value.contains("6h lease runs out at 2025-11-30T11:20:00Z"),
        "{value}"
    );
    at(t0.plus(Duration::from_secs(6 * 3600 + 5)));
    let taken = svc.pre_reboot(&params("new", "workers")).await.unwrap();
    assert_eq!(
        (taken.outcome, taken.refusal, taken.holders),
        (Outcome::TakenOver, None, 1)
    );
    assert_eq!(
        taken.expired,
        Some(ExpiredSlot {
            holder: NodeId::parse("gone").unwrap(),
            held: Duration::from_secs(6 * 3600 + 5),
        })
    );
    // A plain grant names nobody.
    let plain = svc.pre_reboot(&params("a", "db")).await.unwrap();
    assert_eq!(
        (plain.outcome, plain.expired),
        (Outcome::Granted(Grant::Free), None)
    );
}

/// The `DrainsOverdue` metric's value: every call of a gated group
/// counts its reservations past their timeout, from the timeout on;
/// a group without a gate has no value.
#[tokio::test]
async fn every_call_of_a_gated_group_counts_its_drains_overdue() {
    let t0 = Timestamp(1_764_480_000_000);
    let clock = At(Arc::new(std::sync::Mutex::new(t0)));
    let groups = GroupSlots::parse("workers=3,db=1")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=15m")
        .unwrap();
    let svc = FleetLock::new(groups, MemoryStore::default()).with_clock(clock.clone());
    let at = |t: Timestamp| *clock.0.lock().unwrap() = t;
    let reserved = svc.pre_reboot(&params("a", "workers")).await.unwrap();
    assert_eq!(
        (reserved.outcome, reserved.drains_overdue),
        (Outcome::Reserved, Some(0))
    );
    at(t0.plus(Duration::from_secs(60)));
    svc.pre_reboot(&params("b", "workers")).await.unwrap();
    at(t0.plus(Duration::from_secs(15 * 60 - 1)));
    let before = svc.pre_reboot(&params("c", "workers")).await.unwrap();
    assert_eq!(before.drains_overdue, Some(0), "not yet at the timeout");
    // At a's timeout: a counts, b (a minute younger) not yet.
    at(t0.plus(Duration::from_secs(15 * 60)));
    let waiting = svc.pre_reboot(&params("a", "workers")).await.unwrap();
    assert_eq!(
        (waiting.outcome, waiting.drains_overdue),
        (
            Outcome::Refused(Refusal::Draining {
                since: t0,
                until: t0.plus(Duration::from_secs(15 * 60)),
                overdue: true
            }),
            Some(1)
        )
    );
    // Any node's steady-state counts them too, a node holding nothing
    // included.
    at(t0.plus(Duration::from_secs(16 * 60)));
    let other = svc.steady_state(&params("z", "workers")).await.unwrap();
    assert_eq!(
        (other.outcome, other.drains_overdue),
        (Outcome::Released { held: false }, Some(2))
    );
    // A waiting node that gives its reservation back is no longer counted.
    let gone = svc.steady_state(&params("a", "workers")).await.unwrap();
    assert_eq!(
        (gone.outcome, gone.drains_overdue),
        (Outcome::Released { held: true }, Some(1))
    );
    let plain = svc.pre_reboot(&params("a", "db")).await.unwrap();
    assert_eq!(
        (plain.outcome, plain.drains_overdue),
        (Outcome::Granted(Grant::Free), None)
    );
    let plain = svc.steady_state(&params("a", "db")).await.unwrap();
    assert_eq!(plain.drains_overdue, None);
}

#[tokio::test]
async fn a_group_holding_more_than_its_slots_promises_no_lease() {
    let t0 = Timestamp(1_764_480_000_000);
    let clock = At(Arc::new(std::sync::Mutex::new(t0)));
    let store = MemoryStore::default();
    let workers = crate::domain::input::GroupName::parse("workers").unwrap();
    let two = GroupRules {
        slots: 2,
        ..GroupRules::default()
    };
    for node in ["a", "b"] {
        let id = NodeId::parse(node).unwrap();
        store.acquire(&workers, &id, two, t0).await.unwrap();
    }
    // Lowered to one slot: two holders, and no take-over to promise.
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "workers=6h")
        .unwrap();
    let svc = FleetLock::new(groups, store).with_clock(clock);
    let full = svc.pre_reboot(&params("c", "workers")).await.unwrap();
    let value = full.refusal.unwrap().value();
    assert!(!value.contains("lease"), "{value}");
    // At exactly as many holders as slots, the lease is promised.
    let groups = GroupSlots::parse("workers=2")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "workers=6h")
        .unwrap();
    let svc = FleetLock::new(groups, svc.store).with_clock(At(Arc::new(std::sync::Mutex::new(t0))));
    let full = svc.pre_reboot(&params("c", "workers")).await.unwrap();
    let value = full.refusal.unwrap().value();
    assert!(value.contains("lease runs out at"), "{value}");
}

/// Where a lease meets a drain gate: a take-over is a reservation (a 423
/// `waiting_for_drain`, never the 200 that would reboot an undrained
/// node), and a group full of reservations promises no lease end.
#[tokio::test]
async fn a_take_over_behind_a_drain_gate_is_a_reservation_and_promises_nothing() {
    let t0 = Timestamp(1_764_480_000_000);
    let clock = At(Arc::new(std::sync::Mutex::new(t0)));
    let groups = GroupSlots::parse("workers=1")
        .unwrap()
        .with_setting("FLEETLOCK_LEASE", "workers=6h")
        .unwrap()
        .with_setting("FLEETLOCK_DRAIN", "workers=15m")
        .unwrap();
    let svc = FleetLock::new(groups, MemoryStore::default()).with_clock(clock.clone());
    let at = |t: Timestamp| *clock.0.lock().unwrap() = t;
    let workers = crate::domain::input::GroupName::parse("workers").unwrap();
    let reserved = svc.pre_reboot(&params("gone", "workers")).await.unwrap();
    assert_eq!(reserved.outcome, Outcome::Reserved);
    let confirmed = svc
        .store()
        .drained(&workers, &NodeId::parse("gone").unwrap(), None, t0)
        .await
        .unwrap();
    assert_eq!(confirmed.outcome, crate::domain::lock::Drained::Granted);
    at(t0.plus(Duration::from_secs(7 * 3600)));
    let taken = svc.pre_reboot(&params("new", "workers")).await.unwrap();
    assert_eq!(taken.outcome, Outcome::Reserved);
    assert_eq!(taken.refusal.unwrap().kind(), "waiting_for_drain");
    assert_eq!(taken.expired.unwrap().holder.as_str(), "gone");
    // The one slot is a reservation now: full, with no lease to promise.
    let full = svc.pre_reboot(&params("third", "workers")).await.unwrap();
    assert_eq!(full.outcome, Outcome::Refused(Refusal::Full));
    let value = full.refusal.unwrap().value();
    assert!(!value.contains("lease"), "{value}");
}

/// A drain begins only if the window stays open for the whole drain
/// timeout: at exactly the timeout it fits, a millisecond less it does
/// not. t0 is Sunday 2025-11-30 05:20 UTC; the window, 05:00 to 05:35.
#[tokio::test]
async fn a_drain_begins_only_where_the_window_holds_its_whole_timeout() {
    use crate::domain::windows::Schedule;
    let t0 = Timestamp(1_764_480_000_000);
    let groups = || {
        GroupSlots::parse("workers=1")
            .unwrap()
            .with_setting("FLEETLOCK_DRAIN", "workers=15m")
            .unwrap()
    };
    let windows = Schedule::parse(
        "workers: days=Sun start_time=05:00 length_minutes=35",
        Some("UTC"),
        |_| Ok(()),
        true,
    )
    .unwrap();
    let at = |t: Timestamp| At(Arc::new(std::sync::Mutex::new(t)));
    let svc = FleetLock::new(groups(), MemoryStore::default())
        .with_clock(at(t0))
        .with_windows(windows.clone());
    let fits = svc.pre_reboot(&params("a", "workers")).await.unwrap();
    assert_eq!(
        fits.outcome,
        Outcome::Reserved,
        "closes exactly at the timeout"
    );
    let svc = FleetLock::new(groups(), MemoryStore::default())
        .with_clock(at(t0.plus(Duration::from_millis(1))))
        .with_windows(windows);
    let short = svc.pre_reboot(&params("a", "workers")).await.unwrap();
    assert!(
        matches!(
            short.outcome,
            Outcome::Refused(Refusal::WindowTooShort { .. })
        ),
        "{:?}",
        short.outcome
    );
    assert!(
        svc.store()
            .groups(None)
            .await
            .unwrap()
            .iter()
            .all(|(_, g)| g.holders.is_empty())
    );
}

#[tokio::test]
async fn wildcard_groups_are_independent_semaphores() {
    let svc = service("*=1");
    svc.pre_reboot(&params("a", "one")).await.unwrap();
    assert_eq!(
        svc.pre_reboot(&params("b", "two")).await.unwrap().outcome,
        Outcome::Granted(Grant::Free)
    );
}

/// The outcome words the log line and the `Outcome` metric dimension carry
/// (docs/configuration.md's answers table): one per outcome, as before the
/// outcomes were grouped by what happened to the slot.
#[test]
fn every_outcome_says_the_word_the_logs_and_metrics_carry() {
    let t = Timestamp(1_000);
    let wave = crate::domain::canary::Wave::BEFORE;
    let said: Vec<&str> = [
        Outcome::Granted(Grant::Free),
        Outcome::Granted(Grant::DrainTimedOut),
        Outcome::TakenOver,
        Outcome::Reserved,
        Outcome::Held,
        Outcome::Released { held: true },
        Outcome::Released { held: false },
        Outcome::Returning { already: false },
        Outcome::Returning { already: true },
    ]
    .into_iter()
    .chain(
        [
            Refusal::Full,
            Refusal::Paused,
            Refusal::Excluded,
            Refusal::Settling { until: t },
            Refusal::OtherZone { zone: "a".into() },
            Refusal::WaveOut { wave },
            Refusal::Baking { wave, until: t },
            Refusal::TooManyGroups { limit: 1 },
            Refusal::Draining {
                since: t,
                until: t,
                overdue: false,
            },
            Refusal::Draining {
                since: t,
                until: t,
                overdue: true,
            },
            Refusal::WindowTooShort { closes: t },
            Refusal::Returning {
                since: t,
                until: t,
                overdue: false,
            },
        ]
        .map(Outcome::Refused),
    )
    .map(|outcome| outcome.as_str())
    .collect();
    assert_eq!(
        said,
        [
            "granted",
            "granted_drain_timeout",
            "granted_expired",
            "reserved",
            "already_held",
            "released",
            "not_held",
            "returning",
            "still_returning",
            "full",
            "paused",
            "excluded",
            "settling",
            "other_zone",
            "wave_out",
            "baking",
            "too_many_groups",
            "waiting_for_drain",
            "drain_overdue",
            "window_closing",
            "waiting_for_return",
        ]
    );
}
