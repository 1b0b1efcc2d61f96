//! Fuzz the rank-to-rank control decoder (`mcast::control::Control::decode`):
//! never a panic, never an allocation beyond the input (postcard bounds every
//! length by the bytes present), and an accepted message round-trips. The
//! same bytes go through the fixed fingerprint decoder that heads a
//! collective's point-to-point messages (`Fingerprint::from_bytes`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast::control::{Control, Fingerprint};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Control::decode(data) {
        assert_eq!(Control::decode(&c.encode()).ok(), Some(c));
    }
    if let Some(fp) = Fingerprint::from_bytes(data) {
        assert_eq!(Fingerprint::from_bytes(&fp.to_bytes()), Some(fp));
    }
});
