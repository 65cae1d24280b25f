//! Structured logs: JSON under Lambda (CloudWatch parses it), readable text on
//! a terminal. `RUST_LOG` filters; the default keeps the SDK quiet.
//!
//! Nothing is ever logged at `trace`, whatever `RUST_LOG` says: at that level
//! the Lambda runtime crate logs each raw event, and with it the
//! `Authorization` header that carries a node's secret.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

const DEFAULT_FILTER: &str = "info,aws_config=warn,aws_smithy_runtime=warn";

/// The most detailed level any target logs at.
pub(crate) const MOST_DETAILED: LevelFilter = LevelFilter::DEBUG;

pub(crate) fn init(json: bool) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) is harmless: the first subscriber stays.
    let _ = if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_ansi(false)
            .finish()
            .with(MOST_DETAILED)
            .try_init()
    } else {
        // Colour only on a terminal: a file or a pipe gets plain text.
        builder
            .compact()
            .with_ansi(std::io::stderr().is_terminal())
            .finish()
            .with(MOST_DETAILED)
            .try_init()
    };
}
