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
pub(crate) const MAX_REASON_CHARS: usize = 200;

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
    pub(crate) fn stored(raw: &str) -> Result<Self, Error> {
        Self::parse_as(raw, IdRule::Stored)
    }

    pub(crate) fn parse_as(raw: &str, rule: IdRule) -> Result<Self, Error> {
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
    pub(crate) fn shown(&self) -> String {
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
    pub(crate) fn from_shown(text: &str) -> Result<Self, Error> {
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
    // No ASCII character is ignorable or a format character: an id or a
    // group of ASCII alone (Zincati's, always) skips Unicode's tables, which
    // cost a tenth of the server's CPU on every call.
    if c.is_ascii() {
        return c.is_whitespace() && c != ' ';
    }
    deceptive_by_unicode_tables(c)
}

/// The rule itself, for any character: a space other than the plain one,
/// Unicode's Default_Ignorable_Code_Point, or a format character (Cf).
fn deceptive_by_unicode_tables(c: char) -> bool {
    use icu_properties::props::{DefaultIgnorableCodePoint, GeneralCategory};
    use icu_properties::{CodePointMapData, CodePointSetData};
    (c.is_whitespace() && c != ' ')
        || CodePointSetData::new::<DefaultIgnorableCodePoint>().contains(c)
        || CodePointMapData::<GeneralCategory>::new().get(c) == GeneralCategory::Format
}

/// Text from outside (a request's path, a server's answer) made safe to
/// echo in an answer, a log or a terminal: control characters (escape
/// sequences, CR and LF that could forge a line) and deceptive ones shown
/// escaped, and at most `most` characters.
pub(crate) fn printable(text: &str, most: usize) -> String {
    let mut shown = String::new();
    for c in text.chars().take(most) {
        if c.is_control() || is_deceptive(c) {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
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

/// Why a person's reason was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReasonError {
    #[error("the reason is empty; say why the group is paused")]
    Empty,
    #[error("the reason is longer than {MAX_REASON_CHARS} characters")]
    TooLong,
    #[error("the reason has a control character (a newline, a tab, ...)")]
    ControlCharacter,
}

impl PauseReason {
    pub fn parse(raw: &str) -> Result<Self, ReasonError> {
        let reason = raw.trim();
        if reason.is_empty() {
            return Err(ReasonError::Empty);
        }
        if reason.chars().count() > MAX_REASON_CHARS {
            return Err(ReasonError::TooLong);
        }
        if reason.chars().any(char::is_control) {
            return Err(ReasonError::ControlCharacter);
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
mod tests;
