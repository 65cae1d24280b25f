//! Everything a caller controls, parsed: the body, the Authorization header,
//! and (for operators' typos) the two configuration strings. Nothing may
//! panic, and whatever parses must satisfy the validated types' promises.

#![no_main]

use fleetlock::auth::Clients;
use fleetlock::config::GroupSlots;
use fleetlock::input::{ClientParams, MAX_GROUP_CHARS, MAX_ID_BYTES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(params) = ClientParams::from_body(data) {
        let id = params.id.as_str();
        assert!(!id.is_empty() && id.len() <= MAX_ID_BYTES);
        assert!(!id.chars().any(char::is_control));
        let group = params.group.as_str();
        assert!(!group.is_empty() && group.chars().count() <= MAX_GROUP_CHARS);
        assert!(group.chars().all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'));
    }
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = GroupSlots::parse(text);
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
