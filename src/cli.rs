//! The command line, for use outside Lambda: parse arguments into a
//! [`Command`]; `main` carries it out.

use std::net::SocketAddr;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

pub const HELP: &str = "\
fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS.

Under the AWS Lambda runtime it serves API Gateway and Function URL events.
Elsewhere:

USAGE:
    fleetlock serve [--listen ADDR]        serve FleetLock over HTTP (default 127.0.0.1:8080)
    fleetlock create-table [--dry-run]     create FLEETLOCK_TABLE and wait until it is active
                                           (--dry-run: print the table definition only)
    fleetlock status [--group G] [--json]  show who holds a slot, since when
    fleetlock release --group G --id ID    release a slot by hand
    fleetlock credential --name N --groups G [--secret-stdin]
                                           make a client credential: a random secret for
                                           Zincati's base_url and its FLEETLOCK_CLIENTS entry
    fleetlock help | --help | --version

ENVIRONMENT:
    FLEETLOCK_GROUPS  slots per group, e.g. 'default=1,workers=3,*=1' (default: default=1)
    FLEETLOCK_TABLE   DynamoDB table; unset, `serve` keeps locks in memory
    FLEETLOCK_CLIENTS who may call: 'NAME:GROUPS:SALT:SHA256' entries from `fleetlock credential`
    FLEETLOCK_AUTH    'required' (with FLEETLOCK_CLIENTS) or 'disabled' (private networks only);
                      unset, Lambda refuses to start without clients and `serve` is open on loopback only
    AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE, ...  the standard AWS configuration
    RUST_LOG          log filter (default: info)
";

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Serve {
        listen: SocketAddr,
    },
    CreateTable {
        dry_run: bool,
    },
    Status {
        group: Option<String>,
        json: bool,
    },
    Release {
        group: String,
        id: String,
    },
    Credential {
        name: String,
        groups: String,
        secret_from_stdin: bool,
    },
    IamPolicy {
        function: bool,
        table_arn: Option<String>,
    },
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let Some((command, rest)) = args.split_first() else {
        return Ok(Command::Help);
    };
    let mut options = Options::new(rest)?;
    let command = match command.as_str() {
        "help" | "--help" | "-h" => Command::Help,
        "--version" | "-V" | "version" => Command::Version,
        "serve" => {
            let listen = options
                .value("--listen")?
                .unwrap_or_else(|| DEFAULT_LISTEN.into());
            let listen = listen.parse().map_err(|_| {
                format!("--listen: '{listen}' is not an address like 127.0.0.1:8080")
            })?;
            Command::Serve { listen }
        }
        "create-table" => Command::CreateTable {
            dry_run: options.flag("--dry-run"),
        },
        "status" => Command::Status {
            group: options.value("--group")?,
            json: options.flag("--json"),
        },
        "release" => Command::Release {
            group: options
                .value("--group")?
                .ok_or("release needs --group GROUP")?,
            id: options.value("--id")?.ok_or("release needs --id ID")?,
        },
        "credential" => Command::Credential {
            name: options
                .value("--name")?
                .ok_or("credential needs --name NAME")?,
            groups: options
                .value("--groups")?
                .ok_or("credential needs --groups GROUPS ('*' for all, or 'a,b')")?,
            secret_from_stdin: options.flag("--secret-stdin"),
        },
        "iam-policy" => Command::IamPolicy {
            function: options.flag("--function"),
            table_arn: options.value("--table-arn")?,
        },
        other => return Err(format!("unknown command '{other}'")),
    };
    options.finish()?;
    Ok(command)
}

/// `--name value`, `--name=value` and `--flag`, each at most once.
struct Options {
    given: Vec<(String, Option<String>)>,
}

impl Options {
    fn new(args: &[String]) -> Result<Self, String> {
        let mut given = Vec::new();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            if !arg.starts_with("--") {
                return Err(format!("unexpected argument '{arg}'"));
            }
            let (name, value) = match arg.split_once('=') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None if matches!(
                    arg.as_str(),
                    "--json" | "--dry-run" | "--secret-stdin" | "--function"
                ) =>
                {
                    (arg.clone(), None)
                }
                None => (arg.clone(), args.next().cloned()),
            };
            if given.iter().any(|(n, _)| *n == name) {
                return Err(format!("{name} given twice"));
            }
            given.push((name, value));
        }
        Ok(Self { given })
    }

    fn take(&mut self, name: &str) -> Option<Option<String>> {
        let at = self.given.iter().position(|(n, _)| n == name)?;
        Some(self.given.remove(at).1)
    }

    fn value(&mut self, name: &str) -> Result<Option<String>, String> {
        match self.take(name) {
            None => Ok(None),
            Some(Some(value)) => Ok(Some(value)),
            Some(None) => Err(format!("{name} needs a value")),
        }
    }

    fn flag(&mut self, name: &str) -> bool {
        self.take(name).is_some()
    }

    fn finish(self) -> Result<(), String> {
        match self.given.first() {
            None => Ok(()),
            Some((name, _)) => Err(format!("unknown option '{name}'")),
        }
    }
}

/// `3h 12m`, `45s`: how long a slot has been held, for people.
pub fn human_duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn no_arguments_prints_help() {
        assert_eq!(parse(&[]), Ok(Command::Help));
    }

    #[test]
    fn commands_and_options() {
        assert_eq!(
            parse(&args("serve")),
            Ok(Command::Serve {
                listen: DEFAULT_LISTEN.parse().unwrap()
            })
        );
        assert_eq!(
            parse(&args("serve --listen 0.0.0.0:9000")),
            Ok(Command::Serve {
                listen: "0.0.0.0:9000".parse().unwrap()
            })
        );
        assert_eq!(
            parse(&args("status --json --group=workers")),
            Ok(Command::Status {
                group: Some("workers".into()),
                json: true
            })
        );
        assert_eq!(
            parse(&args("release --id abc --group default")),
            Ok(Command::Release {
                group: "default".into(),
                id: "abc".into()
            })
        );
        assert_eq!(
            parse(&args("create-table")),
            Ok(Command::CreateTable { dry_run: false })
        );
        assert_eq!(
            parse(&args("create-table --dry-run")),
            Ok(Command::CreateTable { dry_run: true })
        );
    }

    #[test]
    fn mistakes_are_explained() {
        for (line, says) in [
            ("reboot", "unknown command"),
            ("serve --listen nowhere", "not an address"),
            ("serve --listen", "needs a value"),
            ("release --group g", "needs --id"),
            ("status --verbose", "unknown option"),
            ("status --group a --group b", "given twice"),
            ("status extra", "unexpected argument"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(45), "45s");
        assert_eq!(human_duration(125), "2m 5s");
        assert_eq!(human_duration(3 * 3600 + 12 * 60 + 5), "3h 12m");
        assert_eq!(human_duration(2 * 86_400 + 3600), "2d 1h");
    }
}

/// The `status` listing, as a table for people or JSON for scripts.
pub mod report {
    use aws_sdk_dynamodb::primitives::{DateTime, DateTimeFormat};

    use crate::config::GroupSlots;
    use crate::input::GroupName;
    use crate::lock::Timestamp;
    use crate::store::GroupRecord;

    use super::human_duration;

    /// `2026-11-30T05:12:09Z`: whole seconds, always the same width.
    pub fn rfc3339(at: Timestamp) -> String {
        let seconds = i64::try_from(at.0 / 1000).unwrap_or(i64::MAX);
        DateTime::from_secs(seconds)
            .fmt(DateTimeFormat::DateTime)
            .unwrap_or_else(|_| at.0.to_string())
    }

    /// What `status --group G` says of a group with no item.
    pub fn unused_group(group: &GroupName, configured: &Option<GroupSlots>) -> String {
        let configured = match configured {
            None => "set FLEETLOCK_GROUPS as deployed to see whether it is configured".into(),
            Some(groups) => match groups.slots_for(group) {
                Ok(slots) => format!("FLEETLOCK_GROUPS gives it {slots} slot(s)"),
                Err(_) => "FLEETLOCK_GROUPS does not configure it: its nodes are refused \
                           (unknown_group)"
                    .into(),
            },
        };
        format!("group '{group}' has no holders and has never been used; {configured}")
    }

    fn slots_text(record: &GroupRecord) -> String {
        match record.slots {
            Some(slots) => format!("{}/{slots}", record.holders.len()),
            None => record.holders.len().to_string(),
        }
    }

    pub fn table(groups: &[(GroupName, GroupRecord)], now: Timestamp) -> String {
        let mut rows = vec![[
            "GROUP".to_string(),
            "HELD".to_string(),
            "ID".to_string(),
            "SINCE (UTC)".to_string(),
            "FOR".to_string(),
        ]];
        for (name, record) in groups {
            if record.holders.is_empty() {
                rows.push([
                    name.to_string(),
                    slots_text(record),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
            for (id, at) in record.holders.holders() {
                rows.push([
                    name.to_string(),
                    slots_text(record),
                    id.to_string(),
                    rfc3339(at),
                    human_duration(at.age_at(now).as_secs()),
                ]);
            }
        }
        let widths: Vec<usize> = (0..5)
            .map(|col| {
                rows.iter()
                    .map(|r| r[col].chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &rows {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }

    pub fn json(groups: &[(GroupName, GroupRecord)], now: Timestamp) -> serde_json::Value {
        let groups: Vec<_> = groups
            .iter()
            .map(|(name, record)| {
                let holders: Vec<_> = record
                    .holders
                    .holders()
                    .map(|(id, at)| {
                        serde_json::json!({
                            "id": id.as_str(),
                            "acquired_at": rfc3339(at),
                            "acquired_at_ms": at.0,
                            "held_for_seconds": at.age_at(now).as_secs(),
                        })
                    })
                    .collect();
                serde_json::json!({
                    "group": name.as_str(),
                    "slots": record.slots,
                    "holders": holders,
                })
            })
            .collect();
        serde_json::json!({ "groups": groups })
    }
}
