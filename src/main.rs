//! Picks what runs: under the Lambda runtime, the entry point its handler
//! names; elsewhere, the command its arguments name.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() {
        return fleetlock::entry::run().await;
    }
    fleetlock::cli::run(std::env::args().skip(1).collect()).await
}
