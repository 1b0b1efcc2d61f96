//! Fuzz the route-header decoder (`mcast::wire::Route::decode`); the first
//! byte picks the route kind. Never a panic; an accepted route re-encodes to
//! the same bytes.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcast::wire::Route;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    if let Ok(r) = Route::decode(kind, body) {
        assert_eq!(r.kind_byte(), kind);
        let mut out = BytesMut::new();
        r.encode(&mut out);
        assert_eq!(&out[..], body);
    }
});
