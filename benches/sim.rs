//! The discrete-event simulator's rate, in packet-hops per second
//! (criterion reports "elements/s" = packet-hops/s).
//!
//! * `load/torus8x8/uniform@R`: uniform unicast load on an 8x8 torus (4 VCs,
//!   8-flit packets), one load point of 2,000 measured cycles;
//! * `run/torus32x32/kbinomial-bcast-8pkt`: a broadcast of 8 packets to
//!   1,023 nodes through the real NI engines.
//!
//! The 4096-node, 64-packet broadcast is timed by `mcsim run --timing`
//! (README-mcsim-section.md); it is too long for criterion's sampling.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use mcast::Forwarding;
use mcast_emulator::cost::FabricCostModel;
use mcast_emulator::sim::load::{run_load, LoadConfig, Traffic};
use mcast_emulator::sim::run::{run, Dests, RunConfig};
use mcast_emulator::sim::spec::SimFabric;

fn load(c: &mut Criterion) {
    let f = SimFabric::parse("torus:8x8", true).expect("fabric");
    let mut cost = FabricCostModel::default();
    cost.parse_config("packet_flits = 8; vc_buf_flits = 8; num_vcs = 4;")
        .expect("cost");
    let mut g = c.benchmark_group("load");
    for rate in [0.2, 0.4] {
        let cfg = LoadConfig {
            rate,
            warmup: 200,
            cycles: 2000,
            drain_max: 2000,
            traffic: Traffic::Uniform,
            seed: 1,
        };
        let hops = run_load(&f, &cost, &cfg).expect("load").stats.hops;
        g.throughput(Throughput::Elements(hops));
        g.bench_function(format!("torus8x8/uniform@{rate}"), |b| {
            b.iter(|| run_load(&f, &cost, &cfg).expect("load"))
        });
    }
    g.finish();
}

fn bcast(c: &mut Criterion) {
    let f = SimFabric::parse("torus:32x32", true).expect("fabric");
    let cost = FabricCostModel::default();
    let cfg = RunConfig {
        algo: "kbinomial".into(),
        dests: Dests::All,
        packets: 8,
        seed: 0,
        source: 0,
        forwarding: Forwarding::Fpfs,
    };
    let hops = run(&f, &cost, &cfg).expect("run").network.hops;
    let mut g = c.benchmark_group("run");
    g.sample_size(10);
    g.throughput(Throughput::Elements(hops));
    g.bench_function("torus32x32/kbinomial-bcast-8pkt", |b| {
        b.iter(|| run(&f, &cost, &cfg).expect("run"))
    });
    g.finish();
}

criterion_group!(benches, load, bcast);
criterion_main!(benches);
