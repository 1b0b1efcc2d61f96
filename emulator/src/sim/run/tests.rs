//! Single-multicast runs against the papers' tables and our computed vectors, the unit-step
//! driver, and the exactly-once oracle.

use super::*;

fn cfg(algo: &str, dests: Dests, packets: usize) -> RunConfig {
    RunConfig {
        algo: algo.into(),
        dests,
        packets,
        seed: 1,
        source: 0,
        forwarding: Forwarding::Fpfs,
    }
}

/// [Sivaram 1998, §4.3.2–4.3.3, derived] with the unit-step preset on a one-switch fabric: the
/// simulated FPFS completion equals the table (L1 + (m-1)·k where the
/// theorem holds), and FCFS too.
#[test]
fn unitstep_preset_reproduces_fpfs_vectors() {
    let cost = FabricCostModel::unitstep();
    for (n, k, fpfs, fcfs) in crate::lockstep::FPFS_VECTORS {
        let f = SimFabric::parse(&format!("crossbar:{n}"), true).unwrap();
        for m in 1..=6 {
            let mut c = cfg(&format!("kbinomial:{k}"), Dests::All, m);
            let r = run(&f, &cost, &c).unwrap();
            assert_eq!(r.completion, fpfs[m - 1], "FPFS n={n} k={k} m={m}");
            if let Some(w) = fcfs {
                c.forwarding = Forwarding::Fcfs;
                let r = run(&f, &cost, &c).unwrap();
                assert_eq!(r.completion, w[m - 1], "FCFS n={n} k={k} m={m}");
            }
        }
    }
}

/// Beyond the table: on a crossbar with the unit-step preset, the DES
/// gives every destination the completion step of the NI-engine-only
/// unit-step driver ([`crate::lockstep`]), for every n ≤ 20, k ≤ 4,
/// m ≤ 5, FPFS and FCFS.
#[test]
fn unitstep_preset_equals_the_unitstep_driver() {
    use crate::lockstep::{simulate, Post};
    use mcast_algorithms::Shape;
    let cost = FabricCostModel::unitstep();
    for n in 2..=20 {
        let f = SimFabric::parse(&format!("crossbar:{n}"), true).unwrap();
        for k in 1..=4 {
            for m in 1..=5 {
                for fw in [Forwarding::Fpfs, Forwarding::Fcfs] {
                    let want = simulate(n, &Post::Bcast { root: 0 }, Shape::KBinomial { k }, fw, m)
                        .unwrap();
                    let mut c = cfg(&format!("kbinomial:{k}"), Dests::All, m);
                    c.forwarding = fw;
                    let got = run(&f, &cost, &c).unwrap();
                    assert_eq!(got.completion, want.completion, "n={n} k={k} m={m} {fw:?}");
                    for (d, t) in got.per_destination {
                        assert_eq!(
                            Some(&t),
                            want.arrivals[d].iter().max(),
                            "n={n} k={k} m={m} {fw:?} node {d}"
                        );
                    }
                }
            }
        }
    }
}

/// NI-based trees on direct fabrics deliver exactly once (the run's
/// oracle) and take at least the zero-load time of one copy.
#[test]
fn ni_trees_on_direct_fabrics() {
    let cost = FabricCostModel::default();
    for (fabric, algo) in [
        ("torus:4x4", "utorus"),
        ("torus:4x4:uni", "kbinomial"),
        ("hypercube:4", "wsort"),
        ("hypercube:4", "ucube"),
        ("mesh:4x4", "binomial"),
        ("torus:4x4", "separate"),
    ] {
        let f = SimFabric::parse(fabric, true).unwrap();
        for m in [1, 3] {
            let r = run(&f, &cost, &cfg(algo, Dests::Random(9), m)).unwrap();
            let one = cost.t_hs + cost.dma_cycles() + cost.t_ns + cost.t_nr + cost.t_hr;
            assert!(r.completion > one, "{fabric} {algo}: {r:?}");
            assert_eq!(r.destinations.len(), 9);
        }
    }
}

/// SSR, path and tree worms on an irregular fabric deliver exactly once
/// (the run's oracle), and a single tree worm beats separate addressing.
#[test]
fn worms_deliver_exactly_once() {
    let f = SimFabric::parse("irregular:switches=8,ports=8,nodes=32,seed=4", true).unwrap();
    let cost = FabricCostModel::default();
    let mut got = HashMap::new();
    for algo in [
        "ssr-greedy",
        "ssr-lg",
        "path-greedy",
        "path-lg",
        "tree-worm",
        "kbinomial",
        "separate",
    ] {
        for m in [1, 2] {
            let r = run(&f, &cost, &cfg(algo, Dests::Random(15), m)).unwrap();
            got.insert((algo, m), r.completion);
        }
        run(&f, &cost, &cfg(algo, Dests::All, 1)).unwrap();
    }
    assert!(got[&("tree-worm", 1)] < got[&("separate", 1)]);
}

/// Path worms (S-torus, M_d-torus, M_u-torus) on a unidirectional torus
/// deliver exactly once with intermediate reception (the run's oracle);
/// one S-torus worm injects one packet per message packet.
#[test]
fn path_worms_on_unidirectional_tori() {
    let cost = FabricCostModel::preset("low-startup").unwrap();
    let f = SimFabric::parse("torus:6x6:uni", true).unwrap();
    for algo in ["storus", "mtorus-d", "mtorus-u:4", "mtorus-u:2"] {
        for m in [1, 3] {
            let r = run(&f, &cost, &cfg(algo, Dests::Random(12), m)).unwrap();
            if algo == "storus" {
                assert_eq!(r.injected, m as u64);
            }
        }
        run(&f, &cost, &cfg(algo, Dests::All, 2)).unwrap();
    }
    let bi = SimFabric::parse("torus:6x6", true).unwrap();
    assert!(run(&bi, &cost, &cfg("storus", Dests::All, 1)).is_err());
}

/// The two-pass MIN multicast delivers exactly once (the run's oracle):
/// f relays each send one unicast per packet.
#[test]
fn min_two_pass_exactly_once() {
    let cost = FabricCostModel::default();
    for spec in ["min:4", "min:5:omega"] {
        let f = SimFabric::parse(spec, true).unwrap();
        for (dests, m) in [
            (Dests::Random(5), 1),
            (Dests::Random(9), 2),
            (Dests::All, 1),
        ] {
            let r = run(&f, &cost, &cfg("min-two-pass", dests, m)).unwrap();
            let fan = r.destinations.len() as u64;
            assert_eq!(r.injected, m as u64 * (1 + fan));
        }
        run(&f, &cost, &cfg("min-two-pass:3", Dests::Random(4), 1)).unwrap();
        run(&f, &cost, &cfg("kbinomial", Dests::Random(6), 2)).unwrap();
    }
}

#[test]
fn bad_requests_are_errors() {
    let f = SimFabric::parse("torus:4x4", true).unwrap();
    let cost = FabricCostModel::default();
    assert!(run(&f, &cost, &cfg("tree-worm", Dests::All, 1)).is_err());
    assert!(run(&f, &cost, &cfg("nope", Dests::All, 1)).is_err());
    assert!(run(&f, &cost, &cfg("kbinomial", Dests::Random(16), 1)).is_err());
    assert!("random:0".parse::<Dests>().is_err());
}

/// Wormhole with buffers of a quarter packet: every algorithm family
/// (NI trees on direct fabrics, switch-replicated worms on an irregular
/// fabric, path worms with intermediate reception, the two-pass MIN)
/// delivers exactly once (the run's oracle) without deadlock, in a time
/// no shorter than the zero-load time of one copy.
#[test]
fn every_family_runs_under_wormhole() {
    let mut cost = FabricCostModel::default();
    cost.parse_config("switching = wormhole; packet_flits = 128; vc_buf_flits = 32;")
        .unwrap();
    let one = cost.t_hs + cost.dma_cycles() + cost.t_ns + cost.t_nr + cost.t_hr;
    let cases = [
        ("torus:4x4", "utorus"),
        ("torus:4x4:uni", "kbinomial"),
        ("hypercube:4", "ucube"),
        ("mesh:4x4", "binomial"),
        ("irregular:switches=8,ports=8,nodes=32,seed=4", "ssr-greedy"),
        ("irregular:switches=8,ports=8,nodes=32,seed=4", "path-lg"),
        ("irregular:switches=8,ports=8,nodes=32,seed=4", "tree-worm"),
        ("min:4", "min-two-pass"),
    ];
    for (fabric, algo) in cases {
        let f = SimFabric::parse(fabric, true).unwrap();
        for m in [1, 3] {
            let r = run(&f, &cost, &cfg(algo, Dests::Random(9), m)).unwrap();
            assert!(r.completion > one, "{fabric} {algo}: {r:?}");
        }
    }
    let mut low = FabricCostModel::preset("low-startup").unwrap();
    low.parse_config("switching = wormhole; vc_buf_flits = 2;")
        .unwrap();
    let f = SimFabric::parse("torus:6x6:uni", true).unwrap();
    for algo in ["storus", "mtorus-d", "mtorus-u:4"] {
        run(&f, &low, &cfg(algo, Dests::Random(12), 3)).unwrap();
        run(&f, &low, &cfg(algo, Dests::All, 2)).unwrap();
    }
}

/// A one-packet unicast with the hosts' and NIs' costs, under wormhole
/// with buffers of an eighth of a packet, on every fabric kind: the
/// completion is t_hs + DMA + t_ns + H·(t_r + t_w) + ceil(L/b) + t_nr +
/// DMA + t_hr, the same as under VCT.
#[test]
fn wormhole_unicast_completion_with_overheads() {
    let mut wh = FabricCostModel::default();
    wh.parse_config("switching = wormhole; vc_buf_flits = 16;")
        .unwrap();
    let vct = FabricCostModel::default();
    let fixed = wh.t_hs + 2 * wh.dma_cycles() + wh.t_ns + wh.t_nr + wh.t_hr;
    for spec in [
        "torus:4x4",
        "torus:4x4:uni",
        "mesh:3x4",
        "hypercube:4",
        "irregular:switches=8,ports=8,nodes=32,seed=4",
        "min:4",
        "crossbar:8",
    ] {
        let f = SimFabric::parse(spec, true).unwrap();
        let routing = f.routing();
        for seed in 0..4 {
            let mut c = cfg("separate", Dests::Random(1), 1);
            c.seed = seed;
            let r = run(&f, &wh, &c).unwrap();
            let d = r.destinations[0];
            let h = routing.switch_hops(0, d).unwrap() as u64;
            let net = h * (wh.t_r() + wh.link_delay) + wh.serialization();
            assert_eq!(r.completion, fixed + net, "{spec} 0->{d}");
            assert_eq!(r.completion, run(&f, &vct, &c).unwrap().completion);
        }
    }
}

/// A train of packets on one VC in an idle fabric: wormhole with buffers
/// of a quarter packet takes the time of VCT with one-packet buffers (each
/// head waits for the buffer ahead to empty and its credits to come
/// back), and more than VCT with buffers of two packets.
#[test]
fn wormhole_train_on_one_vc_matches_vct_with_one_packet_buffers() {
    let base = "num_vcs = 1; dateline = 0; t_hs = 0; t_hr = 0; t_ns = 0; t_nr = 0; \
                dma_mb_s = 0;";
    let cost = |extra: &str| {
        let mut c = FabricCostModel::default();
        c.parse_config(&format!("{base} {extra}")).unwrap();
        c
    };
    let wh = cost("switching = wormhole; vc_buf_flits = 32;");
    let vct1 = cost("vc_buf_flits = 128;");
    let vct2 = cost("vc_buf_flits = 256;");
    for spec in ["mesh:4x4", "torus:4x4:uni", "hypercube:4", "crossbar:6"] {
        let f = SimFabric::parse(spec, false).unwrap();
        for seed in 0..3 {
            let mut c = cfg("separate", Dests::Random(1), 3);
            c.seed = seed;
            let w = run(&f, &wh, &c).unwrap().completion;
            assert_eq!(w, run(&f, &vct1, &c).unwrap().completion, "{spec}");
            assert!(w > run(&f, &vct2, &c).unwrap().completion, "{spec}");
        }
    }
}
