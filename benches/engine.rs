//! Per-packet cost of the smart-NI engine and of the wire codec.

use bytes::{Bytes, BytesMut};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mcast::engine::{Action, NiEngine};
use mcast::wire::{Header, Kind, Member, Packet, Route};
use mcast::Forwarding;
use mcast_algorithms::Shape;

fn header(kind: Kind, pkt_count: u32, len: usize) -> Header {
    Header {
        kind,
        job: 1,
        comm: 0,
        seq: 0,
        source: 0,
        root: 0,
        msg_len: len as u64 * pkt_count as u64,
        offset: 0,
        pkt_idx: 0,
        pkt_count,
        payload_len: len as u32,
        route_kind: 0,
        route_len: 0,
    }
}

/// An intermediate NI receiving one packet and forwarding it to its children.
fn forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine_forward");
    let payload = Bytes::from(vec![7u8; 4096]);
    for (name, size, route) in [
        (
            "bcast_range_k3_3children",
            64usize,
            Route::Range {
                shape: Shape::KBinomial { k: 3 },
                size: 64,
                lo: 1,
                hi: 63,
            },
        ),
        (
            "multicast_list_32",
            64,
            Route::List {
                tree: mcast::algorithm::TreeKind::Chain(Shape::KBinomial { k: 2 }),
                covers: (1..33)
                    .map(|r| Member {
                        rank: r,
                        ordinal: 0,
                    })
                    .collect(),
            },
        ),
    ] {
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::from_parameter(name), |b| {
            let mut e = NiEngine::new(1, size, 1, Forwarding::Fpfs, 4096);
            let mut seq = 0u64;
            b.iter(|| {
                let mut h = header(
                    if matches!(route, Route::Range { .. }) {
                        Kind::Bcast
                    } else {
                        Kind::Multicast
                    },
                    1,
                    4096,
                );
                h.seq = seq;
                seq += 1;
                e.packet_in(
                    0,
                    Packet {
                        header: h,
                        route: route.clone(),
                        payload: payload.clone(),
                    },
                )
                .unwrap();
                let mut n = 0;
                while let Some(a) = e.poll_action() {
                    if let Action::Send { .. } = a {
                        n += 1;
                    }
                }
                n
            })
        });
    }
    g.finish();
}

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("wire");
    let p = Packet {
        header: header(Kind::Bcast, 1, 0),
        route: Route::Range {
            shape: Shape::KBinomial { k: 3 },
            size: 64,
            lo: 1,
            hi: 63,
        },
        payload: Bytes::new(),
    };
    let mut buf = BytesMut::new();
    g.bench_function("encode_head_range", |b| {
        b.iter(|| {
            buf.clear();
            p.encode_head(&mut buf);
            buf.len()
        })
    });
    let mut enc = BytesMut::new();
    p.encode_head(&mut enc);
    let enc = enc.freeze();
    g.bench_function("decode_range_packet", |b| {
        b.iter(|| Packet::decode(&enc).unwrap().header.seq)
    });
    g.finish();
}

criterion_group!(benches, forward, codec);
criterion_main!(benches);
