//! Usage, generated from the one definition of the commands ([`super::Cli`]):
//! the whole help (`fleetlock help`), each command's usage line (in its own
//! `--help` too), the docs' command table, and usage mistakes told in a
//! sentence (exit [`USAGE_EXIT`]), in clap's words except where ours say
//! more (the closest command, what a missing option is for).

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::{Cli, Sub};
use crate::domain::time::Timestamp;

/// The exit code of every usage mistake (and of `lock`/`unlock`'s bad input).
pub(crate) const USAGE_EXIT: u8 = 2;

/// What the whole help says before the commands.
const PREAMBLE: &str = "\
fleetlock: a FleetLock server for Zincati, the update agent of Fedora CoreOS.

Under the AWS Lambda runtime it serves API Gateway and Function URL events.
Elsewhere:
";

/// The line of the help that lists the ways to get help.
const HELP_USAGE: &str = "fleetlock help [COMMAND] | COMMAND --help | --version";

/// The clap definition, each command's usage line the generated one: for
/// parsing, completions and the tests.
pub(crate) fn definition() -> clap::Command {
    let mut root = Cli::command();
    for (path, _) in commands(&Cli::command()) {
        let words: Vec<&str> = path.split(' ').collect();
        root = override_usage(root, &words);
    }
    root
}

fn override_usage(cmd: clap::Command, words: &[&str]) -> clap::Command {
    match words {
        [] => cmd,
        [last] => cmd.mut_subcommand(*last, |sub| {
            let line = usage_line(&format!("fleetlock {}", sub.get_name()), &sub);
            sub.override_usage(line)
        }),
        [first, rest @ ..] => {
            let prefix = (*first).to_owned();
            cmd.mut_subcommand(*first, |sub| {
                let mut sub = sub;
                for (path, _) in commands(&sub.clone()) {
                    if path == rest.join(" ") {
                        sub = sub.mut_subcommand(path.clone(), |leaf| {
                            let line = usage_line(&format!("fleetlock {prefix} {path}"), &leaf);
                            leaf.override_usage(line)
                        });
                    }
                }
                sub
            })
        }
    }
}

/// Every command a person runs, as its words after `fleetlock` (`config
/// check` is two), with its definition, in the order the help lists them.
fn commands(root: &clap::Command) -> Vec<(String, clap::Command)> {
    let mut found = Vec::new();
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.has_subcommands() {
            for (path, leaf) in commands(sub) {
                found.push((format!("{} {path}", sub.get_name()), leaf));
            }
        } else {
            found.push((sub.get_name().to_owned(), sub.clone()));
        }
    }
    found
}

/// One command's usage, from its arguments: required ones bare, the rest in
/// brackets, two that exclude each other as `A | B`, a repeatable one with
/// `...`, and an option of a few values with those values.
pub(crate) fn usage_line(prefix: &str, cmd: &clap::Command) -> String {
    let arguments: Vec<&clap::Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    let mut words = vec![prefix.to_owned()];
    let mut done: Vec<&str> = Vec::new();
    for arg in &arguments {
        if done.contains(&arg.get_id().as_str()) {
            continue;
        }
        done.push(arg.get_id().as_str());
        // The first later argument this one excludes: shown as one choice.
        let other = arguments.iter().find(|b| {
            !done.contains(&b.get_id().as_str())
                && (arg_conflicts(cmd, arg, b) || arg_conflicts(cmd, b, arg))
        });
        match other {
            Some(other) => {
                done.push(other.get_id().as_str());
                let choice = format!("{} | {}", bare(arg), bare(other));
                // One of the two is needed when either is needed without the other.
                let needed = arg.is_required_set()
                    || other.is_required_set()
                    || required_unless(arg, other)
                    || required_unless(other, arg);
                words.push(if needed {
                    format!("({choice})")
                } else {
                    format!("[{choice}]")
                });
            }
            // An argument after `--` (`lock -- COMMAND`) shows its `--`.
            None if arg.is_last_set() => words.push(format!("[-- {}]", bare(arg))),
            None if arg.is_required_set() => words.push(bare(arg)),
            None => words.push(format!("[{}]", bare(arg))),
        }
    }
    words.join(" ")
}

fn arg_conflicts(cmd: &clap::Command, a: &clap::Arg, b: &clap::Arg) -> bool {
    cmd.get_arg_conflicts_with(a)
        .iter()
        .any(|c| c.get_id() == b.get_id())
}

/// Whether `a` is required unless `b` is given (clap keeps no getter for it:
/// its usage line says so).
fn required_unless(a: &clap::Arg, b: &clap::Arg) -> bool {
    let probe = clap::Command::new("probe")
        .arg(a.clone())
        .arg(b.clone().required(false))
        .try_get_matches_from(["probe"]);
    probe.is_err() && !a.is_required_set()
}

/// An argument without brackets: `--group GROUP`, `--json`, `ID...`,
/// `--for operator|function`.
fn bare(arg: &clap::Arg) -> String {
    let value = {
        let possible: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|p| !p.is_hide_set())
            .map(|p| p.get_name().to_owned())
            .collect();
        if possible.is_empty() {
            arg.get_value_names()
                .and_then(|names| names.first())
                .map_or_else(|| arg.get_id().as_str().to_uppercase(), ToString::to_string)
        } else {
            possible.join("|")
        }
    };
    let repeated = matches!(arg.get_action(), clap::ArgAction::Append)
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let dots = if repeated { "..." } else { "" };
    match arg.get_long() {
        None => format!("{value}{dots}"),
        Some(long) if arg.get_action().takes_values() => {
            let sep = if repeated { " " } else { "" };
            format!("--{long} {value}{sep}{dots}")
        }
        Some(long) => format!("--{long}"),
    }
}

/// What a command does, in one paragraph (its doc comment's first).
fn about(cmd: &clap::Command) -> String {
    cmd.get_about().map(ToString::to_string).unwrap_or_default()
}

/// `fleetlock help`: every command with its usage line and what it does,
/// then the settings.
pub(crate) fn help_text() -> String {
    let mut text = format!("{PREAMBLE}\nUSAGE:\n");
    for (path, cmd) in commands(&definition()) {
        text.push_str(&format!(
            "    {}\n",
            usage_line(&format!("fleetlock {path}"), &cmd)
        ));
        for line in wrapped(&about(&cmd), 92) {
            text.push_str(&format!("        {line}\n"));
        }
    }
    text.push_str(&format!(
        "    {HELP_USAGE}\n\n{}",
        crate::config::settings::environment()
    ));
    text
}

/// The commands as a Markdown table, for docs/operating.md.
#[cfg(test)]
pub(crate) fn commands_table() -> String {
    let mut table = String::from("| command | what it does |\n|---|---|\n");
    for (path, cmd) in commands(&definition()) {
        let usage = usage_line(&format!("fleetlock {path}"), &cmd).replace('|', "\\|");
        table.push_str(&format!(
            "| `{usage}` | {} |\n",
            about(&cmd).replace('|', "\\|")
        ));
    }
    table.push_str(&format!(
        "| `{}` | this help, or one command's |\n",
        HELP_USAGE.replace('|', "\\|")
    ));
    table
}

/// `text` in lines of at most `width` characters, broken between words.
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// An RFC 3339 time given on the command line.
pub(crate) fn instant(text: &str) -> Result<Timestamp, String> {
    let at: jiff::Timestamp = text
        .parse()
        .map_err(|_| format!("'{text}' is not a time like 2026-03-28T00:00:00Z"))?;
    u64::try_from(at.as_millisecond())
        .map(Timestamp)
        .map_err(|_| format!("'{text}' is before 1970"))
}

/// Parses the arguments after the program name: `None` asks for the whole
/// help. `Err` is one line for a person: a usage mistake.
pub(crate) fn parse(args: &[String]) -> Result<Option<Sub>, String> {
    if args.is_empty() {
        return Ok(None);
    }
    let argv = std::iter::once("fleetlock".to_owned()).chain(args.iter().cloned());
    let matches = definition().try_get_matches_from(argv);
    let cli = matches.and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    match cli {
        Ok(cli) => Ok(cli.command),
        Err(err) => match err.kind() {
            ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                if is_root_help(args) =>
            {
                Ok(None)
            }
            ErrorKind::DisplayVersion => Ok(Some(Sub::Version)),
            _ => Err(usage_mistake(&err, args)),
        },
    }
}

/// `help`, `--help` or `-h` alone: the whole help.
fn is_root_help(args: &[String]) -> bool {
    matches!(args, [one] if matches!(one.as_str(), "help" | "--help" | "-h"))
}

/// The help clap writes for one command (`fleetlock help status`,
/// `fleetlock status --help`), or `None` when `args` ask for none.
pub(crate) fn command_help(args: &[String]) -> Option<String> {
    if args.is_empty() || is_root_help(args) {
        return None;
    }
    let argv = std::iter::once("fleetlock".to_owned()).chain(args.iter().cloned());
    match definition().try_get_matches_from(argv) {
        Err(err) if err.kind() == ErrorKind::DisplayHelp => Some(err.to_string()),
        _ => None,
    }
}

/// A clap error as one sentence in this program's words.
fn usage_mistake(err: &clap::Error, args: &[String]) -> String {
    let text = |kind| match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) => Some(list.join(", ")),
        Some(ContextValue::StyledStr(s)) => Some(s.to_string()),
        _ => None,
    };
    let strings = |kind| match err.get(kind) {
        Some(ContextValue::Strings(list)) => list.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    // "--group <G>" as the help writes it: "--group G".
    let option = |arg: String| arg.replace(['<', '>'], "");
    let option_name = |arg: &str| arg.split_whitespace().next().unwrap_or(arg).to_owned();
    let command = match args.first().map(String::as_str) {
        Some("config") => "config check".to_owned(),
        Some(first) => first.to_owned(),
        None => "fleetlock".to_owned(),
    };
    let suggested = |kind| {
        strings(kind)
            .first()
            .map_or(String::new(), |s| format!(" (did you mean '{s}'?)"))
    };
    match err.kind() {
        ErrorKind::InvalidSubcommand if args.first().is_some_and(|a| a == "config") => {
            let word = text(ContextKind::InvalidSubcommand).unwrap_or_default();
            format!("unknown command 'config {word}' (try 'config check')")
        }
        ErrorKind::InvalidSubcommand => {
            // A typo of a command is named, never run as something else.
            let word = text(ContextKind::InvalidSubcommand).unwrap_or_default();
            let definition = definition();
            let closest = definition
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(clap::Command::get_name)
                .chain(["help"])
                .find(|known| edit_distance(&word, known) <= 2)
                .map_or(String::new(), |known| format!(" (did you mean '{known}'?)"));
            format!("unknown command '{word}'{closest}")
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "config needs a command: 'fleetlock config check'".into()
        }
        ErrorKind::MissingRequiredArgument => {
            let missing: Vec<String> = strings(ContextKind::InvalidArg)
                .into_iter()
                .map(option)
                .collect();
            // `requires`: an option given without the one it goes with.
            if matches!(command.as_str(), "lock" | "unlock")
                && missing.first().is_some_and(|m| option_name(m) == "--wait")
            {
                return "--timeout goes with --wait".into();
            }
            let hint = match missing.first().map(|m| option_name(m)).as_deref() {
                Some("--reason") => ": it reaches the nodes' journals",
                Some("--groups") => " ('*' for all, or 'a,b')",
                Some("--group") if matches!(command.as_str(), "pause" | "resume") => {
                    " (repeatable) or --all"
                }
                _ => "",
            };
            format!("{command} needs {}{hint}", missing.join(" and "))
        }
        ErrorKind::ArgumentConflict => {
            let arg = text(ContextKind::InvalidArg).map(|a| option_name(&a));
            let prior = text(ContextKind::PriorArg).map(|a| option_name(&a));
            match (arg, prior) {
                (Some(arg), Some(prior)) if arg == prior => format!("{arg} given twice"),
                (Some(arg), Some(prior)) => {
                    format!("{command} takes {arg} or {prior}, not both")
                }
                (Some(arg), None) => format!("{arg} given twice"),
                _ => first_line(err),
            }
        }
        ErrorKind::UnknownArgument => {
            let arg = text(ContextKind::InvalidArg).unwrap_or_default();
            let tip = suggested(ContextKind::SuggestedArg);
            if arg.starts_with('-') {
                format!("unknown option '{arg}'{tip}")
            } else {
                format!("unexpected argument '{arg}'")
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let arg = text(ContextKind::InvalidArg)
                .map(|a| option_name(&a).replace(['<', '>'], ""))
                .unwrap_or_default();
            let value = text(ContextKind::InvalidValue).unwrap_or_default();
            match std::error::Error::source(err) {
                // A reason that names its option already stands alone.
                Some(why) if why.to_string().starts_with(&arg) => why.to_string(),
                Some(why) => format!("{arg}: {why}"),
                None if value.is_empty() => format!("{arg} needs a value"),
                None => {
                    let valid = text(ContextKind::ValidValue)
                        .map_or(String::new(), |v| format!(" (one of: {v})"));
                    format!("{arg}: '{value}' is not valid{valid}")
                }
            }
        }
        _ => first_line(err),
    }
}

pub(crate) use crate::domain::names::{did_you_mean, edit_distance};

/// clap's own sentence, without its "error: " and its usage lines.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

#[cfg(test)]
mod tests;
