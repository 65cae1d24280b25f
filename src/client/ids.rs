//! The ids a client sends: the one Zincati derives from the machine id, and
//! one of its own for each `fleetlock lock --app`, by systemd's rule for
//! app-specific ids.

use sha2::{Digest, Sha256};

/// Zincati's application id: a node's FleetLock id is the machine id made
/// app-specific with it (systemd's `sd_id128_get_machine_app_specific`).
pub const ZINCATI_APP_ID: [u8; 16] = [
    0xde, 0x35, 0x10, 0x6b, 0x6e, 0xc2, 0x46, 0x88, 0xb6, 0x3a, 0xfd, 0xda, 0xa1, 0x56, 0x67, 0x9b,
];

/// Why a text is no machine id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a machine id is 32 hexadecimal digits (see /etc/machine-id)")]
pub struct NotAMachineId;

/// A machine id (`/etc/machine-id`: 32 hex digits) as 16 bytes.
pub fn parse_machine_id(text: &str) -> Result<[u8; 16], NotAMachineId> {
    let text = text.trim();
    if text.len() != 32 || !text.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(NotAMachineId);
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| NotAMachineId)?;
    }
    Ok(id)
}

/// systemd's app-specific id: HMAC-SHA256 keyed by the machine id over the
/// application id, cut to 16 bytes, with the bits of a version 4 UUID set;
/// as 32 lower-case hex digits.
pub fn app_specific_id(machine_id: &[u8; 16], app_id: &[u8; 16]) -> String {
    let mac = hmac_sha256(machine_id, app_id);
    let mut id: [u8; 16] = mac[..16].try_into().expect("32 bytes");
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    id.iter().map(|b| format!("{b:02x}")).collect()
}

/// The id Zincati sends for this machine id.
pub fn zincati_id(machine_id: &[u8; 16]) -> String {
    app_specific_id(machine_id, &ZINCATI_APP_ID)
}

/// The id `fleetlock lock --app NAME` takes on this machine: app-specific
/// with an application id of its own for each NAME, so that it is never
/// Zincati's (whose pre-reboot would hear "already held" and reboot the
/// host in the middle of the job) nor another job's.
pub fn job_id(machine_id: &[u8; 16], app: &str) -> String {
    let digest = Sha256::digest(format!("fleetlock lock --app {app}").as_bytes());
    let app_id: [u8; 16] = digest[..16].try_into().expect("32 bytes");
    app_specific_id(machine_id, &app_id)
}

pub(super) fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut padded = [0u8; BLOCK];
    if key.len() > BLOCK {
        padded[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        padded[..key.len()].copy_from_slice(key);
    }
    let xored = |pad: u8| padded.map(|b| b ^ pad);
    let inner = Sha256::new()
        .chain_update(xored(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(xored(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}
