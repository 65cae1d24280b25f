//! What the tests and the benchmarks need of the library and production never
//! does: a clock they move, and a DynamoDB client that counts its requests.
//! Behind the `test-support` feature, which `tests/` and `benches/` turn on
//! (through the dev-dependency on this crate); the release binary has none of
//! it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

use crate::aws;
use crate::domain::time::{Clock, Timestamp};

/// A clock that stands still until moved; shared by clones.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<std::sync::atomic::AtomicU64>);

impl ManualClock {
    pub fn at(start: Timestamp) -> Self {
        Self(Arc::new(start.0.into()))
    }

    pub fn set(&self, to: Timestamp) {
        self.0.store(to.0, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let millis = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
        self.0.fetch_add(millis, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.0.load(Ordering::SeqCst))
    }
}

/// A client configured as in production, with a [`RequestCounter`] on it: the
/// benchmark and the tests count the DynamoDB requests of each protocol call.
pub async fn counted_client() -> (aws_sdk_dynamodb::Client, RequestCounter) {
    let counter = RequestCounter::default();
    let config = aws::dynamodb_config(&aws::load_config().await)
        .interceptor(counter.clone())
        .build();
    (aws_sdk_dynamodb::Client::from_conf(config), counter)
}

/// Counts the HTTP requests a client sends to DynamoDB, retries included: the
/// benchmark and the tests use it to show one request per protocol call.
#[derive(Clone, Debug, Default)]
pub struct RequestCounter(Arc<AtomicU64>);

impl RequestCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manual_clock_stands_still_until_moved_and_is_shared() {
        let clock = ManualClock::at(Timestamp(1_000));
        let same = clock.clone();
        assert_eq!(clock.now(), Timestamp(1_000));
        clock.advance(Duration::from_millis(250));
        assert_eq!(same.now(), Timestamp(1_250));
        same.set(Timestamp(5));
        assert_eq!(clock.now(), Timestamp(5));
    }
}
