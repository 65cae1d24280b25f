use super::*;

fn one_of_each() -> Vec<Error> {
    vec![
        Error::Unauthorized(Credentials::NotAccepted),
        Error::InvalidBody("b".into()),
        Error::InvalidId("i".into()),
        Error::InvalidGroup("g".into()),
        Error::UnknownGroup {
            group: "g".into(),
            meant: None,
        },
        Error::ForbiddenGroup("g".into()),
        Error::TooManyGroups {
            group: "g".into(),
            limit: 1,
        },
        Error::SemaphoreFull {
            group: "g".into(),
            holders: 1,
            slots: 1,
            lease_ends: None,
        },
        Error::SlotTaken {
            group: "g".into(),
            id: "n1".into(),
            taken_at: "2026-11-30T05:12:09Z".into(),
            lease: Some("30m".into()),
        },
        Error::OtherZoneOut {
            group: "g".into(),
            out: "g.us-east-1a".into(),
            asked: "g.us-east-1b".into(),
        },
        Error::GroupPaused {
            group: "g".into(),
            why: "by alice".into(),
        },
        Error::NodeExcluded {
            group: "g".into(),
            id: "n1".into(),
            why: "by alice".into(),
        },
        Error::WaitingForDrain {
            group: "g".into(),
            id: "n1".into(),
            since: "2026-11-30T05:12:09Z".into(),
            until: "2026-11-30T05:27:09Z".into(),
            reserved_now: true,
            overdue: false,
        },
        Error::WaitingForReturn {
            group: "g".into(),
            id: "n1".into(),
            since: "2026-11-30T05:12:09Z".into(),
            until: "2026-11-30T05:32:09Z".into(),
            overdue: false,
        },
        Error::WaitingForWave {
            group: "g".into(),
            wave: "the canary".into(),
            plan: "the canary, then the rest".into(),
            bake: "30m".into(),
            until: None,
        },
        Error::Settling {
            group: "g".into(),
            until: "2026-11-30T05:12:09Z".into(),
            settle: "10m".into(),
        },
        Error::OutsideMaintenanceWindow {
            group: "g".into(),
            opens: None,
        },
        Error::SettingsDiffer {
            group: "g".into(),
            region: "eu-central-1".into(),
        },
        Error::StoreUnavailable,
        Error::Internal,
    ]
}

/// Stops compiling when a variant is added without a place here, and so
/// in `one_of_each` and `KINDS`.
fn every_variant_is_counted(err: &Error) {
    match err {
        Error::Unauthorized(_)
        | Error::InvalidBody(_)
        | Error::InvalidId(_)
        | Error::InvalidGroup(_)
        | Error::UnknownGroup { .. }
        | Error::ForbiddenGroup(_)
        | Error::TooManyGroups { .. }
        | Error::SemaphoreFull { .. }
        | Error::SlotTaken { .. }
        | Error::OtherZoneOut { .. }
        | Error::GroupPaused { .. }
        | Error::NodeExcluded { .. }
        | Error::WaitingForDrain { .. }
        | Error::WaitingForReturn { .. }
        | Error::WaitingForWave { .. }
        | Error::WindowClosesBeforeDrain { .. }
        | Error::Settling { .. }
        | Error::OutsideMaintenanceWindow { .. }
        | Error::SettingsDiffer { .. }
        | Error::StoreUnavailable
        | Error::Internal => {}
    }
}

#[test]
fn a_return_refusal_says_since_when_until_when_and_what_ends_an_overdue_one() {
    let waiting = |overdue| Error::WaitingForReturn {
        group: "workers".into(),
        id: "n1".into(),
        since: "2026-11-30T05:12:09Z".into(),
        until: "2026-11-30T05:32:09Z".into(),
        overdue,
    };
    let waits = waiting(false).value();
    assert!(
        waits.contains("gave its reboot slot back at 2026-11-30T05:12:09Z")
            && waits.contains("due by 2026-11-30T05:32:09Z"),
        "{waits}"
    );
    let overdue = waiting(true).value();
    assert!(
        overdue.contains("nobody confirmed its return to service by 2026-11-30T05:32:09Z")
            && overdue.contains("fleetlock returned")
            && overdue.contains("fleetlock release"),
        "{overdue}"
    );
    assert_eq!(waiting(true).status(), 423);
}

#[test]
fn a_drain_refusal_says_since_when_until_when_and_what_ends_it() {
    let waiting = |reserved_now, overdue| Error::WaitingForDrain {
        group: "workers".into(),
        id: "n1".into(),
        since: "2026-11-30T05:12:09Z".into(),
        until: "2026-11-30T05:27:09Z".into(),
        reserved_now,
        overdue,
    };
    let reserved = waiting(true, false).value();
    assert!(
        reserved.starts_with("a reboot slot is reserved for this node ('n1') in group")
            && reserved.contains("its drain is confirmed, which is due by 2026-11-30T05:27:09Z"),
        "{reserved}"
    );
    let waits = waiting(false, false).value();
    assert!(waits.contains("since 2026-11-30T05:12:09Z"), "{waits}");
    let overdue = waiting(false, true).value();
    assert!(
        overdue.contains("nobody confirmed it by 2026-11-30T05:27:09Z")
            && overdue.contains("fleetlock drained")
            && overdue.contains("fleetlock release"),
        "{overdue}"
    );
    for err in [waiting(true, false), waiting(false, true)] {
        assert_eq!((err.kind(), err.status()), ("waiting_for_drain", 423));
    }
    let closing = Error::WindowClosesBeforeDrain {
        group: "workers".into(),
        closes: "2026-11-30T06:00:00Z".into(),
        timeout: "15m".into(),
    };
    assert_eq!(
        (closing.kind(), closing.status()),
        ("outside_maintenance_window", 423)
    );
    assert!(closing.value().contains("closes at 2026-11-30T06:00:00Z"));
}

#[test]
fn every_kind_is_listed_once_and_snake_case() {
    one_of_each().iter().for_each(every_variant_is_counted);
    let kinds: Vec<_> = one_of_each().iter().map(Error::kind).collect();
    assert_eq!(kinds, Error::KINDS);
    for kind in kinds {
        assert!(
            kind.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{kind}"
        );
    }
}

#[test]
fn only_store_faults_are_5xx_and_refusals_are_never_2xx_or_429() {
    for err in one_of_each() {
        let status = err.status();
        assert!((400..600).contains(&status), "{err:?}");
        assert_ne!(status, 429, "{err:?}");
        let server_fault = matches!(
            err,
            Error::StoreUnavailable | Error::Internal | Error::SettingsDiffer { .. }
        );
        assert_eq!(status >= 500, server_fault, "{err:?}");
    }
}

#[test]
fn the_answers_table_lists_every_kind_with_its_status() {
    let answers = include_str!("../../../docs/configuration.md");
    for err in one_of_each() {
        let row = format!("| `{}` | {} |", err.kind(), err.status());
        assert!(
            answers.contains(&row),
            "docs/configuration.md lacks the row {row}"
        );
    }
}

#[test]
fn an_unknown_group_is_named_in_its_value() {
    let unknown = Error::UnknownGroup {
        group: "db".into(),
        meant: None,
    };
    assert_eq!(unknown.kind(), "unknown_group");
    assert_eq!(
        unknown.value(),
        "group 'db' is not configured on this server"
    );
}

#[test]
fn each_value_stands_alone_in_a_journal() {
    let full = |holders, slots| {
        Error::SemaphoreFull {
            group: "workers".into(),
            holders,
            slots,
            lease_ends: None,
        }
        .value()
    };
    assert_eq!(
        full(1, 1),
        "the only reboot slot of group 'workers' is taken (1 holder); try again later"
    );
    assert_eq!(
        full(3, 2),
        "all 2 reboot slots of group 'workers' are taken (3 holders); try again later"
    );
    let leased = Error::SemaphoreFull {
        group: "workers".into(),
        holders: 1,
        slots: 1,
        lease_ends: Some(("2026-11-30T11:12:09Z".into(), "6h".into())),
    };
    assert_eq!(
        leased.value(),
        "the only reboot slot of group 'workers' is taken (1 holder); the longest-held \
             slot's 6h lease runs out at 2026-11-30T11:12:09Z, and then the next node to ask \
             takes it over; try again later"
    );
    // A 404's hint: src/http/transport.rs, where the edge refuses it.
    // No credentials and refused credentials read differently, and
    // neither says whether a name exists.
    let missing = Error::Unauthorized(Credentials::Missing).value();
    let refused = Error::Unauthorized(Credentials::NotAccepted).value();
    assert_ne!(missing, refused);
    assert!(refused.starts_with("the credentials in base_url were not accepted"));
    assert!(
        !refused.contains("unknown") && !refused.contains("exist"),
        "{refused}"
    );
    // A window in UTC says UTC once.
    let utc = Error::OutsideMaintenanceWindow {
        group: "db".into(),
        opens: Some(("2026-12-05T22:00:00Z".into(), None)),
    }
    .value();
    assert!(
        utc.ends_with("the next opens at 2026-12-05T22:00:00Z"),
        "{utc}"
    );
}
