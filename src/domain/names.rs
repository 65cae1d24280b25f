//! The closest known name to a mistyped one, for messages that refuse it:
//! a group a setting names but `FLEETLOCK_GROUPS` does not configure, a
//! command, an input; what a name not served most likely meant ([`Meant`]);
//! and how a zone group's name reads. Pure, so the function and the CLI say
//! it alike, and a leaf: the one error type words its refusals from here
//! without reaching back into the modules that return it.

use std::fmt;

/// Why a setting (a gate's value per group, a window, an alarm's pause) may
/// not name a group: the words a person reads after the variable's name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unnameable {
    /// One of the zones of a split group: a setting names the split group.
    #[error(
        "group '{group}' is {zone} (FLEETLOCK_ZONES): a setting names '{parent}' itself and \
         holds for every zone of it"
    )]
    ZoneOfSplit {
        group: String,
        zone: String,
        parent: String,
    },
    /// A name that means no group here, in the meaning's own words.
    #[error("{0}")]
    Invalid(String),
    /// Not configured, with the configured group it most likely means.
    #[error("{0}")]
    NotConfigured(String),
}

/// What a configured group most likely meant by a name this server does
/// not serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Meant {
    /// The configured name, differing only in case (`Workers` for
    /// `workers`, `Workers.us-east-1a` for a zone of a split `workers`).
    Case(String),
    /// A zone of a group split by zone written with `-` for the dot
    /// (`workers-us-east-1a`): the name its nodes ask with.
    Separator(String),
    /// A name under a configured group that is not split by zone
    /// (`db.us-east-1a` beside `db`, no `FLEETLOCK_ZONES=db`).
    Unsplit { parent: String },
    /// The closest configured name (or zone group), within two edits.
    Closest(String),
}

impl fmt::Display for Meant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Meant::Case(name) | Meant::Separator(name) | Meant::Closest(name) => f.write_str(name),
            Meant::Unsplit { parent } => f.write_str(parent),
        }
    }
}

/// The zone a zone group names, as a person reads it: `us-east-1a`, or
/// "no zone" for the parent's own name.
pub(crate) fn zone_phrase(zone_group: &str) -> String {
    match zone_group.rsplit_once('.') {
        Some((_, zone)) => format!("zone '{zone}'"),
        None => "no zone (the group's own name)".to_owned(),
    }
}

/// " (did you mean 'x'?)" for the first of `known` closest to `word`, if
/// it is within two edits and not `word` itself; else nothing.
pub(crate) fn did_you_mean<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, known).map_or(String::new(), |known| format!(" (did you mean '{known}'?)"))
}

/// The first of `known` closest to `word`, if it is within two edits and
/// not `word` itself.
pub(crate) fn closest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    known
        .into_iter()
        .filter(|known| *known != word)
        .map(|known| (edit_distance(word, known), known))
        .filter(|(distance, _)| *distance <= 2)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// Levenshtein distance: how many single-character edits turn `a` into `b`.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
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

/// Whether `a` and `b` differ by one typo: a character added, dropped or
/// changed, two characters swapped, or only in case. Such a pair in two
/// settings that must agree is a mistake, not two names. infra/settings.tf
/// applies the same rule at plan time (Terraform has no edit distance).
pub(crate) fn one_typo_apart(a: &str, b: &str) -> bool {
    if a == b {
        return false;
    }
    if a.eq_ignore_ascii_case(b) {
        return true;
    }
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    match long.len() - short.len() {
        // One added or dropped: the rest lines up one further on.
        1 => {
            let head = short
                .iter()
                .zip(long.iter())
                .take_while(|(x, y)| x == y)
                .count();
            short[head..] == long[head + 1..]
        }
        // One changed, or two swapped.
        0 => {
            let differ: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
            match differ[..] {
                [_] => true,
                [i, j] => a[i] == b[j] && a[j] == b[i],
                _ => false,
            }
        }
        _ => false,
    }
}

/// `text` as one shell word: as it is when plain, else in single quotes.
pub(crate) fn shell_word(text: &str) -> String {
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '@'));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_quoted_only_when_a_shell_needs_it() {
        assert_eq!(shell_word("node-1.example:a@b"), "node-1.example:a@b");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
    }

    #[test]
    fn a_typo_within_two_edits_names_the_closest_and_nothing_else_guesses() {
        let known = ["default", "workers", "db"];
        assert_eq!(did_you_mean("wrokers", known), " (did you mean 'workers'?)");
        assert_eq!(did_you_mean("dbb", known), " (did you mean 'db'?)");
        assert_eq!(did_you_mean("frontend", known), "");
        assert_eq!(did_you_mean("workers", known), "", "itself is no guess");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn one_typo_is_one_edit_a_swap_or_case_and_nothing_further() {
        for (a, b) in [
            ("workers", "wrokers"),
            ("workers", "worker"),
            ("workers", "workerss"),
            ("workers", "wOrkers"),
            ("workers", "Workers"),
            ("db", "dc"),
            ("fleetlock-check", "fleetlock_check"),
            ("workers", "wsrkero"),
        ] {
            assert!(one_typo_apart(a, b), "{a} {b}");
            assert!(one_typo_apart(b, a), "{b} {a}");
        }
        for (a, b) in [
            ("workers", "workers"),
            ("workers", "wrokesr"),
            ("db", "web"),
            ("default", "workers"),
            ("a", "abc"),
            ("ab", "ba-"),
        ] {
            assert!(!one_typo_apart(a, b), "{a} {b}");
        }
    }
}
