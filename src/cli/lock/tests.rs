use super::*;
use crate::client::{parse_machine_id, zincati_id};

#[test]
fn tries_are_a_minute_apart_at_least_and_five_at_most() {
    assert_eq!(Pacing::FLEET.pause_after(1, 0.0), Duration::from_secs(60));
    assert_eq!(Pacing::FLEET.pause_after(2, 0.0), Duration::from_secs(120));
    assert_eq!(Pacing::FLEET.pause_after(3, 0.0), Duration::from_secs(240));
    assert_eq!(Pacing::FLEET.pause_after(4, 0.0), Duration::from_secs(300));
    assert_eq!(Pacing::FLEET.pause_after(40, 0.0), Duration::from_secs(300));
    assert_eq!(
        Pacing::FLEET.pause_after(1, 0.999),
        Duration::from_secs_f64(65.994)
    );
    for _ in 0..100 {
        let j = jitter();
        assert!((0.0..1.0).contains(&j));
        assert!(Pacing::FLEET.pause_after(1, j) >= RETRY_FLOOR);
    }
}

fn request(identity: Identity, url: UrlSource) -> Request {
    Request {
        call: Call::PreReboot,
        group: "workers".into(),
        identity,
        url,
        wait: None,
    }
}

fn settings(url: Option<String>, machine_id_file: &std::path::Path) -> LockSettings {
    LockSettings {
        url,
        machine_id_file: machine_id_file.to_path_buf(),
    }
}

#[test]
fn settings_are_checked_before_anything_is_sent() {
    let dir = std::env::temp_dir().join(format!("fleetlock-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let machine = dir.join("machine-id");
    std::fs::write(&machine, "e0f3745b108f471cbd4883c6fbed8cdd\n").unwrap();
    let url_file = dir.join("url");
    std::fs::write(&url_file, "https://fleet:secret@h.example/\n").unwrap();
    let zincati = zincati_id(&parse_machine_id("e0f3745b108f471cbd4883c6fbed8cdd").unwrap());
    let url = || UrlSource::Argument("https://h.example/".into());

    let ok = check(
        &request(Identity::App("backup".into()), url()),
        &settings(None, &machine),
    )
    .unwrap();
    assert_ne!(ok.id.as_str(), zincati);
    let from_file = UrlSource::File(url_file.display().to_string());
    assert!(
        check(
            &request(Identity::Id("n1".into()), from_file),
            &settings(None, &machine)
        )
        .is_ok()
    );
    let from_env = request(Identity::Id("n1".into()), UrlSource::Environment);
    assert!(
        check(
            &from_env,
            &settings(Some("http://h.example/".into()), &machine)
        )
        .is_ok()
    );

    for (request, env, says) in [
        (
            request(Identity::Id(zincati.clone()), url()),
            None,
            "the id Zincati uses",
        ),
        (
            request(Identity::Id("n1".into()), UrlSource::Environment),
            None,
            "FLEETLOCK_URL",
        ),
        (
            request(
                Identity::Id("n1".into()),
                UrlSource::Argument("h.example".into()),
            ),
            None,
            "not a URL",
        ),
        (
            request(Identity::Id("a\u{200b}b".into()), url()),
            None,
            "--id: ",
        ),
        (
            request(
                Identity::Id("n1".into()),
                UrlSource::File("/nonexistent".into()),
            ),
            None,
            "--url-file /nonexistent",
        ),
    ] {
        let err = check(&request, &settings(env, &machine))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains(says), "{err}");
    }
    let mut bad_group = request(Identity::Id("n1".into()), url());
    bad_group.group = "a b".into();
    assert!(
        check(&bad_group, &settings(None, &machine))
            .err()
            .unwrap()
            .to_string()
            .starts_with("--group: ")
    );
    let no_machine = check(
        &request(Identity::App("backup".into()), url()),
        &settings(None, &dir.join("missing")),
    );
    assert!(
        no_machine
            .err()
            .unwrap()
            .to_string()
            .contains("machine id, which cannot be read")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
