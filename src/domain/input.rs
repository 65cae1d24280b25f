//! Validated inputs. Everything that crosses the HTTP edge becomes one of these
//! types before the lock rules see it, so the core never handles raw strings.

use std::fmt;

use crate::domain::error::Error;

/// Longest node id accepted from a client, in bytes. Zincati sends 32 hex
/// characters and other clients send host names; each id becomes a DynamoDB
/// attribute name, billed on every write to its group's item, refused polls
/// included.
pub const MAX_ID_BYTES: usize = 128;
/// The bound of versions up to 0.2. An id stored under it is still read,
/// shown and released (steady-state, `fleetlock release`), never taken anew.
pub const STORED_ID_BYTES: usize = 256;
/// Longest group name accepted, in characters.
pub const MAX_GROUP_CHARS: usize = 64;
/// A pause's reason reaches node journals through the refusal's value.
pub const MAX_REASON_CHARS: usize = 200;

/// A node's identity as sent by the client: 1 to 128 bytes of visible
/// characters, compared exactly (no case folding, no trimming).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(String);

/// How strictly an id is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdRule {
    /// An id that takes a slot: the current bounds.
    New,
    /// An id that may already hold a slot: the bounds it was stored under
    /// (up to 256 bytes, invisible characters allowed), so that no holder
    /// of an older version is kept from giving its slot back.
    Stored,
}

impl NodeId {
    /// An id as a client sends it to take a slot.
    pub fn parse(raw: &str) -> Result<Self, Error> {
        Self::parse_as(raw, IdRule::New)
    }

    /// An id read from the table, or sent to give a slot back.
    pub fn stored(raw: &str) -> Result<Self, Error> {
        Self::parse_as(raw, IdRule::Stored)
    }

    pub fn parse_as(raw: &str, rule: IdRule) -> Result<Self, Error> {
        let limit = match rule {
            IdRule::New => MAX_ID_BYTES,
            IdRule::Stored => STORED_ID_BYTES,
        };
        if raw.is_empty() {
            return Err(Error::InvalidId("the id is empty".into()));
        }
        if raw.len() > limit {
            return Err(Error::InvalidId(format!(
                "the id is {} bytes long; at most {limit} are allowed",
                raw.len()
            )));
        }
        if raw.chars().any(char::is_control) {
            return Err(Error::InvalidId(
                "the id contains a control character".into(),
            ));
        }
        if rule == IdRule::New
            && let Some(c) = raw.chars().find(|c| is_deceptive(*c))
        {
            return Err(Error::InvalidId(format!(
                "the id contains U+{:04X}, a character that is invisible or reorders the \
                 text around it; an id must read as what it is",
                u32::from(c)
            )));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The id for a person's screen, unambiguous: an invisible, reordering
    /// or control character, and any space but the plain one, appears as
    /// `\u{200b}`, and a backslash as `\\`. [`NodeId::from_shown`] reads it
    /// back.
    pub fn shown(&self) -> String {
        let mut out = String::with_capacity(self.0.len());
        for c in self.0.chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if c.is_control() || is_deceptive(c) {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
        out
    }

    /// An id as [`NodeId::shown`] printed it (or as it is, when it has no
    /// backslash), under the stored rule: what `fleetlock release --id` takes.
    pub fn from_shown(text: &str) -> Result<Self, Error> {
        let mut raw = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find('\\') {
            raw.push_str(&rest[..at]);
            let escape = &rest[at..];
            if let Some(after) = escape.strip_prefix("\\\\") {
                raw.push('\\');
                rest = after;
                continue;
            }
            let bad = || {
                Error::InvalidId(format!(
                    "'{text}' has a backslash that is neither \\\\ nor \\u{{HEX}}, as \
                     'fleetlock status' writes an id"
                ))
            };
            let hex = escape.strip_prefix("\\u{").ok_or_else(bad)?;
            let end = hex.find('}').ok_or_else(bad)?;
            let c = u32::from_str_radix(&hex[..end], 16)
                .ok()
                .and_then(char::from_u32)
                .ok_or_else(bad)?;
            raw.push(c);
            rest = &hex[end + 1..];
        }
        raw.push_str(rest);
        Self::stored(&raw)
    }
}

/// Characters that show as nothing, look like a plain space, or reorder the
/// text around them: with one, an id can pass for another (`node\u{200b}-1`
/// for `node-1`; U+202E reverses what follows). Unicode names them itself:
/// Default_Ignorable_Code_Point (shown as nothing where unsupported), the
/// format characters (Cf: bidi controls, joiners, shorthand and hieroglyph
/// format controls), and any space but the plain one.
pub(crate) fn is_deceptive(c: char) -> bool {
    use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
    use icu_properties::{CodePointMapData, CodePointSetData};
    (c.is_whitespace() && c != ' ')
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A reboot group name, checked with the same rule Zincati applies to its own
/// config: `^[a-zA-Z0-9.-]+$`, here also at most 64 characters.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupName(String);

impl GroupName {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        if raw.is_empty() {
            return Err(Error::InvalidGroup("the group is empty".into()));
        }
        if raw.chars().count() > MAX_GROUP_CHARS {
            return Err(Error::InvalidGroup(format!(
                "the group name is longer than {MAX_GROUP_CHARS} characters"
            )));
        }
        if !raw
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
        {
            return Err(Error::InvalidGroup(
                "a group name may contain only ASCII letters, digits, '.' and '-'".into(),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for GroupName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a person paused a group: 1 to 200 printable characters, trimmed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PauseReason(String);

impl PauseReason {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let reason = raw.trim();
        if reason.is_empty() {
            return Err("the reason is empty; say why the group is paused".into());
        }
        if reason.chars().count() > MAX_REASON_CHARS {
            return Err(format!(
                "the reason is longer than {MAX_REASON_CHARS} characters"
            ));
        }
        if reason.chars().any(char::is_control) {
            return Err("the reason has a control character (a newline, a tab, ...)".into());
        }
        Ok(Self(reason.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PauseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a FleetLock request asks about: which node, in which group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientParams {
    pub id: NodeId,
    pub group: GroupName,
}

/// The wire shape of a FleetLock body. Unknown fields are ignored on purpose,
/// so that a newer client keeps working against this server.
#[derive(serde::Deserialize)]
struct WireBody {
    client_params: Object<WireClientParams>,
}

/// `T` from a JSON object only. serde reads a struct from an array of its
/// fields too (`[["id","group"]]`), a shape no FleetLock client sends: one
/// body, one way to write it.
struct Object<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: serde::de::MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

#[derive(serde::Deserialize)]
struct WireClientParams {
    id: String,
    group: String,
}

impl ClientParams {
    /// Parses a request body, its id under `rule`. The bytes are read as they
    /// are: Zincati sends no Content-Type and pretty-printed JSON, so nothing
    /// here looks at headers.
    pub fn from_body(body: &[u8], rule: IdRule) -> Result<Self, Error> {
        if body.is_empty() {
            return Err(Error::InvalidBody("the request body is empty".into()));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| Error::InvalidBody("the request body is not UTF-8".into()))?;
        let Object(wire): Object<WireBody> = serde_json::from_str(text).map_err(|e| {
            Error::InvalidBody(format!(
                "expected {{\"client_params\": {{\"id\": \"...\", \"group\": \"...\"}}}}: {e}"
            ))
        })?;
        Ok(Self {
            id: NodeId::parse_as(&wire.client_params.0.id, rule)?,
            group: GroupName::parse(&wire.client_params.0.group)?,
        })
    }
}

#[cfg(test)]
mod tests {
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
        let err =
            ClientParams::from_body(br#"{"client_params":{"id":"","group":"g"}}"#, IdRule::New)
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
}
