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
mod tests {
    use super::*;

    #[test]
    fn the_template_defaults_are_read_from_its_parameters() {
        let parameters = template_parameters(TEMPLATE);
        assert_eq!(parameters["Groups"], "default=1");
        assert_eq!(parameters["TimeZone"], "UTC");
        assert_eq!(parameters["Settle"], "");
        assert_eq!(parameters["AllowAnonymous"], "false");
        // Every parameter this check maps is one the template has, and the
        // template hands it to the function under that variable.
        for (parameter, var) in SAM_PARAMETERS {
            assert!(parameters.contains_key(*parameter), "{parameter}");
            assert!(
                TEMPLATE.contains(&format!("{var}: !Ref {parameter}")),
                "the template does not set {var} from {parameter}"
            );
        }
        assert!(TEMPLATE.contains("FLEETLOCK_AUTH: !If [AnonymousAllowed, disabled, required]"));
        assert!(TEMPLATE.contains("AnonymousAllowed: !Equals [!Ref AllowAnonymous, \"true\"]"));
    }

    #[test]
    fn the_module_defaults_are_read_from_its_variables() {
        let variables = module_variables(MODULE_VARIABLES);
        assert_eq!(variables["groups"], serde_json::json!({"default": 1}));
        assert_eq!(variables["time_zone"], "UTC");
        assert_eq!(variables["allow_anonymous"], false);
        for (variable, _) in TF_VARIABLES {
            assert!(variables.contains_key(*variable), "{variable}");
        }
    }

    #[test]
    fn a_replica_region_gates_without_slot_events_and_refuses_its_own() {
        let tf = "groups = { workers = 2 }\ndrain = { workers = \"15m\" }\n";
        let replica = format!("{tf}existing_table_name = \"fleetlock-locks\"\n");
        let gated = from_tfvars(&replica, "a.tfvars").unwrap();
        assert!(gated.refused.is_empty(), "{:?}", gated.refused);
        let doubled = from_tfvars(&format!("{replica}slot_events = true\n"), "a.tfvars").unwrap();
        assert_eq!(doubled.refused.len(), 1, "{:?}", doubled.refused);
        assert!(doubled.refused[0].starts_with("variable slot_events runs where the global table"));
        let alone = from_tfvars(tf, "a.tfvars").unwrap();
        assert!(alone.refused[0].starts_with("variable drain needs slot_events = true"));
    }

    #[test]
    fn a_sam_stack_on_a_global_table_gates_without_slot_events_and_needs_the_stream_for_them() {
        let parameters = |extra: &str| {
            format!(
                "version = 0.1\n[default.deploy.parameters]\nparameter_overrides = [\n  \
                 'Groups=\"default=1\"',\n  'Drain=\"default=15m\"',\n  \
                 'ExistingTableName=\"fleetlock-locks\"',\n{extra}]\n"
            )
        };
        let gated = from_samconfig(&parameters(""), "default", "samconfig.toml").unwrap();
        assert!(gated.refused.is_empty(), "{:?}", gated.refused);
        let streamless = from_samconfig(
            &parameters("  'SlotEvents=\"true\"',\n"),
            "default",
            "samconfig.toml",
        )
        .unwrap();
        assert_eq!(streamless.refused.len(), 1, "{:?}", streamless.refused);
        assert!(streamless.refused[0].contains("needs ExistingTableStreamArn"));
    }

    #[test]
    fn a_drain_gate_without_slot_events_is_what_the_deploy_refuses() {
        let without = from_tfvars("drain = { workers = \"15m\" }\n", "a.tfvars").unwrap();
        assert_eq!(without.vars["FLEETLOCK_DRAIN"], "workers=15m");
        assert!(
            without.refused[0].starts_with("variable drain needs slot_events = true"),
            "{:?}",
            without.refused
        );
        let with = from_tfvars(
            "drain = { workers = \"15m\" }\nslot_events = true\n",
            "a.tfvars",
        )
        .unwrap();
        assert!(with.refused.is_empty(), "{:?}", with.refused);
        let none = from_tfvars("groups = { workers = 1 }\n", "a.tfvars").unwrap();
        assert!(none.refused.is_empty());
        let sam = "[default.deploy.parameters]\nparameter_overrides = [\"Drain=workers=15m\"]\n";
        let refused = from_samconfig(sam, "default", "samconfig.toml")
            .unwrap()
            .refused;
        assert!(
            refused[0].starts_with("parameter Drain needs SlotEvents=true"),
            "{refused:?}"
        );
    }

    #[test]
    fn a_return_gate_without_slot_events_is_what_the_deploy_refuses() {
        let tf = "groups = { workers = 2 }\nreturn_gate = { workers = \"20m\" }\n";
        let without = from_tfvars(tf, "a.tfvars").unwrap();
        assert_eq!(without.vars["FLEETLOCK_RETURN"], "workers=20m");
        assert!(
            without.refused[0].starts_with("variable return_gate needs slot_events = true"),
            "{:?}",
            without.refused
        );
        let with = from_tfvars(&format!("{tf}slot_events = true\n"), "a.tfvars").unwrap();
        assert!(with.refused.is_empty(), "{:?}", with.refused);
        let sam = "[default.deploy.parameters]\nparameter_overrides = [\"Return=workers=20m\"]\n";
        let inputs = from_samconfig(sam, "default", "samconfig.toml").unwrap();
        assert_eq!(inputs.vars["FLEETLOCK_RETURN"], "workers=20m");
        assert!(
            inputs.refused[0].starts_with("parameter Return needs SlotEvents=true"),
            "{:?}",
            inputs.refused
        );
    }

    #[test]
    fn overrides_split_as_sam_splits_them() {
        assert_eq!(
            override_words(r#"Groups="default=1,workers=3" Architecture=x86_64 Clients='a b'"#)
                .unwrap(),
            [
                "Groups=default=1,workers=3",
                "Architecture=x86_64",
                "Clients=a b"
            ]
        );
        assert_eq!(
            override_words(r#"Settle="db=\"1m\"""#).unwrap(),
            ["Settle=db=\"1m\""]
        );
        assert!(override_words(r#"Groups="default=1"#).is_err());
    }

    #[test]
    fn a_samconfig_sets_the_functions_variables_over_the_defaults() {
        let text = r#"
[default.deploy.parameters]
parameter_overrides = "Groups=\"default=1,workers=3\" Architecture=x86_64"
[prod.deploy.parameters]
parameter_overrides = ["Groups=\"db=1\"", "AllowAnonymous=true"]
"#;
        let inputs = from_samconfig(text, "default", "samconfig.toml").unwrap();
        assert_eq!(inputs.vars["FLEETLOCK_GROUPS"], "default=1,workers=3");
        assert_eq!(inputs.vars["FLEETLOCK_TIME_ZONE"], "UTC");
        assert_eq!(inputs.vars["FLEETLOCK_AUTH"], "required");
        assert_eq!(inputs.given, ["Groups", "Architecture"]);
        let prod = from_samconfig(text, "prod", "samconfig.toml").unwrap();
        assert_eq!(prod.vars["FLEETLOCK_GROUPS"], "db=1");
        assert_eq!(prod.vars["FLEETLOCK_AUTH"], "disabled");
        assert_eq!(
            prod.reword("FLEETLOCK_GROUPS: 'x' is wrong"),
            "parameter Groups (FLEETLOCK_GROUPS): 'x' is wrong"
        );
    }

    #[test]
    fn a_samconfig_typo_is_refused_with_the_name_meant() {
        let typo = from_samconfig(
            "[default.deploy.parameters]\nparameter_overrides = \"Group=db=1\"\n",
            "default",
            "samconfig.toml",
        )
        .unwrap_err();
        assert!(typo.contains("sets 'Group'"), "{typo}");
        assert!(typo.contains("did you mean 'Groups'?"), "{typo}");
        let env = from_samconfig("[default.deploy.parameters]\n", "prdo", "s.toml").unwrap_err();
        assert_eq!(
            env, "s.toml has no config-env 'prdo' (it has: default)",
            "no guess that far off"
        );
        let near = from_samconfig("[prod.deploy.parameters]\n", "prdo", "s.toml").unwrap_err();
        assert!(near.contains("(did you mean 'prod'?)"), "{near}");
        assert!(from_samconfig("not = [toml", "default", "s.toml").is_err());
    }

    #[test]
    fn a_tfvars_file_is_rendered_as_the_module_renders_it() {
        let text = r#"
groups = { workers = 3, default = 1, "*" = "2" }
settle = { workers = "10m" }
maintenance_windows = {
  db = [{ days = ["Sat", "Sun"], start_time = "22:00", length_minutes = 120 }]
}
clients      = ["a:default:00:11", "b:db:22:33"]
alarm_pauses = { "db-latency" = ["db"], "api-5xx" = ["*"] }
region       = "eu-west-1"
"#;
        let inputs = from_tfvars(text, "prod.tfvars").unwrap();
        assert_eq!(inputs.vars["FLEETLOCK_GROUPS"], "*=2,default=1,workers=3");
        assert_eq!(inputs.vars["FLEETLOCK_SETTLE"], "workers=10m");
        assert_eq!(
            inputs.vars["FLEETLOCK_WINDOWS"],
            "db: days=Sat,Sun start_time=22:00 length_minutes=120"
        );
        assert_eq!(
            inputs.vars["FLEETLOCK_CLIENTS"],
            "a:default:00:11 b:db:22:33"
        );
        assert_eq!(
            inputs.vars["FLEETLOCK_ALARM_PAUSES"],
            "api-5xx=*;db-latency=db"
        );
        assert_eq!(inputs.vars["FLEETLOCK_MAX_WILDCARD_GROUPS"], "100");
        assert_eq!(inputs.vars["FLEETLOCK_AUTH"], "required");
        // A root module's own variable is left alone.
        assert!(!inputs.given.contains(&"region".to_owned()));
        let json = from_tfvars(
            r#"{"groups": {"db": 2}, "allow_anonymous": true}"#,
            "x.tfvars.json",
        )
        .unwrap();
        assert_eq!(json.vars["FLEETLOCK_GROUPS"], "db=2");
        assert_eq!(json.vars["FLEETLOCK_AUTH"], "disabled");
    }

    #[test]
    fn a_tfvars_typo_or_wrong_shape_is_refused() {
        let typo = from_tfvars("grups = { db = 1 }\n", "p.tfvars").unwrap_err();
        assert_eq!(
            typo,
            "p.tfvars sets 'grups', which the module has no variable of (did you mean 'groups'?)"
        );
        let shape = from_tfvars("groups = [\"db\"]\n", "p.tfvars").unwrap_err();
        assert!(shape.contains("variable groups: must be a map"), "{shape}");
        assert!(from_tfvars("provider \"aws\" {}\n", "p.tfvars").is_err());
        assert!(from_tfvars("groups = {", "p.tfvars").is_err());
    }

    /// The README's own `module` block is what `config check --tfvars` reads:
    /// its groups literally, its credentials named as Terraform's to read.
    #[test]
    fn the_readmes_module_block_is_checked_as_written() {
        let readme = include_str!("../../../README.md");
        let start = readme.find("```hcl\n").expect("the README's module block") + 8;
        let block = &readme[start..start + readme[start..].find("```").unwrap()];
        assert!(block.contains("module \"fleetlock\""), "{block}");
        let inputs = from_tfvars(block, "main.tf").unwrap();
        assert_eq!(inputs.module.as_deref(), Some("fleetlock"));
        assert_eq!(
            inputs.vars["FLEETLOCK_GROUPS"],
            "default=1,fleetlock-check=2,workers=3"
        );
        assert!(!inputs.vars.contains_key("FLEETLOCK_CLIENTS"));
        assert!(
            inputs
                .unread
                .contains(&("clients".into(), "var.fleetlock_clients".into())),
            "{:?}",
            inputs.unread
        );
        let var = |name: &str| inputs.vars.get(name).cloned();
        crate::config::Config::checked(var).unwrap();
    }

    /// The settings each example of the module deploys are valid: the
    /// literal inputs of its `module` block, with a stand-in credential for
    /// its `var.clients`.
    #[test]
    fn every_terraform_examples_settings_start() {
        let examples = [
            include_str!("../../../infra/examples/basic/main.tf"),
            include_str!("../../../infra/examples/complete/main.tf"),
            include_str!("../../../infra/examples/function-url/main.tf"),
            include_str!("../../../infra/examples/private/main.tf"),
            include_str!("../../../infra/examples/three-regions/main.tf"),
        ];
        let listed = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/infra/examples"))
            .unwrap()
            .count();
        assert_eq!(listed, examples.len(), "list every example above");
        for example in examples {
            let body = hcl::parse(example).unwrap();
            let module = body
                .blocks()
                .find(|block| block.identifier() == "module")
                .expect("a module block");
            let mut inputs = serde_json::Map::new();
            for attribute in module.body().attributes() {
                let known = TF_VARIABLES
                    .iter()
                    .any(|(name, _)| *name == attribute.key());
                // An expression (the three regions' shared locals) is left
                // to the example's plan in tests/iac, which evaluates it.
                let literal = !matches!(attribute.expr(), hcl::Expression::Traversal(_));
                if known && literal && attribute.key() != "clients" {
                    let value = serde_json::to_value(hcl::Value::from(attribute.expr().clone()));
                    inputs.insert(attribute.key().to_owned(), value.unwrap());
                }
            }
            inputs.insert(
                "clients".into(),
                serde_json::json!([format!(
                    "fleet:*:00112233445566778899aabbccddeeff:{}",
                    "0".repeat(64)
                )]),
            );
            let text = Value::Object(inputs).to_string();
            let deployed = from_tfvars(&text, "example.tfvars.json").unwrap();
            let var = |name: &str| deployed.vars.get(name).cloned();
            crate::config::Config::checked(var).unwrap_or_else(|e| panic!("{e:?}: {text}"));
            crate::config::alarm_gates(var).unwrap();
        }
    }

    /// Every samconfig.toml the docs show (a ```toml block with
    /// `parameter_overrides`), and the repository's own, names parameters
    /// the template has and gives settings that start; its `Clients`, a
    /// placeholder there, is left out. No doc deploys with
    /// `--parameter-overrides`, which would replace samconfig.toml's list.
    #[test]
    fn every_documented_samconfig_is_valid_and_no_doc_overrides_it() {
        let docs = crate::config::docs_text();
        let mut samconfigs = vec![include_str!("../../../samconfig.toml").to_owned()];
        for block in docs.split("```toml\n").skip(1) {
            let block = block.split("```").next().unwrap();
            if block.contains("parameter_overrides") {
                samconfigs.push(if block.lines().any(|l| l.starts_with("[")) {
                    block.to_owned()
                } else {
                    format!("[default.deploy.parameters]\n{block}")
                });
            }
        }
        assert!(samconfigs.len() >= 2, "no samconfig in the docs");
        // Every config-env of each (a global table's regions have one each).
        let environments = samconfigs.iter().flat_map(|text| {
            let parsed: toml::Table =
                toml::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
            let names: Vec<String> = parsed
                .iter()
                .filter(|(_, env)| env.get("deploy").is_some())
                .map(|(name, _)| name.clone())
                .collect();
            names.into_iter().map(move |name| (text, name))
        });
        let mut checked = 0;
        for (text, environment) in environments {
            checked += 1;
            let inputs = from_samconfig(text, &environment, "doc.toml")
                .unwrap_or_else(|e| panic!("{e}: {text}"));
            assert!(inputs.given.contains(&"Groups".to_owned()), "{text}");
            let var = |name: &str| {
                (!matches!(name, "FLEETLOCK_CLIENTS" | "FLEETLOCK_AUTH"))
                    .then(|| inputs.vars.get(name).cloned())
                    .flatten()
            };
            crate::config::Config::checked(var).unwrap_or_else(|e| panic!("{e:?}: {text}"));
            crate::config::alarm_gates(var).unwrap();
            assert!(
                inputs.refused.is_empty(),
                "{environment}: {:?}",
                inputs.refused
            );
        }
        assert!(
            checked > samconfigs.len(),
            "the regions' config-envs were not read"
        );
        for (at, _) in docs.match_indices("sam deploy --parameter-overrides") {
            // Only where the docs say what such a deploy keeps and drops.
            let after: String = docs[at..].chars().take(120).collect();
            assert!(
                after.contains("has to repeat every"),
                "a doc deploys with --parameter-overrides: {after}"
            );
        }
    }
}
