//! The command line, for use outside Lambda: parse arguments into a
//! [`Command`]; `main` carries it out.

pub mod lock;

use std::net::SocketAddr;
use std::time::Duration;

use crate::config::parse_duration;
use crate::http::server::Limits;

pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

pub const HELP: &str = "\
fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS.

Under the AWS Lambda runtime it serves API Gateway and Function URL events.
Elsewhere:

USAGE:
    fleetlock serve [--listen ADDR] [--header-timeout D] [--body-timeout D] [--max-connections N]
                                           serve FleetLock over HTTP (default 127.0.0.1:8080);
                                           headers and body each within 10s (also the idle
                                           keep-alive time), at most 512 connections at once
    fleetlock create-table [--dry-run]     create FLEETLOCK_TABLE and wait until it is active
                                           (--dry-run: print the table definition only)
    fleetlock status [--group G] [--json] [--function NAME] [--all]
                                           show who holds a slot, since when, and each group's
                                           pause, settle time and windows (read from the
                                           deployed function's configuration with --function);
                                           past 20 idle groups, the rest are counted (--all lists them)
    fleetlock release --group G --id ID    release a slot by hand (ID as status shows it)
    fleetlock forget --group G [--function NAME]
                                           remove a group that holds nothing, is not paused and
                                           is not named in the configuration
    fleetlock pause (--group G ... | --all) --reason TEXT [--by NAME]
                                           stop new reboots in these groups at once
                                           (holders keep their slots; --by defaults to $USER)
    fleetlock resume (--group G ... | --all)
                                           clear a person's pause (alarms' pauses stay)
    fleetlock credential --name N --groups G [--secret-stdin]
                                           make a client credential: a random secret for
                                           Zincati's base_url and its FLEETLOCK_CLIENTS entry
    fleetlock iam-policy [--for operator|function|slot-events|alarm-pauses] [--table-arn ARN] [--function-arn ARN]
                                           print the IAM policy the people on call (or one of
                                           the functions) need
    fleetlock lock --group G [--id ID | --app NAME] [--wait [--timeout D]] [--url-file F]
                                           take a slot of group G for a job, as Zincati takes one
                                           (the URL from FLEETLOCK_URL or --url-file; --url URL
                                           also works but shows the secret in ps and shell history)
    fleetlock unlock --group G [--id ID | --app NAME] [--wait [--timeout D]] [--url-file F]
                                           give the job's slot back; exit codes of both: 0 done,
                                           1 refused (or --wait timed out, or stopped), 2 bad input
                                           or a 4xx asking again cannot mend, 3 unreachable or 5xx
    fleetlock config check                 check the FLEETLOCK_* settings in this shell as the
                                           function would read them, and print what each group
                                           gets and every bound the server enforces
    fleetlock help | --help | --version

ENVIRONMENT:
    FLEETLOCK_GROUPS  slots per group, e.g. 'default=1,workers=3,*=1' (default: default=1)
    FLEETLOCK_SETTLE  settle time after each release, per group: 'workers=10m,*=2m' (default: none)
    FLEETLOCK_MAX_WILDCARD_GROUPS  how many groups only '*' covers may come into existence
                      (default: 100, at most 2000); past it a new one is refused (too_many_groups)
    FLEETLOCK_WINDOWS maintenance windows per group, in Zincati's words, ';'-separated:
                      'workers: days=Sat,Sun start_time=22:00 length_minutes=120' (default: always open)
    FLEETLOCK_TIME_ZONE  the windows' zone: UTC (default) or an IANA name; never 'localtime'
    FLEETLOCK_TABLE   DynamoDB table; unset, `serve` keeps locks in memory
    FLEETLOCK_FUNCTION  the deployed function `status` reads its configuration from
    FLEETLOCK_EVENT_BUS the EventBridge bus of the slot-events entry point (default: default)
    FLEETLOCK_ALARM_PAUSES  the alarm-pauses entry point: alarms and the groups each pauses while
                      in ALARM, ';'-separated: 'api-5xx=*;db-latency=workers,db'
    FLEETLOCK_URL     lock/unlock: the server, as Zincati's base_url: https://NAME:SECRET@host/
    FLEETLOCK_MACHINE_ID_FILE  lock/unlock --app: the machine id (default: /etc/machine-id)
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
        limits: Limits,
    },
    CreateTable {
        dry_run: bool,
    },
    Status {
        group: Option<String>,
        json: bool,
        function: Option<String>,
        /// Every group, the idle ones too.
        all: bool,
    },
    Release {
        group: String,
        id: String,
    },
    Forget {
        group: String,
        function: Option<String>,
    },
    ConfigCheck,
    /// `lock` or `unlock`.
    Lock(crate::cli::lock::Request),
    Pause {
        groups: Targets,
        reason: String,
        by: Option<String>,
    },
    Resume {
        groups: Targets,
    },
    Credential {
        name: String,
        groups: String,
        secret_from_stdin: bool,
    },
    IamPolicy {
        policy_for: crate::aws::iam::PolicyFor,
        table_arn: Option<String>,
        function_arn: Option<String>,
    },
}

/// The groups a pause or resume acts on.
#[derive(Debug, PartialEq, Eq)]
pub enum Targets {
    Named(Vec<String>),
    /// Every group stored in the table.
    All,
}

fn targets(options: &mut Options, command: &str) -> Result<Targets, String> {
    let named = options.values("--group")?;
    match (named.is_empty(), options.flag("--all")) {
        (false, false) => Ok(Targets::Named(named)),
        (true, true) => Ok(Targets::All),
        (true, false) => Err(format!(
            "{command} needs --group GROUP (repeatable) or --all"
        )),
        (false, true) => Err(format!("{command} takes --group or --all, not both")),
    }
}

/// A timeout option of `serve`: from 1 s to 10 min.
fn timeout(options: &mut Options, name: &str) -> Result<Option<Duration>, String> {
    let Some(text) = options.value(name)? else {
        return Ok(None);
    };
    let duration = parse_duration(&text).map_err(|why| format!("{name}: {why}"))?;
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&duration) {
        return Err(format!("{name}: '{text}' is not from 1s to 10m"));
    }
    Ok(Some(duration))
}

/// Every command, for "did you mean".
const COMMANDS: &[&str] = &[
    "serve",
    "create-table",
    "status",
    "release",
    "forget",
    "pause",
    "resume",
    "credential",
    "iam-policy",
    "lock",
    "unlock",
    "config",
    "help",
];

/// Levenshtein distance: how many single-character edits turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

/// The settings of `lock` and `unlock`.
fn lock_request(
    options: &mut Options,
    call: crate::client::Call,
) -> Result<crate::cli::lock::Request, String> {
    use crate::cli::lock::{DEFAULT_APP, Identity, Request, UrlSource};
    let command = match call {
        crate::client::Call::PreReboot => "lock",
        crate::client::Call::SteadyState => "unlock",
    };
    let group = options
        .value("--group")?
        .ok_or_else(|| format!("{command} needs --group GROUP"))?;
    let identity = match (options.value("--id")?, options.value("--app")?) {
        (Some(_), Some(_)) => return Err(format!("{command} takes --id or --app, not both")),
        (Some(id), None) => Identity::Id(id),
        (None, app) => Identity::App(app.unwrap_or_else(|| DEFAULT_APP.into())),
    };
    let url = match (options.value("--url")?, options.value("--url-file")?) {
        (Some(_), Some(_)) => return Err(format!("{command} takes --url or --url-file, not both")),
        (Some(url), None) => UrlSource::Argument(url),
        (None, Some(file)) => UrlSource::File(file),
        (None, None) => UrlSource::Environment,
    };
    let wait = options.flag("--wait");
    let timeout = match options.value("--timeout")? {
        None => None,
        Some(_) if !wait => return Err("--timeout goes with --wait".into()),
        Some(text) => Some(parse_duration(&text).map_err(|why| format!("--timeout: {why}"))?),
    };
    Ok(Request {
        call,
        group,
        identity,
        url,
        wait: wait.then_some(timeout),
    })
}

/// Parses the arguments after the program name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let Some((command, rest)) = args.split_first() else {
        return Ok(Command::Help);
    };
    // `config check`: a command of two words.
    let (command, rest) = match (command.as_str(), rest.split_first()) {
        ("config", Some((word, rest))) if !word.starts_with("--") => {
            if word != "check" {
                return Err(format!(
                    "unknown command 'config {word}' (try 'config check')"
                ));
            }
            ("config check".to_owned(), rest)
        }
        _ => (command.clone(), rest),
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
            let defaults = Limits::default();
            let limits = Limits {
                header_timeout: timeout(&mut options, "--header-timeout")?
                    .unwrap_or(defaults.header_timeout),
                body_timeout: timeout(&mut options, "--body-timeout")?
                    .unwrap_or(defaults.body_timeout),
                max_connections: match options.value("--max-connections")? {
                    None => defaults.max_connections,
                    Some(text) => text
                        .parse()
                        .ok()
                        .filter(|n| (1..=65_535).contains(n))
                        .ok_or_else(|| {
                            format!("--max-connections: '{text}' is not a number from 1 to 65535")
                        })?,
                },
            };
            Command::Serve { listen, limits }
        }
        "create-table" => Command::CreateTable {
            dry_run: options.flag("--dry-run"),
        },
        "status" => Command::Status {
            group: options.value("--group")?,
            json: options.flag("--json"),
            function: options.value("--function")?,
            all: options.flag("--all"),
        },
        "release" => Command::Release {
            group: options
                .value("--group")?
                .ok_or("release needs --group GROUP")?,
            id: options.value("--id")?.ok_or("release needs --id ID")?,
        },
        "config check" => Command::ConfigCheck,
        "lock" => Command::Lock(lock_request(&mut options, crate::client::Call::PreReboot)?),
        "unlock" => Command::Lock(lock_request(
            &mut options,
            crate::client::Call::SteadyState,
        )?),
        "config" => return Err("config needs a command: 'fleetlock config check'".into()),
        "forget" => Command::Forget {
            group: options
                .value("--group")?
                .ok_or("forget needs --group GROUP")?,
            function: options.value("--function")?,
        },
        "pause" => Command::Pause {
            groups: targets(&mut options, "pause")?,
            reason: options
                .value("--reason")?
                .ok_or("pause needs --reason TEXT: it reaches the nodes' journals")?,
            by: options.value("--by")?,
        },
        "resume" => Command::Resume {
            groups: targets(&mut options, "resume")?,
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
            policy_for: match options.value("--for")? {
                None => crate::aws::iam::PolicyFor::Operator,
                Some(name) => crate::aws::iam::PolicyFor::parse(&name).ok_or_else(|| {
                    format!(
                        "--for takes {}, not '{name}'",
                        crate::aws::iam::PolicyFor::NAMES
                    )
                })?,
            },
            table_arn: options.value("--table-arn")?,
            function_arn: options.value("--function-arn")?,
        },
        other => {
            // A typo of a command is named, never run as something else.
            let closest = COMMANDS
                .iter()
                .find(|known| edit_distance(other, known) <= 2)
                .map_or(String::new(), |known| format!(" (did you mean '{known}'?)"));
            return Err(format!("unknown command '{other}'{closest}"));
        }
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
                    "--json" | "--dry-run" | "--secret-stdin" | "--all" | "--wait"
                ) =>
                {
                    (arg.clone(), None)
                }
                None => (arg.clone(), args.next().cloned()),
            };
            // Options with a value may repeat where a command takes several
            // (`--group`); `value` refuses a second one elsewhere.
            if value.is_none() && given.iter().any(|(n, _)| *n == name) {
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
        let value = match self.take(name) {
            None => None,
            Some(Some(value)) => Some(value),
            Some(None) => return Err(format!("{name} needs a value")),
        };
        if self.take(name).is_some() {
            return Err(format!("{name} given twice"));
        }
        Ok(value)
    }

    /// An option that may be given several times, in order.
    fn values(&mut self, name: &str) -> Result<Vec<String>, String> {
        let mut values = Vec::new();
        while let Some(value) = self.take(name) {
            values.push(value.ok_or_else(|| format!("{name} needs a value"))?);
        }
        Ok(values)
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

    #[test]
    fn help_and_readme_list_every_command_the_parser_takes() {
        let readme = include_str!("../../README.md");
        for command in COMMANDS {
            // `config` is a command of two words.
            let command = if *command == "config" {
                "config check"
            } else {
                command
            };
            let usage = format!("fleetlock {command}");
            assert!(HELP.contains(&usage), "help lacks {command}");
            assert!(readme.contains(&usage), "README lacks {command}");
            let parsed = parse(&args(command));
            assert!(
                !parsed.is_err_and(|e| e.starts_with("unknown command")),
                "{command}"
            );
        }
    }

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
                listen: DEFAULT_LISTEN.parse().unwrap(),
                limits: Limits::default(),
            })
        );
        assert_eq!(
            parse(&args(
                "serve --listen 0.0.0.0:9000 --header-timeout 2s --body-timeout 1m \
                 --max-connections 64"
            )),
            Ok(Command::Serve {
                listen: "0.0.0.0:9000".parse().unwrap(),
                limits: Limits {
                    header_timeout: Duration::from_secs(2),
                    body_timeout: Duration::from_secs(60),
                    max_connections: 64,
                },
            })
        );
        assert_eq!(
            parse(&args("forget --group old.cluster")),
            Ok(Command::Forget {
                group: "old.cluster".into(),
                function: None,
            })
        );
        assert_eq!(
            parse(&args("status --json --group=workers")),
            Ok(Command::Status {
                group: Some("workers".into()),
                json: true,
                function: None,
                all: false,
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
            parse(&args("pause --group a --group b --reason oops --by bob")),
            Ok(Command::Pause {
                groups: Targets::Named(vec!["a".into(), "b".into()]),
                reason: "oops".into(),
                by: Some("bob".into()),
            })
        );
        assert_eq!(
            parse(&args("resume --all")),
            Ok(Command::Resume {
                groups: Targets::All
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
            ("unlok", "unknown command 'unlok' (did you mean 'unlock'?)"),
            ("stauts", "(did you mean 'status'?)"),
            ("serve --listen nowhere", "not an address"),
            ("serve --listen", "needs a value"),
            ("serve --header-timeout 0s", "not from 1s to 10m"),
            ("serve --body-timeout 11m", "not from 1s to 10m"),
            ("serve --body-timeout soon", "not a duration"),
            ("serve --max-connections 0", "not a number from 1 to 65535"),
            ("forget", "needs --group"),
            ("lock", "lock needs --group"),
            ("lock --group g --id a --app b", "not both"),
            ("unlock --group g --url u --url-file f", "not both"),
            ("lock --group g --timeout 5m", "--timeout goes with --wait"),
            ("lock --group g --wait --timeout soon", "--timeout: "),
            ("release --group g", "needs --id"),
            ("status --verbose", "unknown option"),
            ("status --group a --group b", "given twice"),
            ("status extra", "unexpected argument"),
            ("pause --reason x", "needs --group"),
            ("pause --group a", "needs --reason"),
            ("pause --group a --all --reason x", "not both"),
            ("resume", "needs --group"),
            ("pause --group a --reason x --reason y", "given twice"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(says), "{line}: {err}");
        }
    }

    #[test]
    fn config_check_says_what_each_group_gets_and_every_bound() {
        let config = crate::config::Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3,db=1".into()),
            "FLEETLOCK_SETTLE" => Some("workers=10m".into()),
            "FLEETLOCK_TABLE" => Some("fleetlock".into()),
            "FLEETLOCK_AUTH" => Some("disabled".into()),
            _ => None,
        })
        .unwrap();
        let summary = report::config_summary(&config);
        for line in [
            "  db: 1 slot(s), settle 0s, always open",
            "  workers: 3 slot(s), settle 10m, always open",
            "  no '*': any other group is refused (unknown_group)",
            "  (no 'default': nodes without [identity] group in Zincati's config are refused)",
            "clients: none, authentication disabled (private networks only)",
            "table: fleetlock",
            "  slots of a group: at most 500",
        ] {
            assert!(
                summary.lines().any(|l| l == line),
                "{line:?} not in:\n{summary}"
            );
        }
        assert!(summary.contains("an id: at most 128 bytes"), "{summary}");
        assert!(summary.contains("at most 512 connections"), "{summary}");
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
    use crate::config::Config;
    use crate::domain::input::GroupName;
    use crate::domain::lock::Timestamp;
    use crate::domain::store::GroupRecord;
    use crate::domain::windows::WindowState;

    use super::human_duration;

    fn rfc3339(at: Timestamp) -> String {
        at.to_rfc3339()
    }

    /// What `config check` prints of a valid configuration: each group's
    /// rules, who may call, where the locks live, and every fixed bound.
    pub fn config_summary(config: &Config) -> String {
        use crate::config::{MAX_SLOTS, format_duration};
        use crate::domain::input::{MAX_GROUP_CHARS, MAX_ID_BYTES, STORED_ID_BYTES};
        use crate::http::auth::Auth;
        let mut out = String::from("groups:\n");
        let windows_of = |group: Option<&GroupName>| {
            config
                .windows
                .calendars()
                .find(|(g, _)| *g == group)
                .map(|(_, calendar)| {
                    let list: Vec<String> =
                        calendar.windows().iter().map(ToString::to_string).collect();
                    format!(
                        "reboots only in {} ({})",
                        list.join("; "),
                        config.windows.zone_name()
                    )
                })
                .unwrap_or_else(|| "always open".into())
        };
        let rule_text = |rules: crate::domain::lock::GroupRules| {
            format!(
                "{} slot(s), settle {}",
                rules.slots,
                format_duration(rules.settle)
            )
        };
        for (name, _) in config.groups.listed() {
            if let Ok(rules) = config.groups.rules_for(name) {
                out.push_str(&format!(
                    "  {name}: {}, {}\n",
                    rule_text(rules),
                    windows_of(Some(name))
                ));
            }
        }
        match config.groups.others_rules() {
            Some(rules) => out.push_str(&format!(
                "  * (every other valid group): {}, {}; at most {} such groups come into \
                 existence (FLEETLOCK_MAX_WILDCARD_GROUPS)\n",
                rule_text(rules),
                windows_of(None),
                config.groups.wildcard_limit()
            )),
            None => out.push_str("  no '*': any other group is refused (unknown_group)\n"),
        }
        let default = GroupName::parse("default").expect("a valid name");
        if config.groups.slots_for(&default).is_err() {
            out.push_str(
                "  (no 'default': nodes without [identity] group in Zincati's config are \
                 refused)\n",
            );
        }
        out.push_str(&match &config.auth {
            Some(Auth::Required(clients)) => {
                let names: Vec<&str> = clients.names().collect();
                format!("clients: {}\n", names.join(", "))
            }
            Some(Auth::Disabled) => {
                "clients: none, authentication disabled (private networks only)\n".into()
            }
            None => "clients: not set; under Lambda the function refuses to start, and \
                     'serve' is open on loopback only\n"
                .into(),
        });
        out.push_str(&match &config.table {
            Some(table) => format!("table: {table}\n"),
            None => "table: none; 'serve' keeps the locks in memory\n".into(),
        });
        let limits = crate::http::server::Limits::default();
        out.push_str(&format!(
            "bounds:\n  \
             an id: at most {MAX_ID_BYTES} bytes of visible characters (a steady-state also takes \
             the ids of up to {STORED_ID_BYTES} bytes that 0.2 granted)\n  \
             a group name: at most {MAX_GROUP_CHARS} characters of A-Z a-z 0-9 . -\n  \
             slots of a group: at most {MAX_SLOTS}\n  \
             a request body: at most {} bytes\n  \
             serve (defaults): headers within {}, body within {}, at most {} connections, \
             {} KiB of buffer and {} header lines a connection\n",
            crate::http::MAX_BODY_BYTES,
            format_duration(limits.header_timeout),
            format_duration(limits.body_timeout),
            limits.max_connections,
            crate::http::server::MAX_BUFFER_BYTES / 1024,
            crate::http::server::MAX_HEADERS,
        ));
        out
    }

    /// What `status --group G` says of a group with no item.
    pub fn unused_group(group: &GroupName, deployed: Option<&Config>) -> String {
        let configured = match deployed {
            None => "pass --function (or set FLEETLOCK_GROUPS as deployed) to see whether it is \
                     configured"
                .into(),
            Some(config) => match config.groups.slots_for(group) {
                Ok(slots) => format!("it is configured with {slots} slot(s)"),
                Err(_) => "it is not configured: its nodes are refused (unknown_group)".into(),
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

    /// When the group's settle period ends, if the configuration is known.
    fn settles_until(
        name: &GroupName,
        record: &GroupRecord,
        deployed: Option<&Config>,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let settle = deployed?.groups.rules_for(name).ok()?.settle;
        record.settling_until(settle, now)
    }

    fn window(name: &GroupName, deployed: Option<&Config>, now: Timestamp) -> Option<WindowState> {
        deployed.map(|config| config.windows.state(name, now))
    }

    /// The answer a newcomer would get now, in one word.
    fn state(
        name: &GroupName,
        record: &GroupRecord,
        deployed: Option<&Config>,
        now: Timestamp,
    ) -> &'static str {
        if matches!(
            window(name, deployed, now),
            Some(WindowState::Closed { .. })
        ) {
            "closed"
        } else if record.pause.is_paused() {
            "paused"
        } else if settles_until(name, record, deployed, now).is_some() {
            "settling"
        } else {
            "open"
        }
    }

    /// A line on a group's windows, if it has any.
    fn window_line(name: &GroupName, deployed: Option<&Config>, now: Timestamp) -> Option<String> {
        let config = deployed?;
        let calendar = config.windows.calendar_for(name)?;
        let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
        let at = |t: Timestamp| format!("{} ({})", rfc3339(t), config.windows.local_text(t));
        let state = match config.windows.state(name, now) {
            WindowState::Open { until: Some(until) } => format!("open until {}", at(until)),
            WindowState::Open { until: None } => "open all week".into(),
            WindowState::Closed { opens: Some(opens) } => format!("closed; opens {}", at(opens)),
            WindowState::Closed { opens: None } => "closed; no window can happen".into(),
            WindowState::AlwaysOpen => return None,
        };
        Some(format!(
            "{name} windows ({}): {}; {state}",
            config.windows.zone_name(),
            list.join("; ")
        ))
    }

    /// Idle groups (no holder, no pause) listed before the rest are only
    /// counted: a table with thousands of groups nobody uses hides the few
    /// that matter.
    pub const IDLE_SHOWN: usize = 20;

    /// How many groups only `*` covers are counted, and the limit when the
    /// configuration is known.
    #[derive(Clone, Copy, Debug)]
    pub struct Wildcard {
        pub counted: usize,
        pub limit: Option<u32>,
    }

    fn is_idle(record: &GroupRecord) -> bool {
        record.holders.is_empty() && !record.pause.is_paused()
    }

    /// Holders per group, then a line for each paused, settling or windowed
    /// group. `deployed` is the configuration the function runs with, when
    /// known (`--function`, or the same variables in the shell). With
    /// `idle_shown`, only that many idle groups are listed, the rest counted.
    pub fn table(
        groups: &[(GroupName, GroupRecord)],
        deployed: Option<&Config>,
        now: Timestamp,
        idle_shown: Option<usize>,
        wildcard: Wildcard,
    ) -> String {
        let mut idle_left = idle_shown.unwrap_or(usize::MAX);
        let mut idle_hidden = 0usize;
        let groups: Vec<&(GroupName, GroupRecord)> = groups
            .iter()
            .filter(|(_, record)| {
                if !is_idle(record) {
                    return true;
                }
                if idle_left == 0 {
                    idle_hidden += 1;
                    return false;
                }
                idle_left -= 1;
                true
            })
            .collect();
        let mut rows = vec![[
            "GROUP".to_string(),
            "HELD".to_string(),
            "STATE".to_string(),
            "ID".to_string(),
            "SINCE (UTC)".to_string(),
            "FOR".to_string(),
        ]];
        for &(name, record) in &groups {
            let state = state(name, record, deployed, now).to_string();
            if record.holders.is_empty() {
                rows.push([
                    name.to_string(),
                    slots_text(record),
                    state.clone(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
            }
            for (id, at) in record.holders.holders() {
                rows.push([
                    name.to_string(),
                    slots_text(record),
                    state.clone(),
                    // Escaped where it could pass for another id.
                    id.shown(),
                    rfc3339(at),
                    human_duration(at.age_at(now).as_secs()),
                ]);
            }
        }
        let widths: Vec<usize> = (0..6)
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
        for &(name, record) in &groups {
            if record.pause.is_paused() {
                out.push_str(&format!(
                    "{name} is paused {}\n",
                    crate::domain::service::paused_because(&record.pause)
                ));
            }
            if let Some(until) = settles_until(name, record, deployed, now) {
                out.push_str(&format!(
                    "{name} settles until {} (last release {})\n",
                    rfc3339(until),
                    record.last_release.map_or("-".into(), rfc3339)
                ));
            }
            if let Some(line) = window_line(name, deployed, now) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        // Alarm by alarm, which groups it holds: one line an alarm.
        let mut held_by: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for &(name, record) in &groups {
            for alarm in &record.pause.alarms {
                held_by.entry(alarm).or_default().push(name.as_str());
            }
        }
        for (alarm, held) in held_by {
            out.push_str(&format!(
                "alarm '{alarm}' is in ALARM and holds: {}\n",
                held.join(", ")
            ));
        }
        if idle_hidden > 0 {
            out.push_str(&format!(
                "... and {idle_hidden} more group(s) that hold nothing and are not paused \
                 (--all lists them; 'fleetlock forget --group G' removes one nobody uses)\n"
            ));
        }
        if wildcard.counted > 0 || wildcard.limit.is_some() {
            let limit = wildcard
                .limit
                .map_or(String::new(), |limit| format!(" of {limit} allowed"));
            out.push_str(&format!(
                "{}{limit} group(s) exist that only '*' covers (FLEETLOCK_MAX_WILDCARD_GROUPS)\n",
                wildcard.counted
            ));
        }
        // Without the configuration a settling group would show as open.
        if deployed.is_none() && groups.iter().any(|(_, r)| r.last_release.is_some()) {
            out.push_str(
                "(settle periods and windows are shown with --function NAME, or with the \
                 function's FLEETLOCK_* variables set in this shell)\n",
            );
        }
        out
    }

    pub fn json(
        groups: &[(GroupName, GroupRecord)],
        deployed: Option<&Config>,
        now: Timestamp,
        wildcard: Wildcard,
    ) -> serde_json::Value {
        let groups: Vec<_> = groups
            .iter()
            .map(|(name, record)| {
                let holders: Vec<_> = record
                    .holders
                    .holders()
                    .map(|(id, at)| {
                        serde_json::json!({
                            "id": id.as_str(),
                            "id_shown": id.shown(),
                            "acquired_at": rfc3339(at),
                            "acquired_at_ms": at.0,
                            "held_for_seconds": at.age_at(now).as_secs(),
                        })
                    })
                    .collect();
                let person = record.pause.person.as_ref().map(|p| {
                    serde_json::json!({
                        "reason": p.reason.as_str(),
                        "by": p.by,
                        "since": rfc3339(p.since),
                        "since_ms": p.since.0,
                    })
                });
                let rules = deployed.and_then(|c| c.groups.rules_for(name).ok());
                let windows = deployed.and_then(|config| {
                    let calendar = config.windows.calendar_for(name)?;
                    let (state, at) = match config.windows.state(name, now) {
                        WindowState::Open { until } => ("open", until),
                        WindowState::Closed { opens } => ("closed", opens),
                        WindowState::AlwaysOpen => ("always_open", None),
                    };
                    Some(serde_json::json!({
                        "time_zone": config.windows.zone_name(),
                        "windows": calendar.windows().iter().map(ToString::to_string).collect::<Vec<_>>(),
                        "state": state,
                        "changes_at": at.map(rfc3339),
                        "changes_at_local": at.map(|t| config.windows.local_text(t)),
                    }))
                });
                serde_json::json!({
                    "group": name.as_str(),
                    "slots": record.slots,
                    "configured_slots": rules.map(|r| r.slots),
                    "state": state(name, record, deployed, now),
                    "holders": holders,
                    "paused_by_person": person,
                    "paused_by_alarms": record.pause.alarms,
                    "last_release_at": record.last_release.map(rfc3339),
                    "settle_seconds": rules.map(|r| r.settle.as_secs()),
                    "settles_until": settles_until(name, record, deployed, now).map(rfc3339),
                    "maintenance_windows": windows,
                })
            })
            .collect();
        serde_json::json!({
            "groups": groups,
            "wildcard_groups": { "counted": wildcard.counted, "limit": wildcard.limit },
        })
    }
}
