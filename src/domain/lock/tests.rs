use super::*;

fn id(s: &str) -> NodeId {
    NodeId::parse(s).unwrap()
}

#[test]
fn an_excluded_node_is_refused_unless_it_holds_a_slot() {
    let mut group = GroupRecord::default();
    let open = GroupRules {
        slots: 2,
        ..GroupRules::default()
    };
    let sick = NodeId::parse("sick").unwrap();
    let holder = NodeId::parse("holder").unwrap();
    assert_eq!(group.acquire(&holder, open, Timestamp(1)), Acquire::Granted);
    let exclusion = ByPerson {
        reason: PauseReason::parse("disk").unwrap(),
        since: Timestamp(2),
        by: "alice".into(),
    };
    group.excluded.insert(sick.clone(), exclusion.clone());
    group.excluded.insert(holder.clone(), exclusion);
    assert_eq!(
        group.acquire(&sick, open, Timestamp(3)),
        Acquire::Refused(Refusal::Excluded)
    );
    assert!(!group.holders.holds(&sick), "nothing was taken");
    // A holder keeps its slot: yes, and its release frees it.
    assert_eq!(
        group.decide_acquire(&holder, open, Timestamp(3)),
        Acquire::AlreadyHeld
    );
    assert_eq!(
        group.release(&holder, false, Timestamp(4)),
        Release::Released
    );
    assert_eq!(
        group.decide_acquire(&holder, open, Timestamp(5)),
        Acquire::Refused(Refusal::Excluded)
    );
    // The exclusion wins over a pause and a full group, for that node.
    group.pause.alarms.insert("x".into());
    assert_eq!(
        group.decide_acquire(&sick, open, Timestamp(5)),
        Acquire::Refused(Refusal::Excluded)
    );
    let other = NodeId::parse("other").unwrap();
    assert_eq!(
        group.decide_acquire(&other, open, Timestamp(5)),
        Acquire::Refused(Refusal::Paused)
    );
}

#[test]
fn grants_up_to_slots_then_refuses() {
    let mut sem = Semaphore::default();
    assert_eq!(sem.acquire(&id("a"), 2, Timestamp(1)), Acquire::Granted);
    assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
    assert_eq!(
        sem.acquire(&id("c"), 2, Timestamp(3)),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(sem.len(), 2);
}

#[test]
fn holder_asking_again_keeps_one_slot_and_its_first_time() {
    let mut sem = Semaphore::default();
    sem.acquire(&id("a"), 1, Timestamp(10));
    assert_eq!(
        sem.acquire(&id("a"), 1, Timestamp(20)),
        Acquire::AlreadyHeld
    );
    assert_eq!(sem.len(), 1);
    assert_eq!(sem.oldest(), Some((&id("a"), Timestamp(10))));
}

#[test]
fn a_semaphore_with_a_holder_is_not_empty() {
    let mut sem = Semaphore::default();
    assert!(sem.is_empty());
    sem.acquire(&id("a"), 1, Timestamp(1));
    assert!(!sem.is_empty());
}

#[test]
fn release_by_non_holder_changes_nothing() {
    let mut sem = Semaphore::default();
    sem.acquire(&id("a"), 1, Timestamp(1));
    let before = sem.clone();
    assert_eq!(sem.release(&id("b")), Release::NotHeld);
    assert_eq!(sem, before);
    assert_eq!(sem.release(&id("a")), Release::Released);
    assert_eq!(sem.release(&id("a")), Release::NotHeld);
    assert!(sem.is_empty());
}

#[test]
fn lowered_count_blocks_new_holders_but_evicts_nobody() {
    let mut sem = Semaphore::default();
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        assert_eq!(
            sem.acquire(&id(name), 3, Timestamp(i as u64)),
            Acquire::Granted
        );
    }
    assert_eq!(
        sem.acquire(&id("d"), 1, Timestamp(9)),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(sem.acquire(&id("b"), 1, Timestamp(9)), Acquire::AlreadyHeld);
    assert_eq!(sem.len(), 3);
    sem.release(&id("a"));
    sem.release(&id("b"));
    assert_eq!(
        sem.acquire(&id("d"), 1, Timestamp(9)),
        Acquire::Refused(Refusal::Full)
    );
    sem.release(&id("c"));
    assert_eq!(sem.acquire(&id("d"), 1, Timestamp(9)), Acquire::Granted);
}

#[test]
fn raised_count_applies_at_once() {
    let mut sem = Semaphore::default();
    sem.acquire(&id("a"), 1, Timestamp(1));
    assert_eq!(
        sem.acquire(&id("b"), 1, Timestamp(2)),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(sem.acquire(&id("b"), 2, Timestamp(2)), Acquire::Granted);
}

#[test]
fn zero_slots_freezes_a_group_but_a_holder_still_hears_yes() {
    let mut sem = Semaphore::default();
    assert_eq!(
        sem.acquire(&id("a"), 0, Timestamp(1)),
        Acquire::Refused(Refusal::Full)
    );
    sem.acquire(&id("b"), 1, Timestamp(1));
    assert_eq!(sem.acquire(&id("b"), 0, Timestamp(2)), Acquire::AlreadyHeld);
}

fn reason(s: &str) -> PauseReason {
    PauseReason::parse(s).unwrap()
}

const TEN_MIN: Duration = Duration::from_secs(600);

fn rules(slots: u32, settle: Duration) -> GroupRules {
    GroupRules {
        slots,
        settle,
        wildcard_limit: None,
        lease: None,
        drain: None,
        return_timeout: None,
        zone: None,
        canary: None,
    }
}

const HOUR: Duration = Duration::from_secs(3600);

fn leased(slots: u32, lease: Duration) -> GroupRules {
    GroupRules {
        lease: Some(lease),
        ..rules(slots, Duration::ZERO)
    }
}

#[test]
fn a_full_group_gives_the_slot_of_a_holder_past_its_lease_to_the_next_asker() {
    let mut group = GroupRecord::default();
    let r = leased(2, HOUR);
    group.acquire(&id("old"), r, Timestamp(0));
    group.acquire(&id("young"), r, Timestamp(1_800_000));
    // Not yet: the oldest has held 59m59.999s.
    let almost = Timestamp(0).plus(HOUR).minus(Duration::from_millis(1));
    assert_eq!(
        group.acquire(&id("new"), r, almost),
        Acquire::Refused(Refusal::Full)
    );
    let at = Timestamp(0).plus(HOUR);
    assert_eq!(
        group.acquire(&id("new"), r, at),
        Acquire::TakesExpired {
            holder: id("old"),
            since: Timestamp(0)
        }
    );
    assert_eq!(group.holders.len(), 2, "the count is unchanged");
    assert!(group.holders.holds(&id("new")) && !group.holders.holds(&id("old")));
    assert_eq!(group.holders.held_since(&id("new")), Some(at));
    // The evicted node's steady-state is a plain "held nothing", its
    // next pre-reboot a newcomer's request.
    assert_eq!(group.release(&id("old"), false, at), Release::NotHeld);
    assert_eq!(
        group.decide_acquire(&id("old"), r, at),
        Acquire::Refused(Refusal::Full)
    );
}

#[test]
fn a_lease_never_evicts_while_a_slot_is_free_nor_without_an_asker() {
    let mut group = GroupRecord::default();
    let r = leased(2, HOUR);
    group.acquire(&id("old"), r, Timestamp(0));
    let late = Timestamp(0).plus(HOUR * 10);
    // A free slot is taken first; the expired holder keeps its own.
    assert_eq!(group.acquire(&id("b"), r, late), Acquire::Granted);
    assert!(group.holders.holds(&id("old")));
    // Asking again renews the lease; the grant time stays.
    assert_eq!(group.acquire(&id("old"), r, late), Acquire::AlreadyHeld);
    assert_eq!(group.holders.held_since(&id("old")), Some(Timestamp(0)));
    assert_eq!(group.renewed.get(&id("old")), Some(&late));
}

#[test]
fn a_holder_that_asks_again_keeps_its_slot_past_the_lease_from_its_grant() {
    let r = leased(1, HOUR);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    // 31 minutes past a 30-minute lease... of an hour here: past it.
    let past = Timestamp(0).plus(HOUR + Duration::from_secs(60));
    assert_eq!(group.acquire(&id("a"), r, past), Acquire::AlreadyHeld);
    // A second later, the next node finds the slot held, not expired.
    let next = past.plus(Duration::from_secs(1));
    assert_eq!(
        group.acquire(&id("b"), r, next),
        Acquire::Refused(Refusal::Full)
    );
    assert!(group.holders.holds(&id("a")));
    // The age still counts from the grant (what the alarm reads).
    assert_eq!(group.holders.oldest(), Some((&id("a"), Timestamp(0))));
    // A late write of an older renewal never moves it back.
    assert_eq!(
        group.acquire(&id("a"), r, Timestamp(5)),
        Acquire::AlreadyHeld
    );
    assert_eq!(group.renewed.get(&id("a")), Some(&past));
    // One lease after the renewal, with no renewal since, it expires.
    assert_eq!(
        group.acquire(&id("b"), r, past.plus(HOUR)),
        Acquire::TakesExpired {
            holder: id("a"),
            since: Timestamp(0)
        }
    );
    assert_eq!(group.taken.get(&id("a")), Some(&past.plus(HOUR)));
    assert!(
        !group.renewed.contains_key(&id("a")),
        "no renewal of a slot it lost"
    );
}

#[test]
fn a_holder_renews_in_a_paused_group_and_when_excluded_and_nobody_else_gets_in() {
    let r = leased(1, HOUR);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    group.pause.alarms.insert("api-5xx".into());
    group.excluded.insert(
        id("a"),
        ByPerson {
            reason: PauseReason::parse("disk").unwrap(),
            since: Timestamp(1),
            by: "ana".into(),
        },
    );
    // A holder keeps its slot whatever else holds, and its lease with it.
    let past = Timestamp(0).plus(HOUR * 2);
    assert_eq!(group.acquire(&id("a"), r, past), Acquire::AlreadyHeld);
    assert_eq!(group.renewed.get(&id("a")), Some(&past));
    // The pause still keeps every other node out; once it clears, the
    // renewed lease keeps the slot its holder's.
    assert_eq!(
        group.acquire(&id("b"), r, past),
        Acquire::Refused(Refusal::Paused)
    );
    group.pause.alarms.clear();
    assert_eq!(
        group.acquire(&id("b"), r, past.plus(HOUR / 2)),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(group.holders.len(), 1);
}

#[test]
fn a_node_whose_slot_was_taken_is_marked_until_it_takes_or_gives_back_one() {
    let r = leased(1, HOUR);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    let late = Timestamp(0).plus(HOUR * 2);
    assert!(matches!(
        group.acquire(&id("b"), r, late),
        Acquire::TakesExpired { .. }
    ));
    // a asks again: the group is full, and a's mark says why.
    assert_eq!(
        group.acquire(&id("a"), r, late),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(group.taken.get(&id("a")), Some(&late));
    // b gives back; a takes the free slot afresh: its mark goes.
    assert_eq!(group.release(&id("b"), false, late), Release::Released);
    assert_eq!(group.acquire(&id("a"), r, late), Acquire::Granted);
    assert!(group.taken.is_empty());
}

#[test]
fn a_reservation_never_renews_and_no_renewal_without_a_lease() {
    let gated = GroupRules {
        drain: Some(DrainRule {
            timeout: HOUR,
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        ..leased(1, HOUR)
    };
    let mut group = GroupRecord::default();
    assert_eq!(
        group.acquire(&id("a"), gated, Timestamp(0)),
        Acquire::Reserves
    );
    group.acquire(&id("a"), gated, Timestamp(10));
    assert!(group.renewed.is_empty());
    let mut plain = GroupRecord::default();
    plain.acquire(&id("a"), rules(1, Duration::ZERO), Timestamp(0));
    plain.acquire(&id("a"), rules(1, Duration::ZERO), Timestamp(10));
    assert!(plain.renewed.is_empty());
}

#[test]
fn marks_of_taken_slots_are_bounded_in_number_and_age() {
    let mut group = GroupRecord::default();
    for n in 0..12u64 {
        group.taken.insert(
            id(&format!("n{n}")),
            Timestamp(TAKEN_KEPT.as_millis() as u64 + n),
        );
    }
    let now = Timestamp(TAKEN_KEPT.as_millis() as u64 + 20);
    let stale = group.stale_taken(now);
    // The 9 newest stay (n3..n11); with the new one, 10.
    assert_eq!(stale.len(), 3);
    assert!(stale.contains(&id("n0")) && stale.contains(&id("n2")));
    // Past a day, every mark goes.
    let much_later = now.plus(TAKEN_KEPT);
    assert_eq!(group.stale_taken(much_later).len(), 12);
}

/// What the docs promise a node whose slot was taken: it hears so for a
/// day, counted in hours here, not from the constant.
#[test]
fn a_mark_of_a_slot_taken_is_kept_a_day_and_no_longer() {
    let mut group = GroupRecord::default();
    group.taken.insert(id("lost"), Timestamp(0));
    let day = Duration::from_secs(24 * 3600);
    let just_before = Timestamp(0).plus(day - Duration::from_millis(1));
    assert!(group.stale_taken(just_before).is_empty());
    assert_eq!(group.stale_taken(Timestamp(0).plus(day)), [id("lost")]);
}

#[test]
fn every_other_refusal_wins_over_an_expired_slot() {
    let r = leased(1, HOUR);
    let mut group = GroupRecord::default();
    group.acquire(&id("old"), r, Timestamp(0));
    let now = Timestamp(0).plus(HOUR * 2);
    let takes = Acquire::TakesExpired {
        holder: id("old"),
        since: Timestamp(0),
    };
    assert_eq!(group.decide_acquire(&id("b"), r, now), takes);

    let mut paused = group.clone();
    paused.pause.alarms.insert("x".into());
    assert_eq!(
        paused.decide_acquire(&id("b"), r, now),
        Acquire::Refused(Refusal::Paused)
    );

    let mut excluded = group.clone();
    excluded.excluded.insert(
        id("b"),
        ByPerson {
            reason: reason("disk"),
            since: Timestamp(1),
            by: "ana".into(),
        },
    );
    assert_eq!(
        excluded.decide_acquire(&id("b"), r, now),
        Acquire::Refused(Refusal::Excluded)
    );

    let mut settling = group.clone();
    settling.last_release = Some(now.minus(Duration::from_secs(60)));
    let settle = GroupRules {
        settle: TEN_MIN,
        ..r
    };
    assert!(matches!(
        settling.decide_acquire(&id("b"), settle, now),
        Acquire::Refused(Refusal::Settling { .. })
    ));
    // No lease: FleetLock's rule, held until given back.
    assert_eq!(
        group.decide_acquire(&id("b"), rules(1, Duration::ZERO), now),
        Acquire::Refused(Refusal::Full)
    );
}

#[test]
fn after_slots_were_lowered_an_expired_slot_is_never_taken_over() {
    let mut group = GroupRecord::default();
    let three = leased(3, HOUR);
    for name in ["a", "b", "c"] {
        group.acquire(&id(name), three, Timestamp(0));
    }
    let now = Timestamp(0).plus(HOUR * 5);
    // Three holders of two slots: a swap would keep three.
    assert_eq!(
        group.acquire(&id("d"), leased(2, HOUR), now),
        Acquire::Refused(Refusal::Full)
    );
    group.release(&id("c"), false, Timestamp(1));
    // Two of two: one expired slot changes hands, the count stays two.
    assert!(matches!(
        group.acquire(&id("d"), leased(2, HOUR), now),
        Acquire::TakesExpired { .. }
    ));
    assert_eq!(group.holders.len(), 2);
}

#[test]
fn a_paused_group_refuses_newcomers_but_keeps_its_holders() {
    let mut group = GroupRecord::default();
    assert_eq!(
        group.acquire(&id("a"), rules(3, Duration::ZERO), Timestamp(1)),
        Acquire::Granted
    );
    group.pause.person = Some(ByPerson {
        reason: reason("kernel regression"),
        since: Timestamp(2),
        by: "alice".into(),
    });
    let open = rules(3, Duration::ZERO);
    assert_eq!(
        group.acquire(&id("b"), open, Timestamp(3)),
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(
        group.acquire(&id("a"), open, Timestamp(3)),
        Acquire::AlreadyHeld
    );
    assert_eq!(
        group.release(&id("a"), false, Timestamp(4)),
        Release::Released
    );
    group.pause.person = None;
    group.pause.alarms.insert("etcd-quorum".into());
    assert_eq!(
        group.acquire(&id("b"), open, Timestamp(5)),
        Acquire::Refused(Refusal::Paused)
    );
    group.pause.alarms.clear();
    assert_eq!(
        group.acquire(&id("b"), open, Timestamp(6)),
        Acquire::Granted
    );
}

#[test]
fn one_settle_period_for_the_whole_group_after_any_release() {
    let mut group = GroupRecord::default();
    let settle = rules(2, TEN_MIN);
    let t0 = Timestamp(1_000_000);
    assert_eq!(group.acquire(&id("a"), settle, t0), Acquire::Granted);
    assert_eq!(
        group.acquire(&id("b"), settle, t0),
        Acquire::Granted,
        "no release yet"
    );
    group.release(&id("a"), false, t0.plus(Duration::from_secs(60)));
    let until = t0.plus(Duration::from_secs(660));
    // A free slot, but the group settles: for everyone, holders excepted.
    assert_eq!(
        group.acquire(&id("c"), settle, t0.plus(Duration::from_secs(120))),
        Acquire::Refused(Refusal::Settling { until })
    );
    assert_eq!(
        group.acquire(&id("b"), settle, t0.plus(Duration::from_secs(120))),
        Acquire::AlreadyHeld
    );
    assert_eq!(
        group.acquire(&id("c"), settle, until.minus(Duration::from_millis(1))),
        Acquire::Refused(Refusal::Settling { until })
    );
    assert_eq!(group.acquire(&id("c"), settle, until), Acquire::Granted);
    // A zero settle time never holds anyone back.
    group.release(&id("c"), false, until);
    assert_eq!(
        group.acquire(&id("d"), rules(2, Duration::ZERO), until),
        Acquire::Granted
    );
}

#[test]
fn held_wins_then_paused_then_settling_then_full() {
    let mut group = GroupRecord::default();
    let r = rules(1, TEN_MIN);
    group.acquire(&id("a"), r, Timestamp(0));
    group.last_release = Some(Timestamp(10));
    group.pause.alarms.insert("x".into());
    let now = Timestamp(20);
    assert_eq!(group.decide_acquire(&id("a"), r, now), Acquire::AlreadyHeld);
    assert_eq!(
        group.decide_acquire(&id("b"), r, now),
        Acquire::Refused(Refusal::Paused)
    );
    group.pause.alarms.clear();
    assert!(matches!(
        group.decide_acquire(&id("b"), r, now),
        Acquire::Refused(Refusal::Settling { .. })
    ));
    group.last_release = None;
    assert_eq!(
        group.decide_acquire(&id("b"), r, now),
        Acquire::Refused(Refusal::Full)
    );
}

#[test]
fn a_late_release_never_moves_the_settle_period_back_nor_frees_a_newer_grant() {
    let r = rules(3, TEN_MIN);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    group.acquire(&id("b"), r, Timestamp(0));
    // b's release arrived at 200 and landed first; a's arrived at 100
    // and lands after it.
    assert_eq!(
        group.release(&id("b"), false, Timestamp(200)),
        Release::Released
    );
    assert_eq!(
        group.release(&id("a"), false, Timestamp(100)),
        Release::Released
    );
    assert_eq!(group.last_release, Some(Timestamp(200)));
    let until = Timestamp(200).plus(TEN_MIN);
    assert_eq!(
        group.decide_acquire(&id("c"), r, until.minus(Duration::from_millis(1))),
        Acquire::Refused(Refusal::Settling { until })
    );
    // a is granted again later; a release of a's that arrived a second
    // before that grant, landing now, frees nothing.
    group.acquire(&id("a"), rules(3, Duration::ZERO), until.plus(TEN_MIN));
    let regranted = until.plus(TEN_MIN);
    assert_eq!(
        group.release(&id("a"), false, regranted.minus(Duration::from_secs(1))),
        Release::NotHeld
    );
    assert!(group.holders.holds(&id("a")));
    assert_eq!(group.last_release, Some(Timestamp(200)), "unmoved");
}

#[test]
fn a_request_that_arrived_before_the_latest_release_is_refused_even_without_settle() {
    let mut group = GroupRecord::default();
    let open = rules(2, Duration::ZERO);
    group.acquire(&id("a"), open, Timestamp(10));
    group.release(&id("a"), false, Timestamp(50));
    // a's own pre-reboot of 40, landing after its release of 50: no
    // holder nobody knows about.
    assert_eq!(
        group.acquire(&id("a"), open, Timestamp(40)),
        Acquire::Refused(Refusal::Settling {
            until: Timestamp(50)
        })
    );
    assert!(group.holders.is_empty());
    assert_eq!(
        group.acquire(&id("a"), open, Timestamp(50)),
        Acquire::Granted
    );
}

#[test]
fn timestamps_print_as_utc_seconds() {
    assert_eq!(Timestamp(0).to_rfc3339(), "1970-01-01T00:00:00Z");
    assert_eq!(
        Timestamp(1_764_479_529_999).to_rfc3339(),
        "2025-11-30T05:12:09Z"
    );
    assert_eq!(
        Timestamp(951_782_400_000).to_rfc3339(),
        "2000-02-29T00:00:00Z"
    );
    assert_eq!(
        Timestamp(4_102_444_799_000).to_rfc3339(),
        "2099-12-31T23:59:59Z"
    );
}

#[test]
fn event_timestamps_keep_the_milliseconds() {
    assert_eq!(
        Timestamp(1_764_479_529_042).to_rfc3339_millis(),
        "2025-11-30T05:12:09.042Z"
    );
    assert_eq!(Timestamp(0).to_rfc3339_millis(), "1970-01-01T00:00:00.000Z");
}

#[test]
fn oldest_is_the_earliest_taker_not_the_smallest_id() {
    let mut sem = Semaphore::default();
    sem.acquire(&id("z"), 3, Timestamp(5));
    sem.acquire(&id("a"), 3, Timestamp(7));
    assert_eq!(sem.oldest(), Some((&id("z"), Timestamp(5))));
    assert_eq!(
        Timestamp(5).age_at(Timestamp(7_005)),
        Duration::from_secs(7)
    );
    assert_eq!(Timestamp(9).age_at(Timestamp(1)), Duration::ZERO);
}

const QUARTER: Duration = Duration::from_secs(900);

fn gated(slots: u32, on_timeout: OnDrainTimeout) -> GroupRules {
    GroupRules {
        drain: Some(DrainRule {
            timeout: QUARTER,
            on_timeout,
            window_closes: None,
        }),
        ..rules(slots, Duration::ZERO)
    }
}

#[test]
fn a_drain_gate_reserves_a_free_slot_and_grants_it_only_when_confirmed() {
    let mut group = GroupRecord::default();
    let r = gated(1, OnDrainTimeout::Hold);
    let t0 = Timestamp(1_000_000);
    assert_eq!(group.acquire(&id("a"), r, t0), Acquire::Reserves);
    assert_eq!(group.holders.len(), 1, "the reservation counts");
    assert_eq!(
        group.acquire(&id("b"), r, t0),
        Acquire::Refused(Refusal::Full)
    );
    let later = t0.plus(Duration::from_secs(60));
    let waiting = Acquire::Refused(Refusal::Draining {
        since: t0,
        until: t0.plus(QUARTER),
        overdue: false,
    });
    assert_eq!(group.acquire(&id("a"), r, later), waiting);
    // A confirmation of another reservation grants nothing.
    assert_eq!(
        group.drained(&id("a"), Some(Timestamp(5)), later),
        Drained::OtherReservation { since: t0 }
    );
    assert_eq!(group.drained(&id("b"), None, later), Drained::NoReservation);
    assert_eq!(group.drained(&id("a"), Some(t0), later), Drained::Granted);
    assert!(group.draining.is_empty());
    assert_eq!(
        group.holders.held_since(&id("a")),
        Some(later),
        "dated anew"
    );
    assert_eq!(group.acquire(&id("a"), r, later), Acquire::AlreadyHeld);
    assert_eq!(
        group.drained(&id("a"), Some(t0), later),
        Drained::AlreadyGranted
    );
}

#[test]
fn past_the_drain_timeout_a_reservation_holds_or_is_granted_as_configured() {
    let t0 = Timestamp(0);
    let due = t0.plus(QUARTER);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), gated(1, OnDrainTimeout::Hold), t0);
    let before = due.minus(Duration::from_millis(1));
    assert!(matches!(
        group.decide_acquire(&id("a"), gated(1, OnDrainTimeout::Grant), before),
        Acquire::Refused(Refusal::Draining { overdue: false, .. })
    ));
    assert_eq!(
        group.decide_acquire(&id("a"), gated(1, OnDrainTimeout::Hold), due),
        Acquire::Refused(Refusal::Draining {
            since: t0,
            until: due,
            overdue: true
        })
    );
    assert_eq!(
        group.acquire(&id("a"), gated(1, OnDrainTimeout::Grant), due),
        Acquire::DrainTimedOut { since: t0 }
    );
    assert_eq!(
        group.acquire(&id("a"), gated(1, OnDrainTimeout::Grant), due),
        Acquire::AlreadyHeld
    );
    // A gate removed: a reservation left over is granted at the next ask.
    let mut left_over = GroupRecord::default();
    left_over.acquire(&id("b"), gated(1, OnDrainTimeout::Hold), t0);
    assert_eq!(
        left_over.acquire(&id("b"), rules(1, Duration::ZERO), t0),
        Acquire::DrainTimedOut { since: t0 }
    );
}

#[test]
fn a_reserved_node_never_reboots_while_paused_or_excluded() {
    let r = gated(2, OnDrainTimeout::Grant);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    let overdue = Timestamp(0).plus(QUARTER * 2);
    let mut paused = group.clone();
    paused.pause.alarms.insert("errors".into());
    assert_eq!(
        paused.acquire(&id("a"), r, overdue),
        Acquire::Refused(Refusal::Paused)
    );
    assert_eq!(paused.drained(&id("a"), None, overdue), Drained::Paused);
    assert!(
        paused.draining.contains_key(&id("a")),
        "the reservation stays"
    );
    let mut excluded = group.clone();
    excluded.excluded.insert(
        id("a"),
        ByPerson {
            reason: reason("disk"),
            since: Timestamp(1),
            by: "ana".into(),
        },
    );
    assert_eq!(
        excluded.acquire(&id("a"), r, overdue),
        Acquire::Refused(Refusal::Excluded)
    );
    assert_eq!(excluded.drained(&id("a"), None, overdue), Drained::Excluded);
    // Its steady-state (Zincati restarted) ends the reservation.
    assert_eq!(
        group.release(&id("a"), false, Timestamp(5)),
        Release::Released
    );
    assert!(group.draining.is_empty() && group.holders.is_empty());
}

#[test]
fn a_settle_time_gates_new_reservations_and_a_short_window_begins_no_drain() {
    let mut group = GroupRecord::default();
    let settle = GroupRules {
        settle: TEN_MIN,
        ..gated(2, OnDrainTimeout::Hold)
    };
    group.last_release = Some(Timestamp(100));
    assert!(matches!(
        group.decide_acquire(&id("a"), settle, Timestamp(200)),
        Acquire::Refused(Refusal::Settling { .. })
    ));
    let mut closing = gated(2, OnDrainTimeout::Hold);
    if let Some(drain) = closing.drain.as_mut() {
        drain.window_closes = Some(Timestamp(9_000));
    }
    assert_eq!(
        group.acquire(&id("a"), closing, Timestamp(1_000_000)),
        Acquire::Refused(Refusal::WindowTooShort {
            closes: Timestamp(9_000)
        })
    );
    assert!(group.holders.is_empty(), "nothing reserved");
}

#[test]
fn a_lease_never_takes_a_reservation_and_a_take_over_behind_a_gate_is_a_reservation() {
    let leased_gate = GroupRules {
        lease: Some(HOUR),
        ..gated(2, OnDrainTimeout::Hold)
    };
    let mut group = GroupRecord::default();
    group.acquire(&id("reserved"), leased_gate, Timestamp(0));
    group.acquire(&id("held"), leased_gate, Timestamp(1));
    group.drained(&id("held"), None, Timestamp(2));
    let late = Timestamp(0).plus(HOUR * 3);
    assert_eq!(
        group.acquire(&id("new"), leased_gate, late),
        Acquire::TakesExpired {
            holder: id("held"),
            since: Timestamp(2)
        }
    );
    assert!(
        group.draining.contains_key(&id("new")),
        "the newcomer drains first"
    );
    assert!(group.draining.contains_key(&id("reserved")));
    // Only reservations are left: nothing is taken over.
    assert_eq!(
        group.acquire(&id("other"), leased_gate, late.plus(HOUR * 3)),
        Acquire::Refused(Refusal::Full)
    );
}

#[test]
fn no_take_over_begins_a_drain_the_window_would_cut_short() {
    let closing = GroupRules {
        lease: Some(HOUR),
        drain: Some(DrainRule {
            window_closes: Some(Timestamp(10)),
            ..gated(1, OnDrainTimeout::Hold).drain.unwrap()
        }),
        ..gated(1, OnDrainTimeout::Hold)
    };
    let open = GroupRules {
        drain: Some(DrainRule {
            window_closes: None,
            ..closing.drain.unwrap()
        }),
        ..closing
    };
    let mut group = GroupRecord::default();
    group.acquire(&id("held"), open, Timestamp(0));
    group.drained(&id("held"), None, Timestamp(0));
    let late = Timestamp(0).plus(HOUR * 2);
    assert_eq!(
        group.acquire(&id("new"), closing, late),
        Acquire::Refused(Refusal::WindowTooShort {
            closes: Timestamp(10)
        }),
        "an expired slot behind a gate, the window closing: no drain begins"
    );
    assert!(group.holders.holds(&id("held")), "nothing was taken");
}

#[test]
fn a_reserved_node_excluded_in_a_paused_group_hears_that_it_is_excluded() {
    let gate = gated(1, OnDrainTimeout::Hold);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), gate, Timestamp(0));
    group.pause.alarms.insert("api-5xx".into());
    group.excluded.insert(
        id("a"),
        ByPerson {
            reason: PauseReason::parse("disk").unwrap(),
            since: Timestamp(1),
            by: "ana".into(),
        },
    );
    assert_eq!(
        group.decide_acquire(&id("a"), gate, Timestamp(2)),
        Acquire::Refused(Refusal::Excluded)
    );
    group.excluded.clear();
    assert_eq!(
        group.decide_acquire(&id("a"), gate, Timestamp(2)),
        Acquire::Refused(Refusal::Paused)
    );
}

const TWENTY_MIN: Duration = Duration::from_secs(1200);

fn returning(slots: u32) -> GroupRules {
    GroupRules {
        return_timeout: Some(TWENTY_MIN),
        zone: None,
        ..rules(slots, Duration::ZERO)
    }
}

#[test]
fn a_return_gate_keeps_a_released_slot_counted_until_the_return_is_confirmed() {
    let r = returning(1);
    let mut group = GroupRecord::default();
    assert_eq!(group.acquire(&id("a"), r, Timestamp(0)), Acquire::Granted);
    assert_eq!(
        group.release(&id("a"), true, Timestamp(100)),
        Release::Returning
    );
    assert_eq!(group.holders.len(), 1, "the returning slot still counts");
    assert_eq!(group.last_release, None, "no settle period yet");
    assert_eq!(
        group.acquire(&id("b"), r, Timestamp(200)),
        Acquire::Refused(Refusal::Full)
    );
    // Zincati's steady-state at its next start, or one landing late,
    // neither resets nor ends the return.
    assert_eq!(
        group.release(&id("a"), true, Timestamp(300)),
        Release::StillReturning
    );
    assert_eq!(group.returning.get(&id("a")), Some(&Timestamp(100)));
    // A drain confirmed late (a hook's retry, a person) is of a
    // reservation that ended: the slot is returning, not granted.
    assert_eq!(
        group.drained(&id("a"), None, Timestamp(300)),
        Drained::Returning {
            since: Timestamp(100)
        }
    );
    assert_eq!(group.returning.get(&id("a")), Some(&Timestamp(100)));
    // Its own pre-reboot (a new update right after) waits for the return.
    let due = Timestamp(100).plus(TWENTY_MIN);
    assert_eq!(
        group.acquire(&id("a"), r, Timestamp(400)),
        Acquire::Refused(Refusal::Returning {
            since: Timestamp(100),
            until: due,
            overdue: false
        })
    );
    // A confirmation of another return, of a holder, of nobody: refused.
    assert_eq!(
        group.returned(&id("a"), Some(Timestamp(5)), Timestamp(500)),
        Returned::OtherReturn {
            since: Timestamp(100)
        }
    );
    assert_eq!(
        group.returned(&id("b"), None, Timestamp(500)),
        Returned::NotReturning { holds: false }
    );
    assert_eq!(
        group.returned(&id("a"), Some(Timestamp(100)), Timestamp(600)),
        Returned::Freed
    );
    assert!(group.holders.is_empty() && group.returning.is_empty());
    assert_eq!(
        group.last_release,
        Some(Timestamp(600)),
        "settles from here"
    );
    assert_eq!(
        group.returned(&id("a"), Some(Timestamp(100)), Timestamp(700)),
        Returned::NotReturning { holds: false },
        "a duplicated confirmation changes nothing"
    );
    assert_eq!(group.acquire(&id("b"), r, Timestamp(700)), Acquire::Granted);
    assert_eq!(
        group.returned(&id("b"), None, Timestamp(800)),
        Returned::NotReturning { holds: true },
        "a confirmation before the node's steady-state"
    );
}

#[test]
fn a_settle_time_runs_from_the_return_and_a_pause_never_keeps_a_slot_from_coming_back() {
    let r = GroupRules {
        settle: TEN_MIN,
        ..returning(2)
    };
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    group.release(&id("a"), true, Timestamp(1_000));
    assert_eq!(
        group.acquire(&id("b"), r, Timestamp(2_000)),
        Acquire::Granted,
        "no settle period while a returns: only the slots count"
    );
    group.pause.alarms.insert("api-5xx".into());
    assert_eq!(
        group.returned(&id("a"), None, Timestamp(3_000)),
        Returned::Freed
    );
    group.pause.alarms.clear();
    assert_eq!(
        group.acquire(&id("c"), r, Timestamp(4_000)),
        Acquire::Refused(Refusal::Settling {
            until: Timestamp(3_000).plus(TEN_MIN)
        })
    );
}

#[test]
fn a_returning_slot_is_never_taken_over_nor_renewed_and_a_reservation_released_returns() {
    let r = GroupRules {
        lease: Some(HOUR),
        drain: gated(1, OnDrainTimeout::Hold).drain,
        ..returning(1)
    };
    let mut group = GroupRecord::default();
    assert_eq!(group.acquire(&id("a"), r, Timestamp(0)), Acquire::Reserves);
    // Zincati restarted before the drain was confirmed: the node may
    // have been drained, so its slot returns too.
    assert_eq!(
        group.release(&id("a"), true, Timestamp(10)),
        Release::Returning
    );
    assert!(group.draining.is_empty());
    let late = Timestamp(0).plus(HOUR * 5);
    assert_eq!(
        group.acquire(&id("b"), r, late),
        Acquire::Refused(Refusal::Full)
    );
    assert!(!group.renews(&id("a"), r));
    assert!(matches!(
        group.acquire(&id("a"), r, late),
        Acquire::Refused(Refusal::Returning { overdue: true, .. })
    ));
}

#[test]
fn a_person_or_a_removed_gate_frees_a_returning_slot_and_an_exclusion_changes_nothing() {
    let r = returning(1);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    group.release(&id("a"), true, Timestamp(10));
    group.excluded.insert(
        id("a"),
        ByPerson {
            reason: reason("disk"),
            since: Timestamp(11),
            by: "ana".into(),
        },
    );
    assert!(matches!(
        group.decide_acquire(&id("a"), r, Timestamp(12)),
        Acquire::Refused(Refusal::Returning { .. })
    ));
    let mut confirmed = group.clone();
    assert_eq!(
        confirmed.returned(&id("a"), None, Timestamp(13)),
        Returned::Freed,
        "an excluded node still comes back"
    );
    // The gate removed: the node's pre-reboot is a holder's, and its
    // steady-state (or a person's release) frees the slot.
    let plain = rules(1, Duration::ZERO);
    assert_eq!(
        group.decide_acquire(&id("a"), plain, Timestamp(20)),
        Acquire::AlreadyHeld
    );
    assert_eq!(
        group.release(&id("a"), false, Timestamp(30)),
        Release::Released
    );
    assert!(group.returning.is_empty() && group.holders.is_empty());
}

#[test]
fn an_overdue_return_stops_its_group_once_and_keeps_its_slot() {
    let r = returning(2);
    let mut group = GroupRecord::default();
    group.acquire(&id("a"), r, Timestamp(0));
    group.acquire(&id("b"), r, Timestamp(0));
    group.release(&id("a"), true, Timestamp(100));
    group.release(&id("b"), true, Timestamp(200));
    let due_a = Timestamp(100).plus(TWENTY_MIN);
    assert!(
        group
            .returns_overdue(TWENTY_MIN, due_a.minus(Duration::from_millis(1)))
            .is_empty()
    );
    assert_eq!(
        group.returns_overdue(TWENTY_MIN, due_a),
        vec![(id("a"), Timestamp(100))]
    );
    let later = Timestamp(200).plus(TWENTY_MIN);
    let overdue = group.returns_overdue(TWENTY_MIN, later);
    assert_eq!(overdue.len(), 2);
    for (node, since) in &overdue {
        assert_eq!(
            group.stop_rollout(node, *since, StopCause::Return, later),
            Stopping::Stopped
        );
    }
    let stop = group.pause.stop.clone().unwrap();
    assert_eq!((stop.id, stop.returning_since), (id("a"), Timestamp(100)));
    assert!(group.pause.is_paused());
    assert_eq!(group.holders.len(), 2, "the slots stay returning");
    assert_eq!(
        group.stop_rollout(&id("a"), Timestamp(100), StopCause::Return, later),
        Stopping::AlreadyCounted
    );
    // A person resumes without confirming: the next sweep finds nothing
    // new to stop for.
    group.pause.stop = None;
    assert!(
        group
            .returns_overdue(TWENTY_MIN, later.plus(HOUR))
            .is_empty()
    );
    assert_eq!(
        group.acquire(&id("c"), r, later.plus(HOUR)),
        Acquire::Refused(Refusal::Full),
        "nobody goes down while both are out"
    );
    // A node that comes back after its timeout frees its slot; the stop
    // of another return's timeout is a person's to clear.
    assert_eq!(
        group.returned(&id("b"), None, later.plus(HOUR)),
        Returned::Freed
    );
    assert!(!group.returns_failed.contains_key(&id("b")));
    assert_eq!(
        group.stop_rollout(&id("b"), Timestamp(200), StopCause::Return, later),
        Stopping::NotReturning
    );
}

fn zoned(slots: u32, zone: &str) -> GroupRules {
    GroupRules {
        slots,
        zone: Some(crate::domain::zones::ZoneGroup::of(
            &crate::domain::input::GroupName::parse(zone).unwrap(),
        )),
        ..GroupRules::default()
    }
}

#[test]
fn a_group_split_by_zone_has_one_zone_out_at_a_time() {
    let mut group = GroupRecord::default();
    let (a, b) = (zoned(3, "w.a"), zoned(3, "w.b"));
    assert_eq!(group.acquire(&id("a1"), a, Timestamp(1)), Acquire::Granted);
    assert_eq!(group.zone.as_deref(), Some("w.a"));
    assert_eq!(
        group.acquire(&id("b1"), b, Timestamp(2)),
        Acquire::Refused(Refusal::OtherZone { zone: "w.a".into() }),
        "a free slot, but zone a is out"
    );
    assert!(!group.holders.holds(&id("b1")), "nothing was taken");
    assert_eq!(group.acquire(&id("a2"), a, Timestamp(3)), Acquire::Granted);
    assert_eq!(group.acquire(&id("a3"), a, Timestamp(3)), Acquire::Granted);
    assert_eq!(
        group.decide_acquire(&id("a4"), a, Timestamp(4)),
        Acquire::Refused(Refusal::Full),
        "the group's slots still cap its own zone"
    );
    assert_eq!(
        group.decide_acquire(&id("b1"), b, Timestamp(4)),
        Acquire::Refused(Refusal::Full),
        "full is the answer where no zone could go"
    );
    for node in ["a1", "a2"] {
        group.release(&id(node), false, Timestamp(5));
    }
    assert_eq!(
        group.decide_acquire(&id("b1"), b, Timestamp(6)),
        Acquire::Refused(Refusal::OtherZone { zone: "w.a".into() }),
        "one node of zone a is still out"
    );
    group.release(&id("a3"), false, Timestamp(6));
    assert_eq!(group.acquire(&id("b1"), b, Timestamp(7)), Acquire::Granted);
    assert_eq!(group.zone.as_deref(), Some("w.b"));
    // A holder of another zone keeps its slot, and a node asking with the
    // parent's own name (its zone unknown) is a zone of its own.
    assert_eq!(
        group.decide_acquire(&id("b1"), a, Timestamp(8)),
        Acquire::AlreadyHeld
    );
    assert_eq!(
        group.decide_acquire(&id("n1"), zoned(3, "w"), Timestamp(8)),
        Acquire::Refused(Refusal::OtherZone { zone: "w.b".into() })
    );
}

#[test]
fn a_returning_or_reserved_slot_keeps_its_zone_out() {
    let mut group = GroupRecord::default();
    let gate = |zone| GroupRules {
        return_timeout: Some(Duration::from_secs(600)),
        ..zoned(2, zone)
    };
    assert_eq!(
        group.acquire(&id("a1"), gate("w.a"), Timestamp(1)),
        Acquire::Granted
    );
    assert_eq!(
        group.release(&id("a1"), true, Timestamp(2)),
        Release::Returning
    );
    assert_eq!(
        group.decide_acquire(&id("b1"), gate("w.b"), Timestamp(3)),
        Acquire::Refused(Refusal::OtherZone { zone: "w.a".into() }),
        "back only once its return is confirmed"
    );
    let drained = GroupRules {
        drain: Some(DrainRule {
            timeout: Duration::from_secs(600),
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        ..zoned(2, "w.c")
    };
    let mut group = GroupRecord::default();
    assert_eq!(
        group.acquire(&id("c1"), drained, Timestamp(1)),
        Acquire::Reserves
    );
    assert_eq!(
        group.zone.as_deref(),
        Some("w.c"),
        "a reservation is out too"
    );
    assert_eq!(
        group.decide_acquire(
            &id("b1"),
            GroupRules {
                zone: gate("w.b").zone,
                ..drained
            },
            Timestamp(2)
        ),
        Acquire::Refused(Refusal::OtherZone { zone: "w.c".into() })
    );
}

#[test]
fn a_lease_taken_over_across_zones_only_from_the_last_holder() {
    let lease = Duration::from_secs(3600);
    let leased = |zone| GroupRules {
        lease: Some(lease),
        ..zoned(1, zone)
    };
    let mut group = GroupRecord::default();
    assert_eq!(
        group.acquire(&id("a1"), leased("w.a"), Timestamp(0)),
        Acquire::Granted
    );
    let later = Timestamp(0).plus(lease);
    // The expired holder is the only one: its zone is no longer out once
    // its slot passes on.
    assert!(matches!(
        group.acquire(&id("b1"), leased("w.b"), later),
        Acquire::TakesExpired { .. }
    ));
    assert_eq!(group.zone.as_deref(), Some("w.b"));
    // With two holders of zone b, one expired, zone a waits for both.
    let two = |zone| GroupRules {
        lease: Some(lease),
        ..zoned(2, zone)
    };
    assert_eq!(
        group.acquire(&id("b2"), two("w.b"), later.plus(lease)),
        Acquire::Granted
    );
    let much_later = later.plus(lease * 3);
    assert_eq!(
        group.decide_acquire(&id("a2"), two("w.a"), much_later),
        Acquire::Refused(Refusal::OtherZone { zone: "w.b".into() })
    );
    assert!(matches!(
        group.decide_acquire(&id("b3"), two("w.b"), much_later),
        Acquire::TakesExpired { .. }
    ));
}

#[test]
fn slots_held_from_before_the_split_keep_every_zone_waiting() {
    let mut group = GroupRecord::default();
    let plain = GroupRules {
        slots: 2,
        ..GroupRules::default()
    };
    assert_eq!(
        group.acquire(&id("old"), plain, Timestamp(1)),
        Acquire::Granted
    );
    assert_eq!(group.zone, None);
    assert_eq!(
        group.decide_acquire(&id("a1"), zoned(2, "w.a"), Timestamp(2)),
        Acquire::Refused(Refusal::OtherZone {
            zone: String::new()
        })
    );
}

#[test]
fn a_grant_while_the_split_is_off_forgets_the_zone_recorded_before() {
    let mut group = GroupRecord::default();
    assert_eq!(
        group.acquire(&id("a1"), zoned(2, "w.a"), Timestamp(1)),
        Acquire::Granted
    );
    let plain = GroupRules {
        slots: 2,
        ..GroupRules::default()
    };
    assert_eq!(
        group.acquire(&id("b1"), plain, Timestamp(2)),
        Acquire::Granted
    );
    assert_eq!(group.zone, None, "b1's zone is not known");
    assert_eq!(
        group.release(&id("a1"), false, Timestamp(3)),
        Release::Released
    );
    assert_eq!(
        group.decide_acquire(&id("a1"), zoned(2, "w.a"), Timestamp(4)),
        Acquire::Refused(Refusal::OtherZone {
            zone: String::new()
        })
    );
}

#[test]
fn a_zones_answer_comes_after_exclusion_pause_and_settle_and_before_full() {
    let mut group = GroupRecord::default();
    let settle = GroupRules {
        settle: Duration::from_secs(60),
        ..zoned(2, "w.a")
    };
    assert_eq!(
        group.acquire(&id("a1"), settle, Timestamp(0)),
        Acquire::Granted
    );
    let b = GroupRules {
        zone: zoned(2, "w.b").zone,
        ..settle
    };
    assert_eq!(
        group.decide_acquire(&id("b1"), b, Timestamp(1)),
        Acquire::Refused(Refusal::OtherZone { zone: "w.a".into() })
    );
    group.pause.alarms.insert("x".into());
    assert_eq!(
        group.decide_acquire(&id("b1"), b, Timestamp(1)),
        Acquire::Refused(Refusal::Paused)
    );
    group.excluded.insert(
        id("b1"),
        ByPerson {
            reason: PauseReason::parse("disk").unwrap(),
            since: Timestamp(1),
            by: "alice".into(),
        },
    );
    assert_eq!(
        group.decide_acquire(&id("b1"), b, Timestamp(1)),
        Acquire::Refused(Refusal::Excluded)
    );
    group.pause.alarms.clear();
    group.excluded.clear();
    // A release starts the settle period: settling wins over the zone.
    assert_eq!(
        group.acquire(&id("a2"), settle, Timestamp(2)),
        Acquire::Granted
    );
    group.release(&id("a2"), false, Timestamp(3));
    assert!(matches!(
        group.decide_acquire(&id("b1"), b, Timestamp(4)),
        Acquire::Refused(Refusal::Settling { .. })
    ));
}

fn with_canary(slots: u32, canary: &str) -> GroupRules {
    GroupRules {
        slots,
        canary: Some(crate::domain::lock::canary::parse_canary(canary).unwrap()),
        ..GroupRules::default()
    }
}

const MIN: u64 = 60_000;

#[test]
fn the_canary_goes_alone_then_a_wave_after_the_bake_then_the_rest() {
    // 30m bake, the canary then 2 then the rest, at 3 slots.
    let rules = with_canary(3, "30m:1+2");
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    assert_eq!(group.acquire(&id("c"), rules, t(0)), Acquire::Granted);
    assert_eq!(group.wave_grants, Some(1));
    assert_eq!(group.rollout_began, Some(t(0)));
    let canary = crate::domain::lock::canary::parse_canary("30m:1+2").unwrap();
    let out = Acquire::Refused(Refusal::WaveOut {
        wave: canary.wave_of(1),
    });
    assert_eq!(group.acquire(&id("a"), rules, t(1)), out, "a slot is free");
    assert_eq!(group.release(&id("c"), false, t(10)), Release::Released);
    assert_eq!(
        group.acquire(&id("a"), rules, t(20)),
        Acquire::Refused(Refusal::Baking {
            wave: canary.wave_of(1),
            until: t(40)
        })
    );
    // Wave 2: two nodes at once, the third waits for both and the bake.
    assert_eq!(group.acquire(&id("a"), rules, t(40)), Acquire::Granted);
    assert_eq!(group.acquire(&id("b"), rules, t(41)), Acquire::Granted);
    assert_eq!(
        group.acquire(&id("d"), rules, t(42)),
        Acquire::Refused(Refusal::WaveOut {
            wave: canary.wave_of(3)
        })
    );
    group.release(&id("a"), false, t(50));
    assert!(matches!(
        group.acquire(&id("d"), rules, t(51)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    group.release(&id("b"), false, t(55));
    assert!(matches!(
        group.acquire(&id("d"), rules, t(60)),
        Acquire::Refused(Refusal::Baking { until, .. }) if until == t(85)
    ));
    // The rest: the group's slots, no wave waits.
    for (n, node) in ["d", "e", "f"].iter().enumerate() {
        assert_eq!(
            group.acquire(&id(node), rules, t(85 + n as u64)),
            Acquire::Granted
        );
    }
    assert_eq!(
        group.acquire(&id("g"), rules, t(90)),
        Acquire::Refused(Refusal::Full)
    );
    assert_eq!(group.wave_grants, Some(6));
}

#[test]
fn a_quiet_group_begins_a_new_rollout_with_a_canary() {
    let rules = with_canary(3, "30m");
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    group.acquire(&id("c"), rules, t(0));
    group.release(&id("c"), false, t(10));
    assert_eq!(group.acquire(&id("a"), rules, t(40)), Acquire::Granted);
    assert_eq!(
        group.acquire(&id("b"), rules, t(41)),
        Acquire::Granted,
        "the rest"
    );
    group.release(&id("a"), false, t(50));
    group.release(&id("b"), false, t(60));
    // Quiet for the bake and 6 hours after the last return: a new rollout.
    let quiet = 60 + 30 + 6 * 60;
    assert_eq!(
        group.acquire(&id("x"), rules, t(quiet - 1)),
        Acquire::Granted
    );
    assert_eq!(group.wave_grants, Some(4), "still the old rollout's rest");
    group.release(&id("x"), false, t(quiet));
    let next = quiet + 30 + 6 * 60 + 1;
    assert_eq!(group.acquire(&id("y"), rules, t(next)), Acquire::Granted);
    assert_eq!(group.wave_grants, Some(1), "a new rollout's canary");
    assert_eq!(group.rollout_began, Some(t(next)));
    assert!(matches!(
        group.acquire(&id("z"), rules, t(next + 1)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
}

#[test]
fn a_canary_that_does_not_come_back_stops_the_group_once() {
    let rules = with_canary(2, "30m:1:1h");
    let canary = rules.canary.unwrap();
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    group.acquire(&id("c"), rules, t(0));
    assert!(group.waves_overdue(canary, t(59)).is_empty());
    assert_eq!(group.waves_overdue(canary, t(60)), vec![(id("c"), t(0))]);
    assert_eq!(
        group.stop_rollout(&id("c"), t(0), StopCause::Wave, t(61)),
        Stopping::Stopped
    );
    assert_eq!(group.pause.stop.as_ref().unwrap().cause, StopCause::Wave);
    assert!(group.waves_overdue(canary, t(70)).is_empty(), "once");
    assert_eq!(
        group.stop_rollout(&id("c"), t(0), StopCause::Wave, t(71)),
        Stopping::AlreadyCounted
    );
    // A person's resume is not undone by the next sweep; the canary still
    // holds the group until it is back.
    group.pause.stop = None;
    assert!(group.waves_overdue(canary, t(80)).is_empty());
    assert!(matches!(
        group.acquire(&id("a"), rules, t(81)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    // In the rest, a slow node is the lease's or the return gate's matter.
    group.release(&id("c"), false, t(90));
    group.acquire(&id("a"), rules, t(120));
    assert!(group.waves_overdue(canary, t(500)).is_empty());
}

#[test]
fn a_lease_never_hands_the_canarys_slot_to_the_next_node() {
    let rules = GroupRules {
        lease: Some(Duration::from_secs(1800)),
        ..with_canary(1, "30m")
    };
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    group.acquire(&id("c"), rules, t(0));
    assert!(matches!(
        group.acquire(&id("a"), rules, t(120)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    assert!(group.holders.holds(&id("c")));
}

#[test]
fn a_returning_or_reserved_wave_node_is_still_out() {
    // Return gate and drain gate: the next wave waits for the slot to be
    // confirmed back, and a reservation begins the canary.
    let rules = GroupRules {
        return_timeout: Some(Duration::from_secs(1200)),
        drain: Some(DrainRule {
            timeout: Duration::from_secs(900),
            on_timeout: OnDrainTimeout::Hold,
            window_closes: None,
        }),
        ..with_canary(3, "10m")
    };
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    assert_eq!(group.acquire(&id("c"), rules, t(0)), Acquire::Reserves);
    assert!(matches!(
        group.acquire(&id("a"), rules, t(1)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    group.drained(&id("c"), None, t(2));
    assert_eq!(group.release(&id("c"), true, t(5)), Release::Returning);
    assert!(matches!(
        group.acquire(&id("a"), rules, t(6)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    group.returned(&id("c"), None, t(8));
    assert!(matches!(
        group.acquire(&id("a"), rules, t(9)),
        Acquire::Refused(Refusal::Baking { until, .. }) if until == t(18)
    ));
    assert_eq!(group.acquire(&id("a"), rules, t(18)), Acquire::Reserves);
}

#[test]
fn the_waves_answer_after_pause_settle_and_zone_and_before_a_free_slot() {
    let rules = GroupRules {
        settle: Duration::from_secs(1200),
        ..with_canary(3, "30m")
    };
    let mut group = GroupRecord::default();
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    group.acquire(&id("c"), rules, t(0));
    group.pause.alarms.insert("5xx".into());
    assert_eq!(
        group.decide_acquire(&id("a"), rules, t(1)),
        Acquire::Refused(Refusal::Paused)
    );
    group.pause.alarms.clear();
    group.release(&id("c"), false, t(10));
    assert!(matches!(
        group.decide_acquire(&id("a"), rules, t(20)),
        Acquire::Refused(Refusal::Settling { .. })
    ));
    assert!(matches!(
        group.decide_acquire(&id("a"), rules, t(35)),
        Acquire::Refused(Refusal::Baking { .. })
    ));
    // A full group answers full: no wave would let the node in either.
    let full = with_canary(1, "30m");
    let mut held = GroupRecord::default();
    held.acquire(&id("c"), full, t(0));
    assert_eq!(
        held.decide_acquire(&id("a"), full, t(1)),
        Acquire::Refused(Refusal::Full)
    );
}

#[test]
fn an_excluded_node_hears_so_before_the_wave_and_another_zone_before_the_wave() {
    let t = |m: u64| Timestamp(1_000_000_000 + m * MIN);
    let canary = crate::domain::lock::canary::parse_canary("30m").unwrap();
    let mut group = GroupRecord::default();
    let in_zone = |zone: &str| GroupRules {
        zone: Some(ZoneGroup::of(
            &crate::domain::input::GroupName::parse(zone).unwrap(),
        )),
        canary: Some(canary),
        ..with_canary(3, "30m")
    };
    assert_eq!(
        group.acquire(&id("c"), in_zone("workers.a"), t(0)),
        Acquire::Granted
    );
    // The canary of zone a is out: a node of zone b hears the zone, a
    // node of zone a the wave, an excluded node its exclusion.
    assert_eq!(
        group.decide_acquire(&id("b"), in_zone("workers.b"), t(1)),
        Acquire::Refused(Refusal::OtherZone {
            zone: "workers.a".into()
        })
    );
    assert!(matches!(
        group.decide_acquire(&id("a"), in_zone("workers.a"), t(1)),
        Acquire::Refused(Refusal::WaveOut { .. })
    ));
    group.excluded.insert(
        id("x"),
        ByPerson {
            reason: PauseReason::parse("disk").unwrap(),
            since: t(1),
            by: "ana".into(),
        },
    );
    assert_eq!(
        group.decide_acquire(&id("x"), in_zone("workers.a"), t(2)),
        Acquire::Refused(Refusal::Excluded)
    );
}

#[test]
fn a_stop_says_what_its_node_did_by_its_cause() {
    let stop = |cause| RolloutStop {
        id: NodeId::parse("n1").unwrap(),
        returning_since: Timestamp(1_764_480_000_000),
        at: Timestamp(1_764_483_600_000),
        cause,
    };
    let paused = |cause| {
        crate::domain::lock::pause::paused_because(&Pause {
            stop: Some(stop(cause)),
            ..Pause::default()
        })
    };
    let returned = paused(StopCause::Return);
    assert!(
        returned.contains("node 'n1' gave its slot back at 2025-11-30T05:20:00Z and its return"),
        "{returned}"
    );
    // A wave's node never gave its slot back, and the group may have no
    // return gate: the journal names the canary's time.
    let wave = paused(StopCause::Wave);
    assert!(
        wave.contains("node 'n1', of a canary's wave, took its slot at 2025-11-30T05:20:00Z"),
        "{wave}"
    );
    assert!(!wave.contains("gave its slot back"), "{wave}");
    assert!(!wave.contains("return timeout"), "{wave}");
}
