//! `config check --samconfig`: a samconfig.toml's parameter overrides over
//! the template's defaults.

use super::{DeployError, DeployInputs, QuoteError, SAM_PARAMETERS, TEMPLATE};
use crate::domain::names::did_you_mean;
use std::collections::BTreeMap;

/// The template's parameters and their defaults, from the text of its
/// top-level `Parameters:` section.
pub(super) fn template_parameters(template: &str) -> BTreeMap<String, String> {
    let mut parameters = BTreeMap::new();
    let mut inside = false;
    let mut current: Option<String> = None;
    for line in template.lines() {
        if !line.starts_with(' ') && !line.starts_with('#') && !line.is_empty() {
            inside = line == "Parameters:";
            current = None;
            continue;
        }
        if !inside {
            continue;
        }
        if let Some(name) = line
            .strip_prefix("  ")
            .and_then(|rest| rest.strip_suffix(':'))
            .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric()))
        {
            parameters.insert(name.to_owned(), String::new());
            current = Some(name.to_owned());
        } else if let (Some(name), Some(default)) = (&current, line.strip_prefix("    Default: ")) {
            parameters.insert(name.clone(), unquote(default.trim()));
        }
    }
    parameters
}

fn unquote(text: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = text
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner.to_owned();
        }
    }
    text.to_owned()
}

/// `Key=Value Key2="a value"` as `sam deploy` reads `parameter_overrides`:
/// words split on blanks, with double or single quotes and backslash
/// escapes inside double quotes.
pub(super) fn override_words(text: &str) -> Result<Vec<String>, QuoteError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(escaped) => word.push(escaped),
                            None => return Err(QuoteError::Double),
                        },
                        Some(other) => word.push(other),
                        None => return Err(QuoteError::Double),
                    }
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(other) => word.push(other),
                        None => return Err(QuoteError::Single),
                    }
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The settings of `sam deploy --config-env ENV` from a samconfig.toml:
/// `parameter_overrides` of `[ENV.deploy.parameters]`, else of
/// `[ENV.global.parameters]`, then the template's defaults.
pub(crate) fn from_samconfig(
    text: &str,
    config_env: &str,
    file: &str,
) -> Result<DeployInputs, DeployError> {
    let pairs = override_pairs(text, config_env, file)?;
    let parameters = template_parameters(TEMPLATE);
    let mut values = parameters.clone();
    let mut given = Vec::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(DeployError::NotKeyValue {
                file: file.to_owned(),
                pair,
            });
        };
        if !parameters.contains_key(key) {
            return Err(DeployError::NoSuchParameter {
                file: file.to_owned(),
                key: key.to_owned(),
                guess: did_you_mean(key, parameters.keys().map(String::as_str)),
            });
        }
        values.insert(key.to_owned(), value.to_owned());
        given.push(key.to_owned());
    }
    let mut inputs = DeployInputs {
        given,
        clients_go: format!(
            "in {file}'s parameter_overrides of [{config_env}.deploy.parameters], \
             as \"Clients=ENTRY ENTRY\""
        ),
        ..DeployInputs::default()
    };
    for (parameter, var) in SAM_PARAMETERS {
        let value = values.get(*parameter).cloned().unwrap_or_default();
        inputs.set(var, value, format!("parameter {parameter}"));
    }
    inputs.refused = template_refusals(&values);
    let anonymous = values.get("AllowAnonymous").map(String::as_str) == Some("true");
    inputs.set_auth(anonymous, "parameter AllowAnonymous");
    Ok(inputs)
}

/// The `Key=Value` words of `parameter_overrides` in `[ENV.deploy.parameters]`,
/// else in `[ENV.global.parameters]`, as `sam deploy --config-env ENV` reads them.
fn override_pairs(text: &str, config_env: &str, file: &str) -> Result<Vec<String>, DeployError> {
    let parsed: toml::Table = toml::from_str(text).map_err(|e| DeployError::NotToml {
        file: file.to_owned(),
        why: e.message().to_owned(),
    })?;
    let Some(environment) = parsed.get(config_env).and_then(toml::Value::as_table) else {
        let known: Vec<&str> = parsed
            .iter()
            .filter(|(_, v)| v.is_table())
            .map(|(k, _)| k.as_str())
            .collect();
        return Err(DeployError::NoConfigEnv {
            file: file.to_owned(),
            config_env: config_env.to_owned(),
            guess: did_you_mean(config_env, known.iter().copied()),
            known: if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            },
        });
    };
    let overrides = ["deploy", "global"].iter().find_map(|command| {
        environment
            .get(*command)?
            .get("parameters")?
            .get("parameter_overrides")
    });
    match overrides {
        None => Ok(Vec::new()),
        Some(toml::Value::String(text)) => {
            override_words(text).map_err(|why| DeployError::Overrides {
                file: file.to_owned(),
                why,
            })
        }
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .map(unquote_override)
                    .ok_or_else(|| DeployError::OverrideItem {
                        file: file.to_owned(),
                    })
            })
            .collect(),
        Some(_) => Err(DeployError::OverridesShape {
            file: file.to_owned(),
        }),
    }
}

/// What the template's rules refuse beyond the function's settings: slot
/// events on a replica without its stream, a stream without them, a gate
/// without slot events (tests/iac holds these to the template's rules).
fn template_refusals(values: &BTreeMap<String, String>) -> Vec<String> {
    let mut refused = Vec::new();
    let events = values.get("SlotEvents").map(String::as_str) == Some("true");
    let set = |name: &str| values.get(name).is_some_and(|v| !v.trim().is_empty());
    // On a global table's replica the gates' events may come from the one
    // region whose stack reads the stream (its ExistingTableStreamArn).
    let replica = set("ExistingTableName");
    if replica && events && !set("ExistingTableStreamArn") {
        refused.push(
            "parameter SlotEvents=true with ExistingTableName needs ExistingTableStreamArn (the \
             template's rule SlotEventsOnAGlobalTableNeedTheStream refuses the deploy): this \
             region's stream of the global table, global-table.yaml's StreamArn output"
                .into(),
        );
    }
    if set("ExistingTableStreamArn") && !(replica && events) {
        refused.push(
            "parameter ExistingTableStreamArn is read only by slot events on a global table \
             (the template's rule ExistingTableStreamNeedsSlotEvents refuses the deploy): set \
             SlotEvents=true and ExistingTableName, or leave it empty"
                .into(),
        );
    }
    let events = events || replica;
    if set("Drain") && !events {
        refused.push(
            "parameter Drain needs SlotEvents=true (the template's rule DrainNeedsSlotEvents \
             refuses the deploy): the Slot Drain Requested event is what tells a hook to drain \
             a node"
                .into(),
        );
    }
    if set("Return") && !events {
        refused.push(
            "parameter Return needs SlotEvents=true (the template's rule ReturnNeedsSlotEvents \
             refuses the deploy): the Slot Released event (returning) is what tells a hook to \
             bring a node back and confirm its return"
                .into(),
        );
    }
    refused
}

/// One item of a list of overrides: `Key=Value` or `Key="Value"`.
fn unquote_override(item: &str) -> String {
    match item.split_once('=') {
        Some((key, value)) => format!("{key}={}", unquote(value)),
        None => item.to_owned(),
    }
}
