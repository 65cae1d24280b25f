//! Client authentication that a stock Zincati can do: HTTP Basic credentials,
//! which Zincati takes from the userinfo of its `base_url`
//! (`https://NAME:SECRET@host/`). The server keeps only a salted SHA-256 of
//! each secret, so neither templates, environment, logs nor Terraform state
//! hold one. Secrets are random (see `fleetlock credential`), so a fast hash is
//! enough; comparison is constant-time. Each credential is scoped to groups.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use base64::Engine as _;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::domain::error::{Credentials, Error};
use crate::domain::input::GroupName;

const SALT_BYTES: usize = 16;
const SECRET_BYTES: usize = 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    AllGroups,
    Groups(BTreeSet<GroupName>),
}

impl Scope {
    fn allows(&self, group: &GroupName) -> bool {
        match self {
            Scope::AllGroups => true,
            Scope::Groups(groups) => groups.contains(group),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Credential {
    name: String,
    scope: Scope,
    salt: [u8; SALT_BYTES],
    digest: [u8; 32],
}

/// Who may call, from `FLEETLOCK_CLIENTS`: entries separated by `;` or white
/// space, each `NAME:GROUPS:SALT:SHA256` with GROUPS `*` or `a,b` and the salt
/// and digest in hex, as printed by `fleetlock credential`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clients {
    credentials: Vec<Credential>,
}

impl Clients {
    /// The names of the clients, in the order listed.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.credentials.iter().map(|c| c.name.as_str())
    }

    /// Each client's name and the groups it may use, in the order listed.
    pub(crate) fn scopes(&self) -> impl Iterator<Item = (&str, &Scope)> {
        self.credentials.iter().map(|c| (c.name.as_str(), &c.scope))
    }
}

/// Whether requests must carry credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    Required(Clients),
    /// Only where the endpoint cannot be reached from outside.
    Disabled,
}

/// A caller that presented a valid credential.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub name: String,
    scope: Scope,
}

impl Caller {
    /// A credential of group `a` may neither take nor release a slot of `b`.
    pub(crate) fn may_use(&self, group: &GroupName) -> Result<(), Error> {
        if self.scope.allows(group) {
            Ok(())
        } else {
            Err(Error::ForbiddenGroup(group.to_string()))
        }
    }
}

fn digest(salt: &[u8], secret: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(salt);
    hasher.update(secret);
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != N * 2 || !text.is_ascii() {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[i * 2..i * 2 + 2], 16).ok()?;
    }
    Some(out)
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Why a `FLEETLOCK_CLIENTS` list was refused; [`crate::config`] reports it
/// with the variable's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadClients(pub String);

impl std::fmt::Display for BadClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FLEETLOCK_CLIENTS: {}", self.0)
    }
}

impl std::error::Error for BadClients {}

impl Clients {
    pub fn parse(spec: &str) -> Result<Self, BadClients> {
        let bad = BadClients;
        let mut credentials: Vec<Credential> = Vec::new();
        for entry in spec
            .split([';', ' ', '\n', '\t', '\r'])
            .filter(|e| !e.is_empty())
        {
            if entry.contains("://") {
                // Never echoed: the URL carries the secret.
                return Err(bad(
                    "an entry is a URL, the base_url line for a node's Zincati, not the \
                     NAME:GROUPS:SALT:SHA256 entry `fleetlock credential` prints beside it"
                        .into(),
                ));
            }
            let parts: Vec<&str> = entry.split(':').collect();
            let [name, groups, salt, hash] = parts[..] else {
                return Err(bad(format!(
                    "an entry is not NAME:GROUPS:SALT:SHA256 (it has {} fields)",
                    parts.len()
                )));
            };
            if !valid_name(name) {
                return Err(bad(format!(
                    "'{name}' is not a client name (1 to 64 of a-z A-Z 0-9 . _ -)"
                )));
            }
            if credentials.iter().any(|c| c.name == name) {
                return Err(bad(format!("client '{name}' is listed twice")));
            }
            let scope = if groups == "*" {
                Scope::AllGroups
            } else {
                let groups = groups
                    .split(',')
                    .map(|g| GroupName::parse(g.trim()))
                    .collect::<Result<BTreeSet<_>, _>>()
                    .map_err(|e| bad(format!("client '{name}': {}", e.value())))?;
                Scope::Groups(groups)
            };
            let salt = unhex::<SALT_BYTES>(salt)
                .ok_or_else(|| bad(format!("client '{name}': the salt is not 32 hex digits")))?;
            let digest = unhex::<32>(hash)
                .ok_or_else(|| bad(format!("client '{name}': the SHA-256 is not 64 hex digits")))?;
            credentials.push(Credential {
                name: name.to_owned(),
                scope,
                salt,
                digest,
            });
        }
        if credentials.is_empty() {
            return Err(bad("no client is listed".into()));
        }
        Ok(Self { credentials })
    }

    /// Checks an `Authorization` header. Unknown names cost the same hash as
    /// known ones, and digests are compared in constant time.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<Caller, Error> {
        let Some(authorization) = authorization else {
            return Err(Error::Unauthorized(Credentials::Missing));
        };
        let (name, secret) =
            parse_basic(authorization).ok_or(Error::Unauthorized(Credentials::NotAccepted))?;
        let found = self.credentials.iter().find(|c| c.name == name);
        let salt = found.map_or([0u8; SALT_BYTES], |c| c.salt);
        let presented = digest(&salt, secret.as_bytes());
        match found {
            Some(credential) if bool::from(presented.ct_eq(&credential.digest)) => Ok(Caller {
                name: credential.name.clone(),
                scope: credential.scope.clone(),
            }),
            _ => Err(Error::Unauthorized(Credentials::NotAccepted)),
        }
    }
}

/// The client name an `Authorization` header presents, accepted or not: for
/// the server's log of a refused call, never for its answer.
pub(crate) fn presented_name(authorization: &[u8]) -> Option<String> {
    parse_basic(authorization).map(|(name, _)| name)
}

/// What the log of a refused call says of who it claimed to be.
pub(crate) const NOT_A_CLIENT: &str = "(not a configured client's name)";

impl Auth {
    /// The presented name for the log of a refused call, only when it is a
    /// configured client's name: a secret put in the user part of a URL
    /// (`https://SECRET@host/`) arrives as the name, and must not be logged.
    pub(crate) fn presented_client(&self, authorization: &[u8]) -> Option<String> {
        let name = presented_name(authorization)?;
        let known = match self {
            Auth::Required(clients) => clients.names().any(|known| known == name),
            Auth::Disabled => false,
        };
        Some(if known { name } else { NOT_A_CLIENT.to_owned() })
    }
}

/// `Basic base64(name:secret)` → (name, secret).
fn parse_basic(header: &[u8]) -> Option<(String, String)> {
    let header = std::str::from_utf8(header).ok()?.trim();
    let (scheme, encoded) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (name, secret) = decoded.split_once(':')?;
    Some((name.to_owned(), secret.to_owned()))
}

/// A new random credential: the secret for the node's `base_url`, and the
/// `FLEETLOCK_CLIENTS` entry that stores only its salted hash.
pub struct NewCredential {
    pub secret: String,
    pub entry: String,
}

fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read as _;
    let mut bytes = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Why a credential was not made.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("'{0}' is not a client name (1 to 64 of a-z A-Z 0-9 . _ -)")]
    Name(String),
    #[error("a secret must be non-empty, without ':' or control characters")]
    Secret,
    /// A group of the credential's scope refused, as a node's request
    /// would be.
    #[error("group '{group}': {why}")]
    Group { group: String, why: String },
    #[error("no randomness: {0}")]
    NoRandomness(#[from] std::io::Error),
    /// The entry the server would not accept, as it says so.
    #[error("{0}")]
    Refused(String),
}

/// The `FLEETLOCK_CLIENTS` entry for `secret` (random salt).
pub fn entry_for(name: &str, groups: &str, secret: &str) -> Result<String, CredentialError> {
    if !valid_name(name) {
        return Err(CredentialError::Name(name.to_owned()));
    }
    if secret.is_empty() || secret.contains(':') || secret.chars().any(char::is_control) {
        return Err(CredentialError::Secret);
    }
    // Each group by its own rule, before the entry is split where a space
    // in a group would split it.
    for group in groups.split(',').filter(|_| groups != "*") {
        GroupName::parse(group).map_err(|e| CredentialError::Group {
            group: group.to_owned(),
            why: e.value(),
        })?;
    }
    let salt = random_bytes::<SALT_BYTES>()?;
    let entry = format!(
        "{name}:{groups}:{}:{}",
        hex(&salt),
        hex(&digest(&salt, secret.as_bytes()))
    );
    // Refuse to print an entry the server would not accept.
    Clients::parse(&entry).map_err(|e| CredentialError::Refused(e.to_string()))?;
    Ok(entry)
}

/// A random secret (hex, so it needs no escaping in a URL) and its entry.
pub fn new_credential(name: &str, groups: &str) -> Result<NewCredential, CredentialError> {
    let secret = hex(&random_bytes::<SECRET_BYTES>()?);
    let entry = entry_for(name, groups, &secret)?;
    Ok(NewCredential { secret, entry })
}

#[cfg(test)]
mod tests;
