//! Criterion benches for the k-binomial planners: the per-packet `split` an NI
//! evaluates, whole-tree and whole-plan construction at n = 1024, the
//! unit-step model, and the optimal-k search of Theorem 3.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use mcast_algorithms::{optimal_k, simulate, split, ChainTree, Forwarding, Plan, Shape};
use std::hint::black_box;

const N: usize = 1024;

fn bench_split(c: &mut Criterion) {
    let mut g = c.benchmark_group("split");
    for k in [1usize, 2, 4, 10] {
        g.bench_with_input(BenchmarkId::new("root_n1024", k), &k, |b, &k| {
            b.iter(|| split(Shape::KBinomial { k }, black_box(0), black_box(N - 1)))
        });
    }
    g.bench_function("flat_n1024", |b| {
        b.iter(|| split(Shape::Flat, black_box(0), black_box(N - 1)))
    });
    g.finish();
}

fn bench_tree(c: &mut Criterion) {
    let mut g = c.benchmark_group("tree_build_n1024");
    for k in [1usize, 2, 4, 10] {
        g.bench_with_input(BenchmarkId::new("kbinomial", k), &k, |b, &k| {
            b.iter(|| ChainTree::new(Shape::KBinomial { k }, black_box(N)))
        });
    }
    g.bench_function("flat", |b| {
        b.iter(|| ChainTree::new(Shape::Flat, black_box(N)))
    });
    g.finish();

    let chain: Vec<usize> = (0..N).map(|i| (i * 7919) % 100_003).collect();
    c.bench_function("plan_from_chain_n1024_k2", |b| {
        b.iter(|| Plan::from_chain(black_box(&chain), Shape::KBinomial { k: 2 }))
    });

    let tree = ChainTree::new(Shape::KBinomial { k: 2 }, N).unwrap();
    c.bench_function("unitstep_fpfs_n1024_k2_m8", |b| {
        b.iter(|| simulate(black_box(&tree), 8, Forwarding::Fpfs))
    });
}

fn bench_optimal_k(c: &mut Criterion) {
    let mut g = c.benchmark_group("optimal_k");
    for (n, m) in [(16usize, 4usize), (1024, 8), (1 << 20, 64)] {
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("n{n}_m{m}")),
            &(n, m),
            |b, &(n, m)| b.iter(|| optimal_k(black_box(n), black_box(m))),
        );
    }
    g.finish();
}

criterion_group!(benches, bench_split, bench_tree, bench_optimal_k);
criterion_main!(benches);
