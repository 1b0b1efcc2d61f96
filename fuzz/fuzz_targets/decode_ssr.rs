//! Fuzz `SsrHeader::decode`: it must never panic, and whatever it accepts must
//! re-encode to exactly the same bytes (the encoding is canonical).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast_algorithms::irregular::SsrHeader;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = SsrHeader::decode(data) {
        assert_eq!(h.encode(), data);
    }
});
