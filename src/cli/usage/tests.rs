use std::time::Duration;

use super::*;
use crate::cli::{Completions, create_table, forget, pause, serve, slot, status};
use crate::http::server::Limits;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn help_gives_the_lease_range_the_service_enforces() {
    use crate::domain::lock::lease::{MAX_LEASE, MIN_LEASE};
    let range = format!(
        "FLEETLOCK_LEASE   per group, from {}m to {}h",
        MIN_LEASE.as_secs() / 60,
        MAX_LEASE.as_secs() / 3600
    );
    assert!(help_text().contains(&range), "{range}");
}

/// The table in docs/operating.md is the one the definition makes;
/// `FLEETLOCK_WRITE_DOCS=1 cargo test --lib docs_command_table` writes it.
#[test]
fn docs_command_table_is_the_definitions() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operating.md");
    let docs = std::fs::read_to_string(path).unwrap();
    let (start, end) = ("<!-- commands: begin -->\n", "<!-- commands: end -->");
    let from = docs
        .find(start)
        .expect("docs/operating.md lacks its command table")
        + start.len();
    let to = docs[from..].find(end).unwrap() + from;
    let generated = commands_table();
    if std::env::var_os("FLEETLOCK_WRITE_DOCS").is_some() {
        let written = format!("{}{generated}{}", &docs[..from], &docs[to..]);
        std::fs::write(path, written).unwrap();
        return;
    }
    assert_eq!(
        docs[from..to],
        generated,
        "docs/operating.md's command table is stale: run FLEETLOCK_WRITE_DOCS=1 cargo test \
             --lib docs_command_table"
    );
}

/// The whole help names every command with what it does, and each
/// command's own help every option it takes.
#[test]
fn every_command_is_in_the_help_and_every_option_in_its_own() {
    let help = help_text();
    let mut count = 0;
    for (path, cmd) in commands(&definition()) {
        let name = path.split(' ').next().unwrap();
        assert!(
            help.lines().any(|l| l.starts_with(&format!("  {name} "))),
            "help lacks {name}"
        );
        let own = command_help(&args(&format!("{path} --help"))).unwrap();
        assert!(
            own.contains(&format!("Usage: {}", usage_line(&path, &cmd))),
            "{own}"
        );
        for option in cmd.get_arguments().filter_map(|a| a.get_long()) {
            assert!(
                own.contains(&format!("--{option}")),
                "{path} lacks --{option}"
            );
        }
        let parsed = parse(&args(&path));
        assert!(
            !parsed.is_err_and(|e| e.to_string().starts_with("unknown command")),
            "{path}"
        );
        count += 1;
    }
    assert!(count > 15, "{count} commands");
    assert!(
        help.contains("ENVIRONMENT:\n    FLEETLOCK_GROUPS"),
        "{help}"
    );
    // Wrapped at the help's width, whatever the terminal (none here).
    assert!(help.lines().all(|l| l.chars().count() <= 100), "{help}");
}

/// clap's own usage lines: required options bare, the rest [OPTIONS].
#[test]
fn usage_lines_are_claps() {
    let line = |path: &str| {
        let (_, cmd) = commands(&definition())
            .into_iter()
            .find(|(p, _)| p == path)
            .unwrap();
        usage_line(path, &cmd)
    };
    assert_eq!(line("pause"), "fleetlock pause [OPTIONS] --reason <TEXT>");
    assert_eq!(
        line("lock"),
        "fleetlock lock [OPTIONS] --group <GROUP> [-- <COMMAND>...]"
    );
    assert_eq!(
        line("release"),
        "fleetlock release --group <GROUP> --id <ID>"
    );
    assert_eq!(
        line("forget"),
        "fleetlock forget [OPTIONS] <--group <GROUP>|--region <REGION>>"
    );
    assert_eq!(line("hosts"), "fleetlock hosts [OPTIONS] <ID>...");
    assert_eq!(line("config check"), "fleetlock config check [OPTIONS]");
}

/// After a mistake, the help to read: the command's own where there is one.
#[test]
fn a_mistake_points_at_the_help_of_its_command() {
    for (line, says) in [
        (
            "pause --group a",
            "Run 'fleetlock pause --help' for its usage.",
        ),
        (
            "config check --samconfig",
            "Run 'fleetlock config check --help' for its usage.",
        ),
        ("config chek", "Run 'fleetlock help' for usage."),
        ("reboot", "Run 'fleetlock help' for usage."),
        ("version", "Run 'fleetlock help' for usage."),
    ] {
        assert_eq!(where_to_read(&args(line)), says, "{line}");
    }
}

#[test]
fn no_arguments_prints_help() {
    assert_eq!(parse(&[]), Ok(None));
}

#[test]
fn commands_and_options() {
    let parsed = |line: &str| parse(&args(line)).unwrap().unwrap();
    let Sub::Serve(serve) = parsed("serve") else {
        panic!()
    };
    assert_eq!(serve.listen, serve::DEFAULT_LISTEN.parse().unwrap());
    assert_eq!(serve.limits(), Limits::default());
    let Sub::Serve(serve) = parsed(
        "serve --listen 0.0.0.0:9000 --header-timeout 2s --body-timeout 1m \
             --write-timeout 30s --max-connections 64",
    ) else {
        panic!()
    };
    assert_eq!(serve.listen, "0.0.0.0:9000".parse().unwrap());
    assert_eq!(
        serve.limits(),
        Limits {
            header_timeout: Duration::from_secs(2),
            body_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            max_connections: 64,
        }
    );
    assert_eq!(
        parsed("forget --group old.cluster"),
        Sub::Forget(forget::Forget {
            group: Some("old.cluster".into()),
            region: None,
            function: None,
        })
    );
    assert_eq!(
        parsed("status --json --group=workers"),
        Sub::Status(status::Status {
            group: Some("workers".into()),
            json: true,
            function: None,
            all: false,
            hosts: None,
        })
    );
    assert_eq!(
        parsed("release --id abc --group default"),
        Sub::Release(slot::ReleaseCommand {
            group: "default".into(),
            id: "abc".into()
        })
    );
    assert_eq!(
        parsed("pause --group a --group b --reason oops --by bob"),
        Sub::Pause(pause::PauseCommand {
            targets: pause::TargetArgs {
                groups: vec!["a".into(), "b".into()],
                all: false
            },
            reason: "oops".into(),
            by: Some("bob".into()),
            function: None,
            create: false,
        })
    );
    assert_eq!(
        parsed("resume --all"),
        Sub::Resume(pause::ResumeCommand {
            targets: pause::TargetArgs {
                groups: vec![],
                all: true
            },
            function: None,
        })
    );
    assert_eq!(
        parsed("create-table"),
        Sub::CreateTable(create_table::CreateTable { dry_run: false })
    );
    assert_eq!(
        parsed("create-table --dry-run"),
        Sub::CreateTable(create_table::CreateTable { dry_run: true })
    );
}

#[test]
fn mistakes_are_explained() {
    for (line, says) in [
        ("reboot", "unknown command"),
        ("unlok", "unknown command 'unlok' (did you mean 'unlock'?)"),
        ("stauts", "(did you mean 'status'?)"),
        (
            "status --grop x",
            "unknown option '--grop' (did you mean '--group'?)",
        ),
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
        (
            "iam-policy --for node",
            "--for: 'node' is not valid (one of: operator",
        ),
        ("config", "config needs a command"),
        (
            "config chek",
            "unknown command 'config chek' (did you mean 'config check'?)",
        ),
    ] {
        let err = parse(&args(line)).unwrap_err().to_string();
        assert!(err.contains(says), "{line}: {err}");
    }
}

#[test]
fn completions_cover_every_command_and_option() {
    assert_eq!(
        parse(&args("completions zsh")),
        Ok(Some(Sub::Completions(Completions {
            shell: clap_complete::Shell::Zsh
        })))
    );
    let err = parse(&args("completions tcsh")).unwrap_err().to_string();
    assert!(
        err.starts_with("SHELL: 'tcsh' is not valid (one of: bash"),
        "{err}"
    );
    let mut script = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::Bash,
        &mut definition(),
        "fleetlock",
        &mut script,
    );
    let script = String::from_utf8(script).unwrap();
    for word in [
        "create-table",
        "iam-policy",
        "--max-connections",
        "--url-file",
        "check",
        "node-tagging",
    ] {
        assert!(script.contains(word), "bash completions lack {word}");
    }
}

#[test]
fn one_command_has_help_of_its_own_and_the_whole_help_lists_them_all() {
    let status = command_help(&args("status --help")).unwrap();
    assert!(status.contains("--function <NAME>"), "{status}");
    assert!(
        status.contains("Usage: fleetlock status [OPTIONS]"),
        "{status}"
    );
    assert_eq!(command_help(&args("help status")), Some(status));
    let check = command_help(&args("config check --help")).unwrap();
    assert!(
        check.contains("Usage: fleetlock config check [OPTIONS]"),
        "{check}"
    );
    assert!(check.contains("--samconfig <FILE>"), "{check}");
    assert_eq!(command_help(&args("--help")), None);
    assert_eq!(parse(&args("--help")), Ok(None));
    assert_eq!(parse(&args("-V")), Ok(Some(Sub::Version)));
}

/// The shipped units run commands this binary takes, and the Butane config
/// carries the same units.
#[test]
fn the_shipped_units_call_commands_the_binary_takes() {
    use crate::client::Call;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib");
    let butane = std::fs::read_to_string(root.join("butane/fleetlock-job.bu")).unwrap();
    let mut calls = Vec::new();
    for unit in [
        "fleetlock-job@.service",
        "fleetlock-unlock-at-boot@.service",
    ] {
        let text = std::fs::read_to_string(root.join("systemd").join(unit)).unwrap();
        let indented: String = text
            .lines()
            .map(|l| {
                if l.is_empty() {
                    "\n".to_owned()
                } else {
                    format!("        {l}\n")
                }
            })
            .collect();
        assert!(
            butane.contains(&indented),
            "{unit} differs in the Butane config"
        );
        for line in text.lines().filter(|l| l.starts_with("Exec")) {
            let (_, command) = line.split_once('=').unwrap();
            let Some(args) = command.strip_prefix("/usr/local/bin/fleetlock ") else {
                continue;
            };
            let args: Vec<String> = args
                .replace("${FLEETLOCK_GROUP}", "workers")
                .replace("%i", "backup")
                .split_whitespace()
                .map(String::from)
                .collect();
            match parse(&args) {
                Ok(Some(Sub::Lock(lock))) => {
                    assert_eq!(lock.command, ["/usr/local/libexec/backup"], "{line}");
                    let request = lock.args.request(Call::PreReboot);
                    calls.push((request.call, request.wait));
                }
                Ok(Some(Sub::Unlock(unlock))) => {
                    let request = unlock.args.request(Call::SteadyState);
                    calls.push((request.call, request.wait));
                }
                other => panic!("{unit}: {line}: {other:?}"),
            }
        }
    }
    assert_eq!(
        calls,
        [
            (Call::PreReboot, Some(Some(Duration::from_secs(6 * 3600)))),
            (Call::SteadyState, Some(Some(Duration::from_secs(600)))),
            (Call::SteadyState, Some(None)),
        ],
        "lock around the job, unlock after it, unlock at boot until it succeeds"
    );
}
