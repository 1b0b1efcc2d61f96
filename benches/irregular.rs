//! Criterion benches for the irregular-network planners: fabric setup
//! (generation, up*/down* tables, Fig 18 strings) and one plan per scheme on
//! a 1024-node network (256 eight-port switches, 80% connectivity), plus the
//! per-hop switch decision for a tree worm.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcast_algorithms::irregular::{IrregularSpec, RouteHeader, Scheme, SplitMix64, SwitchNetwork};
use std::hint::black_box;

fn spec() -> IrregularSpec {
    "irregular:switches=256,ports=8,nodes=1024,connectivity=0.8,seed=1"
        .parse()
        .expect("valid spec")
}

fn bench_setup(c: &mut Criterion) {
    let s = spec();
    c.bench_function("irregular_fabric_setup_n1024", |b| {
        b.iter(|| SwitchNetwork::from_spec(black_box(&s)))
    });
}

fn bench_plans(c: &mut Criterion) {
    let f = SwitchNetwork::from_spec(&spec()).expect("generates");
    let mut rng = SplitMix64::new(9);
    let others: Vec<usize> = (1..1024).collect();
    let mut g = c.benchmark_group("irregular_plan_n1024");
    for d in [16usize, 1023] {
        let dests = rng.sample(&others, d);
        for scheme in Scheme::ALL {
            g.bench_with_input(BenchmarkId::new(scheme.name(), d), &dests, |b, dests| {
                b.iter(|| f.plan(scheme, black_box(0), dests))
            });
        }
    }
    g.finish();
    let plan = f.plan(Scheme::TreeWorm, 0, &others).expect("plans");
    let h: &RouteHeader = &plan.sends[0].header;
    let (sw, port) = f.topology().host_location(0).expect("node 0");
    c.bench_function("irregular_decide_bitstring_n1024", |b| {
        b.iter(|| f.decide(black_box(sw), port, h, 0))
    });
}

criterion_group!(benches, bench_setup, bench_plans);
criterion_main!(benches);
