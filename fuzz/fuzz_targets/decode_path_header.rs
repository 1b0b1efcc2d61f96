//! Fuzz the path-worm header decoders (`mcast_algorithms::path::header`):
//! they must never panic, and whatever they accept must re-encode to exactly
//! the bytes they consumed (both encodings are canonical).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcast_algorithms::path::header::{
    decode_compound, decode_simple, encode_compound, encode_simple,
};

fuzz_target!(|data: &[u8]| {
    let nodes = 1 << 20;
    if let Ok((dests, used)) = decode_simple(data, nodes) {
        assert_eq!(encode_simple(&dests).unwrap(), &data[..used]);
    }
    if let Ok((entries, used)) = decode_compound(data, nodes) {
        assert_eq!(encode_compound(&entries).unwrap(), &data[..used]);
    }
});
