//! Criterion benches comparing the topology-aware planners: whole plans at
//! 4096 nodes (64×64 and 16×16×16 tori, a 12-cube), a 512-member multicast,
//! and the contention oracles. Target (issue 3): a 4096-node U-torus plan in
//! well under a millisecond.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcast_algorithms::contention::analyze;
use mcast_algorithms::topo::{Links, Resolution};
use mcast_algorithms::trees::{plan, MuPartition, Options, PortModel, TreeAlgorithm};
use mcast_algorithms::Topology;
use std::hint::black_box;

/// A deterministic pseudo-random subset of `0..nodes` without `source`.
fn subset(nodes: usize, source: usize, count: usize) -> Vec<usize> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut v: Vec<usize> = (0..nodes).filter(|&n| n != source).collect();
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v.truncate(count);
    v
}

fn bench_tori(c: &mut Criterion) {
    let mut g = c.group_for("torus_broadcast_4096");
    for (name, t) in [
        (
            "64x64",
            Topology::torus(&[64, 64], Links::Bidirectional).unwrap(),
        ),
        (
            "16x16x16",
            Topology::torus(&[16, 16, 16], Links::Unidirectional).unwrap(),
        ),
    ] {
        let src = 1234;
        let dests = subset(t.nodes(), src, t.nodes() - 1);
        for algo in [
            TreeAlgorithm::UTorus,
            TreeAlgorithm::SeparateAddressing,
            TreeAlgorithm::DimensionOrderedChain,
            TreeAlgorithm::KBinomial { k: None },
            TreeAlgorithm::MdTorus,
            TreeAlgorithm::MuTorus {
                r: 8,
                partition: MuPartition::Count,
            },
        ] {
            g.bench_with_input(BenchmarkId::new(algo.to_string(), name), &dests, |b, d| {
                b.iter(|| plan(&t, algo, black_box(src), black_box(d), Options::default()))
            });
        }
    }
    g.finish();

    let t = Topology::torus(&[64, 64], Links::Bidirectional).unwrap();
    let dests = subset(t.nodes(), 77, 511);
    c.bench_function("utorus_64x64_m512", |b| {
        b.iter(|| {
            plan(
                &t,
                TreeAlgorithm::UTorus,
                black_box(77),
                black_box(&dests),
                Options::default(),
            )
        })
    });
}

fn bench_cube(c: &mut Criterion) {
    let t = Topology::hypercube(12, Resolution::HighToLow).unwrap();
    let mut g = c.group_for("hypercube12");
    for (label, count) in [("broadcast", 4095), ("m512", 512)] {
        let dests = subset(t.nodes(), 0, count);
        for algo in [
            TreeAlgorithm::UCube,
            TreeAlgorithm::Maxport,
            TreeAlgorithm::Combine,
            TreeAlgorithm::WSort,
        ] {
            g.bench_with_input(BenchmarkId::new(algo.to_string(), label), &dests, |b, d| {
                b.iter(|| {
                    plan(
                        &t,
                        algo,
                        0,
                        black_box(d),
                        Options::with_port_model(PortModel::ALL_PORT),
                    )
                })
            });
        }
    }
    g.finish();
}

fn bench_oracles(c: &mut Criterion) {
    let t = Topology::torus(&[16, 16], Links::Unidirectional).unwrap();
    let dests = subset(t.nodes(), 3, 255);
    let m = plan(&t, TreeAlgorithm::UTorus, 3, &dests, Options::default()).unwrap();
    c.bench_function("analyze_utorus_16x16_broadcast", |b| {
        b.iter(|| analyze(&t, black_box(&m)))
    });
}

trait GroupFor {
    fn group_for(
        &mut self,
        name: &str,
    ) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>;
}

impl GroupFor for Criterion {
    fn group_for(
        &mut self,
        name: &str,
    ) -> criterion::BenchmarkGroup<'_, criterion::measurement::WallTime> {
        self.benchmark_group(name)
    }
}

criterion_group!(benches, bench_tori, bench_cube, bench_oracles);
criterion_main!(benches);
