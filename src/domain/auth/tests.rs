#[test]
fn a_refused_call_logs_a_presented_name_only_when_it_is_a_clients() {
    let credential = new_credential("fleet", "*").unwrap();
    let auth = Auth::Required(Clients::parse(&credential.entry).unwrap());
    let basic = |pair: &str| {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    };
    assert_eq!(
        auth.presented_client(basic("fleet:wrong").as_bytes()),
        Some("fleet".into())
    );
    // https://SECRET@host/: the secret arrives as the name.
    let secret = &credential.secret;
    let logged = auth.presented_client(basic(&format!("{secret}:")).as_bytes());
    assert_eq!(logged.as_deref(), Some(NOT_A_CLIENT));
    assert_eq!(auth.presented_client(b"Bearer x"), None);
}

use super::*;

/// An entry as `fleetlock credential` wrote it, kept in users'
/// samconfig.toml and tfvars: its hash was computed apart from this code,
/// `python3 -c "import hashlib; print(hashlib.sha256(bytes.fromhex(
/// '00112233445566778899aabbccddeeff') + b'correct-horse').hexdigest())"`.
const PINNED_ENTRY: &str = "fleet:default:00112233445566778899aabbccddeeff:\
        fdae0294388af12970247300f82ead9b9152d3472045506bca5064c15729da5c";

#[test]
fn a_base_url_pasted_as_an_entry_is_named_as_such_and_not_echoed() {
    let credential = new_credential("fleet", "default").unwrap();
    let url = format!(
        "https://fleet:{}@abc.execute-api.eu-west-1.amazonaws.com/",
        credential.secret
    );
    let refused = Clients::parse(&format!("{} {url}", credential.entry)).unwrap_err();
    assert!(refused.0.contains("base_url"), "{refused}");
    assert!(
        !refused.0.contains(&credential.secret),
        "the secret is echoed: {refused}"
    );
    assert!(!refused.0.contains("fields"), "{refused}");
}

#[test]
fn an_entry_written_by_an_earlier_version_still_lets_its_client_in() {
    let clients = Clients::parse(PINNED_ENTRY).unwrap();
    let caller = clients
        .authenticate(Some(&basic("fleet", "correct-horse")))
        .unwrap();
    assert_eq!(caller.name, "fleet");
    assert!(
        clients
            .authenticate(Some(&basic("fleet", "correct-horsE")))
            .is_err()
    );
    // The hex in upper case, as a person may paste it: the same entry.
    let (head, hex) = PINNED_ENTRY.split_at("fleet:default:".len());
    let shouting = Clients::parse(&format!("{head}{}", hex.to_uppercase())).unwrap();
    assert!(
        shouting
            .authenticate(Some(&basic("fleet", "correct-horse")))
            .is_ok()
    );
    // Secret before salt is another hash (computed the same way): an
    // entry of that order must not let the client in.
    let swapped = "fleet:default:00112233445566778899aabbccddeeff:\
            c4c031054b2364b9b68b48b6fe29dabbc1c741b77fc1bbc93e5dc25445d84208";
    assert!(
        Clients::parse(swapped)
            .unwrap()
            .authenticate(Some(&basic("fleet", "correct-horse")))
            .is_err()
    );
}

#[test]
fn new_entries_keep_the_pinned_form() {
    let entry = entry_for("fleet", "default,workers", "correct-horse").unwrap();
    let fields: Vec<&str> = entry.split(':').collect();
    assert_eq!(fields[..2], ["fleet", "default,workers"]);
    let (salt, hash) = (fields[2], fields[3]);
    let lower_hex = |s: &str, n: usize| {
        s.len() == n
            && s.chars()
                .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
    };
    assert!(lower_hex(salt, 32) && lower_hex(hash, 64), "{entry}");
    let expected = hex(&digest(&unhex::<16>(salt).unwrap(), b"correct-horse"));
    assert_eq!(
        hash, expected,
        "SHA-256 of the salt's bytes, then the secret"
    );
}

fn basic(name: &str, secret: &str) -> Vec<u8> {
    let token = base64::engine::general_purpose::STANDARD.encode(format!("{name}:{secret}"));
    format!("Basic {token}").into_bytes()
}

fn group(s: &str) -> GroupName {
    GroupName::parse(s).unwrap()
}

#[test]
fn a_generated_credential_authenticates_and_is_scoped() {
    let fleet = new_credential("fleet", "*").unwrap();
    let workers = new_credential("workers", "workers,batch").unwrap();
    let clients = Clients::parse(&format!("{} ; {}", fleet.entry, workers.entry)).unwrap();
    assert_eq!(fleet.secret.len(), 40);
    assert!(
        !fleet.entry.contains(&fleet.secret),
        "only the hash is stored"
    );

    let caller = clients
        .authenticate(Some(&basic("fleet", &fleet.secret)))
        .unwrap();
    assert_eq!(caller.name, "fleet");
    assert!(caller.may_use(&group("anything")).is_ok());

    let caller = clients
        .authenticate(Some(&basic("workers", &workers.secret)))
        .unwrap();
    assert!(caller.may_use(&group("workers")).is_ok());
    assert!(caller.may_use(&group("batch")).is_ok());
    let err = caller.may_use(&group("default")).unwrap_err();
    assert_eq!((err.kind(), err.status()), ("forbidden_group", 403));
}

#[test]
fn wrong_missing_or_malformed_credentials_are_unauthorized() {
    let fleet = new_credential("fleet", "*").unwrap();
    let clients = Clients::parse(&fleet.entry).unwrap();
    let wrong_secret = basic("fleet", "0000");
    let wrong_name = basic("other", &fleet.secret);
    let cases: Vec<Option<&[u8]>> = vec![
        None,
        Some(&wrong_secret),
        Some(&wrong_name),
        Some(b"Bearer abc"),
        Some(b"Basic !!!not-base64"),
        Some(b"Basic Zm9vYmFy"), // "foobar": no colon
        Some(b"Basic"),
        Some(&[0xff, 0xfe]),
    ];
    for header in cases {
        let err = clients.authenticate(header).unwrap_err();
        assert_eq!(
            (err.kind(), err.status()),
            ("unauthorized", 401),
            "{header:?}"
        );
    }
    // The scheme is case-insensitive, as HTTP says.
    let lower = String::from_utf8(basic("fleet", &fleet.secret))
        .unwrap()
        .replacen("Basic", "basic", 1);
    let caller = clients.authenticate(Some(lower.as_bytes())).unwrap();
    assert_eq!(caller.name, "fleet");
}

#[test]
fn the_names_listed_are_the_clients_names_in_order() {
    let a = new_credential("fleet", "*").unwrap().entry;
    let b = new_credential("backup-job", "db").unwrap().entry;
    let clients = Clients::parse(&format!("{a} {b}")).unwrap();
    assert_eq!(clients.names().collect::<Vec<_>>(), ["fleet", "backup-job"]);
}

#[test]
fn malformed_client_lists_stop_start_up() {
    let good = new_credential("a", "*").unwrap().entry;
    let zeros = "0".repeat(64);
    for (bad, why) in [
        (String::new(), "no client is listed"),
        (
            "a:*:00".into(),
            "an entry is not NAME:GROUPS:SALT:SHA256 (it has 3 fields)",
        ),
        (
            "a:*:zz:zz".into(),
            "client 'a': the salt is not 32 hex digits",
        ),
        (
            format!("a:*:{}:zz", &zeros[..32]),
            "client 'a': the SHA-256 is not 64 hex digits",
        ),
        (format!("{good};{good}"), "client 'a' is listed twice"),
        (good.replacen("a:*", "a:bad_group", 1), "client 'a': "),
    ] {
        let err = Clients::parse(&bad).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("FLEETLOCK_CLIENTS: {why}")),
            "{bad:?}: {err}"
        );
    }
}

#[test]
fn client_names_and_hex_fields_are_refused_for_what_they_are() {
    let good = new_credential("a", "*").unwrap().entry;
    let (salt, hash) = {
        let fields: Vec<&str> = good.split(':').collect();
        (fields[2].to_owned(), fields[3].to_owned())
    };
    let with_name = |name: &str| format!("{name}:*:{salt}:{hash}");
    for ok in ["a.b_c-1", &"n".repeat(64)] {
        assert!(Clients::parse(&with_name(ok)).is_ok(), "{ok:?}");
    }
    for bad in ["a/b", "ä", "a+b", &"n".repeat(65)] {
        let err = Clients::parse(&with_name(bad)).unwrap_err().to_string();
        assert!(err.contains("is not a client name"), "{bad:?}: {err}");
    }
    // A salt a digit short, and one of the right length in bytes with a
    // character that is not ASCII: refused, never sliced apart.
    for bad_salt in [&salt[1..], &format!("é{}", &salt[2..])] {
        let err = Clients::parse(&format!("a:*:{bad_salt}:{hash}"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the salt is not 32 hex digits"),
            "{bad_salt}: {err}"
        );
    }
    let err = Clients::parse(&format!("a:*:{salt}:{}", &hash[1..]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("the SHA-256 is not 64 hex digits"), "{err}");
}

#[test]
fn entries_are_salted() {
    let one = entry_for("a", "*", "same-secret").unwrap();
    let two = entry_for("a", "*", "same-secret").unwrap();
    assert_ne!(one, two);
    assert!(entry_for("a", "*", "has:colon").is_err());
}

/// A group the credential may not name is refused for what it is, not for
/// the entry its space would split.
#[test]
fn a_credential_names_the_group_it_refuses() {
    let refused = entry_for("fleet", "workers,bad group!", "s3cret").unwrap_err();
    assert_eq!(
        refused.to_string(),
        "group 'bad group!': a group name may contain only ASCII letters, digits, '.' and '-'"
    );
    // A space would end the entry where the server reads it.
    let spaced = entry_for("fleet", "workers, db", "s3cret").unwrap_err();
    assert!(spaced.to_string().starts_with("group ' db': "), "{spaced}");
    assert!(entry_for("fleet", "*", "s3cret").is_ok());
    assert!(entry_for("fleet", "workers,db", "s3cret").is_ok());
}
