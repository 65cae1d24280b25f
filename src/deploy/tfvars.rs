//! `config check --tfvars`: a tfvars file's variables over the module's
//! defaults.

use std::collections::BTreeMap;

use serde_json::Value;

use super::root_module;
use super::root_module::ModuleInputs;
use super::{DeployError, DeployInputs, MODULE_VARIABLES, ShapeError, TF_VARIABLES};
use crate::domain::names::did_you_mean;

/// The module's variables and their defaults (JSON, `null` where none),
/// from the text of `variables.tf`.
pub(super) fn module_variables(variables_tf: &str) -> BTreeMap<String, Value> {
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
pub(crate) fn from_tfvars(text: &str, file: &str) -> Result<DeployInputs, DeployError> {
    let ModuleInputs {
        label,
        literal: given,
        unread,
    } = given_inputs(text, file)?;
    let module_label = (!label.is_empty()).then_some(label);
    let variables = module_variables(MODULE_VARIABLES);
    for name in given.keys().chain(unread.iter().map(|(name, _)| name)) {
        if !variables.contains_key(name) {
            let guess = did_you_mean(name, variables.keys().map(String::as_str));
            if !guess.is_empty() {
                return Err(DeployError::NoSuchVariable {
                    file: file.to_owned(),
                    name: name.clone(),
                    guess,
                });
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
        let rendered =
            render_tf(variable, &value(variable)).map_err(|why| DeployError::Variable {
                file: file.to_owned(),
                variable,
                why,
            })?;
        inputs.set(var, rendered, format!("variable {variable}"));
    }
    inputs.refused = module_refusals(&value, &is_unread);
    let credentials_unread = is_unread("clients") || is_unread("allow_anonymous");
    inputs.unread = unread;
    if credentials_unread {
        return Ok(inputs);
    }
    let anonymous = match value("allow_anonymous") {
        Value::Bool(on) => on,
        Value::String(text) if text == "true" || text == "false" => text == "true",
        _ => {
            return Err(DeployError::AllowAnonymous {
                file: file.to_owned(),
            });
        }
    };
    inputs.set_auth(anonymous, "variable allow_anonymous");
    Ok(inputs)
}

/// What a tfvars file (or a root module's `module` block, with its label
/// and the inputs only Terraform reads) gives the module, as JSON.
fn given_inputs(text: &str, file: &str) -> Result<ModuleInputs, DeployError> {
    if file.ends_with(".json") {
        let literal = serde_json::from_str(text).map_err(|source| DeployError::NotJson {
            file: file.to_owned(),
            source,
        })?;
        return Ok(ModuleInputs {
            literal,
            ..ModuleInputs::default()
        });
    }
    let body = hcl::parse(text).map_err(|source| DeployError::NotHcl {
        file: file.to_owned(),
        source,
    })?;
    if let Some(module) = root_module::module_inputs(&body, file)? {
        return Ok(module);
    }
    if let Some(block) = body.blocks().next() {
        return Err(DeployError::Block {
            file: file.to_owned(),
            block: block.identifier().to_owned(),
        });
    }
    let literal =
        body.attributes()
            .map(|attribute| {
                let value = serde_json::to_value(hcl::Value::from(attribute.expr().clone()))
                    .map_err(|source| DeployError::Input {
                        file: file.to_owned(),
                        name: attribute.key().to_owned(),
                        source,
                    })?;
                Ok((attribute.key().to_owned(), value))
            })
            .collect::<Result<_, DeployError>>()?;
    Ok(ModuleInputs {
        literal,
        ..ModuleInputs::default()
    })
}

/// What the module's preconditions refuse beyond the function's settings:
/// slot events on a replica, a gate without slot events.
fn module_refusals(value: &dyn Fn(&str) -> Value, is_unread: &dyn Fn(&str) -> bool) -> Vec<String> {
    let mut refused = Vec::new();
    let gated = |name: &str| matches!(value(name), Value::Object(map) if !map.is_empty());
    let events = matches!(value("slot_events"), Value::Bool(true))
        || value("slot_events") == Value::String("true".into());
    // On a replica of a global table the gates' events come from the region
    // that made the table, and slot events run there only.
    let replica = is_unread("existing_table_name")
        || matches!(value("existing_table_name"), Value::String(name) if !name.is_empty());
    if replica && events {
        refused.push(
            "variable slot_events runs where the global table is made, not with \
             existing_table_name (the module's precondition refuses the plan): every replica's \
             stream carries every region's writes, so a second slot-events function would send \
             each change twice"
                .into(),
        );
    }
    let events = events || replica;
    if gated("drain") && !events {
        refused.push(
            "variable drain needs slot_events = true (the module's precondition refuses the \
             plan): the Slot Drain Requested event is what tells a hook to drain a node"
                .into(),
        );
    }
    if gated("return_gate") && !events {
        refused.push(
            "variable return_gate needs slot_events = true (the module's precondition refuses \
             the plan): the Slot Released event (returning) is what tells a hook to bring a \
             node back and confirm its return"
                .into(),
        );
    }
    refused
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

fn map_of<'a>(
    value: &'a Value,
    shape: &'static str,
) -> Result<&'a serde_json::Map<String, Value>, ShapeError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(ShapeError::NotAMap(shape)),
    }
}

fn list_of<'a>(value: &'a Value, shape: &'static str) -> Result<&'a Vec<Value>, ShapeError> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(ShapeError::NotAList(shape)),
    }
}

/// The module's rendering of each variable into the function's
/// environment (the locals of `main.tf` and `alarm_pauses.tf`): maps in
/// the order of their keys, as Terraform iterates them.
fn render_tf(variable: &str, value: &Value) -> Result<String, ShapeError> {
    let scalar_of = |value: &Value, what: &str| {
        scalar(value).ok_or_else(|| ShapeError::NotScalar(what.to_owned()))
    };
    // A list of scalars, each `what`, as their text.
    let scalars_of =
        |value: &Value, shape: &'static str, what: &str| -> Result<Vec<String>, ShapeError> {
            list_of(value, shape)?
                .iter()
                .map(|item| scalar_of(item, what))
                .collect()
        };
    let sorted = |map: &serde_json::Map<String, Value>| {
        let mut entries: Vec<(String, Value)> =
            map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    };
    Ok(match variable {
        "groups" | "settle" | "lease" | "drain" | "return_gate" | "canary" => {
            let shape = match variable {
                "groups" => "{ default = 1, workers = 3 }",
                "settle" => "{ workers = \"10m\" }",
                "drain" => "{ workers = \"15m\" }",
                "return_gate" => "{ workers = \"20m\" }",
                "canary" => "{ workers = \"30m:1+3\" }",
                _ => "{ workers = \"6h\" }",
            };
            let map = map_of(value, shape)?;
            let entries: Result<Vec<String>, ShapeError> = sorted(map)
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
                        window.get(name).ok_or_else(|| ShapeError::WindowLacks {
                            group: group.clone(),
                            field: name.to_owned(),
                        })
                    };
                    let days = scalars_of(field("days")?, shape, "a day")?;
                    out.push(format!(
                        "{group}: days={} start_time={} length_minutes={}",
                        days.join(","),
                        scalar_of(field("start_time")?, "start_time")?,
                        scalar_of(field("length_minutes")?, "length_minutes")?
                    ));
                }
            }
            out.join(";")
        }
        "zones" => scalars_of(value, "[\"workers\"]", "a group")?.join(","),
        "clients" => scalars_of(value, "[\"NAME:GROUPS:SALT:SHA256\"]", "an entry")?.join(" "),
        "alarm_pauses" => {
            let shape = "{ \"api-5xx\" = [\"*\"] }";
            let mut out = Vec::new();
            for (alarm, groups) in sorted(map_of(value, shape)?) {
                out.push(format!(
                    "{alarm}={}",
                    scalars_of(&groups, shape, "a group")?.join(",")
                ));
            }
            out.join(";")
        }
        _ => scalar_of(value, "it")?,
    })
}
