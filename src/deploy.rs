//! A deploy's inputs (a samconfig.toml's parameters, a tfvars file's
//! variables, a root module's `module` block) turned into the environment
//! the function would be given, so that `config check --samconfig` and
//! `--tfvars` check them by the very code that reads them at start, before
//! anything is deployed.
//!
//! What a deploy leaves out takes the default of this version's template or
//! module, read from their text (embedded at build time), so the defaults
//! cannot drift from what `sam deploy` and `terraform apply` would use.

use std::collections::BTreeMap;

// A samconfig.toml's parameters, and a tfvars file's variables.
mod root_module;
mod samconfig;
mod tfvars;
pub(crate) use samconfig::from_samconfig;
pub(crate) use tfvars::from_tfvars;

/// Why a deploy's inputs were refused: the file, and what in it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DeployError {
    #[error("{file} sets '{name}', which the module has no variable of{guess}")]
    NoSuchVariable {
        file: String,
        name: String,
        guess: String,
    },
    #[error("{file}: variable {variable}: {why}")]
    Variable {
        file: String,
        variable: &'static str,
        why: ShapeError,
    },
    #[error("{file}: variable allow_anonymous: true or false")]
    AllowAnonymous { file: String },
    #[error("{file}: not JSON: {source}")]
    NotJson {
        file: String,
        source: serde_json::Error,
    },
    #[error("{file}: not HCL: {source}")]
    NotHcl { file: String, source: hcl::Error },
    #[error(
        "{file}: a tfvars file holds only NAME = value lines, not blocks like '{block}' (a root \
         module's file is read by its module block)"
    )]
    Block { file: String, block: String },
    /// An input whose value does not read as JSON.
    #[error("{file}: {name}: {source}")]
    Input {
        file: String,
        name: String,
        source: serde_json::Error,
    },
    #[error(
        "{file} has several module blocks ({labels}) and none is plainly this one: label it \
         \"fleetlock\", or give its inputs in a tfvars file"
    )]
    SeveralModules { file: String, labels: String },
    #[error("{file}: parameter_overrides has '{pair}', which is not Key=Value")]
    NotKeyValue { file: String, pair: String },
    #[error(
        "{file}: parameter_overrides sets '{key}', which the template has no parameter \
         of{guess}; CloudFormation would refuse the deploy"
    )]
    NoSuchParameter {
        file: String,
        key: String,
        guess: String,
    },
    #[error("{file}: not TOML: {why}")]
    NotToml { file: String, why: String },
    #[error("{file} has no config-env '{config_env}'{guess} (it has: {known})")]
    NoConfigEnv {
        file: String,
        config_env: String,
        guess: String,
        known: String,
    },
    #[error("{file}: parameter_overrides {why}")]
    Overrides { file: String, why: QuoteError },
    #[error("{file}: each item of parameter_overrides is a \"Key=Value\" string")]
    OverrideItem { file: String },
    #[error("{file}: parameter_overrides is a string of Key=Value words or a list of them")]
    OverridesShape { file: String },
}

/// Why a module variable's value does not have the shape the module reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShapeError {
    #[error("{0} must be a number or a string")]
    NotScalar(String),
    #[error("must be a map, as {0}")]
    NotAMap(&'static str),
    #[error("must be a list, as {0}")]
    NotAList(&'static str),
    #[error("a window of '{group}' has no {field}")]
    WindowLacks { group: String, field: String },
}

/// Why `parameter_overrides` does not split into words.
#[derive(Debug, thiserror::Error)]
pub(crate) enum QuoteError {
    #[error("ends inside a \"quoted\" value")]
    Double,
    #[error("ends inside a 'quoted' value")]
    Single,
}

/// The template and the module of this version.
const TEMPLATE: &str = include_str!("../template.yaml");
const MODULE_VARIABLES: &str = include_str!("../infra/variables.tf");

/// Each SAM parameter the function's settings come from, and its variable
/// (`AllowAnonymous` becomes `FLEETLOCK_AUTH`, see [`from_samconfig`]).
const SAM_PARAMETERS: &[(&str, &str)] = &[
    ("Groups", "FLEETLOCK_GROUPS"),
    ("Settle", "FLEETLOCK_SETTLE"),
    ("Lease", "FLEETLOCK_LEASE"),
    ("Drain", "FLEETLOCK_DRAIN"),
    ("Return", "FLEETLOCK_RETURN"),
    ("Zones", "FLEETLOCK_ZONES"),
    ("Canary", "FLEETLOCK_CANARY"),
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
    ("zones", "FLEETLOCK_ZONES"),
    ("canary", "FLEETLOCK_CANARY"),
    ("max_wildcard_groups", "FLEETLOCK_MAX_WILDCARD_GROUPS"),
    ("maintenance_windows", "FLEETLOCK_WINDOWS"),
    ("time_zone", "FLEETLOCK_TIME_ZONE"),
    ("clients", "FLEETLOCK_CLIENTS"),
    ("alarm_pauses", "FLEETLOCK_ALARM_PAUSES"),
];

/// A deploy's settings as the function's environment, with the name each
/// variable has in the deploy's own words.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct DeployInputs {
    pub(crate) vars: BTreeMap<String, String>,
    /// `FLEETLOCK_GROUPS` → `parameter Groups` or `variable groups`.
    pub(crate) names: BTreeMap<String, String>,
    /// Which inputs the deploy sets itself (the rest are defaults).
    pub(crate) given: Vec<String>,
    /// What the deploy itself would refuse, beyond the function's settings
    /// (a drain gate without slot events), each a sentence.
    pub(crate) refused: Vec<String>,
    /// A root module's inputs whose values only Terraform knows, with
    /// their text (`clients`, `var.fleetlock_clients`): not read, the
    /// module's defaults checked in their place (none for the credentials).
    pub(crate) unread: Vec<(String, String)>,
    /// The label of the root module's `module` block they were read from.
    pub(crate) module: Option<String>,
    /// Where the credential entries go, in the deploy file's words.
    pub(crate) clients_go: String,
}

impl DeployInputs {
    /// One variable of the function's environment, and its name in the
    /// deploy's own words (`parameter Groups`, `variable groups`).
    pub(crate) fn set(&mut self, var: &str, value: String, name: String) {
        self.vars.insert(var.to_owned(), value);
        self.names.insert(var.to_owned(), name);
    }

    /// `FLEETLOCK_AUTH` from the deploy's switch for anonymous calls.
    pub(crate) fn set_auth(&mut self, anonymous: bool, name: &str) {
        let auth = if anonymous { "disabled" } else { "required" };
        self.set("FLEETLOCK_AUTH", auth.to_owned(), name.to_owned());
    }

    /// An error of the function's configuration ("FLEETLOCK_GROUPS: …"),
    /// worded with the input the deploy sets ("parameter Groups
    /// (FLEETLOCK_GROUPS): …").
    pub(crate) fn reword(&self, error: &str) -> String {
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

#[cfg(test)]
mod tests;
