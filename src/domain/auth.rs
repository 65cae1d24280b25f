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
pub enum Scope {
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
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.credentials.iter().map(|c| c.name.as_str())
    }

    /// Each client's name and the groups it may use, in the order listed.
    pub fn scopes(&self) -> impl Iterator<Item = (&str, &Scope)> {
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
    pub fn may_use(&self, group: &GroupName) -> Result<(), Error> {
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
pub fn presented_name(authorization: &[u8]) -> Option<String> {
    parse_basic(authorization).map(|(name, _)| name)
}

/// What the log of a refused call says of who it claimed to be.
pub const NOT_A_CLIENT: &str = "(not a configured client's name)";

impl Auth {
    /// The presented name for the log of a refused call, only when it is a
    /// configured client's name: a secret put in the user part of a URL
    /// (`https://SECRET@host/`) arrives as the name, and must not be logged.
    pub fn presented_client(&self, authorization: &[u8]) -> Option<String> {
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

/// The `FLEETLOCK_CLIENTS` entry for `secret` (random salt).
pub fn entry_for(name: &str, groups: &str, secret: &str) -> Result<String, String> {
    if !valid_name(name) {
        return Err(format!(
            "'{name}' is not a client name (1 to 64 of a-z A-Z 0-9 . _ -)"
        ));
    }
    if secret.is_empty() || secret.contains(':') || secret.chars().any(char::is_control) {
        return Err("a secret must be non-empty, without ':' or control characters".into());
    }
    let salt = random_bytes::<SALT_BYTES>().map_err(|e| format!("no randomness: {e}"))?;
    let entry = format!(
        "{name}:{groups}:{}:{}",
        hex(&salt),
        hex(&digest(&salt, secret.as_bytes()))
    );
    // Refuse to print an entry the server would not accept.
    Clients::parse(&entry).map_err(|e| e.to_string())?;
    Ok(entry)
}

/// A random secret (hex, so it needs no escaping in a URL) and its entry.
pub fn new_credential(name: &str, groups: &str) -> Result<NewCredential, String> {
    let secret = hex(&random_bytes::<SECRET_BYTES>().map_err(|e| format!("no randomness: {e}"))?);
    let entry = entry_for(name, groups, &secret)?;
    Ok(NewCredential { secret, entry })
}

#[cfg(test)]
mod tests {
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
}
