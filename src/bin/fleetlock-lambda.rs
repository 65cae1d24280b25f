//! The Lambda function: the five entry points and nothing of the command
//! line, so the linker leaves clap, the config checks' parsers and the
//! operator's AWS clients out of the zip. `fleetlock` is the command line.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_none() {
        eprintln!(
            "fleetlock-lambda runs under the AWS Lambda runtime (AWS_LAMBDA_RUNTIME_API); \
             the command line is 'fleetlock'"
        );
        return ExitCode::from(2);
    }
    fleetlock::entry::run().await
}
