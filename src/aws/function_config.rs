//! The deployed configuration, for `fleetlock status`: the function's own
//! environment, read through the Lambda API (`GetFunctionConfiguration`), so
//! that the operator sees the slots, settle times and windows the function
//! really applies, not a copy in their shell.

use std::collections::HashMap;

use crate::aws::AwsError;
use crate::config::{Config, ConfigError};

/// The variables of the function `name` (a name or an ARN).
pub(crate) async fn function_environment(
    client: &aws_sdk_lambda::Client,
    name: &str,
) -> Result<HashMap<String, String>, AwsError> {
    let described = client
        .get_function_configuration()
        .function_name(name)
        .send()
        .await
        .map_err(|err| {
            tracing::debug!(error = %aws_sdk_lambda::error::DisplayErrorContext(&err), "GetFunctionConfiguration failed");
            let why = aws_sdk_lambda::error::ProvideErrorMetadata::message(&err)
                .map(str::to_owned)
                .unwrap_or_else(|| err.to_string());
            AwsError::FunctionUnread {
                name: name.to_owned(),
                why,
            }
        })?;
    Ok(described
        .environment()
        .and_then(|e| e.variables())
        .cloned()
        .unwrap_or_default())
}

/// The configuration a set of variables describes, as the function reads it.
pub(crate) fn config_of(variables: &HashMap<String, String>) -> Result<Config, ConfigError> {
    Config::from_vars(|name| variables.get(name).cloned())
}
