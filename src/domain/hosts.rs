//! Which host sends which id: Zincati sends an app-specific hash of the
//! machine id, which nobody can read; a host map names the machine behind
//! it, from the instances' own tags or from a file an operator keeps.

use std::collections::BTreeMap;
use std::fmt;

/// A machine as an operator knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Host {
    /// The EC2 instance, when known.
    pub(crate) instance: Option<String>,
    /// Its `Name` tag, or the name a host file gives.
    pub(crate) name: Option<String>,
    /// Other instances that carry the same id (from tags): an id is one
    /// node's, so more than one is a mistake or an instance posing as
    /// another node, and the drain hook refuses to act on it.
    pub(crate) also: Vec<String>,
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.name, &self.instance) {
            (Some(name), Some(instance)) => write!(f, "{name} ({instance})"),
            (Some(name), None) => f.write_str(name),
            (None, Some(instance)) => f.write_str(instance),
            (None, None) => f.write_str("-"),
        }?;
        if !self.also.is_empty() {
            write!(
                f,
                " !! also carried by {}: more than one instance has this id",
                self.also.join(", ")
            )?;
        }
        Ok(())
    }
}

/// Ids to hosts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct HostMap {
    hosts: BTreeMap<String, Host>,
}

/// Why a host map was refused, by its line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostsError {
    #[error("line {line_no}: '{line}' is not 'ID HOST'")]
    NotIdHost { line_no: usize, line: String },
    #[error("line {line_no}: id '{id}' is listed twice")]
    Twice { line_no: usize, id: String },
}

impl HostMap {
    pub(crate) fn insert(&mut self, id: String, host: Host) {
        self.hosts.insert(id, host);
    }

    /// A host found carrying `id`: the first one is the id's host, any
    /// other is listed in its [`Host::also`].
    pub(crate) fn add(&mut self, id: String, host: Host) {
        match self.hosts.get_mut(&id) {
            Some(first) => {
                let other = host.to_string();
                if !first.also.contains(&other) && *first != host {
                    first.also.push(other);
                }
            }
            None => {
                self.hosts.insert(id, host);
            }
        }
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Host> {
        self.hosts.get(id)
    }

    /// A host file: one `ID HOST` a line, the host being the rest of the
    /// line (an instance id `i-…` as its first word is kept apart); blank
    /// lines and `#` comments ignored. An id listed twice is refused, with
    /// its line.
    pub(crate) fn parse(text: &str) -> Result<Self, HostsError> {
        let mut map = Self::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let line_no = number + 1;
            let Some((id, rest)) = line.split_once(char::is_whitespace) else {
                return Err(HostsError::NotIdHost {
                    line_no,
                    line: line.to_owned(),
                });
            };
            let rest = rest.trim();
            let (instance, name) = match rest.split_once(char::is_whitespace) {
                Some((first, name)) if is_instance_id(first) => {
                    (Some(first.to_owned()), Some(name.trim().to_owned()))
                }
                _ if is_instance_id(rest) => (Some(rest.to_owned()), None),
                _ => (None, Some(rest.to_owned())),
            };
            if map.hosts.contains_key(id) {
                return Err(HostsError::Twice {
                    line_no,
                    id: id.to_owned(),
                });
            }
            map.insert(
                id.to_owned(),
                Host {
                    instance,
                    name,
                    also: Vec::new(),
                },
            );
        }
        Ok(map)
    }
}

fn is_instance_id(word: &str) -> bool {
    word.strip_prefix("i-").is_some_and(|hex| {
        (8..=17).contains(&hex.len()) && hex.chars().all(|c| c.is_ascii_hexdigit())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_file_names_each_id_once() {
        let map = HostMap::parse(
            "# id  host\n\
             8f040e49ad9a45a8b0c617313becf153  i-0123456789abcdef0 worker-7\n\
             975228d46dc94622b9bbe16671e2b58d  db-1.example.com   # the primary\n\
             \n\
             00000000000000000000000000000000 i-0fedcba987654321f\n",
        )
        .unwrap();
        assert_eq!(map.hosts.len(), 3);
        assert_eq!(
            map.get("8f040e49ad9a45a8b0c617313becf153")
                .unwrap()
                .to_string(),
            "worker-7 (i-0123456789abcdef0)"
        );
        assert_eq!(
            map.get("975228d46dc94622b9bbe16671e2b58d")
                .unwrap()
                .to_string(),
            "db-1.example.com"
        );
        assert_eq!(
            map.get("00000000000000000000000000000000")
                .unwrap()
                .to_string(),
            "i-0fedcba987654321f"
        );
        assert_eq!(
            HostMap::parse("a b\na c\n").unwrap_err().to_string(),
            "line 2: id 'a' is listed twice"
        );
        assert_eq!(
            HostMap::parse("lonely\n").unwrap_err().to_string(),
            "line 1: 'lonely' is not 'ID HOST'"
        );
    }

    #[test]
    fn an_id_more_than_one_instance_carries_is_flagged() {
        let host = |instance: &str| Host {
            instance: Some(instance.into()),
            name: None,
            also: Vec::new(),
        };
        let mut map = HostMap::default();
        map.add("a".into(), host("i-0123456789abcdef0"));
        map.add("a".into(), host("i-0123456789abcdef0"));
        assert!(
            map.get("a").unwrap().also.is_empty(),
            "the same instance twice is one"
        );
        map.add("a".into(), host("i-0fedcba987654321f"));
        assert_eq!(
            map.get("a").unwrap().to_string(),
            "i-0123456789abcdef0 !! also carried by i-0fedcba987654321f: more than one \
             instance has this id"
        );
    }
}
