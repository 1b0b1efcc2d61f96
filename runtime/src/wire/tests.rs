//! Round trips and malformed input.

use bytes::{Bytes, BytesMut};
use mcast_algorithms::Shape;

use super::*;
use crate::tree_kind::{TopoTree, TreeKind};

fn sample(route: Route, payload: &'static [u8]) -> Packet {
    Packet {
        header: Header {
            kind: Kind::Multicast,
            job: 7,
            comm: 0,
            seq: 99,
            source: 3,
            root: 1,
            msg_len: 100,
            offset: 10,
            pkt_idx: 1,
            pkt_count: 4,
            payload_len: 0,
            route_kind: 0,
            route_len: 0,
        },
        route,
        payload: Bytes::from_static(payload),
    }
}

#[test]
fn shared_memory_descriptors_round_trip_and_are_flagged() {
    let p = sample(Route::None, &[0u8; 40]);
    let d = ShmDesc {
        owner: 2,
        len: 40,
        slot: 4096,
        data: 4160,
    };
    let mut out = BytesMut::new();
    p.encode_head_shm(&mut out, &d);
    assert_eq!(out.len(), HEADER_LEN + ShmDesc::LEN);
    assert_eq!(out[7], FLAG_SHM);
    // The plain decoder refuses the flag; the flag-aware one takes it.
    assert!(Header::decode(&out).is_err());
    let (h, flags) = Header::decode_flagged(&out).unwrap();
    assert_eq!((flags, h.payload_len as usize), (FLAG_SHM, ShmDesc::LEN));
    assert_eq!(h.seq, 99);
    assert_eq!(ShmDesc::decode(&out[HEADER_LEN..]).unwrap(), d);
    assert!(ShmDesc::decode(&out[HEADER_LEN + 1..]).is_err());
    let huge = ShmDesc { len: u32::MAX, ..d };
    assert!(ShmDesc::decode(&huge.encode()).is_err());
    // Any other flag value is refused by both.
    out[7] = 2;
    assert!(Header::decode_flagged(&out).is_err());
}

fn round_trip(p: &Packet) -> Packet {
    let mut out = BytesMut::new();
    p.encode_head(&mut out);
    out.extend_from_slice(&p.payload);
    Packet::decode(&out.freeze()).unwrap()
}

#[test]
fn packets_round_trip() {
    for route in [
        Route::None,
        Route::Range {
            shape: Shape::KBinomial { k: 3 },
            size: 8,
            lo: 4,
            hi: 7,
        },
        Route::List {
            tree: TreeKind::Topo(TopoTree::WSort),
            covers: vec![
                Member {
                    rank: 5,
                    ordinal: 0,
                },
                Member {
                    rank: 2,
                    ordinal: 9,
                },
            ],
        },
    ] {
        let p = sample(route, b"hello");
        let q = round_trip(&p);
        assert_eq!(q.route, p.route);
        assert_eq!(q.payload, p.payload);
        assert_eq!(q.header.seq, 99);
        assert_eq!(q.header.payload_len, 5);
    }
}

#[test]
fn malformed_is_an_error() {
    let p = sample(Route::None, b"x");
    let mut out = BytesMut::new();
    p.encode_head(&mut out);
    out.extend_from_slice(&p.payload);
    let good = out.freeze();
    // Every truncation is an error, never a panic.
    for n in 0..good.len() {
        assert!(Packet::decode(&good.slice(..n)).is_err(), "len {n}");
    }
    let mut bad = good.to_vec();
    bad[0] = b'X';
    assert!(matches!(Header::decode(&bad), Err(WireError::BadMagic(_))));
    let mut bad = good.to_vec();
    bad[4] = 9;
    assert!(matches!(Header::decode(&bad), Err(WireError::Version(9))));
    let mut bad = good.to_vec();
    bad[48] = 4; // pkt_idx 4 of 4
    assert!(Header::decode(&bad).is_err());
    // Range with lo > hi, list with a wrong count, k = 0.
    assert!(Route::decode(1, &[1, 0, 2, 0, 8, 0, 0, 0, 5, 0, 0, 0, 4, 0, 0, 0]).is_err());
    assert!(Route::decode(2, &[0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(Route::decode(2, &[1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(Route::decode(2, &[0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]).is_err());
    // Reserved bytes and meaningless k values are refused, so each
    // accepted header has one encoding (found by the wire_packet fuzzer:
    // a range route with its reserved byte set re-encoded differently).
    let mut bad = good.to_vec();
    bad[7] = 1;
    assert!(Header::decode(&bad).is_err());
    assert!(Route::decode(1, &[1, 0xff, 2, 0, 8, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]).is_err());
    assert!(Route::decode(1, &[0, 0, 2, 0, 8, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]).is_err());
    assert!(Route::decode(2, &[2, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(Route::decode(2, &[2, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(Route::decode(1, &[1, 0, 2, 0, 8, 0, 0, 0, 3, 0, 0, 0, 5, 0, 0, 0]).is_ok());
}

proptest::proptest! {
    #[test]
    fn decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
        let _ = Packet::decode(&Bytes::from(bytes.clone()));
        for kind in 0..4u8 {
            let _ = Route::decode(kind, &bytes);
        }
    }
}

#[test]
fn the_comm_field_is_the_high_bits_of_seq() {
    // A sub-communicator's numbers carry its id; the header says so.
    let seq = comm_base(5) | 42;
    let h = Header::new(Kind::P2p, 1, seq, 0, 0, 0);
    assert_eq!((h.comm, comm_of(h.seq)), (5, 5));
    let mut out = BytesMut::new();
    h.encode(&mut out);
    assert_eq!(Header::decode(&out).unwrap(), h);
    // A header whose comm disagrees with its seq is refused.
    out[12] = 6;
    let err = Header::decode(&out).unwrap_err().to_string();
    assert!(err.contains("communicator 6"), "{err}");
    assert_eq!(comm_of(41), 0);
}
