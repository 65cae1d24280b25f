//! `config check --samconfig` and `--tfvars`: a deploy's inputs turned into
//! the environment the function would be given, so they are checked by the
//! very code that reads them at start, before anything is deployed.
//!
//! What a deploy leaves out takes the default of this version's template or
//! module, read from their text (embedded at build time), so the defaults
//! cannot drift from what `sam deploy` and `terraform apply` would use.

use std::collections::BTreeMap;

use serde_json::Value;

use super::root_module;
use crate::cli::usage::did_you_mean;

/// The template and the module of this version.
const TEMPLATE: &str = include_str!("../../../template.yaml");
const MODULE_VARIABLES: &str = include_str!("../../../infra/variables.tf");

/// Each SAM parameter the function's settings come from, and its variable
/// (`AllowAnonymous` becomes `FLEETLOCK_AUTH`, see [`from_samconfig`]).
const SAM_PARAMETERS: &[(&str, &str)] = &[
    ("Groups", "FLEETLOCK_GROUPS"),
    ("Settle", "FLEETLOCK_SETTLE"),
    ("Lease", "FLEETLOCK_LEASE"),
    ("Drain", "FLEETLOCK_DRAIN"),
    ("Return", "FLEETLOCK_RETURN"),
    ("MaxWildcardGroups", "FLEETLOCK_MAX_WILDCARD_GROUPS"),
    ("MaintenanceWindows", "FLEETLOCK_WINDOWS"),
    ("TimeZone", "FLEETLOCK_TIME_ZONE"),
    ("Clients", "FLEETLOCK_CLIENTS"),
    ("AlarmPauses", "FLEETLOCK_ALARM_PAUSES"),
];

/// Each module variable the function's settings come from, and its
/// variable (`allow_anonymous` becomes `FLEETLOCK_AUTH`).
const TF_VARIABLES: &[(&str, &str)] = &[
    ("groups", "FLEETLOCK_GROUPS"),
    ("settle", "FLEETLOCK_SETTLE"),
    ("lease", "FLEETLOCK_LEASE"),
    ("drain", "FLEETLOCK_DRAIN"),
    ("return_gate", "FLEETLOCK_RETURN"),
    ("max_wildcard_groups", "FLEETLOCK_MAX_WILDCARD_GROUPS"),
    ("maintenance_windows", "FLEETLOCK_WINDOWS"),
    ("time_zone", "FLEETLOCK_TIME_ZONE"),
    ("clients", "FLEETLOCK_CLIENTS"),
    ("alarm_pauses", "FLEETLOCK_ALARM_PAUSES"),
];

/// A deploy's settings as the function's environment, with the name each
/// variable has in the deploy's own words.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DeployInputs {
    pub vars: BTreeMap<String, String>,
    /// `FLEETLOCK_GROUPS` → `parameter Groups` or `variable groups`.
    pub names: BTreeMap<String, String>,
    /// Which inputs the deploy sets itself (the rest are defaults).
    pub given: Vec<String>,
    /// What the deploy itself would refuse, beyond the function's settings
    /// (a drain gate without slot events), each a sentence.
    pub refused: Vec<String>,
    /// A root module's inputs whose values only Terraform knows, with
    /// their text (`clients`, `var.fleetlock_clients`): not read, the
    /// module's defaults checked in their place (none for the credentials).
    pub unread: Vec<(String, String)>,
    /// The label of the root module's `module` block they were read from.
    pub module: Option<String>,
    /// Where the credential entries go, in the deploy file's words.
    pub clients_go: String,
}

impl DeployInputs {
    /// An error of the function's configuration ("FLEETLOCK_GROUPS: …"),
    /// worded with the input the deploy sets ("parameter Groups
    /// (FLEETLOCK_GROUPS): …").
    pub fn reword(&self, error: &str) -> String {
        if error.starts_with("FLEETLOCK_AUTH: 'required' but") {
            let name = |var: &'static str| self.names.get(var).map_or(var, String::as_str);
            return format!(
                "{} (FLEETLOCK_CLIENTS) is empty: the deploy is refused unless {} is true; \
                 make entries with 'fleetlock credential' and put them {}",
                name("FLEETLOCK_CLIENTS"),
                name("FLEETLOCK_AUTH"),
                self.clients_go
            );
        }
        for (var, name) in &self.names {
            if let Some(why) = error.strip_prefix(&format!("{var}: ")) {
                return format!("{name} ({var}): {why}");
            }
        }
        error.to_owned()
    }
}

/// The template's parameters and their defaults, from the text of its
/// top-level `Parameters:` section.
fn template_parameters(template: &str) -> BTreeMap<String, String> {
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
fn override_words(text: &str) -> Result<Vec<String>, String> {
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
                            None => return Err("ends inside a \"quoted\" value".into()),
                        },
                        Some(other) => word.push(other),
                        None => return Err("ends inside a \"quoted\" value".into()),
                    }
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(other) => word.push(other),
                        None => return Err("ends inside a 'quoted' value".into()),
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
pub fn from_samconfig(text: &str, config_env: &str, file: &str) -> Result<DeployInputs, String> {
    let parsed: toml::Table =
        toml::from_str(text).map_err(|e| format!("{file}: not TOML: {}", e.message()))?;
    let Some(environment) = parsed.get(config_env).and_then(toml::Value::as_table) else {
        let known: Vec<&str> = parsed
            .iter()
            .filter(|(_, v)| v.is_table())
            .map(|(k, _)| k.as_str())
            .collect();
        return Err(format!(
            "{file} has no config-env '{config_env}'{} (it has: {})",
            did_you_mean(config_env, known.iter().copied()),
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ));
    };
    let overrides = ["deploy", "global"].iter().find_map(|command| {
        environment
            .get(*command)?
            .get("parameters")?
            .get("parameter_overrides")
    });
    let pairs: Vec<String> = match overrides {
        None => Vec::new(),
        Some(toml::Value::String(text)) => {
            override_words(text).map_err(|why| format!("{file}: parameter_overrides {why}"))?
        }
        Some(toml::Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str().map(unquote_override).ok_or_else(|| {
                    format!("{file}: each item of parameter_overrides is a \"Key=Value\" string")
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(format!(
                "{file}: parameter_overrides is a string of Key=Value words or a list of them"
            ));
        }
    };
    let parameters = template_parameters(TEMPLATE);
    let mut values = parameters.clone();
    let mut given = Vec::new();
    for pair in pairs {
        let Some((key, value)) = pair.split_once('=') else {
            return Err(format!(
                "{file}: parameter_overrides has '{pair}', which is not Key=Value"
            ));
        };
        if !parameters.contains_key(key) {
            return Err(format!(
                "{file}: parameter_overrides sets '{key}', which the template has no parameter \
                 of{}; CloudFormation would refuse the deploy",
                did_you_mean(key, parameters.keys().map(String::as_str))
            ));
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
        inputs.vars.insert((*var).into(), value);
        inputs
            .names
            .insert((*var).into(), format!("parameter {parameter}"));
    }
    let events = values.get("SlotEvents").map(String::as_str) == Some("true");
    let set = |name: &str| values.get(name).is_some_and(|v| !v.trim().is_empty());
    // On a global table's replica the gates' events may come from the one
    // region whose stack reads the stream (its ExistingTableStreamArn).
    let replica = set("ExistingTableName");
    if replica && events && !set("ExistingTableStreamArn") {
        inputs.refused.push(
            "parameter SlotEvents=true with ExistingTableName needs ExistingTableStreamArn (the \
             template's rule SlotEventsOnAGlobalTableNeedTheStream refuses the deploy): this \
             region's stream of the global table, global-table.yaml's StreamArn output"
                .into(),
        );
    }
    let events = events || replica;
    if set("Drain") && !events {
        inputs.refused.push(
            "parameter Drain needs SlotEvents=true (the template's rule DrainNeedsSlotEvents \
             refuses the deploy): the Slot Drain Requested event is what tells a hook to drain \
             a node"
                .into(),
        );
    }
    if set("Return") && !events {
        inputs.refused.push(
            "parameter Return needs SlotEvents=true (the template's rule ReturnNeedsSlotEvents \
             refuses the deploy): the Slot Released event (returning) is what tells a hook to \
             bring a node back and confirm its return"
                .into(),
        );
    }
    let anonymous = values.get("AllowAnonymous").map(String::as_str) == Some("true");
    inputs.vars.insert(
        "FLEETLOCK_AUTH".into(),
        if anonymous { "disabled" } else { "required" }.into(),
    );
    inputs
        .names
        .insert("FLEETLOCK_AUTH".into(), "parameter AllowAnonymous".into());
    Ok(inputs)
}

/// One item of a list of overrides: `Key=Value` or `Key="Value"`.
fn unquote_override(item: &str) -> String {
    match item.split_once('=') {
        Some((key, value)) => format!("{key}={}", unquote(value)),
        None => item.to_owned(),
    }
}

/// The module's variables and their defaults (JSON, `null` where none),
/// from the text of `variables.tf`.
fn module_variables(variables_tf: &str) -> BTreeMap<String, Value> {
    let Ok(body) = hcl::parse(variables_tf) else {
        return BTreeMap::new();
    };
    body.blocks()
        .filter(|block| block.identifier() == "variable")
        .filter_map(|block| {
            let name = block.labels().first()?.as_str().to_owned();
            let default = block
                .body()
                .attributes()
                .find(|attribute| attribute.key() == "default")
                .and_then(|attribute| {
                    serde_json::to_value(hcl::Value::from(attribute.expr().clone())).ok()
                })
                .unwrap_or(Value::Null);
            Some((name, default))
        })
        .collect()
}

/// The settings of `terraform apply -var-file FILE` on the module: a
/// `.tfvars` (HCL) or `.tfvars.json` whose names are the module's inputs,
/// then the module's defaults. Names of other inputs (a root module's own)
/// are left alone, unless they look like a typo of the module's.
pub fn from_tfvars(text: &str, file: &str) -> Result<DeployInputs, String> {
    let (mut unread, mut module_label) = (Vec::new(), None);
    let given: serde_json::Map<String, Value> = if file.ends_with(".json") {
        serde_json::from_str(text).map_err(|e| format!("{file}: not JSON: {e}"))?
    } else {
        let body = hcl::parse(text).map_err(|e| format!("{file}: not HCL: {e}"))?;
        if let Some(module) = root_module::module_inputs(&body, file)? {
            unread = module.unread;
            module_label = Some(module.label);
            module.literal
        } else if let Some(block) = body.blocks().next() {
            return Err(format!(
                "{file}: a tfvars file holds only NAME = value lines, not blocks like '{}' \
                 (a root module's file is read by its module block)",
                block.identifier()
            ));
        } else {
            body.attributes()
                .map(|attribute| {
                    let value = serde_json::to_value(hcl::Value::from(attribute.expr().clone()))
                        .map_err(|e| format!("{file}: {}: {e}", attribute.key()))?;
                    Ok((attribute.key().to_owned(), value))
                })
                .collect::<Result<_, String>>()?
        }
    };
    let variables = module_variables(MODULE_VARIABLES);
    for name in given.keys().chain(unread.iter().map(|(name, _)| name)) {
        if !variables.contains_key(name) {
            let guess = did_you_mean(name, variables.keys().map(String::as_str));
            if !guess.is_empty() {
                return Err(format!(
                    "{file} sets '{name}', which the module has no variable of{guess}"
                ));
            }
        }
    }
    let value = |name: &str| {
        given
            .get(name)
            .or_else(|| variables.get(name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut inputs = DeployInputs {
        given: given
            .keys()
            .filter(|name| variables.contains_key(*name))
            .cloned()
            .collect(),
        module: module_label,
        clients_go: format!("in {file}'s clients = [\"ENTRY\", ...]"),
        ..DeployInputs::default()
    };
    let is_unread = |name: &str| unread.iter().any(|(unread, _)| unread == name);
    for (variable, var) in TF_VARIABLES {
        if *variable == "clients" && is_unread(variable) {
            // Only Terraform knows who may call: nothing to check here, and
            // no empty list to refuse in its place.
            continue;
        }
        let rendered = render_tf(variable, &value(variable))
            .map_err(|why| format!("{file}: variable {variable}: {why}"))?;
        inputs.vars.insert((*var).into(), rendered);
        inputs
            .names
            .insert((*var).into(), format!("variable {variable}"));
    }
    let gated = |name: &str| matches!(value(name), Value::Object(map) if !map.is_empty());
    let events = matches!(value("slot_events"), Value::Bool(true))
        || value("slot_events") == Value::String("true".into());
    // On a replica of a global table the gates' events come from the region
    // that made the table, and slot events run there only.
    let replica = is_unread("existing_table_name")
        || matches!(value("existing_table_name"), Value::String(name) if !name.is_empty());
    if replica && events {
        inputs.refused.push(
            "variable slot_events runs where the global table is made, not with \
             existing_table_name (the module's precondition refuses the plan): every replica's \
             stream carries every region's writes, so a second slot-events function would send \
             each change twice"
                .into(),
        );
    }
    let events = events || replica;
    if gated("drain") && !events {
        inputs.refused.push(
            "variable drain needs slot_events = true (the module's precondition refuses the \
             plan): the Slot Drain Requested event is what tells a hook to drain a node"
                .into(),
        );
    }
    if gated("return_gate") && !events {
        inputs.refused.push(
            "variable return_gate needs slot_events = true (the module's precondition refuses \
             the plan): the Slot Released event (returning) is what tells a hook to bring a \
             node back and confirm its return"
                .into(),
        );
    }
    let credentials_unread = is_unread("clients") || is_unread("allow_anonymous");
    inputs.unread = unread;
    if credentials_unread {
        return Ok(inputs);
    }
    let anonymous = match value("allow_anonymous") {
        Value::Bool(on) => on,
        Value::String(text) if text == "true" || text == "false" => text == "true",
        _ => return Err(format!("{file}: variable allow_anonymous: true or false")),
    };
    inputs.vars.insert(
        "FLEETLOCK_AUTH".into(),
        if anonymous { "disabled" } else { "required" }.into(),
    );
    inputs
        .names
        .insert("FLEETLOCK_AUTH".into(), "variable allow_anonymous".into());
    Ok(inputs)
}

/// A value as Terraform's string template gives it: a whole number without
/// a point, a string as it is.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(match number.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            _ => number.to_string(),
        }),
        Value::Bool(on) => Some(on.to_string()),
        _ => None,
    }
}

fn map_of<'a>(value: &'a Value, shape: &str) -> Result<&'a serde_json::Map<String, Value>, String> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(format!("must be a map, as {shape}")),
    }
}

fn list_of<'a>(value: &'a Value, shape: &str) -> Result<&'a Vec<Value>, String> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(format!("must be a list, as {shape}")),
    }
}

/// The module's rendering of each variable into the function's
/// environment (the locals of `main.tf` and `alarm_pauses.tf`): maps in
/// the order of their keys, as Terraform iterates them.
fn render_tf(variable: &str, value: &Value) -> Result<String, String> {
    let scalar_of = |value: &Value, what: &str| {
        scalar(value).ok_or_else(|| format!("{what} must be a number or a string"))
    };
    let sorted = |map: &serde_json::Map<String, Value>| {
        let mut entries: Vec<(String, Value)> =
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    };
    Ok(match variable {
        "groups" | "settle" | "lease" | "drain" | "return_gate" => {
            let shape = match variable {
                "groups" => "{ default = 1, workers = 3 }",
                "settle" => "{ workers = \"10m\" }",
                "drain" => "{ workers = \"15m\" }",
                "return_gate" => "{ workers = \"20m\" }",
                _ => "{ workers = \"6h\" }",
            };
            let map = map_of(value, shape)?;
            let entries: Result<Vec<String>, String> = sorted(map)
                .iter()
                .map(|(group, v)| Ok(format!("{group}={}", scalar_of(v, group)?)))
                .collect();
            entries?.join(",")
        }
        "maintenance_windows" => {
            let shape =
                "{ db = [{ days = [\"Sat\"], start_time = \"22:00\", length_minutes = 120 }] }";
            let mut out = Vec::new();
            for (group, windows) in sorted(map_of(value, shape)?) {
                for window in list_of(&windows, shape)? {
                    let field = |name: &str| {
                        window
                            .get(name)
                            .ok_or_else(|| format!("a window of '{group}' has no {name}"))
                    };
                    let days: Result<Vec<String>, String> = list_of(field("days")?, shape)?
                        .iter()
                        .map(|day| scalar_of(day, "a day"))
                        .collect();
                    out.push(format!(
                        "{group}: days={} start_time={} length_minutes={}",
                        days?.join(","),
                        scalar_of(field("start_time")?, "start_time")?,
                        scalar_of(field("length_minutes")?, "length_minutes")?
                    ));
                }
            }
            out.join(";")
        }
        "clients" => {
            let shape = "[\"NAME:GROUPS:SALT:SHA256\"]";
            let entries: Result<Vec<String>, String> = list_of(value, shape)?
                .iter()
                .map(|entry| scalar_of(entry, "an entry"))
                .collect();
            entries?.join(" ")
        }
        "alarm_pauses" => {
            let shape = "{ \"api-5xx\" = [\"*\"] }";
            let mut out = Vec::new();
            for (alarm, groups) in sorted(map_of(value, shape)?) {
                let groups: Result<Vec<String>, String> = list_of(&groups, shape)?
                    .iter()
                    .map(|group| scalar_of(group, "a group"))
                    .collect();
                out.push(format!("{alarm}={}", groups?.join(",")));
            }
            out.join(";")
        }
        _ => scalar_of(value, "it")?,
    })
}

#[cfg(test)]
mod tests;
