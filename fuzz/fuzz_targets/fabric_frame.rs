//! Fuzz the fabric link's frame decoder (`mcast::fabric::Frame::decode`):
//! never a panic, and an accepted frame re-encodes to the same bytes.
#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mcast::fabric::Frame;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = Frame::decode(Bytes::copy_from_slice(data)) {
        // Postcard bodies (hello, welcome) may have more than one encoding
        // of the same value; everything else must round-trip byte for byte.
        if let Ok(b) = f.to_bytes() {
            if !matches!(f, Frame::Hello(_) | Frame::Welcome(_)) {
                assert_eq!(&b[4..], data);
            }
            // (Compared as bytes: a welcome's f64 may be NaN.)
            let again = Frame::decode(b.slice(4..)).map(|g| g.to_bytes().ok());
            assert_eq!(again.ok().flatten(), Some(b));
        }
    }
});
