//! Groups and credentials read against each other. `FLEETLOCK_GROUPS` and
//! `FLEETLOCK_CLIENTS` are written apart, and a name spelt one way in one
//! and another way in the other is no error of either alone: the nodes of
//! that group then hear 403 at every try, and no alarm sees it. Pure, so
//! `config check`, the deploy's check and the function at start say it in
//! the same words.

use crate::domain::auth::{Clients, Scope};
use crate::domain::groups::GroupSlots;
use crate::domain::input::GroupName;
use crate::domain::meaning::Meant;
use crate::domain::names::one_typo_apart;

/// The group `fleetlock check`, the smoke test, asks in by default.
pub(crate) const CHECK_GROUP: &str = "fleetlock-check";

/// One mismatch between the groups and the credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// One typo from a name on the other side: refused by the checks that
    /// run before a deploy, since it is never meant.
    pub(crate) typo: bool,
    /// What is wrong, what the nodes hear, and the closest name.
    pub(crate) text: String,
}

/// The texts of `found`, split as the checks before a deploy treat them:
/// the typos, which they refuse, and the rest, which they warn of.
pub(crate) fn typos_and_warnings(found: Vec<Mismatch>) -> (Vec<String>, Vec<String>) {
    let (typos, warnings): (Vec<_>, Vec<_>) = found.into_iter().partition(|m| m.typo);
    let texts = |list: Vec<Mismatch>| list.into_iter().map(|m| m.text).collect();
    (texts(typos), texts(warnings))
}

/// Every mismatch of `clients` against `groups`: a credential's group that
/// no setting serves, and a configured group no credential reaches, with
/// the closest name on the other side. A pair one typo apart is told once,
/// from the credential's side.
pub(crate) fn mismatches(groups: &GroupSlots, clients: &Clients) -> Vec<Mismatch> {
    let configured: Vec<&GroupName> = groups.listed().map(|(group, _)| group).collect();
    let scoped: Vec<(&str, &GroupName)> = clients
        .scopes()
        .filter_map(|(name, scope)| match scope {
            Scope::AllGroups => None,
            Scope::Groups(set) => Some(set.iter().map(move |group| (name, group))),
        })
        .flatten()
        .collect();
    let mut found = Vec::new();
    let mut told = Vec::new();
    // A zone's group (`workers.us-east-1a`) is served by, and reaches, its
    // split group.
    for (client, group) in &scoped {
        if groups.slots_for(group).is_ok() || groups.zone_parent(group).is_some() {
            continue;
        }
        // The name its nodes' reading gives (a zone's case twin, a zone
        // written with '-'), else a configured name one typo away.
        let meant = match groups.meaning(group) {
            Err(crate::domain::error::Error::UnknownGroup {
                meant: Some(meant @ (Meant::Case(_) | Meant::Separator(_))),
                ..
            }) => Some(meant.to_string()),
            _ => None,
        };
        let twin = configured
            .iter()
            .find(|configured| one_typo_apart(configured.as_str(), group.as_str()));
        if let Some(twin) = twin {
            told.push(twin.as_str());
        }
        let closest = meant
            .clone()
            .or_else(|| twin.map(|twin| twin.to_string()))
            .map_or(String::new(), |name| format!(" (did you mean '{name}'?)"));
        let twin = twin.map(|_| ()).or(meant.map(|_| ()));
        found.push(Mismatch {
            typo: twin.is_some(),
            text: format!(
                "credential '{client}' (FLEETLOCK_CLIENTS) names group '{group}', which \
                 FLEETLOCK_GROUPS does not configure{closest}: its nodes would hear 403 \
                 unknown_group at every try"
            ),
        });
    }
    let reaches_all = clients
        .scopes()
        .any(|(_, scope)| matches!(scope, Scope::AllGroups));
    if reaches_all {
        return found;
    }
    for group in configured {
        let reached = scoped.iter().any(|(_, scoped)| {
            *scoped == group || groups.zone_parent(scoped).as_ref() == Some(group)
        });
        if reached || told.contains(&group.as_str()) {
            continue;
        }
        let twin = scoped
            .iter()
            .find(|(_, scoped)| one_typo_apart(scoped.as_str(), group.as_str()));
        let closest = twin.map_or(String::new(), |(client, twin)| {
            format!(" (did you mean '{twin}' of credential '{client}'?)")
        });
        let text = if group.as_str() == CHECK_GROUP && twin.is_none() {
            format!(
                "group '{CHECK_GROUP}' is configured, but no credential of \
                 FLEETLOCK_CLIENTS reaches it: `fleetlock check` (the smoke test) would hear \
                 401 or 403; make one with `fleetlock credential --name check --groups \
                 {CHECK_GROUP}`"
            )
        } else {
            format!(
                "group '{group}' (FLEETLOCK_GROUPS) is reached by no credential of \
                 FLEETLOCK_CLIENTS{closest}: its nodes would hear 403 forbidden_group at every \
                 try"
            )
        };
        found.push(Mismatch {
            typo: twin.is_some(),
            text,
        });
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::auth::entry_for;

    fn clients(entries: &[(&str, &str)]) -> Clients {
        let list: Vec<String> = entries
            .iter()
            .map(|(name, groups)| entry_for(name, groups, "secret").unwrap())
            .collect();
        Clients::parse(&list.join(" ")).unwrap()
    }

    fn said(groups: &str, entries: &[(&str, &str)]) -> Vec<Mismatch> {
        mismatches(&GroupSlots::parse(groups).unwrap(), &clients(entries))
    }

    #[test]
    fn a_zones_group_is_served_by_its_split_group_and_reaches_it() {
        let split = GroupSlots::parse("workers=3")
            .unwrap()
            .with_zones("workers")
            .unwrap();
        let zone_only = clients(&[("a", "workers.us-east-1a")]);
        assert_eq!(mismatches(&split, &zone_only), vec![]);
        // Unsplit, the same credential names a group nothing serves, and
        // nothing reaches `workers`.
        let plain = GroupSlots::parse("workers=3").unwrap();
        assert_eq!(mismatches(&plain, &zone_only).len(), 2);
        // A zone's name as its nodes would not ask: the typo is refused
        // before a deploy, naming the zone group its nodes ask with.
        for scoped in ["Workers.us-east-1a", "workers-us-east-1a"] {
            let found = mismatches(&split, &clients(&[("a", scoped)]));
            assert!(found[0].typo, "{scoped}: {found:?}");
            assert!(
                found[0]
                    .text
                    .contains("(did you mean 'workers.us-east-1a'?)"),
                "{}",
                found[0].text
            );
        }
    }

    #[test]
    fn a_typo_on_either_side_is_one_typo_named_with_the_closest_name() {
        let groups_typo = said(
            "default=1,wrokers=3,fleetlock-check=2",
            &[("fleet", "default,workers"), ("check", "fleetlock-check")],
        );
        assert_eq!(groups_typo.len(), 1, "{groups_typo:?}");
        assert!(groups_typo[0].typo);
        assert!(
            groups_typo[0]
                .text
                .contains("names group 'workers', which FLEETLOCK_GROUPS does not configure (did you mean 'wrokers'?)"),
            "{}",
            groups_typo[0].text
        );
        let credential_typo = said(
            "default=1,workers=3,fleetlock-check=2",
            &[("fleet", "default,wrokers"), ("check", "fleetlock-check")],
        );
        assert_eq!(credential_typo.len(), 1, "{credential_typo:?}");
        assert!(credential_typo[0].typo);
        assert!(
            credential_typo[0]
                .text
                .contains("(did you mean 'workers'?)"),
            "{}",
            credential_typo[0].text
        );
    }

    #[test]
    fn names_far_apart_are_warnings_and_the_smoke_tests_group_is_named() {
        let found = said(
            "default=1,db=1,fleetlock-check=2",
            &[("fleet", "default,frontend")],
        );
        let texts: Vec<&str> = found.iter().map(|m| m.text.as_str()).collect();
        assert!(found.iter().all(|m| !m.typo), "{found:?}");
        assert_eq!(found.len(), 3, "{texts:?}");
        assert!(texts[0].contains("group 'frontend'"), "{texts:?}");
        assert!(texts[1].contains("group 'db' (FLEETLOCK_GROUPS) is reached by no credential"));
        assert!(texts[2].contains("--name check --groups fleetlock-check"));
    }

    #[test]
    fn a_star_on_either_side_serves_or_reaches_every_group() {
        // '*' in the groups serves a credential's every group...
        assert_eq!(said("default=1,*=1", &[("fleet", "default,batch")]), []);
        // ...and a '*' credential reaches every configured group.
        assert_eq!(
            said("default=1,workers=3,fleetlock-check=2", &[("ops", "*")]),
            []
        );
        // A case twin of a listed group is never served by '*'.
        let twin = said("workers=3,*=1", &[("fleet", "Workers")]);
        assert_eq!(twin.len(), 1, "{twin:?}");
        assert!(twin[0].typo);
        assert_eq!(
            said("default=1,workers=3", &[("fleet", "default,workers")]),
            [],
            "all agree"
        );
    }
}
