//! `fleetlock check URL`: a conformance test for any FleetLock server,
//! sent exactly as Zincati sends (no Content-Type, pretty JSON, the protocol
//! header, Basic credentials from the URL), with deliberate variations for
//! the rest. Each case passes, warns or fails, and says which rule of the
//! protocol or of Zincati's client it checks ([`crate::client::conformance`],
//! with the client, as they are no command's own); its report says how the
//! run ended. This is the command: its arguments, the run, the exit codes.
//!
//! Safe against production: it works in one group kept for it, stops at once
//! when its first probe is refused for a reason that is not its own test,
//! names its ids after itself, and gives back every slot it took, whatever
//! ends it; what it cannot give back, it names.

use std::process::ExitCode;

use clap::Args;

use crate::config::{LockSettings, process_env};

use super::USAGE_EXIT;
use super::lock::{UrlSource, stop_signal, url_given};
use crate::client::conformance::report::{Report, Stop};
use crate::client::conformance::{Check, nonce};

/// The group the check works in unless told otherwise.
pub(crate) const DEFAULT_GROUP: &str = crate::domain::coverage::CHECK_GROUP;

/// Check a FleetLock server as Zincati calls it (the URL as base_url, default
/// FLEETLOCK_URL), in a group kept for it (default fleetlock-check, 2 slots);
/// gives back every slot it took; exit codes: 0 conforms, 1 does not (or
/// stopped), 2 bad input, 3 unreachable
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct CheckArgs {
    /// The server, as Zincati's base_url: https://NAME:SECRET@host/ (default: FLEETLOCK_URL)
    #[arg(value_name = "URL", conflicts_with = "url_file")]
    pub(crate) url: Option<String>,
    /// The server's URL, from the first line of this file
    #[arg(long, value_name = "F")]
    pub(crate) url_file: Option<String>,
    /// The group kept for the check (configured, with no settle time, pause or window)
    #[arg(long, value_name = "G", default_value = DEFAULT_GROUP)]
    pub(crate) group: String,
    /// The slots that group is configured with
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub(crate) slots: u32,
    /// Count warnings as failures
    #[arg(long)]
    pub(crate) strict: bool,
    /// Print the report as JSON
    #[arg(long)]
    pub(crate) json: bool,
}

impl CheckArgs {
    fn url_source(&self) -> UrlSource {
        match (&self.url, &self.url_file) {
            (Some(url), _) => UrlSource::Argument(url.clone()),
            (None, Some(file)) => UrlSource::File(file.clone()),
            (None, None) => UrlSource::Environment,
        }
    }

    /// `fleetlock check`: the URL checked first, then the cases, stopped by
    /// Ctrl-C or SIGTERM; whatever ends it, the slots it took are given back.
    pub(crate) async fn run(self) -> ExitCode {
        let request = &self;
        let url_source = self.url_source();
        let settings = LockSettings::from_vars(process_env);
        let url = match url_given(&url_source, &settings) {
            Ok(url) => url,
            Err(why) => {
                eprintln!("fleetlock: {why}");
                return ExitCode::from(USAGE_EXIT);
            }
        };
        let Some(url) = url.filter(|u| !u.trim().is_empty()) else {
            eprintln!(
                "fleetlock: check needs the server's URL: give it as URL, in FLEETLOCK_URL or with \
                 --url-file"
            );
            return ExitCode::from(USAGE_EXIT);
        };
        if let Err(err) = crate::domain::input::GroupName::parse(&request.group) {
            eprintln!("fleetlock: --group: {}", err.value());
            return ExitCode::from(USAGE_EXIT);
        }
        let server = match crate::client::Lock::new(&url) {
            Ok(server) => server,
            Err(err) => {
                eprintln!("fleetlock: {err}");
                return ExitCode::from(USAGE_EXIT);
            }
        };
        if matches!(url_source, UrlSource::Argument(_)) && url.contains('@') {
            eprintln!(
                "fleetlock: warning: a secret in the URL argument is visible in ps and in shell \
                 history; prefer FLEETLOCK_URL or --url-file"
            );
        }
        if let Some(warning) = server.cleartext_warning() {
            eprintln!("fleetlock: {warning}");
        }
        let shown = server.shown();
        let run = Check::new(server, &request.group, request.slots, &nonce());
        let outcome = tokio::select! {
            outcome = run.run() => outcome,
            () = stop_signal() => Err(Stop::Signal),
        };
        let left = run.release_all().await;
        let report = Report {
            cases: run.cases(),
            stopped: outcome.as_ref().err().map(ToString::to_string),
            left,
        };
        if request.json {
            println!(
                "{}",
                report.json(&shown, &request.group, request.slots, request.strict)
            );
        } else {
            print!("{}", report.text(&request.group, request.strict));
        }
        if matches!(outcome, Err(Stop::Unreachable(_))) {
            ExitCode::from(3)
        } else if report.failed(request.strict) {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }
}
