//! Fuzz `RouteHeader::decode` and the switch-side decisions: byte 0 picks the
//! input switch and port on the [Sivaram 1998, §5.3.2, Fig 17, derived] network, the rest is the header. Nothing
//! may panic; accepted headers re-encode to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast_algorithms::irregular::examples::paper_network;
use mcast_algorithms::irregular::RouteHeader;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, bytes)) = data.split_first() else {
        return;
    };
    if let Ok(h) = RouteHeader::decode(bytes) {
        assert_eq!(h.encode(), bytes);
        if let Ok(f) = paper_network(sel & 1 == 1) {
            let switch = (sel as usize >> 1) % 11;
            let port = (sel as usize >> 4) % 9;
            let _ = f.decide(switch, port, &h, sel as usize);
            let _ = f.trace((sel as usize) % 21, &h);
        }
    }
});
