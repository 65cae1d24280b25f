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
