use super::*;

fn group(name: &str) -> GroupName {
    GroupName::parse(name).unwrap()
}

fn slots(groups: &str, zones: Option<&str>) -> GroupSlots {
    let parsed = GroupSlots::parse(groups).unwrap();
    match zones {
        Some(spec) => parsed.with_zones(spec).unwrap(),
        None => parsed,
    }
}

/// The group a name takes its slots from, or the refusal's kind and the
/// name it most likely means.
fn read(groups: &GroupSlots, asked: &str) -> Result<(String, Option<String>), (String, String)> {
    match groups.meaning(&group(asked)) {
        Ok(meaning) => Ok((
            meaning.group.to_string(),
            meaning.zone.map(|zone| zone.to_string()),
        )),
        Err(Error::UnknownGroup { meant, .. }) => Err((
            "unknown_group".into(),
            meant.map_or(String::new(), |m| m.to_string()),
        )),
        Err(err) => Err((err.kind().into(), String::new())),
    }
}

#[test]
fn no_name_a_split_group_could_mean_is_a_group_of_its_own_under_the_wildcard() {
    let groups = slots("workers=1,*=1", Some("workers"));
    let zone = |z: &str| Ok(("workers".into(), Some(z.into())));
    assert_eq!(
        read(&groups, "workers.us-east-1a"),
        zone("workers.us-east-1a")
    );
    assert_eq!(read(&groups, "workers"), zone("workers"));
    // Issue 64's four nodes of a one-slot group: each refused, naming the
    // zone group its nodes ask with.
    for (asked, meant) in [
        ("Workers.us-east-1b", "workers.us-east-1b"),
        ("wOrkers.us-east-1b", "workers.us-east-1b"),
        ("Workers.us-east-1a", "workers.us-east-1a"),
        ("Workers", "workers"),
        ("workers-us-east-1a", "workers.us-east-1a"),
        ("WORKERS-use1-az1", "workers.use1-az1"),
    ] {
        assert_eq!(
            read(&groups, asked),
            Err(("unknown_group".into(), meant.into())),
            "{asked}"
        );
    }
    // Not a zone's name under a split group: invalid, never '*'.
    assert_eq!(
        read(&groups, "workers.a.b"),
        Err(("invalid_group".into(), String::new()))
    );
    // Names no configured group could mean stay the wildcard's.
    for other in ["worker", "workers2", "workers-blue", "batch.us-east-1a"] {
        assert_eq!(read(&groups, other), Ok((other.into(), None)), "{other}");
    }
}

#[test]
fn a_zone_of_a_group_not_split_is_refused_with_or_without_the_wildcard() {
    for spec in ["db=1,*=1", "db=1"] {
        let groups = slots(spec, None);
        assert_eq!(read(&groups, "db"), Ok(("db".into(), None)));
        for asked in ["db.us-east-1a", "DB.us-east-1c", "db.backup"] {
            assert_eq!(
                read(&groups, asked),
                Err(("unknown_group".into(), "db".into())),
                "{spec}: {asked}"
            );
            let value = groups.meaning(&group(asked)).unwrap_err().value();
            assert!(value.contains("FLEETLOCK_ZONES"), "{value}");
            assert!(value.contains("group = \"db\""), "{value}");
        }
    }
    // A group listed under another is itself.
    let nested = slots("a=1,a.b=2", None);
    assert_eq!(read(&nested, "a.b"), Ok(("a.b".into(), None)));
}

#[test]
fn without_the_wildcard_the_closest_name_a_node_asks_with_is_named() {
    let groups = slots("workers=3,db=1", Some("workers"));
    for (asked, meant) in [
        ("worker.us-east-1a", "workers.us-east-1a"),
        ("wrokers-us-east-1a", "workers.us-east-1a"),
        ("dbb", "db"),
    ] {
        assert_eq!(
            read(&groups, asked),
            Err(("unknown_group".into(), meant.into())),
            "{asked}"
        );
    }
    assert_eq!(
        read(&groups, "frontend"),
        Err(("unknown_group".into(), String::new()))
    );
}

#[test]
fn a_setting_names_the_split_group_never_one_of_its_zones() {
    let groups = slots("workers=3,*=1", Some("workers"));
    let refused = groups
        .setting_may_name(&group("workers.us-east-1a"))
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("zone 'us-east-1a' of group 'workers'"),
        "{refused}"
    );
    groups.setting_may_name(&group("workers")).unwrap();
    groups.setting_may_name(&group("batch")).unwrap();
    let unlisted = slots("workers=3,db=1", Some("workers"));
    for (groups, typo) in [
        (&groups, "Workers.us-east-1a"),
        (&groups, "workers-us-east-1a"),
        (&unlisted, "Workers.us-east-1a"),
        (&unlisted, "worker.us-east-1a"),
        (&unlisted, "workers-us-east-1a"),
    ] {
        let refused = groups
            .setting_may_name(&group(typo))
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("did you mean 'workers'?"),
            "{typo}: {refused}"
        );
    }
}

#[test]
fn zones_read_as_aws_writes_them() {
    for zone in [
        "us-east-1a",
        "us-gov-west-1b",
        "ap-northeast-2c",
        "use1-az1",
        "us-west-2-lax-1a",
    ] {
        assert!(zones::looks_like_zone(zone), "{zone}");
    }
    for other in ["blue", "gpu-1", "east", "us-east", "az1", "a-b-c"] {
        assert!(!zones::looks_like_zone(other), "{other}");
    }
}
