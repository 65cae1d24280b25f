//! Why a command failed: exit code 1, and one line for a person.

use std::fmt;

use crate::config::ConfigError;
use crate::domain::store::StoreError;

#[derive(Debug)]
pub(crate) enum Failure {
    /// A setting this command reads is missing or wrong; nothing was asked
    /// of AWS.
    Config(ConfigError),
    /// `config check` found the settings wrong: every error, each a
    /// sentence; `source` names a deploy file when the settings came from one.
    InvalidConfiguration {
        source: Option<String>,
        errors: Vec<String>,
    },
    /// An argument's value is not valid (a group name, an id, a reason).
    Input(String),
    /// The table could not be read or written.
    Store(StoreError),
    /// Another AWS call failed (the deployed function's configuration).
    Aws(String),
    /// The command was refused, and the sentence says why and what to do.
    Refused(String),
    /// The local server could not serve.
    Serve(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Config(err) => write!(f, "{err}"),
            Failure::InvalidConfiguration { source, errors } => {
                let source = source
                    .as_ref()
                    .map_or(String::new(), |s| format!(" in {s}"));
                match errors.as_slice() {
                    [one] => write!(f, "invalid configuration{source}: {one}"),
                    many => {
                        write!(f, "invalid configuration{source}, {} errors:", many.len())?;
                        many.iter().try_for_each(|err| write!(f, "\n  {err}"))
                    }
                }
            }
            Failure::Store(err) => write!(f, "{err}"),
            Failure::Input(why)
            | Failure::Aws(why)
            | Failure::Refused(why)
            | Failure::Serve(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Failure {}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        Failure::Store(err)
    }
}

impl From<ConfigError> for Failure {
    fn from(err: ConfigError) -> Self {
        Failure::Config(err)
    }
}
