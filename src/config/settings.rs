//! Every setting, once: its name, what reads it, and its line in
//! `fleetlock help`. The help's ENVIRONMENT section is rendered from this
//! list, the function's variables and the rules' are read from it, and a
//! test holds docs/configuration.md's table and every `FLEETLOCK_*` the
//! source reads to it.

/// One setting.
pub(crate) struct Setting {
    /// The variable, or the family of them (`AWS_REGION, ...`).
    pub(crate) name: &'static str,
    /// One of the service's settings a deploy sets: what `config check
    /// --env` prints.
    pub(crate) function: bool,
    /// Gives a shell the rules of groups: when one is set, `status` and
    /// `forget` read the rules from this shell.
    pub(crate) rule: bool,
    /// Its line in `fleetlock help`, then the lines that go on under it.
    pub(crate) help: &'static [&'static str],
}

/// Every setting, in the order `fleetlock help` lists them.
pub(crate) const SETTINGS: &[Setting] = &[
    Setting {
        name: "FLEETLOCK_GROUPS",
        function: true,
        rule: true,
        help: &["slots per group, e.g. 'default=1,workers=3,*=1' (default: default=1)"],
    },
    Setting {
        name: "FLEETLOCK_SETTLE",
        function: true,
        rule: true,
        help: &["settle time after each release, per group: 'workers=10m,*=2m' (default: none)"],
    },
    Setting {
        name: "FLEETLOCK_LEASE",
        function: true,
        rule: true,
        help: &[
            "per group, from 30m to 168h: past it, a full group's next asker takes the",
            "oldest slot, e.g. 'workers=6h' (default: none, held until given back)",
        ],
    },
    Setting {
        name: "FLEETLOCK_DRAIN",
        function: true,
        rule: true,
        help: &[
            "per group, a drain gate: a drain timeout from 1m to 24h, then hold (default)",
            "or grant: 'workers=15m,db=30m:grant' (default: none, granted at once)",
        ],
    },
    Setting {
        name: "FLEETLOCK_RETURN",
        function: true,
        rule: true,
        help: &[
            "per group, a return gate: a return timeout from 1m to 24h, e.g. 'workers=20m';",
            "a released slot counts until the node's return is confirmed (default: none)",
        ],
    },
    Setting {
        name: "FLEETLOCK_ZONES",
        function: true,
        rule: true,
        help: &[
            "groups whose nodes go out one zone at a time, e.g. 'workers': a node asking",
            "as 'workers.us-east-1a' takes a slot of 'workers' (default: none)",
        ],
    },
    Setting {
        name: "FLEETLOCK_CANARY",
        function: true,
        rule: true,
        help: &[
            "per group, a canary then waves: BAKE[:WAVES[:BACK]], e.g. 'workers=30m:1+3':",
            "the first node alone, then 3, then the rest, each wave back 30m before the",
            "next; a wave's node out past BACK (default 1h) stops the group (default: none)",
        ],
    },
    Setting {
        name: "FLEETLOCK_MAX_WILDCARD_GROUPS",
        function: true,
        rule: false,
        help: &[
            "how many groups only '*' covers may come into existence",
            "(default: 100, at most 2000); past it a new one is refused (too_many_groups)",
        ],
    },
    Setting {
        name: "FLEETLOCK_WINDOWS",
        function: true,
        rule: true,
        help: &[
            "maintenance windows per group, in Zincati's words, ';'-separated:",
            "'workers: days=Sat,Sun start_time=22:00 length_minutes=120'",
            "(default: always open)",
        ],
    },
    Setting {
        name: "FLEETLOCK_TIME_ZONE",
        function: true,
        rule: true,
        help: &["the windows' zone: UTC (default) or an IANA name; never 'localtime'"],
    },
    Setting {
        name: "FLEETLOCK_TABLE",
        function: false,
        rule: false,
        help: &["DynamoDB table; unset, `serve` keeps locks in memory"],
    },
    Setting {
        name: "FLEETLOCK_REGION",
        function: false,
        rule: false,
        help: &[
            "on a global table: the region this function records its settings under; a",
            "group another region serves with other settings is refused (settings_differ)",
        ],
    },
    Setting {
        name: "FLEETLOCK_FUNCTION",
        function: false,
        rule: false,
        help: &[
            "the deployed function whose configuration status, forget, pause, resume",
            "and windows read (as --function)",
        ],
    },
    Setting {
        name: "FLEETLOCK_EVENT_BUS",
        function: false,
        rule: false,
        help: &["the EventBridge bus of the slot-events entry point (default: default)"],
    },
    Setting {
        name: "FLEETLOCK_ALARM_PAUSES",
        function: true,
        rule: false,
        help: &[
            "the alarm-pauses entry point: alarms and the groups each pauses while",
            "in ALARM, ';'-separated: 'api-5xx=*;db-latency=workers,db'",
        ],
    },
    Setting {
        name: "FLEETLOCK_METRICS_SERVICE",
        function: false,
        rule: false,
        help: &[
            "the drained entry point's sweep: the API function whose",
            "DrainsOverdue and ReturnsOverdue metrics it feeds (needed with a gate)",
        ],
    },
    Setting {
        name: "FLEETLOCK_HOSTS",
        function: false,
        rule: false,
        help: &["status and hosts: 'tags' or a host file, as --hosts"],
    },
    Setting {
        name: "FLEETLOCK_URL",
        function: false,
        rule: false,
        help: &["lock/unlock: the server, as Zincati's base_url: https://NAME:SECRET@host/"],
    },
    Setting {
        name: "FLEETLOCK_MACHINE_ID_FILE",
        function: false,
        rule: false,
        help: &["lock/unlock --app: the machine id (default: /etc/machine-id)"],
    },
    Setting {
        name: "FLEETLOCK_CLIENTS",
        function: true,
        rule: false,
        help: &["who may call: 'NAME:GROUPS:SALT:SHA256' entries from `fleetlock credential`"],
    },
    Setting {
        name: "FLEETLOCK_AUTH",
        function: true,
        rule: false,
        help: &[
            "'required' (with FLEETLOCK_CLIENTS) or 'disabled' (private networks only);",
            "unset, Lambda refuses to start without clients and `serve` is open on",
            "loopback only",
        ],
    },
    Setting {
        name: "AWS_REGION, AWS_ENDPOINT_URL, AWS_PROFILE, ...",
        function: false,
        rule: false,
        help: &["the standard AWS configuration"],
    },
    Setting {
        name: "SSL_CERT_FILE, SSL_CERT_DIR",
        function: false,
        rule: false,
        help: &[
            "roots trusted beside the functions' compiled-in ones (a",
            "TLS-inspecting proxy's CA); the command line reads the system's store, or",
            "these as curl does",
        ],
    },
    Setting {
        name: "RUST_LOG",
        function: false,
        rule: false,
        help: &["log filter (default: info)"],
    },
];

/// The service's settings a deploy sets.
pub(crate) fn function_variables() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().filter(|s| s.function).map(|s| s.name)
}

/// The settings that give a shell the rules of groups.
pub(crate) fn rule_variables() -> impl Iterator<Item = &'static str> {
    SETTINGS.iter().filter(|s| s.rule).map(|s| s.name)
}

/// The help's ENVIRONMENT section: each name with its text from the 22nd
/// column (after two spaces, past a longer name), and the lines that go
/// on under it.
pub(crate) fn environment() -> String {
    const COLUMN: usize = 18;
    let mut text = String::from("ENVIRONMENT:\n");
    for setting in SETTINGS {
        let gap = if setting.name.len() < COLUMN {
            COLUMN - setting.name.len()
        } else {
            2
        };
        let mut lines = setting.help.iter();
        let first = lines.next().copied().unwrap_or_default();
        text.push_str(&format!("    {}{}{first}\n", setting.name, " ".repeat(gap)));
        for line in lines {
            text.push_str(&format!("{}{line}\n", " ".repeat(4 + COLUMN)));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name a setting's entry stands for.
    fn names() -> Vec<&'static str> {
        SETTINGS
            .iter()
            .flat_map(|s| s.name.split(", "))
            .filter(|name| *name != "...")
            .collect()
    }

    #[test]
    fn the_help_lists_every_setting_once_each_beside_its_text() {
        let help = environment();
        for setting in SETTINGS {
            let line = format!("    {} ", setting.name);
            assert_eq!(
                help.lines().filter(|l| l.starts_with(&line)).count(),
                1,
                "{}",
                setting.name
            );
        }
        for line in help.lines().skip(1) {
            assert!(line.starts_with("    "), "{line}");
            // Within the help's width, which would break it elsewhere.
            assert!(line.chars().count() <= 100, "{line}");
        }
        let deployed: Vec<_> = function_variables().collect();
        assert!(deployed.contains(&"FLEETLOCK_GROUPS") && !deployed.contains(&"FLEETLOCK_URL"));
        assert!(rule_variables().all(|name| deployed.contains(&name)));
    }

    #[test]
    fn the_docs_table_and_the_source_read_the_settings_this_list_has() {
        let docs = include_str!("../../docs/configuration.md");
        let table = docs
            .split("| variable | default | meaning |")
            .nth(1)
            .expect("the settings table");
        let mut documented: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .flat_map(|line| line.split(" | ").next().unwrap_or_default().split(", "))
            .map(|cell| cell.trim_start_matches("| ").trim_matches('`'))
            .filter(|name| *name != "…")
            .collect();
        documented.sort_unstable();
        let mut listed = names();
        listed.sort_unstable();
        assert_eq!(documented, listed, "docs/configuration.md against SETTINGS");
        // Every FLEETLOCK_* the source names is a setting (but the switch
        // of the tests that write the docs).
        let mut unlisted = std::collections::BTreeSet::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices("FLEETLOCK_") {
                    let name: String = text[at..]
                        .chars()
                        .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                        .collect();
                    let name = name.trim_end_matches('_').to_owned();
                    // `FLEETLOCK_*` in a sentence names them all;
                    // FLEETLOCK_GROUP is the shipped units' own variable
                    // (contrib/systemd), which the usage tests read.
                    let known = ["FLEETLOCK", "FLEETLOCK_WRITE_DOCS", "FLEETLOCK_GROUP"];
                    if !known.contains(&name.as_str()) && !listed.contains(&name.as_str()) {
                        unlisted.insert(format!("{name} in {}", path.display()));
                    }
                }
            }
        }
        assert!(unlisted.is_empty(), "{unlisted:#?}");
    }
}
