//! The floor of a cold start for any Rust function on DynamoDB: a
//! `lambda_http` hello world that makes the api entry point's one
//! `DescribeTable` (of `FLEETLOCK_TABLE`) at start, with the same SDK and
//! its default HTTPS client. scripts/bench-cold-start measures it beside the
//! function binary.

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let table = std::env::var("FLEETLOCK_TABLE")?;
    aws_sdk_dynamodb::Client::new(&config)
        .describe_table()
        .table_name(table)
        .send()
        .await?;
    lambda_http::run(service_fn(|_request: Request| async {
        Ok::<_, Error>(Response::new(Body::from("hello")))
    }))
    .await
}
