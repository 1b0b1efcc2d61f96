//! Fuzz the data-plane header decoders (`mcast::wire::Header::decode` and
//! `decode_flagged`): never a panic; whatever they accept re-encodes to the
//! same 64 bytes and keeps its payload inside the message; a shared-memory
//! header carries exactly a descriptor.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcast::wire::{Header, ShmDesc, FLAG_SHM, HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = Header::decode(data) {
        assert!(h.offset + h.payload_len as u64 <= h.msg_len);
        let mut out = BytesMut::new();
        h.encode(&mut out);
        assert_eq!(out.len(), HEADER_LEN);
        assert_eq!(&out[..], &data[..HEADER_LEN]);
    }
    if let Ok((h, flags)) = Header::decode_flagged(data) {
        let mut out = BytesMut::new();
        h.encode(&mut out);
        out[7] = flags;
        assert_eq!(&out[..], &data[..HEADER_LEN]);
        if flags == FLAG_SHM {
            assert_eq!(h.payload_len as usize, ShmDesc::LEN);
        } else {
            assert_eq!(flags, 0);
        }
    }
    if data.len() == ShmDesc::LEN {
        if let Ok(d) = ShmDesc::decode(data) {
            assert_eq!(&d.encode()[..], data);
        }
    }
});
