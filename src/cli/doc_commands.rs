//! Every `cargo run -- ...` the README and docs/ show a person resolves to a
//! command of this program, as written: read from the pages themselves, so a
//! renamed flag or a second binary without `default-run` fails here first.

use std::path::Path;

use super::parse;

/// The pages a new user reads the commands from.
const PAGES: &[&str] = &[
    "README.md",
    "infra/README.md",
    "docs/configuration.md",
    "docs/costs-and-sizing.md",
    "docs/deploy.md",
    "docs/design.md",
    "docs/development.md",
    "docs/events-and-alarms.md",
    "docs/operating.md",
    "docs/security.md",
];

/// The arguments after `cargo run --` on each line of a shell block that
/// runs it (variable assignments before it allowed), comments cut off.
fn shown_commands(page: &str) -> Vec<(usize, Vec<String>)> {
    let mut in_block = false;
    let mut found = Vec::new();
    for (number, line) in page.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if !in_block {
            continue;
        }
        let Some(start) = trimmed.find("cargo run -- ") else {
            continue;
        };
        let before = &trimmed[..start];
        if !before.split_whitespace().all(|word| word.contains('=')) {
            continue;
        }
        let rest = &trimmed[start + "cargo run -- ".len()..];
        let rest = rest.split(" #").next().unwrap_or(rest);
        found.push((number + 1, shell_words(rest)));
    }
    found
}

/// Words as a shell splits them, for the quoting the docs use.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

#[test]
fn every_cargo_run_in_the_docs_is_a_command_line_this_program_takes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seen = 0;
    let mut refused = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        for (line, args) in shown_commands(&text) {
            seen += 1;
            if let Err(why) = parse(&args) {
                refused.push(format!("{page}:{line}: {}: {why}", args.join(" ")));
            }
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n"));
    // README 9, deploy.md 4, operating.md 2 today: a reader that finds
    // none proves nothing.
    assert!(seen >= 12, "only {seen} `cargo run --` lines found");
}

#[test]
fn the_reader_finds_a_command_and_its_quoted_words_and_skips_prose() {
    let page = "Run `cargo run -- serve` first.\n```sh\n\
        FLEETLOCK_GROUPS='a=1,b=2' cargo run -- serve   # local\n\
        echo cargo run -- status\n```\n";
    assert_eq!(
        shown_commands(page),
        vec![(3, vec!["serve".to_owned()])],
        "prose and a command that only mentions cargo run are not read"
    );
    assert_eq!(
        shell_words(r#"config check --tfvars "my file.tfvars" -x ''"#),
        ["config", "check", "--tfvars", "my file.tfvars", "-x", ""]
    );
    // A stand-in parser that refuses nothing would pass the first test: a
    // mistyped flag must be refused by the real one.
    assert!(parse(&shell_words("config check --samconfg samconfig.toml")).is_err());
}
