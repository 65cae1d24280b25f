use super::*;

fn group(s: &str) -> GroupName {
    GroupName::parse(s).unwrap()
}

fn schedule(spec: &str, zone: &str) -> Schedule {
    Schedule::parse(spec, Some(zone), |_| Ok(()), true).unwrap()
}

/// An instant from a wall-clock time in UTC.
fn utc(text: &str) -> Timestamp {
    let ts: jiff::Timestamp = text.parse().unwrap();
    Timestamp(ts.as_millisecond() as u64)
}

fn text(at: Timestamp) -> String {
    at.to_rfc3339()
}

#[test]
fn inside_and_outside_a_weekend_night_window() {
    let s = schedule("w: days=Sat,Sun start_time=22:00 length_minutes=120", "UTC");
    let g = group("w");
    // 2026-12-05 is a Saturday.
    assert_eq!(
        s.state(&g, utc("2026-12-05T22:30:00Z")),
        WindowState::Open {
            until: Some(utc("2026-12-06T00:00:00Z"))
        }
    );
    assert_eq!(
        s.state(&g, utc("2026-12-05T21:59:59Z")),
        WindowState::Closed {
            opens: Some(utc("2026-12-05T22:00:00Z"))
        }
    );
    // The window is half-open: its end minute is outside.
    assert_eq!(
        s.state(&g, utc("2026-12-06T00:00:00Z")),
        WindowState::Closed {
            opens: Some(utc("2026-12-06T22:00:00Z"))
        }
    );
    // From Monday, the next one is Saturday.
    assert_eq!(
        s.state(&g, utc("2026-12-07T10:00:00Z")),
        WindowState::Closed {
            opens: Some(utc("2026-12-12T22:00:00Z"))
        }
    );
    assert_eq!(
        s.state(&group("other-without-windows"), utc("2026-12-07T10:00:00Z")),
        WindowState::AlwaysOpen
    );
}

#[test]
fn a_window_crosses_midnight_and_the_end_of_the_week() {
    // Sunday 23:00 for 3 h: into Monday 02:00, past minute 10080.
    let s = schedule("w: days=Sun start_time=23:00 length_minutes=180", "UTC");
    let g = group("w");
    for inside in [
        "2026-12-06T23:00:00Z",
        "2026-12-07T00:00:00Z",
        "2026-12-07T01:59:00Z",
    ] {
        assert!(
            matches!(s.state(&g, utc(inside)), WindowState::Open { .. }),
            "{inside}"
        );
    }
    assert_eq!(
        s.state(&g, utc("2026-12-07T00:30:00Z")),
        WindowState::Open {
            until: Some(utc("2026-12-07T02:00:00Z"))
        }
    );
    assert!(matches!(
        s.state(&g, utc("2026-12-07T02:00:00Z")),
        WindowState::Closed { .. }
    ));
    // Saturday to Sunday across midnight.
    let s = schedule("w: days=Sat start_time=22:00 length_minutes=240", "UTC");
    assert!(matches!(
        s.state(&g, utc("2026-12-06T01:00:00Z")),
        WindowState::Open { .. }
    ));
    assert!(matches!(
        s.state(&g, utc("2026-12-06T02:00:00Z")),
        WindowState::Closed { .. }
    ));
}

#[test]
fn overlapping_windows_join_and_the_last_close_counts() {
    let s = schedule(
        "w: days=Tue start_time=01:00 length_minutes=120; w: days=Tue start_time=02:00 length_minutes=120",
        "UTC",
    );
    // 2026-12-08 is a Tuesday.
    assert_eq!(
        s.state(&group("w"), utc("2026-12-08T01:30:00Z")),
        WindowState::Open {
            until: Some(utc("2026-12-08T04:00:00Z"))
        }
    );
    let always = schedule(
        "w: days=Mon,Tue,Wed,Thu,Fri,Sat,Sun start_time=00:00 length_minutes=1440",
        "UTC",
    );
    assert_eq!(
        always.state(&group("w"), utc("2026-12-08T01:30:00Z")),
        WindowState::Open { until: None }
    );
}

#[test]
fn the_wildcard_serves_groups_without_windows_of_their_own() {
    let s = schedule(
        "db: days=Wed start_time=03:00 length_minutes=60; *: days=Sat start_time=00:00 length_minutes=1440",
        "UTC",
    );
    let saturday = utc("2026-12-05T12:00:00Z");
    assert!(matches!(
        s.state(&group("db"), saturday),
        WindowState::Closed { .. }
    ));
    assert!(matches!(
        s.state(&group("web"), saturday),
        WindowState::Open { .. }
    ));
}

#[test]
fn europe_spring_forward_skips_a_window_in_the_missing_hour() {
    // Berlin, 2027-03-28: 02:00 local jumps to 03:00.
    let s = schedule(
        "w: days=Sun start_time=02:15 length_minutes=30",
        "Europe/Berlin",
    );
    let g = group("w");
    // Sunday 01:59 local (00:59Z): the window does not happen that day;
    // the next is a week later, 02:15 CEST = 00:15Z.
    assert_eq!(
        s.state(&g, utc("2027-03-28T00:59:00Z")),
        WindowState::Closed {
            opens: Some(utc("2027-04-04T00:15:00Z"))
        }
    );
    // A window reaching past the gap opens when the clock lands in it.
    let s = schedule(
        "w: days=Sun start_time=02:30 length_minutes=60",
        "Europe/Berlin",
    );
    assert_eq!(
        s.state(&g, utc("2027-03-28T00:59:00Z")),
        WindowState::Closed {
            opens: Some(utc("2027-03-28T01:00:00Z"))
        }
    );
    assert_eq!(
        s.state(&g, utc("2027-03-28T01:00:00Z")),
        WindowState::Open {
            until: Some(utc("2027-03-28T01:30:00Z"))
        }
    );
}

/// The "none of them can happen" answer is a guard: a weekly window
/// skipped by a clock change (an hour, or Samoa's whole 2011-12-30)
/// still opens a week later, inside the search horizon. Swept hour by
/// hour over ten days around each zone's oddest change.
#[test]
fn every_window_opens_again_whatever_the_clock_changes() {
    let zones = [
        ("Europe/Berlin", "2027-03-24T00:00:00Z"),
        ("Australia/Lord_Howe", "2026-10-01T00:00:00Z"),
        ("America/Santiago", "2026-09-02T00:00:00Z"),
        ("Pacific/Apia", "2011-12-26T00:00:00Z"),
    ];
    for (zone, from) in zones {
        for day in ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"] {
            for start in ["00:00", "02:15", "12:00", "23:59"] {
                let spec = format!("w: days={day} start_time={start} length_minutes=1");
                let s = schedule(&spec, zone);
                for hour in 0..240 {
                    let at = utc(from).plus(std::time::Duration::from_secs(hour * 3600));
                    let state = s.state(&group("w"), at);
                    assert!(
                        !matches!(
                            state,
                            WindowState::Closed { opens: None } | WindowState::Open { until: None }
                        ),
                        "{zone} {spec} at {at:?}: {state:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn europe_fall_back_repeats_a_window_in_the_doubled_hour() {
    // Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET.
    let s = schedule(
        "w: days=Sun start_time=02:15 length_minutes=30",
        "Europe/Berlin",
    );
    let g = group("w");
    // First pass: 02:15 CEST = 00:15Z, until 00:45Z.
    assert_eq!(
        s.state(&g, utc("2026-10-25T00:20:00Z")),
        WindowState::Open {
            until: Some(utc("2026-10-25T00:45:00Z"))
        }
    );
    // Between the passes it opens again at 02:15 CET = 01:15Z.
    assert_eq!(
        s.state(&g, utc("2026-10-25T00:50:00Z")),
        WindowState::Closed {
            opens: Some(utc("2026-10-25T01:15:00Z"))
        }
    );
    assert!(matches!(
        s.state(&g, utc("2026-10-25T01:20:00Z")),
        WindowState::Open { .. }
    ));
}

#[test]
fn america_changes_skip_and_repeat_too() {
    // New York, 2027-03-14: 02:00 EST jumps to 03:00 EDT.
    let s = schedule(
        "w: days=Sun start_time=02:00 length_minutes=60",
        "America/New_York",
    );
    let g = group("w");
    let before = utc("2027-03-14T06:30:00Z"); // 01:30 EST
    assert_eq!(
        s.state(&g, before),
        WindowState::Closed {
            opens: Some(utc("2027-03-21T06:00:00Z")) // 02:00 EDT a week later
        }
    );
    // 2026-11-01: 02:00 EDT goes back to 01:00 EST; a 01:00 window happens twice.
    let s = schedule(
        "w: days=Sun start_time=01:00 length_minutes=30",
        "America/New_York",
    );
    assert_eq!(
        s.state(&g, utc("2026-11-01T05:10:00Z")), // 01:10 EDT
        WindowState::Open {
            until: Some(utc("2026-11-01T05:30:00Z"))
        }
    );
    assert_eq!(
        s.state(&g, utc("2026-11-01T05:40:00Z")), // 01:40 EDT
        WindowState::Closed {
            opens: Some(utc("2026-11-01T06:00:00Z")) // 01:00 EST
        }
    );
    assert_eq!(text(utc("2026-11-01T06:00:00Z")), "2026-11-01T06:00:00Z");
    assert_eq!(
        s.local_text(utc("2026-11-01T06:00:00Z")),
        "Sun 2026-11-01 01:00 America/New_York"
    );
}

#[test]
fn every_bad_input_is_refused_with_its_reason() {
    let known = |g: &GroupName| {
        if g.as_str() == "unknown" {
            Err(Unnameable::NotConfigured(format!(
                "group '{g}' is not configured by FLEETLOCK_GROUPS"
            )))
        } else {
            Ok(())
        }
    };
    for (spec, says) in [
        (
            "w: days=Funday start_time=22:00 length_minutes=60",
            "'Funday' is not a day",
        ),
        (
            "w: days=Sat start_time=25:00 length_minutes=60",
            "start_time '25:00'",
        ),
        (
            "w: days=Sat start_time=7:5 length_minutes=60",
            "start_time '7:5'",
        ),
        (
            "w: days=Sat start_time=22:60 length_minutes=60",
            "start_time '22:60'",
        ),
        (
            "w: days=Sat start_time=22:00 length_minutes=0",
            "length_minutes '0'",
        ),
        (
            "w: days=Sat start_time=22:00 length_minutes=10081",
            "length_minutes '10081'",
        ),
        (
            "w: days=Sat start_time=22:00 length_minutes=-5",
            "length_minutes '-5'",
        ),
        ("w: start_time=22:00 length_minutes=60", "days= is missing"),
        ("w: days=Sat length_minutes=60", "start_time= is missing"),
        ("w: days=Sat start_time=22:00", "length_minutes= is missing"),
        (
            "w: days=Sat days=Sun start_time=22:00 length_minutes=60",
            "given twice",
        ),
        (
            "w: days=Sat start_time=22:00 length=60",
            "unknown key 'length'",
        ),
        (
            "w days=Sat start_time=22:00 length_minutes=60",
            "does not start with 'GROUP:'",
        ),
        (
            "w: days=Sat start_time=22:00 length_minutes=60;",
            "empty entry",
        ),
        (
            "unknown: days=Sat start_time=22:00 length_minutes=60",
            "not configured",
        ),
        (
            "bad_name: days=Sat start_time=22:00 length_minutes=60",
            "group 'bad_name'",
        ),
    ] {
        let err = Schedule::parse(spec, None, known, false)
            .unwrap_err()
            .to_string();
        assert!(err.contains(says), "{spec}: {err}");
    }
    let wildcard = Schedule::parse(
        "*: days=Sat start_time=22:00 length_minutes=60",
        None,
        known,
        false,
    );
    assert_eq!(wildcard.unwrap_err(), ScheduleError::NoWildcard);
    for (zone, says) in [
        ("localtime", "'localtime' is refused"),
        ("Mars/Olympus", "not a time zone"),
        (
            "Europe/Berlln",
            "'Europe/Berlln' is not a time zone of the IANA database (did you mean 'Europe/Berlin'?)",
        ),
    ] {
        let err = Schedule::parse(
            "w: days=Sat start_time=22:00 length_minutes=60",
            Some(zone),
            known,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(says), "{zone}: {err}");
    }
}

/// The Terraform module refuses at plan time a zone the function would
/// refuse at start: infra/time_zones.tf lists the bundled database's
/// names. `FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones` writes it.
#[test]
fn the_modules_time_zones_are_the_bundled_database() {
    let mut zones: Vec<String> = jiff::tz::db()
        .available()
        .map(|name| name.to_string())
        .filter(|name| !name.eq_ignore_ascii_case("localtime"))
        .collect();
    zones.sort();
    zones.dedup();
    assert!(zones.len() > 400, "{} zones", zones.len());
    for zone in &zones {
        assert!(
            Schedule::in_zone(Some(zone)).is_ok(),
            "{zone} is listed and refused"
        );
    }
    let mut text = String::from(
        "# Generated from the time zone database the function bundles (jiff's\n\
             # tzdb-bundle-always); src/domain/windows.rs keeps it equal:\n\
             # FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones rewrites it.\n\n\
             locals {\n  time_zones = [\n",
    );
    for zone in &zones {
        text.push_str(&format!("    \"{zone}\",\n"));
    }
    text.push_str("  ]\n}\n");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/infra/time_zones.tf");
    if std::env::var_os("FLEETLOCK_WRITE_DOCS").is_some() {
        std::fs::write(path, &text).unwrap();
        return;
    }
    let module = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        module == text,
        "infra/time_zones.tf is not the bundled database's list: run \
             FLEETLOCK_WRITE_DOCS=1 cargo test --lib time_zones"
    );
}

#[test]
fn a_zone_without_transitions_answers_too() {
    // Etc/GMT-1 is UTC+1 all year: no transitions to visit.
    let s = schedule("w: days=Sat start_time=23:00 length_minutes=1", "Etc/GMT-1");
    assert_eq!(
        s.state(&group("w"), utc("2026-12-07T10:00:00Z")),
        WindowState::Closed {
            opens: Some(utc("2026-12-12T22:00:00Z"))
        }
    );
}

#[test]
fn days_read_as_zincati_writes_them() {
    let w = Window::parse("days=sat,Sunday,MON start_time=00:00 length_minutes=10080").unwrap();
    assert_eq!(
        w.to_string(),
        "days=Mon,Sat,Sun start_time=00:00 length_minutes=10080"
    );
    assert_eq!(
        Schedule::parse(
            "w: days=Mon start_time=00:00 length_minutes=1",
            None,
            |_| Ok(()),
            false
        )
        .unwrap()
        .zone_name(),
        "UTC"
    );
}

#[test]
fn only_a_utc_schedule_is_utc() {
    assert!(Schedule::in_zone(None).unwrap().is_utc());
    assert!(Schedule::in_zone(Some("Etc/UTC")).unwrap().is_utc());
    assert!(!Schedule::in_zone(Some("Europe/Berlin")).unwrap().is_utc());
}
