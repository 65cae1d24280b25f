//! Usage in clap's own words, from the one definition of the commands
//! ([`super::Cli`]): the whole help (clap's list of the commands, then the
//! settings), each command's help and usage line, the docs' command table,
//! and usage mistakes told in one sentence (exit [`USAGE_EXIT`]), with our
//! words where they say more than clap's (what a missing option is for).

use clap::CommandFactory;
use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::{Cli, Sub};
use crate::domain::time::Timestamp;

/// The exit code of every usage mistake (and of `lock`/`unlock`'s bad input).
pub(crate) const USAGE_EXIT: u8 = 2;

/// Help is wrapped at this width, or a narrower terminal's.
const HELP_WIDTH: usize = 100;

/// The clap definition with the settings after the whole help: for parsing,
/// help, completions and the tests.
pub(crate) fn definition() -> clap::Command {
    Cli::command()
        .max_term_width(HELP_WIDTH)
        .after_help(crate::config::settings::environment())
}

/// Every command a person runs, as its words after `fleetlock` (`config
/// check` is two), with its definition, in the order the help lists them.
#[cfg(test)]
fn commands(root: &clap::Command) -> Vec<(String, clap::Command)> {
    let mut found = Vec::new();
    // clap's own `help` (added when the definition is built) is not one.
    let shown = |s: &&clap::Command| !s.is_hide_set() && s.get_name() != "help";
    for sub in root.get_subcommands().filter(shown) {
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

/// One command's usage line as clap writes it, without its "Usage: ".
#[cfg(test)]
fn usage_line(path: &str, cmd: &clap::Command) -> String {
    let rendered = cmd
        .clone()
        .bin_name(format!("fleetlock {path}"))
        .render_usage()
        .to_string();
    rendered
        .strip_prefix("Usage: ")
        .unwrap_or(&rendered)
        .to_owned()
}

/// `fleetlock help`: clap's list of the commands, then the settings.
pub(crate) fn help_text() -> String {
    definition().render_long_help().to_string()
}

/// The commands as a Markdown table, for docs/operating.md: clap's usage
/// line, every option, and what the command does.
#[cfg(test)]
pub(crate) fn commands_table() -> String {
    let cell = |text: &str| text.replace('|', "\\|");
    let mut table = String::from("| command | options | what it does |\n|---|---|---|\n");
    let mut root = definition();
    root.build();
    for (path, cmd) in commands(&root) {
        let options: Vec<String> = cmd
            .get_arguments()
            .filter(|a| !a.is_hide_set())
            .filter_map(clap::Arg::get_long)
            .filter(|long| *long != "help")
            .map(|long| format!("`--{long}`"))
            .collect();
        let about = cmd.get_about().map(ToString::to_string).unwrap_or_default();
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            cell(&usage_line(&path, &cmd)),
            options.join(" "),
            cell(&about)
        ));
    }
    table.push_str(
        "| `fleetlock help [COMMAND]`, `fleetlock COMMAND --help`, `fleetlock --version` \
         |  | the whole help, or one command's |\n",
    );
    table
}

/// Why a time given on the command line was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TimeArgError {
    #[error("'{0}' is not a time like 2026-03-28T00:00:00Z")]
    NotATime(String),
    #[error("'{0}' is before 1970")]
    Before1970(String),
}

/// An RFC 3339 time given on the command line.
pub(crate) fn instant(text: &str) -> Result<Timestamp, TimeArgError> {
    let at: jiff::Timestamp = text
        .parse()
        .map_err(|_| TimeArgError::NotATime(text.to_owned()))?;
    u64::try_from(at.as_millisecond())
        .map(Timestamp)
        .map_err(|_| TimeArgError::Before1970(text.to_owned()))
}

/// A usage mistake: one line for a person, then the help to read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageMistake(String);

/// Parses the arguments after the program name: `None` asks for the whole
/// help. `Err` is one line for a person: a usage mistake.
pub(crate) fn parse(args: &[String]) -> Result<Option<Sub>, UsageMistake> {
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
            _ => Err(UsageMistake(usage_mistake(&err, args))),
        },
    }
}

/// The line after a usage mistake: the help of the command it was about, or
/// the whole help.
pub(crate) fn where_to_read(args: &[String]) -> String {
    let mut path = Vec::new();
    let mut cmd = definition();
    for word in args {
        match cmd.find_subcommand(word) {
            Some(sub) if !sub.is_hide_set() => {
                path.push(word.as_str());
                cmd = sub.clone();
            }
            _ => break,
        }
    }
    if path.is_empty() || cmd.has_subcommands() {
        "Run 'fleetlock help' for usage.".to_owned()
    } else {
        format!("Run 'fleetlock {} --help' for its usage.", path.join(" "))
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
    let command = match args.first().map(String::as_str) {
        Some("config") => "config check",
        Some(first) => first,
        None => "fleetlock",
    };
    match err.kind() {
        ErrorKind::InvalidSubcommand => {
            // A typo of a command is named (clap's closest), never run as
            // something else.
            // Under `config`, both words are named: 'config chek'.
            let parent = if command == "config check" {
                "config "
            } else {
                ""
            };
            let word = text(err, ContextKind::InvalidSubcommand).unwrap_or_default();
            let tip = closest(err, ContextKind::SuggestedSubcommand, parent);
            format!("unknown command '{parent}{word}'{tip}")
        }
        ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "config needs a command: 'fleetlock config check'".into()
        }
        ErrorKind::MissingRequiredArgument => missing(err, command),
        ErrorKind::ArgumentConflict => {
            let arg = text(err, ContextKind::InvalidArg).map(|a| option_name(&a));
            let prior = text(err, ContextKind::PriorArg).map(|a| option_name(&a));
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
            let arg = text(err, ContextKind::InvalidArg).unwrap_or_default();
            if arg.starts_with('-') {
                let tip = closest(err, ContextKind::SuggestedArg, "");
                format!("unknown option '{arg}'{tip}")
            } else {
                format!("unexpected argument '{arg}'")
            }
        }
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => invalid_value(err),
        _ => first_line(err),
    }
}

/// A required option left out, with what it is for where that helps.
fn missing(err: &clap::Error, command: &str) -> String {
    // "--group <G>" as the help writes it: "--group G".
    let missing: Vec<String> = strings(err, ContextKind::InvalidArg)
        .into_iter()
        .map(|arg| arg.replace(['<', '>'], ""))
        .collect();
    let first = missing.first().map(|m| option_name(m));
    // `requires`: an option given without the one it goes with.
    if matches!(command, "lock" | "unlock") && first.as_deref() == Some("--wait") {
        return "--timeout goes with --wait".into();
    }
    let hint = match first.as_deref() {
        Some("--reason") => ": it reaches the nodes' journals",
        Some("--groups") => " ('*' for all, or 'a,b')",
        Some("--group") if matches!(command, "pause" | "resume") => " (repeatable) or --all",
        _ => "",
    };
    format!("{command} needs {}{hint}", missing.join(" and "))
}

/// A value its option refuses, with the reason its parser gave.
fn invalid_value(err: &clap::Error) -> String {
    let arg = text(err, ContextKind::InvalidArg)
        .map(|a| option_name(&a).replace(['<', '>'], ""))
        .unwrap_or_default();
    let value = text(err, ContextKind::InvalidValue).unwrap_or_default();
    match std::error::Error::source(err) {
        // A reason that names its option already stands alone.
        Some(why) if why.to_string().starts_with(&arg) => why.to_string(),
        Some(why) => format!("{arg}: {why}"),
        None if value.is_empty() => format!("{arg} needs a value"),
        None => {
            let valid = text(err, ContextKind::ValidValue)
                .map_or(String::new(), |v| format!(" (one of: {v})"));
            format!("{arg}: '{value}' is not valid{valid}")
        }
    }
}

/// One piece of a clap error's context as text.
fn text(err: &clap::Error, kind: ContextKind) -> Option<String> {
    match err.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(list)) => Some(list.join(", ")),
        Some(ContextValue::StyledStr(s)) => Some(s.to_string()),
        _ => None,
    }
}

fn strings(err: &clap::Error, kind: ContextKind) -> Vec<String> {
    match err.get(kind) {
        Some(ContextValue::Strings(list)) => list.clone(),
        Some(ContextValue::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    }
}

/// ` (did you mean 'X'?)` with clap's closest suggestion (its last), after
/// `parent`'s words.
fn closest(err: &clap::Error, kind: ContextKind, parent: &str) -> String {
    strings(err, kind)
        .last()
        .map_or(String::new(), |s| format!(" (did you mean '{parent}{s}'?)"))
}

/// An option's name without its value: `--group` of `--group GROUP`.
fn option_name(arg: &str) -> String {
    arg.split_whitespace().next().unwrap_or(arg).to_owned()
}

/// clap's own sentence, without its "error: " and its usage lines.
fn first_line(err: &clap::Error) -> String {
    let rendered = err.render().to_string();
    let line = rendered.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_owned()
}

#[cfg(test)]
mod tests;
