//! `windows`: when the maintenance windows next open and close, in UTC and
//! in the zone's time, from this shell's settings or a deployed function's.

use std::io::Write;

use clap::Args;

use crate::config::{self, ConfigError, process_env};
use crate::domain::input::GroupName;
use crate::domain::time::Timestamp;
use crate::domain::windows::{Calendar, Schedule};

use super::Failure;
use super::context::{command_aws, function_settings, group_named, shell_rules};
use super::usage::instant;

/// The next openings and closings of the maintenance windows (this shell's or
/// the deployed function's), in UTC and the zone's time, DST weeks included
#[derive(Args, Debug, PartialEq, Eq)]
pub(crate) struct Windows {
    /// Only this group's windows
    #[arg(long, value_name = "GROUP")]
    pub(crate) group: Option<String>,
    /// From this time (RFC 3339, e.g. 2026-03-28T00:00:00Z; default: now)
    #[arg(long, value_name = "TIME", value_parser = instant)]
    pub(crate) from: Option<Timestamp>,
    /// How many openings and closings per group (1 to 100)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=100))]
    pub(crate) next: u16,
    /// Read the windows from this deployed function's configuration
    #[arg(long, value_name = "NAME")]
    pub(crate) function: Option<String>,
}

impl Windows {
    pub(crate) async fn run(self, out: &mut impl Write) -> Result<(), Failure> {
        let group = self.group.as_deref().map(group_named).transpose()?;
        // AWS only for a deployed function's windows.
        let config = match config::deployed_function(process_env, self.function) {
            Some(function) => Some(function_settings(&command_aws().await?, &function).await?),
            None => shell_rules()?,
        };
        let Some(config) = config else {
            return Err(Failure::Config(ConfigError::Missing(
                "windows lists the windows of FLEETLOCK_WINDOWS (with FLEETLOCK_GROUPS and \
                 FLEETLOCK_TIME_ZONE) in this shell, or of a deployed function \
                 (--function NAME); neither is set"
                    .into(),
            )));
        };
        let group = match group {
            Some(group) => Some(windowed(&config, &group, out)?),
            None => None,
        };
        let from = self.from.unwrap_or_else(Timestamp::now);
        windows(
            &config.windows,
            group.as_ref(),
            from,
            usize::from(self.next),
            out,
        );
        Ok(())
    }
}

/// The group whose windows a named group's nodes keep: its own, or for a
/// zone's group its split group's (said in a line first). A group the
/// configuration does not serve has no windows to tell of: most likely a
/// typo, refused with the name its nodes' reading gives.
pub(crate) fn windowed(
    config: &crate::config::Config,
    group: &GroupName,
    out: &mut impl Write,
) -> Result<GroupName, Failure> {
    let refused = match config.groups.meaning(group) {
        Ok(meaning) if !meaning.is_zone_of(group) => return Ok(meaning.group),
        Ok(meaning) => {
            say!(
                out,
                "(group '{group}' is {}: its nodes keep the windows of '{}')",
                crate::domain::zones::zone_of(group, &meaning.group),
                meaning.group
            );
            return Ok(meaning.group);
        }
        Err(err) => err,
    };
    let closest = match &refused {
        crate::domain::error::Error::UnknownGroup {
            meant: Some(meant), ..
        } => format!(" (did you mean '{meant}'?)"),
        _ => String::new(),
    };
    let names: Vec<&str> = config.groups.listed().map(|(g, _)| g.as_str()).collect();
    Err(Failure::Refused(format!(
        "group '{group}' is not configured (configured: {}){closest}; its windows would be \
         nobody's",
        names.join(", ")
    )))
}

/// `windows`: for each group with windows (or only `group`), whether it is
/// open at `from` and its next `next` openings and closings, in UTC and in
/// the zone's time.
pub(crate) fn windows(
    schedule: &Schedule,
    group: Option<&GroupName>,
    from: Timestamp,
    next: usize,
    out: &mut impl Write,
) {
    let calendars: Vec<(String, &Calendar)> = match group {
        Some(group) => match schedule.calendar_for(group) {
            Some(calendar) => vec![(group.to_string(), calendar)],
            None => {
                say!(
                    out,
                    "group '{group}' has no maintenance windows: it may reboot at any time"
                );
                return;
            }
        },
        None => schedule
            .calendars()
            .map(|(name, calendar)| (name.map_or("*".into(), ToString::to_string), calendar))
            .collect(),
    };
    if calendars.is_empty() {
        say!(
            out,
            "no maintenance windows are configured: every group may reboot at any time"
        );
        return;
    }
    let zone = schedule.zone_name();
    let at = |t: Timestamp| {
        if schedule.is_utc() {
            t.to_rfc3339()
        } else {
            format!("{}  {}", t.to_rfc3339(), schedule.local_text(t))
        }
    };
    for (name, calendar) in calendars {
        let list: Vec<String> = calendar.windows().iter().map(ToString::to_string).collect();
        say!(out, "{name} ({zone}): {}", list.join("; "));
        let changes = schedule.changes(calendar, from, next);
        let open_now = changes.first().is_some_and(|(opens, _)| !opens);
        say!(
            out,
            "  {} at {}",
            if open_now { "open" } else { "closed" },
            at(from)
        );
        for (opens, when) in changes {
            say!(
                out,
                "  {}  {}",
                if opens { "opens " } else { "closes" },
                at(when)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::testing::{group, instant, printed};
    use crate::config::Config;

    /// Berlin's weeks of 2026's clock changes, against instants worked out by
    /// hand from the rules (CET is UTC+1, CEST UTC+2; the clocks go forward
    /// at 01:00Z on 29 March, back at 01:00Z on 25 October), not by the code.
    #[test]
    fn a_group_not_configured_is_refused_with_the_closest_name() {
        let config = Config::from_vars(|name| {
            (name == "FLEETLOCK_GROUPS").then(|| "default=1,workers=3".to_owned())
        })
        .unwrap();
        let err = windowed(&config, &group("wrokers"), &mut Vec::new()).unwrap_err();
        assert!(matches!(err, Failure::Refused(_)), "{err:?}");
        assert_eq!(
            err.to_string(),
            "group 'wrokers' is not configured (configured: default, workers) (did you mean \
             'workers'?); its windows would be nobody's"
        );
        assert_eq!(
            windowed(&config, &group("workers"), &mut Vec::new()).unwrap(),
            group("workers")
        );
        let wildcard = Config::from_vars(|name| {
            (name == "FLEETLOCK_GROUPS").then(|| "default=1,*=2".to_owned())
        })
        .unwrap();
        assert!(
            windowed(&wildcard, &group("anything"), &mut Vec::new()).is_ok(),
            "'*' covers it"
        );
    }

    #[test]
    fn a_zones_group_keeps_its_split_groups_windows() {
        let config = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3,*=1".into()),
            "FLEETLOCK_ZONES" => Some("workers".into()),
            "FLEETLOCK_WINDOWS" => {
                Some("workers: days=Sat start_time=02:00 length_minutes=240".into())
            }
            _ => None,
        })
        .unwrap();
        let mut said = Vec::new();
        let shown = windowed(&config, &group("workers.us-east-1a"), &mut said).unwrap();
        assert_eq!(shown, group("workers"));
        assert!(
            printed(said).contains("zone 'us-east-1a' of group 'workers'"),
            "the line says whose windows"
        );
        let twin = windowed(&config, &group("Workers.us-east-1a"), &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            twin.contains("did you mean 'workers.us-east-1a'?"),
            "{twin}"
        );
    }

    #[test]
    fn windows_open_and_close_as_the_zones_clock_says_across_both_changes() {
        let berlin = Config::from_vars(|name| match name {
            "FLEETLOCK_GROUPS" => Some("workers=3".into()),
            "FLEETLOCK_WINDOWS" => {
                Some("workers: days=Sat,Sun start_time=22:00 length_minutes=240".into())
            }
            "FLEETLOCK_TIME_ZONE" => Some("Europe/Berlin".into()),
            _ => None,
        })
        .unwrap();
        for (from, expected) in [
            (
                "2026-03-28T00:00:00Z",
                [
                    "  opens   2026-03-28T21:00:00Z  Sat 2026-03-28 22:00 Europe/Berlin",
                    // 02:00 never comes that night: the window ends at the jump.
                    "  closes  2026-03-29T01:00:00Z  Sun 2026-03-29 03:00 Europe/Berlin",
                    "  opens   2026-03-29T20:00:00Z  Sun 2026-03-29 22:00 Europe/Berlin",
                    "  closes  2026-03-30T00:00:00Z  Mon 2026-03-30 02:00 Europe/Berlin",
                ],
            ),
            (
                "2026-10-24T00:00:00Z",
                [
                    "  opens   2026-10-24T20:00:00Z  Sat 2026-10-24 22:00 Europe/Berlin",
                    // The first 02:00 closes it; the second does not reopen it.
                    "  closes  2026-10-25T00:00:00Z  Sun 2026-10-25 02:00 Europe/Berlin",
                    "  opens   2026-10-25T21:00:00Z  Sun 2026-10-25 22:00 Europe/Berlin",
                    "  closes  2026-10-26T01:00:00Z  Mon 2026-10-26 02:00 Europe/Berlin",
                ],
            ),
        ] {
            let mut out = Vec::new();
            windows(&berlin.windows, None, instant(from), 4, &mut out);
            let text = printed(out);
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(
                lines[0],
                "workers (Europe/Berlin): days=Sat,Sun start_time=22:00 length_minutes=240"
            );
            assert!(lines[1].starts_with("  closed at "), "{text}");
            assert_eq!(lines[2..], expected, "{text}");
        }
        let mut out = Vec::new();
        windows(
            &berlin.windows,
            Some(&group("db")),
            Timestamp(0),
            4,
            &mut out,
        );
        assert_eq!(
            printed(out),
            "group 'db' has no maintenance windows: it may reboot at any time\n"
        );
    }
}
