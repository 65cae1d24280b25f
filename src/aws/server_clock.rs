//! AWS's clock, as a person's command sees it: the `Date` header of
//! DynamoDB's answers, read by an interceptor on the command line's client.
//! A command that writes a time (release, drained, pause, exclude) checks
//! its own clock against it first: a laptop two hours ahead would date a
//! grant in the future, which no node's steady-state then frees, and start
//! a settle period no node can wait out. The SDK measures the skew for its
//! signatures but keeps it to itself.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::aws::AwsError;
use aws_sdk_dynamodb::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;

/// The most this machine's clock may be off AWS's for a command to write a
/// time: the header's own resolution is a second, and the request's way
/// there and back adds its part.
pub(crate) const MAX_SKEW: Duration = Duration::from_secs(5);

/// The skew seen last: AWS's time minus this machine's, in milliseconds.
#[derive(Clone, Debug, Default)]
pub(crate) struct ServerClock {
    skew_ms: Arc<Mutex<Option<i64>>>,
}

impl ServerClock {
    /// AWS's time minus this machine's, from the last answer with a `Date`.
    pub(crate) fn skew_ms(&self) -> Option<i64> {
        *self.skew_ms.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, date: &str, local: SystemTime) {
        let Some(server_ms) = http_date_ms(date) else {
            return;
        };
        let local_ms = local
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        // The header is truncated to the second: half a second is its
        // expected error.
        let skew = server_ms + 500 - local_ms;
        *self.skew_ms.lock().unwrap_or_else(|e| e.into_inner()) = Some(skew);
    }

    /// `Ok` when this machine's clock is within [`MAX_SKEW`] of AWS's (or
    /// no answer said: nothing to compare); else the line that says why the
    /// command stops.
    pub(crate) fn check(&self) -> Result<(), AwsError> {
        let Some(skew) = self.skew_ms() else {
            return Ok(());
        };
        if skew.unsigned_abs() <= MAX_SKEW.as_millis() as u64 {
            return Ok(());
        }
        let seconds = (skew.unsigned_abs() + 500) / 1000;
        let way = if skew < 0 { "ahead of" } else { "behind" };
        Err(AwsError::ClockSkewed { seconds, way })
    }
}

impl Intercept for ServerClock {
    fn name(&self) -> &'static str {
        "ServerClock"
    }

    fn read_before_deserialization(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        _cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(date) = context.response().headers().get("date") {
            self.record(date, SystemTime::now());
        }
        Ok(())
    }
}

/// An HTTP date (`Wed, 02 Dec 2026 18:20:00 GMT`, RFC 9110's IMF-fixdate)
/// in milliseconds since the epoch.
pub(crate) fn http_date_ms(date: &str) -> Option<i64> {
    let at = jiff::fmt::rfc2822::parse(date.trim()).ok()?;
    Some(at.timestamp().as_millisecond())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_http_date_is_read_and_a_skew_past_five_seconds_stops_a_command() {
        assert_eq!(
            http_date_ms("Wed, 02 Dec 2026 18:20:00 GMT"),
            Some(1_796_235_600_000)
        );
        assert_eq!(http_date_ms("yesterday"), None);
        let clock = ServerClock::default();
        assert_eq!(clock.check(), Ok(()), "nothing seen, nothing to compare");
        let at = |ms: u64| UNIX_EPOCH + Duration::from_millis(ms);
        // The local clock 2 h ahead of the answer's Date.
        clock.record(
            "Wed, 02 Dec 2026 18:20:00 GMT",
            at(1_796_235_600_000 + 7_200_000),
        );
        let refused = clock.check().unwrap_err().to_string();
        assert!(
            refused.starts_with("this machine's clock is about 7200 s ahead of AWS's"),
            "{refused}"
        );
        clock.record(
            "Wed, 02 Dec 2026 18:20:00 GMT",
            at(1_796_235_600_000 - 29_500),
        );
        assert!(
            clock
                .check()
                .unwrap_err()
                .to_string()
                .contains("30 s behind")
        );
        clock.record("Wed, 02 Dec 2026 18:20:00 GMT", at(1_796_235_602_000));
        assert_eq!(
            clock.check(),
            Ok(()),
            "within the header's second and the way there"
        );
    }
}
