//! What every AWS client of this program shares: one configuration, loaded
//! once per process (the region, `AWS_ENDPOINT_URL`, the credential chain,
//! this service's timeouts and retries), and the debug log of each request.
//! Every SDK client is built here, from that configuration, with the log;
//! the adapters beside this module use them.

pub(crate) mod cloudwatch;
pub(crate) mod eventbridge;
pub(crate) mod function_config;
pub mod iam;
pub(crate) mod instance_tags;
pub(crate) mod server_clock;
pub(crate) mod trust;

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_sdk_dynamodb::config::retry::{RetryPartition, TokenBucket};
// The smithy runtime's interceptor types, the same in every SDK; these come
// through the DynamoDB crate's re-exports.
use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// Bounds on every AWS call, chosen to fit well inside the functions'
/// timeouts: the SDK has no operation timeout of its own.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
pub(crate) const OPERATION_TIMEOUT: Duration = Duration::from_secs(5);
pub const MAX_ATTEMPTS: u32 = 3;

/// Loads the standard AWS configuration of a function (and of the tests):
/// this service's timeouts and retry limits, and an HTTPS client that trusts
/// the roots AWS endpoints chain to without reading the host's store at
/// start ([`trust`]).
pub async fn load_config() -> SdkConfig {
    bounded()
        .http_client(trust::function_https_client(crate::config::process_env))
        .load()
        .await
}

/// The standard loader with this service's timeouts and retry limits.
fn bounded() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(CONNECT_TIMEOUT)
                .operation_attempt_timeout(ATTEMPT_TIMEOUT)
                .operation_timeout(OPERATION_TIMEOUT)
                .build(),
        )
        .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
}

/// Why a command could not use AWS, or AWS refused what it asked: one line
/// that says what to do, with AWS's own words where it gave some.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum AwsError {
    #[error(
        "no AWS region: set AWS_REGION (e.g. AWS_REGION=eu-west-1), or use a profile that has \
         one (AWS_PROFILE)"
    )]
    NoRegion,
    #[error("{NO_CREDENTIALS}")]
    NoCredentials,
    #[error("AWS credentials were found but could not be loaded: {0}")]
    CredentialsNotLoaded(String),
    #[error("cannot read the configuration of function '{name}': {why}")]
    FunctionUnread { name: String, why: String },
    #[error("cannot read the instances' tags (tag:GetResources): {0}")]
    TagsUnread(String),
    #[error(
        "this machine's clock is about {seconds} s {way} AWS's (the Date of DynamoDB's answer): \
         a time written from it would mislead every node of the group (a grant dated in the \
         future is never given back, a release in the future keeps the group settling); set \
         the clock (NTP, 'timedatectl'), then run the command again"
    )]
    ClockSkewed { seconds: u64, way: &'static str },
}

/// The configuration of a command run by a person: as [`load_config`], but
/// the region comes from the environment or the profile only. Without one,
/// the SDK would ask the instance metadata service, which on a laptop means
/// seconds of retries and three long warnings before any answer: say in one
/// line what to set instead.
pub(crate) async fn load_command_config() -> Result<SdkConfig, AwsError> {
    use aws_config::environment::region::EnvironmentVariableRegionProvider;
    use aws_config::meta::region::RegionProviderChain;
    use aws_config::profile::ProfileFileRegionProvider;
    let region = RegionProviderChain::first_try(EnvironmentVariableRegionProvider::new())
        .or_else(ProfileFileRegionProvider::new())
        .region()
        .await
        .ok_or(AwsError::NoRegion)?;
    let config = bounded().region(region).load().await;
    credentials_found(&config).await?;
    Ok(config)
}

/// What a command says when the credential chain finds nothing.
pub const NO_CREDENTIALS: &str = "no AWS credentials: run 'aws configure' (or 'aws configure \
     sso' and set AWS_PROFILE), or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";

/// Resolves the credentials once, before the command's first request: none
/// found is one line saying what to do, instead of the SDK's dispatch
/// failure at the first call.
async fn credentials_found(config: &SdkConfig) -> Result<(), AwsError> {
    use aws_credential_types::provider::ProvideCredentials;
    use aws_credential_types::provider::error::CredentialsError;
    let provider = config
        .credentials_provider()
        .ok_or(AwsError::NoCredentials)?;
    match provider.provide_credentials().await {
        Ok(_) => Ok(()),
        Err(CredentialsError::CredentialsNotLoaded(_)) => Err(AwsError::NoCredentials),
        Err(other) => Err(AwsError::CredentialsNotLoaded(
            aws_sdk_dynamodb::error::DisplayErrorContext(&other).to_string(),
        )),
    }
}

/// Logs each AWS request's action at debug level (`RUST_LOG=debug`), named
/// as IAM names it: what a command needs in IAM terms, and what the tests
/// check against [`crate::aws::iam`]. On every client this program builds.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OperationLog;

impl Intercept for OperationLog {
    fn name(&self) -> &'static str {
        "OperationLog"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(metadata) = cfg.load::<Metadata>() {
            let service = metadata.service().to_lowercase();
            // The SDK's service name, where IAM's prefix differs.
            let prefix = match service.as_str() {
                "eventbridge" => "events",
                "resourcegroupstaggingapi" | "resource groups tagging api" => "tag",
                other => other,
            };
            tracing::debug!(
                action = %format!("{prefix}:{}", metadata.name()),
                "aws request"
            );
        }
        Ok(())
    }
}

/// A DynamoDB client on the shared configuration, with each request's
/// operation in the debug log.
pub fn dynamodb_client(aws: &SdkConfig) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::from_conf(dynamodb_config(aws).build())
}

/// The DynamoDB endpoint a client on `aws` calls, resolved as the SDK
/// resolves it: an endpoint set in code, else the service's own setting
/// (`AWS_ENDPOINT_URL_DYNAMODB`, a profile's `services` section), else
/// `AWS_ENDPOINT_URL`; `None` for the region's own DynamoDB.
pub(crate) fn dynamodb_endpoint(aws: &SdkConfig) -> Option<String> {
    if aws.get_origin("endpoint_url").is_client_config() {
        return aws.endpoint_url().map(str::to_owned);
    }
    let key = aws_types::service_config::ServiceConfigKey::builder()
        .service_id("DynamoDB")
        .env("AWS_ENDPOINT_URL")
        .profile("endpoint_url")
        .build()
        .expect("all three parts given");
    aws.service_config()
        .and_then(|config| config.load_config(key))
        .or_else(|| aws.endpoint_url().map(str::to_owned))
}

/// The DynamoDB client's configuration, for a client with more on it (the
/// tests' request counter).
pub fn dynamodb_config(aws: &SdkConfig) -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Builder::from(aws)
        .interceptor(OperationLog)
        .retry_partition(
            RetryPartition::custom("fleetlock-dynamodb")
                .token_bucket(dynamodb_retry_quota())
                .build(),
        )
}

/// The DynamoDB client's retry quota. Every call is bounded by
/// [`MAX_ATTEMPTS`] within [`OPERATION_TIMEOUT`]; the quota the SDK shares
/// across a process besides bounds how many retries it makes in all. A
/// retry of an error the model marks retryable (a global table's
/// `ReplicatedWriteConflictException`: not applied, so the same conditional
/// write decides again) or of a 5xx costs nothing from it here: at one write
/// in four refused as a conflict and 300 nodes, the SDK's default quota (500
/// tokens, 5 a retry, one back a first-try success) ran dry and 24 % of the
/// calls heard `store_unavailable` (`./scripts/soak 60 conflicts`,
/// BENCHMARKS.md). Throttling and timeouts keep their costs, so a throttled or
/// unreachable DynamoDB is not asked three times as often.
pub fn dynamodb_retry_quota() -> TokenBucket {
    TokenBucket::builder()
        .retry_cost(0)
        .throttling_retry_cost(5)
        .timeout_retry_cost(10)
        .build()
}

/// An EventBridge client on the shared configuration, with the debug log.
pub(crate) fn eventbridge_client(aws: &SdkConfig) -> aws_sdk_eventbridge::Client {
    let config = aws_sdk_eventbridge::config::Builder::from(aws)
        .interceptor(OperationLog)
        .build();
    aws_sdk_eventbridge::Client::from_conf(config)
}

/// A CloudWatch client on the shared configuration, with the debug log.
pub(crate) fn cloudwatch_client(aws: &SdkConfig) -> aws_sdk_cloudwatch::Client {
    let config = aws_sdk_cloudwatch::config::Builder::from(aws)
        .interceptor(OperationLog)
        .build();
    aws_sdk_cloudwatch::Client::from_conf(config)
}

/// A Resource Groups Tagging API client, with the debug log: for the
/// instances tagged with the Zincati ids they send.
pub(crate) fn tagging_client(aws: &SdkConfig) -> aws_sdk_resourcegroupstagging::Client {
    let config = aws_sdk_resourcegroupstagging::config::Builder::from(aws)
        .interceptor(OperationLog)
        .build();
    aws_sdk_resourcegroupstagging::Client::from_conf(config)
}

/// A Lambda client on the shared configuration, with the debug log: for the
/// deployed function's settings.
pub(crate) fn lambda_client(aws: &SdkConfig) -> aws_sdk_lambda::Client {
    let config = aws_sdk_lambda::config::Builder::from(aws)
        .interceptor(OperationLog)
        .build();
    aws_sdk_lambda::Client::from_conf(config)
}
