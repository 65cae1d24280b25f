//! Validated inputs. Everything that crosses the HTTP edge becomes one of these
//! types before the lock rules see it, so the core never handles raw strings.

use std::fmt;

use crate::error::Error;

/// Longest node id accepted, in bytes. Zincati sends 32 hex characters; the
/// protocol lets other clients send other names, so leave room but stay bounded
/// (each id becomes a DynamoDB attribute name and part of a 400 KB item).
pub const MAX_ID_BYTES: usize = 256;
/// Longest group name accepted, in characters.
pub const MAX_GROUP_CHARS: usize = 64;
/// A pause's reason reaches node journals through the refusal's value.
pub const MAX_REASON_CHARS: usize = 200;

/// A node's identity as sent by the client: 1 to 256 bytes of printable
/// characters, compared exactly (no case folding, no trimming).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(String);

impl NodeId {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        if raw.is_empty() {
            return Err(Error::InvalidId("the id is empty".into()));
        }
        if raw.len() > MAX_ID_BYTES {
            return Err(Error::InvalidId(format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                raw.len()
            )));
        }
        if raw.chars().any(char::is_control) {
            return Err(Error::InvalidId(
                "the id contains a control character".into(),
            ));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
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
    client_params: WireClientParams,
}

#[derive(serde::Deserialize)]
struct WireClientParams {
    id: String,
    group: String,
}

impl ClientParams {
    /// Parses a request body. The bytes are read as they are: Zincati sends no
    /// Content-Type and pretty-printed JSON, so nothing here looks at headers.
    pub fn from_body(body: &[u8]) -> Result<Self, Error> {
        if body.is_empty() {
            return Err(Error::InvalidBody("the request body is empty".into()));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| Error::InvalidBody("the request body is not UTF-8".into()))?;
        let wire: WireBody = serde_json::from_str(text).map_err(|e| {
            Error::InvalidBody(format!(
                "expected {{\"client_params\": {{\"id\": \"...\", \"group\": \"...\"}}}}: {e}"
            ))
        })?;
        Ok(Self {
            id: NodeId::parse(&wire.client_params.id)?,
            group: GroupName::parse(&wire.client_params.group)?,
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
            // 129 two-byte characters: 258 bytes, over the byte limit.
            "é".repeat(129),
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
        let params = ClientParams::from_body(body).unwrap();
        assert_eq!(params.id.as_str(), "e0f3745b108f471cbd4883c6fbed8cdd");
        assert_eq!(params.group.as_str(), "default");
    }

    #[test]
    fn unknown_fields_are_ignored() {
        let body = br#"{"client_params":{"id":"a","group":"g","extra":1},"future":true}"#;
        assert!(ClientParams::from_body(body).is_ok());
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
        ] {
            let err = ClientParams::from_body(bad).unwrap_err();
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
            ClientParams::from_body(br#"{"client_params":{"id":"","group":"g"}}"#).unwrap_err();
        assert_eq!(err.kind(), "invalid_id");
        let err =
            ClientParams::from_body(br#"{"client_params":{"id":"a","group":"a b"}}"#).unwrap_err();
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
