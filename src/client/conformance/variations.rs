//! The variations of Zincati's request that a careful server refuses: a
//! warning each where it does not.

use crate::client::{Call, ClientError, Probe};

use super::Check;
use super::report::Verdict;

impl Check {
    /// Requests Zincati never sends: a careful server refuses each with a
    /// 4xx. A 2xx is a warning, and a slot it granted is given back.
    pub(super) async fn refused_variations(&self) -> Result<(), ClientError> {
        let zincati = |name: &str| Probe::zincati(Call::PreReboot, &self.id(name), &self.group);
        let body_of = |text: &str| text.as_bytes().to_vec();
        let mut no_header = zincati("no-header");
        no_header.protocol_header = false;
        let mut get = zincati("wrong-method");
        get.method = hyper::Method::GET;
        let mut malformed = zincati("malformed");
        malformed.body = body_of("{\"client_params\": {");
        let mut oversized = zincati("oversized");
        let padding = "x".repeat(64 * 1024);
        oversized.body = body_of(&format!(
            "{{\"client_params\": {{\"id\": \"{}\", \"group\": \"{}\"}}, \"padding\": \"{padding}\"}}",
            self.id("oversized"),
            self.group
        ));
        let mut incomplete = zincati("incomplete");
        incomplete.body = body_of(&format!(
            "{{\"client_params\": {{\"id\": \"{}\"}}}}",
            self.id("incomplete")
        ));
        let bad_group = Probe::zincati(Call::PreReboot, &self.id("bad-group"), "no spaces here");
        let bad_id = Probe::zincati(Call::PreReboot, "", &self.group);
        let variations: [(&'static str, Probe, String, &'static str); 7] = [
            (
                "a request without the fleet-lock-protocol header",
                no_header,
                self.id("no-header"),
                "FleetLock: clients send 'fleet-lock-protocol: true'",
            ),
            (
                "a GET instead of POST",
                get,
                self.id("wrong-method"),
                "FleetLock: both calls are POST",
            ),
            (
                "a malformed body",
                malformed,
                self.id("malformed"),
                "FleetLock: the body is JSON {client_params: {id, group}}",
            ),
            (
                "a body over 64 KiB",
                oversized,
                self.id("oversized"),
                "a server bounds what it reads",
            ),
            (
                "a body without a group",
                incomplete,
                self.id("incomplete"),
                "FleetLock: client_params has both id and group",
            ),
            (
                "an invalid group",
                bad_group,
                self.id("bad-group"),
                "FleetLock: a group matches ^[a-zA-Z0-9.-]+$",
            ),
            (
                "an empty id",
                bad_id,
                String::new(),
                "FleetLock: the id names the node",
            ),
        ];
        for (name, probe, id, rule) in variations {
            let heard = self.send(&probe, &id, name).await?;
            let verdict = if (400..500).contains(&heard.status) {
                Verdict::Pass
            } else {
                Verdict::Warn
            };
            self.record(name, verdict, heard.shown(), rule);
            if heard.yes() {
                // It may have granted: give it back as Zincati would.
                let _ = self.release_all().await;
            }
        }
        Ok(())
    }
}
