//! Fuzz the rank-to-rank control decoder (`mcast::control::Control::decode`):
//! never a panic, never an allocation beyond the input (postcard bounds every
//! length by the bytes present), and an accepted message round-trips.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast::control::Control;

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = Control::decode(data) {
        assert_eq!(Control::decode(&c.encode()).ok(), Some(c));
    }
});
