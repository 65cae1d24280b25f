//! Everything a caller controls, parsed: the body, the Authorization header,
//! and (for operators' typos) the configuration strings: groups, settle times,
//! maintenance windows. Nothing may
//! panic, and whatever parses must satisfy the validated types' promises.

#![no_main]

use fleetlock::domain::auth::Clients;
use fleetlock::domain::groups::GroupSlots;
use fleetlock::domain::input::{ClientParams, IdRule, MAX_GROUP_CHARS, MAX_ID_BYTES, STORED_ID_BYTES};
use fleetlock::domain::time::Timestamp;
use fleetlock::domain::windows::{Schedule, WindowState};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A steady-state reads ids as they were stored: longer, never empty.
    if let Ok(params) = ClientParams::from_body(data, IdRule::Stored) {
        let id = params.id.as_str();
        assert!(!id.is_empty() && id.len() <= STORED_ID_BYTES);
    }
    if let Ok(params) = ClientParams::from_body(data, IdRule::New) {
        let id = params.id.as_str();
        assert!(!id.is_empty() && id.len() <= MAX_ID_BYTES);
        assert!(!id.chars().any(char::is_control));
        let group = params.group.as_str();
        assert!(!group.is_empty() && group.chars().count() <= MAX_GROUP_CHARS);
        assert!(group.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(groups) = GroupSlots::parse("default=1,*=1") {
            for variable in GroupSlots::setting_variables() {
                let _ = groups.clone().with_setting(variable, text);
            }
            let _ = groups.with_zones(text);
        }
        let _ = GroupSlots::parse(text);
        // Windows that parse must answer for any group at any time, and the
        // answer must agree with itself: open until a later time, or closed
        // until a later time.
        if let Ok(schedule) = Schedule::parse(text, None, |_| Ok(()), true) {
            let now = Timestamp(1_764_480_000_000 + u64::from(data[0]) * 3_600_000);
            let group = fleetlock::domain::input::GroupName::parse("default").unwrap();
            match schedule.state(&group, now) {
                WindowState::Open { until: Some(t) } | WindowState::Closed { opens: Some(t) } => {
                    assert!(t > now)
                }
                _ => {}
            }
        }
        if let Ok(clients) = Clients::parse(text) {
            // A list that parses must also answer any header without panicking.
            let _ = clients.authenticate(Some(data));
        }
    }
    // A fixed list of clients facing an arbitrary Authorization header.
    let clients = Clients::parse(
        "fleet:*:000102030405060708090a0b0c0d0e0f:\
         0000000000000000000000000000000000000000000000000000000000000000",
    )
    .unwrap();
    assert!(clients.authenticate(Some(data)).is_err());
});
