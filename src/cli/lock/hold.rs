//! `fleetlock lock ... -- COMMAND ARGS...`: the slot held for the whole run
//! of a job, as `consul lock` runs one. The slot is taken as `lock` takes it
//! (with `--wait`, until yes); then the command runs, the slot is renewed
//! well inside the group's lease while it does, and it is given back when
//! the command ends, whose exit code this one passes through. A slot lost
//! while the command runs (taken over, released by a person, or not renewed
//! within its lease) stops the command: it hears SIGTERM, then SIGKILL.

use std::time::{Duration, Instant};

use super::{Checked, Ended, give_back_once};
use crate::client::{Call, ClientError, Reply};

/// How long a stopped command has between SIGTERM and SIGKILL.
pub(crate) const KILL_AFTER: Duration = Duration::from_secs(30);
/// How often a slot with no lease is looked at: nobody can take it over,
/// but a person can release it (`fleetlock release`), and the job should
/// hear of that.
pub(crate) const UNLEASED_CHECK: Duration = Duration::from_secs(5 * 60);
/// The most between two renewals of a leased slot, and between two tries
/// after a renewal that got no answer.
pub(crate) const MAX_RENEW_EVERY: Duration = Duration::from_secs(5 * 60);
pub(crate) const RETRY_RENEWAL: Duration = Duration::from_secs(30);
/// A renewal not confirmed this long before the lease runs out counts as
/// lost: the command is stopped while the slot is still its own.
pub(crate) const LEASE_MARGIN: Duration = Duration::from_secs(60);

/// What an answer to a renewal says of the slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Renewal {
    /// Still held; the lease runs again from the request.
    Held,
    /// No word either way (no answer, a 5xx, a refusal before the store such
    /// as a closed maintenance window, a credential refused): ask again soon.
    Unknown(String),
    /// Not held any more: refused, or granted afresh (so lost in between).
    Lost(String),
}

/// Reads the answer to a holder's pre-reboot.
pub(crate) fn renewal_of(answer: Result<Reply, ClientError>) -> Renewal {
    match answer {
        // A server that names no outcome said yes to a holder: held.
        Ok(Reply::Yes { outcome, .. }) => match outcome.as_deref() {
            None | Some("already_held") => Renewal::Held,
            Some(other) => Renewal::Lost(format!(
                "the server answered '{other}', a new slot: the one held was lost in between"
            )),
        },
        // A holder is refused before the store outside a window: it holds.
        // A throttled call (429, no FleetLock body) said nothing of the slot.
        Ok(Reply::Refused { kind, value })
            if kind == "outside_maintenance_window" || kind.starts_with("generic_http_") =>
        {
            Renewal::Unknown(value)
        }
        Ok(Reply::Refused { value, .. }) => Renewal::Lost(value),
        Ok(Reply::Rejected { status, value, .. }) => {
            Renewal::Unknown(format!("refused ({status}): {value}"))
        }
        Err(err) => Renewal::Unknown(err.to_string()),
    }
}

/// When to renew next, `confirmed` (the sending of the last renewal the
/// server confirmed, or of the grant) and the lease as the server gave it:
/// a third of the lease after, at most [`MAX_RENEW_EVERY`]; after an
/// unanswered try, again in [`RETRY_RENEWAL`]. `None` for the lease: a slot
/// nobody can take over, looked at every [`UNLEASED_CHECK`].
pub(crate) fn next_renewal(lease: Option<Duration>, confirmed: Instant, failed: bool) -> Instant {
    let every = match lease {
        Some(lease) => (lease / 3).clamp(Duration::from_secs(1), MAX_RENEW_EVERY),
        None => UNLEASED_CHECK,
    };
    if failed {
        Instant::now() + RETRY_RENEWAL.min(every)
    } else {
        confirmed
            .checked_add(every)
            .unwrap_or(confirmed + MAX_RENEW_EVERY)
    }
}

/// The instant past which a slot whose renewals go unanswered counts as
/// lost: [`LEASE_MARGIN`] (or a third of a short lease) before its lease,
/// counted from the sending of the last confirmed renewal, runs out.
pub(crate) fn lost_after(lease: Option<Duration>, confirmed: Instant) -> Option<Instant> {
    // A lease too long to add to an instant (a server's u64::MAX seconds)
    // is never lost by waiting.
    lease.and_then(|lease| confirmed.checked_add(lease.saturating_sub(LEASE_MARGIN.min(lease / 3))))
}

/// How a run of the command ended.
enum Run {
    Exited(u8),
    /// The slot was lost; the command was stopped.
    Lost,
}

/// The command `lock` holds a slot for, and whether it sees the URL.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Job<'a> {
    pub(crate) command: &'a [String],
    pub(crate) keep_url: bool,
}

/// Runs `command` while the slot `checked` names is held, renews it, gives
/// it back at the end; the exit code to end with.
pub(crate) async fn hold(
    checked: &Checked,
    job: Job<'_>,
    lease: Option<Duration>,
    stop: impl std::future::Future<Output = ()>,
    say: &mut dyn FnMut(&str),
) -> u8 {
    let (id, group) = (checked.id.as_str(), checked.group.as_str());
    let mut child = match spawn(job) {
        Ok(child) => child,
        Err(err) => {
            say(&format!("cannot run {}: {err}", job.command[0]));
            give_back(checked, say).await;
            return 127;
        }
    };
    tokio::pin!(stop);
    let mut stopped = false;
    let mut confirmed = Instant::now();
    let mut failed = false;
    let group_id = child.id().and_then(|pid| i32::try_from(pid).ok());
    let run = loop {
        let next = next_renewal(lease, confirmed, failed);
        tokio::select! {
            status = child.wait() => break Run::Exited(exit_code(status)),
            () = &mut stop, if !stopped => {
                // Ctrl-C or SIGTERM: the command stops as this one would,
                // and the slot is given back once it has.
                stopped = true;
                say("stopping: the command hears SIGTERM, the slot is given back once it ends");
                terminate(&child);
            }
            () = tokio::time::sleep_until(next.into()) => {
                let sent = Instant::now();
                let answer = checked.lock.call(Call::PreReboot, id, group).await;
                match renewal_of(answer) {
                    Renewal::Held => {
                        confirmed = sent;
                        failed = false;
                    }
                    Renewal::Unknown(why) => {
                        failed = true;
                        if lost_after(lease, confirmed).is_some_and(|at| Instant::now() >= at) {
                            say(&format!(
                                "the slot of group '{group}' could not be renewed within its \
                                 lease ({why}): another node may take it, so the command is \
                                 stopped"
                            ));
                            stop_child(&mut child, say).await;
                            break Run::Lost;
                        }
                        say(&format!("could not renew the slot, asking again soon: {why}"));
                    }
                    Renewal::Lost(why) => {
                        say(&format!(
                            "the slot of group '{group}' held as {id} was lost ({why}): the \
                             command is stopped"
                        ));
                        stop_child(&mut child, say).await;
                        break Run::Lost;
                    }
                }
            }
        }
    };
    // What the command left running in its group ends before the slot is
    // given back.
    if let Some(group_id) = group_id {
        end_group(group_id, say).await;
    }
    give_back(checked, say).await;
    match run {
        Run::Exited(code) => code,
        Run::Lost => Ended::Lost.code(),
    }
}

/// Starts the job in a process group of its own, so that SIGTERM and
/// SIGKILL reach all of it, grandchildren included. The node's secret stays
/// out of its environment unless asked for.
fn spawn(job: Job<'_>) -> std::io::Result<tokio::process::Child> {
    let mut spawned = tokio::process::Command::new(&job.command[0]);
    spawned
        .args(&job.command[1..])
        .process_group(0)
        .kill_on_drop(true);
    if !job.keep_url {
        spawned.env_remove("FLEETLOCK_URL");
    }
    spawned.spawn()
}

/// The shell's exit code of a process: its own, or 128 and the signal.
fn exit_code(status: std::io::Result<std::process::ExitStatus>) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(status) => match (status.code(), status.signal()) {
            (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
            (None, Some(signal)) => u8::try_from((128 + signal) & 0xff).unwrap_or(1),
            (None, None) => 1,
        },
        Err(_) => 1,
    }
}

fn terminate(child: &tokio::process::Child) {
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        signal_group(pid, libc::SIGTERM);
    }
}

/// Sends `signal` to the process group `group_id` (the command's own);
/// false when no process of it is left.
fn signal_group(group_id: i32, signal: i32) -> bool {
    // SAFETY: kill(2) on the negative id of a process group this process
    // made for its command (process_group(0)), with a valid signal or 0.
    unsafe { libc::kill(-group_id, signal) == 0 }
}

/// Ends what is left of the command's process group once the command
/// itself has ended: SIGTERM, SIGKILL after [`KILL_AFTER`], and waits (at
/// most a few seconds more) for the group to be gone.
async fn end_group(group_id: i32, say: &mut dyn FnMut(&str)) {
    if !signal_group(group_id, 0) {
        return;
    }
    say("the command left processes running in its group: they hear SIGTERM");
    signal_group(group_id, libc::SIGTERM);
    let gone = |limit: Duration| async move {
        let until = Instant::now() + limit;
        while Instant::now() < until {
            if !signal_group(group_id, 0) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        !signal_group(group_id, 0)
    };
    if gone(KILL_AFTER).await {
        return;
    }
    say(&format!(
        "processes of the command's group did not end within {} s of SIGTERM: SIGKILL",
        KILL_AFTER.as_secs()
    ));
    signal_group(group_id, libc::SIGKILL);
    if !gone(Duration::from_secs(5)).await {
        say("processes of the command's group are still listed (not yet reaped by their parent)");
    }
}

/// SIGTERM, then SIGKILL after [`KILL_AFTER`].
async fn stop_child(child: &mut tokio::process::Child, say: &mut dyn FnMut(&str)) {
    terminate(child);
    if tokio::time::timeout(KILL_AFTER, child.wait())
        .await
        .is_err()
    {
        say(&format!(
            "the command did not end within {} s of SIGTERM: SIGKILL",
            KILL_AFTER.as_secs()
        ));
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            signal_group(pid, libc::SIGKILL);
        }
        let _ = child.kill().await;
    }
}

/// The steady-state at the end, tried a few times: a slot left held blocks
/// the group until someone gives it back.
async fn give_back(checked: &Checked, say: &mut dyn FnMut(&str)) {
    let (id, group) = (checked.id.as_str(), checked.group.as_str());
    let mut pause = Duration::from_secs(1);
    for tries in 1..=5 {
        match give_back_once(checked).await {
            Ok(()) => {
                say(&format!(
                    "gave back the slot of group '{group}' held by {id}"
                ));
                return;
            }
            Err(why) if tries == 5 => {
                say(&format!(
                    "could not give back the slot of group '{group}' held by {id} ({why}): \
                     run 'fleetlock unlock --group {group} --id {id}'"
                ));
                return;
            }
            Err(_) => {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yes(outcome: Option<&str>) -> Result<Reply, ClientError> {
        Ok(Reply::Yes {
            outcome: outcome.map(str::to_owned),
            lease: None,
        })
    }

    fn refused(kind: &str) -> Result<Reply, ClientError> {
        Ok(Reply::Refused {
            kind: kind.into(),
            value: format!("{kind} said"),
        })
    }

    #[test]
    fn a_renewal_is_held_only_when_the_slot_is_the_same_one() {
        assert_eq!(renewal_of(yes(Some("already_held"))), Renewal::Held);
        assert_eq!(renewal_of(yes(None)), Renewal::Held);
        assert!(matches!(renewal_of(yes(Some("granted"))), Renewal::Lost(_)));
        assert!(matches!(
            renewal_of(yes(Some("granted_expired"))),
            Renewal::Lost(_)
        ));
        assert_eq!(
            renewal_of(refused("slot_taken")),
            Renewal::Lost("slot_taken said".into())
        );
        assert!(matches!(
            renewal_of(refused("semaphore_full")),
            Renewal::Lost(_)
        ));
        assert!(matches!(
            renewal_of(refused("outside_maintenance_window")),
            Renewal::Unknown(_)
        ));
        assert!(matches!(
            renewal_of(refused("generic_http_429")),
            Renewal::Unknown(_)
        ));
        let unreachable = Err(ClientError::Unreachable("no route".into()));
        assert!(matches!(renewal_of(unreachable), Renewal::Unknown(_)));
        let rejected = Ok(Reply::Rejected {
            status: 401,
            kind: "unauthorized".into(),
            value: "no".into(),
        });
        assert!(matches!(renewal_of(rejected), Renewal::Unknown(_)));
    }

    #[test]
    fn renewals_come_well_inside_the_lease_and_a_silent_server_ends_it_in_time() {
        let start = Instant::now();
        let lease = Duration::from_secs(30 * 60);
        assert_eq!(
            next_renewal(Some(lease), start, false),
            start + MAX_RENEW_EVERY
        );
        let short = Duration::from_secs(3);
        assert_eq!(
            next_renewal(Some(short), start, false),
            start + Duration::from_secs(1)
        );
        assert_eq!(next_renewal(None, start, false), start + UNLEASED_CHECK);
        let retry = next_renewal(Some(lease), start, true);
        assert!(retry <= Instant::now() + RETRY_RENEWAL);
        // Lost a minute before the lease ends; a third before, for a short one.
        assert_eq!(
            lost_after(Some(lease), start),
            Some(start + lease - LEASE_MARGIN)
        );
        assert_eq!(
            lost_after(Some(short), start),
            Some(start + Duration::from_secs(2))
        );
        assert_eq!(lost_after(None, start), None);
    }

    #[test]
    fn a_lease_of_any_size_never_panics() {
        let now = Instant::now();
        let huge = Some(Duration::from_secs(u64::MAX));
        assert_eq!(lost_after(huge, now), None);
        assert!(next_renewal(huge, now, false) <= now + MAX_RENEW_EVERY);
        assert!(next_renewal(huge, now, true) <= Instant::now() + RETRY_RENEWAL);
    }
}
