use super::*;

#[test]
fn ids_accept_zincati_ids_and_other_printable_names() {
    for ok in [
        "e0f3745b108f471cbd4883c6fbed8cdd",
        "node-01.example.com",
        "with space",
        "ünïcode",
        &"x".repeat(MAX_ID_BYTES),
    ] {
        assert_eq!(NodeId::parse(ok).unwrap().as_str(), ok);
    }
}

#[test]
fn ids_refuse_empty_oversize_and_control_characters() {
    for bad in [
        String::new(),
        "x".repeat(MAX_ID_BYTES + 1),
        // 65 two-byte characters: 130 bytes, over the byte limit.
        "é".repeat(65),
        "a\nb".into(),
        "tab\there".into(),
        "nul\0".into(),
        "esc\u{1b}[31m".into(),
        "del\u{7f}".into(),
    ] {
        let err = NodeId::parse(&bad).unwrap_err();
        assert_eq!(err.kind(), "invalid_id", "{bad:?}");
    }
}

#[test]
fn new_ids_refuse_what_could_pass_for_another_id() {
    for (bad, shown) in [
        ("node\u{200b}-1", "node\\u{200b}-1"),
        ("\u{202e}1-edon", "\\u{202e}1-edon"),
        ("node\u{00a0}1", "node\\u{a0}1"),
        ("\u{feff}node", "\\u{feff}node"),
        ("node\u{2066}x", "node\\u{2066}x"),
        ("tag\u{e0041}", "tag\\u{e0041}"),
        // Format controls a hand list missed: shorthand and hieroglyph.
        ("node-1\u{1bca0}", "node-1\\u{1bca0}"),
        ("node-1\u{1bca3}", "node-1\\u{1bca3}"),
        ("node-1\u{13430}", "node-1\\u{13430}"),
        ("node\u{3164}1", "node\\u{3164}1"),
        ("node\u{180e}1", "node\\u{180e}1"),
    ] {
        let err = NodeId::parse(bad).unwrap_err();
        assert_eq!(err.kind(), "invalid_id", "{bad:?}");
        assert!(err.value().contains("U+"), "{}", err.value());
        // Stored by an older version: still read, and shown unambiguously.
        let stored = NodeId::stored(bad).unwrap();
        assert_eq!(stored.shown(), shown);
        assert_eq!(NodeId::from_shown(shown).unwrap(), stored);
    }
}

#[test]
fn every_character_unicode_calls_ignorable_or_format_is_refused() {
    // Whole ranges, against the hand list this rule replaced.
    for range in [
        '\u{00AD}'..='\u{00AD}',
        '\u{034F}'..='\u{034F}',
        '\u{061C}'..='\u{061C}',
        '\u{115F}'..='\u{1160}',
        '\u{17B4}'..='\u{17B5}',
        '\u{180B}'..='\u{180F}',
        '\u{200B}'..='\u{200F}',
        '\u{202A}'..='\u{202E}',
        '\u{2060}'..='\u{206F}',
        '\u{FE00}'..='\u{FE0F}',
        '\u{FFA0}'..='\u{FFA0}',
        '\u{FFF9}'..='\u{FFFB}',
        '\u{1BCA0}'..='\u{1BCA3}',
        '\u{13430}'..='\u{1343F}',
        '\u{1D173}'..='\u{1D17A}',
        '\u{E0000}'..='\u{E0FFF}',
    ] {
        for c in range {
            assert!(is_deceptive(c), "U+{:04X}", u32::from(c));
        }
    }
    // Letters, digits, marks and symbols of every script stay ids.
    for c in "node-1.é中ñ日本語Ωж٣क्षि_@:/".chars() {
        assert!(!is_deceptive(c), "U+{:04X}", u32::from(c));
    }
}

#[test]
fn the_ascii_shortcut_agrees_with_unicodes_tables() {
    for c in (0..=0x7f_u8).map(char::from) {
        assert_eq!(
            is_deceptive(c),
            deceptive_by_unicode_tables(c),
            "U+{:04X}",
            u32::from(c)
        );
    }
    assert!(is_deceptive('\t') && is_deceptive('\u{0b}') && !is_deceptive(' '));
}

#[test]
fn the_stored_rule_keeps_ids_an_older_version_granted() {
    let long = "x".repeat(STORED_ID_BYTES);
    assert_eq!(NodeId::parse(&long).unwrap_err().kind(), "invalid_id");
    assert_eq!(NodeId::stored(&long).unwrap().as_str(), long);
    assert!(NodeId::stored(&"x".repeat(STORED_ID_BYTES + 1)).is_err());
    assert!(NodeId::stored("a\nb").is_err());
    // A steady-state body reads its id under the stored rule.
    let body = format!(r#"{{"client_params":{{"id":"{long}","group":"g"}}}}"#);
    assert!(ClientParams::from_body(body.as_bytes(), IdRule::New).is_err());
    assert!(ClientParams::from_body(body.as_bytes(), IdRule::Stored).is_ok());
}

#[test]
fn shown_ids_read_back_and_plain_ones_are_unchanged() {
    for plain in ["e0f3745b108f471cbd4883c6fbed8cdd", "ünïcode host", "a\\b"] {
        let id = NodeId::stored(plain).unwrap();
        assert_eq!(NodeId::from_shown(&id.shown()).unwrap(), id);
    }
    assert_eq!(NodeId::stored("a\\b").unwrap().shown(), "a\\\\b");
    for bad in ["a\\", "a\\x", "a\\u{zz}", "a\\u{110000}", "a\\u{41"] {
        assert_eq!(NodeId::from_shown(bad).unwrap_err().kind(), "invalid_id");
    }
}

#[test]
fn ids_compare_exactly() {
    assert_ne!(NodeId::parse("abc").unwrap(), NodeId::parse("ABC").unwrap());
    assert_ne!(
        NodeId::parse("abc").unwrap(),
        NodeId::parse("abc ").unwrap()
    );
}

#[test]
fn groups_follow_zincati_rule() {
    for ok in ["default", "workers", "eu-west-1.db", "A1", &"g".repeat(64)] {
        assert_eq!(GroupName::parse(ok).unwrap().as_str(), ok);
    }
    for bad in [
        "",
        "under_score",
        "sla/sh",
        "space d",
        "${group}",
        "ünï",
        &"g".repeat(65),
    ] {
        assert_eq!(
            GroupName::parse(bad).unwrap_err().kind(),
            "invalid_group",
            "{bad:?}"
        );
    }
}

#[test]
fn body_as_zincati_sends_it_parses() {
    // Pretty-printed, as serde_json::to_string_pretty in Zincati produces it.
    let body = br#"{
  "client_params": {
    "id": "e0f3745b108f471cbd4883c6fbed8cdd",
    "group": "default"
  }
}"#;
    let params = ClientParams::from_body(body, IdRule::New).unwrap();
    assert_eq!(params.id.as_str(), "e0f3745b108f471cbd4883c6fbed8cdd");
    assert_eq!(params.group.as_str(), "default");
}

#[test]
fn unknown_fields_are_ignored() {
    let body = br#"{"client_params":{"id":"a","group":"g","extra":1},"future":true}"#;
    let params = ClientParams::from_body(body, IdRule::New).unwrap();
    assert_eq!((params.id.as_str(), params.group.as_str()), ("a", "g"));
}

#[test]
fn malformed_bodies_are_invalid_body() {
    for bad in [
        &b""[..],
        b"\xff\xfe",
        b"not json",
        b"[]",
        b"{}",
        br#"{"client_params":{"id":"a"}}"#,
        br#"{"client_params":{"group":"g"}}"#,
        br#"{"client_params":{"id":5,"group":"g"}}"#,
        br#"{"client_params":{"id":"a","group":null}}"#,
        br#"{"client_params":"a"}"#,
        // A struct as serde would also read it, from its fields' array.
        br#"[["a","g"]]"#,
        br#"{"client_params":["a","g"]}"#,
        br#"[{"id":"a","group":"g"}]"#,
    ] {
        let err = ClientParams::from_body(bad, IdRule::New).unwrap_err();
        assert_eq!(
            err.kind(),
            "invalid_body",
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

#[test]
fn field_errors_surface_with_their_own_kind() {
    let err = ClientParams::from_body(br#"{"client_params":{"id":"","group":"g"}}"#, IdRule::New)
        .unwrap_err();
    assert_eq!(err.kind(), "invalid_id");
    let err = ClientParams::from_body(
        br#"{"client_params":{"id":"a","group":"a b"}}"#,
        IdRule::New,
    )
    .unwrap_err();
    assert_eq!(err.kind(), "invalid_group");
}

#[test]
fn a_pause_reason_is_short_printable_text() {
    assert_eq!(
        PauseReason::parse("  kernel 6.12 regression ")
            .unwrap()
            .as_str(),
        "kernel 6.12 regression"
    );
    assert!(PauseReason::parse("ünïcode ✓ fine").is_ok());
    for bad in ["", "   ", "line\nbreak", "tab\there", "bell\u{7}"] {
        assert!(PauseReason::parse(bad).is_err(), "{bad:?}");
    }
    assert!(PauseReason::parse(&"x".repeat(MAX_REASON_CHARS)).is_ok());
    assert!(PauseReason::parse(&"x".repeat(MAX_REASON_CHARS + 1)).is_err());
}

#[test]
fn text_from_outside_is_bounded_and_shows_what_could_forge_or_hide() {
    assert_eq!(printable("node-1", 128), "node-1");
    assert_eq!(printable("a\nforged line", 128), "a\\nforged line");
    assert_eq!(printable("\u{1b}[2J", 128), "\\u{1b}[2J");
    assert_eq!(printable("node\u{200b}-1", 128), "node\\u{200b}-1");
    assert_eq!(printable("\u{202e}txt", 128), "\\u{202e}txt");
    assert_eq!(printable(&"x".repeat(600), 500).len(), 500);
}
