//! The floor of a cold start: a `lambda_http` hello world, built with this
//! crate's release profile, that scripts/bench-cold-start measures beside the
//! function binary (zip bytes and init time).

use lambda_http::{Body, Error, Request, Response, service_fn};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lambda_http::run(service_fn(|_request: Request| async {
        Ok::<_, Error>(Response::new(Body::from("hello")))
    }))
    .await
}
