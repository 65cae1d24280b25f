//! The condition and update fragments each gate adds to the one write of a
//! grant: what a freed slot removes, what a grant checks besides room, the
//! drain gate's reservation, a split group's zone and a canary's wave. Each
//! fragment says the same as the gate's rule in `crate::domain::lock`, which
//! explains a refusal from the item the condition saw (the conformance test
//! holds the two to each other).

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;

use super::codec::number;
use super::{ROLLOUT_BEGAN_ATTRIBUTE, WAVE_GRANTS_ATTRIBUTE};
use crate::domain::canary::ROLLOUT_QUIET;
use crate::domain::lock::GroupRules;
use crate::domain::time::Timestamp;

/// What a write that frees a slot removes: the holder under either name,
/// and every mark of it (reservation, renewal, return, failed return).
pub(super) const FREED: &str = "#holder, #legacy, #drain, #renewed, #returning, #failed";

/// What a grant needs besides room, in the grant and in the take-over past
/// a lease alike: the asker holds nothing (under either name), no person's
/// pause, no alarm's, the asker not excluded, and the settle period over.
/// The settle period is over when the last release is at least `settle`
/// before now; the time is a value, never in the expression. With no settle
/// time this still refuses a request that arrived before the latest
/// release, so that its write, landing late, cannot give a slot back to a
/// node that has since released it.
pub(super) const GRANT_CHECKS: &str = "attribute_not_exists(#holder) AND attribute_not_exists(#legacy) \
     AND attribute_not_exists(#paused) AND attribute_not_exists(#alarms) \
     AND attribute_not_exists(#stopped) AND attribute_not_exists(#excluded) \
     AND (attribute_not_exists(#released) OR #released <= :settled)";

/// The part of a grant's `SET` that makes it a reservation, in a group with
/// a drain gate: the mark `d:<id>`, dated as the slot.
pub(super) fn reserves(rules: GroupRules) -> &'static str {
    if rules.drain.is_some() {
        "#drain = :now, "
    } else {
        ""
    }
}

/// In a group split by zone, what a grant adds to its `SET`: the asker's
/// zone group, recorded as the one out of service.
pub(super) const ZONE_SET: &str = "#zone = :zone, ";
/// And to its condition: no node holds a slot, or the zone group recorded
/// is the asker's. The rule of [`GroupRecord::decide_acquire`], in the one
/// write.
pub(super) const GRANT_ZONE_CHECK: &str =
    " AND (attribute_not_exists(#count) OR #count = :zero OR #zone = :zone)";
/// A take-over's: the holder it replaces is the only one, or the zone
/// group recorded is the asker's.
pub(super) const TAKE_OVER_ZONE_CHECK: &str = " AND (#count = :one OR #zone = :zone)";

/// Where the group is not split by zone (now), what a grant adds to its
/// `REMOVE`: the zone group recorded by an earlier grant, which no longer
/// tells whose nodes are out once this node (of a zone nobody knows) is
/// too. Zones switched on again then wait until every such slot is back.
pub(super) const ZONE_FORGOTTEN: &str = ", #zone";

/// The zone terms of a grant's `SET`, condition and `REMOVE`: the zone
/// group written and checked where the group is split by zone, removed
/// where it is not.
pub(super) fn zone_terms(
    rules: GroupRules,
    check: &'static str,
) -> (&'static str, &'static str, &'static str) {
    match rules.zone {
        Some(_) => (ZONE_SET, check, ""),
        None => ("", "", ZONE_FORGOTTEN),
    }
}

/// In a group with a canary, what a grant's write adds: to its `ADD`, the
/// rollout's grant counted; to its condition, the rule of
/// [`GroupRecord::decide_acquire`] in the one write: the rollout runs (a
/// node is out, or a slot came back or the rollout began within the bake
/// and the quiet time), and the grant is inside a wave, or it is a wave's
/// first and every node is back and the bake since the last one is over.
/// With `begins` (the second write of a pre-reboot whose first found the
/// rollout over), the rollout begins: its count is one, its start now,
/// only while no node is out and nothing came back within the quiet time.
pub(super) struct CanaryTerms {
    pub(super) set: &'static str,
    pub(super) add: &'static str,
    pub(super) check: String,
}

pub(super) fn canary_terms(
    request: UpdateItemFluentBuilder,
    rules: GroupRules,
    now: Timestamp,
    begins: bool,
) -> (UpdateItemFluentBuilder, Option<CanaryTerms>) {
    let Some(canary) = rules.canary else {
        return (request, None);
    };
    let quiet_since = now.minus(canary.bake + ROLLOUT_QUIET);
    let request = request
        .expression_attribute_names("#wave_grants", WAVE_GRANTS_ATTRIBUTE)
        .expression_attribute_names("#began", ROLLOUT_BEGAN_ATTRIBUTE)
        .expression_attribute_values(":zero", number(0))
        .expression_attribute_values(":quiet", number(quiet_since.0));
    const EMPTY: &str = "(attribute_not_exists(#count) OR #count = :zero)";
    if begins {
        return (
            request,
            Some(CanaryTerms {
                set: "#wave_grants = :one, #began = :now, ",
                add: "",
                check: format!(
                    " AND {EMPTY} AND (attribute_not_exists(#released) OR #released <= :quiet) \
                     AND (attribute_not_exists(#began) OR #began <= :quiet)"
                ),
            }),
        );
    }
    let mut request =
        request.expression_attribute_values(":baked", number(now.minus(canary.bake).0));
    let mut starts = Vec::new();
    for (index, start) in canary.wave_starts().enumerate() {
        starts.push(format!(":w{index}"));
        request = request.expression_attribute_values(format!(":w{index}"), number(start.into()));
    }
    let check = format!(
        " AND (#count > :zero OR #released > :quiet OR #began > :quiet) \
         AND ((attribute_exists(#wave_grants) AND NOT (#wave_grants IN ({}))) \
         OR ({EMPTY} AND (attribute_not_exists(#released) OR #released <= :baked)))",
        starts.join(", ")
    );
    (
        request,
        Some(CanaryTerms {
            set: "",
            add: ", #wave_grants :one",
            check,
        }),
    )
}
