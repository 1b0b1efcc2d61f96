//! Fuzz the data-plane header decoder (`mcast::wire::Header::decode`): never a
//! panic; whatever it accepts re-encodes to the same 64 bytes and keeps its payload inside the message.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcast::wire::{Header, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert!(h.offset + h.payload_len as u64 <= h.msg_len);
        let mut out = BytesMut::new();
        h.encode(&mut out);
        assert_eq!(out.len(), HEADER_LEN);
        assert_eq!(&out[..], &data[..HEADER_LEN]);
    }
});
