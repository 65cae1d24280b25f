//! What the agent does next for one node, pure: from where the node's slot
//! stands in its group's record and what the cluster says of the node. The
//! Kubernetes adapter ([`super::cluster`]) carries each step out; a restart
//! starts again from the record and the node's own annotations, so nothing
//! is kept in the agent itself.

use crate::domain::time::Timestamp;

/// The annotation that marks a drain the agent began: the node's boot id
/// then, so that a new boot id says the node rebooted.
pub const DRAIN_BOOT_ID: &str = "fleetlock.io/drain-boot-id";
/// The annotation that marks a cordon the agent made ("true"): only such a
/// cordon is lifted when the node is back; a person's stays.
pub const CORDONED_BY_AGENT: &str = "fleetlock.io/cordoned-by-agent";
/// The annotation that names the group whose slot the drain was for.
pub const DRAIN_GROUP: &str = "fleetlock.io/drain-group";

/// Where a node's slot stands in its group's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// Reserved since then: the node waits for its drain (`FLEETLOCK_DRAIN`).
    Reserved(Timestamp),
    /// Granted: the node reboots at its next request.
    Held,
    /// Its steady-state came, and its return waits for a confirmation
    /// (`FLEETLOCK_RETURN`) since then.
    Returning(Timestamp),
    /// No slot: never asked, or given back.
    Free,
}

/// What the cluster says of a node, as the agent needs it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeView {
    pub name: String,
    /// `status.nodeInfo.bootID`.
    pub boot_id: String,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// `spec.unschedulable`.
    pub unschedulable: bool,
    /// [`DRAIN_BOOT_ID`], where the agent began a drain.
    pub drain_boot_id: Option<String>,
    /// [`DRAIN_GROUP`]: the group whose slot the drain was for.
    pub drain_group: Option<String>,
    /// [`CORDONED_BY_AGENT`] is "true".
    pub cordoned_by_agent: bool,
    /// Pods to evict before the node is drained (not of a DaemonSet, not
    /// mirror pods, not finished, not this agent's own), and whether any of
    /// them is already going away.
    pub evictable: Vec<PodRef>,
    /// This agent's own pod runs on the node: it is evicted last, once the
    /// drain is confirmed.
    pub runs_the_agent: bool,
}

/// A pod by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    /// Its deletion began (an eviction went through): the drain waits for
    /// it to go, without evicting it again.
    pub terminating: bool,
}

/// One step for one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Mark the drain begun (the boot id now), and cordon the node unless
    /// a person cordoned it already.
    BeginDrain { cordon: bool },
    /// Evict these pods through the Eviction API (a PodDisruptionBudget
    /// may refuse one: tried again at the next pass).
    Evict(Vec<PodRef>),
    /// Wait for the pods going away.
    WaitForPods(usize),
    /// Every pod that must go is gone: confirm the drain of the reservation
    /// made then, with the conditional write the hook and the CLI use.
    ConfirmDrained(Timestamp),
    /// The node rebooted and is Ready (or its slot went without a reboot):
    /// lift the agent's cordon (if it made one) and its marks.
    EndDrain { uncordon: bool },
    /// Confirm the return begun then: the node is back in service.
    ConfirmReturned(Timestamp),
    /// The agent's own pod runs on a node whose drain is confirmed: it goes
    /// last, to run again elsewhere.
    EvictSelf,
    /// Nothing to do now.
    Nothing,
}

/// The next step for a node whose slot stands at `slot`. Steps are tried
/// once a pass, each idempotent: a pass that fails half-way is taken again
/// from what the record and the node say at the next.
pub fn next_step(slot: Slot, node: &NodeView) -> Step {
    let draining = node.drain_boot_id.is_some();
    let rebooted = node
        .drain_boot_id
        .as_deref()
        .is_some_and(|boot| boot != node.boot_id);
    match slot {
        Slot::Reserved(_) if !draining => Step::BeginDrain {
            cordon: !node.unschedulable,
        },
        Slot::Reserved(since) => {
            let to_evict: Vec<PodRef> = node
                .evictable
                .iter()
                .filter(|pod| !pod.terminating)
                .cloned()
                .collect();
            if !to_evict.is_empty() {
                Step::Evict(to_evict)
            } else if !node.evictable.is_empty() {
                Step::WaitForPods(node.evictable.len())
            } else {
                Step::ConfirmDrained(since)
            }
        }
        // Granted: the node reboots; the agent's own pod goes first.
        Slot::Held if draining && !rebooted && node.runs_the_agent => Step::EvictSelf,
        Slot::Held => Step::Nothing,
        // Back once it booted again and is Ready; a node the agent did not
        // drain is back once Ready and schedulable.
        Slot::Returning(since) => {
            if draining && !(rebooted && node.ready) {
                Step::Nothing
            } else if draining {
                Step::EndDrain {
                    uncordon: node.cordoned_by_agent,
                }
            } else if node.ready && !node.unschedulable {
                Step::ConfirmReturned(since)
            } else {
                Step::Nothing
            }
        }
        // The slot is gone: after a reboot, or without one (released by a
        // person, or a reservation that ended): the drain ends once the
        // node is Ready.
        Slot::Free if draining && node.ready => Step::EndDrain {
            uncordon: node.cordoned_by_agent,
        },
        Slot::Free => Step::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SINCE: Timestamp = Timestamp(1_764_480_000_000);

    fn pod(name: &str) -> PodRef {
        PodRef {
            namespace: "default".into(),
            name: name.into(),
            terminating: false,
        }
    }

    fn node() -> NodeView {
        NodeView {
            name: "ip-10-0-0-1".into(),
            boot_id: "boot-1".into(),
            ready: true,
            ..NodeView::default()
        }
    }

    #[test]
    fn a_reservation_is_cordoned_drained_then_confirmed() {
        let mut view = node();
        assert_eq!(
            next_step(Slot::Reserved(SINCE), &view),
            Step::BeginDrain { cordon: true }
        );
        view.drain_boot_id = Some("boot-1".into());
        view.cordoned_by_agent = true;
        view.unschedulable = true;
        view.evictable = vec![pod("web-1"), pod("web-2")];
        assert_eq!(
            next_step(Slot::Reserved(SINCE), &view),
            Step::Evict(vec![pod("web-1"), pod("web-2")])
        );
        view.evictable = vec![PodRef {
            terminating: true,
            ..pod("web-2")
        }];
        assert_eq!(
            next_step(Slot::Reserved(SINCE), &view),
            Step::WaitForPods(1)
        );
        view.evictable.clear();
        assert_eq!(
            next_step(Slot::Reserved(SINCE), &view),
            Step::ConfirmDrained(SINCE)
        );
    }

    #[test]
    fn a_node_a_person_cordoned_is_drained_but_never_uncordoned() {
        let mut view = NodeView {
            unschedulable: true,
            ..node()
        };
        assert_eq!(
            next_step(Slot::Reserved(SINCE), &view),
            Step::BeginDrain { cordon: false }
        );
        view.drain_boot_id = Some("boot-1".into());
        view.boot_id = "boot-2".into();
        assert_eq!(
            next_step(Slot::Free, &view),
            Step::EndDrain { uncordon: false }
        );
    }

    #[test]
    fn the_agent_goes_last_and_the_node_is_back_after_a_new_boot() {
        let drained = NodeView {
            drain_boot_id: Some("boot-1".into()),
            cordoned_by_agent: true,
            unschedulable: true,
            runs_the_agent: true,
            ..node()
        };
        assert_eq!(next_step(Slot::Held, &drained), Step::EvictSelf);
        let rebooting = NodeView {
            runs_the_agent: false,
            ready: false,
            boot_id: "boot-2".into(),
            ..drained.clone()
        };
        assert_eq!(next_step(Slot::Returning(SINCE), &rebooting), Step::Nothing);
        let back = NodeView {
            ready: true,
            ..rebooting.clone()
        };
        assert_eq!(
            next_step(Slot::Returning(SINCE), &back),
            Step::EndDrain { uncordon: true }
        );
        // Uncordoned and its marks gone: its return is confirmed.
        let schedulable = NodeView {
            drain_boot_id: None,
            cordoned_by_agent: false,
            unschedulable: false,
            ..back
        };
        assert_eq!(
            next_step(Slot::Returning(SINCE), &schedulable),
            Step::ConfirmReturned(SINCE)
        );
    }

    #[test]
    fn a_node_that_never_comes_back_keeps_its_cordon_and_its_slot() {
        let gone = NodeView {
            drain_boot_id: Some("boot-1".into()),
            cordoned_by_agent: true,
            unschedulable: true,
            ready: false,
            ..node()
        };
        assert_eq!(next_step(Slot::Held, &gone), Step::Nothing);
        assert_eq!(next_step(Slot::Returning(SINCE), &gone), Step::Nothing);
        // Back on the same boot (no reboot) while its return waits: not
        // yet back from an update.
        let same_boot = NodeView {
            ready: true,
            ..gone
        };
        assert_eq!(next_step(Slot::Returning(SINCE), &same_boot), Step::Nothing);
    }
}
