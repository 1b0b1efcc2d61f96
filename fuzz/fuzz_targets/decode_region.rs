//! The MIN region header decoder never panics, and whatever it accepts
//! re-encodes to the same bytes. The first byte picks the stage count.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast_algorithms::min::RegionHeader;

fuzz_target!(|data: &[u8]| {
    if let Some((&n, rest)) = data.split_first() {
        if let Ok(h) = RegionHeader::decode(u32::from(n), rest) {
            assert_eq!(h.encode(), rest);
            assert!(h.min() <= h.max());
        }
    }
});
