//! The conformance cases any FleetLock server is held to (`fleetlock
//! check` runs them), each sent as Zincati sends, and the clean-up that
//! gives back every slot taken; [`report`]: each case's verdict and how the
//! run ended.

use std::collections::BTreeSet;
use std::sync::Mutex;

use crate::client::{Call, ClientError, Lock, Probe};

use report::{Case, Stop, Verdict};

pub(crate) mod report;
// The requests Zincati never sends, and what a careful server answers.
mod variations;

/// An answer as the check reads it.
#[derive(Clone, Debug)]
struct Heard {
    status: u16,
    /// `kind` and `value` of a FleetLock body, when the body is one.
    body: Option<(String, String)>,
    raw: String,
}

impl Heard {
    fn yes(&self) -> bool {
        (200..300).contains(&self.status)
    }

    fn shown(&self) -> String {
        match &self.body {
            Some((kind, value)) if !self.yes() => format!("{} {kind}: {value}", self.status),
            _ => {
                let raw: String = self.raw.chars().take(80).collect();
                format!("{} {}", self.status, raw.trim())
            }
        }
    }
}

/// A run: the server, the group, the ids taken, the cases so far.
pub(crate) struct Check {
    lock: Lock,
    group: String,
    slots: u32,
    prefix: String,
    /// The ids holding a slot now, by what the server answered; the
    /// clean-up after a signal reads them.
    taken: Mutex<BTreeSet<String>>,
    cases: Mutex<Vec<Case>>,
    /// Refusals seen without a `{kind, value}` body.
    bare_refusals: Mutex<Vec<String>>,
}

impl Check {
    pub(crate) fn new(lock: Lock, group: &str, slots: u32, nonce: &str) -> Self {
        Self {
            lock,
            group: group.to_owned(),
            slots,
            prefix: format!("fleetlock-check-{nonce}-"),
            taken: Mutex::default(),
            cases: Mutex::default(),
            bare_refusals: Mutex::default(),
        }
    }

    fn id(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn record(&self, name: &'static str, verdict: Verdict, saw: String, rule: &'static str) {
        self.cases.lock().expect("not poisoned").push(Case {
            name,
            verdict,
            saw,
            rule,
        });
    }

    async fn send(&self, probe: &Probe, id: &str, what: &str) -> Result<Heard, ClientError> {
        // A pre-reboot may be granted before its answer arrives (or one
        // never does): its id counts as taken from the moment it is sent, so
        // that a signal or a lost answer still leads to its give-back.
        let held_before = probe.call == Call::PreReboot && {
            let mut taken = self.taken.lock().expect("not poisoned");
            !taken.insert(id.to_owned())
        };
        let (status, body) = self.lock.send(probe).await?;
        let raw = String::from_utf8_lossy(&body).into_owned();
        let parsed: Option<serde_json::Value> = serde_json::from_slice(&body).ok();
        let field = |name: &str| parsed.as_ref()?.get(name)?.as_str().map(str::to_owned);
        let heard = Heard {
            status,
            body: field("kind").zip(field("value")),
            raw,
        };
        let mut taken = self.taken.lock().expect("not poisoned");
        match (probe.call, heard.yes()) {
            // Refused: it took nothing (unless it held before).
            (Call::PreReboot, false) if !held_before => {
                taken.remove(id);
            }
            (Call::SteadyState, true) => {
                taken.remove(id);
            }
            _ => {}
        }
        if !heard.yes() && heard.body.is_none() {
            self.bare_refusals
                .lock()
                .expect("not poisoned")
                .push(format!("{what}: {}", heard.shown()));
        }
        Ok(heard)
    }

    async fn zincati(&self, call: Call, id: &str, what: &str) -> Result<Heard, ClientError> {
        self.send(&Probe::zincati(call, id, &self.group), id, what)
            .await
    }

    /// One Zincati call that is a case of its own: sent, passed when it
    /// is a 2xx exactly as `wanted_2xx` says, else failed, and recorded.
    async fn expect(
        &self,
        case: &'static str,
        rule: &'static str,
        (call, id): (Call, &str),
        wanted_2xx: bool,
    ) -> Result<Heard, Stop> {
        let heard = self
            .zincati(call, id, case)
            .await
            .map_err(|e| Stop::Unreachable(e.to_string()))?;
        self.record(case, must(heard.yes() == wanted_2xx), heard.shown(), rule);
        Ok(heard)
    }

    /// Gives back every slot the run holds; the ids it could not free.
    pub(crate) async fn release_all(&self) -> Vec<String> {
        let held: Vec<String> = self
            .taken
            .lock()
            .expect("not poisoned")
            .iter()
            .cloned()
            .collect();
        for id in held {
            let _ = self.zincati(Call::SteadyState, &id, "clean-up").await;
        }
        self.taken
            .lock()
            .expect("not poisoned")
            .iter()
            .cloned()
            .collect()
    }

    /// The cases, in order; a stop is the reason the run could not go on.
    pub(crate) async fn run(&self) -> Result<(), Stop> {
        self.base_url();
        let probe = self.first_probe().await?;
        self.credentials(&probe).await?;
        self.grant_and_again().await?;
        let extra = self.every_slot_then_one_more().await?;
        self.non_holder_while_full(&extra).await?;
        self.holders_free_their_slots().await?;
        self.many_at_once().await?;
        self.refused_variations().await.map_err(unreachable)?;
        self.bodies_zincati_can_log();
        Ok(())
    }

    /// The URL itself, as Zincati joins paths to it.
    fn base_url(&self) {
        let path = self.lock.base_path();
        if path.is_empty() || path.ends_with('/') {
            self.record(
                "base_url ends with '/'",
                Verdict::Pass,
                format!("path '{path}'"),
                "Zincati joins v1/pre-reboot to base_url by URL rules",
            );
        } else {
            self.record(
                "base_url ends with '/'",
                Verdict::Warn,
                format!("path '{path}': Zincati would drop its last segment"),
                "Zincati joins v1/pre-reboot to base_url by URL rules",
            );
        }
    }

    /// 1. The first probe: what every node sends at every boot. Its id.
    async fn first_probe(&self) -> Result<String, Stop> {
        let probe = self.id("probe");
        let heard = self
            .zincati(Call::SteadyState, &probe, "first probe")
            .await
            .map_err(unreachable)?;
        match heard.status {
            200..=299 => {
                self.record(
                    "a body without Content-Type is read",
                    Verdict::Pass,
                    heard.shown(),
                    "Zincati sends its JSON body with no Content-Type",
                );
                self.record(
                    "steady-state of a node holding nothing",
                    Verdict::Pass,
                    heard.shown(),
                    "Zincati sends steady-state at every boot and retries until a 2xx",
                );
            }
            400 | 415 => {
                self.record(
                    "a body without Content-Type is read",
                    Verdict::Fail,
                    heard.shown(),
                    "Zincati sends its JSON body with no Content-Type",
                );
                return Err(Stop::Refused(
                    "the server refuses Zincati's own request; nothing else was tried".into(),
                ));
            }
            401 | 403 | 404 | 500..=599 => {
                return Err(Stop::Refused(format!(
                    "the first probe was refused, {}; check the URL, its credentials and that \
                     group '{}' is configured and in the credential's groups",
                    heard.shown(),
                    self.group
                )));
            }
            _ => self.record(
                "steady-state of a node holding nothing",
                Verdict::Fail,
                heard.shown(),
                "Zincati sends steady-state at every boot and retries until a 2xx",
            ),
        }
        Ok(probe)
    }

    /// 2. Credentials: without them, a 401.
    async fn credentials(&self, probe: &str) -> Result<(), Stop> {
        if self.lock.has_credentials() {
            let mut bare = Probe::zincati(Call::SteadyState, probe, &self.group);
            bare.credentials = false;
            let heard = self
                .send(&bare, probe, "no credentials")
                .await
                .map_err(unreachable)?;
            let verdict = if heard.status == 401 {
                Verdict::Pass
            } else {
                Verdict::Warn
            };
            self.record(
                "a request without credentials is refused",
                verdict,
                heard.shown(),
                "Zincati sends the URL's user info as HTTP Basic; the server should ask for it",
            );
        } else {
            self.record(
                "a request without credentials is refused",
                Verdict::Skip,
                "the URL carries no credentials".into(),
                "Zincati sends the URL's user info as HTTP Basic",
            );
        }
        Ok(())
    }

    /// 3. A grant, and the same node again.
    async fn grant_and_again(&self) -> Result<(), Stop> {
        let first = self.id("holder-1");
        let heard = self
            .zincati(Call::PreReboot, &first, "first grant")
            .await
            .map_err(unreachable)?;
        if !heard.yes() {
            return Err(Stop::Refused(format!(
                "group '{}' granted no slot: {}; the check needs the group free, with no \
                 settle time, pause or window",
                self.group,
                heard.shown()
            )));
        }
        self.record(
            "pre-reboot of a node takes a free slot",
            Verdict::Pass,
            heard.shown(),
            "Zincati reboots on any 2xx to pre-reboot",
        );
        self.expect(
            "pre-reboot of a node that holds a slot",
            "Zincati asks again after a restart mid-reboot: the lock is re-entrant",
            (Call::PreReboot, &first),
            true,
        )
        .await?;
        Ok(())
    }

    /// 4. Every slot, then one more: the id refused.
    async fn every_slot_then_one_more(&self) -> Result<String, Stop> {
        for n in 2..=self.slots {
            let id = self.id(&format!("holder-{n}"));
            let heard = self
                .zincati(Call::PreReboot, &id, "filling the group")
                .await
                .map_err(unreachable)?;
            if !heard.yes() {
                return Err(Stop::Refused(format!(
                    "slot {n} of --slots {} was refused: {}; give --slots as the group's \
                     configured slots",
                    self.slots,
                    heard.shown()
                )));
            }
        }
        let extra = self.id("over-the-limit");
        self.expect(
            "pre-reboot when every slot is taken is refused",
            "Zincati reboots on any 2xx: a full group must answer non-2xx",
            (Call::PreReboot, &extra),
            false,
        )
        .await?;
        Ok(extra)
    }

    /// 5. A node holding nothing gives nothing back, and hears a 2xx.
    async fn non_holder_while_full(&self, extra: &str) -> Result<(), Stop> {
        self.expect(
            "steady-state of a non-holder while the group is full",
            "Zincati retries steady-state until a 2xx and does not start updating before",
            (Call::SteadyState, extra),
            true,
        )
        .await?;
        Ok(())
    }

    /// 6. The holders give their slots back, and new nodes take them.
    async fn holders_free_their_slots(&self) -> Result<(), Stop> {
        let holders: Vec<String> = self
            .taken
            .lock()
            .expect("not poisoned")
            .iter()
            .cloned()
            .collect();
        let mut refused = Vec::new();
        for id in &holders {
            let heard = self
                .zincati(Call::SteadyState, id, "a holder's steady-state")
                .await
                .map_err(unreachable)?;
            if !heard.yes() {
                refused.push(heard.shown());
            }
        }
        // A 2xx is not enough: the slots must be free again, so new nodes
        // take every one of them.
        let mut freed = 0;
        for n in 1..=self.slots {
            let id = self.id(&format!("after-release-{n}"));
            let heard = self
                .zincati(Call::PreReboot, &id, "a slot freed by steady-state")
                .await
                .map_err(unreachable)?;
            if heard.yes() {
                freed += 1;
            }
        }
        let all_freed = refused.is_empty() && freed == self.slots;
        self.record(
            "steady-state of a holder frees its slot",
            must(all_freed),
            if !refused.is_empty() {
                refused.join("; ")
            } else if freed < self.slots {
                format!(
                    "{} holders each heard 2xx, but then only {freed} of {} new nodes got a \
                     slot: the slots were not freed",
                    holders.len(),
                    self.slots
                )
            } else {
                format!(
                    "{} holders, each 2xx; then {freed} new nodes took the freed slots",
                    holders.len()
                )
            },
            "Zincati gives its slot back with steady-state once the node is healthy",
        );
        if !self.release_all().await.is_empty() {
            return Err(Stop::Refused(
                "the slots this check took could not all be given back; the server keeps them"
                    .into(),
            ));
        }
        Ok(())
    }

    /// 7. Many at once: never more than the slots.
    async fn many_at_once(&self) -> Result<(), Stop> {
        let askers = (self.slots * 4).clamp(8, 64);
        let racing = (0..askers).map(|n| {
            let id = self.id(&format!("race-{n}"));
            async move {
                self.zincati(Call::PreReboot, &id, "concurrent pre-reboot")
                    .await
                    .map(|heard| heard.yes())
            }
        });
        let granted = futures_util::future::join_all(racing).await;
        let granted: usize = granted
            .into_iter()
            .collect::<Result<Vec<bool>, _>>()
            .map_err(unreachable)?
            .into_iter()
            .filter(|yes| *yes)
            .count();
        // With every slot free, a race grants some and never more than the
        // slots: none at all is a server that grants nothing.
        self.record(
            "concurrent pre-reboots never over-grant",
            must((1..=self.slots as usize).contains(&granted)),
            format!("{granted} of {askers} askers granted, {} slots", self.slots),
            "FleetLock: at most the group's slots hold a lock at once, and a free slot is taken",
        );
        let left = self.release_all().await;
        if !left.is_empty() {
            return Err(Stop::Refused(format!(
                "the race's holders could not all be given back: {}",
                left.join(", ")
            )));
        }
        Ok(())
    }

    /// 9. Every refusal had a body Zincati can log.
    fn bodies_zincati_can_log(&self) {
        let bare = self.bare_refusals.lock().expect("not poisoned").clone();
        self.record(
            "every refusal has a {kind, value} body",
            must(bare.is_empty()),
            if bare.is_empty() {
                "all did".into()
            } else {
                bare.join("; ")
            },
            "Zincati logs the value of a refusal's {kind, value} body in the node's journal",
        );
    }

    /// The cases recorded so far.
    pub(crate) fn cases(&self) -> Vec<Case> {
        self.cases.lock().expect("not poisoned").clone()
    }
}

/// A request that got no answer stops the run.
fn unreachable(err: ClientError) -> Stop {
    Stop::Unreachable(err.to_string())
}

/// Pass when it `held`, else fail: what breaks Zincati.
fn must(held: bool) -> Verdict {
    if held { Verdict::Pass } else { Verdict::Fail }
}

/// A short random tag for this run's ids.
pub(crate) fn nonce() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{:08x}", nanos ^ std::process::id().rotate_left(16))
}
