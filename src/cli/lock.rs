//! `fleetlock lock` (and the loop `fleetlock unlock` shares): the client
//! side for workloads that are not Zincati (a maintenance job, `podman
//! auto-update`, a script), so that every disruption of a fleet shares the
//! same N slots. The requests are [`crate::client`]'s, exactly Zincati's;
//! this is the loop around them: waiting with backoff, stopping cleanly, and
//! the exit codes. [`hold`]: the slot held while a command runs.

mod checked;
pub(crate) mod hold;

pub use checked::Checked;
pub(crate) use checked::{check, url_given};

use std::future::Future;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;

use crate::client::{Call, ClientError, Reply};
use crate::config::{LockSettings, process_env};
use crate::domain::time::human_duration;

/// The least time between two tries: the endpoint's throttle is shared with
/// every Zincati of the fleet.
pub(crate) const RETRY_FLOOR: Duration = Duration::from_secs(60);
/// The most: Zincati's own cycle.
pub(crate) const RETRY_CEILING: Duration = Duration::from_secs(300);
/// The `--app` of a job that names none.
pub(crate) const DEFAULT_APP: &str = "job";

/// How the command ended, and its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// 0: the slot is taken (lock) or given back (unlock).
    Done,
    /// 1: refused (full, paused, settling, outside a window), and with
    /// `--wait` still refused at the timeout, or stopped by a signal; this
    /// command holds no slot it did not hold before.
    Refused,
    /// 2: bad input or usage, or a 4xx that asking again cannot mend (wrong
    /// credentials, unknown group, wrong path).
    Usage,
    /// 3: the server could not be reached, or answered 5xx.
    Unreachable,
    /// 4 (`lock -- COMMAND`): the slot was lost while the command ran (taken
    /// over, released by a person, or not renewed within its lease), and
    /// the command was stopped.
    Lost,
}

impl Ended {
    pub fn code(self) -> u8 {
        match self {
            Ended::Done => 0,
            Ended::Refused => 1,
            Ended::Usage => 2,
            Ended::Unreachable => 3,
            Ended::Lost => 4,
        }
    }
}

/// Who asks: an id given, or one derived from the machine id for an app.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    Id(String),
    App(String),
}

/// Where the URL (with its secret) comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlSource {
    /// `--url`: visible in `ps` and in shell history.
    Argument(String),
    /// `--url-file`: its first line.
    File(String),
    /// `FLEETLOCK_URL`.
    Environment,
}

/// The settings of one `lock` or `unlock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub call: Call,
    pub group: String,
    pub identity: Identity,
    pub url: UrlSource,
    /// `--wait`: ask again until yes, at most this long (`None`: no limit).
    pub wait: Option<Option<Duration>>,
}

/// The arguments of `lock` and `unlock`.
#[derive(Args, Debug, PartialEq, Eq)]
pub struct LockArgs {
    /// The group whose slot the job takes
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: String,
    /// The job's id (default: derived from the machine id and --app)
    #[arg(long, value_name = "ID", conflicts_with = "app")]
    pub(crate) id: Option<String>,
    /// The job's name, from which its id is derived (default: job)
    #[arg(long, value_name = "NAME")]
    pub(crate) app: Option<String>,
    /// Ask again until yes
    #[arg(long)]
    pub(crate) wait: bool,
    /// With --wait: give up after this long
    #[arg(long, value_name = "D", requires = "wait", value_parser = crate::domain::groups::parse_duration)]
    pub(crate) timeout: Option<Duration>,
    /// The server's URL, from the first line of this file
    #[arg(long, value_name = "F", conflicts_with = "url")]
    pub(crate) url_file: Option<String>,
    /// The server's URL (shows the secret in ps and shell history)
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
}

impl LockArgs {
    /// What these arguments ask of the server with `call`.
    pub fn request(&self, call: Call) -> Request {
        let identity = match &self.id {
            Some(id) => Identity::Id(id.clone()),
            None => Identity::App(self.app.clone().unwrap_or_else(|| DEFAULT_APP.into())),
        };
        let url = match (&self.url, &self.url_file) {
            (Some(url), _) => UrlSource::Argument(url.clone()),
            (None, Some(file)) => UrlSource::File(file.clone()),
            (None, None) => UrlSource::Environment,
        };
        Request {
            call,
            group: self.group.clone(),
            identity,
            url,
            wait: self.wait.then_some(self.timeout),
        }
    }

    /// `lock` (a pre-reboot) or `unlock` (a steady-state): settings checked
    /// first, then the calls, stopped by Ctrl-C or SIGTERM; the exit code
    /// says how it ended.
    pub(crate) async fn run(self, call: Call) -> ExitCode {
        let (request, checked) = match self.checked(call) {
            Ok(checked) => checked,
            Err(ended) => return ExitCode::from(ended.code()),
        };
        let mut say = |line: &str| eprintln!("fleetlock: {line}");
        let ended = run(&checked, &request, stop_signal(), &mut say).await;
        ExitCode::from(ended.code())
    }

    /// The request for `call` and its settings checked before anything is
    /// sent, with the warnings about where the secret shows (`--url` in
    /// `ps`, `http://` on the way); `Err` after the line that says why.
    pub(crate) fn checked(&self, call: Call) -> Result<(Request, Checked), Ended> {
        let request = self.request(call);
        let settings = LockSettings::from_vars(process_env);
        let checked = check(&request, &settings).map_err(|why| {
            eprintln!("fleetlock: {why}");
            Ended::Usage
        })?;
        if let UrlSource::Argument(url) = &request.url
            && url.contains('@')
        {
            eprintln!(
                "fleetlock: warning: a secret in --url is visible in ps and in shell history; \
                 prefer FLEETLOCK_URL or --url-file"
            );
        }
        if let Some(warning) = checked.lock.cleartext_warning() {
            eprintln!("fleetlock: {warning}");
        }
        Ok((request, checked))
    }
}

/// Completes at Ctrl-C or SIGTERM.
pub(crate) async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// The pauses of `--wait`: from `floor`, doubling, up to `ceiling`. The
/// commands use [`Pacing::FLEET`]; a test sets milliseconds to run the same
/// loop in a moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pacing {
    pub floor: Duration,
    pub ceiling: Duration,
}

impl Pacing {
    pub(crate) const FLEET: Pacing = Pacing {
        floor: RETRY_FLOOR,
        ceiling: RETRY_CEILING,
    };

    /// The pause before try number `tries + 1`, plus up to a tenth more
    /// (`jitter` in [0, 1)) so that jobs started together spread.
    pub(crate) fn pause_after(self, tries: u32, jitter: f64) -> Duration {
        let doubled = self
            .floor
            .saturating_mul(2u32.saturating_pow(tries.saturating_sub(1)));
        let base = doubled.min(self.ceiling);
        base + base.mul_f64(jitter.clamp(0.0, 1.0) / 10.0)
    }
}

/// A number in [0, 1) that differs between processes and moments: enough to
/// spread retries, no dependency.
fn jitter() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mixed = (u64::from(nanos) ^ (u64::from(std::process::id()) << 20))
        .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (mixed >> 11) as f64 / (1u64 << 53) as f64
}

/// Runs the call (again and again with `--wait`) until an answer ends it,
/// the timeout passes, or `stop` completes (Ctrl-C, SIGTERM). A pre-reboot
/// stopped while in flight may have been granted: its slot is given back
/// before the command ends, so that a stopped `lock` leaves nothing behind.
pub async fn run(
    checked: &Checked,
    request: &Request,
    stop: impl Future<Output = ()>,
    say: &mut dyn FnMut(&str),
) -> Ended {
    run_for_lease(checked, request, stop, say).await.0
}

/// [`run`], with the lease the server gave a slot taken (`None` without a
/// lease, or from a server that does not say).
pub(crate) async fn run_for_lease(
    checked: &Checked,
    request: &Request,
    stop: impl Future<Output = ()>,
    say: &mut dyn FnMut(&str),
) -> (Ended, Option<Duration>) {
    tokio::pin!(stop);
    let (id, group) = (checked.id.as_str(), checked.group.as_str());
    let started = Instant::now();
    let deadline = request.wait.flatten().map(|limit| started + limit);
    let verb = match request.call {
        Call::PreReboot => "take a slot",
        Call::SteadyState => "give back the slot",
    };
    let mut tries = 0u32;
    // Whether a pre-reboot went out and its answer was never read: only
    // then may a slot be held that nobody was told of.
    let mut unheard = false;
    loop {
        tries += 1;
        let answer = tokio::select! {
            answer = checked.lock.call(request.call, id, group) => answer,
            () = &mut stop => {
                if request.call == Call::PreReboot {
                    // Its answer will never be read: give back what it may
                    // have taken.
                    give_back_unheard(checked, "stopped while asking", say).await;
                } else {
                    say("stopped while giving the slot back");
                }
                return (Ended::Refused, None);
            }
        };
        let retry_ends = match step(answer, request.call, checked, &mut unheard, say) {
            Step::End(ended, lease) => return (ended, lease),
            Step::Retry(ended) => ended,
        };
        if request.wait.is_none() {
            if unheard && request.call == Call::PreReboot {
                // The request may have been granted with its answer lost.
                give_back_unheard(checked, "no answer was heard", say).await;
            }
            return (retry_ends, None);
        }
        let pause = checked.pacing.pause_after(tries, jitter());
        let next = Instant::now() + pause;
        if deadline.is_some_and(|deadline| next >= deadline) {
            let deadline = deadline.expect("checked");
            // Nothing more can be tried in time: wait out the limit, then stop.
            tokio::select! {
                () = tokio::time::sleep_until(deadline.into()) => {}
                () = &mut stop => return (Ended::Refused, None),
            }
            say(&format!(
                "could not {verb} within {}; giving up",
                human_duration(started.elapsed())
            ));
            let ended = if retry_ends == Ended::Unreachable {
                if unheard && request.call == Call::PreReboot {
                    give_back_unheard(checked, "the last request was not answered", say).await;
                }
                Ended::Unreachable
            } else {
                Ended::Refused
            };
            return (ended, None);
        }
        say(&format!("asking again in {}", human_duration(pause)));
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = &mut stop => {
                say("stopped while waiting; no slot was taken");
                return (Ended::Refused, None);
            }
        }
    }
}

/// What one answer means for [`run_for_lease`].
enum Step {
    /// The run ends here (with the lease of a slot taken).
    End(Ended, Option<Duration>),
    /// Asking again may help; if no later try does, the run ends so.
    Retry(Ended),
}

/// One answer, said, and what it means; `unheard` is set when a request may
/// have reached the server with its answer lost.
fn step(
    answer: Result<Reply, ClientError>,
    call: Call,
    checked: &Checked,
    unheard: &mut bool,
    say: &mut dyn FnMut(&str),
) -> Step {
    let (id, group) = (checked.id.as_str(), checked.group.as_str());
    match answer {
        Ok(Reply::Yes { lease, .. }) => {
            let done = match call {
                Call::PreReboot => format!("took a slot of group '{group}' as {id}"),
                Call::SteadyState => {
                    format!("gave back any slot of group '{group}' held by {id}")
                }
            };
            say(&done);
            Step::End(Ended::Done, lease)
        }
        Ok(Reply::Refused { value, .. }) => {
            say(&format!("refused: {value}"));
            Step::Retry(Ended::Refused)
        }
        Ok(Reply::Rejected { status, value, .. }) => {
            say(&format!(
                "refused ({status}), asking again would not help: {value}"
            ));
            Step::End(Ended::Usage, None)
        }
        Err(ClientError::Url(why)) => {
            say(&why);
            Step::End(Ended::Usage, None)
        }
        Err(err) => {
            *unheard |= !matches!(err, ClientError::NotSent(_));
            say(&err.to_string());
            Step::Retry(Ended::Unreachable)
        }
    }
}

/// After a pre-reboot whose answer was never read (stopped, lost, a 5xx):
/// a steady-state gives back whatever it may have taken, and the line says
/// whether that worked, and what to run if not.
async fn give_back_unheard(checked: &Checked, what: &str, say: &mut dyn FnMut(&str)) {
    let (id, group) = (checked.id.as_str(), checked.group.as_str());
    match give_back_once(checked).await {
        Ok(()) => say(&format!(
            "{what}; any slot that request took was given back"
        )),
        Err(why) => say(&format!(
            "{what}, and a slot that request may have taken could not be given back \
             ({why}): it may be held; run 'fleetlock unlock --group {group} --id {id}'"
        )),
    }
}

/// Why a steady-state gave nothing back: the server's refusal, or no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GiveBackError {
    /// The server's own sentence.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    NoAnswer(#[from] crate::client::ClientError),
}

/// One steady-state for the checked id: `Err` says why it was not a 2xx.
pub(crate) async fn give_back_once(checked: &Checked) -> Result<(), GiveBackError> {
    match checked
        .lock
        .call(
            Call::SteadyState,
            checked.id.as_str(),
            checked.group.as_str(),
        )
        .await
    {
        Ok(Reply::Yes { .. }) => Ok(()),
        Ok(Reply::Refused { value, .. } | Reply::Rejected { value, .. }) => {
            Err(GiveBackError::Refused(value))
        }
        Err(err) => Err(err.into()),
    }
}

/// The arguments of `lock`: those of `unlock`, and the command to hold the
/// slot for.
#[derive(Args, Debug, PartialEq, Eq)]
pub struct LockCommand {
    #[command(flatten)]
    pub args: LockArgs,
    /// Leave FLEETLOCK_URL, the node's secret, in COMMAND's environment
    /// (it is taken out otherwise)
    #[arg(long, requires = "command")]
    pub(crate) keep_url: bool,
    /// Run this command while holding the slot, renew the slot while it
    /// runs, give it back when it ends, and exit with its code (4: the slot
    /// was lost and the command stopped; 127: it could not be started)
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl LockCommand {
    /// `lock`, with or without a command.
    pub(crate) async fn run(self) -> ExitCode {
        if self.command.is_empty() {
            return self.args.run(Call::PreReboot).await;
        }
        let (request, checked) = match self.args.checked(Call::PreReboot) {
            Ok(checked) => checked,
            Err(ended) => return ExitCode::from(ended.code()),
        };
        let mut say = |line: &str| eprintln!("fleetlock: {line}");
        let (ended, lease) = run_for_lease(&checked, &request, stop_signal(), &mut say).await;
        if ended != Ended::Done {
            return ExitCode::from(ended.code());
        }
        let job = hold::Job {
            command: &self.command,
            keep_url: self.keep_url,
        };
        ExitCode::from(hold::hold(&checked, job, lease, stop_signal(), &mut say).await)
    }
}

#[cfg(test)]
mod tests;
