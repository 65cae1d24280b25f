//! `config check`: the FLEETLOCK_* settings in this shell, or those a
//! samconfig.toml or a tfvars file would deploy ([`crate::deploy`]), read by
//! the very code the function reads them with at start; every error at once,
//! or what each group gets ([`summary`]). Nothing is asked of AWS.

pub(crate) mod summary;

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use crate::config::{self, Config, process_env};
use crate::domain::coverage;
use crate::domain::names::shell_word;
use crate::domain::time::Timestamp;

use super::Failure;
use super::usage::instant;
use crate::deploy::{self, DeployInputs};

/// The commands of `config`.
#[derive(Subcommand, Debug, PartialEq, Eq)]
pub(crate) enum ConfigSub {
    Check(ConfigCheck),
}

impl ConfigSub {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        match self {
            ConfigSub::Check(check) => check.run(out),
        }
    }
}

/// Check the FLEETLOCK_* settings in this shell (or those a samconfig.toml or
/// a tfvars file would deploy) as the function reads them; print every error,
/// or what each group gets and every bound (--env: the variables)
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct ConfigCheck {
    /// The parameter_overrides of this samconfig.toml, over the template's defaults
    #[arg(long, value_name = "FILE", conflicts_with = "tfvars")]
    pub(crate) samconfig: Option<PathBuf>,
    /// Its config-env (as sam deploy --config-env)
    #[arg(
        long,
        value_name = "ENV",
        default_value = "default",
        requires = "samconfig"
    )]
    pub(crate) config_env: String,
    /// The module inputs of this .tfvars or .tfvars.json file (or of a root module's module block), over the module's defaults
    #[arg(long, value_name = "FILE")]
    pub(crate) tfvars: Option<PathBuf>,
    /// When the windows next open or close, from this time (RFC 3339; default: now)
    #[arg(long, value_name = "TIME", value_parser = instant)]
    pub(crate) from: Option<Timestamp>,
    /// Print the function's FLEETLOCK_* variables as shell assignments instead
    #[arg(long)]
    pub(crate) env: bool,
}

impl ConfigCheck {
    pub(crate) fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let from = self.from.unwrap_or_else(Timestamp::now);
        let read = |file: &Path| {
            std::fs::read_to_string(file)
                .map_err(|e| Failure::Input(format!("{}: {e}", file.display())))
        };
        let (label, inputs) = match (self.samconfig, self.tfvars) {
            (Some(file), _) => {
                let name = file.display().to_string();
                let config_env = &self.config_env;
                let inputs = deploy::from_samconfig(&read(&file)?, config_env, &name)
                    .map_err(|e| Failure::Input(e.to_string()))?;
                (format!("{name} [{config_env}]"), inputs)
            }
            (None, Some(file)) => {
                let name = file.display().to_string();
                let inputs = deploy::from_tfvars(&read(&file)?, &name)
                    .map_err(|e| Failure::Input(e.to_string()))?;
                match &inputs.module {
                    Some(label) => (format!("{name} (module \"{label}\")"), inputs),
                    None => (name, inputs),
                }
            }
            (None, None) => return config_check(process_env, None, from, self.env, out),
        };
        let var = |name: &str| inputs.vars.get(name).cloned();
        config_check(var, Some((&label, &inputs)), from, self.env, out)
    }
}

/// Of a deploy file: which inputs it sets, and which only Terraform reads.
fn say_what_was_read(file: &str, inputs: &DeployInputs, out: &mut impl Write) {
    say!(out, "configuration {file} deploys: valid");
    if !inputs.given.is_empty() {
        say!(
            out,
            "set there: {}; the rest are the defaults",
            inputs.given.join(", ")
        );
    }
    if !inputs.unread.is_empty() {
        let unread: Vec<String> = (inputs.unread.iter())
            .map(|(name, text)| format!("{name} = {text}"))
            .collect();
        say!(
            out,
            "not read, since only Terraform knows their values (the module checks \
             them at plan time): {}",
            unread.join("; ")
        );
    }
}

/// `config check`: the settings of these variables, as the function would
/// read them, every error at once; nothing is asked of AWS. `inputs` are
/// the deploy file's, when the variables came from one: its errors name
/// the file's own inputs, and `env` prints the variables it would deploy.
pub(crate) fn config_check(
    var: impl Fn(&str) -> Option<String>,
    inputs: Option<(&str, &DeployInputs)>,
    from: Timestamp,
    env: bool,
    out: &mut impl Write,
) -> Result<(), Failure> {
    let checked = Config::checked(&var);
    // The alarm-pauses function's own setting, when given.
    let gates = config::alarm_gates(&var);
    let reword = |text: String| inputs.map_or(text.clone(), |(_, inputs)| inputs.reword(&text));
    // The groups against the credentials: a typo is refused, names far
    // apart are warned of below.
    let (typos, warnings) =
        coverage::typos_and_warnings(checked.as_ref().map(Config::mismatches).unwrap_or_default());
    let refused: Vec<String> = inputs
        .map_or(&[][..], |(_, inputs)| &inputs.refused)
        .iter()
        .cloned()
        .chain(typos.into_iter().map(reword))
        .collect();
    let (config, gates) = match (checked, gates) {
        (Ok(config), Ok(gates)) if refused.is_empty() => (config, gates),
        (checked, gates) => {
            let errors = checked
                .err()
                .unwrap_or_default()
                .into_iter()
                .chain(gates.err())
                .map(|err| reword(err.to_string()))
                .chain(refused.iter().cloned())
                .collect();
            return Err(Failure::InvalidConfiguration {
                source: inputs.map(|(file, _)| file.to_owned()),
                errors,
            });
        }
    };
    if env {
        for name in config::settings::function_variables() {
            if let Some(value) = var(name) {
                say!(out, "{name}={}", shell_word(&value));
            }
        }
        return Ok(());
    }
    match inputs {
        None => say!(out, "configuration in this shell: valid"),
        Some((file, inputs)) => say_what_was_read(file, inputs, out),
    }
    for warning in warnings {
        say!(out, "warning: {}", reword(warning));
    }
    let _ = write!(
        out,
        "{}",
        summary::config_summary(&config, &gates, from, inputs.map(|(_, i)| i))
    );
    let alarms: Vec<&str> = gates.alarm_names().collect();
    if !alarms.is_empty() {
        say!(
            out,
            "alarms that pause groups while in ALARM: {}",
            alarms.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{FRIDAY_NOON, printed, vars};

    #[test]
    fn config_check_refuses_a_bad_setting_in_one_line() {
        let err = config_check(
            vars(&[("FLEETLOCK_SETTLE", "default=soon")]),
            None,
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid configuration: FLEETLOCK_SETTLE: "),
            "{err}"
        );
        assert_eq!(err.to_string().lines().count(), 1, "{err}");
        let mut out = Vec::new();
        config_check(
            vars(&[("FLEETLOCK_ALARM_PAUSES", "db-errors=*")]),
            None,
            FRIDAY_NOON,
            false,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.starts_with("configuration in this shell: valid\n"),
            "{text}"
        );
        assert!(
            text.ends_with("alarms that pause groups while in ALARM: db-errors\n"),
            "{text}"
        );
    }

    /// The two cases: a group spelt one way in the groups and
    /// another in a credential is refused either way round; names far
    /// apart are a warning beside "valid".
    #[test]
    fn config_check_reads_the_groups_against_the_credentials() {
        use crate::domain::auth::entry_for;
        let entry = |groups: &str| entry_for("fleet", groups, "secret").unwrap();
        let check = entry_for("check", "fleetlock-check", "secret").unwrap();
        for (groups, scoped, meant) in [
            (
                "default=1,wrokers=3,fleetlock-check=2",
                "default,workers",
                "wrokers",
            ),
            (
                "default=1,workers=3,fleetlock-check=2",
                "default,wrokers",
                "workers",
            ),
        ] {
            let clients = format!("{} {check}", entry(scoped));
            let err = config_check(
                vars(&[
                    ("FLEETLOCK_GROUPS", groups),
                    ("FLEETLOCK_CLIENTS", &clients),
                ]),
                None,
                FRIDAY_NOON,
                false,
                &mut Vec::new(),
            )
            .unwrap_err()
            .to_string();
            assert!(err.starts_with("invalid configuration: "), "{err}");
            assert!(err.contains(&format!("did you mean '{meant}'?")), "{err}");
        }
        let mut out = Vec::new();
        config_check(
            vars(&[
                ("FLEETLOCK_GROUPS", "default=1,db=1,fleetlock-check=2"),
                ("FLEETLOCK_CLIENTS", &entry("default,db")),
            ]),
            None,
            FRIDAY_NOON,
            false,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.starts_with("configuration in this shell: valid\n"),
            "{text}"
        );
        assert!(
            text.contains("warning: group 'fleetlock-check' is configured, but no credential"),
            "{text}"
        );
    }

    #[test]
    fn config_check_lists_every_error_not_only_the_first() {
        let err = config_check(
            vars(&[
                ("FLEETLOCK_GROUPS", "default=1,workers=many"),
                ("FLEETLOCK_SETTLE", "db=soon"),
                ("FLEETLOCK_TIME_ZONE", "Mars/Olympus"),
                (
                    "FLEETLOCK_WINDOWS",
                    "db: days=Caturday start_time=22:00 length_minutes=60",
                ),
                ("FLEETLOCK_AUTH", "maybe"),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx="),
            ]),
            None,
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines[0], "invalid configuration, 6 errors:", "{err}");
        for (line, variable) in lines[1..].iter().zip([
            "FLEETLOCK_GROUPS",
            "FLEETLOCK_SETTLE",
            "FLEETLOCK_TIME_ZONE",
            "FLEETLOCK_WINDOWS",
            "FLEETLOCK_AUTH",
            "FLEETLOCK_ALARM_PAUSES",
        ]) {
            assert!(line.starts_with(&format!("  {variable}: ")), "{err}");
        }
        // The first of them is the one the function stops at.
        let first = Config::from_vars(vars(&[
            ("FLEETLOCK_GROUPS", "default=1,workers=many"),
            ("FLEETLOCK_AUTH", "maybe"),
        ]))
        .unwrap_err();
        assert!(
            lines[1].ends_with(&first.to_string()[first.to_string().find(": ").unwrap() + 2..])
        );
    }

    #[test]
    fn config_check_says_when_each_window_next_opens_and_what_pauses_each_group() {
        let mut out = Vec::new();
        config_check(
            vars(&[
                ("FLEETLOCK_GROUPS", "default=1,db=1,*=2"),
                (
                    "FLEETLOCK_WINDOWS",
                    "db: days=Sat start_time=22:00 length_minutes=120",
                ),
                ("FLEETLOCK_ALARM_PAUSES", "api-5xx=*;db-latency=db"),
            ]),
            None,
            FRIDAY_NOON,
            false,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        for line in [
            "  db: 1 slot, settle 0s, reboots only in days=Sat start_time=22:00 length_minutes=120 (UTC): closed, \
             next opens 2026-03-28T22:00:00Z; paused while in ALARM: api-5xx, db-latency",
            "  default: 1 slot, settle 0s, always open; paused while in ALARM: api-5xx",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} not in:\n{text}");
        }
        assert!(
            text.contains("  * (every other valid group): 2 slots, settle 0s, always open; paused while in ALARM: api-5xx;"),
            "{text}"
        );
    }

    #[test]
    fn config_check_of_a_deploy_file_names_its_inputs_and_prints_its_variables() {
        let inputs = deploy::from_tfvars(
            "groups = { db = 1 }\nsettle = { db = \"soon\" }\n",
            "prod.tfvars",
        )
        .unwrap();
        let var = |name: &str| inputs.vars.get(name).cloned();
        let err = config_check(
            var,
            Some(("prod.tfvars", &inputs)),
            FRIDAY_NOON,
            false,
            &mut Vec::new(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with("invalid configuration in prod.tfvars, 2 errors:"),
            "{err}"
        );
        assert!(
            err.contains("\n  variable settle (FLEETLOCK_SETTLE): "),
            "{err}"
        );
        assert!(
            err.contains(
                "\n  variable clients (FLEETLOCK_CLIENTS) is empty: the deploy is refused unless \
                 variable allow_anonymous is true; make entries with 'fleetlock credential'"
            ),
            "{err}"
        );
        let inputs = deploy::from_tfvars(
            "groups = { db = 1 }\nallow_anonymous = true\n",
            "lab.tfvars",
        )
        .unwrap();
        let var = |name: &str| inputs.vars.get(name).cloned();
        let mut out = Vec::new();
        config_check(
            var,
            Some(("lab.tfvars", &inputs)),
            FRIDAY_NOON,
            true,
            &mut out,
        )
        .unwrap();
        let text = printed(out);
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_GROUPS='db=1'"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_AUTH=disabled"),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "FLEETLOCK_TIME_ZONE=UTC"),
            "{text}"
        );
    }
}
