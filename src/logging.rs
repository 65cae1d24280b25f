//! Structured logs: JSON under Lambda (CloudWatch parses it), readable text on
//! a terminal. `RUST_LOG` filters; the default keeps the SDK quiet.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

const DEFAULT_FILTER: &str = "info,aws_config=warn,aws_smithy_runtime=warn";

pub fn init(json: bool) {
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
            .try_init()
    } else {
        // Colour only on a terminal: a file or a pipe gets plain text.
        builder
            .compact()
            .with_ansi(std::io::stderr().is_terminal())
            .try_init()
    };
}
