//! Fuzz whole-packet decoding (`mcast::wire::Packet::decode`, which runs the
//! header and route-header decoders): never a panic, and an accepted packet
//! re-encodes to the same header-and-route bytes.
#![no_main]

use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use mcast::wire::Packet;

fuzz_target!(|data: &[u8]| {
    let b = Bytes::copy_from_slice(data);
    if let Ok(p) = Packet::decode(&b) {
        let mut head = BytesMut::new();
        p.encode_head(&mut head);
        let n = head.len();
        assert_eq!(&head[..], &data[..n]);
        assert_eq!(&p.payload[..], &data[n..]);
    }
});
